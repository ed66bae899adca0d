/* The executable graphs the shim follows (docs/how-it-works.md, "CUDA graphs": a
 * replay of a CUDA graph is a launch of each of its kernel nodes). Each CUgraphExec gets a record
 * when it is instantiated: its kernel nodes, each read once from the driver
 * (cuGraphGetNodes, cuGraphKernelNodeGetParams, child graphs walked), their
 * pointer-sized parameters copied. An update (cuGraphExecUpdate,
 * cuGraphExecKernelNodeSetParams) reads them again and changes @version; a
 * replay reads the record only. What cannot be followed is counted by reason.
 *
 * Records live in a fixed table (never freed: a report may read one while
 * its graph is destroyed); the hooks serialise what the application does to
 * one executable graph, as cuda.h asks of it. */
#ifndef GG_SHIM_HANDLES_GRAPHS_H
#define GG_SHIM_HANDLES_GRAPHS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "handles/kernels.h"
#include "report/report.h"

#define GG_GRAPHS_MAX 1024    /* executable graphs followed at once */
#define GG_GRAPH_KERNELS 1024 /* kernel nodes followed per graph */

/* One kernel node, as a launch of it is handed to the red zones: @params is
 * a kernelParams array whose pointer-sized parameters (by the kernel's
 * layout) point at copies of their values, in the same allocation (so the
 * entry may move); NULL when the layout is unknown. */
struct gg_graph_kernel {
	const void *fn;   /* the CUfunction, or the CUkernel */
	const void *node; /* the node of the graph instantiated (cuGraphExecKernelNodeSetParams) */
	void **params;
};

struct gg_graph {
	atomic_uintptr_t exec; /* the CUgraphExec; 0: free, 1: destroyed */
	atomic_uint version;   /* changed by each change of its kernel nodes */
	unsigned nkernels;
	unsigned unfollowed;       /* nodes of it not followed (see the reasons' counters) */
	struct gg_graph_kernel *k; /* nkernels of them */
	/* The red zones' replay memo (redzone/replays.c), under @busy. */
	atomic_flag busy;
	unsigned memo_version;
	unsigned memo_nkernels;
	uint64_t memo_generation;
	atomic_uint_fast64_t first; /* the replay whose launches the zones were given */
	atomic_uint_fast64_t last;  /* the latest replay with the same parameters */
	/* The replay key (redzone/replays.h) at which a replay of it has nothing
	 * to do but take its indices, say it is the memo's latest and take its
	 * ring entry; GG_GRAPH_CHANGED when not known to be so. Lock-free: set by
	 * a replay, reset by each change of its nodes (after @version). */
	atomic_uint_fast64_t unchanged_at;
};
#define GG_GRAPH_CHANGED UINT64_MAX /* no key is it */

/* @exec was instantiated from @graph (or updated from it: @graph's nodes
 * replace the record's); @device: for device launch. */
void gg_graphs_instantiated(const void *exec, const void *graph, bool device);
/* cuGraphExecKernelNodeSetParams took @params (a CUDA_KERNEL_NODE_PARAMS_v1,
 * or _v2 when @v2) for @node of @exec. */
void gg_graphs_node_set(const void *exec, const void *node, const void *params, bool v2);
void gg_graphs_destroyed(const void *exec);

/* The record of @exec, or NULL. Lock-free. */
static inline unsigned gg_graphs_hash(const void *exec)
{
	uintptr_t h = (uintptr_t)exec;

	return (unsigned)((h >> 4) ^ (h >> 14)) % GG_GRAPHS_MAX;
}
extern struct gg_graph gg_graphs_table[GG_GRAPHS_MAX];
static inline struct gg_graph *gg_graphs_find(const void *exec)
{
	unsigned i = gg_graphs_hash(exec);

	for (unsigned probe = 0; probe < GG_GRAPHS_MAX; probe++, i = (i + 1) % GG_GRAPHS_MAX) {
		uintptr_t e = atomic_load_explicit(&gg_graphs_table[i].exec, memory_order_acquire);

		if (e == (uintptr_t)exec)
			return &gg_graphs_table[i];
		if (!e)
			return NULL;
	}
	return NULL;
}

/* The record of the graph this thread replayed last: a replay loop replays
 * the same one, found again without the hash's probe. A record's @exec says
 * whether it still stands for @exec (a destroy, a reuse or a fork change it). */
extern __thread struct gg_graph *gg_graphs_last __attribute__((tls_model("initial-exec")));
static inline struct gg_graph *gg_graphs_find_replayed(const void *exec)
{
	struct gg_graph *g = gg_graphs_last;

	if (__builtin_expect(
		    g && atomic_load_explicit(&g->exec, memory_order_acquire) == (uintptr_t)exec, 1))
		return g;
	if ((g = gg_graphs_find(exec)))
		gg_graphs_last = g;
	return g;
}

/* Nodes not followed, by reason (GG_GRAPH_UNFOLLOWED_*, report/report.h);
 * replays of graphs with such nodes. */
void gg_graphs_unfollowed(uint64_t *by_reason, uint64_t *replays);
/* A replay of @g (NULL: a graph the shim has no record of) was forwarded. */
void gg_graphs_replayed_unfollowed(const struct gg_graph *g);

/* Captures under way (begun, not yet ended): while there are none, no
 * launch is on a capturing stream, and none asks. */
extern atomic_uint gg_graphs_captures;
void gg_graphs_capture_begun(void);
/* Whether @stream takes part in a capture, invalidated or not. */
bool gg_graphs_stream_in_capture(void *stream);
/* An end of capture was asked on @stream, which was in one (@was). */
void gg_graphs_capture_ended(void *stream, bool was);
bool gg_graphs_stream_capturing(void *stream);
/* Whether a launch on @stream is captured into a graph, not run. */
static inline bool gg_graphs_captured(void *stream)
{
	return __builtin_expect(atomic_load_explicit(&gg_graphs_captures, memory_order_relaxed) != 0,
				0) &&
	       gg_graphs_stream_capturing(stream);
}

/* A forked child: none of its parent's graphs (they are the parent's handles). */
void gg_graphs_atfork_child(void);

#endif
