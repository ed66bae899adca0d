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
 * point to change). */
struct gg_redzone_replay_hot {
	bool following; /* red zones on: launches name their suspects */
	bool checking;  /* and GPUGUARD_CHECK_LAUNCHES: replays are checked */
	const atomic_uint_fast64_t *generation; /* redzone.c's: a band given, a list cleared */
	const atomic_uint_fast64_t *epoch;      /* the kernels' (handles/kernels.h) */
};
extern struct gg_redzone_replay_hot gg_redzone_replay_hot;

/* What a memo was made at: the red zones' generation and the kernels' epoch
 * (a module unloaded: a slot may stand for another handle). */
static inline uint64_t gg_redzone_replay_generation(void)
{
	return atomic_load_explicit(gg_redzone_replay_hot.generation, memory_order_acquire) +
	       (atomic_load_explicit(gg_redzone_replay_hot.epoch, memory_order_acquire) << 40);
}

/* Whether replay @first of @g has nothing to give (red zones off, or its
 * memo holds: then it is the memo's latest). */
static inline bool gg_redzone_replay_unchanged(struct gg_graph *g, uint64_t first)
{
	uint64_t generation;
	unsigned version;
	bool holds;

	if (!gg_redzone_replay_hot.following)
		return true;
	generation = gg_redzone_replay_generation();
	version = atomic_load_explicit(&g->version, memory_order_acquire);
	if (atomic_flag_test_and_set_explicit(&g->busy, memory_order_acquire))
		return false; /* another replay of it holds the memo */
	holds = g->memo_version == version && g->memo_generation == generation &&
		atomic_load_explicit(&g->first, memory_order_relaxed);
	if (GG_LIKELY(holds))
		atomic_store_explicit(&g->last, first, memory_order_release);
	atomic_flag_clear_explicit(&g->busy, memory_order_release);
	return holds;
}

#endif
