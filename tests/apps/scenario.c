/* The scenario every route runs. Its stdout is compared with and without the
 * shim, so it prints only what the application itself would know. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver-table.h"

static const char *name_of(const struct app_driver *d, CUresult rc)
{
	const char *s = NULL;

	if (!d->GetErrorName || d->GetErrorName(rc, &s) != CUDA_SUCCESS || !s)
		return "?";
	return s;
}

#define CHECK(call)                                                                       \
	do {                                                                              \
		CUresult rc_ = (call);                                                    \
		if (rc_ != CUDA_SUCCESS) {                                                \
			fprintf(stderr, "%s: %s failed: %s\n", route, #call, name_of(d, rc_)); \
			return 2;                                                         \
		}                                                                         \
	} while (0)

int app_scenario(const struct app_driver *d, const char *route, const char *ptx_path)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fill = NULL, missing = NULL;
	CUdeviceptr buf, abuf, base;
	CUstream stream;
	size_t size = 0;
	unsigned char host[1000];
	uint64_t n = sizeof(host), sum = 0;
	unsigned char value = 7;
	CUresult rc;

	CHECK(d->Init(0));
	CHECK(d->DeviceGet(&dev, 0));
	CHECK(d->PrimaryCtxRetain(&ctx, dev));
	CHECK(d->CtxSetCurrent(ctx));
	CHECK(d->ModuleLoad(&mod, ptx_path));

	rc = d->ModuleGetFunction(&fill, mod, "gg_fill");
	printf("lookup gg_fill: %s\n", name_of(d, rc));
	rc = d->ModuleGetFunction(&missing, mod, "no_such_kernel");
	printf("lookup no_such_kernel: %s\n", name_of(d, rc));

	CHECK(d->MemAlloc(&buf, n));
	void *params[] = { &buf, &value, &n };
	CHECK(d->LaunchKernel(fill, 1, 1, 1, 128, 1, 1, 0, NULL, params, NULL));
	CHECK(d->CtxSynchronize());
	CHECK(d->MemcpyDtoH(host, buf, n));
	for (size_t i = 0; i < n; i++)
		sum += host[i];
	printf("sum after gg_fill: %" PRIu64 "\n", sum);
	CHECK(d->MemGetAddressRange(&base, &size, buf + 10));
	printf("address range of buf+10: base %s, size %zu\n", base == buf ? "buf" : "other", size);
	CHECK(d->MemFree(buf));
	rc = d->MemFree(buf);
	printf("second free: %s\n", name_of(d, rc));

	CHECK(d->StreamCreate(&stream, 0));
	CHECK(d->MemAllocAsync(&abuf, 256, stream));
	CHECK(d->MemFreeAsync(abuf, stream));
	CHECK(d->StreamSynchronize(stream));
	CHECK(d->StreamDestroy(stream));
	printf("stream-ordered alloc and free: done\n");

	/* GG_SCENARIO_LIBRARY=PATH: a library loaded from PATH, its gg_fill and
	 * module materialised in this context (where lazy loading fails). */
	if (getenv("GG_SCENARIO_LIBRARY")) {
		CUlibrary lib;
		CUkernel k;
		CUfunction lf;
		CUmodule lm;

		rc = d->LibraryLoadFromFile(&lib, getenv("GG_SCENARIO_LIBRARY"), NULL, NULL, 0, NULL,
					    NULL, 0);
		printf("library: %s\n", name_of(d, rc));
		if (rc == CUDA_SUCCESS) {
			rc = d->LibraryGetKernel(&k, lib, "gg_fill");
			printf("library kernel gg_fill: %s\n", name_of(d, rc));
			if (rc == CUDA_SUCCESS)
				printf("its function: %s\n", name_of(d, d->KernelGetFunction(&lf, k)));
			printf("library module: %s\n", name_of(d, d->LibraryGetModule(&lm, lib)));
			CHECK(d->LibraryUnload(lib));
		}
	}

	/* GG_SCENARIO_OVERRUN: gg_overrun_second writes 8 bytes past the second of
	 * two buffers, its parameters in kernelParams, then 4 through extra's buffer. */
	if (getenv("GG_SCENARIO_OVERRUN")) {
		CUfunction two;
		CUdeviceptr a, b;
		uint64_t na = 100, nb = 200, over = 8;
		void *two_params[] = { &a, &na, &b, &nb, &over };
		struct { CUdeviceptr a; uint64_t na; CUdeviceptr b; uint64_t nb, over; } pbuf;
		size_t buf_size = sizeof(pbuf);
		void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &pbuf, CU_LAUNCH_PARAM_BUFFER_SIZE,
				  &buf_size, CU_LAUNCH_PARAM_END };

		CHECK(d->ModuleGetFunction(&two, mod, "gg_overrun_second"));
		CHECK(d->MemAlloc(&a, na));
		CHECK(d->MemAlloc(&b, nb));
		CHECK(d->LaunchKernel(two, 1, 1, 1, 128, 1, 1, 0, NULL, two_params, NULL));
		CHECK(d->CtxSynchronize());
		pbuf = (__typeof__(pbuf)){ a, na, b, nb, 4 };
		CHECK(d->LaunchKernel(two, 1, 1, 1, 128, 1, 1, 0, NULL, NULL, extra));
		CHECK(d->CtxSynchronize());
		CHECK(d->MemFree(b));
		CHECK(d->MemFree(a));
		printf("two-buffer overruns: done\n");
	}

	CHECK(d->ModuleUnload(mod));
	CHECK(d->PrimaryCtxRelease(dev));
	printf("%s: ok\n", route);
	return 0;
}
