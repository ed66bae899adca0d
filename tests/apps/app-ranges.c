/* Copies and sets of every form, on a route chosen by the first argument,
 * for the API-range tests (tests/test-ranges.c) and scripts/gpu-check:
 *
 *   app-ranges ROUTE STEP...
 *
 * ROUTE: direct (linked with -lcuda, the driver's exports), dlsym
 * (dlopen("libcuda.so.1") + dlsym of each exact name) or procaddr
 * (cuGetProcAddress_v2 of each base name, at 12000, or 12080 and 13000 for
 * the batched copies, with the per-thread flag for the _ptds/_ptsz forms).
 * Each argument after it is a step:
 *   alloc:N              cuMemAlloc_v2 of N bytes (buffer k = the k-th alloc or pitch)
 *   pitch:W:H            cuMemAllocPitch_v2 of H rows of W bytes (element 4); prints
 *                        the pitch; its size is pitch * H
 *   free:K               cuMemFree_v2 of buffer K
 *   to:FN:K:N[:OFF]      FN (an exact export name) writes N bytes into buffer K,
 *                        starting OFF bytes (default 0, may be negative) into it
 *   from:FN:K:N[:OFF]    FN reads N bytes from buffer K the same way
 *   to3d:FN:K:P:W:H:D    FN writes D layers of H rows of W bytes, P bytes apart,
 *                        into buffer K (H rows a layer; P 0: K's pitch from
 *                        cuMemAllocPitch); a 2D function takes D 1
 *   from3d:FN:K:P:W:H:D  FN reads them from buffer K
 *   where:FN             the object and symbol FN's pointer lies in
 *   sync                 cuCtxSynchronize
 * Each to/from prints "FN to|from K: RESULT" (a batch's, its failing index
 * and whether its first copy, in range, was done; "not found" for a function
 * the driver lacks); an async form's stream is synchronized after it. The other side of each
 * copy is host memory, a device buffer of its own (64 KiB, allocated at the
 * first need) or a 1D CUDA array of 64 KiB of bytes. Sets write 0x42 bytes,
 * copies 0x42 bytes from the other side. Prints only what the application
 * knows, so its stdout is the same with and without the shim. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>

#include "describe.h"

enum kind {
	K_UNIFIED,
	K_PEER,
	K_HTOD,
	K_DTOH,
	K_DTOD,
	K_DTOA,
	K_ATOD,
	K_C2D,
	K_C3D,
	K_P3D,
	K_BATCH_V1,
	K_BATCH_V2,
	K_BATCH3D_V1,
	K_BATCH3D_V2,
	K_SET8,
	K_SET16,
	K_SET32,
	K_SET2D8,
	K_SET2D16,
	K_SET2D32,
};

/* R(export, base name, cuGetProcAddress version, per-thread, kind, async) */
#define RANGE_FUNCTIONS                                                                    \
	R(cuMemcpy, "cuMemcpy", 12000, 0, K_UNIFIED, 0)                                    \
	R(cuMemcpy_ptds, "cuMemcpy", 12000, 1, K_UNIFIED, 0)                               \
	R(cuMemcpyPeer, "cuMemcpyPeer", 12000, 0, K_PEER, 0)                               \
	R(cuMemcpyPeer_ptds, "cuMemcpyPeer", 12000, 1, K_PEER, 0)                          \
	R(cuMemcpyAsync, "cuMemcpyAsync", 12000, 0, K_UNIFIED, 1)                          \
	R(cuMemcpyAsync_ptsz, "cuMemcpyAsync", 12000, 1, K_UNIFIED, 1)                     \
	R(cuMemcpyPeerAsync, "cuMemcpyPeerAsync", 12000, 0, K_PEER, 1)                     \
	R(cuMemcpyPeerAsync_ptsz, "cuMemcpyPeerAsync", 12000, 1, K_PEER, 1)                \
	R(cuMemcpyHtoD_v2, "cuMemcpyHtoD", 12000, 0, K_HTOD, 0)                            \
	R(cuMemcpyHtoD_v2_ptds, "cuMemcpyHtoD", 12000, 1, K_HTOD, 0)                       \
	R(cuMemcpyDtoH_v2, "cuMemcpyDtoH", 12000, 0, K_DTOH, 0)                            \
	R(cuMemcpyDtoH_v2_ptds, "cuMemcpyDtoH", 12000, 1, K_DTOH, 0)                       \
	R(cuMemcpyDtoD_v2, "cuMemcpyDtoD", 12000, 0, K_DTOD, 0)                            \
	R(cuMemcpyDtoD_v2_ptds, "cuMemcpyDtoD", 12000, 1, K_DTOD, 0)                       \
	R(cuMemcpyDtoA_v2, "cuMemcpyDtoA", 12000, 0, K_DTOA, 0)                            \
	R(cuMemcpyDtoA_v2_ptds, "cuMemcpyDtoA", 12000, 1, K_DTOA, 0)                       \
	R(cuMemcpyAtoD_v2, "cuMemcpyAtoD", 12000, 0, K_ATOD, 0)                            \
	R(cuMemcpyAtoD_v2_ptds, "cuMemcpyAtoD", 12000, 1, K_ATOD, 0)                       \
	R(cuMemcpy2D_v2, "cuMemcpy2D", 12000, 0, K_C2D, 0)                                 \
	R(cuMemcpy2D_v2_ptds, "cuMemcpy2D", 12000, 1, K_C2D, 0)                            \
	R(cuMemcpy2DUnaligned_v2, "cuMemcpy2DUnaligned", 12000, 0, K_C2D, 0)               \
	R(cuMemcpy2DUnaligned_v2_ptds, "cuMemcpy2DUnaligned", 12000, 1, K_C2D, 0)          \
	R(cuMemcpy3D_v2, "cuMemcpy3D", 12000, 0, K_C3D, 0)                                 \
	R(cuMemcpy3D_v2_ptds, "cuMemcpy3D", 12000, 1, K_C3D, 0)                            \
	R(cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync", 12000, 0, K_HTOD, 1)                  \
	R(cuMemcpyHtoDAsync_v2_ptsz, "cuMemcpyHtoDAsync", 12000, 1, K_HTOD, 1)             \
	R(cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync", 12000, 0, K_DTOH, 1)                  \
	R(cuMemcpyDtoHAsync_v2_ptsz, "cuMemcpyDtoHAsync", 12000, 1, K_DTOH, 1)             \
	R(cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync", 12000, 0, K_DTOD, 1)                  \
	R(cuMemcpyDtoDAsync_v2_ptsz, "cuMemcpyDtoDAsync", 12000, 1, K_DTOD, 1)             \
	R(cuMemcpy2DAsync_v2, "cuMemcpy2DAsync", 12000, 0, K_C2D, 1)                       \
	R(cuMemcpy2DAsync_v2_ptsz, "cuMemcpy2DAsync", 12000, 1, K_C2D, 1)                  \
	R(cuMemcpy3DAsync_v2, "cuMemcpy3DAsync", 12000, 0, K_C3D, 1)                       \
	R(cuMemcpy3DAsync_v2_ptsz, "cuMemcpy3DAsync", 12000, 1, K_C3D, 1)                  \
	R(cuMemcpy3DPeer, "cuMemcpy3DPeer", 12000, 0, K_P3D, 0)                            \
	R(cuMemcpy3DPeer_ptds, "cuMemcpy3DPeer", 12000, 1, K_P3D, 0)                       \
	R(cuMemcpy3DPeerAsync, "cuMemcpy3DPeerAsync", 12000, 0, K_P3D, 1)                  \
	R(cuMemcpy3DPeerAsync_ptsz, "cuMemcpy3DPeerAsync", 12000, 1, K_P3D, 1)             \
	R(cuMemcpyBatchAsync, "cuMemcpyBatchAsync", 12080, 0, K_BATCH_V1, 1)               \
	R(cuMemcpyBatchAsync_ptsz, "cuMemcpyBatchAsync", 12080, 1, K_BATCH_V1, 1)          \
	R(cuMemcpyBatchAsync_v2, "cuMemcpyBatchAsync", 13000, 0, K_BATCH_V2, 1)            \
	R(cuMemcpyBatchAsync_v2_ptsz, "cuMemcpyBatchAsync", 13000, 1, K_BATCH_V2, 1)       \
	R(cuMemcpy3DBatchAsync, "cuMemcpy3DBatchAsync", 12080, 0, K_BATCH3D_V1, 1)         \
	R(cuMemcpy3DBatchAsync_ptsz, "cuMemcpy3DBatchAsync", 12080, 1, K_BATCH3D_V1, 1)    \
	R(cuMemcpy3DBatchAsync_v2, "cuMemcpy3DBatchAsync", 13000, 0, K_BATCH3D_V2, 1)      \
	R(cuMemcpy3DBatchAsync_v2_ptsz, "cuMemcpy3DBatchAsync", 13000, 1, K_BATCH3D_V2, 1) \
	R(cuMemsetD8_v2, "cuMemsetD8", 12000, 0, K_SET8, 0)                                \
	R(cuMemsetD8_v2_ptds, "cuMemsetD8", 12000, 1, K_SET8, 0)                           \
	R(cuMemsetD16_v2, "cuMemsetD16", 12000, 0, K_SET16, 0)                             \
	R(cuMemsetD16_v2_ptds, "cuMemsetD16", 12000, 1, K_SET16, 0)                        \
	R(cuMemsetD32_v2, "cuMemsetD32", 12000, 0, K_SET32, 0)                             \
	R(cuMemsetD32_v2_ptds, "cuMemsetD32", 12000, 1, K_SET32, 0)                        \
	R(cuMemsetD2D8_v2, "cuMemsetD2D8", 12000, 0, K_SET2D8, 0)                          \
	R(cuMemsetD2D8_v2_ptds, "cuMemsetD2D8", 12000, 1, K_SET2D8, 0)                     \
	R(cuMemsetD2D16_v2, "cuMemsetD2D16", 12000, 0, K_SET2D16, 0)                       \
	R(cuMemsetD2D16_v2_ptds, "cuMemsetD2D16", 12000, 1, K_SET2D16, 0)                  \
	R(cuMemsetD2D32_v2, "cuMemsetD2D32", 12000, 0, K_SET2D32, 0)                       \
	R(cuMemsetD2D32_v2_ptds, "cuMemsetD2D32", 12000, 1, K_SET2D32, 0)                  \
	R(cuMemsetD8Async, "cuMemsetD8Async", 12000, 0, K_SET8, 1)                         \
	R(cuMemsetD8Async_ptsz, "cuMemsetD8Async", 12000, 1, K_SET8, 1)                    \
	R(cuMemsetD16Async, "cuMemsetD16Async", 12000, 0, K_SET16, 1)                      \
	R(cuMemsetD16Async_ptsz, "cuMemsetD16Async", 12000, 1, K_SET16, 1)                 \
	R(cuMemsetD32Async, "cuMemsetD32Async", 12000, 0, K_SET32, 1)                      \
	R(cuMemsetD32Async_ptsz, "cuMemsetD32Async", 12000, 1, K_SET32, 1)                 \
	R(cuMemsetD2D8Async, "cuMemsetD2D8Async", 12000, 0, K_SET2D8, 1)                   \
	R(cuMemsetD2D8Async_ptsz, "cuMemsetD2D8Async", 12000, 1, K_SET2D8, 1)              \
	R(cuMemsetD2D16Async, "cuMemsetD2D16Async", 12000, 0, K_SET2D16, 1)                \
	R(cuMemsetD2D16Async_ptsz, "cuMemsetD2D16Async", 12000, 1, K_SET2D16, 1)           \
	R(cuMemsetD2D32Async, "cuMemsetD2D32Async", 12000, 0, K_SET2D32, 1)                \
	R(cuMemsetD2D32Async_ptsz, "cuMemsetD2D32Async", 12000, 1, K_SET2D32, 1)

/* What the steps need besides: S(field, export, base, PFN). */
#define SUPPORT_FUNCTIONS                                                                   \
	S(Init, cuInit, "cuInit", PFN_cuInit_v2000)                                         \
	S(DeviceGet, cuDeviceGet, "cuDeviceGet", PFN_cuDeviceGet_v2000)                     \
	S(PrimaryCtxRetain, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain",           \
	  PFN_cuDevicePrimaryCtxRetain_v7000)                                               \
	S(CtxSetCurrent, cuCtxSetCurrent, "cuCtxSetCurrent", PFN_cuCtxSetCurrent_v4000)     \
	S(CtxSynchronize, cuCtxSynchronize, "cuCtxSynchronize", PFN_cuCtxSynchronize_v2000) \
	S(MemAlloc, cuMemAlloc_v2, "cuMemAlloc", PFN_cuMemAlloc_v3020)                      \
	S(MemAllocPitch, cuMemAllocPitch_v2, "cuMemAllocPitch", PFN_cuMemAllocPitch_v3020)  \
	S(MemFree, cuMemFree_v2, "cuMemFree", PFN_cuMemFree_v3020)                          \
	S(StreamCreate, cuStreamCreate, "cuStreamCreate", PFN_cuStreamCreate_v2000)         \
	S(StreamSynchronize, cuStreamSynchronize, "cuStreamSynchronize",                    \
	  PFN_cuStreamSynchronize_v2000)                                                    \
	S(ArrayCreate, cuArrayCreate_v2, "cuArrayCreate", PFN_cuArrayCreate_v3020)          \
	S(GetErrorName, cuGetErrorName, "cuGetErrorName", PFN_cuGetErrorName_v6000)

struct entry {
	const char *name, *base;
	int version, per_thread;
	enum kind kind;
	int async;
	void *fn;
};

static struct entry entries[] = {
#define R(export, base, version, pt, kind, async) { #export, base, version, pt, kind, async, NULL },
	RANGE_FUNCTIONS
#undef R
};

static struct {
#define S(field, export, base, pfn) pfn field;
	SUPPORT_FUNCTIONS
#undef S
} d;

#define MAX_BUFS 64
#define SCRATCH 65536

static struct {
	CUdeviceptr ptr;
	size_t size, pitch;
} bufs[MAX_BUFS];
static int nbufs;
static CUcontext ctx;
static CUstream stream;
static CUdeviceptr scratch;
static CUarray array;
static unsigned char host[SCRATCH];

static const char *name_of(CUresult rc)
{
	const char *s = NULL;

	return d.GetErrorName(rc, &s) == CUDA_SUCCESS && s ? s : "?";
}

#define CHECK(call)                                                                          \
	do {                                                                                 \
		CUresult rc_ = (call);                                                       \
		if (rc_ != CUDA_SUCCESS) {                                                   \
			fprintf(stderr, "app-ranges: %s failed: %s\n", #call, name_of(rc_)); \
			exit(2);                                                             \
		}                                                                            \
	} while (0)

static int load(const char *route)
{
	if (!strcmp(route, "direct")) {
#define R(export, base, version, pt, kind, async) entries[i++].fn = (void *)&export;
		size_t i = 0;
		RANGE_FUNCTIONS
#undef R
#define S(field, export, base, pfn) d.field = export;
		SUPPORT_FUNCTIONS
#undef S
		return 0;
	}
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "app-ranges: no driver: %s\n", dlerror());
		return 3;
	}
	if (!strcmp(route, "dlsym")) {
		for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
			entries[i].fn = dlsym(h, entries[i].name);
#define S(field, export, base, pfn) d.field = (pfn)dlsym(h, #export);
		SUPPORT_FUNCTIONS
#undef S
		return 0;
	}
	if (!strcmp(route, "procaddr")) {
		PFN_cuGetProcAddress_v12000 gpa = (PFN_cuGetProcAddress_v12000)dlsym(
			h, "cuGetProcAddress_v2");
		CUdriverProcAddressQueryResult status;

		if (!gpa)
			return 3;
		for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
			if (gpa(entries[i].base, &entries[i].fn, entries[i].version,
				entries[i].per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
						      : CU_GET_PROC_ADDRESS_DEFAULT,
				&status) != CUDA_SUCCESS)
				entries[i].fn = NULL;
#define S(field, export, base, pfn)                                                                    \
	if (gpa(base, (void **)&d.field, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS) \
		d.field = NULL;
		SUPPORT_FUNCTIONS
#undef S
		return 0;
	}
	fprintf(stderr, "app-ranges: route \"%s\": expected direct, dlsym or procaddr\n", route);
	return 64;
}

static struct entry *entry(const char *name)
{
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
		if (!strcmp(entries[i].name, name))
			return &entries[i];
	return NULL;
}

static CUdeviceptr scratch_buffer(void)
{
	if (!scratch)
		CHECK(d.MemAlloc(&scratch, SCRATCH));
	return scratch;
}

static CUarray scratch_array(void)
{
	CUDA_ARRAY_DESCRIPTOR desc = { .Width = SCRATCH,
				       .Format = CU_AD_FORMAT_UNSIGNED_INT8,
				       .NumChannels = 1 };

	if (!array)
		CHECK(d.ArrayCreate(&array, &desc));
	return array;
}

/* Exported, so the copies' call sites have names. */
CUresult ranges_linear(const struct entry *e, int to, CUdeviceptr dev, size_t n, size_t *fail);
CUresult ranges_planar(const struct entry *e, int to, CUdeviceptr dev, size_t pitch, size_t width,
		       size_t height, size_t depth);

/* The other side of a linear copy of @n bytes: host memory or the scratch buffer. */
static inline __attribute__((always_inline)) CUresult linear(const struct entry *e, int to,
							     CUdeviceptr dev, size_t n, size_t *fail)
{
	CUdeviceptr other = e->kind == K_DTOD || e->kind == K_PEER ? scratch_buffer()
								   : (CUdeviceptr)(uintptr_t)host;
	CUdeviceptr dst = to ? dev : other, src = to ? other : dev;
	CUstream s = e->async ? stream : NULL;
	size_t one = 1; /* a batch: one copy in range first */
	CUdeviceptr dsts[2] = { (CUdeviceptr)(uintptr_t)host, dst };
	CUdeviceptr srcs[2] = { (CUdeviceptr)(uintptr_t)(host + 1), src };
	size_t sizes[2] = { one, n }, idx[1] = { 0 };
	CUmemcpyAttributes attrs[1] = { { .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM } };
	CUDA_MEMCPY3D_BATCH_OP ops[2] = { { .extent = { 1, 1, 1 } }, { .extent = { n, 1, 1 } } };

	for (int i = 0; i < 2; i++) {
		ops[i].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
		ops[i].src.type = ops[i].dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
		ops[i].src.op.ptr.ptr = srcs[i];
		ops[i].dst.op.ptr.ptr = dsts[i];
	}
	if (n > SCRATCH)
		return CUDA_ERROR_INVALID_VALUE;
	switch (e->kind) {
	case K_UNIFIED:
		return e->async ? ((PFN_cuMemcpyAsync_v4000)e->fn)(dst, src, n, s)
				: ((PFN_cuMemcpy_v4000)e->fn)(dst, src, n);
	case K_PEER:
		return e->async ? ((PFN_cuMemcpyPeerAsync_v4000)e->fn)(dst, ctx, src, ctx, n, s)
				: ((PFN_cuMemcpyPeer_v4000)e->fn)(dst, ctx, src, ctx, n);
	case K_HTOD:
		return e->async ? ((PFN_cuMemcpyHtoDAsync_v3020)e->fn)(dst, host, n, s)
				: ((PFN_cuMemcpyHtoD_v3020)e->fn)(dst, host, n);
	case K_DTOH:
		return e->async ? ((PFN_cuMemcpyDtoHAsync_v3020)e->fn)(host, src, n, s)
				: ((PFN_cuMemcpyDtoH_v3020)e->fn)(host, src, n);
	case K_DTOD:
		return e->async ? ((PFN_cuMemcpyDtoDAsync_v3020)e->fn)(dst, src, n, s)
				: ((PFN_cuMemcpyDtoD_v3020)e->fn)(dst, src, n);
	case K_DTOA:
		return ((PFN_cuMemcpyDtoA_v3020)e->fn)(scratch_array(), 0, dev, n);
	case K_ATOD:
		return ((PFN_cuMemcpyAtoD_v3020)e->fn)(dev, scratch_array(), 0, n);
	case K_BATCH_V1:
		return ((PFN_cuMemcpyBatchAsync_v12080)e->fn)(dsts, srcs, sizes, 2, attrs, idx, 1, fail,
							      stream);
	case K_BATCH_V2:
		return ((PFN_cuMemcpyBatchAsync_v13000)e->fn)(dsts, srcs, sizes, 2, attrs, idx, 1,
							      stream);
	case K_BATCH3D_V1:
		return ((PFN_cuMemcpy3DBatchAsync_v12080)e->fn)(2, ops, fail, 0, stream);
	case K_BATCH3D_V2:
		return ((PFN_cuMemcpy3DBatchAsync_v13000)e->fn)(2, ops, 0, stream);
	case K_SET8:
		return e->async ? ((PFN_cuMemsetD8Async_v3020)e->fn)(dev, 0x42, n, s)
				: ((PFN_cuMemsetD8_v3020)e->fn)(dev, 0x42, n);
	case K_SET16:
		return e->async ? ((PFN_cuMemsetD16Async_v3020)e->fn)(dev, 0x4242, n / 2, s)
				: ((PFN_cuMemsetD16_v3020)e->fn)(dev, 0x4242, n / 2);
	case K_SET32:
		return e->async ? ((PFN_cuMemsetD32Async_v3020)e->fn)(dev, 0x42424242u, n / 4, s)
				: ((PFN_cuMemsetD32_v3020)e->fn)(dev, 0x42424242u, n / 4);
	default:
		return CUDA_ERROR_NOT_SUPPORTED;
	}
}

/* @depth layers of @height rows of @width bytes at @dev, @pitch apart; the
 * other side packed in host memory. */
static inline __attribute__((always_inline)) CUresult planar(const struct entry *e, int to,
							     CUdeviceptr dev, size_t pitch,
							     size_t width, size_t height, size_t depth)
{
	CUstream s = e->async ? stream : NULL;
	CUDA_MEMCPY3D c3 = { .WidthInBytes = width, .Height = height, .Depth = depth };
	CUDA_MEMCPY3D_PEER p3 = { .WidthInBytes = width,
				  .Height = height,
				  .Depth = depth,
				  .srcContext = ctx,
				  .dstContext = ctx };
	CUDA_MEMCPY2D c2 = { .WidthInBytes = width, .Height = height };

	if (width * height * depth > SCRATCH)
		return CUDA_ERROR_INVALID_VALUE;
	memset(host, 0x42, sizeof(host));
	if (to) {
		c2.srcMemoryType = c3.srcMemoryType = p3.srcMemoryType = CU_MEMORYTYPE_HOST;
		c2.srcHost = c3.srcHost = p3.srcHost = host;
		c2.srcPitch = c3.srcPitch = p3.srcPitch = width;
		c3.srcHeight = p3.srcHeight = height;
		c2.dstMemoryType = c3.dstMemoryType = p3.dstMemoryType = CU_MEMORYTYPE_DEVICE;
		c2.dstDevice = c3.dstDevice = p3.dstDevice = dev;
		c2.dstPitch = c3.dstPitch = p3.dstPitch = pitch;
		c3.dstHeight = p3.dstHeight = height;
	} else {
		c2.srcMemoryType = c3.srcMemoryType = p3.srcMemoryType = CU_MEMORYTYPE_DEVICE;
		c2.srcDevice = c3.srcDevice = p3.srcDevice = dev;
		c2.srcPitch = c3.srcPitch = p3.srcPitch = pitch;
		c3.srcHeight = p3.srcHeight = height;
		c2.dstMemoryType = c3.dstMemoryType = p3.dstMemoryType = CU_MEMORYTYPE_HOST;
		c2.dstHost = c3.dstHost = p3.dstHost = host;
		c2.dstPitch = c3.dstPitch = p3.dstPitch = width;
		c3.dstHeight = p3.dstHeight = height;
	}
	switch (e->kind) {
	case K_C2D:
		return e->async ? ((PFN_cuMemcpy2DAsync_v3020)e->fn)(&c2, s)
				: ((PFN_cuMemcpy2D_v3020)e->fn)(&c2);
	case K_C3D:
		return e->async ? ((PFN_cuMemcpy3DAsync_v3020)e->fn)(&c3, s)
				: ((PFN_cuMemcpy3D_v3020)e->fn)(&c3);
	case K_P3D:
		return e->async ? ((PFN_cuMemcpy3DPeerAsync_v4000)e->fn)(&p3, s)
				: ((PFN_cuMemcpy3DPeer_v4000)e->fn)(&p3);
	case K_SET2D8:
		return e->async ? ((PFN_cuMemsetD2D8Async_v3020)e->fn)(dev, pitch, 0x42, width, height,
								       s)
				: ((PFN_cuMemsetD2D8_v3020)e->fn)(dev, pitch, 0x42, width, height);
	case K_SET2D16:
		return e->async ? ((PFN_cuMemsetD2D16Async_v3020)e->fn)(dev, pitch, 0x4242, width / 2,
									height, s)
				: ((PFN_cuMemsetD2D16_v3020)e->fn)(dev, pitch, 0x4242, width / 2,
								   height);
	case K_SET2D32:
		return e->async ? ((PFN_cuMemsetD2D32Async_v3020)e->fn)(dev, pitch, 0x42424242u,
									width / 4, height, s)
				: ((PFN_cuMemsetD2D32_v3020)e->fn)(dev, pitch, 0x42424242u, width / 4,
								   height);
	default:
		return CUDA_ERROR_NOT_SUPPORTED;
	}
}

/* The call sites: never a sibling call, so their frames stay on the stack. */
__attribute__((noinline)) CUresult ranges_linear(const struct entry *e, int to, CUdeviceptr dev,
						 size_t n, size_t *fail)
{
	CUresult rc = linear(e, to, dev, n, fail);

	__asm__ volatile("" ::: "memory");
	return rc;
}

__attribute__((noinline)) CUresult ranges_planar(const struct entry *e, int to, CUdeviceptr dev,
						 size_t pitch, size_t width, size_t height,
						 size_t depth)
{
	CUresult rc = planar(e, to, dev, pitch, width, height, depth);

	__asm__ volatile("" ::: "memory");
	return rc;
}

static int step(const char *arg)
{
	char fn[64];
	long k = 0, a = 0, b = 0, c = 0, off = 0;
	int to;

	if (sscanf(arg, "alloc:%ld", &a) == 1) {
		CHECK(d.MemAlloc(&bufs[nbufs].ptr, (size_t)a));
		bufs[nbufs].size = (size_t)a;
		printf("alloc %ld: buffer %d\n", a, nbufs++);
	} else if (sscanf(arg, "pitch:%ld:%ld", &a, &b) == 2) {
		CHECK(d.MemAllocPitch(&bufs[nbufs].ptr, &bufs[nbufs].pitch, (size_t)a, (size_t)b, 4));
		bufs[nbufs].size = bufs[nbufs].pitch * (size_t)b;
		printf("pitch %ld x %ld: buffer %d, pitch %zu\n", a, b, nbufs, bufs[nbufs].pitch);
		nbufs++;
	} else if (sscanf(arg, "free:%ld", &k) == 1 && k >= 0 && k < nbufs) {
		printf("free %ld: %s\n", k, name_of(d.MemFree(bufs[k].ptr)));
	} else if (sscanf(arg, "where:%63s", fn) == 1) {
		const struct entry *e = entry(fn);
		char where[256];

		printf("%s: %s\n", fn, e ? app_describe(e->fn, where, sizeof(where)) : "unknown");
	} else if (!strcmp(arg, "sync")) {
		printf("sync: %s\n", name_of(d.CtxSynchronize()));
	} else if ((to = sscanf(arg, "to:%63[^:]:%ld:%ld:%ld", fn, &k, &a, &off)) >= 3 ||
		   sscanf(arg, "from:%63[^:]:%ld:%ld:%ld", fn, &k, &a, &off) >= 3) {
		const struct entry *e = entry(fn);
		size_t fail = 12345;
		CUresult rc;

		to = to >= 3;
		if (!e || k < 0 || k >= nbufs) {
			fprintf(stderr, "app-ranges: %s: no such function or buffer\n", arg);
			return 2;
		}
		if (!e->fn) { /* an older driver */
			printf("%s %s %ld: not found\n", fn, to ? "to" : "from", k);
			return 0;
		}
		memset(host, 0x42, sizeof(host));
		host[1] = 0x43; /* a batch's first copy moves it to host[0] */
		rc = ranges_linear(e, to, bufs[k].ptr + off, (size_t)a, &fail);
		if (e->async || (e->kind >= K_BATCH_V1 && e->kind <= K_BATCH3D_V2))
			CHECK(d.StreamSynchronize(stream));
		printf("%s %s %ld: %s", fn, to ? "to" : "from", k, name_of(rc));
		if (e->kind == K_BATCH_V1 || e->kind == K_BATCH3D_V1)
			printf(" (failed at %zu)", fail);
		if (e->kind >= K_BATCH_V1 && e->kind <= K_BATCH3D_V2)
			printf(" (its first copy %s)", host[0] == 0x43 ? "done" : "not done");
		printf("\n");
	} else if ((to = sscanf(arg, "to3d:%63[^:]:%ld:%ld:%ld:%ld:%ld", fn, &k, &a, &b, &c, &off)) ==
			   6 ||
		   sscanf(arg, "from3d:%63[^:]:%ld:%ld:%ld:%ld:%ld", fn, &k, &a, &b, &c, &off) == 6) {
		const struct entry *e = entry(fn);
		CUresult rc;

		to = to == 6;
		if (!e || k < 0 || k >= nbufs) {
			fprintf(stderr, "app-ranges: %s: no such function or buffer\n", arg);
			return 2;
		}
		if (!e->fn) {
			printf("%s %s %ld: not found\n", fn, to ? "to" : "from", k);
			return 0;
		}
		if (!a) /* the pitch cuMemAllocPitch gave */
			a = (long)bufs[k].pitch;
		rc = ranges_planar(e, to, bufs[k].ptr, (size_t)a, (size_t)b, (size_t)c, (size_t)off);
		if (e->async)
			CHECK(d.StreamSynchronize(stream));
		printf("%s %s %ld: %s\n", fn, to ? "to" : "from", k, name_of(rc));
	} else {
		fprintf(stderr, "app-ranges: unknown step \"%s\"\n", arg);
		return 64;
	}
	return 0;
}

int main(int argc, char **argv)
{
	CUdevice dev;
	int rc;

	if (argc < 2) {
		fprintf(stderr, "usage: %s direct|dlsym|procaddr STEP...\n", argv[0]);
		return 64;
	}
	if ((rc = load(argv[1])))
		return rc;
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
		if (!entries[i].fn)
			printf("%s: not found\n", entries[i].name);
	CHECK(d.Init(0));
	CHECK(d.DeviceGet(&dev, 0));
	CHECK(d.PrimaryCtxRetain(&ctx, dev));
	CHECK(d.CtxSetCurrent(ctx));
	CHECK(d.StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	for (int i = 2; i < argc; i++)
		if ((rc = step(argv[i])))
			return rc;
	printf("done\n");
	return 0;
}
