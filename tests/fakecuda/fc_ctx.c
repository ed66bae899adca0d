/*
 * Contexts: the per-thread context stack, primary contexts, created
 * contexts, and context-wide synchronisation.
 *
 * The context stack is thread-local, as in the real driver.  It holds raw
 * fc_ctx pointers; that is safe because context objects are never freed (a
 * destroyed created context stays registered as a zombie, a primary context
 * lives in fc_st), so a stale entry in another thread's stack is detected
 * (CUDA_ERROR_CONTEXT_IS_DESTROYED) rather than dereferenced after free.
 */
#include "fc_internal.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Thread-local context stack                                                */
/* ------------------------------------------------------------------------ */

typedef struct ctx_stack {
    fc_ctx **v;
    size_t n, cap;
} ctx_stack;

static __thread ctx_stack tls_stack;
static pthread_key_t stack_key;
static pthread_once_t stack_key_once = PTHREAD_ONCE_INIT;

/* Frees a thread's stack when the thread exits. */
static void stack_destroy(void *p)
{
    ctx_stack *s = p;
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

static void stack_key_init(void)
{
    pthread_key_create(&stack_key, stack_destroy);
}

static fc_ctx *stack_top(void)
{
    return tls_stack.n ? tls_stack.v[tls_stack.n - 1] : NULL;
}

static bool stack_push(fc_ctx *c)
{
    ctx_stack *s = &tls_stack;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        fc_ctx **v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return false;
        if (!s->v) {
            pthread_once(&stack_key_once, stack_key_init);
            pthread_setspecific(stack_key, s);
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = c;
    return true;
}

static fc_ctx *stack_pop(void)
{
    return tls_stack.n ? tls_stack.v[--tls_stack.n] : NULL;
}

CUresult fc_ctx_current(fc_ctx **out)
{
    fc_ctx *c = stack_top();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!c->alive)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    if (c->sticky != CUDA_SUCCESS)
        return c->sticky;
    *out = c;
    return CUDA_SUCCESS;
}

/* An explicit context argument: registered and alive. */
static fc_ctx *ctx_lookup(CUcontext h)
{
    fc_ctx *c = fc_handle_get(h, FC_K_CTX);
    return c && c->alive ? c : NULL;
}

/* ------------------------------------------------------------------------ */
/* Life cycle                                                                */
/* ------------------------------------------------------------------------ */

static CUresult ctx_activate(fc_ctx *c)
{
    c->alive = true;
    c->sticky = CUDA_SUCCESS;
    LIST_INIT(&c->streams);
    LIST_INIT(&c->events);
    LIST_INIT(&c->modules);
    CUresult rc = fc_stream_ctx_activate(c);
    if (rc != CUDA_SUCCESS)
        c->alive = false;
    return rc;
}

/*
 * Destroy everything a context owns.  Queued work runs first (the real
 * driver completes outstanding work before tearing a context down), then
 * streams, events, modules and memory go.  device_reset: a primary context
 * reset or last release, which also empties the device's stream-ordered pool.
 */
static void ctx_teardown(fc_ctx *c, bool device_reset)
{
    if (c->alive)
        (void)fc_ctx_sync(c);
    fc_capture_ctx_teardown(c);
    fc_stream_ctx_teardown(c);
    fc_module_ctx_teardown(c);
    fc_mem_ctx_teardown(c, device_reset);
    fc_host_ctx_teardown(c);
    c->alive = false;
    c->sticky = CUDA_SUCCESS;
}

static bool sched_flags_valid(unsigned int flags)
{
    unsigned int sched = flags & CU_CTX_SCHED_MASK;
    if (flags & ~(unsigned int)CU_CTX_FLAGS_MASK)
        return false;
    return sched == CU_CTX_SCHED_AUTO || sched == CU_CTX_SCHED_SPIN ||
           sched == CU_CTX_SCHED_YIELD || sched == CU_CTX_SCHED_BLOCKING_SYNC;
}

/* ------------------------------------------------------------------------ */
/* Created contexts                                                          */
/* ------------------------------------------------------------------------ */

static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pctx || !sched_flags_valid(flags))
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!fc_dev_valid(dev))
        rc = CUDA_ERROR_INVALID_DEVICE;
    if (rc != CUDA_SUCCESS) {
        fc_unlock();
        return rc;
    }

    fc_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        fc_unlock();
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    c->dev = dev;
    c->flags = flags;
    c->refcount = 1; /* the usage count cuCtxAttach and cuCtxDetach move */
    rc = ctx_activate(c);
    if (rc == CUDA_SUCCESS && !stack_push(c)) {
        ctx_teardown(c, false);
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (rc != CUDA_SUCCESS) {
        free(c);
        fc_unlock();
        return rc;
    }
    fc_handle_add(&c->h, FC_K_CTX);
    *pctx = (CUcontext)c;
    fc_unlock();
    return CUDA_SUCCESS;
}

