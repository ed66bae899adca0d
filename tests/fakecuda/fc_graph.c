/*
 * Stream capture into graphs, and the graphs it makes.
 *
 * While a stream captures, the work queued to it (kernel launches, async
 * copies and memsets, cuMemAllocAsync / cuMemFreeAsync, event waits) becomes
 * nodes of a graph instead of running: fc_enqueue hands the op to
 * fc_capture_add, which keeps it as the node's template.  Each node depends
 * on the capturing stream's dependency set, which becomes the node itself.
 * cuEventRecord on a capturing stream adds no node: the event remembers the
 * set, and a stream that waits on it joins the capture (a fork) or merges
 * the set into its own (a join), as the programming guide's "cross-stream
 * dependencies" describe.  cuStreamEndCapture on the origin stream returns
 * the graph, unless the capture was invalidated or a joined stream's work is
 * not an ancestor of the origin's (CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
 * both give a NULL graph, as documented.
 *
 * Nodes are created in an order that respects their dependencies, so a
 * launch (cuGraphLaunch) queues a copy of every node's op on the launch
 * stream in creation order: a valid serialisation of the graph, ordered
 * behind the stream's earlier work and the previous launch of the same
 * executable graph.  A copy node reads and writes the application's host
 * buffers when it runs (nothing is staged at capture).
 *
 * Refused during capture, as cuda.h and the programming guide say:
 *   - capture on the legacy stream: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
 *   - synchronising or querying a capturing stream (cuStreamSynchronize,
 *     cuStreamQuery, a synchronous _ptds copy on a capturing per-thread
 *     stream), or a context with a capturing stream (cuCtxSynchronize):
 *     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, invalidating the capture;
 *   - any use of the legacy stream while a blocking stream of its context
 *     captures (work, synchronous copies and memsets, synchronisation):
 *     CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, invalidating those captures
 *     (cuStreamIsCapturing and cuStreamGetCaptureInfo answer IMPLICIT and
 *     invalidate nothing, as documented);
 *   - potentially unsafe calls, as cuThreadExchangeStreamCaptureMode
 *     defines the modes: cuMemAlloc, cuMemAllocPitch, cuMemFree,
 *     synchronous copies and memsets, cuEventQuery, cuEventSynchronize,
 *     cuCtxSynchronize.  Prohibited to a thread in GLOBAL mode while any
 *     thread has a GLOBAL capture or it has a non-RELAXED one of its own, to
 *     a THREAD_LOCAL thread only by its own non-RELAXED captures:
 *     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, invalidating the prohibiting
 *     captures.  (The set is the fake's: NVIDIA lists no complete one.)
 *   - an event last recorded in a capture cannot be queried, synchronised,
 *     timed or waited for outside that capture: CUDA_ERROR_CAPTURED_EVENT,
 *     invalidating the capture if it is still going.  It stays so until it
 *     is recorded again outside a capture (the error's text: "last recorded
 *     in a capturing stream");
 *   - waiting on an ordinary event from a capturing stream without
 *     CU_EVENT_WAIT_EXTERNAL: CUDA_ERROR_STREAM_CAPTURE_ISOLATION; with it,
 *     an event wait node (at each launch, the launch waits for the event's
 *     record as it stands then).  A wait that would join two captures:
 *     CUDA_ERROR_STREAM_CAPTURE_MERGE, invalidating both;
 *   - cuStreamAddCallback ("not supported with cuStreamBeginCapture") and
 *     cuStreamDestroy of a capturing stream: UNSUPPORTED, invalidating it;
 *   - cuMemFreeAsync on a capturing stream of memory no graph allocated
 *     ("must be passed the address of a graph allocation"): INVALID_VALUE,
 *     invalidating the capture (an address of nothing: INVALID_VALUE only);
 *   - further work on an invalidated capture: INVALIDATED.
 * The CUDA 10.0 cuStreamBeginCapture (no mode) captures in GLOBAL mode, the
 * default mode and the strictest.
 *
 * Memory nodes.  cuMemAllocAsync on a capturing stream makes an allocation
 * node: the address range is reserved at once (fc_galloc, fc_mem.c), so the
 * returned pointer is the graph's for good, and nothing is allocated.  At
 * each launch memory is charged for it (CUDA_ERROR_OUT_OF_MEMORY from the
 * launch when the device is full) and becomes accessible when the
 * allocation node runs; until then, and after a free ran, a kernel touching
 * it faults and fakecuda_read fails, as for any address outside an
 * allocation.  Copies and memsets captured after the allocation node accept
 * the range.  cuMemFreeAsync of a graph allocation while capturing makes a
 * free node (CUDA_ERROR_INVALID_VALUE for any other address, for a second
 * free in the owning graph, and for a free in another graph of one the
 * owning graph frees).  An allocation its graph does not free outlives the
 * launch, as documented: later work may use it until cuMemFreeAsync,
 * cuMemFree, a launch with a free node for it or an AUTO_FREE_ON_LAUNCH
 * relaunch frees it; relaunching without any of those is
 * CUDA_ERROR_INVALID_VALUE, as is launching a free node whose allocation
 * is not allocated.  Graph memory belongs to its device (a primary context
 * reset frees it) and is counted by fakecuda_mem_used while allocated.
 *
 * cuGraphInstantiateWithParams' upload (CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD)
 * has nothing to do here beyond checking its stream.
 *
 * Graph and node handles: CUgraph and CUgraphExec are registered handles
 * (an unknown one is CUDA_ERROR_INVALID_VALUE, the only error the graph
 * functions document); CUgraphNode handles (cuStreamGetCaptureInfo) are
 * valid until their graph is destroyed.  Launching an executable graph into
 * a capturing stream captures its nodes in order (as a child graph would),
 * except a graph with memory nodes (CUDA_ERROR_INVALID_VALUE).
 */
#include "fc_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct fc_graph fc_graph;
typedef struct fc_gexec fc_gexec;

struct fc_gnode {
    fc_handle h; /* CUgraphNode, registered until its graph is destroyed */
    fc_graph *owner;
    fc_op *op;       /* the node's work: a template, queued nowhere */
    fc_knode *k;     /* kernel nodes: their parameters as given (owned) */
    fc_graph *child; /* child graph nodes: the embedded clone (owned); op is a no-op */
    fc_galloc *ga;   /* allocation and free nodes: their allocation (a reference) */
    fc_gnode **deps;
    size_t ndeps;
    bool mark; /* scratch of the unjoined-work check */
};

struct fc_graph {
    fc_handle h;
    uint64_t id;      /* never reused: names it in fc_galloc.graph_id */
    fc_gnode **nodes; /* in creation order, which respects dependencies */
    size_t n, cap;
    fc_capture *capture; /* while a capture adds to it */
    bool mem;            /* has allocation or free nodes */
    LIST_HEAD(, fc_gexec) execs;
};

struct fc_gexec {
    fc_handle h;
    fc_graph *g; /* NULL once the graph is destroyed */
    LIST_ENTRY(fc_gexec) link;
    unsigned long long flags;
    size_t n;
    fc_op **ops;     /* the nodes' templates, in order, child graphs' nodes in their place */
    fc_gnode **src;  /* the node of the graph each op was made from (NULL once gone) */
    fc_galloc **gas; /* their allocations (references), or NULL */
    bool launched;
    fc_dep last; /* the previous launch's last op */
};

struct fc_capture {
    uint64_t id; /* process-unique, never 0 */
    fc_graph *g;
    fc_stream *origin;
    CUstreamCaptureMode mode;
    uint64_t thread; /* fc_thread_id() of the thread that began it */
    bool invalid;
    bool ending; /* scratch of a context teardown */
    LIST_ENTRY(fc_capture) link;
};

/* The calling thread's mode (cuThreadExchangeStreamCaptureMode). */
static __thread CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

static bool mode_valid(CUstreamCaptureMode m)
{
    return m == CU_STREAM_CAPTURE_MODE_GLOBAL || m == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ||
           m == CU_STREAM_CAPTURE_MODE_RELAXED;
}

/* ------------------------------------------------------------------------ */
/* Graphs and nodes                                                          */
/* ------------------------------------------------------------------------ */

