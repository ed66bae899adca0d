/* What the driver-API programs of scripts/gpu-check share: error checks and
 * the test kernels (tests/fakecuda/kernels.ptx), which run on a real GPU and
 * on the fake driver alike. Linked with -lcuda against the toolkit's stub, so
 * the driver found at run time (the real one, or the fake through
 * LD_LIBRARY_PATH) is the one used. */
#ifndef GG_GPUCHECK_GC_COMMON_H
#define GG_GPUCHECK_GC_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

static inline const char *gc_err(CUresult rc)
{
	const char *s = NULL;

	if (cuGetErrorName(rc, &s) != CUDA_SUCCESS || !s)
		return "unknown CUresult";
	return s;
}

#define GC_CHECK(call)                                                                            \
	do {                                                                                      \
		CUresult rc_ = (call);                                                            \
		if (rc_ != CUDA_SUCCESS) {                                                        \
			fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", __FILE__, __LINE__, #call, \
				gc_err(rc_), (int)rc_);                                           \
			exit(2);                                                                  \
		}                                                                                 \
	} while (0)

static inline uint64_t gc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* cuInit, the primary context of device 0 made current, the kernels loaded. */
static inline CUmodule gc_setup(const char *ptx, CUcontext *ctx)
{
	CUmodule mod;
	CUdevice dev;

	GC_CHECK(cuInit(0));
	GC_CHECK(cuDeviceGet(&dev, 0));
	GC_CHECK(cuDevicePrimaryCtxRetain(ctx, dev));
	GC_CHECK(cuCtxSetCurrent(*ctx));
	GC_CHECK(cuModuleLoad(&mod, ptx));
	return mod;
}

/* gg_fill(p, value, n) with a grid that covers n (the kernels loop anyway). */
static inline void gc_fill(CUfunction fill, CUdeviceptr p, unsigned char value, uint64_t n)
{
	unsigned long long len = n;
	unsigned blocks = (unsigned)((n + 255) / 256);
	void *params[] = { &p, &value, &len };

	if (blocks < 1)
		blocks = 1;
	if (blocks > 1024)
		blocks = 1024;
	GC_CHECK(cuLaunchKernel(fill, blocks, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
}

#endif
