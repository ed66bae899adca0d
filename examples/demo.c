/* A small inference-style CUDA driver-API program with three bugs gpuguard
 * finds without rebuilding it:
 *   - it looks up a kernel its module does not have (and falls back),
 *   - a kernel writes 8 bytes past the end of its activations buffer,
 *   - a kernel reads 4 bytes past the end of its output buffer, so its
 *     checksum depends on memory it does not own.
 * Usage: demo KERNELS.ptx. Prints what it computed on stdout. */
#include <stdio.h>
#include <stdlib.h>

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#define CHECK(call)                                                             \
	do {                                                                    \
		CUresult rc_ = (call);                                          \
		if (rc_ != CUDA_SUCCESS) {                                      \
			const char *name_ = "?";                                \
			cuGetErrorName(rc_, &name_);                            \
			fprintf(stderr, "demo: %s failed: %s\n", #call, name_); \
			exit(1);                                                \
		}                                                               \
	} while (0)

static CUmodule mod;

/* Exported, so gpuguard names the call sites. */
CUdeviceptr upload_tensor(size_t bytes, unsigned char value);
CUdeviceptr load_weights(size_t bytes);
CUdeviceptr alloc_activations(size_t bytes);
CUdeviceptr alloc_output(size_t bytes);

__attribute__((noinline)) CUdeviceptr upload_tensor(size_t bytes, unsigned char value)
{
	CUdeviceptr p;
	CUfunction fill;
	unsigned long long n = bytes;
	void *params[] = { &p, &value, &n };

	CHECK(cuMemAlloc_v2(&p, bytes));
	CHECK(cuModuleGetFunction(&fill, mod, "gg_fill"));
	CHECK(cuLaunchKernel(fill, 1, 1, 1, 128, 1, 1, 0, NULL, params, NULL));
	return p;
}

/* The barrier keeps each a frame of its own (no tail call), as in a real program. */
#define FRAME(call)                                \
	({                                         \
		CUdeviceptr p_ = (call);           \
		__asm__ volatile("" ::: "memory"); \
		p_;                                \
	})

__attribute__((noinline)) CUdeviceptr load_weights(size_t bytes)
{
	return FRAME(upload_tensor(bytes, 3));
}

__attribute__((noinline)) CUdeviceptr alloc_activations(size_t bytes)
{
	return FRAME(upload_tensor(bytes, 0));
}

__attribute__((noinline)) CUdeviceptr alloc_output(size_t bytes)
{
	return FRAME(upload_tensor(bytes, 1));
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUcontext ctx;
	CUfunction fast, overrun, sum;
	CUdeviceptr weights[6], act, out, result;
	unsigned long long act_n = 1000, extra = 8, out_n = 100 + 4, checksum = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s KERNELS.ptx\n", argv[0]);
		return 64;
	}
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuModuleLoad(&mod, argv[1]));

	/* Bug 1: an optional fast path the module does not have. */
	if (cuModuleGetFunction(&fast, mod, "flash_attention_v3") != CUDA_SUCCESS)
		printf("flash_attention_v3 not available: using the generic path\n");

	for (int i = 0; i < 6; i++)
		weights[i] = load_weights(4096u << i);
	act = alloc_activations(act_n);
	out = alloc_output(100);
	CHECK(cuMemAlloc_v2(&result, sizeof(checksum)));

	/* Bug 2: writes 8 bytes past the end of the activations. */
	void *overrun_params[] = { &act, &act_n, &extra };

	CHECK(cuModuleGetFunction(&overrun, mod, "gg_overrun"));
	CHECK(cuLaunchKernel(overrun, 1, 1, 1, 128, 1, 1, 0, NULL, overrun_params, NULL));

	/* Bug 3: sums 104 bytes of a 100-byte output buffer. */
	void *sum_params[] = { &out, &out_n, &result };

	CHECK(cuModuleGetFunction(&sum, mod, "gg_sum"));
	CHECK(cuLaunchKernel(sum, 1, 1, 1, 128, 1, 1, 0, NULL, sum_params, NULL));
	CHECK(cuCtxSynchronize());
	CHECK(cuMemcpyDtoH_v2(&checksum, result, sizeof(checksum)));
	printf("checksum of the output: %llu\n", checksum);

	for (int i = 0; i < 6; i++)
		CHECK(cuMemFree_v2(weights[i]));
	CHECK(cuMemFree_v2(act));
	CHECK(cuMemFree_v2(out));
	CHECK(cuMemFree_v2(result));
	CHECK(cuModuleUnload(mod));
	CHECK(cuDevicePrimaryCtxRelease_v2(dev));
	return 0;
}
