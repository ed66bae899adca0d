/*
 * Stream and event entry points.  The engine behind them is fc_stream.c.
 *
 * cuStreamQuery and cuEventQuery run the queued work they ask about and then
 * report CUDA_SUCCESS (or the context's error): answering
 * CUDA_ERROR_NOT_READY without ever making progress would hang every
 * program that polls, and the fake has no device running in the background.
 * With the device timeline (fc_stream.c) they answer CUDA_ERROR_NOT_READY
 * until the modelled device has completed that work, and then run it.
 */
#include "fc_internal.h"

#include <stdlib.h>

/* ------------------------------------------------------------------------ */
/* Streams                                                                   */
/* ------------------------------------------------------------------------ */

static CUresult stream_create(CUstream *ph, unsigned int flags, int priority)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS && (!ph || (flags & ~(unsigned int)CU_STREAM_NON_BLOCKING)))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        /* Out-of-range priorities are clamped, as documented. */
        if (priority < FC_PRIO_GREATEST)
            priority = FC_PRIO_GREATEST;
        if (priority > FC_PRIO_LEAST)
            priority = FC_PRIO_LEAST;
        fc_stream *s = fc_stream_new_user(c, flags, priority);
        if (!s)
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        else
            *ph = (CUstream)s;
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuStreamCreate, (CUstream * phStream, unsigned int Flags), (phStream, Flags))
{
    return stream_create(phStream, Flags, 0);
}

FC_EXPORT(cuStreamCreateWithPriority, (CUstream * phStream, unsigned int flags, int priority),
          (phStream, flags, priority))
{
    return stream_create(phStream, flags, priority);
}

/* Only created streams can be destroyed; NULL and the special handles not. */
static CUresult stream_destroy(CUstream h)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = fc_handle_get(h, FC_K_STREAM);
    if (!s)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (s->cap)
        rc = fc_capture_stream_destroy(s);
    else
        fc_stream_destroy(s);
    fc_unlock();
    return rc;
}

FC_EXPORT(cuStreamDestroy, (CUstream hStream), (hStream))
{
    return stream_destroy(hStream);
}

FC_EXPORT(cuStreamDestroy_v2, (CUstream hStream), (hStream))
{
    return stream_destroy(hStream);
}

static CUresult stream_sync(CUstream h, bool per_thread, bool query)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = NULL;
    rc = fc_stream_resolve(h, per_thread, &s);
    if (rc == CUDA_SUCCESS)
        rc = fc_capture_sync(s);
    if (rc == CUDA_SUCCESS && query && !fc_stream_ready(s, NULL))
        rc = CUDA_ERROR_NOT_READY;
    if (rc == CUDA_SUCCESS)
        rc = fc_sync_for_api(s);
    fc_unlock();
    return rc;
}

FC_EXPORT(cuStreamSynchronize, (CUstream hStream), (hStream))
{
    return stream_sync(hStream, false, false);
}

FC_EXPORT(cuStreamSynchronize_ptsz, (CUstream hStream), (hStream))
{
    return stream_sync(hStream, true, false);
}

FC_EXPORT(cuStreamQuery, (CUstream hStream), (hStream))
{
    return stream_sync(hStream, false, true);
}

FC_EXPORT(cuStreamQuery_ptsz, (CUstream hStream), (hStream))
{
    return stream_sync(hStream, true, true);
}