static void graph_free(fc_graph *g);

static fc_graph *graph_new(void)
{
    static uint64_t next_id = 1; /* under the driver lock */
    fc_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->id = next_id++;
    LIST_INIT(&g->execs);
    fc_handle_add(&g->h, FC_K_GRAPH);
    return g;
}

static void graph_free(fc_graph *g)
{
    fc_gexec *x;
    LIST_FOREACH(x, &g->execs, link) {
        x->g = NULL; /* an executable graph is independent of its graph */
        for (size_t i = 0; i < x->n; i++)
            x->src[i] = NULL;
    }
    for (size_t i = 0; i < g->n; i++) {
        fc_gnode *n = g->nodes[i];
        fc_op_free(n->op);
        fc_knode_free(n->k);
        if (n->child)
            graph_free(n->child);
        fc_handle_del(&n->h);
        if (n->ga)
            fc_galloc_unref(n->ga);
        free(n->deps);
        free(n);
    }
    free(g->nodes);
    fc_handle_del(&g->h);
    free(g);
}

/* A copy of a node array (NULL for none); false when out of memory. */
static bool nodes_dup(fc_gnode *const *v, size_t n, fc_gnode ***out)
{
    *out = NULL;
    if (!n)
        return true;
    *out = malloc(n * sizeof **out);
    if (*out)
        memcpy(*out, v, n * sizeof **out);
    return *out != NULL;
}

