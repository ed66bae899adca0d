/*
 * Streams, events and the queued-work engine.
 *
 * Asynchronous work (async memcpy/memset, launches, stream-ordered frees,
 * event records) is queued on its stream and runs only when something
 * forces it: a synchronisation, an event, a query, a synchronous API on the
 * legacy stream, a context teardown.  Until then its effects are invisible
 * (fakecuda_read sees the old bytes), so a program that forgets to
 * synchronise fails on the fake as it would on a GPU, only reliably.
 *
 * Ordering.  Every op gets a global sequence number and a list of
 * prerequisites (stream id, seq): "that stream has run every op up to seq".
 * Legacy NULL-stream semantics are such prerequisites, added at enqueue time:
 * an op on the legacy stream waits for all work already queued on the
 * context's blocking streams (user streams without CU_STREAM_NON_BLOCKING and
 * per-thread streams), and an op on a blocking stream waits for all work
 * already queued on the legacy stream.  cuStreamWaitEvent adds one explicit
 * prerequisite.  Within a stream, ops run in order.  Prerequisites always
 * name earlier ops, so running is a depth-first walk with no cycles.
 *
 * On a capturing stream fc_enqueue queues nothing: the op becomes a node of
 * the graph being captured (fc_graph.c), run only by a launch of it.
 *
 * The device timeline (FAKECUDA_TIMELINE=1, read at cuInit; off by default).
 * Each op queued gets a modelled completion time on the host's monotonic
 * clock: it starts when the device reaches it (its stream's previous op and
 * every prerequisite complete, and not before it was queued) and lasts
 * FAKECUDA_OP_NS, plus FAKECUDA_KERNEL_NS for a kernel, or its bytes at
 * FAKECUDA_COPY_NS_PER_KIB or FAKECUDA_MEMSET_NS_PER_KIB.  The device runs
 * while the host goes on, so only a wait costs the host time: whatever
 * forces an op sleeps until its completion time before running it (the
 * driver lock held: other threads' calls wait meanwhile), and
 * cuStreamQuery and cuEventQuery answer CUDA_ERROR_NOT_READY, running
 * nothing, while the work they ask about has not completed
 * (fc_stream_ready).  Event timestamps are the modelled completion times,
 * so cuEventElapsedTime measures the model.  Effects still apply only when
 * something forces the op, so a program that forgets to synchronise reads
 * old bytes as deterministically as without the timeline.  A stream
 * callback is the exception: as the driver's own thread does, a worker
 * thread runs it (and its stream's earlier work) once the device has
 * reached it, whether or not the host ever waits (fc_timeline_callback).
 */
#include "fc_internal.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>

static fc_stream *stream_by_id(uint64_t id)
{
    fc_tnode *n = fc_tree_find(fc_st.streams_by_id, id);
    return n ? (fc_stream *)((char *)n - offsetof(fc_stream, id_node)) : NULL;
}

/* Synchronises with the legacy stream. */
static bool blocking(const fc_stream *s)
{
    return s->kind == FC_S_PER_THREAD ||
           (s->kind == FC_S_USER && !(s->flags & CU_STREAM_NON_BLOCKING));
}

bool fc_stream_blocking(const fc_stream *s)
{
    return blocking(s);
}

/* Whether the op a prerequisite names has not run yet. */
static bool dep_pending(const fc_dep *d)
{
    fc_stream *s = stream_by_id(d->stream_id);
    return s && s->head && s->head->seq <= d->seq;
}

fc_op *fc_op_new(int kind)
{
    fc_op *op = calloc(1, sizeof *op);
    if (op)
        op->kind = kind;
    return op;
}

void fc_op_free(fc_op *op)
{
    if (op->kind == FC_OP_HTOD && op->u.copy.staged)
        free(op->u.copy.host); /* the staged copy of the caller's buffer */
    if (op->kind == FC_OP_GALLOC && op->u.galloc.a)
        fc_galloc_discard(op->u.galloc.a); /* its allocation node never ran */
    free(op->deps);
    free(op);
}

