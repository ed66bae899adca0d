/*
 * The copies and sets that take more than one linear range: 2D and 3D
 * copies (and their peer and batched forms), copies between device memory
 * and a CUDA array, peer copies, and 2D sets.
 *
 * Each is checked whole first, as the driver documents it: every device
 * side's extent (from its first byte to its last: the last row needs only
 * its width, not its pitch) must lie inside one allocation's requested size,
 * an array side inside the array, else CUDA_ERROR_INVALID_VALUE, and nothing
 * is done.  Then it runs row by row through the linear copies' paths
 * (fc_copy.c: the legacy or per-thread stream for the synchronous forms, a
 * queued op per row for the asynchronous ones, a graph node per row while
 * capturing).  A pitch, where more than one row is copied, must be at least
 * the width plus the X offset, and at most CU_DEVICE_ATTRIBUTE_MAX_PITCH; a
 * 3D side's height (rows per layer), where more than one layer is, at least
 * the copy's height plus its Y; an array side's X a whole number of
 * elements.  A copy of zero width, height or depth does nothing.
 */
#include "fc_internal.h"

#include <string.h>

/* One side of a copy, resolved: device memory (an array's included) or host
 * memory, where its first row starts, and how far apart rows and layers are. */
typedef struct place {
    bool device;
    CUdeviceptr dev;
    unsigned char *host;
    size_t pitch, layer;
} place;

/* A copy of `depth` layers of `height` rows of `width` bytes. */
typedef struct copy3d {
    place src, dst;
    size_t width, height, depth;
} copy3d;

/* A side as the application describes it (CUDA_MEMCPY2D/3D, a batch operand). */
typedef struct side_spec {
    CUmemorytype type;
    const void *host;
    CUdeviceptr dev;
    CUarray array;
    size_t x, y, z; /* bytes, rows, layers */
    size_t pitch;   /* bytes per row (host and device memory) */
    size_t rows;    /* rows per layer (host and device memory, 3D) */
} side_spec;

static bool mul_add(size_t a, size_t b, size_t c, size_t *out)
{
    size_t t;
    return !__builtin_mul_overflow(a, b, &t) && !__builtin_add_overflow(t, c, out);
}

/* Resolve `sp` for a copy of width x height x depth; CUDA_ERROR_INVALID_VALUE
 * for what cuda.h rules out. */