/* Add a node doing op (owned) after deps; ga: its allocation, referenced. */
static CUresult graph_add(fc_graph *g, fc_op *op, fc_galloc *ga, fc_gnode *const *deps,
                          size_t ndeps, fc_gnode **out)
{
    fc_gnode *n = calloc(1, sizeof *n);
    if (n && g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 16;
        fc_gnode **v = realloc(g->nodes, cap * sizeof *v);
        if (v) {
            g->nodes = v;
            g->cap = cap;
        }
    }
    if (!n || g->n == g->cap || !nodes_dup(deps, ndeps, &n->deps)) {
        free(n);
        fc_op_free(op);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    n->op = op;
    n->owner = g;
    fc_handle_add(&n->h, FC_K_GNODE);
    n->ndeps = ndeps;
    n->ga = ga;
    if (ga)
        ga->refs++;
    g->nodes[g->n++] = n;
    *out = n;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Capture sequences                                                         */
/* ------------------------------------------------------------------------ */

static fc_capture *capture_by_id(uint64_t id)
{
    fc_capture *cap;
    LIST_FOREACH(cap, &fc_st.captures, link)
        if (cap->id == id)
            return cap;
    return NULL;
}

static void set_deps(fc_stream *s, fc_gnode **deps, size_t n)
{
    free(s->deps);
    s->deps = deps;
    s->ndeps = n;
}

static void leave_capture(fc_stream *s, void *cap)
{
    if (s->cap != cap)
        return;
    s->cap = NULL;
    set_deps(s, NULL, 0);
}

/* Every stream leaves the capture, which ends; its graph stays. */
static fc_graph *capture_end(fc_capture *cap)
{
    fc_graph *g = cap->g;
    fc_streams_foreach(leave_capture, cap);
    LIST_REMOVE(cap, link);
    g->capture = NULL;
    free(cap);
    return g;
}

/* A blocking stream of c captures (the legacy stream would depend on it). */
static bool legacy_conflict(fc_ctx *c, bool invalidate)
{
    bool hit = false;
    fc_stream *t;
    LIST_FOREACH(t, &c->streams, link) {
        if (t->cap && fc_stream_blocking(t)) {
            hit = true;
            t->cap->invalid |= invalidate;
        }
    }
    return hit;
}

CUresult fc_capture_use(fc_stream *s)
{
    if (s->kind == FC_S_LEGACY && legacy_conflict(s->ctx, true))
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    if (s->cap && s->cap->invalid)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    return CUDA_SUCCESS;
}

CUresult fc_stream_for_work(CUstream h, bool per_thread, fc_stream **out)
{
    CUresult rc = fc_stream_resolve(h, per_thread, out);
    return rc != CUDA_SUCCESS ? rc : fc_capture_use(*out);
}

/* Add a node for op (owned) after s's dependencies; it becomes them. */
static CUresult capture_node(fc_stream *s, fc_op *op, fc_galloc *ga)
{
    fc_gnode **deps = malloc(sizeof *deps);
    fc_gnode *n = NULL;
    if (!deps) {
        fc_op_free(op);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUresult rc = graph_add(s->cap->g, op, ga, s->deps, s->ndeps, &n);
    if (rc != CUDA_SUCCESS) {
        free(deps);
        return rc;
    }
    deps[0] = n;
    set_deps(s, deps, 1);
    return CUDA_SUCCESS;
}

CUresult fc_capture_add(fc_stream *s, fc_op *op)
{
    if (s->cap->invalid) {
        fc_op_free(op);
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    return capture_node(s, op, NULL);
}

CUresult fc_capture_kernel(fc_stream *s, fc_op *op, fc_knode *kn)
{
    CUresult rc = fc_capture_add(s, op);
    if (rc == CUDA_SUCCESS)
        s->deps[0]->k = kn; /* the node just added */
    else
        fc_knode_free(kn);
    return rc;
}

CUresult fc_capture_sync(fc_stream *s)
{
    if (s->cap) {
        s->cap->invalid = true;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (s->kind == FC_S_LEGACY && legacy_conflict(s->ctx, true))
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    return CUDA_SUCCESS;
}

CUresult fc_capture_unsafe(void)
{
    uint64_t me = fc_thread_id();
    bool hit = false;
    fc_capture *cap;
    if (thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_SUCCESS;
    LIST_FOREACH(cap, &fc_st.captures, link) {
        bool prohibits = cap->thread == me ? cap->mode != CU_STREAM_CAPTURE_MODE_RELAXED
                                           : thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                                                 cap->mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
        if (prohibits) {
            cap->invalid = true;
            hit = true;
        }
    }
    return hit ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult fc_capture_ctx_sync(fc_ctx *c)
{
    bool hit = false;
    fc_stream *t;
    LIST_FOREACH(t, &c->streams, link) {
        if (t->cap) {
            t->cap->invalid = true;
            hit = true;
        }
    }
    return hit ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult fc_capture_stream_destroy(fc_stream *s)
{
    s->cap->invalid = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

void fc_capture_ctx_teardown(fc_ctx *c)
{
    fc_stream *t;
    fc_capture *cap, *next;
    LIST_FOREACH(t, &c->streams, link)
        if (t->cap)
            t->cap->ending = true;
    for (cap = LIST_FIRST(&fc_st.captures); cap; cap = next) {
        next = LIST_NEXT(cap, link);
        if (cap->ending)
            graph_free(capture_end(cap));
    }
}

/* ------------------------------------------------------------------------ */
/* Events in captures                                                        */
/* ------------------------------------------------------------------------ */

CUresult fc_capture_event_check(fc_event *e)
{
    if (!e->cap_id)
        return CUDA_SUCCESS;
    fc_capture *cap = capture_by_id(e->cap_id);
    if (cap)
        cap->invalid = true;
    return CUDA_ERROR_CAPTURED_EVENT;
}

void fc_capture_event_clear(fc_event *e)
{
    free(e->cap_deps);
    e->cap_deps = NULL;
    e->cap_ndeps = 0;
    e->cap_id = 0;
}

CUresult fc_capture_record(fc_stream *s, fc_event *e)
{
    fc_gnode **deps;
    if (!nodes_dup(s->deps, s->ndeps, &deps))
        return CUDA_ERROR_OUT_OF_MEMORY;
    fc_capture_event_clear(e);
    e->cap_id = s->cap->id;
    e->cap_deps = deps;
    e->cap_ndeps = s->ndeps;
    e->recorded = false; /* it stands for no work that will run */
    e->done = false;
    return CUDA_SUCCESS;
}

/* s's dependencies, and those of v[0..n) it does not have yet. */
static CUresult deps_merge(fc_stream *s, fc_gnode *const *v, size_t n)
{
    fc_gnode **u = malloc((s->ndeps + n ? s->ndeps + n : 1) * sizeof *u);
    if (!u)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t k = s->ndeps;
    if (k)
        memcpy(u, s->deps, k * sizeof *u);
    for (size_t i = 0; i < n; i++) {
        bool have = false;
        for (size_t j = 0; j < k && !have; j++)
            have = u[j] == v[i];
        if (!have)
            u[k++] = v[i];
    }
    set_deps(s, u, k);
    return CUDA_SUCCESS;
}

CUresult fc_capture_wait(fc_stream *s, fc_event *e, unsigned int flags, bool *done)
{
    fc_capture *ecap = e->cap_id ? capture_by_id(e->cap_id) : NULL;
    *done = s->cap || e->cap_id;
    if (!*done)
        return CUDA_SUCCESS;
    if (e->cap_id && !ecap)
        return CUDA_ERROR_CAPTURED_EVENT; /* its capture is over */
    if (!ecap) {
        /* An event from outside the capture: only as an external wait. */
        if (!(flags & CU_EVENT_WAIT_EXTERNAL)) {
            s->cap->invalid = true;
            return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
        }
        fc_op *op = fc_op_new(FC_OP_MARKER);
        if (!op)
            return CUDA_ERROR_OUT_OF_MEMORY;
        op->u.marker.wait = (CUevent)e;
        return fc_capture_add(s, op);
    }
    if (s->kind == FC_S_LEGACY) {
        ecap->invalid = true; /* the legacy stream cannot capture */
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (s->cap && s->cap != ecap) {
        s->cap->invalid = ecap->invalid = true;
        return CUDA_ERROR_STREAM_CAPTURE_MERGE;
    }
    if (ecap->invalid)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (s->cap)
        return deps_merge(s, e->cap_deps, e->cap_ndeps); /* a join */
    /* A fork: s joins the capture, after the nodes the record named. */
    fc_gnode **deps;
    if (!nodes_dup(e->cap_deps, e->cap_ndeps, &deps))
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->cap = ecap;
    set_deps(s, deps, e->cap_ndeps);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Memory nodes                                                              */
/* ------------------------------------------------------------------------ */

CUresult fc_capture_alloc(fc_stream *s, size_t size, int dev, CUdeviceptr *out)
{
    fc_galloc *ga = NULL;
    fc_op *op = fc_op_new(FC_OP_GALLOC);
    CUresult rc = op ? fc_galloc_new(size, dev, s->cap->g->id, &ga) : CUDA_ERROR_OUT_OF_MEMORY;
    if (rc != CUDA_SUCCESS) {
        free(op);
        return rc;
    }
    op->u.galloc.ga = ga;
    ga->refs++; /* ours until the node holds it */
    rc = capture_node(s, op, ga);
    if (rc == CUDA_SUCCESS) {
        s->cap->g->mem = true;
        *out = (CUdeviceptr)ga->node.key;
    }
    fc_galloc_unref(ga);
    return rc;
}

CUresult fc_capture_free(fc_stream *s, CUdeviceptr ptr)
{
    fc_galloc *ga = fc_galloc_at(ptr);
    if (!ga) {
        /* "must be passed the address of a graph allocation". One that no
         * graph allocated (cuMemAlloc's, a pool's) is an operation the
         * capture cannot hold, which invalidates it (the programming guide,
         * "Prohibited and Unhandled Operations": an invalid operation
         * attempted during capture invalidates the capture graphs); an
         * address of nothing is an argument error, which does not. */
        if (fc_mem_find_base(ptr))
            s->cap->invalid = true;
        return CUDA_ERROR_INVALID_VALUE;
    }
    bool own = ga->graph_id == s->cap->g->id;
    if (own ? ga->freed_in != FC_GA_FREE_NONE : ga->freed_in == FC_GA_FREE_OWNER)
        return CUDA_ERROR_INVALID_VALUE;
    fc_op *op = fc_op_new(FC_OP_FREE);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.free.ptr = ptr;
    op->u.free.ga = ga;
    CUresult rc = capture_node(s, op, ga);
    if (rc == CUDA_SUCCESS) {
        ga->freed_in = own ? FC_GA_FREE_OWNER : FC_GA_FREE_OTHER;
        s->cap->g->mem = true;
    }
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Capture entry points                                                      */
/* ------------------------------------------------------------------------ */

static CUresult begin_capture(CUstream h, CUstreamCaptureMode mode, bool per_thread)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = NULL;
    rc = fc_stream_resolve(h, per_thread, &s);
    if (rc == CUDA_SUCCESS && !mode_valid(mode))
        rc = CUDA_ERROR_INVALID_VALUE;
    /* "Capture may not be initiated if stream is CU_STREAM_LEGACY." */
    if (rc == CUDA_SUCCESS && s->kind == FC_S_LEGACY)
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    /* "it may only be initiated if the stream is not already in capture mode" */
    if (rc == CUDA_SUCCESS && s->cap)
        rc = CUDA_ERROR_INVALID_VALUE;
    fc_capture *cap = NULL;
    fc_graph *g = NULL;
    if (rc == CUDA_SUCCESS) {
        cap = calloc(1, sizeof *cap);
        g = cap ? graph_new() : NULL;
        if (!g) {
            free(cap);
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    if (rc == CUDA_SUCCESS) {
        cap->id = ++fc_st.next_capture_id;
        cap->g = g;
        cap->origin = s;
        cap->mode = mode;
        cap->thread = fc_thread_id();
        g->capture = cap;
        LIST_INSERT_HEAD(&fc_st.captures, cap, link);
        s->cap = cap;
        set_deps(s, NULL, 0);
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuStreamBeginCapture, (CUstream hStream), (hStream))
{
    return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, false);
}

FC_EXPORT(cuStreamBeginCapture_ptsz, (CUstream hStream), (hStream))
{
    return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, true);
}

FC_EXPORT(cuStreamBeginCapture_v2, (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode))
{
    return begin_capture(hStream, mode, false);
}

FC_EXPORT(cuStreamBeginCapture_v2_ptsz, (CUstream hStream, CUstreamCaptureMode mode),
          (hStream, mode))
{
    return begin_capture(hStream, mode, true);
}

typedef struct join_check {
    fc_capture *cap;
    bool unjoined;
} join_check;

static void check_joined(fc_stream *t, void *arg)
{
    join_check *j = arg;
    if (t->cap != j->cap || t == j->cap->origin)
        return;
    for (size_t i = 0; i < t->ndeps; i++)
        j->unjoined |= !t->deps[i]->mark;
}

/* Whether a stream that joined the capture has work the origin's
 * dependencies do not include (marks the origin's ancestors meanwhile). */
static bool unjoined(fc_capture *cap)
{
    fc_graph *g = cap->g;
    fc_gnode **stk = malloc((g->n ? g->n : 1) * sizeof *stk);
    size_t n = 0;
    join_check j = { cap, false };
    if (!stk)
        return true;
    for (size_t i = 0; i < cap->origin->ndeps; i++)
        if (!cap->origin->deps[i]->mark) {
            cap->origin->deps[i]->mark = true;
            stk[n++] = cap->origin->deps[i];
        }
    while (n) {
        fc_gnode *v = stk[--n];
        for (size_t i = 0; i < v->ndeps; i++)
            if (!v->deps[i]->mark) {
                v->deps[i]->mark = true;
                stk[n++] = v->deps[i];
            }
    }
    free(stk);
    fc_streams_foreach(check_joined, &j);
    for (size_t i = 0; i < g->n; i++)
        g->nodes[i]->mark = false;
    return j.unjoined;
}

static CUresult end_capture(CUstream h, CUgraph *phGraph, bool per_thread)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = NULL;
    rc = fc_stream_resolve(h, per_thread, &s);
    if (rc == CUDA_SUCCESS && (!phGraph || !s->cap))
        rc = CUDA_ERROR_INVALID_VALUE;
    fc_capture *cap = rc == CUDA_SUCCESS ? s->cap : NULL;
    /* Only the stream where it began ends it. */
    if (cap && cap->origin != s) {
        cap->invalid = true;
        rc = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    }
    if (rc == CUDA_SUCCESS && cap->mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
        cap->thread != fc_thread_id())
        rc = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    if (rc == CUDA_SUCCESS) {
        CUresult why = cap->invalid    ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
                       : unjoined(cap) ? CUDA_ERROR_STREAM_CAPTURE_UNJOINED
                                       : CUDA_SUCCESS;
        fc_graph *g = capture_end(cap);
        if (why != CUDA_SUCCESS) {
            graph_free(g);
            g = NULL;
        }
        *phGraph = (CUgraph)g;
        rc = why;
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuStreamEndCapture, (CUstream hStream, CUgraph *phGraph), (hStream, phGraph))
{
    return end_capture(hStream, phGraph, false);
}

FC_EXPORT(cuStreamEndCapture_ptsz, (CUstream hStream, CUgraph *phGraph), (hStream, phGraph))
{
    return end_capture(hStream, phGraph, true);
}

/*
 * The front half of the capture queries: the stream, its status, or
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT for the legacy stream while a blocking
 * stream of its context captures ("The blocking stream capture is not
 * invalidated").  On success the lock is held.
 */
static CUresult capture_status(CUstream h, bool per_thread, CUstreamCaptureStatus *status,
                               fc_stream **out)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = NULL;
    rc = fc_stream_resolve(h, per_thread, &s);
    if (rc == CUDA_SUCCESS && !status)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS && s->kind == FC_S_LEGACY && legacy_conflict(s->ctx, false))
        rc = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    if (rc != CUDA_SUCCESS) {
        fc_unlock();
        return rc;
    }
    *status = !s->cap           ? CU_STREAM_CAPTURE_STATUS_NONE
              : s->cap->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    *out = s;
    return CUDA_SUCCESS;
}

static CUresult is_capturing(CUstream h, CUstreamCaptureStatus *status, bool per_thread)
{
    fc_stream *s;
    CUresult rc = capture_status(h, per_thread, status, &s);
    if (rc == CUDA_SUCCESS)
        fc_unlock();
    return rc;
}

FC_EXPORT(cuStreamIsCapturing, (CUstream hStream, CUstreamCaptureStatus *captureStatus),
          (hStream, captureStatus))
{
    return is_capturing(hStream, captureStatus, false);
}

FC_EXPORT(cuStreamIsCapturing_ptsz, (CUstream hStream, CUstreamCaptureStatus *captureStatus),
          (hStream, captureStatus))
{
    return is_capturing(hStream, captureStatus, true);
}

/*
 * Valid data beyond the status only for an active capture.  The dependency
 * array is the stream's own, replaced by the next node it captures; edges
 * carry no data here (so the forms without edgeData_out lose nothing).
 */
static CUresult capture_info(CUstream h, bool per_thread, CUstreamCaptureStatus *status,
                             cuuint64_t *id, CUgraph *graph, const CUgraphNode **deps,
                             const CUgraphEdgeData **edges, size_t *ndeps)
{
    fc_stream *s;
    CUresult rc = capture_status(h, per_thread, status, &s);
    if (rc != CUDA_SUCCESS)
        return rc;
    /* "If edgeData_out is non-NULL then dependencies_out must be as well." */
    if (edges && !deps) {
        fc_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (*status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        if (edges) {
            CUgraphEdgeData *e = s->ndeps ? calloc(s->ndeps, sizeof *e) : NULL;
            if (s->ndeps && !e) {
                fc_unlock();
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
            free(s->edges);
            s->edges = e;
            *edges = e;
        }
        if (id)
            *id = s->cap->id;
        if (graph)
            *graph = (CUgraph)s->cap->g;
        if (deps)
            *deps = (const CUgraphNode *)s->deps;
        if (ndeps)
            *ndeps = s->ndeps;
    }
    fc_unlock();
    return CUDA_SUCCESS;
}

FC_EXPORT(cuStreamGetCaptureInfo,
          (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out),
          (hStream, captureStatus_out, id_out))
{
    return capture_info(hStream, false, captureStatus_out, id_out, NULL, NULL, NULL, NULL);
}

FC_EXPORT(cuStreamGetCaptureInfo_ptsz,
          (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out),
          (hStream, captureStatus_out, id_out))
{
    return capture_info(hStream, true, captureStatus_out, id_out, NULL, NULL, NULL, NULL);
}

FC_EXPORT(cuStreamGetCaptureInfo_v2,
          (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
           CUgraph *graph_out, const CUgraphNode **dependencies_out, size_t *numDependencies_out),
          (hStream, captureStatus_out, id_out, graph_out, dependencies_out, numDependencies_out))
{
    return capture_info(hStream, false, captureStatus_out, id_out, graph_out, dependencies_out,
                        NULL, numDependencies_out);
}

FC_EXPORT(cuStreamGetCaptureInfo_v2_ptsz,
          (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
           CUgraph *graph_out, const CUgraphNode **dependencies_out, size_t *numDependencies_out),
          (hStream, captureStatus_out, id_out, graph_out, dependencies_out, numDependencies_out))
{
    return capture_info(hStream, true, captureStatus_out, id_out, graph_out, dependencies_out, NULL,
                        numDependencies_out);
}

FC_EXPORT(cuStreamGetCaptureInfo_v3,
          (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
           CUgraph *graph_out, const CUgraphNode **dependencies_out,
           const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out),
          (hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
           numDependencies_out))
{
    return capture_info(hStream, false, captureStatus_out, id_out, graph_out, dependencies_out,
                        edgeData_out, numDependencies_out);
}

FC_EXPORT(cuStreamGetCaptureInfo_v3_ptsz,
          (CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
           CUgraph *graph_out, const CUgraphNode **dependencies_out,
           const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out),
          (hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
           numDependencies_out))
{
    return capture_info(hStream, true, captureStatus_out, id_out, graph_out, dependencies_out,
                        edgeData_out, numDependencies_out);
}

FC_EXPORT(cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode * mode), (mode))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!mode || !mode_valid(*mode)) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else {
        CUstreamCaptureMode old = thread_mode;
        thread_mode = *mode;
        *mode = old;
    }
    fc_unlock();
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Executable graphs                                                         */
/* ------------------------------------------------------------------------ */

static void exec_free(fc_gexec *x)
{
    if (x->g)
        LIST_REMOVE(x, link);
    for (size_t i = 0; i < x->n; i++) {
        if (x->ops[i])
            fc_op_free(x->ops[i]);
        if (x->gas[i])
            fc_galloc_unref(x->gas[i]);
    }
    free(x->ops);
    free(x->gas);
    free(x->src);
    fc_handle_del(&x->h);
    free(x);
}

/* The nodes an executable graph runs: a child graph's in its node's place. */
static size_t flat_count(const fc_graph *g)
{
    size_t n = 0;
    for (size_t i = 0; i < g->n; i++)
        n += g->nodes[i]->child ? flat_count(g->nodes[i]->child) : 1;
    return n;
}

static fc_gnode **flat_fill(const fc_graph *g, fc_gnode **out)
{
    for (size_t i = 0; i < g->n; i++)
        out = g->nodes[i]->child ? flat_fill(g->nodes[i]->child, out)
                                 : (*out = g->nodes[i], out + 1);
    return out;
}

/* What a device launch allows: kernel, device memcpy and memset nodes. */
static bool device_launchable(const fc_op *op)
{
    return op->kind == FC_OP_KERNEL || op->kind == FC_OP_DTOD || op->kind == FC_OP_MEMSET;
}

#define INSTANTIATE_FLAGS                                                                          \
    (CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | \
     CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)

/*
 * Check g against the flags (the offending node, if one is, in *bad) and
 * copy its nodes into a new executable graph.  A graph with memory nodes has
 * at most one executable graph at a time, as documented; one still being
 * captured into is not instantiable.  upload: cuGraphInstantiateWithParams'
 * upload stream (NULL for the other forms, which take no
 * CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD); an upload does nothing here but the
 * stream must be one work can go to.
 */
static CUresult instantiate(CUgraphExec *px, CUgraph hg, unsigned long long flags,
                            const CUstream *upload, bool per_thread, fc_gnode **bad)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    fc_graph *g = fc_handle_get(hg, FC_K_GRAPH);
    bool device = flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH;
    unsigned long long known = INSTANTIATE_FLAGS |
                               (upload ? CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD : 0);
    if (rc == CUDA_SUCCESS && (flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) && upload) {
        fc_stream *s;
        rc = fc_stream_for_work(*upload, per_thread, &s);
    }
    if (rc == CUDA_SUCCESS &&
        (!px || !g || (flags & ~known) || g->capture ||
         (device && (flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)) ||
         (g->mem && !LIST_EMPTY(&g->execs)) || (device && g->n == 0)))
        rc = CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; rc == CUDA_SUCCESS && device && i < g->n; i++) {
        if (!device_launchable(g->nodes[i]->op)) {
            *bad = g->nodes[i];
            rc = CUDA_ERROR_INVALID_VALUE;
        }
    }
    fc_gexec *x = NULL;
    size_t total = rc == CUDA_SUCCESS ? flat_count(g) : 0;
    if (rc == CUDA_SUCCESS) {
        x = calloc(1, sizeof *x);
        if (x) {
            x->ops = calloc(total ? total : 1, sizeof *x->ops);
            x->gas = calloc(total ? total : 1, sizeof *x->gas);
            x->src = calloc(total ? total : 1, sizeof *x->src);
        }
        if (!x || !x->ops || !x->gas || !x->src) {
            if (x) {
                free(x->ops);
                free(x->gas);
                free(x->src);
            }
            free(x);
            x = NULL;
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    if (x) {
        fc_handle_add(&x->h, FC_K_GEXEC);
        x->g = g;
        LIST_INSERT_HEAD(&g->execs, x, link);
        x->flags = flags;
        x->n = total;
        flat_fill(g, x->src);
        for (size_t i = 0; i < total && rc == CUDA_SUCCESS; i++) {
            x->ops[i] = fc_op_clone(x->src[i]->op);
            if (!x->ops[i])
                rc = CUDA_ERROR_OUT_OF_MEMORY;
            if ((x->gas[i] = x->src[i]->ga))
                x->gas[i]->refs++;
        }
        if (rc != CUDA_SUCCESS)
            exec_free(x);
        else
            *px = (CUgraphExec)x;
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuGraphInstantiateWithFlags,
          (CUgraphExec * phGraphExec, CUgraph hGraph, unsigned long long flags),
          (phGraphExec, hGraph, flags))
{
    fc_gnode *bad = NULL;
    return instantiate(phGraphExec, hGraph, flags, NULL, false, &bad);
}

/* The result: the node a device launch cannot do, or an error of the call. */
static CUresult instantiate_with_params(CUgraphExec *px, CUgraph hg,
                                        CUDA_GRAPH_INSTANTIATE_PARAMS *p, bool per_thread)
{
    if (!p)
        return atomic_load(&fc_st.initialized) ? CUDA_ERROR_INVALID_VALUE
                                               : CUDA_ERROR_NOT_INITIALIZED;
    fc_gnode *bad = NULL;
    CUresult rc = instantiate(px, hg, p->flags, &p->hUploadStream, per_thread, &bad);
    p->hErrNode_out = (CUgraphNode)bad;
    p->result_out = rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS
                    : bad              ? CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED
                                       : CUDA_GRAPH_INSTANTIATE_ERROR;
    return rc;
}

FC_EXPORT(cuGraphInstantiateWithParams,
          (CUgraphExec * phGraphExec, CUgraph hGraph,
           CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams),
          (phGraphExec, hGraph, instantiateParams))
{
    return instantiate_with_params(phGraphExec, hGraph, instantiateParams, false);
}

FC_EXPORT(cuGraphInstantiateWithParams_ptsz,
          (CUgraphExec * phGraphExec, CUgraph hGraph,
           CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams),
          (phGraphExec, hGraph, instantiateParams))
{
    return instantiate_with_params(phGraphExec, hGraph, instantiateParams, true);
}

/* The CUDA 10 and 11 forms: no flags; the offending node and a message. */
static CUresult instantiate_logged(CUgraphExec *px, CUgraph hg, CUgraphNode *err_node, char *log,
                                   size_t size)
{
    fc_gnode *bad = NULL;
    CUresult rc = instantiate(px, hg, 0, NULL, false, &bad);
    if (err_node)
        *err_node = (CUgraphNode)bad;
    if (log && size) {
        const char *why = rc == CUDA_SUCCESS ? "" : "fakecuda: the graph cannot be instantiated";
        strncpy(log, why, size - 1);
        log[size - 1] = '\0';
    }
    return rc;
}

FC_EXPORT(cuGraphInstantiate,
          (CUgraphExec * phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer,
           size_t bufferSize),
          (phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize))
{
    return instantiate_logged(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

FC_EXPORT(cuGraphInstantiate_v2,
          (CUgraphExec * phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer,
           size_t bufferSize),
          (phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize))
{
    return instantiate_logged(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

/*
 * The state the launch's memory nodes need: an allocation node's allocation
 * must not be allocated already (unless AUTO_FREE_ON_LAUNCH frees it first),
 * a free node's must be, counting the nodes before it.
 */
static CUresult launch_memory_check(const fc_gexec *x)
{
    bool auto_free = x->flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH;
    for (size_t i = 0; i < x->n; i++)
        if (x->gas[i])
            x->gas[i]->sim = x->gas[i]->out && !(auto_free && x->ops[i]->kind == FC_OP_GALLOC);
    for (size_t i = 0; i < x->n; i++) {
        fc_galloc *ga = x->gas[i];
        if (!ga)
            continue;
        bool alloc = x->ops[i]->kind == FC_OP_GALLOC;
        if (ga->sim == alloc)
            return CUDA_ERROR_INVALID_VALUE;
        ga->sim = alloc;
    }
    return CUDA_SUCCESS;
}

/* A launch's copy of the nodes' ops, allocations charged; none on failure. */
static CUresult launch_ops(const fc_gexec *x, fc_op ***out)
{
    fc_op **run = calloc(x->n ? x->n : 1, sizeof *run);
    CUresult rc = run ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < x->n && rc == CUDA_SUCCESS; i++) {
        run[i] = fc_op_clone(x->ops[i]);
        if (!run[i])
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        else if (run[i]->kind == FC_OP_GALLOC)
            rc = fc_galloc_instance(x->gas[i], &run[i]->u.galloc.a);
    }
    if (rc != CUDA_SUCCESS && run) {
        for (size_t i = 0; i < x->n; i++)
            if (run[i])
                fc_op_free(run[i]); /* an uncharged instance is discarded too */
        free(run);
        run = NULL;
    }
    *out = run;
    return rc;
}

/* Queue one launch's op on s, bringing its allocation's state along. */
static CUresult launch_op(fc_stream *s, fc_op *op, fc_galloc *ga)
{
    const fc_dep *extra = NULL;
    if (op->kind == FC_OP_GALLOC) {
        ga->out = true;
        ga->buffer_id = op->u.galloc.a->buffer_id;
    } else if (op->kind == FC_OP_FREE) {
        op->u.free.ptr = ga->node.key;
        op->u.free.buffer_id = ga->buffer_id;
        ga->out = false;
    } else if (op->kind == FC_OP_MARKER && op->u.marker.wait) {
        /* An external event wait: the event's record as it stands now. */
        fc_event *e = fc_handle_get(op->u.marker.wait, FC_K_EVENT);
        if (e && e->recorded)
            extra = &e->at;
    }
    return fc_enqueue(s, op, extra);
}

static CUresult launch_exec(fc_gexec *x, fc_stream *s)
{
    fc_op **run = NULL;
    CUresult rc = launch_memory_check(x);
    if (rc == CUDA_SUCCESS)
        rc = launch_ops(x, &run);
    if (rc != CUDA_SUCCESS)
        return rc;
    /* Ordered behind the previous launch of the same executable graph. */
    if (x->launched && fc_dep_pending(&x->last)) {
        fc_op *op = fc_op_new(FC_OP_MARKER);
        rc = op ? fc_enqueue(s, op, &x->last) : CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (x->flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) {
        for (size_t i = 0; i < x->n && rc == CUDA_SUCCESS; i++) {
            fc_galloc *ga = x->gas[i];
            if (ga && run[i]->kind == FC_OP_GALLOC && ga->out) {
                rc = fc_mem_queue_free(s, ga->node.key, ga->buffer_id);
                ga->out = rc != CUDA_SUCCESS;
            }
        }
    }
    size_t i = 0;
    for (; i < x->n && rc == CUDA_SUCCESS; i++)
        rc = launch_op(s, run[i], x->gas[i]);
    for (; i < x->n; i++)
        fc_op_free(run[i]); /* not queued: out of memory */
    free(run);
    if (s->tail) {
        x->last = (fc_dep){ s->id, s->tail->seq };
        x->launched = true;
    }
    return rc;
}

/* Into a capturing stream: the nodes are captured, in order. */
static CUresult launch_captured(const fc_gexec *x, fc_stream *s)
{
    CUresult rc = CUDA_SUCCESS;
    for (size_t i = 0; i < x->n && rc == CUDA_SUCCESS; i++)
        rc = x->gas[i] ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    for (size_t i = 0; i < x->n && rc == CUDA_SUCCESS; i++) {
        fc_op *op = fc_op_clone(x->ops[i]);
        rc = op ? fc_capture_add(s, op) : CUDA_ERROR_OUT_OF_MEMORY;
    }
    return rc;
}

static CUresult graph_launch(CUgraphExec hx, CUstream h, bool per_thread)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_gexec *x = fc_handle_get(hx, FC_K_GEXEC);
    fc_stream *s = NULL;
    rc = x ? fc_stream_for_work(h, per_thread, &s) : CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        rc = s->cap ? launch_captured(x, s) : launch_exec(x, s);
    fc_unlock();
    return rc;
}

FC_EXPORT(cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))
{
    return graph_launch(hGraphExec, hStream, false);
}

FC_EXPORT(cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))
{
    return graph_launch(hGraphExec, hStream, true);
}

/* cuGraphUpload "uses memory cached by stream to back the allocations owned
 * by hGraphExec" and runs nothing. The fake keeps no memory back for a
 * graph between launches: an upload asks for its allocations' memory as a
 * launch would and gives it back at once, so it runs out of memory exactly
 * when a launch now would. */
static CUresult graph_upload(CUgraphExec hx, CUstream h, bool per_thread)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_gexec *x = fc_handle_get(hx, FC_K_GEXEC);
    fc_stream *s = NULL;
    fc_op **run = NULL;
    rc = x ? fc_stream_for_work(h, per_thread, &s) : CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        rc = launch_ops(x, &run);
    if (rc == CUDA_SUCCESS) {
        for (size_t i = 0; i < x->n; i++)
            fc_op_free(run[i]);
        free(run);
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuGraphUpload, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))
{
    return graph_upload(hGraphExec, hStream, false);
}

FC_EXPORT(cuGraphUpload_ptsz, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))
{
    return graph_upload(hGraphExec, hStream, true);
}

/* Launches already queued run on: they hold their own copies of the ops. */
FC_EXPORT(cuGraphExecDestroy, (CUgraphExec hGraphExec), (hGraphExec))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_gexec *x = fc_handle_get(hGraphExec, FC_K_GEXEC);
    if (!x)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        exec_free(x);
    fc_unlock();
    return rc;
}

/* "All operations other than destroy and node removal are permitted on the
 * graph while the capture sequence is in progress." */
FC_EXPORT(cuGraphDestroy, (CUgraph hGraph), (hGraph))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_graph *g = fc_handle_get(hGraph, FC_K_GRAPH);
    if (!g || g->capture)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        graph_free(g);
    fc_unlock();
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Explicit construction, node parameters, updates                           */
/* ------------------------------------------------------------------------ */

FC_EXPORT(cuGraphCreate, (CUgraph * phGraph, unsigned int flags), (phGraph, flags))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!phGraph || flags)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!(*phGraph = (CUgraph)graph_new()))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    fc_unlock();
    return rc;
}

/* Dependencies must be distinct nodes of g ("may not have any duplicate entries"). */
static bool deps_valid(const fc_graph *g, const CUgraphNode *deps, size_t n)
{
    if (n && !deps)
        return false;
    for (size_t i = 0; i < n; i++) {
        const fc_gnode *d = fc_handle_get(deps[i], FC_K_GNODE);
        if (!d || d->owner != g)
            return false;
        for (size_t k = 0; k < i; k++)
            if (deps[k] == deps[i])
                return false;
    }
    return true;
}

static CUresult add_kernel_node(CUgraphNode *out, CUgraph hg, const CUgraphNode *deps, size_t ndeps,
                                const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_graph *g = fc_handle_get(hg, FC_K_GRAPH);
    fc_ctx *c = NULL;
    fc_op *op = NULL;
    fc_knode *kn = NULL;
    fc_gnode *n = NULL;
    (void)fc_ctx_current(&c);
    if (!out || !g || !deps_valid(g, deps, ndeps))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        rc = fc_kernel_node(p, c, &op, &kn);
    if (rc == CUDA_SUCCESS)
        rc = graph_add(g, op, NULL, (fc_gnode *const *)deps, ndeps, &n);
    if (rc == CUDA_SUCCESS) {
        n->k = kn;
        *out = (CUgraphNode)n;
    } else {
        fc_knode_free(kn);
    }
    fc_unlock();
    return rc;
}

/* An allocation node: the address range is reserved at once and returned
 * in nodeParams->dptr, "fixed across instantiations and launches"; memory is
 * charged at each launch, as for a captured cuMemAllocAsync. Pinned device
 * memory only, as the fake has no other. */
FC_EXPORT(cuGraphAddMemAllocNode,
          (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
           size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams),
          (phGraphNode, hGraph, dependencies, numDependencies, nodeParams))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_graph *g = fc_handle_get(hGraph, FC_K_GRAPH);
    fc_galloc *ga = NULL;
    fc_gnode *n = NULL;
    fc_op *op = NULL;
    if (!phGraphNode || !g || !nodeParams || !nodeParams->bytesize ||
        !deps_valid(g, dependencies, numDependencies) ||
        nodeParams->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        nodeParams->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        nodeParams->poolProps.location.id < 0 ||
        nodeParams->poolProps.location.id >= fc_st.ndevices)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS && !(op = fc_op_new(FC_OP_GALLOC)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS)
        rc = fc_galloc_new(nodeParams->bytesize, nodeParams->poolProps.location.id, g->id, &ga);
    if (rc != CUDA_SUCCESS) {
        free(op);
        fc_unlock();
        return rc;
    }
    op->u.galloc.ga = ga;
    ga->refs++; /* ours until the node holds it */
    rc = graph_add(g, op, ga, (fc_gnode *const *)dependencies, numDependencies, &n);
    if (rc == CUDA_SUCCESS) {
        g->mem = true;
        nodeParams->dptr = (CUdeviceptr)ga->node.key;
        *phGraphNode = (CUgraphNode)n;
    }
    fc_galloc_unref(ga);
    fc_unlock();
    return rc;
}

/* The CUDA 10 form: the same fields, without kern and ctx. */
static CUDA_KERNEL_NODE_PARAMS_v2 params_v2(const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    CUDA_KERNEL_NODE_PARAMS_v2 v = { 0 };
    memcpy(&v, p, sizeof *p);
    return v;
}

FC_EXPORT(cuGraphAddKernelNode,
          (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
           size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams),
          (phGraphNode, hGraph, dependencies, numDependencies, nodeParams))
{
    CUDA_KERNEL_NODE_PARAMS_v2 v = nodeParams ? params_v2(nodeParams)
                                              : (CUDA_KERNEL_NODE_PARAMS_v2){ 0 };
    return add_kernel_node(phGraphNode, hGraph, dependencies, numDependencies,
                           nodeParams ? &v : NULL);
}

FC_EXPORT(cuGraphAddKernelNode_v2,
          (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
           size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams),
          (phGraphNode, hGraph, dependencies, numDependencies, nodeParams))
{
    return add_kernel_node(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
}

/* A kernel node of a live graph, or NULL. */
static fc_gnode *kernel_node(CUgraphNode h)
{
    fc_gnode *n = fc_handle_get(h, FC_K_GNODE);
    return n && n->k ? n : NULL;
}

static CUresult kernel_node_get(CUgraphNode h, CUDA_KERNEL_NODE_PARAMS_v2 *p, bool v2)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_gnode *n = kernel_node(h);
    if (!n || !p) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else {
        const fc_knode *k = n->k;
        CUDA_KERNEL_NODE_PARAMS_v2 v = {
            .func = k->func,
            .gridDimX = k->grid[0],
            .gridDimY = k->grid[1],
            .gridDimZ = k->grid[2],
            .blockDimX = k->block[0],
            .blockDimY = k->block[1],
            .blockDimZ = k->block[2],
            .sharedMemBytes = k->shmem,
            .kernelParams = k->by_extra ? NULL : k->ptrs,
            .extra = k->by_extra ? (void **)k->extra : NULL,
            .kern = k->kern,
            .ctx = k->ctx,
        };
        memcpy(p, &v, v2 ? sizeof v : sizeof(CUDA_KERNEL_NODE_PARAMS_v1));
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuGraphKernelNodeGetParams, (CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams),
          (hNode, nodeParams))
{
    return kernel_node_get(hNode, (CUDA_KERNEL_NODE_PARAMS_v2 *)(void *)nodeParams, false);
}

FC_EXPORT(cuGraphKernelNodeGetParams_v2,
          (CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams), (hNode, nodeParams))
{
    return kernel_node_get(hNode, nodeParams, true);
}

/* Future instantiations see the new parameters; executable graphs keep theirs. */
static CUresult kernel_node_set(CUgraphNode h, const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_gnode *n = kernel_node(h);
    fc_ctx *c = NULL;
    fc_op *op = NULL;
    fc_knode *kn = NULL;
    (void)fc_ctx_current(&c);
    rc = n ? fc_kernel_node(p, c, &op, &kn) : CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        fc_op_free(n->op);
        fc_knode_free(n->k);
        n->op = op;
        n->k = kn;
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuGraphKernelNodeSetParams,
          (CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams), (hNode, nodeParams))
{
    CUDA_KERNEL_NODE_PARAMS_v2 v = nodeParams ? params_v2(nodeParams)
                                              : (CUDA_KERNEL_NODE_PARAMS_v2){ 0 };
    return kernel_node_set(hNode, nodeParams ? &v : NULL);
}

FC_EXPORT(cuGraphKernelNodeSetParams_v2,
          (CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams), (hNode, nodeParams))
{
    return kernel_node_set(hNode, nodeParams);
}

/* A deep copy of g, a new registered graph (its nodes new handles). */
static fc_graph *graph_clone(const fc_graph *g)
{
    fc_graph *c = graph_new();
    bool ok = c != NULL;
    for (size_t i = 0; ok && i < g->n; i++) {
        const fc_gnode *n = g->nodes[i];
        fc_gnode **deps = n->ndeps ? calloc(n->ndeps, sizeof *deps) : NULL;
        fc_op *op = fc_op_clone(n->op);
        fc_gnode *m = NULL;
        ok = op && (!n->ndeps || deps);
        for (size_t d = 0; ok && d < n->ndeps; d++)
            for (size_t k = 0; k < i; k++)
                if (g->nodes[k] == n->deps[d])
                    deps[d] = c->nodes[k];
        if (ok)
            ok = graph_add(c, op, NULL, deps, n->ndeps, &m) ==
                 CUDA_SUCCESS; /* frees op on failure */
        else if (op)
            fc_op_free(op);
        free(deps);
        if (ok && n->k)
            ok = (m->k = fc_knode_dup(n->k)) != NULL;
        if (ok && n->child)
            ok = (m->child = graph_clone(n->child)) != NULL;
    }
    if (!ok && c) {
        graph_free(c);
        c = NULL;
    }
    return c;
}

FC_EXPORT(cuGraphAddChildGraphNode,
          (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
           size_t numDependencies, CUgraph childGraph),
          (phGraphNode, hGraph, dependencies, numDependencies, childGraph))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_graph *g = fc_handle_get(hGraph, FC_K_GRAPH);
    fc_graph *child = fc_handle_get(childGraph, FC_K_GRAPH);
    fc_graph *clone = NULL;
    fc_op *op = NULL;
    fc_gnode *n = NULL;
    /* "If childGraph contains allocation nodes, free nodes, or conditional
     * nodes, this call will return an error." */
    if (!phGraphNode || !g || !child || child == g || child->mem || child->capture ||
        !deps_valid(g, dependencies, numDependencies))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS && (!(clone = graph_clone(child)) || !(op = fc_op_new(FC_OP_MARKER))))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS)
        rc = graph_add(g, op, NULL, (fc_gnode *const *)dependencies, numDependencies, &n);
    if (rc == CUDA_SUCCESS) {
        n->child = clone;
        *phGraphNode = (CUgraphNode)n;
    } else if (clone) {
        graph_free(clone);
    }
    fc_unlock();
    return rc;
}

/* The node keeps the graph: the handle is valid while the node is. */
FC_EXPORT(cuGraphChildGraphNodeGetGraph, (CUgraphNode hNode, CUgraph *phGraph), (hNode, phGraph))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_gnode *n = fc_handle_get(hNode, FC_K_GNODE);
    if (!n || !n->child || !phGraph)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        *phGraph = (CUgraph)n->child;
    fc_unlock();
    return rc;
}

static CUgraphNodeType node_type(const fc_gnode *n)
{
    if (n->child)
        return CU_GRAPH_NODE_TYPE_GRAPH;
    switch (n->op->kind) {
    case FC_OP_KERNEL:
        return CU_GRAPH_NODE_TYPE_KERNEL;
    case FC_OP_MEMSET:
        return CU_GRAPH_NODE_TYPE_MEMSET;
    case FC_OP_HTOD:
    case FC_OP_DTOH:
    case FC_OP_DTOD:
    case FC_OP_HTOH:
        return CU_GRAPH_NODE_TYPE_MEMCPY;
    case FC_OP_GALLOC:
        return CU_GRAPH_NODE_TYPE_MEM_ALLOC;
    case FC_OP_FREE:
        return CU_GRAPH_NODE_TYPE_MEM_FREE;
    case FC_OP_CALLBACK:
        return CU_GRAPH_NODE_TYPE_HOST;
    default:
        return n->op->u.marker.wait ? CU_GRAPH_NODE_TYPE_WAIT_EVENT : CU_GRAPH_NODE_TYPE_EMPTY;
    }
}

FC_EXPORT(cuGraphNodeGetType, (CUgraphNode hNode, CUgraphNodeType *type), (hNode, type))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_gnode *n = fc_handle_get(hNode, FC_K_GNODE);
    if (!n || !type)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        *type = node_type(n);
    fc_unlock();
    return rc;
}

FC_EXPORT(cuGraphGetNodes, (CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes),
          (hGraph, nodes, numNodes))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_graph *g = fc_handle_get(hGraph, FC_K_GRAPH);
    if (!g || !numNodes) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else if (!nodes) {
        *numNodes = g->n;
    } else {
        size_t got = *numNodes < g->n ? *numNodes : g->n;
        for (size_t i = 0; i < *numNodes; i++)
            nodes[i] = i < got ? (CUgraphNode)g->nodes[i] : NULL;
        *numNodes = got;
    }
    fc_unlock();
    return rc;
}

