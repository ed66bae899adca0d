/* N operations of one kind, for the driver-call census (tests/test-census.c,
 * scripts/bench): run it for N and 3N, with FAKECUDA_CENSUS naming a file
 * each time, and the difference over 2N is what one operation costs in
 * driver calls, set-up and exit cancelled out.
 *
 *   app-census OP N
 *
 * OP, each on 256-byte buffers, the stream a CU_STREAM_NON_BLOCKING one:
 *   async-pair   cuMemAllocAsync + cuMemFreeAsync on the stream
 *   sync-pair    cuMemAlloc_v2 + cuMemFree_v2
 *   launch       cuLaunchKernel of gg_fill over one buffer on the stream
 *   copy         cuMemcpyHtoD_v2 into one buffer, from pageable memory
 *   copy-async   cuMemcpyHtoDAsync_v2 into one buffer on the stream, from
 *                pageable memory
 * The buffer of launch and copy is allocated before the loop, and the stream
 * synchronised once after it. GG_TEST_PTX names the kernels' PTX. Exit
 * status 0, or 1 with the failing call on stderr; nothing on stdout. */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIZE 256

static void check(CUresult rc, const char *what)
{
	if (rc != CUDA_SUCCESS) {
		fprintf(stderr, "app-census: %s failed: %d\n", what, (int)rc);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	const char *ptx = getenv("GG_TEST_PTX");
	CUcontext ctx;
	CUstream s;
	CUmodule mod = NULL;
	CUfunction fill = NULL;
	CUdeviceptr buf = 0;
	static unsigned char host[SIZE];

	if (argc != 3) {
		fprintf(stderr, "usage: app-census OP N\n");
		return 2;
	}
	const char *op = argv[1];
	unsigned long n = strtoul(argv[2], NULL, 10);
	check(cuInit(0), "cuInit");
	check(cuDevicePrimaryCtxRetain(&ctx, 0), "cuDevicePrimaryCtxRetain");
	check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
	if (!strcmp(op, "launch")) {
		if (!ptx) {
			fprintf(stderr, "app-census: GG_TEST_PTX is not set\n");
			return 2;
		}
		check(cuModuleLoad(&mod, ptx), "cuModuleLoad");
		check(cuModuleGetFunction(&fill, mod, "gg_fill"), "cuModuleGetFunction");
	}
	if (!strcmp(op, "launch") || !strcmp(op, "copy") || !strcmp(op, "copy-async"))
		check(cuMemAlloc_v2(&buf, SIZE), "cuMemAlloc_v2");

	for (unsigned long i = 0; i < n; i++) {
		CUdeviceptr p;
		if (!strcmp(op, "async-pair")) {
			check(cuMemAllocAsync(&p, SIZE, s), "cuMemAllocAsync");
			check(cuMemFreeAsync(p, s), "cuMemFreeAsync");
		} else if (!strcmp(op, "sync-pair")) {
			check(cuMemAlloc_v2(&p, SIZE), "cuMemAlloc_v2");
			check(cuMemFree_v2(p), "cuMemFree_v2");
		} else if (!strcmp(op, "launch")) {
			unsigned char v = 1;
			uint64_t len = SIZE;
			void *params[] = { &buf, &v, &len };
			check(cuLaunchKernel(fill, 1, 1, 1, 128, 1, 1, 0, s, params, NULL),
			      "cuLaunchKernel");
		} else if (!strcmp(op, "copy")) {
			check(cuMemcpyHtoD_v2(buf, host, SIZE), "cuMemcpyHtoD_v2");
		} else if (!strcmp(op, "copy-async")) {
			check(cuMemcpyHtoDAsync_v2(buf, host, SIZE, s), "cuMemcpyHtoDAsync_v2");
		} else {
			fprintf(stderr, "app-census: unknown operation '%s'\n", op);
			return 2;
		}
	}
	check(cuStreamSynchronize(s), "cuStreamSynchronize");
	if (buf)
		check(cuMemFree_v2(buf), "cuMemFree_v2");
	if (mod)
		check(cuModuleUnload(mod), "cuModuleUnload");
	check(cuStreamDestroy_v2(s), "cuStreamDestroy_v2");
	return 0;
}
