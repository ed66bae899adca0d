/* The executable graphs the shim follows (graphs.h). Everything here runs
 * when the application builds or changes an executable graph, never when it
 * replays one: a replay reads the record gg_graphs_find() gives. */
#include "handles/graphs.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/gg.h"
#include "driver/device.h"
#include "report/report.h"

struct gg_graph gg_graphs_table[GG_GRAPHS_MAX];
__thread struct gg_graph *gg_graphs_last __attribute__((tls_model("initial-exec")));

static struct {
	pthread_mutex_t lock; /* leaf: guards records' contents while they change */
	atomic_uint_fast64_t unfollowed[GG_GRAPH_UNFOLLOWED_COUNT]; /* lock-free */
	atomic_uint_fast64_t replays; /* replays of graphs with nodes not followed; lock-free */
	atomic_flag warned;           /* the WARN of nodes not followed was said */
} graphs_state = { .lock = PTHREAD_MUTEX_INITIALIZER };

static const char *const reasons[] = {
#define X(name) #name,
	GG_REPORT_GRAPH_UNFOLLOWED(X)
#undef X
};

static void unfollowed(struct gg_graph *g, enum gg_report_graph_unfollowed why, unsigned n)
{
	if (!n)
		return;
	atomic_fetch_add_explicit(&graphs_state.unfollowed[why], n, memory_order_relaxed);
	if (g)
		g->unfollowed += n;
	if (!atomic_flag_test_and_set(&graphs_state.warned))
		gg_report_warn("a CUDA graph has nodes gpuguard cannot follow (%s): the kernels they "
			       "run are not named as suspects nor checked when the graph is replayed; "
			       "the JSON counts them (coverage.graph_nodes_unfollowed)",
			       reasons[why]);
}

/* The kernel nodes read so far, growing. */
struct walk {
	struct gg_graph *g;
	struct gg_graph_kernel *k;
	unsigned n, cap;
};

/* Copy node @node's kernel and pointer-sized parameters into the walk. */
static void add_kernel(struct walk *w, const void *node, const struct gg_device_kernel_node *p)
{
	const struct gg_kernel_layout *layout;
	struct gg_graph_kernel *k;
	int slot;

	if (w->n == GG_GRAPH_KERNELS) {
		unfollowed(w->g, GG_GRAPH_UNFOLLOWED_too_many, 1);
		return;
	}
	if (w->n == w->cap) {
		unsigned cap = w->cap ? 2 * w->cap : 8;
		struct gg_graph_kernel *grown = realloc(w->k, cap * sizeof(*grown));

		if (!grown) {
			unfollowed(w->g, GG_GRAPH_UNFOLLOWED_too_many, 1);
			return;
		}
		w->k = grown;
		w->cap = cap;
	}
	k = &w->k[w->n++];
	memset(k, 0, sizeof(*k));
	k->fn = p->fn;
	k->node = node;
	slot = gg_kernels_slot(p->fn);
	layout = gg_kernels_layout(slot);
	if (!layout || !layout->known)
		return; /* a launch whose addresses cannot be known: counted as such at each replay */
	unsigned top = 0;

	for (unsigned i = 0; i < layout->nptr; i++)
		top = layout->param[i] + 1u > top ? layout->param[i] + 1u : top;
	/* The array, then the values (the last one zero: every other entry
	 * points at it, only the layout's are read). */
	k->params = calloc(top + GG_KERNEL_PTRS + 1, sizeof(uint64_t));
	if (!k->params)
		return;
	uint64_t *words = (uint64_t *)(k->params + top);

	for (unsigned i = 0; i < top; i++)
		k->params[i] = &words[GG_KERNEL_PTRS];
	for (unsigned i = 0; i < layout->nptr && i < GG_KERNEL_PTRS; i++) {
		uint64_t v = 0;

		if (p->params && p->params[layout->param[i]])
			memcpy(&v, p->params[layout->param[i]], sizeof(v));
		else if (p->buffer && layout->offset[i] + sizeof(v) <= p->buffer_size)
			memcpy(&v, p->buffer + layout->offset[i], sizeof(v));
		words[i] = v;
		k->params[layout->param[i]] = &words[i];
	}
}

#define WALK_DEPTH 8 /* child graphs within child graphs followed */