static CUresult place_of(const side_spec *sp, size_t width, size_t height, size_t depth, place *out)
{
    size_t start;
    bool multi = height > 1 || depth > 1;
    CUmemorytype type = sp->type;
    const void *host = sp->host;

    memset(out, 0, sizeof *out);
    /* Unified addressing: the address says which memory it is. */
    if (type == CU_MEMORYTYPE_UNIFIED) {
        type = fc_mem_is_device(sp->dev) ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        host = (const void *)(uintptr_t)sp->dev;
    }
    if (type == CU_MEMORYTYPE_ARRAY) {
        fc_array *a = fc_array_get(sp->array);
        size_t rb;
        if (!a || sp->x % a->elem)
            return CUDA_ERROR_INVALID_VALUE;
        rb = fc_array_row_bytes(a);
        if (sp->x > rb || width > rb - sp->x || sp->y > fc_array_rows(a) ||
            height > fc_array_rows(a) - sp->y || sp->z > fc_array_layers(a) ||
            depth > fc_array_layers(a) - sp->z)
            return CUDA_ERROR_INVALID_VALUE;
        out->device = true;
        out->pitch = rb;
        out->layer = rb * fc_array_rows(a);
        out->dev = a->ptr + sp->z * out->layer + sp->y * rb + sp->x;
        return CUDA_SUCCESS;
    }
    if (type != CU_MEMORYTYPE_HOST && type != CU_MEMORYTYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (multi && (sp->pitch > FC_MAX_PITCH || sp->pitch < width || sp->pitch - width < sp->x))
        return CUDA_ERROR_INVALID_VALUE;
    if (depth > 1 && (sp->rows < height || sp->rows - height < sp->y))
        return CUDA_ERROR_INVALID_VALUE;
    out->pitch = sp->pitch;
    if (__builtin_mul_overflow(sp->pitch, sp->rows, &out->layer) ||
        !mul_add(sp->z, sp->rows, sp->y, &start) || !mul_add(start, sp->pitch, sp->x, &start))
        return CUDA_ERROR_INVALID_VALUE;
    if (type == CU_MEMORYTYPE_DEVICE) {
        out->device = true;
        if (__builtin_add_overflow(sp->dev, start, &out->dev))
            return CUDA_ERROR_INVALID_VALUE;
        return CUDA_SUCCESS;
    }
    if (!host)
        return CUDA_ERROR_INVALID_VALUE;
    out->host = (unsigned char *)(uintptr_t)host + start;
    return CUDA_SUCCESS;
}

/* The bytes from a side's first byte to its last. */
static bool span_of(const place *p, const copy3d *c, size_t *span)
{
    size_t t;
    return mul_add(c->depth - 1, p->layer, 0, &t) && mul_add(c->height - 1, p->pitch, t, &t) &&
           !__builtin_add_overflow(t, c->width, span);
}

static CUresult copy_check(const copy3d *c, bool ordered, bool capturing)
{
    size_t span;
    CUresult rc = CUDA_SUCCESS;

    if (!c->width || !c->height || !c->depth)
        return CUDA_SUCCESS;
    if (c->dst.device)
        rc = span_of(&c->dst, c, &span)
                 ? fc_range_check(c->dst.dev, span, true, ordered, capturing, NULL)
                 : CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS && c->src.device)
        rc = span_of(&c->src, c, &span)
                 ? fc_range_check(c->src.dev, span, false, ordered, capturing, NULL)
                 : CUDA_ERROR_INVALID_VALUE;
    return rc;
}

/* Row y of layer z, as a linear copy. */
static fc_xfer row_of(const copy3d *c, size_t y, size_t z)
{
    size_t so = z * c->src.layer + y * c->src.pitch, dof = z * c->dst.layer + y * c->dst.pitch;
    fc_xfer x = { .n = c->width };

    if (c->src.device)
        x.dsrc = c->src.dev + so;
    else
        x.hsrc = c->src.host + so;
    if (c->dst.device)
        x.ddst = c->dst.dev + dof;
    else
        x.hdst = c->dst.host + dof;
    x.kind = c->dst.device ? (c->src.device ? FC_X_DTOD : FC_X_HTOD)
                           : (c->src.device ? FC_X_DTOH : FC_X_HTOH);
    return x;
}

static CUresult copy_sync(const copy3d *c, bool per_thread)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = NULL;
    rc = fc_stream_resolve(NULL, per_thread, &s);
    if (rc == CUDA_SUCCESS)
        rc = copy_check(c, true, false);
    if (rc == CUDA_SUCCESS)
        rc = fc_sync_call_allowed(s);
    if (rc == CUDA_SUCCESS)
        rc = fc_sync_for_api(s);
    /* The work just run may have freed (stream-ordered) what we validated. */
    if (rc == CUDA_SUCCESS)
        rc = copy_check(c, false, false);
    for (size_t z = 0; rc == CUDA_SUCCESS && c->width && z < c->depth; z++)
        for (size_t y = 0; y < c->height; y++) {
            fc_xfer x = row_of(c, y, z);
            fc_xfer_now(&x);
        }
    fc_unlock();
    return rc;
}

/* Queue c on s, row by row, the lock held. */
static CUresult copy_queue(const copy3d *c, fc_stream *s, bool *synced)
{
    CUresult rc = copy_check(c, true, s->cap != NULL);
    for (size_t z = 0; rc == CUDA_SUCCESS && c->width && z < c->depth; z++)
        for (size_t y = 0; rc == CUDA_SUCCESS && y < c->height; y++) {
            fc_xfer x = row_of(c, y, z);
            rc = fc_xfer_queue(&x, s, synced);
        }
    return rc;
}

