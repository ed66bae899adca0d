/*
 * memset and memcpy entry points.
 *
 * Synchronous forms act on the legacy default stream (the _ptds forms on the
 * calling thread's per-thread stream): they first run what that stream must
 * wait for (fc_sync_for_api: for the legacy stream, every blocking stream of
 * the context, but no CU_STREAM_NON_BLOCKING stream), then complete before
 * returning.  Asynchronous forms queue an op on their stream.  Host data of
 * an async host-to-device copy is staged at the call, as the driver does for
 * pageable memory.  An async device-to-host copy into page-locked memory
 * (cuMemHostAlloc) writes the caller's buffer only when its stream runs;
 * into pageable memory it runs its stream's earlier work and completes
 * before it returns, as NVIDIA's driver does ("For transfers between device
 * memory and pageable host memory, the function might be synchronous with
 * respect to host", CUDA's API synchronization behavior): programs rely on
 * it (numba-cuda's tests read such a buffer at once), and a buffer freed
 * before a later synchronisation must not be written.
 *
 * A device range must lie inside one allocation's requested size, else
 * CUDA_ERROR_INVALID_VALUE, checked at the call (or inside a graph
 * allocation, for a copy ordered after its allocation node: fc_graph.c).
 * On a capturing stream an async copy becomes a graph node, a copy to
 * pageable memory or between host buffers included; the synchronous forms
 * follow the capture rules of fc_graph.c.
 */
#include "fc_internal.h"

#include <stdlib.h>
#include <string.h>

/*
 * The device ranges of a copy: `ordered` also takes graph allocations that
 * are allocated in stream order, or any when `capturing` (fc_mem_check_ordered).
 */
CUresult fc_range_check(CUdeviceptr p, size_t n, bool write, bool ordered, bool capturing,
                        unsigned char **host)
{
    CUresult rc = fc_mem_check_at(p, n, write, host);
    return rc == CUDA_SUCCESS || !ordered ? rc : fc_mem_check_ordered(p, n, write, capturing);
}

/*
 * A device-to-host copy's source, when it lies in one allocation's own
 * backing, is given back in *src (else NULL), so a copy run at once reads it
 * without looking the allocation up again.
 */
CUresult fc_xfer_check(const fc_xfer *x, bool ordered, bool capturing, unsigned char **src)
{
    if (src)
        *src = NULL;
    if (x->n == 0)
        return CUDA_SUCCESS;
    switch (x->kind) {
    case FC_X_HTOD:
        return x->hsrc ? fc_range_check(x->ddst, x->n, true, ordered, capturing, NULL)
                       : CUDA_ERROR_INVALID_VALUE;
    case FC_X_DTOH:
        return x->hdst ? fc_range_check(x->dsrc, x->n, false, ordered, capturing, src)
                       : CUDA_ERROR_INVALID_VALUE;
    case FC_X_DTOD: {
        CUresult rc = fc_range_check(x->ddst, x->n, true, ordered, capturing, NULL);
        return rc != CUDA_SUCCESS ? rc
                                  : fc_range_check(x->dsrc, x->n, false, ordered, capturing, NULL);
    }
    default:
        return x->hdst && x->hsrc ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
}

/* Validated ranges of live allocations: these accesses cannot fault. */
void fc_xfer_now(const fc_xfer *x)
{
    if (x->n == 0)
        return;
    switch (x->kind) {
    case FC_X_HTOD:
        (void)fc_dev_write(x->ddst, x->hsrc, x->n);
        break;
    case FC_X_DTOH:
        (void)fc_dev_read(x->dsrc, x->hdst, x->n);
        break;
    case FC_X_DTOD:
        (void)fc_dev_copy(x->ddst, x->dsrc, x->n);
        break;
    default:
        memmove(x->hdst, x->hsrc, x->n);
        break;
    }
}

/*
 * A synchronous call on the legacy (per-thread) stream while a capture goes
 * on: refused when that stream cannot be waited for (fc_capture_sync) or
 * the thread's capture mode prohibits it (fc_capture_unsafe).
 */
CUresult fc_sync_call_allowed(fc_stream *s)
{
    CUresult rc = fc_capture_sync(s);
    return rc != CUDA_SUCCESS ? rc : fc_capture_unsafe();
}

static CUresult xfer_sync(const fc_xfer *x, bool per_thread)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = NULL;
    rc = fc_stream_resolve(NULL, per_thread, &s);
    if (rc == CUDA_SUCCESS)
        rc = fc_xfer_check(x, true, false, NULL);
    if (rc == CUDA_SUCCESS)
        rc = fc_sync_call_allowed(s);
    if (rc == CUDA_SUCCESS)
        rc = fc_sync_for_api(s);
    /* The work just run may have freed (stream-ordered) what we validated. */
    if (rc == CUDA_SUCCESS)
        rc = fc_xfer_check(x, false, false, NULL);
    if (rc == CUDA_SUCCESS)
        fc_xfer_now(x);
    fc_unlock();
    return rc;
}