static CUresult stream_wait_event(CUstream h, CUevent ev, unsigned int flags, bool per_thread)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = NULL;
    rc = fc_stream_resolve(h, per_thread, &s);
    fc_event *e = fc_handle_get(ev, FC_K_EVENT);
    if (rc == CUDA_SUCCESS && !e)
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (rc == CUDA_SUCCESS && (flags & ~(unsigned int)CU_EVENT_WAIT_EXTERNAL))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        rc = fc_capture_use(s);
    /* A capturing stream, or an event recorded in a capture: fc_graph.c. */
    bool done = false;
    if (rc == CUDA_SUCCESS)
        rc = fc_capture_wait(s, e, flags, &done);
    /* CU_EVENT_WAIT_EXTERNAL "is invalid outside of stream capture". */
    if (rc == CUDA_SUCCESS && !done && (flags & CU_EVENT_WAIT_EXTERNAL))
        rc = CUDA_ERROR_INVALID_VALUE;
    /* Work the event captured and that has not run yet becomes a prerequisite
     * of everything queued on s from now on (a marker op carries it). */
    if (rc == CUDA_SUCCESS && !done && e->recorded && fc_dep_pending(&e->at)) {
        fc_op *op = fc_op_new(FC_OP_MARKER);
        rc = op ? fc_enqueue(s, op, &e->at) : CUDA_ERROR_OUT_OF_MEMORY;
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuStreamWaitEvent, (CUstream hStream, CUevent hEvent, unsigned int Flags),
          (hStream, hEvent, Flags))
{
    return stream_wait_event(hStream, hEvent, Flags, false);
}

FC_EXPORT(cuStreamWaitEvent_ptsz, (CUstream hStream, CUevent hEvent, unsigned int Flags),
          (hStream, hEvent, Flags))
{
    return stream_wait_event(hStream, hEvent, Flags, true);
}

/* Shared front half of the stream getters: resolve, check the out-pointer. */
static CUresult stream_query(CUstream h, bool per_thread, const void *out, fc_stream **s)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = fc_stream_resolve(h, per_thread, s);
    if (rc == CUDA_SUCCESS && !out)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc != CUDA_SUCCESS)
        fc_unlock();
    return rc;
}

static CUresult stream_get_flags(CUstream h, unsigned int *flags, bool per_thread)
{
    fc_stream *s;
    CUresult rc = stream_query(h, per_thread, flags, &s);
    if (rc != CUDA_SUCCESS)
        return rc;
    *flags = s->flags;
    fc_unlock();
    return CUDA_SUCCESS;
}

FC_EXPORT(cuStreamGetFlags, (CUstream hStream, unsigned int *flags), (hStream, flags))
{
    return stream_get_flags(hStream, flags, false);
}

FC_EXPORT(cuStreamGetFlags_ptsz, (CUstream hStream, unsigned int *flags), (hStream, flags))
{
    return stream_get_flags(hStream, flags, true);
}

static CUresult stream_get_priority(CUstream h, int *priority, bool per_thread)
{
    fc_stream *s;
    CUresult rc = stream_query(h, per_thread, priority, &s);
    if (rc != CUDA_SUCCESS)
        return rc;
    *priority = s->priority;
    fc_unlock();
    return CUDA_SUCCESS;
}

FC_EXPORT(cuStreamGetPriority, (CUstream hStream, int *priority), (hStream, priority))
{
    return stream_get_priority(hStream, priority, false);
}

FC_EXPORT(cuStreamGetPriority_ptsz, (CUstream hStream, int *priority), (hStream, priority))
{
    return stream_get_priority(hStream, priority, true);
}

static CUresult stream_get_ctx(CUstream h, CUcontext *pctx, CUgreenCtx *pgreen, bool per_thread)
{
    fc_stream *s;
    CUresult rc = stream_query(h, per_thread, pctx, &s);
    if (rc != CUDA_SUCCESS)
        return rc;
    *pctx = (CUcontext)s->ctx;
    if (pgreen)
        *pgreen = NULL; /* the fake has no green contexts */
    fc_unlock();
    return CUDA_SUCCESS;
}

FC_EXPORT(cuStreamGetCtx, (CUstream hStream, CUcontext *pctx), (hStream, pctx))
{
    return stream_get_ctx(hStream, pctx, NULL, false);
}

FC_EXPORT(cuStreamGetCtx_ptsz, (CUstream hStream, CUcontext *pctx), (hStream, pctx))
{
    return stream_get_ctx(hStream, pctx, NULL, true);
}