fc_op *fc_op_clone(const fc_op *op)
{
    fc_op *c = fc_op_new(op->kind);
    if (!c)
        return NULL;
    c->u = op->u;
    if (c->kind == FC_OP_HTOD)
        c->u.copy.staged = false; /* a template reads the application's buffer */
    if (c->kind == FC_OP_GALLOC)
        c->u.galloc.a = NULL;
    return c;
}

/* ------------------------------------------------------------------------ */
/* Stream objects                                                            */
/* ------------------------------------------------------------------------ */

static fc_stream *stream_new(fc_ctx *c, int kind, unsigned int flags, int priority)
{
    fc_stream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->ctx = c;
    s->kind = kind;
    s->flags = flags;
    s->priority = priority;
    s->id = fc_st.next_stream_id++;
    s->id_node.key = s->id;
    fc_tree_insert(&fc_st.streams_by_id, &s->id_node, fc_rand());
    LIST_INSERT_HEAD(&c->streams, s, link);
    if (kind == FC_S_USER)
        fc_handle_add(&s->h, FC_K_STREAM);
    return s;
}

/*
 * Discard a stream's queued work (its context died).  A callback still runs,
 * once, with the error: "In the event of a device error, all subsequently
 * executed callbacks will receive an appropriate CUresult."
 */
static void drop_ops(fc_stream *s)
{
    while (s->head) {
        fc_op *op = s->head;
        s->head = op->next;
        if (op->kind == FC_OP_CALLBACK) {
            CUresult why = s->ctx->sticky != CUDA_SUCCESS ? s->ctx->sticky
                                                          : CUDA_ERROR_CONTEXT_IS_DESTROYED;
            fc_run_callback(op, why);
        }
        if (op->kind == FC_OP_FREE)
            fc_mem_free_dropped(op->u.free.ptr, op->u.free.buffer_id);
        fc_op_free(op);
    }
    s->tail = NULL;
}

static void stream_free(fc_stream *s)
{
    drop_ops(s);
    fc_tree_erase(&fc_st.streams_by_id, s->id);
    LIST_REMOVE(s, link);
    if (s->destroyed && s->zombie_link.le_prev)
        LIST_REMOVE(s, zombie_link);
    if (s->kind == FC_S_USER && !s->destroyed)
        fc_handle_del(&s->h);
    free(s->deps);
    free(s->edges);
    free(s);
}

/* Destroyed streams whose work has now run are released. */
static void reap_zombies(void)
{
    fc_stream *s = LIST_FIRST(&fc_st.zombie_streams);
    while (s) {
        fc_stream *next = LIST_NEXT(s, zombie_link);
        if (!s->head)
            stream_free(s);
        s = next;
    }
}