static CUresult copy_async(const copy3d *c, CUstream h, bool per_thread)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = NULL;
    bool synced = false;
    rc = fc_stream_for_work(h, per_thread, &s);
    if (rc == CUDA_SUCCESS)
        rc = copy_queue(c, s, &synced);
    fc_unlock();
    return rc;
}

/* A descriptor's two sides, resolved under the lock (arrays are handles). */
static CUresult resolve(const side_spec *src, const side_spec *dst, size_t width, size_t height,
                        size_t depth, copy3d *out)
{
    out->width = width;
    out->height = height;
    out->depth = depth;
    if (!width || !height || !depth)
        return CUDA_SUCCESS;
    CUresult rc = place_of(src, width, height, depth, &out->src);
    return rc != CUDA_SUCCESS ? rc : place_of(dst, width, height, depth, &out->dst);
}

/* Resolve, then run synchronously or queue on h. */
static CUresult run(const side_spec *src, const side_spec *dst, size_t width, size_t height,
                    size_t depth, bool async, CUstream h, bool per_thread)
{
    copy3d c;
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *ctx = NULL;
    rc = fc_ctx_current(&ctx);
    if (rc == CUDA_SUCCESS)
        rc = resolve(src, dst, width, height, depth, &c);
    fc_unlock();
    if (rc != CUDA_SUCCESS)
        return rc;
    return async ? copy_async(&c, h, per_thread) : copy_sync(&c, per_thread);
}

#define SPEC2D(p, w)                          \
    ((side_spec){ .type = (p)->w##MemoryType, \
                  .host = (p)->w##Host,       \
                  .dev = (p)->w##Device,      \
                  .array = (p)->w##Array,     \
                  .x = (p)->w##XInBytes,      \
                  .y = (p)->w##Y,             \
                  .pitch = (p)->w##Pitch })
#define SPEC3D(p, w)                          \
    ((side_spec){ .type = (p)->w##MemoryType, \
                  .host = (p)->w##Host,       \
                  .dev = (p)->w##Device,      \
                  .array = (p)->w##Array,     \
                  .x = (p)->w##XInBytes,      \
                  .y = (p)->w##Y,             \
                  .z = (p)->w##Z,             \
                  .pitch = (p)->w##Pitch,     \
                  .rows = (p)->w##Height })

static CUresult copy2d(const CUDA_MEMCPY2D *p, bool async, CUstream h, bool per_thread)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    return run(&SPEC2D(p, src), &SPEC2D(p, dst), p->WidthInBytes, p->Height, 1, async, h,
               per_thread);
}

/* "srcLOD and dstLOD members of the CUDA_MEMCPY3D structure must be set to 0." */
static CUresult copy3d_desc(const CUDA_MEMCPY3D *p, bool async, CUstream h, bool per_thread)
{
    if (!p || p->srcLOD || p->dstLOD)
        return CUDA_ERROR_INVALID_VALUE;
    return run(&SPEC3D(p, src), &SPEC3D(p, dst), p->WidthInBytes, p->Height, p->Depth, async, h,
               per_thread);
}

/* A peer copy's context: a live one (NULL: not asked, an array's side). */
static CUresult peer_context(CUcontext h)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = fc_handle_get(h, FC_K_CTX);
    if (!c || !c->alive)
        rc = CUDA_ERROR_INVALID_CONTEXT;
    fc_unlock();
    return rc;
}

static CUresult peer3d(const CUDA_MEMCPY3D_PEER *p, bool async, CUstream h, bool per_thread)
{
    if (!p || p->srcLOD || p->dstLOD)
        return CUDA_ERROR_INVALID_VALUE;
    /* "ignored with srcMemoryType is CU_MEMORYTYPE_ARRAY" (and dst's). */
    CUresult rc = p->srcMemoryType == CU_MEMORYTYPE_ARRAY ? CUDA_SUCCESS
                                                          : peer_context(p->srcContext);
    if (rc == CUDA_SUCCESS && p->dstMemoryType != CU_MEMORYTYPE_ARRAY)
        rc = peer_context(p->dstContext);
    if (rc != CUDA_SUCCESS)
        return rc;
    return run(&SPEC3D(p, src), &SPEC3D(p, dst), p->WidthInBytes, p->Height, p->Depth, async, h,
               per_thread);
}

static CUresult peer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n,
                     bool async, CUstream h, bool per_thread)
{
    CUresult rc = peer_context(dctx);
    if (rc == CUDA_SUCCESS)
        rc = peer_context(sctx);
    if (rc != CUDA_SUCCESS)
        return rc;
    side_spec s = { .type = CU_MEMORYTYPE_DEVICE, .dev = src },
              d = { .type = CU_MEMORYTYPE_DEVICE, .dev = dst };
    return run(&s, &d, n, 1, 1, async, h, per_thread);
}

/* ------------------------------------------------------------------------ */
/* Peer copies                                                               */
/* ------------------------------------------------------------------------ */

FC_EXPORT(cuMemcpyPeer,
          (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
           size_t ByteCount),
          (dstDevice, dstContext, srcDevice, srcContext, ByteCount))
{
    return peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, false, NULL, false);
}