/* The node must be a kernel node of the graph x was instantiated from. */
static CUresult exec_kernel_node_set(CUgraphExec hx, CUgraphNode h,
                                     const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_gexec *x = fc_handle_get(hx, FC_K_GEXEC);
    fc_gnode *n = kernel_node(h);
    fc_ctx *c = NULL;
    fc_op *op = NULL;
    fc_knode *kn = NULL;
    size_t i = 0;
    (void)fc_ctx_current(&c);
    while (x && n && i < x->n && x->src[i] != n)
        i++;
    if (!x || !n || i == x->n || n->owner != x->g)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        rc = fc_kernel_node(p, c, &op, &kn) == CUDA_SUCCESS ? CUDA_SUCCESS
                                                            : CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        fc_op_free(x->ops[i]);
        x->ops[i] = op;
    }
    fc_knode_free(kn); /* the graph's node is not modified */
    fc_unlock();
    return rc;
}

FC_EXPORT(cuGraphExecKernelNodeSetParams,
          (CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams),
          (hGraphExec, hNode, nodeParams))
{
    CUDA_KERNEL_NODE_PARAMS_v2 v = nodeParams ? params_v2(nodeParams)
                                              : (CUDA_KERNEL_NODE_PARAMS_v2){ 0 };
    return exec_kernel_node_set(hGraphExec, hNode, nodeParams ? &v : NULL);
}