CUresult fc_stream_ctx_activate(fc_ctx *c)
{
    c->legacy = stream_new(c, FC_S_LEGACY, 0, 0);
    return c->legacy ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

void fc_stream_ctx_teardown(fc_ctx *c)
{
    while (!LIST_EMPTY(&c->streams))
        stream_free(LIST_FIRST(&c->streams));
    while (!LIST_EMPTY(&c->events)) {
        fc_event *e = LIST_FIRST(&c->events);
        LIST_REMOVE(e, link);
        fc_handle_del(&e->h);
        fc_capture_event_clear(e);
        free(e);
    }
    c->legacy = NULL;
}

/* The calling thread's per-thread default stream in c, made on first use. */
static fc_stream *per_thread_stream(fc_ctx *c)
{
    uint64_t me = fc_thread_id();
    fc_stream *s;
    LIST_FOREACH(s, &c->streams, link)
        if (s->kind == FC_S_PER_THREAD && s->owner == me)
            return s;
    s = stream_new(c, FC_S_PER_THREAD, 0, 0);
    if (s)
        s->owner = me;
    return s;
}

CUresult fc_stream_resolve(CUstream h, bool per_thread, fc_stream **out)
{
    if (!h)
        h = per_thread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    if (h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
        fc_ctx *c;
        CUresult rc = fc_ctx_current(&c);
        if (rc != CUDA_SUCCESS)
            return rc;
        *out = h == CU_STREAM_LEGACY ? c->legacy : per_thread_stream(c);
        return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    }
    fc_stream *s = fc_handle_get(h, FC_K_STREAM);
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    if (s->ctx->sticky != CUDA_SUCCESS)
        return s->ctx->sticky;
    *out = s;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Queueing and running                                                      */
/* ------------------------------------------------------------------------ */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The timeline: when the last op a prerequisite names completes (0: run). */
static uint64_t dep_done_ns(const fc_dep *d)
{
    fc_stream *s = stream_by_id(d->stream_id);
    uint64_t done = 0;
    for (fc_op *op = s ? s->head : NULL; op && op->seq <= d->seq; op = op->next)
        done = op->done_ns;
    return done;
}

static uint64_t per_kib(size_t bytes, uint64_t ns)
{
    return (uint64_t)((bytes / 1024 + (bytes % 1024 != 0)) * ns);
}

/* The timeline: how long the device takes over op. */
static uint64_t duration_ns(const fc_op *op)
{
    uint64_t ns = fc_st.timeline.op_ns;
    switch (op->kind) {
    case FC_OP_KERNEL:
        return ns + fc_st.timeline.kernel_ns;
    case FC_OP_MEMSET:
        return ns + per_kib(op->u.memset.count * op->u.memset.elem, fc_st.timeline.set_ns_per_kib);
    case FC_OP_HTOD:
    case FC_OP_DTOH:
    case FC_OP_DTOD:
    case FC_OP_HTOH:
        return ns + per_kib(op->u.copy.n, fc_st.timeline.copy_ns_per_kib);
    default:
        return ns;
    }
}

/* The timeline: op, just given its prerequisites, is placed after them. */
static void place(fc_stream *s, fc_op *op)
{
    uint64_t start = now_ns();
    if (s->tail && s->busy_ns > start)
        start = s->busy_ns;
    for (unsigned int i = 0; i < op->ndeps; i++) {
        uint64_t d = dep_done_ns(&op->deps[i]);
        if (d > start)
            start = d;
    }
    op->done_ns = start + duration_ns(op);
    s->busy_ns = op->done_ns;
}

CUresult fc_enqueue(fc_stream *s, fc_op *op, const fc_dep *extra)
{
    fc_ctx *c = s->ctx;
    size_t n = 0;
    fc_stream *t;

    if (s->cap)
        return fc_capture_add(s, op);

    if (s->kind == FC_S_LEGACY) {
        LIST_FOREACH(t, &c->streams, link)
            if (t != s && blocking(t) && t->tail)
                n++;
    } else if (blocking(s) && c->legacy && c->legacy->tail) {
        n++;
    }
    bool want_extra = extra && dep_pending(extra);
    n += want_extra;

    if (n) {
        op->deps = calloc(n, sizeof *op->deps);
        if (!op->deps) {
            fc_op_free(op);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        if (s->kind == FC_S_LEGACY) {
            LIST_FOREACH(t, &c->streams, link)
                if (t != s && blocking(t) && t->tail)
                    op->deps[op->ndeps++] = (fc_dep){ t->id, t->tail->seq };
        } else if (blocking(s) && c->legacy && c->legacy->tail) {
            op->deps[op->ndeps++] = (fc_dep){ c->legacy->id, c->legacy->tail->seq };
        }
        if (want_extra)
            op->deps[op->ndeps++] = *extra;
    }

    op->seq = ++fc_st.next_seq;
    op->next = NULL;
    if (fc_st.timeline.on)
        place(s, op);
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    return CUDA_SUCCESS;
}

/*
 * A kernel touched memory outside every allocation (CUDA_ERROR_ILLEGAL_ADDRESS),
 * or FAKECUDA_STICKY named it: the context is lost, as on a GPU.  Its sticky
 * error is returned by every later call that uses it until it is destroyed
 * or reset, and its queued work never runs.
 */
static void fault(fc_ctx *c, CUresult sticky)
{
    fc_stream *t;
    c->sticky = sticky;
    LIST_FOREACH(t, &c->streams, link)
        drop_ops(t);
}

/* An event's record has run: it is complete, and when is its timestamp
 * (the timeline's modelled time, else the host clock now). */
static void complete_record(fc_ctx *c, const fc_op *op)
{
    fc_event *e;
    LIST_FOREACH(e, &c->events, link) {
        if (e->record == op->u.marker.record) {
            e->done = true;
            e->done_ns = fc_st.timeline.on && op->done_ns ? op->done_ns : now_ns();
            return;
        }
    }
}

/* The timeline: the device reaches op's completion before it runs. */
static void wait_for(const fc_op *op)
{
    if (!fc_st.timeline.on || !op->done_ns)
        return;
    struct timespec ts = { .tv_sec = (time_t)(op->done_ns / 1000000000u),
                           .tv_nsec = (long)(op->done_ns % 1000000000u) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static void execute(fc_stream *s, fc_op *op)
{
    bool ok = true;
    CUresult after = CUDA_SUCCESS;
    fc_st.ops_run++;
    switch (op->kind) {
    case FC_OP_MARKER:
        if (op->u.marker.record)
            complete_record(s->ctx, op);
        break;
    case FC_OP_CALLBACK:
        fc_run_callback(op, CUDA_SUCCESS);
        break;
    case FC_OP_MEMSET:
        ok = fc_dev_fill(op->u.memset.dst, op->u.memset.value, op->u.memset.elem,
                         op->u.memset.count);
        break;
    case FC_OP_HTOD:
        ok = fc_dev_write(op->u.copy.dev, op->u.copy.host, op->u.copy.n);
        break;
    case FC_OP_DTOH:
        ok = fc_dev_read(op->u.copy.dev, op->u.copy.host, op->u.copy.n);
        break;
    case FC_OP_DTOD:
        ok = fc_dev_copy(op->u.copy.dev, op->u.copy.dev_src, op->u.copy.n);
        break;
    case FC_OP_HTOH:
        memmove(op->u.copy.host, op->u.copy.host_src, op->u.copy.n);
        break;
    case FC_OP_GALLOC:
        fc_galloc_map(op->u.galloc.a);
        op->u.galloc.a = NULL;
        break;
    case FC_OP_KERNEL:
        ok = op->u.kernel.impl->run(op->u.kernel.args);
        after = op->u.kernel.sticky;
        break;
    case FC_OP_FREE:
        fc_mem_free_queued(op->u.free.ptr, op->u.free.buffer_id);
        break;
    }
    if (!ok)
        fault(s->ctx, CUDA_ERROR_ILLEGAL_ADDRESS);
    else if (after != CUDA_SUCCESS)
        fault(s->ctx, after);
}

/* Run, for each target (stream, seq), that stream's ops up to seq. */
static void run_targets(const fc_dep *targets, size_t ntargets)
{
    if (!ntargets) {
        /* Nothing to run (an idle stream's synchronous copy, each copy of a
         * batch after the first): no stack to allocate. */
        reap_zombies();
        return;
    }
    size_t n = 0, cap = ntargets + 16;
    fc_dep *stk = malloc(cap * sizeof *stk);
    if (!stk) {
        fputs("fakecuda: out of memory running queued work\n", stderr);
        abort();
    }
    for (size_t i = ntargets; i-- > 0;)
        stk[n++] = targets[i];

    while (n) {
        fc_dep *f = &stk[n - 1];
        fc_stream *s = stream_by_id(f->stream_id);
        fc_op *op = s ? s->head : NULL;
        if (!op || op->seq > f->seq) {
            n--;
            continue;
        }
        const fc_dep *need = NULL;
        for (unsigned int i = 0; i < op->ndeps && !need; i++)
            if (dep_pending(&op->deps[i]))
                need = &op->deps[i];
        if (need) {
            if (n == cap) {
                fc_dep *grown = realloc(stk, 2 * cap * sizeof *stk);
                if (!grown) {
                    fputs("fakecuda: out of memory running queued work\n", stderr);
                    abort();
                }
                stk = grown;
                cap *= 2;
            }
            stk[n++] = *need;
            continue;
        }
        wait_for(op);
        s->head = op->next;
        if (!s->head)
            s->tail = NULL;
        execute(s, op);
        fc_op_free(op);
    }
    free(stk);
    reap_zombies();
}

/* Targets: every stream of c with queued work (filter: NULL for all). */
static size_t ctx_targets(fc_ctx *c, const fc_stream *self, fc_dep **out)
{
    size_t n = 0;
    fc_stream *t;
    LIST_FOREACH(t, &c->streams, link)
        n++;
    *out = calloc(n ? n : 1, sizeof **out);
    if (!*out) {
        fputs("fakecuda: out of memory running queued work\n", stderr);
        abort();
    }
    n = 0;
    LIST_FOREACH(t, &c->streams, link)
        if (t->tail && (!self || t == self || blocking(t)))
            (*out)[n++] = (fc_dep){ t->id, t->tail->seq };
    return n;
}

static size_t count_streams(const fc_tnode *t)
{
    return t ? 1 + count_streams(t->l) + count_streams(t->r) : 0;
}

static void each_stream(fc_tnode *t, void (*fn)(fc_stream *s, void *arg), void *arg)
{
    if (!t)
        return;
    fn((fc_stream *)((char *)t - offsetof(fc_stream, id_node)), arg);
    each_stream(t->l, fn, arg);
    each_stream(t->r, fn, arg);
}

void fc_streams_foreach(void (*fn)(fc_stream *s, void *arg), void *arg)
{
    each_stream(fc_st.streams_by_id, fn, arg);
}

static void stream_tails(const fc_tnode *t, fc_dep *out, size_t *n)
{
    if (!t)
        return;
    const fc_stream *s = (const fc_stream *)((const char *)t - offsetof(fc_stream, id_node));
    if (s->tail)
        out[(*n)++] = (fc_dep){ s->id, s->tail->seq };
    stream_tails(t->l, out, n);
    stream_tails(t->r, out, n);
}

void fc_sync_all(void)
{
    size_t n = count_streams(fc_st.streams_by_id);
    fc_dep *targets = calloc(n ? n : 1, sizeof *targets);
    if (!targets) {
        fputs("fakecuda: out of memory running queued work\n", stderr);
        abort();
    }
    n = 0;
    stream_tails(fc_st.streams_by_id, targets, &n);
    run_targets(targets, n);
    free(targets);
}

CUresult fc_ctx_sync(fc_ctx *c)
{
    fc_dep *targets;
    size_t n = ctx_targets(c, NULL, &targets);
    run_targets(targets, n);
    free(targets);
    return c->sticky;
}

CUresult fc_sync_for_api(fc_stream *s)
{
    fc_ctx *c = s->ctx;
    if (s->kind == FC_S_LEGACY) {
        /* The legacy stream waits for every blocking stream of its context. */
        fc_dep *targets;
        size_t n = ctx_targets(c, s, &targets);
        run_targets(targets, n);
        free(targets);
    } else if (!s->tail && !(blocking(s) && c->legacy && c->legacy->tail)) {
        /* Nothing to wait for (each copy of a batch after the first). */
        reap_zombies();
        return c->sticky;
    } else {
        fc_dep targets[2];
        size_t n = 0;
        if (blocking(s) && c->legacy && c->legacy->tail)
            targets[n++] = (fc_dep){ c->legacy->id, c->legacy->tail->seq };
        if (s->tail)
            targets[n++] = (fc_dep){ s->id, s->tail->seq };
        run_targets(targets, n);
    }
    return c->sticky;
}

/* ------------------------------------------------------------------------ */
/* For the stream and event entry points (fc_api_stream.c)                   */
/* ------------------------------------------------------------------------ */

fc_stream *fc_stream_new_user(fc_ctx *c, unsigned int flags, int priority)
{
    return stream_new(c, FC_S_USER, flags, priority);
}

/*
 * "In case the device is still doing work in the stream hStream when
 * cuStreamDestroy() is called, the function will return immediately and the
 * resources associated with hStream will be released automatically once the
 * device has completed all work in hStream."  The handle dies now; the
 * queue stays (still ordered against the legacy stream) until it has run.
 */
void fc_stream_destroy(fc_stream *s)
{
    fc_handle_del(&s->h);
    s->destroyed = true;
    if (s->head)
        LIST_INSERT_HEAD(&fc_st.zombie_streams, s, zombie_link);
    else
        stream_free(s);
}

/*
 * The timeline: whether what fc_sync_for_api(s) would run (or, d non-NULL,
 * fc_run_dep(d)) has completed on the device, so a query may run it at
 * once; always true without the timeline, where queries run what they ask
 * about.  The completion times grow along every prerequisite, so the
 * targets' last ops say it.
 */
bool fc_stream_ready(fc_stream *s, const fc_dep *d)
{
    if (!fc_st.timeline.on)
        return true;
    uint64_t now = now_ns(), last = 0;
    if (d)
        return dep_done_ns(d) <= now;
    fc_ctx *c = s->ctx;
    fc_stream *t;
    if (s->kind == FC_S_LEGACY) {
        LIST_FOREACH(t, &c->streams, link)
            if (t->tail && (t == s || blocking(t)) && t->tail->done_ns > last)
                last = t->tail->done_ns;
    } else {
        if (s->tail)
            last = s->tail->done_ns;
        if (blocking(s) && c->legacy && c->legacy->tail && c->legacy->tail->done_ns > last)
            last = c->legacy->tail->done_ns;
    }
    return last <= now;
}

/* ------------------------------------------------------------------------ */
/* The timeline's callback worker                                            */
/* ------------------------------------------------------------------------ */

static struct {
    pthread_once_t once;
    pthread_cond_t wake; /* with fc_st.lock: a callback was queued */
    bool started;        /* fc_st.lock: the worker runs (none after a fork) */
} worker = { .once = PTHREAD_ONCE_INIT };

/* The queued callback the device reaches first, if any. */
static bool first_callback(const fc_tnode *t, fc_dep *at, uint64_t *when)
{
    if (!t)
        return false;
    bool found = first_callback(t->l, at, when);
    found |= first_callback(t->r, at, when);
    const fc_stream *s = (const fc_stream *)((const char *)t - offsetof(fc_stream, id_node));
    for (const fc_op *op = s->head; op; op = op->next) {
        if (op->kind != FC_OP_CALLBACK)
            continue;
        if (!found || op->done_ns < *when) {
            *at = (fc_dep){ s->id, op->seq };
            *when = op->done_ns;
            found = true;
        }
        break; /* later ones on this stream come after it */
    }
    return found;
}

static void *worker_main(void *arg)
{
    (void)arg;
    fc_lock();
    for (;;) {
        fc_dep at;
        uint64_t when = 0;
        if (!first_callback(fc_st.streams_by_id, &at, &when)) {
            pthread_cond_wait(&worker.wake, &fc_st.lock);
        } else if (when > now_ns()) {
            struct timespec ts = { .tv_sec = (time_t)(when / 1000000000u),
                                   .tv_nsec = (long)(when % 1000000000u) };
            pthread_cond_timedwait(&worker.wake, &fc_st.lock, &ts);
        } else {
            run_targets(&at, 1);
        }
    }
    return NULL;
}

static void worker_init_cond(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&worker.wake, &a);
    pthread_condattr_destroy(&a);
}

/* A forked child has no worker (fc_st.lock is held across fork). */
static void worker_atfork_child(void)
{
    worker.started = false;
    worker_init_cond();
}

static void worker_once(void)
{
    worker_init_cond();
    pthread_atfork(NULL, NULL, worker_atfork_child);
}

/*
 * A callback was queued (the lock held): with the timeline, the worker runs
 * it in time.  Started on the first; it takes no signal, so the program's
 * handlers run on its own threads.  If it cannot start, callbacks run when
 * something forces them, as without the timeline.
 */
void fc_timeline_callback(void)
{
    if (!fc_st.timeline.on)
        return;
    pthread_once(&worker.once, worker_once);
    if (!worker.started) {
        sigset_t all, old;
        pthread_t th;
        pthread_attr_t a;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        worker.started = pthread_create(&th, &a, worker_main, NULL) == 0;
        pthread_attr_destroy(&a);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    pthread_cond_signal(&worker.wake);
}

bool fc_dep_pending(const fc_dep *d)
{
    return dep_pending(d);
}

void fc_run_dep(const fc_dep *d)
{
    run_targets(d, 1);
}