/*
 * An async copy on stream s, the driver lock held.  *synced: true when s has
 * nothing queued and its earlier work has run, as after a copy run at once
 * (the copies of one batch after the first: the lock is held throughout, so
 * nothing else was queued meanwhile); kept up to date here.
 */
CUresult fc_xfer_queue(const fc_xfer *x, fc_stream *s, bool *synced)
{
    unsigned char *src = NULL;
    CUresult rc = fc_xfer_check(x, true, s->cap != NULL, &src);
    if (rc != CUDA_SUCCESS || x->n == 0)
        return rc;
    if (!s->cap && (x->kind == FC_X_HTOH ||
                    (x->kind == FC_X_DTOH && !fc_host_is_page_locked(x->hdst, x->n)))) {
        /* Host to host is fully synchronous, in stream order; so is device
         * to pageable host memory (see the top of this file). */
        uint64_t ran = fc_st.ops_run;
        if (!*synced) {
            /* The call waits for its stream: the census counts a host wait
             * (once a call: later rows and copies of it find s synced). */
            atomic_fetch_add_explicit(&fc_async_waits, 1, memory_order_relaxed);
            if ((rc = fc_sync_for_api(s)) != CUDA_SUCCESS)
                return rc;
        }
        *synced = true;
        if (src && fc_st.ops_run == ran) {
            /* No work ran, so nothing was freed: the source checked above
             * is still its allocation's. */
            memcpy(x->hdst, src, x->n);
            return CUDA_SUCCESS;
        }
        /* The work just run may have freed (stream-ordered) what we validated. */
        rc = fc_xfer_check(x, false, false, NULL);
        if (rc == CUDA_SUCCESS)
            fc_xfer_now(x);
        return rc;
    }

    /* Captured into a graph, a copy node reads and writes the application's
     * buffers when it runs, at every launch: nothing is staged. */
    static const int op_kind[] = { [FC_X_HTOD] = FC_OP_HTOD,
                                   [FC_X_DTOH] = FC_OP_DTOH,
                                   [FC_X_DTOD] = FC_OP_DTOD,
                                   [FC_X_HTOH] = FC_OP_HTOH };
    fc_op *op = fc_op_new(op_kind[x->kind]);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.copy.n = x->n;
    switch (x->kind) {
    case FC_X_HTOD:
        op->u.copy.dev = x->ddst;
        if (s->cap) {
            op->u.copy.host = (void *)(uintptr_t)x->hsrc;
            break;
        }
        op->u.copy.host = malloc(x->n);
        op->u.copy.staged = op->u.copy.host != NULL;
        if (op->u.copy.host)
            memcpy(op->u.copy.host, x->hsrc, x->n);
        else
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        break;
    case FC_X_HTOH:
        op->u.copy.host = x->hdst;
        op->u.copy.host_src = x->hsrc;
        break;
    case FC_X_DTOH:
        op->u.copy.dev = x->dsrc;
        op->u.copy.host = x->hdst;
        break;
    default:
        op->u.copy.dev = x->ddst;
        op->u.copy.dev_src = x->dsrc;
        break;
    }
    if (rc == CUDA_SUCCESS)
        rc = fc_enqueue(s, op, NULL);
    else
        fc_op_free(op);
    *synced = false;
    return rc;
}

