/* The copy and set family (the last block of driver/hooks.def). Each call's
 * device ranges are worked out from its arguments and judged by the red
 * zones (redzone/ranges.h); a call with one that reaches a band is refused
 * before the driver sees it, never performed, with CUDA_ERROR_INVALID_VALUE:
 * the driver's answer for a range past the end of an allocation of the
 * user's size (cuda.h's \return lists; scripts/gpu-check compares the two on
 * a real GPU). Everything else is forwarded as asked, for the driver to
 * judge. With red zones off, set-up makes every route pass these calls
 * straight to the driver (start.h's gg_start_pass, and the idle hooks). */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/gg.h"
#include "driver/device.h"
#include "driver/real.h"
#include "redzone/ranges.h"
#include "start/start.h"
#include "hooks/work.h"

#define REFUSED CUDA_ERROR_INVALID_VALUE

/* Judge [@ptr, @ptr + @bytes), side @side of @api's call from @caller. */
static bool allowed(const char *api, const char *side, uint64_t ptr, uint64_t bytes, uintptr_t caller)
{
	struct gg_range r = { .side = side, .ptr = ptr, .bytes = bytes };

	return gg_ranges_allowed(api, &r, caller, "CUDA_ERROR_INVALID_VALUE");
}

/* The common shape: @ok (over api_ and caller_) judges the call's ranges;
 * the driver is asked only when it holds. The work function is jumped to
 * from the exported entry point, so its return address is the caller's. */