FC_EXPORT(cuMemcpyPeer_ptds,
          (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
           size_t ByteCount),
          (dstDevice, dstContext, srcDevice, srcContext, ByteCount))
{
    return peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, false, NULL, true);
}

FC_EXPORT(cuMemcpyPeerAsync,
          (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
           size_t ByteCount, CUstream hStream),
          (dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream))
{
    return peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, true, hStream, false);
}

FC_EXPORT(cuMemcpyPeerAsync_ptsz,
          (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
           size_t ByteCount, CUstream hStream),
          (dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream))
{
    return peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, true, hStream, true);
}

/* ------------------------------------------------------------------------ */
/* Device memory and 1D arrays                                               */
/* ------------------------------------------------------------------------ */

/*
 * "Copies from device memory to a 1D CUDA array" (and back): the offset is
 * in bytes; from the array, the device pointer "must be naturally aligned
 * with the CUDA array elements", the count "evenly divisible by the array
 * element size".
 */
static CUresult array_linear(CUarray array, size_t offset, CUdeviceptr dev, size_t n, bool to_array,
                             bool per_thread)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *ctx = NULL;
    rc = fc_ctx_current(&ctx);
    fc_array *a = rc == CUDA_SUCCESS ? fc_array_get(array) : NULL;
    if (rc == CUDA_SUCCESS &&
        (!a || a->desc.Height || (!to_array && (dev % a->elem || n % a->elem))))
        rc = CUDA_ERROR_INVALID_VALUE;
    fc_unlock();
    if (rc != CUDA_SUCCESS)
        return rc;
    side_spec arr = { .type = CU_MEMORYTYPE_ARRAY, .array = array, .x = offset },
              mem = { .type = CU_MEMORYTYPE_DEVICE, .dev = dev };
    return to_array ? run(&mem, &arr, n, 1, 1, false, NULL, per_thread)
                    : run(&arr, &mem, n, 1, 1, false, NULL, per_thread);
}

FC_EXPORT(cuMemcpyDtoA_v2,
          (CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount),
          (dstArray, dstOffset, srcDevice, ByteCount))
{
    return array_linear(dstArray, dstOffset, srcDevice, ByteCount, true, false);
}

FC_EXPORT(cuMemcpyDtoA_v2_ptds,
          (CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount),
          (dstArray, dstOffset, srcDevice, ByteCount))
{
    return array_linear(dstArray, dstOffset, srcDevice, ByteCount, true, true);
}