static void walk_graph(struct walk *w, const void *graph, int depth)
{
	size_t n = 0;
	void **nodes;

	if (gg_device_graph_nodes(graph, NULL, &n)) {
		unfollowed(w->g, GG_GRAPH_UNFOLLOWED_driver, 1);
		return;
	}
	if (!n || !(nodes = calloc(n, sizeof(*nodes))))
		return;
	if (gg_device_graph_nodes(graph, nodes, &n)) {
		unfollowed(w->g, GG_GRAPH_UNFOLLOWED_driver, 1);
		free(nodes);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct gg_device_kernel_node p;
		void *child;
		int type;

		if (gg_device_graph_node_type(nodes[i], &type)) {
			unfollowed(w->g, GG_GRAPH_UNFOLLOWED_driver, 1);
		} else if (type == GG_DEVICE_NODE_KERNEL) {
			if (gg_device_graph_kernel(nodes[i], &p) || !p.fn)
				unfollowed(w->g, GG_GRAPH_UNFOLLOWED_params, 1);
			else
				add_kernel(w, nodes[i], &p);
		} else if (type == GG_DEVICE_NODE_GRAPH) {
			if (depth >= WALK_DEPTH || gg_device_graph_child(nodes[i], &child))
				unfollowed(w->g, GG_GRAPH_UNFOLLOWED_params, 1);
			else
				walk_graph(w, child, depth + 1);
		} else if (type == GG_DEVICE_NODE_CONDITIONAL) {
			unfollowed(w->g, GG_GRAPH_UNFOLLOWED_conditional, 1);
		}
	}
	free(nodes);
}

static void free_kernels(struct gg_graph_kernel *k, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(k[i].params);
	free(k);
}

/* The record of @exec, claimed if new; NULL when the table is full. Lock held. */
static struct gg_graph *claim(const void *exec)
{
	struct gg_graph *g = gg_graphs_find(exec), *free_slot = NULL;
	unsigned i = gg_graphs_hash(exec);

	if (g)
		return g;
	for (unsigned probe = 0; probe < GG_GRAPHS_MAX; probe++, i = (i + 1) % GG_GRAPHS_MAX) {
		uintptr_t e = atomic_load(&gg_graphs_table[i].exec);

		if (e <= 1) {
			free_slot = &gg_graphs_table[i];
			break;
		}
	}
	if (!free_slot)
		return NULL;
	struct gg_graph_kernel *old = free_slot->k;
	unsigned nold = free_slot->nkernels;

	/* A report naming a replay of the graph destroyed reads them: gone first. */
	free_slot->nkernels = 0;
	free_slot->k = NULL;
	free_kernels(old, nold);
	free_slot->unfollowed = 0;
	atomic_store(&free_slot->first, 0);
	atomic_store(&free_slot->last, 0);
	atomic_store(&free_slot->unchanged_at, GG_GRAPH_CHANGED);
	atomic_store_explicit(&free_slot->exec, (uintptr_t)exec, memory_order_release);
	return free_slot;
}

void gg_graphs_instantiated(const void *exec, const void *graph, bool device)
{
	struct walk w = { .g = NULL };
	struct gg_graph *g;

	if (!exec)
		return;
	pthread_mutex_lock(&graphs_state.lock);
	g = claim(exec);
	if (!g) {
		pthread_mutex_unlock(&graphs_state.lock);
		unfollowed(NULL, GG_GRAPH_UNFOLLOWED_too_many, 1);
		return;
	}
	struct gg_graph_kernel *old = g->k;
	unsigned nold = g->nkernels;

	g->k = NULL;
	g->nkernels = 0;
	g->unfollowed = 0;
	w.g = g;
	walk_graph(&w, graph, 0);
	/* An update: cuGraphExecKernelNodeSetParams still names the nodes of the
	 * graph first instantiated, paired in order (the topology is the same). */
	for (unsigned i = 0; old && nold == w.n && i < w.n; i++)
		w.k[i].node = old[i].node;
	free_kernels(old, nold);
	if (device) /* its device-side launches are replays the host never sees */
		unfollowed(g, GG_GRAPH_UNFOLLOWED_device_launch, 1);
	g->k = w.k;
	g->nkernels = w.n;
	atomic_fetch_add_explicit(&g->version, 1, memory_order_seq_cst);
	atomic_store(&g->unchanged_at, GG_GRAPH_CHANGED); /* after: redzone/replays.c */
	pthread_mutex_unlock(&graphs_state.lock);
}