FC_EXPORT(cuCtxCreate, (CUcontext * pctx, unsigned int flags, CUdevice dev), (pctx, flags, dev))
{
    return ctx_create(pctx, flags, dev);
}

FC_EXPORT(cuCtxCreate_v2, (CUcontext * pctx, unsigned int flags, CUdevice dev), (pctx, flags, dev))
{
    return ctx_create(pctx, flags, dev);
}

/* Execution affinity is accepted and ignored: the fake has no SMs to limit. */
FC_EXPORT(cuCtxCreate_v3,
          (CUcontext * pctx, CUexecAffinityParam *paramsArray, int numParams, unsigned int flags,
           CUdevice dev),
          (pctx, paramsArray, numParams, flags, dev))
{
    if (!atomic_load(&fc_st.initialized))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (numParams < 0 || (numParams > 0 && !paramsArray))
        return CUDA_ERROR_INVALID_VALUE;
    return ctx_create(pctx, flags, dev);
}

FC_EXPORT(cuCtxCreate_v4,
          (CUcontext * pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev),
          (pctx, params, flags, dev))
{
    if (!atomic_load(&fc_st.initialized))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (params) {
        if (params->numExecAffinityParams < 0 ||
            (params->numExecAffinityParams > 0 && !params->execAffinityParams))
            return CUDA_ERROR_INVALID_VALUE;
        if (params->cigParams)
            return CUDA_ERROR_NOT_SUPPORTED; /* no graphics client here */
    }
    return ctx_create(pctx, flags, dev);
}

static CUresult ctx_destroy(CUcontext h)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = h ? ctx_lookup(h) : NULL;
    if (!h)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!c || c->primary) /* primary contexts go through Release/Reset */
        rc = CUDA_ERROR_INVALID_CONTEXT;
    else {
        ctx_teardown(c, false);
        /* "as though cuCtxPopCurrent() were called" when current here. */
        if (stack_top() == c)
            (void)stack_pop();
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuCtxDestroy, (CUcontext ctx), (ctx))
{
    return ctx_destroy(ctx);
}

FC_EXPORT(cuCtxDestroy_v2, (CUcontext ctx), (ctx))
{
    return ctx_destroy(ctx);
}

/* The deprecated usage count (cuda.h): cuCtxAttach increments that of the
 * current context, cuCtxDetach decrements that of a context current to the
 * calling thread and destroys it at 0. Only created contexts have one here:
 * primary contexts go through Retain/Release, as with cuCtxDestroy. */
FC_EXPORT(cuCtxAttach, (CUcontext * pctx, unsigned int flags), (pctx, flags))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = stack_top();
    if (!pctx || flags != 0)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!c || !c->alive || c->primary)
        rc = CUDA_ERROR_INVALID_CONTEXT;
    else {
        c->refcount++;
        *pctx = (CUcontext)c;
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuCtxDetach, (CUcontext ctx), (ctx))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = ctx ? ctx_lookup(ctx) : NULL;
    if (!c || c->primary || stack_top() != c)
        rc = CUDA_ERROR_INVALID_CONTEXT;
    else if (--c->refcount == 0) {
        ctx_teardown(c, false);
        (void)stack_pop(); /* as cuCtxDestroy of a current context */
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuCtxGetApiVersion, (CUcontext ctx, unsigned int *version), (ctx, version))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = ctx ? ctx_lookup(ctx) : stack_top();
    if (!version)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!c || !c->alive)
        rc = CUDA_ERROR_INVALID_CONTEXT;
    else
        *version = 3020; /* every context since CUDA 3.2 */
    fc_unlock();
    return rc;
}