static CUresult xfer_async(const fc_xfer *x, CUstream h, bool per_thread)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = NULL;
    rc = fc_stream_for_work(h, per_thread, &s);
    bool synced = false;
    if (rc == CUDA_SUCCESS)
        rc = fc_xfer_queue(x, s, &synced);
    fc_unlock();
    return rc;
}

/* cuMemcpy(Async): with unified addressing the direction follows the pointers. */
static fc_xfer unified(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    bool ddev = fc_mem_is_device(dst), sdev = fc_mem_is_device(src);
    fc_xfer x = { .n = n, .ddst = dst, .dsrc = src };
    x.hdst = (void *)(uintptr_t)dst;
    x.hsrc = (const void *)(uintptr_t)src;
    x.kind = ddev ? (sdev ? FC_X_DTOD : FC_X_HTOD) : (sdev ? FC_X_DTOH : FC_X_HTOH);
    return x;
}

/*
 * cuMemcpyBatchAsync: each copy's direction follows its pointers (unified
 * addressing); the copies are queued in order on the stream. As documented,
 * the legacy NULL stream is refused, at least one attribute is needed, the
 * first must apply from copy 0 and each later one from a later copy before
 * `count`, and each must name a source access order; the index of a copy
 * that fails its checks is given back (SIZE_MAX when the failure is not
 * about one copy: the attributes, the stream, the context), and the copies
 * before it stay queued. The stream is resolved, and the driver lock taken,
 * once for the whole batch, as one call of the driver would.
 */
static CUresult memcpy_batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                             CUmemcpyAttributes *attrs, size_t *attrIdxs, size_t numAttrs,
                             size_t *failIdx, CUstream h, bool per_thread)
{
    if (failIdx)
        *failIdx = SIZE_MAX;
    if (!dsts || !srcs || !sizes || !count || !attrs || !attrIdxs || !numAttrs ||
        numAttrs > count || attrIdxs[0] != 0 || h == NULL || h == CU_STREAM_LEGACY)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t k = 0; k < numAttrs; k++) {
        CUmemcpySrcAccessOrder order = attrs[k].srcAccessOrder;
        if ((k && (attrIdxs[k] <= attrIdxs[k - 1] || attrIdxs[k] >= count)) ||
            (order != CU_MEMCPY_SRC_ACCESS_ORDER_STREAM &&
             order != CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL &&
             order != CU_MEMCPY_SRC_ACCESS_ORDER_ANY))
            return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = NULL;
    rc = fc_stream_for_work(h, per_thread, &s);
    bool synced = false;
    for (size_t i = 0; i < count && rc == CUDA_SUCCESS; i++) {
        fc_xfer x = unified(dsts[i], srcs[i], sizes[i]);
        unsigned char *src;

        /* What fc_xfer_queue() does with a copy from one allocation into
         * pageable memory once the stream has nothing queued (every copy
         * but the first of a scan's batch), without its general frame. */
        if (synced && !s->cap && x.kind == FC_X_DTOH && x.n && x.hdst &&
            !fc_host_is_page_locked(x.hdst, x.n) &&
            fc_mem_check_at(x.dsrc, x.n, false, &src) == CUDA_SUCCESS && src) {
            memcpy(x.hdst, src, x.n);
            continue;
        }
        rc = sizes[i] ? fc_xfer_queue(&x, s, &synced) : CUDA_ERROR_INVALID_VALUE;
        if (rc != CUDA_SUCCESS && failIdx)
            *failIdx = i;
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuMemcpyBatchAsync,
          (CUdeviceptr * dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
           CUmemcpyAttributes *attrs, size_t *attrIdxs, size_t numAttrs, size_t *failIdx,
           CUstream hStream),
          (dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, failIdx, hStream))
{
    return memcpy_batch(dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, failIdx, hStream,
                        false);
}

FC_EXPORT(cuMemcpyBatchAsync_ptsz,
          (CUdeviceptr * dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
           CUmemcpyAttributes *attrs, size_t *attrIdxs, size_t numAttrs, size_t *failIdx,
           CUstream hStream),
          (dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, failIdx, hStream))
{
    return memcpy_batch(dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, failIdx, hStream,
                        true);
}

FC_EXPORT(cuMemcpyBatchAsync_v2,
          (CUdeviceptr * dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
           CUmemcpyAttributes *attrs, size_t *attrIdxs, size_t numAttrs, CUstream hStream),
          (dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, hStream))
{
    return memcpy_batch(dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, NULL, hStream, false);
}

FC_EXPORT(cuMemcpyBatchAsync_v2_ptsz,
          (CUdeviceptr * dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
           CUmemcpyAttributes *attrs, size_t *attrIdxs, size_t numAttrs, CUstream hStream),
          (dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, hStream))
{
    return memcpy_batch(dsts, srcs, sizes, count, attrs, attrIdxs, numAttrs, NULL, hStream, true);
}

/* ------------------------------------------------------------------------ */
/* memcpy                                                                    */
/* ------------------------------------------------------------------------ */

FC_EXPORT(cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount), (dst, src, ByteCount))
{
    fc_xfer x = unified(dst, src, ByteCount);
    return xfer_sync(&x, false);
}