void gg_graphs_node_set(const void *exec, const void *node, const void *params, bool v2)
{
	struct gg_device_kernel_node p;
	struct gg_graph *g;

	unsigned i = 0;

	pthread_mutex_lock(&graphs_state.lock);
	g = gg_graphs_find(exec);
	while (g && i < g->nkernels && g->k[i].node != node)
		i++;
	if (g && i < g->nkernels) {
		struct walk w = { .g = g };

		gg_device_kernel_node_of(params, v2, &p);
		add_kernel(&w, node, &p);
		if (w.n == 1) {
			free(g->k[i].params);
			g->k[i] = w.k[0];
		}
		free(w.k);
	}
	/* A node the record does not know (one the shim never saw): its kernel
	 * runs with parameters the shim has not read. Noted in the record before
	 * the version moves, so a replay that sees the new version sees it too
	 * (redzone/replays.c publishes no fast path for such a graph); counted
	 * and said once the lock is let go. */
	bool unknown = g && i == g->nkernels;

	if (unknown)
		g->unfollowed++;
	if (g) {
		atomic_fetch_add_explicit(&g->version, 1, memory_order_seq_cst);
		atomic_store(&g->unchanged_at, GG_GRAPH_CHANGED); /* after: redzone/replays.c */
	}
	pthread_mutex_unlock(&graphs_state.lock);
	if (unknown)
		unfollowed(NULL, GG_GRAPH_UNFOLLOWED_params, 1);
}

void gg_graphs_destroyed(const void *exec)
{
	struct gg_graph *g;

	pthread_mutex_lock(&graphs_state.lock);
	if ((g = gg_graphs_find(exec))) {
		/* Its kernels stay readable (a report may be naming one): freed when
		 * the record is claimed again. */
		atomic_store_explicit(&g->exec, 1, memory_order_release);
	}
	pthread_mutex_unlock(&graphs_state.lock);
}

void gg_graphs_replayed_unfollowed(const struct gg_graph *g)
{
	if (!g) /* once per replay: its nodes are not known at all */
		unfollowed(NULL, GG_GRAPH_UNFOLLOWED_unknown, 1);
	atomic_fetch_add_explicit(&graphs_state.replays, 1, memory_order_relaxed);
}

void gg_graphs_unfollowed(uint64_t *by_reason, uint64_t *replays)
{
	for (int i = 0; i < GG_GRAPH_UNFOLLOWED_COUNT; i++)
		by_reason[i] = atomic_load_explicit(&graphs_state.unfollowed[i], memory_order_relaxed);
	*replays = atomic_load_explicit(&graphs_state.replays, memory_order_relaxed);
}

atomic_uint gg_graphs_captures;

void gg_graphs_capture_begun(void)
{
	atomic_fetch_add_explicit(&gg_graphs_captures, 1, memory_order_relaxed);
}

bool gg_graphs_stream_capturing(void *stream)
{
	bool active = false;

	return !gg_device_capture_active(stream, &active) && active;
}

bool gg_graphs_stream_in_capture(void *stream)
{
	bool in = false;

	return !gg_device_capturing(stream, &in) && in;
}

void gg_graphs_capture_ended(void *stream, bool was)
{
	unsigned n = atomic_load(&gg_graphs_captures);

	/* Ended, whatever the driver answered, once the stream captures no more
	 * (an invalidated capture ends with an error too). */
	if (was && !gg_graphs_stream_in_capture(stream))
		while (n && !atomic_compare_exchange_weak(&gg_graphs_captures, &n, n - 1))
			;
}

void gg_graphs_atfork_child(void)
{
	atomic_store(&gg_graphs_captures, 0);
	pthread_mutex_init(&graphs_state.lock, NULL);
	for (unsigned i = 0; i < GG_GRAPHS_MAX; i++)
		if (atomic_load(&gg_graphs_table[i].exec) > 1)
			atomic_store(&gg_graphs_table[i].exec, 1);
}
