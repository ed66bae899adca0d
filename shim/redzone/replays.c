/* Replays of CUDA graphs (docs/how-it-works.md, "CUDA graphs"): each kernel node
 * of an executable graph is a launch, routed through the launches' own functions (redzone.c
 * gg_redzone_launched: suspects, and with a quarantine dangling launches)
 * with an index of its own.
 *
 * Servers replay the same graph with the same parameters thousands of times:
 * such a replay changes nothing the zones hold but which launch is the
 * latest. A memo per executable graph (its record, handles/graphs.h) keeps the
 * replay whose launches the zones were given (@first) and the latest one with
 * the same parameters (@last); a suspect entry of node k of @first stands for
 * launch k of @last (gg_redzone_replay_index). The memo holds while the
 * graph's version (its nodes' parameters) and the red zones' generation (a
 * band given, a suspect list cleared, an allocation quarantined, a module
 * unloaded) are those it was made at: then a replay touches no zone. */
#include "redzone/redzone.h"
#include "redzone/replays.h"

#include <stdatomic.h>

#include "base/gg.h"
#include "handles/graphs.h"

/* Memos a graph's update retired: their suspect entries still stand for
 * their last replay. A small ring per process: an entry older than it names
 * the replay the zones were given, an earlier launch of the same kernel. */
#define RETIRED 16
static struct {
	atomic_uint_fast64_t first[RETIRED], last[RETIRED], n[RETIRED]; /* lock-free */
	atomic_uint next;
} replays_state;

static void retire(const struct gg_graph *g, unsigned n)
{
	uint64_t first = atomic_load(&g->first), last = atomic_load(&g->last);
	unsigned i;

	if (!first || last == first)
		return;
	i = atomic_fetch_add(&replays_state.next, 1) % RETIRED;
	atomic_store(&replays_state.first[i], 0);
	atomic_store(&replays_state.n[i], n);
	atomic_store(&replays_state.last[i], last);
	atomic_store(&replays_state.first[i], first);
}

/* Every launch of a replay, given now (before it is forwarded): where the
 * quarantine (a pointer into a freed allocation held back) finds a dangling
 * launch, as it does for any launch, before the graph runs. */
static void give_all(struct gg_graph *g, uint64_t first, void *stream)
{
	for (unsigned k = 0; k < g->nkernels; k++)
		gg_redzone_launched(&(struct gg_redzone_launch){ .fn = g->k[k].fn,
								 .params = g->k[k].params,
								 .stream = stream,
								 .index = first + k,
								 .unforwarded = true,
								 .node = g->k[k].node });
}

static const atomic_uint_fast64_t zero;
struct gg_redzone_replay_hot gg_redzone_replay_hot = { /* redzone.c sets it */
						       .generation = &zero,
						       .epoch = &zero
};

/* @g's memo holds, as of @key, or nothing is to be given: say so at
 * @g->unchanged_at (replays.h), where a replay with nothing else to do
 * reads it, unless it is checked or has nodes not followed. Its version is
 * read again after the store (both sequentially consistent, as the change's
 * increment and reset in handles/graphs.c): a change of its nodes made since
 * @version was read resets it after this store, or is seen here. cuda.h
 * asks the application to serialise a replay with a change of the same
 * graph anyway; this keeps the shim's memo right even when it does not. */
static void publish(struct gg_graph *g, unsigned version, uint64_t key)
{
	if (gg_redzone_replay_hot.checking || g->unfollowed || !g->nkernels)
		return;
	atomic_store(&g->unchanged_at, key);
	if (atomic_load(&g->version) != version)
		atomic_store(&g->unchanged_at, GG_GRAPH_CHANGED);
}

void gg_redzone_replaying(struct gg_graph *g, uint64_t first, void *stream)
{
	unsigned version = atomic_load(&g->version);
	uint64_t key = gg_redzone_replay_key();

	if (!gg_redzone_replay_hot.following) {
		publish(g, version, key); /* nothing to give: only indices and the ring */
		return;
	}
	if (atomic_flag_test_and_set_explicit(&g->busy, memory_order_acquire)) {
		give_all(g, first, stream); /* another replay of it holds the memo */
		return;
	}
	if (GG_LIKELY(g->memo_version == version && g->memo_generation == key &&
		      atomic_load_explicit(&g->first, memory_order_relaxed))) {
		atomic_store_explicit(&g->last, first, memory_order_release);
	} else {
		/* The version changed: the entries of the old memo keep their meaning. */
		if (g->memo_version != version)
			retire(g, g->memo_nkernels);
		give_all(g, first, stream);
		g->memo_version = version;
		g->memo_generation = key; /* read before the zones were written */
		g->memo_nkernels = g->nkernels;
		atomic_store(&g->last, first);
		atomic_store(&g->first, first);
	}
	publish(g, version, key); /* under @busy: after @first, with the key it holds at */
	atomic_flag_clear_explicit(&g->busy, memory_order_release);
}

void gg_redzone_replayed(struct gg_graph *g, uint64_t first, void *stream)
{
	if (!gg_redzone_replay_hot.checking)
		return;
	for (unsigned k = 0; k < g->nkernels; k++)
		gg_redzone_launch_check(&(struct gg_redzone_launch){ .fn = g->k[k].fn,
								     .params = g->k[k].params,
								     .stream = stream,
								     .index = first + k });
}

/* @launch as launch @k of a memo [first, first + n) stands for launch k of last. */
static uint64_t mapped(uint64_t launch, uint64_t first, uint64_t last, uint64_t n)
{
	return first && launch >= first && launch - first < n && last > first ? last + (launch - first)
									      : launch;
}

uint64_t gg_redzone_replay_index(uint64_t launch)
{
	uint64_t best = launch;

	for (unsigned i = 0; i < GG_GRAPHS_MAX; i++) {
		const struct gg_graph *g = &gg_graphs_table[i];
		uint64_t m;

		if (!atomic_load_explicit(&g->exec, memory_order_acquire))
			continue;
		m = mapped(launch, atomic_load(&g->first), atomic_load(&g->last), g->memo_nkernels);
		best = m > best ? m : best;
	}
	for (unsigned i = 0; i < RETIRED; i++) {
		uint64_t m = mapped(launch, atomic_load(&replays_state.first[i]),
				    atomic_load(&replays_state.last[i]),
				    atomic_load(&replays_state.n[i]));

		best = m > best ? m : best;
	}
	return best;
}