FC_EXPORT(cuMemcpy_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount),
          (dst, src, ByteCount))
{
    fc_xfer x = unified(dst, src, ByteCount);
    return xfer_sync(&x, true);
}

FC_EXPORT(cuMemcpyAsync, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream),
          (dst, src, ByteCount, hStream))
{
    fc_xfer x = unified(dst, src, ByteCount);
    return xfer_async(&x, hStream, false);
}

FC_EXPORT(cuMemcpyAsync_ptsz,
          (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream),
          (dst, src, ByteCount, hStream))
{
    fc_xfer x = unified(dst, src, ByteCount);
    return xfer_async(&x, hStream, true);
}

#define HTOD(d, s, len) ((fc_xfer){ .kind = FC_X_HTOD, .ddst = (d), .hsrc = (s), .n = (len) })
#define DTOH(d, s, len) ((fc_xfer){ .kind = FC_X_DTOH, .hdst = (d), .dsrc = (s), .n = (len) })
#define DTOD(d, s, len) ((fc_xfer){ .kind = FC_X_DTOD, .ddst = (d), .dsrc = (s), .n = (len) })

FC_EXPORT(cuMemcpyHtoD_v2, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount),
          (dstDevice, srcHost, ByteCount))
{
    return xfer_sync(&HTOD(dstDevice, srcHost, ByteCount), false);
}

FC_EXPORT(cuMemcpyHtoD_v2_ptds, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount),
          (dstDevice, srcHost, ByteCount))
{
    return xfer_sync(&HTOD(dstDevice, srcHost, ByteCount), true);
}

FC_EXPORT(cuMemcpyDtoH_v2, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount),
          (dstHost, srcDevice, ByteCount))
{
    return xfer_sync(&DTOH(dstHost, srcDevice, ByteCount), false);
}

FC_EXPORT(cuMemcpyDtoH_v2_ptds, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount),
          (dstHost, srcDevice, ByteCount))
{
    return xfer_sync(&DTOH(dstHost, srcDevice, ByteCount), true);
}

FC_EXPORT(cuMemcpyDtoD_v2, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount),
          (dstDevice, srcDevice, ByteCount))
{
    return xfer_sync(&DTOD(dstDevice, srcDevice, ByteCount), false);
}

FC_EXPORT(cuMemcpyDtoD_v2_ptds, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount),
          (dstDevice, srcDevice, ByteCount))
{
    return xfer_sync(&DTOD(dstDevice, srcDevice, ByteCount), true);
}

FC_EXPORT(cuMemcpyHtoDAsync_v2,
          (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream),
          (dstDevice, srcHost, ByteCount, hStream))
{
    return xfer_async(&HTOD(dstDevice, srcHost, ByteCount), hStream, false);
}

FC_EXPORT(cuMemcpyHtoDAsync_v2_ptsz,
          (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream),
          (dstDevice, srcHost, ByteCount, hStream))
{
    return xfer_async(&HTOD(dstDevice, srcHost, ByteCount), hStream, true);
}