FC_EXPORT(cuGraphExecKernelNodeSetParams_v2,
          (CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams),
          (hGraphExec, hNode, nodeParams))
{
    return exec_kernel_node_set(hGraphExec, hNode, nodeParams);
}

/*
 * The generic forms (CUDA 12.2): a tagged CUgraphNodeParams. The fake builds
 * kernel nodes only: any other type is CUDA_ERROR_NOT_SUPPORTED (in each of
 * their \return lists), as is edge data other than the default. Unused bytes
 * (reserved0, the union past the kernel member, reserved2) must be zero:
 * CUDA_ERROR_INVALID_VALUE otherwise, as for a NULL nodeParams.
 */
static CUresult generic_kernel(const CUgraphNodeParams *p, CUDA_KERNEL_NODE_PARAMS_v2 *out)
{
    static const CUgraphNodeParams zero;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->type != CU_GRAPH_NODE_TYPE_KERNEL)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (memcmp(p->reserved0, zero.reserved0, sizeof p->reserved0) || p->reserved2 ||
        memcmp((const char *)&p->kernel + sizeof p->kernel,
               (const char *)&zero.kernel + sizeof p->kernel,
               sizeof p->reserved1 - sizeof p->kernel))
        return CUDA_ERROR_INVALID_VALUE;
    _Static_assert(sizeof p->kernel == sizeof *out, "CUDA_KERNEL_NODE_PARAMS_v3 is v2's layout");
    memcpy(out, &p->kernel, sizeof *out);
    return CUDA_SUCCESS;
}