FC_EXPORT(cuStreamGetCtx_v2, (CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx),
          (hStream, pCtx, pGreenCtx))
{
    return stream_get_ctx(hStream, pCtx, pGreenCtx, false);
}

FC_EXPORT(cuStreamGetCtx_v2_ptsz, (CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx),
          (hStream, pCtx, pGreenCtx))
{
    return stream_get_ctx(hStream, pCtx, pGreenCtx, true);
}

/*
 * The callback runs when the stream's work before it has run (whichever call
 * forces the stream), on that thread, with CUDA_SUCCESS; with the device
 * timeline, on the timeline's worker thread once the device reaches it, if
 * nothing forced it before (fc_stream.c).  If the context dies first, it
 * runs then with the context's error.  Either way exactly once.
 */
static CUresult add_callback(CUstream h, CUstreamCallback fn, void *user, unsigned int flags,
                             bool per_thread)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = NULL;
    rc = fc_stream_resolve(h, per_thread, &s);
    if (rc == CUDA_SUCCESS && (!fn || flags != 0))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        rc = fc_capture_use(s);
    /* "this function is not supported with cuStreamBeginCapture and
     * cuStreamEndCapture": refused like a wait on the capturing stream. */
    if (rc == CUDA_SUCCESS && s->cap)
        rc = fc_capture_sync(s);
    if (rc == CUDA_SUCCESS) {
        fc_op *op = fc_op_new(FC_OP_CALLBACK);
        if (!op) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            op->u.callback.fn = fn;
            op->u.callback.stream = h;
            op->u.callback.user = user;
            rc = fc_enqueue(s, op, NULL);
            if (rc == CUDA_SUCCESS)
                fc_timeline_callback();
        }
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuStreamAddCallback,
          (CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags),
          (hStream, callback, userData, flags))
{
    return add_callback(hStream, callback, userData, flags, false);
}

FC_EXPORT(cuStreamAddCallback_ptsz,
          (CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags),
          (hStream, callback, userData, flags))
{
    return add_callback(hStream, callback, userData, flags, true);
}

/* ------------------------------------------------------------------------ */
/* Events                                                                    */
/* ------------------------------------------------------------------------ */

FC_EXPORT(cuEventCreate, (CUevent * phEvent, unsigned int Flags), (phEvent, Flags))
{
    const unsigned int known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                               CU_EVENT_INTERPROCESS;
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS &&
        (!phEvent || (Flags & ~known) ||
         ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        fc_event *e = calloc(1, sizeof *e);
        if (!e) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            e->ctx = c;
            e->flags = Flags;
            LIST_INSERT_HEAD(&c->events, e, link);
            fc_handle_add(&e->h, FC_K_EVENT);
            *phEvent = (CUevent)e;
        }
    }
    fc_unlock();
    return rc;
}

static CUresult event_record(CUevent ev, CUstream h, bool per_thread)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_event *e = fc_handle_get(ev, FC_K_EVENT);
    fc_stream *s = NULL;
    if (!e)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else
        rc = fc_stream_resolve(h, per_thread, &s);
    if (rc == CUDA_SUCCESS && s->ctx != e->ctx)
        rc = CUDA_ERROR_INVALID_HANDLE; /* "must be from the same context" */
    if (rc == CUDA_SUCCESS)
        rc = fc_capture_use(s);
    /* In a capture, the record names the nodes captured so far. */
    if (rc == CUDA_SUCCESS && s->cap) {
        rc = fc_capture_record(s, e);
        fc_unlock();
        return rc;
    }
    if (rc == CUDA_SUCCESS) {
        /* A marker op: on the legacy stream it also captures the blocking
         * streams' work, through the prerequisites every legacy op gets. */
        static uint64_t next_record = 1; /* under the driver lock */
        fc_op *op = fc_op_new(FC_OP_MARKER);
        if (op)
            op->u.marker.record = next_record++;
        rc = op ? fc_enqueue(s, op, NULL) : CUDA_ERROR_OUT_OF_MEMORY;
        if (rc == CUDA_SUCCESS) {
            e->recorded = true;
            e->at = (fc_dep){ s->id, op->seq };
            e->record = op->u.marker.record;
            e->done = false;
            fc_capture_event_clear(e);
        }
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuEventRecord, (CUevent hEvent, CUstream hStream), (hEvent, hStream))
{
    return event_record(hEvent, hStream, false);
}