#define CHECKED(name, args, ok)                                         \
	gg_pfn_##name real_ = (gg_pfn_##name)gg_real_get(GG_ID_##name); \
	if (GG_UNLIKELY(!real_))                                        \
		return CUDA_ERROR_NOT_SUPPORTED;                        \
	if (!gg_hooks_enter(GG_ID_##name))                              \
		return real_ args;                                      \
	const char *api_ = #name;                                       \
	uintptr_t caller_ = (uintptr_t)__builtin_return_address(0);     \
	CUresult rc = (ok) ? real_ args : REFUSED;                      \
	gg_hooks_leave();                                               \
	return rc

#define DST(ptr, n) allowed(api_, "dst", ptr, n, caller_)
#define SRC(ptr, n) allowed(api_, "src", ptr, n, caller_)

/* @count elements of @elem bytes at @dst (a set). */
static bool set_ok(const char *api, uint64_t dst, size_t count, unsigned elem, uintptr_t caller)
{
	uint64_t bytes;

	return __builtin_mul_overflow((uint64_t)count, elem, &bytes) ||
	       allowed(api, "dst", dst, bytes, caller);
}

/* One side of a 2D or 3D copy, when it names device (or unified) memory:
 * @depth layers of @height rows of @width bytes, @pitch bytes from row to
 * row and @layer_rows rows from layer to layer, starting @x bytes into row
 * @y of layer @z. From its first byte to its last: the last row needs only
 * its @width bytes, not its pitch. An extent that overflows is the driver's
 * to refuse. */
struct side {
	const char *name;
	CUmemorytype type;
	uint64_t base;
	uint64_t x, y, z, pitch, layer_rows;
};

static bool side_ok(const char *api, const struct side *s, uint64_t width, uint64_t height,
		    uint64_t depth, uintptr_t caller)
{
	uint64_t first, last, start, span;

	if ((s->type != CU_MEMORYTYPE_DEVICE && s->type != CU_MEMORYTYPE_UNIFIED) || !width ||
	    !height || !depth)
		return true;
	if (__builtin_mul_overflow(s->z, s->layer_rows, &first) ||
	    __builtin_add_overflow(first, s->y, &first) ||
	    __builtin_mul_overflow(first, s->pitch, &first) ||
	    __builtin_add_overflow(first, s->x, &first) ||
	    __builtin_add_overflow(s->base, first, &start) ||
	    __builtin_mul_overflow(depth - 1, s->layer_rows, &last) ||
	    __builtin_add_overflow(last, height - 1, &last) ||
	    __builtin_mul_overflow(last, s->pitch, &last) || __builtin_add_overflow(last, width, &span))
		return true;
	return allowed(api, s->name, start, span, caller);
}

/* A 2D set: @height rows of @width elements of @elem bytes, @pitch apart. */
static bool set2d_ok(const char *api, uint64_t dst, size_t pitch, size_t width, size_t height,
		     unsigned elem, uintptr_t caller)
{
	struct side s = { .name = "dst", .type = CU_MEMORYTYPE_DEVICE, .base = dst, .pitch = pitch };
	uint64_t bytes;

	return __builtin_mul_overflow((uint64_t)width, elem, &bytes) ||
	       side_ok(api, &s, bytes, height, 1, caller);
}

#define SIDE2D(p, w)                                \
	((struct side){ .name = #w,                 \
			.type = (p)->w##MemoryType, \
			.base = (p)->w##Device,     \
			.x = (p)->w##XInBytes,      \
			.y = (p)->w##Y,             \
			.pitch = (p)->w##Pitch })
#define SIDE3D(p, w)                                \
	((struct side){ .name = #w,                 \
			.type = (p)->w##MemoryType, \
			.base = (p)->w##Device,     \
			.x = (p)->w##XInBytes,      \
			.y = (p)->w##Y,             \
			.z = (p)->w##Z,             \
			.pitch = (p)->w##Pitch,     \
			.layer_rows = (p)->w##Height })

static bool copy2d_ok(const char *api, const CUDA_MEMCPY2D *p, uintptr_t caller)
{
	return !p || (side_ok(api, &SIDE2D(p, dst), p->WidthInBytes, p->Height, 1, caller) &&
		      side_ok(api, &SIDE2D(p, src), p->WidthInBytes, p->Height, 1, caller));
}

static bool copy3d_ok(const char *api, const CUDA_MEMCPY3D *p, uintptr_t caller)
{
	return !p || (side_ok(api, &SIDE3D(p, dst), p->WidthInBytes, p->Height, p->Depth, caller) &&
		      side_ok(api, &SIDE3D(p, src), p->WidthInBytes, p->Height, p->Depth, caller));
}

static bool peer3d_ok(const char *api, const CUDA_MEMCPY3D_PEER *p, uintptr_t caller)
{
	return !p || (side_ok(api, &SIDE3D(p, dst), p->WidthInBytes, p->Height, p->Depth, caller) &&
		      side_ok(api, &SIDE3D(p, src), p->WidthInBytes, p->Height, p->Depth, caller));
}

/* A pointer operand of a 3D batch copy, its extent in elements: one byte
 * between pointers, the array's element when the other operand is one
 * (cuda.h); rows of @rowLength elements, layers of @layerHeight rows, each
 * the extent's when 0. */
static bool operand_ok(const char *api, const char *name, const CUmemcpy3DOperand *o,
		       const CUmemcpy3DOperand *other, const CUextent3D *e, uintptr_t caller)
{
	size_t elem = 1;
	uint64_t row, width;

	if (o->type != CU_MEMCPY_OPERAND_TYPE_POINTER)
		return true;
	/* An element size the shim cannot learn: the driver judges as ever. */
	if (other->type == CU_MEMCPY_OPERAND_TYPE_ARRAY &&
	    gg_device_array_element((const void *)other->op.array.array, &elem))
		return true;
	if (__builtin_mul_overflow((uint64_t)(o->op.ptr.rowLength ? o->op.ptr.rowLength : e->width),
				   elem, &row) ||
	    __builtin_mul_overflow((uint64_t)e->width, elem, &width))
		return true;
	struct side s = { .name = name,
			  .type = CU_MEMORYTYPE_DEVICE,
			  .base = o->op.ptr.ptr,
			  .pitch = row,
			  .layer_rows = o->op.ptr.layerHeight ? o->op.ptr.layerHeight : e->height };

	return side_ok(api, &s, width, e->height, e->depth, caller);
}

static bool batch3d_op_ok(const char *api, const CUDA_MEMCPY3D_BATCH_OP *op, uintptr_t caller)
{
	return operand_ok(api, "dst", &op->dst, &op->src, &op->extent, caller) &&
	       operand_ok(api, "src", &op->src, &op->dst, &op->extent, caller);
}

/* The index of a batch's first copy that reaches a band (@count: none). */
static size_t batch_refused(const char *api, const CUdeviceptr *dsts, const CUdeviceptr *srcs,
			    const size_t *sizes, size_t count, uintptr_t caller)
{
	if (!dsts || !srcs || !sizes)
		return count;
	for (size_t i = 0; i < count; i++)
		if (!allowed(api, "dst", dsts[i], sizes[i], caller) ||
		    !allowed(api, "src", srcs[i], sizes[i], caller))
			return i;
	return count;
}

static size_t batch3d_refused(const char *api, const CUDA_MEMCPY3D_BATCH_OP *ops, size_t n,
			      uintptr_t caller)
{
	if (!ops)
		return n;
	for (size_t i = 0; i < n; i++)
		if (!batch3d_op_ok(api, &ops[i], caller))
			return i;
	return n;
}

/* The attributes of a batch's first @n copies: those that start before copy @n. */
static size_t attrs_before(const size_t *attrsIdxs, size_t numAttrs, size_t n)
{
	size_t k = 0;

	while (attrsIdxs && k < numAttrs && attrsIdxs[k] < n)
		k++;
	return k;
}

/* Linear copies and sets: one range per side. */

#define COPY(name, params, args, ok)                 \
	GG_WORK CUresult gg_hooks_work_##name params \
	{                                            \
		CHECKED(name, args, ok);             \
	}

#define UNIFIED_COPY(name, more_params, more_args)                                   \
	COPY(name, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount more_params), \
	     (dst, src, ByteCount more_args), DST(dst, ByteCount) && SRC(src, ByteCount))
#define PEER_COPY(name, more_params, more_args)                                   \
	COPY(name,                                                                \
	     (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, \
	      CUcontext srcContext, size_t ByteCount more_params),                \
	     (dstDevice, dstContext, srcDevice, srcContext, ByteCount more_args), \
	     DST(dstDevice, ByteCount) && SRC(srcDevice, ByteCount))
#define HTOD(name, more_params, more_args)                                                     \
	COPY(name, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount more_params), \
	     (dstDevice, srcHost, ByteCount more_args), DST(dstDevice, ByteCount))
#define DTOH(name, more_params, more_args)                                               \
	COPY(name, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount more_params), \
	     (dstHost, srcDevice, ByteCount more_args), SRC(srcDevice, ByteCount))
#define DTOD(name, more_params, more_args)                                                       \
	COPY(name, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount more_params), \
	     (dstDevice, srcDevice, ByteCount more_args),                                        \
	     DST(dstDevice, ByteCount) && SRC(srcDevice, ByteCount))
#define ASYNC , CUstream hStream
#define ASYNC_ARG , hStream
#define SYNC
#define SYNC_ARG

UNIFIED_COPY(cuMemcpy, SYNC, SYNC_ARG)
UNIFIED_COPY(cuMemcpy_ptds, SYNC, SYNC_ARG)
UNIFIED_COPY(cuMemcpyAsync, ASYNC, ASYNC_ARG)
UNIFIED_COPY(cuMemcpyAsync_ptsz, ASYNC, ASYNC_ARG)
PEER_COPY(cuMemcpyPeer, SYNC, SYNC_ARG)
PEER_COPY(cuMemcpyPeer_ptds, SYNC, SYNC_ARG)
PEER_COPY(cuMemcpyPeerAsync, ASYNC, ASYNC_ARG)
PEER_COPY(cuMemcpyPeerAsync_ptsz, ASYNC, ASYNC_ARG)
HTOD(cuMemcpyHtoD_v2, SYNC, SYNC_ARG)
HTOD(cuMemcpyHtoD_v2_ptds, SYNC, SYNC_ARG)
HTOD(cuMemcpyHtoDAsync_v2, ASYNC, ASYNC_ARG)
HTOD(cuMemcpyHtoDAsync_v2_ptsz, ASYNC, ASYNC_ARG)
DTOH(cuMemcpyDtoH_v2, SYNC, SYNC_ARG)
DTOH(cuMemcpyDtoH_v2_ptds, SYNC, SYNC_ARG)
DTOH(cuMemcpyDtoHAsync_v2, ASYNC, ASYNC_ARG)
DTOH(cuMemcpyDtoHAsync_v2_ptsz, ASYNC, ASYNC_ARG)
DTOD(cuMemcpyDtoD_v2, SYNC, SYNC_ARG)
DTOD(cuMemcpyDtoD_v2_ptds, SYNC, SYNC_ARG)
DTOD(cuMemcpyDtoDAsync_v2, ASYNC, ASYNC_ARG)
DTOD(cuMemcpyDtoDAsync_v2_ptsz, ASYNC, ASYNC_ARG)

/* Between device memory and a CUDA array: only the device side is linear. */
#define DTOA(name)                                                                                \
	COPY(name, (CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount), \
	     (dstArray, dstOffset, srcDevice, ByteCount), SRC(srcDevice, ByteCount))
#define ATOD(name)                                                                                \
	COPY(name, (CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount), \
	     (dstDevice, srcArray, srcOffset, ByteCount), DST(dstDevice, ByteCount))

DTOA(cuMemcpyDtoA_v2)
DTOA(cuMemcpyDtoA_v2_ptds)
ATOD(cuMemcpyAtoD_v2)
ATOD(cuMemcpyAtoD_v2_ptds)

/* 2D and 3D copies: each side's extent from its descriptor. */

#define COPY2D(name, more_params, more_args)                                    \
	COPY(name, (const CUDA_MEMCPY2D *pCopy more_params), (pCopy more_args), \
	     copy2d_ok(api_, pCopy, caller_))
#define COPY3D(name, more_params, more_args)                                    \
	COPY(name, (const CUDA_MEMCPY3D *pCopy more_params), (pCopy more_args), \
	     copy3d_ok(api_, pCopy, caller_))
#define PEER3D(name, more_params, more_args)                                         \
	COPY(name, (const CUDA_MEMCPY3D_PEER *pCopy more_params), (pCopy more_args), \
	     peer3d_ok(api_, pCopy, caller_))

COPY2D(cuMemcpy2D_v2, SYNC, SYNC_ARG)
COPY2D(cuMemcpy2D_v2_ptds, SYNC, SYNC_ARG)
COPY2D(cuMemcpy2DUnaligned_v2, SYNC, SYNC_ARG)
COPY2D(cuMemcpy2DUnaligned_v2_ptds, SYNC, SYNC_ARG)
COPY2D(cuMemcpy2DAsync_v2, ASYNC, ASYNC_ARG)
COPY2D(cuMemcpy2DAsync_v2_ptsz, ASYNC, ASYNC_ARG)
COPY3D(cuMemcpy3D_v2, SYNC, SYNC_ARG)
COPY3D(cuMemcpy3D_v2_ptds, SYNC, SYNC_ARG)
COPY3D(cuMemcpy3DAsync_v2, ASYNC, ASYNC_ARG)
COPY3D(cuMemcpy3DAsync_v2_ptsz, ASYNC, ASYNC_ARG)
PEER3D(cuMemcpy3DPeer, SYNC, SYNC_ARG)
PEER3D(cuMemcpy3DPeer_ptds, SYNC, SYNC_ARG)
PEER3D(cuMemcpy3DPeerAsync, ASYNC, ASYNC_ARG)
PEER3D(cuMemcpy3DPeerAsync_ptsz, ASYNC, ASYNC_ARG)

/* Batches: the copies before the first one that reaches a band are
 * forwarded as a batch of their own, then that one is refused with its
 * index in *failIdx, as the driver treats a batch with an invalid copy (its
 * earlier copies stay queued: tests/fakecuda/fc_copy.c; scripts/gpu-check
 * compares it with NVIDIA's). */

#define BATCH(name, fail_param, fail_arg, fail_out)                                                 \
	GG_WORK CUresult gg_hooks_work_##name(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,  \
					      size_t count, CUmemcpyAttributes *attrs,              \
					      size_t *attrsIdxs, size_t numAttrs fail_param,        \
					      CUstream hStream)                                     \
	{                                                                                           \
		gg_pfn_##name real_ = (gg_pfn_##name)gg_real_get(GG_ID_##name);                     \
		CUresult rc = REFUSED;                                                              \
		size_t bad;                                                                         \
                                                                                                    \
		if (GG_UNLIKELY(!real_))                                                            \
			return CUDA_ERROR_NOT_SUPPORTED;                                            \
		if (!gg_hooks_enter(GG_ID_##name))                                                  \
			return real_(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs fail_arg, \
				     hStream);                                                      \
		bad = batch_refused(#name, dsts, srcs, sizes, count,                                \
				    (uintptr_t)__builtin_return_address(0));                        \
		if (bad == count)                                                                   \
			rc = real_(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs fail_arg,   \
				   hStream);                                                        \
		else if (bad)                                                                       \
			rc = real_(dsts, srcs, sizes, bad, attrs, attrsIdxs,                        \
				   attrs_before(attrsIdxs, numAttrs, bad) fail_arg, hStream);       \
		if (bad < count && (rc == CUDA_SUCCESS || !bad)) {                                  \
			rc = REFUSED;                                                               \
			fail_out;                                                                   \
		}                                                                                   \
		gg_hooks_leave();                                                                   \
		return rc;                                                                          \
	}

#define BATCH3D(name, fail_param, fail_arg, fail_out)                                                 \
	GG_WORK CUresult gg_hooks_work_##name(size_t numOps,                                          \
					      CUDA_MEMCPY3D_BATCH_OP *opList fail_param,              \
					      unsigned long long flags, CUstream hStream)             \
	{                                                                                             \
		gg_pfn_##name real_ = (gg_pfn_##name)gg_real_get(GG_ID_##name);                       \
		CUresult rc = REFUSED;                                                                \
		size_t bad;                                                                           \
                                                                                                      \
		if (GG_UNLIKELY(!real_))                                                              \
			return CUDA_ERROR_NOT_SUPPORTED;                                              \
		if (!gg_hooks_enter(GG_ID_##name))                                                    \
			return real_(numOps, opList fail_arg, flags, hStream);                        \
		bad = batch3d_refused(#name, opList, numOps, (uintptr_t)__builtin_return_address(0)); \
		if (bad == numOps)                                                                    \
			rc = real_(numOps, opList fail_arg, flags, hStream);                          \
		else if (bad)                                                                         \
			rc = real_(bad, opList fail_arg, flags, hStream);                             \
		if (bad < numOps && (rc == CUDA_SUCCESS || !bad)) {                                   \
			rc = REFUSED;                                                                 \
			fail_out;                                                                     \
		}                                                                                     \
		gg_hooks_leave();                                                                     \
		return rc;                                                                            \
	}

#define FAIL_PARAM , size_t *failIdx
#define FAIL_ARG , failIdx
#define FAIL_OUT (failIdx ? (void)(*failIdx = bad) : (void)0)
#define NO_FAIL_OUT ((void)0)

BATCH(cuMemcpyBatchAsync, FAIL_PARAM, FAIL_ARG, FAIL_OUT)
BATCH(cuMemcpyBatchAsync_ptsz, FAIL_PARAM, FAIL_ARG, FAIL_OUT)
BATCH(cuMemcpyBatchAsync_v2, SYNC, SYNC_ARG, NO_FAIL_OUT)
BATCH(cuMemcpyBatchAsync_v2_ptsz, SYNC, SYNC_ARG, NO_FAIL_OUT)
BATCH3D(cuMemcpy3DBatchAsync, FAIL_PARAM, FAIL_ARG, FAIL_OUT)
BATCH3D(cuMemcpy3DBatchAsync_ptsz, FAIL_PARAM, FAIL_ARG, FAIL_OUT)
BATCH3D(cuMemcpy3DBatchAsync_v2, SYNC, SYNC_ARG, NO_FAIL_OUT)
BATCH3D(cuMemcpy3DBatchAsync_v2_ptsz, SYNC, SYNC_ARG, NO_FAIL_OUT)

/* Sets: N elements, or Height rows of Width elements, @pitch apart. */

#define SET(name, type, elem, more_params, more_args)                         \
	COPY(name, (CUdeviceptr dstDevice, type value, size_t N more_params), \
	     (dstDevice, value, N more_args), set_ok(api_, dstDevice, N, elem, caller_))
#define SET2D(name, type, elem, more_params, more_args)                         \
	COPY(name,                                                              \
	     (CUdeviceptr dstDevice, size_t dstPitch, type value, size_t Width, \
	      size_t Height more_params),                                       \
	     (dstDevice, dstPitch, value, Width, Height more_args),             \
	     set2d_ok(api_, dstDevice, dstPitch, Width, Height, elem, caller_))

SET(cuMemsetD8_v2, unsigned char, 1, SYNC, SYNC_ARG)
SET(cuMemsetD8_v2_ptds, unsigned char, 1, SYNC, SYNC_ARG)
SET(cuMemsetD16_v2, unsigned short, 2, SYNC, SYNC_ARG)
SET(cuMemsetD16_v2_ptds, unsigned short, 2, SYNC, SYNC_ARG)
SET(cuMemsetD32_v2, unsigned int, 4, SYNC, SYNC_ARG)
SET(cuMemsetD32_v2_ptds, unsigned int, 4, SYNC, SYNC_ARG)
SET(cuMemsetD8Async, unsigned char, 1, ASYNC, ASYNC_ARG)
SET(cuMemsetD8Async_ptsz, unsigned char, 1, ASYNC, ASYNC_ARG)
SET(cuMemsetD16Async, unsigned short, 2, ASYNC, ASYNC_ARG)
SET(cuMemsetD16Async_ptsz, unsigned short, 2, ASYNC, ASYNC_ARG)
SET(cuMemsetD32Async, unsigned int, 4, ASYNC, ASYNC_ARG)
SET(cuMemsetD32Async_ptsz, unsigned int, 4, ASYNC, ASYNC_ARG)
SET2D(cuMemsetD2D8_v2, unsigned char, 1, SYNC, SYNC_ARG)
SET2D(cuMemsetD2D8_v2_ptds, unsigned char, 1, SYNC, SYNC_ARG)
SET2D(cuMemsetD2D16_v2, unsigned short, 2, SYNC, SYNC_ARG)
SET2D(cuMemsetD2D16_v2_ptds, unsigned short, 2, SYNC, SYNC_ARG)
SET2D(cuMemsetD2D32_v2, unsigned int, 4, SYNC, SYNC_ARG)
SET2D(cuMemsetD2D32_v2_ptds, unsigned int, 4, SYNC, SYNC_ARG)
SET2D(cuMemsetD2D8Async, unsigned char, 1, ASYNC, ASYNC_ARG)
SET2D(cuMemsetD2D8Async_ptsz, unsigned char, 1, ASYNC, ASYNC_ARG)
SET2D(cuMemsetD2D16Async, unsigned short, 2, ASYNC, ASYNC_ARG)
SET2D(cuMemsetD2D16Async_ptsz, unsigned short, 2, ASYNC, ASYNC_ARG)
SET2D(cuMemsetD2D32Async, unsigned int, 4, ASYNC, ASYNC_ARG)
SET2D(cuMemsetD2D32Async_ptsz, unsigned int, 4, ASYNC, ASYNC_ARG)