static bool edges_default(const CUgraphEdgeData *e, size_t n)
{
    static const CUgraphEdgeData zero;
    for (size_t i = 0; e && i < n; i++)
        if (memcmp(&e[i], &zero, sizeof zero))
            return false;
    return true;
}

static CUresult add_node(CUgraphNode *out, CUgraph hg, const CUgraphNode *deps,
                         const CUgraphEdgeData *edges, size_t ndeps, const CUgraphNodeParams *p)
{
    CUDA_KERNEL_NODE_PARAMS_v2 k;
    if (!atomic_load(&fc_st.initialized))
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult rc = generic_kernel(p, &k);
    if (rc == CUDA_SUCCESS && !edges_default(edges, ndeps))
        rc = CUDA_ERROR_NOT_SUPPORTED;
    return rc == CUDA_SUCCESS ? add_kernel_node(out, hg, deps, ndeps, &k) : rc;
}

FC_EXPORT(cuGraphAddNode,
          (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
           size_t numDependencies, CUgraphNodeParams *nodeParams),
          (phGraphNode, hGraph, dependencies, numDependencies, nodeParams))
{
    return add_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, nodeParams);
}

FC_EXPORT(cuGraphAddNode_v2,
          (CUgraphNode * phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
           const CUgraphEdgeData *dependencyData, size_t numDependencies,
           CUgraphNodeParams *nodeParams),
          (phGraphNode, hGraph, dependencies, dependencyData, numDependencies, nodeParams))
{
    return add_node(phGraphNode, hGraph, dependencies, dependencyData, numDependencies, nodeParams);
}

