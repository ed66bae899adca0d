/* The fast path of a graph's replay (redzone/replays.c), read inline by the
 * replay hook: a replay with the same parameters as the last one, while
 * nothing the red zones hold changed, only says it is the latest. */
#ifndef GG_SHIM_REDZONE_REPLAYS_H
#define GG_SHIM_REDZONE_REPLAYS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/gg.h"
#include "handles/graphs.h"

/* Set when the red zones are configured, read-only after (the counters they
 * point to change); before, both point to a zero. */
struct gg_redzone_replay_hot {
	bool following;                         /* red zones on: launches name their suspects */
	bool checking;                          /* and GPUGUARD_CHECK_LAUNCHES: replays are checked */
	const atomic_uint_fast64_t *generation; /* redzone.c's: a band given, a list cleared */
	const atomic_uint_fast64_t *epoch;      /* the kernels' (handles/kernels.h) */
};
extern struct gg_redzone_replay_hot gg_redzone_replay_hot;

/* The replay key: the red zones' generation and the kernels' epoch (a
 * module unloaded: a slot may stand for another handle), what a memo was
 * made at. Never GG_GRAPH_CHANGED (the epoch stays below 2^24). */
static inline uint64_t gg_redzone_replay_key(void)
{
	return atomic_load_explicit(gg_redzone_replay_hot.generation, memory_order_acquire) +
	       (atomic_load_explicit(gg_redzone_replay_hot.epoch, memory_order_acquire) << 40);
}

/* Whether a replay of @g now has nothing to do but its indices, its memo's
 * latest and its ring entry: no check after it, all its nodes followed, and
 * with red zones its memo holds (its version and the key are those the memo
 * was made at). One load and one compare: gg_redzone_replaying sets
 * @g->unchanged_at to the key only when all that is so, and each change of
 * its nodes resets it (handles/graphs.c). The acquire pairs with that
 * store's release: the memo's @first is then visible. */
static inline bool gg_redzone_replay_unchanged(struct gg_graph *g)
{
	return atomic_load_explicit(&g->unchanged_at, memory_order_acquire) == gg_redzone_replay_key();
}

/* Replay @first of @g, found unchanged: the memo's latest. A relaxed store
 * (no flag taken): a replay that remakes the memo concurrently stores
 * @first and @last after it read a key this replay did not match, or this
 * replay is ordered before that change; either way @last is a replay of the
 * same kernels with the same parameters, and gg_redzone_replay_index maps
 * only a @last above @first. */
static inline void gg_redzone_replay_latest(struct gg_graph *g, uint64_t first)
{
	atomic_store_explicit(&g->last, first, memory_order_relaxed);
}

#endif