FC_EXPORT(cuMemcpyAtoD_v2,
          (CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount),
          (dstDevice, srcArray, srcOffset, ByteCount))
{
    return array_linear(srcArray, srcOffset, dstDevice, ByteCount, false, false);
}

FC_EXPORT(cuMemcpyAtoD_v2_ptds,
          (CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount),
          (dstDevice, srcArray, srcOffset, ByteCount))
{
    return array_linear(srcArray, srcOffset, dstDevice, ByteCount, false, true);
}

/* ------------------------------------------------------------------------ */
/* 2D and 3D copies                                                          */
/* ------------------------------------------------------------------------ */

FC_EXPORT(cuMemcpy2D_v2, (const CUDA_MEMCPY2D *pCopy), (pCopy))
{
    return copy2d(pCopy, false, NULL, false);
}

FC_EXPORT(cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *pCopy), (pCopy))
{
    return copy2d(pCopy, false, NULL, true);
}

/* The fake has no pitch restriction for cuMemcpy2D to lift. */
FC_EXPORT(cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D *pCopy), (pCopy))
{
    return copy2d(pCopy, false, NULL, false);
}

FC_EXPORT(cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D *pCopy), (pCopy))
{
    return copy2d(pCopy, false, NULL, true);
}

FC_EXPORT(cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *pCopy, CUstream hStream), (pCopy, hStream))
{
    return copy2d(pCopy, true, hStream, false);
}

FC_EXPORT(cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D *pCopy, CUstream hStream), (pCopy, hStream))
{
    return copy2d(pCopy, true, hStream, true);
}

FC_EXPORT(cuMemcpy3D_v2, (const CUDA_MEMCPY3D *pCopy), (pCopy))
{
    return copy3d_desc(pCopy, false, NULL, false);
}

FC_EXPORT(cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D *pCopy), (pCopy))
{
    return copy3d_desc(pCopy, false, NULL, true);
}

FC_EXPORT(cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D *pCopy, CUstream hStream), (pCopy, hStream))
{
    return copy3d_desc(pCopy, true, hStream, false);
}

FC_EXPORT(cuMemcpy3DAsync_v2_ptsz, (const CUDA_MEMCPY3D *pCopy, CUstream hStream), (pCopy, hStream))
{
    return copy3d_desc(pCopy, true, hStream, true);
}

FC_EXPORT(cuMemcpy3DPeer, (const CUDA_MEMCPY3D_PEER *pCopy), (pCopy))
{
    return peer3d(pCopy, false, NULL, false);
}

FC_EXPORT(cuMemcpy3DPeer_ptds, (const CUDA_MEMCPY3D_PEER *pCopy), (pCopy))
{
    return peer3d(pCopy, false, NULL, true);
}

FC_EXPORT(cuMemcpy3DPeerAsync, (const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream),
          (pCopy, hStream))
{
    return peer3d(pCopy, true, hStream, false);
}

FC_EXPORT(cuMemcpy3DPeerAsync_ptsz, (const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream),
          (pCopy, hStream))
{
    return peer3d(pCopy, true, hStream, true);
}

/* The 32-bit legacy forms cannot address this device. */
#define FC_LEGACY(name, params, args)    \
    FC_EXPORT(name, params, args)        \
    {                                    \
        return CUDA_ERROR_NOT_SUPPORTED; \
    }

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
FC_LEGACY(cuMemcpyDtoA,
          (CUarray dstArray, unsigned int dstOffset, CUdeviceptr_v1 srcDevice,
           unsigned int ByteCount),
          (dstArray, dstOffset, srcDevice, ByteCount))
FC_LEGACY(cuMemcpyAtoD,
          (CUdeviceptr_v1 dstDevice, CUarray srcArray, unsigned int srcOffset,
           unsigned int ByteCount),
          (dstDevice, srcArray, srcOffset, ByteCount))