/* "The node type specified by nodeParams->type must match the type of hNode". */
FC_EXPORT(cuGraphNodeSetParams, (CUgraphNode hNode, CUgraphNodeParams *nodeParams),
          (hNode, nodeParams))
{
    CUDA_KERNEL_NODE_PARAMS_v2 k;
    if (!atomic_load(&fc_st.initialized))
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult rc = generic_kernel(nodeParams, &k);
    return rc == CUDA_SUCCESS ? kernel_node_set(hNode, &k) : rc;
}

FC_EXPORT(cuGraphExecNodeSetParams,
          (CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeParams *nodeParams),
          (hGraphExec, hNode, nodeParams))
{
    CUDA_KERNEL_NODE_PARAMS_v2 k;
    if (!atomic_load(&fc_st.initialized))
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult rc = generic_kernel(nodeParams, &k);
    return rc == CUDA_SUCCESS ? exec_kernel_node_set(hGraphExec, hNode, &k) : rc;
}

/*
 * Replace x's nodes' parameters by hg's, when hg has the same nodes in the
 * same order (the fake pairs them so), each of the same type with as many
 * dependencies.  Memory nodes cannot be updated.  The result, and the node
 * it is about, go to *result and *err.
 */
static CUresult exec_update(CUgraphExec hx, CUgraph hg, CUgraphExecUpdateResult *result,
                            CUgraphNode *err)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_gexec *x = fc_handle_get(hx, FC_K_GEXEC);
    fc_graph *g = fc_handle_get(hg, FC_K_GRAPH);
    fc_gnode **src = NULL;
    size_t total = g ? flat_count(g) : 0;
    *result = CU_GRAPH_EXEC_UPDATE_ERROR;
    *err = NULL;
    if (x && g && total == x->n && (src = calloc(total ? total : 1, sizeof *src))) {
        flat_fill(g, src);
        *result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
        for (size_t i = 0; i < total && *result == CU_GRAPH_EXEC_UPDATE_SUCCESS; i++) {
            fc_gnode *n = src[i], *was = x->src[i];
            if (was && n->ndeps != was->ndeps)
                *result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
            else if (n->op->kind != x->ops[i]->kind)
                *result = CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
            else if (n->ga || x->gas[i])
                *result = CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;
            if (*result != CU_GRAPH_EXEC_UPDATE_SUCCESS)
                *err = (CUgraphNode)n;
        }
    } else if (x && g && total != x->n) {
        *result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    }
    fc_op **ops = NULL;
    if (*result == CU_GRAPH_EXEC_UPDATE_SUCCESS && !(ops = calloc(total ? total : 1, sizeof *ops)))
        *result = CU_GRAPH_EXEC_UPDATE_ERROR;
    for (size_t i = 0; ops && i < total; i++)
        if (!(ops[i] = fc_op_clone(src[i]->op)))
            *result = CU_GRAPH_EXEC_UPDATE_ERROR;
    if (*result == CU_GRAPH_EXEC_UPDATE_SUCCESS) {
        for (size_t i = 0; i < total; i++) {
            fc_op_free(x->ops[i]);
            x->ops[i] = ops[i];
        }
    } else {
        for (size_t i = 0; ops && i < total; i++)
            if (ops[i])
                fc_op_free(ops[i]);
        rc = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    }
    free(ops);
    free(src);
    fc_unlock();
    return rc;
}

FC_EXPORT(cuGraphExecUpdate,
          (CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode *hErrorNode_out,
           CUgraphExecUpdateResult *updateResult_out),
          (hGraphExec, hGraph, hErrorNode_out, updateResult_out))
{
    CUgraphExecUpdateResult r;
    CUgraphNode err;
    if (!atomic_load(&fc_st.initialized))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!hErrorNode_out || !updateResult_out)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = exec_update(hGraphExec, hGraph, &r, &err);
    *hErrorNode_out = err;
    *updateResult_out = r;
    return rc;
}

FC_EXPORT(cuGraphExecUpdate_v2,
          (CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo),
          (hGraphExec, hGraph, resultInfo))
{
    CUgraphExecUpdateResult r;
    CUgraphNode err;
    if (!atomic_load(&fc_st.initialized))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!resultInfo)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = exec_update(hGraphExec, hGraph, &r, &err);
    resultInfo->result = r;
    resultInfo->errorNode = err;
    resultInfo->errorFromNode = NULL;
    return rc;
}