FC_EXPORT(cuMemcpyDtoHAsync_v2,
          (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
          (dstHost, srcDevice, ByteCount, hStream))
{
    return xfer_async(&DTOH(dstHost, srcDevice, ByteCount), hStream, false);
}

FC_EXPORT(cuMemcpyDtoHAsync_v2_ptsz,
          (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
          (dstHost, srcDevice, ByteCount, hStream))
{
    return xfer_async(&DTOH(dstHost, srcDevice, ByteCount), hStream, true);
}

FC_EXPORT(cuMemcpyDtoDAsync_v2,
          (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
          (dstDevice, srcDevice, ByteCount, hStream))
{
    return xfer_async(&DTOD(dstDevice, srcDevice, ByteCount), hStream, false);
}

FC_EXPORT(cuMemcpyDtoDAsync_v2_ptsz,
          (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
          (dstDevice, srcDevice, ByteCount, hStream))
{
    return xfer_async(&DTOD(dstDevice, srcDevice, ByteCount), hStream, true);
}

/* The 32-bit legacy forms cannot address this device. */
FC_EXPORT(cuMemcpyHtoD, (CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount),
          (dstDevice, srcHost, ByteCount))
{
    (void)dstDevice, (void)srcHost, (void)ByteCount;
    return CUDA_ERROR_NOT_SUPPORTED;
}

FC_EXPORT(cuMemcpyDtoH, (void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount),
          (dstHost, srcDevice, ByteCount))
{
    (void)dstHost, (void)srcDevice, (void)ByteCount;
    return CUDA_ERROR_NOT_SUPPORTED;
}

FC_EXPORT(cuMemcpyDtoD,
          (CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount),
          (dstDevice, srcDevice, ByteCount))
{
    (void)dstDevice, (void)srcDevice, (void)ByteCount;
    return CUDA_ERROR_NOT_SUPPORTED;
}

FC_EXPORT(cuMemcpyHtoDAsync,
          (CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount, CUstream hStream),
          (dstDevice, srcHost, ByteCount, hStream))
{
    (void)dstDevice, (void)srcHost, (void)ByteCount, (void)hStream;
    return CUDA_ERROR_NOT_SUPPORTED;
}

FC_EXPORT(cuMemcpyDtoHAsync,
          (void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount, CUstream hStream),
          (dstHost, srcDevice, ByteCount, hStream))
{
    (void)dstHost, (void)srcDevice, (void)ByteCount, (void)hStream;
    return CUDA_ERROR_NOT_SUPPORTED;
}

FC_EXPORT(cuMemcpyDtoDAsync,
          (CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount,
           CUstream hStream),
          (dstDevice, srcDevice, ByteCount, hStream))
{
    (void)dstDevice, (void)srcDevice, (void)ByteCount, (void)hStream;
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* ------------------------------------------------------------------------ */
/* memset                                                                    */
/* ------------------------------------------------------------------------ */

/* "The dstDevice pointer must be two [four] byte aligned." */
static CUresult memset_check(CUdeviceptr dst, unsigned int elem, size_t count, bool ordered,
                             bool capturing)
{
    if (count == 0)
        return CUDA_SUCCESS;
    if (dst % elem || count > SIZE_MAX / elem)
        return CUDA_ERROR_INVALID_VALUE;
    return fc_range_check(dst, count * elem, true, ordered, capturing, NULL);
}

static CUresult memset_sync(CUdeviceptr dst, uint32_t value, unsigned int elem, size_t count,
                            bool per_thread)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = NULL;
    rc = fc_stream_resolve(NULL, per_thread, &s);
    if (rc == CUDA_SUCCESS)
        rc = memset_check(dst, elem, count, true, false);
    if (rc == CUDA_SUCCESS)
        rc = fc_sync_call_allowed(s);
    if (rc == CUDA_SUCCESS)
        rc = fc_sync_for_api(s);
    if (rc == CUDA_SUCCESS)
        rc = memset_check(dst, elem, count, false, false);
    if (rc == CUDA_SUCCESS && count)
        (void)fc_dev_fill(dst, value, elem, count);
    fc_unlock();
    return rc;
}

static CUresult memset_async(CUdeviceptr dst, uint32_t value, unsigned int elem, size_t count,
                             CUstream h, bool per_thread)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = NULL;
    rc = fc_stream_for_work(h, per_thread, &s);
    if (rc == CUDA_SUCCESS)
        rc = memset_check(dst, elem, count, true, s->cap != NULL);
    if (rc == CUDA_SUCCESS && count) {
        fc_op *op = fc_op_new(FC_OP_MEMSET);
        if (!op) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            op->u.memset.dst = dst;
            op->u.memset.value = value;
            op->u.memset.elem = elem;
            op->u.memset.count = count;
            rc = fc_enqueue(s, op, NULL);
        }
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuMemsetD8_v2, (CUdeviceptr dstDevice, unsigned char uc, size_t N), (dstDevice, uc, N))
{
    return memset_sync(dstDevice, uc, 1, N, false);
}

FC_EXPORT(cuMemsetD8_v2_ptds, (CUdeviceptr dstDevice, unsigned char uc, size_t N),
          (dstDevice, uc, N))
{
    return memset_sync(dstDevice, uc, 1, N, true);
}

FC_EXPORT(cuMemsetD16_v2, (CUdeviceptr dstDevice, unsigned short us, size_t N), (dstDevice, us, N))
{
    return memset_sync(dstDevice, us, 2, N, false);
}

FC_EXPORT(cuMemsetD16_v2_ptds, (CUdeviceptr dstDevice, unsigned short us, size_t N),
          (dstDevice, us, N))
{
    return memset_sync(dstDevice, us, 2, N, true);
}

FC_EXPORT(cuMemsetD32_v2, (CUdeviceptr dstDevice, unsigned int ui, size_t N), (dstDevice, ui, N))
{
    return memset_sync(dstDevice, ui, 4, N, false);
}

FC_EXPORT(cuMemsetD32_v2_ptds, (CUdeviceptr dstDevice, unsigned int ui, size_t N),
          (dstDevice, ui, N))
{
    return memset_sync(dstDevice, ui, 4, N, true);
}

FC_EXPORT(cuMemsetD8Async, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream),
          (dstDevice, uc, N, hStream))
{
    return memset_async(dstDevice, uc, 1, N, hStream, false);
}

FC_EXPORT(cuMemsetD8Async_ptsz,
          (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream),
          (dstDevice, uc, N, hStream))
{
    return memset_async(dstDevice, uc, 1, N, hStream, true);
}

FC_EXPORT(cuMemsetD16Async, (CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream),
          (dstDevice, us, N, hStream))
{
    return memset_async(dstDevice, us, 2, N, hStream, false);
}

FC_EXPORT(cuMemsetD16Async_ptsz,
          (CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream),
          (dstDevice, us, N, hStream))
{
    return memset_async(dstDevice, us, 2, N, hStream, true);
}

FC_EXPORT(cuMemsetD32Async, (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream),
          (dstDevice, ui, N, hStream))
{
    return memset_async(dstDevice, ui, 4, N, hStream, false);
}

FC_EXPORT(cuMemsetD32Async_ptsz,
          (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream),
          (dstDevice, ui, N, hStream))
{
    return memset_async(dstDevice, ui, 4, N, hStream, true);
}

/* The 32-bit legacy forms cannot address this device. */
FC_EXPORT(cuMemsetD8, (CUdeviceptr_v1 dstDevice, unsigned char uc, unsigned int N),
          (dstDevice, uc, N))
{
    (void)dstDevice, (void)uc, (void)N;
    return CUDA_ERROR_NOT_SUPPORTED;
}

FC_EXPORT(cuMemsetD16, (CUdeviceptr_v1 dstDevice, unsigned short us, unsigned int N),
          (dstDevice, us, N))
{
    (void)dstDevice, (void)us, (void)N;
    return CUDA_ERROR_NOT_SUPPORTED;
}

FC_EXPORT(cuMemsetD32, (CUdeviceptr_v1 dstDevice, unsigned int ui, unsigned int N),
          (dstDevice, ui, N))
{
    (void)dstDevice, (void)ui, (void)N;
    return CUDA_ERROR_NOT_SUPPORTED;
}