FC_LEGACY(cuMemcpy2D, (const CUDA_MEMCPY2D_v1 *pCopy), (pCopy))
FC_LEGACY(cuMemcpy2DUnaligned, (const CUDA_MEMCPY2D_v1 *pCopy), (pCopy))
FC_LEGACY(cuMemcpy2DAsync, (const CUDA_MEMCPY2D_v1 *pCopy, CUstream hStream), (pCopy, hStream))
FC_LEGACY(cuMemcpy3D, (const CUDA_MEMCPY3D_v1 *pCopy), (pCopy))
FC_LEGACY(cuMemcpy3DAsync, (const CUDA_MEMCPY3D_v1 *pCopy, CUstream hStream), (pCopy, hStream))
FC_LEGACY(cuMemsetD2D8,
          (CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned char uc, unsigned int Width,
           unsigned int Height),
          (dstDevice, dstPitch, uc, Width, Height))
FC_LEGACY(cuMemsetD2D16,
          (CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned short us, unsigned int Width,
           unsigned int Height),
          (dstDevice, dstPitch, us, Width, Height))
FC_LEGACY(cuMemsetD2D32,
          (CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned int ui, unsigned int Width,
           unsigned int Height),
          (dstDevice, dstPitch, ui, Width, Height))
#pragma GCC diagnostic pop

/* ------------------------------------------------------------------------ */
/* Batched 3D copies                                                         */
/* ------------------------------------------------------------------------ */

/*
 * One operand of a batched copy, with the extent in elements: one byte
 * between pointers, the array's element when either side is an array (the
 * two arrays' must match); a pointer's rows of rowLength elements and layers
 * of layerHeight rows, each the extent's when 0 and never less than it.
 */
static CUresult operand_spec(const CUmemcpy3DOperand *o, size_t elem, const CUextent3D *e,
                             side_spec *out)
{
    memset(out, 0, sizeof *out);
    if (o->type == CU_MEMCPY_OPERAND_TYPE_ARRAY) {
        out->type = CU_MEMORYTYPE_ARRAY;
        out->array = o->op.array.array;
        out->x = o->op.array.offset.x * elem;
        out->y = o->op.array.offset.y;
        out->z = o->op.array.offset.z;
        return CUDA_SUCCESS;
    }
    if (o->type != CU_MEMCPY_OPERAND_TYPE_POINTER ||
        (o->op.ptr.rowLength && o->op.ptr.rowLength < e->width) ||
        (o->op.ptr.layerHeight && o->op.ptr.layerHeight < e->height))
        return CUDA_ERROR_INVALID_VALUE;
    out->type = CU_MEMORYTYPE_UNIFIED;
    out->dev = o->op.ptr.ptr;
    out->host = (const void *)(uintptr_t)o->op.ptr.ptr;
    if (__builtin_mul_overflow(o->op.ptr.rowLength ? o->op.ptr.rowLength : e->width, elem,
                               &out->pitch))
        return CUDA_ERROR_INVALID_VALUE;
    out->rows = o->op.ptr.layerHeight ? o->op.ptr.layerHeight : e->height;
    return CUDA_SUCCESS;
}