/* ------------------------------------------------------------------------ */
/* The current context                                                       */
/* ------------------------------------------------------------------------ */

static CUresult ctx_push(CUcontext h)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!h)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!ctx_lookup(h))
        rc = CUDA_ERROR_INVALID_CONTEXT;
    else if (!stack_push((fc_ctx *)h))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    fc_unlock();
    return rc;
}

FC_EXPORT(cuCtxPushCurrent, (CUcontext ctx), (ctx))
{
    return ctx_push(ctx);
}

FC_EXPORT(cuCtxPushCurrent_v2, (CUcontext ctx), (ctx))
{
    return ctx_push(ctx);
}

static CUresult ctx_pop(CUcontext *pctx)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = stack_pop();
    if (!c)
        rc = CUDA_ERROR_INVALID_CONTEXT;
    else if (pctx)
        *pctx = (CUcontext)c;
    fc_unlock();
    return rc;
}

FC_EXPORT(cuCtxPopCurrent, (CUcontext * pctx), (pctx))
{
    return ctx_pop(pctx);
}

FC_EXPORT(cuCtxPopCurrent_v2, (CUcontext * pctx), (pctx))
{
    return ctx_pop(pctx);
}

FC_EXPORT(cuCtxSetCurrent, (CUcontext ctx), (ctx))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!ctx) {
        (void)stack_pop(); /* a no-op on an empty stack */
    } else if (!ctx_lookup(ctx)) {
        rc = CUDA_ERROR_INVALID_CONTEXT;
    } else if (tls_stack.n) {
        tls_stack.v[tls_stack.n - 1] = (fc_ctx *)ctx;
    } else if (!stack_push((fc_ctx *)ctx)) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuCtxGetCurrent, (CUcontext * pctx), (pctx))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pctx)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        *pctx = (CUcontext)stack_top();
    fc_unlock();
    return rc;
}

/* ctx NULL: the current context.  Lock held. */
static CUresult ctx_arg(CUcontext h, fc_ctx **out)
{
    if (!h)
        return fc_ctx_current(out);
    fc_ctx *c = ctx_lookup(h);
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    *out = c;
    return CUDA_SUCCESS;
}

FC_EXPORT(cuCtxGetDevice, (CUdevice * device), (device))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS && !device)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        *device = c->dev;
    fc_unlock();
    return rc;
}

FC_EXPORT(cuCtxGetDevice_v2, (CUdevice * device, CUcontext ctx), (device, ctx))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = ctx_arg(ctx, &c);
    if (rc == CUDA_SUCCESS && !device)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        *device = c->dev;
    fc_unlock();
    return rc;
}

/*
 * "It is also invalid to [...] synchronize a broader handle which encompasses
 * an active stream capture, such as a device or context handle" (the CUDA
 * programming guide on stream capture); beyond that, a context
 * synchronisation is a potentially unsafe call.
 */
static CUresult ctx_sync_allowed(fc_ctx *c)
{
    CUresult rc = fc_capture_ctx_sync(c);
    return rc != CUDA_SUCCESS ? rc : fc_capture_unsafe();
}

FC_EXPORT(cuCtxSynchronize, (void), ())
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS)
        rc = ctx_sync_allowed(c);
    if (rc == CUDA_SUCCESS)
        rc = fc_ctx_sync(c);
    fc_unlock();
    return rc;
}

FC_EXPORT(cuCtxSynchronize_v2, (CUcontext ctx), (ctx))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = ctx_arg(ctx, &c);
    if (rc == CUDA_SUCCESS)
        rc = ctx_sync_allowed(c);
    if (rc == CUDA_SUCCESS)
        rc = c->sticky != CUDA_SUCCESS ? c->sticky : fc_ctx_sync(c);
    fc_unlock();
    return rc;
}

FC_EXPORT(cuCtxGetStreamPriorityRange, (int *leastPriority, int *greatestPriority),
          (leastPriority, greatestPriority))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS) {
        if (leastPriority)
            *leastPriority = FC_PRIO_LEAST;
        if (greatestPriority)
            *greatestPriority = FC_PRIO_GREATEST;
    }
    fc_unlock();
    return rc;
}