FC_EXPORT(cuEventRecord_ptsz, (CUevent hEvent, CUstream hStream), (hEvent, hStream))
{
    return event_record(hEvent, hStream, true);
}

/* Before any record an event is an empty set of work: complete. */
static CUresult event_wait(CUevent ev, bool query)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_event *e = fc_handle_get(ev, FC_K_EVENT);
    if (!e)
        rc = CUDA_ERROR_INVALID_HANDLE;
    /* A record in a capture stands for no work; waiting outside stream
     * order is a potentially unsafe call. */
    if (rc == CUDA_SUCCESS)
        rc = fc_capture_event_check(e);
    if (rc == CUDA_SUCCESS)
        rc = fc_capture_unsafe();
    if (rc == CUDA_SUCCESS && e->recorded && fc_dep_pending(&e->at)) {
        if (query && !fc_stream_ready(NULL, &e->at))
            rc = e->ctx->sticky != CUDA_SUCCESS ? e->ctx->sticky : CUDA_ERROR_NOT_READY;
        else
            fc_run_dep(&e->at);
    }
    if (rc == CUDA_SUCCESS)
        rc = e->ctx->sticky;
    fc_unlock();
    return rc;
}

FC_EXPORT(cuEventQuery, (CUevent hEvent), (hEvent))
{
    return event_wait(hEvent, true);
}

FC_EXPORT(cuEventSynchronize, (CUevent hEvent), (hEvent))
{
    return event_wait(hEvent, false);
}

/*
 * The host clock when each record's marker ran.  Like the real function it
 * does not run pending work: a record that has not run yet is
 * CUDA_ERROR_NOT_READY (cuEventQuery or cuEventSynchronize completes it).
 */
static CUresult elapsed_time(float *ms, CUevent start, CUevent end)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_event *a = fc_handle_get(start, FC_K_EVENT);
    fc_event *b = fc_handle_get(end, FC_K_EVENT);
    if (a && b && (a->cap_id || b->cap_id))
        rc = fc_capture_event_check(a->cap_id ? a : b);
    else if (!a || !b || !a->recorded || !b->recorded || (a->flags & CU_EVENT_DISABLE_TIMING) ||
             (b->flags & CU_EVENT_DISABLE_TIMING))
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (!ms)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!a->done || !b->done)
        rc = CUDA_ERROR_NOT_READY;
    else
        *ms = (float)((double)((int64_t)(b->done_ns - a->done_ns)) / 1e6);
    fc_unlock();
    return rc;
}

FC_EXPORT(cuEventElapsedTime, (float *pMilliseconds, CUevent hStart, CUevent hEnd),
          (pMilliseconds, hStart, hEnd))
{
    return elapsed_time(pMilliseconds, hStart, hEnd);
}

FC_EXPORT(cuEventElapsedTime_v2, (float *pMilliseconds, CUevent hStart, CUevent hEnd),
          (pMilliseconds, hStart, hEnd))
{
    return elapsed_time(pMilliseconds, hStart, hEnd);
}

static CUresult event_destroy(CUevent ev)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_event *e = fc_handle_get(ev, FC_K_EVENT);
    if (!e) {
        rc = CUDA_ERROR_INVALID_HANDLE;
    } else {
        /* Streams that wait on it hold their own copy of its dependency. */
        LIST_REMOVE(e, link);
        fc_handle_del(&e->h);
        fc_capture_event_clear(e);
        free(e);
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuEventDestroy, (CUevent hEvent), (hEvent))
{
    return event_destroy(hEvent);
}

FC_EXPORT(cuEventDestroy_v2, (CUevent hEvent), (hEvent))
{
    return event_destroy(hEvent);
}