/* Op `op` of a batch, resolved (the lock held). */
static CUresult batch_op(const CUDA_MEMCPY3D_BATCH_OP *op, copy3d *out)
{
    fc_array *sa = op->src.type == CU_MEMCPY_OPERAND_TYPE_ARRAY
                       ? fc_array_get(op->src.op.array.array)
                       : NULL;
    fc_array *da = op->dst.type == CU_MEMCPY_OPERAND_TYPE_ARRAY
                       ? fc_array_get(op->dst.op.array.array)
                       : NULL;
    CUmemcpySrcAccessOrder order = op->srcAccessOrder;
    size_t elem = sa ? sa->elem : da ? da->elem : 1, width;
    side_spec s, d;

    if (!op->extent.width || !op->extent.height || !op->extent.depth ||
        (op->src.type == CU_MEMCPY_OPERAND_TYPE_ARRAY && !sa) ||
        (op->dst.type == CU_MEMCPY_OPERAND_TYPE_ARRAY && !da) ||
        (sa && da && sa->elem != da->elem) ||
        (order != CU_MEMCPY_SRC_ACCESS_ORDER_STREAM &&
         order != CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL &&
         order != CU_MEMCPY_SRC_ACCESS_ORDER_ANY) ||
        __builtin_mul_overflow(op->extent.width, elem, &width))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = operand_spec(&op->src, elem, &op->extent, &s);
    if (rc == CUDA_SUCCESS)
        rc = operand_spec(&op->dst, elem, &op->extent, &d);
    return rc != CUDA_SUCCESS ? rc
                              : resolve(&s, &d, width, op->extent.height, op->extent.depth, out);
}

/*
 * As cuMemcpyBatchAsync (fc_copy.c): flags must be 0, the legacy NULL stream
 * is refused, the index of an op that fails its checks is given back
 * (SIZE_MAX when the failure is not about one op), and the ops before it
 * stay queued.
 */
static CUresult batch3d(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx,
                        unsigned long long flags, CUstream h, bool per_thread)
{
    if (failIdx)
        *failIdx = SIZE_MAX;
    if (!numOps || !opList || flags || h == NULL || h == CU_STREAM_LEGACY)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = NULL;
    bool synced = false;
    rc = fc_stream_for_work(h, per_thread, &s);
    for (size_t i = 0; i < numOps && rc == CUDA_SUCCESS; i++) {
        copy3d c;
        rc = batch_op(&opList[i], &c);
        if (rc == CUDA_SUCCESS)
            rc = copy_queue(&c, s, &synced);
        if (rc != CUDA_SUCCESS && failIdx)
            *failIdx = i;
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuMemcpy3DBatchAsync,
          (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx, unsigned long long flags,
           CUstream hStream),
          (numOps, opList, failIdx, flags, hStream))
{
    return batch3d(numOps, opList, failIdx, flags, hStream, false);
}

FC_EXPORT(cuMemcpy3DBatchAsync_ptsz,
          (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx, unsigned long long flags,
           CUstream hStream),
          (numOps, opList, failIdx, flags, hStream))
{
    return batch3d(numOps, opList, failIdx, flags, hStream, true);
}

FC_EXPORT(cuMemcpy3DBatchAsync_v2,
          (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, unsigned long long flags,
           CUstream hStream),
          (numOps, opList, flags, hStream))
{
    return batch3d(numOps, opList, NULL, flags, hStream, false);
}

FC_EXPORT(cuMemcpy3DBatchAsync_v2_ptsz,
          (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, unsigned long long flags,
           CUstream hStream),
          (numOps, opList, flags, hStream))
{
    return batch3d(numOps, opList, NULL, flags, hStream, true);
}

/* ------------------------------------------------------------------------ */
/* 2D sets                                                                   */
/* ------------------------------------------------------------------------ */

/*
 * Height rows of Width elements, dstPitch bytes apart ("Unused if Height is
 * 1", else at least a row's bytes); the pointer and the pitch aligned to the
 * element ("two [four] byte aligned").  The whole extent in one allocation.
 */
static CUresult set2d_check(CUdeviceptr dst, size_t pitch, unsigned elem, size_t width,
                            size_t height, bool ordered, bool capturing)
{
    size_t row, span;
    if (!width || !height)
        return CUDA_SUCCESS;
    if (dst % elem || __builtin_mul_overflow(width, elem, &row) ||
        (height > 1 && (pitch % elem || pitch < row || pitch > FC_MAX_PITCH)))
        return CUDA_ERROR_INVALID_VALUE;
    if (!mul_add(height - 1, pitch, row, &span))
        return CUDA_ERROR_INVALID_VALUE;
    return fc_range_check(dst, span, true, ordered, capturing, NULL);
}

static CUresult set2d_sync(CUdeviceptr dst, size_t pitch, uint32_t value, unsigned elem,
                           size_t width, size_t height, bool per_thread)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = NULL;
    rc = fc_stream_resolve(NULL, per_thread, &s);
    if (rc == CUDA_SUCCESS)
        rc = set2d_check(dst, pitch, elem, width, height, true, false);
    if (rc == CUDA_SUCCESS)
        rc = fc_sync_call_allowed(s);
    if (rc == CUDA_SUCCESS)
        rc = fc_sync_for_api(s);
    if (rc == CUDA_SUCCESS)
        rc = set2d_check(dst, pitch, elem, width, height, false, false);
    for (size_t y = 0; rc == CUDA_SUCCESS && width && y < height; y++)
        (void)fc_dev_fill(dst + y * pitch, value, elem, width);
    fc_unlock();
    return rc;
}