/*
 * No two fake devices can reach each other's memory (cuDeviceCanAccessPeer
 * is 0 for every pair), so a valid request is PEER_ACCESS_UNSUPPORTED.
 */
FC_EXPORT(cuCtxEnablePeerAccess, (CUcontext peerContext, unsigned int Flags), (peerContext, Flags))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS && (!ctx_lookup(peerContext) || (fc_ctx *)peerContext == c))
        rc = CUDA_ERROR_INVALID_CONTEXT;
    if (rc == CUDA_SUCCESS && Flags != 0)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        rc = CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    fc_unlock();
    return rc;
}

/*
 * No profiling tool is ever attached to the fake: starting and stopping
 * collection only needs a current context.
 */
static CUresult profiler_switch(void)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c;
    rc = fc_ctx_current(&c);
    fc_unlock();
    return rc;
}

FC_EXPORT(cuProfilerStart, (void), ())
{
    return profiler_switch();
}

FC_EXPORT(cuProfilerStop, (void), ())
{
    return profiler_switch();
}

/* ------------------------------------------------------------------------ */
/* Primary contexts                                                          */
/* ------------------------------------------------------------------------ */

FC_EXPORT(cuDevicePrimaryCtxRetain, (CUcontext * pctx, CUdevice dev), (pctx, dev))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pctx)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!fc_dev_valid(dev))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else {
        fc_ctx *c = &fc_st.primary[dev];
        if (!c->alive)
            rc = ctx_activate(c);
        if (rc == CUDA_SUCCESS) {
            c->refcount++;
            *pctx = (CUcontext)c;
        }
    }
    fc_unlock();
    return rc;
}

static CUresult primary_release(CUdevice dev)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!fc_dev_valid(dev))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else if (fc_st.primary[dev].refcount == 0)
        rc = CUDA_ERROR_INVALID_CONTEXT;
    else if (--fc_st.primary[dev].refcount == 0)
        ctx_teardown(&fc_st.primary[dev], true); /* "automatically reset" */
    fc_unlock();
    return rc;
}

FC_EXPORT(cuDevicePrimaryCtxRelease, (CUdevice dev), (dev))
{
    return primary_release(dev);
}

FC_EXPORT(cuDevicePrimaryCtxRelease_v2, (CUdevice dev), (dev))
{
    return primary_release(dev);
}

/*
 * Reset destroys the primary context's resources (and the device's pool of
 * stream-ordered allocations) but "does not release it": a context that is
 * still retained comes back empty under the same handle.
 */
static CUresult primary_reset(CUdevice dev)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!fc_dev_valid(dev)) {
        rc = CUDA_ERROR_INVALID_DEVICE;
    } else {
        fc_ctx *c = &fc_st.primary[dev];
        ctx_teardown(c, true);
        if (c->refcount > 0)
            rc = ctx_activate(c);
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuDevicePrimaryCtxReset, (CUdevice dev), (dev))
{
    return primary_reset(dev);
}

FC_EXPORT(cuDevicePrimaryCtxReset_v2, (CUdevice dev), (dev))
{
    return primary_reset(dev);
}

FC_EXPORT(cuDevicePrimaryCtxGetState, (CUdevice dev, unsigned int *flags, int *active),
          (dev, flags, active))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!flags || !active)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!fc_dev_valid(dev))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else {
        *flags = fc_st.primary[dev].flags;
        *active = fc_st.primary[dev].alive ? 1 : 0;
    }
    fc_unlock();
    return rc;
}

/* v1 (CUDA 7.0) refused to change an active context; v2 (11.0) allows it. */
static CUresult primary_set_flags(CUdevice dev, unsigned int flags, bool v1)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!fc_dev_valid(dev))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else if (!sched_flags_valid(flags))
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (v1 && fc_st.primary[dev].alive)
        rc = CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE;
    else
        fc_st.primary[dev].flags = flags;
    fc_unlock();
    return rc;
}

FC_EXPORT(cuDevicePrimaryCtxSetFlags, (CUdevice dev, unsigned int flags), (dev, flags))
{
    return primary_set_flags(dev, flags, true);
}

FC_EXPORT(cuDevicePrimaryCtxSetFlags_v2, (CUdevice dev, unsigned int flags), (dev, flags))
{
    return primary_set_flags(dev, flags, false);
}