static CUresult set2d_async(CUdeviceptr dst, size_t pitch, uint32_t value, unsigned elem,
                            size_t width, size_t height, CUstream h, bool per_thread)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = NULL;
    rc = fc_stream_for_work(h, per_thread, &s);
    if (rc == CUDA_SUCCESS)
        rc = set2d_check(dst, pitch, elem, width, height, true, s->cap != NULL);
    for (size_t y = 0; rc == CUDA_SUCCESS && width && y < height; y++) {
        fc_op *op = fc_op_new(FC_OP_MEMSET);
        if (!op) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
            break;
        }
        op->u.memset.dst = dst + y * pitch;
        op->u.memset.value = value;
        op->u.memset.elem = elem;
        op->u.memset.count = width;
        rc = fc_enqueue(s, op, NULL);
    }
    fc_unlock();
    return rc;
}

#define SET2D(name, type, elem, per_thread)                                                      \
    FC_EXPORT(name,                                                                              \
              (CUdeviceptr dstDevice, size_t dstPitch, type value, size_t Width, size_t Height), \
              (dstDevice, dstPitch, value, Width, Height))                                       \
    {                                                                                            \
        return set2d_sync(dstDevice, dstPitch, value, elem, Width, Height, per_thread);          \
    }
#define SET2D_ASYNC(name, type, elem, per_thread)                                                 \
    FC_EXPORT(name,                                                                               \
              (CUdeviceptr dstDevice, size_t dstPitch, type value, size_t Width, size_t Height,   \
               CUstream hStream),                                                                 \
              (dstDevice, dstPitch, value, Width, Height, hStream))                               \
    {                                                                                             \
        return set2d_async(dstDevice, dstPitch, value, elem, Width, Height, hStream, per_thread); \
    }

SET2D(cuMemsetD2D8_v2, unsigned char, 1, false)
SET2D(cuMemsetD2D8_v2_ptds, unsigned char, 1, true)
SET2D(cuMemsetD2D16_v2, unsigned short, 2, false)
SET2D(cuMemsetD2D16_v2_ptds, unsigned short, 2, true)
SET2D(cuMemsetD2D32_v2, unsigned int, 4, false)
SET2D(cuMemsetD2D32_v2_ptds, unsigned int, 4, true)
SET2D_ASYNC(cuMemsetD2D8Async, unsigned char, 1, false)
SET2D_ASYNC(cuMemsetD2D8Async_ptsz, unsigned char, 1, true)
SET2D_ASYNC(cuMemsetD2D16Async, unsigned short, 2, false)
SET2D_ASYNC(cuMemsetD2D16Async_ptsz, unsigned short, 2, true)
SET2D_ASYNC(cuMemsetD2D32Async, unsigned int, 4, false)
SET2D_ASYNC(cuMemsetD2D32Async_ptsz, unsigned int, 4, true)
