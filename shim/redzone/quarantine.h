/* The quarantine (GPUGUARD_QUARANTINE): freed guarded allocations held back
 * from the driver, filled with the free byte, first in first out by bytes;
 * each one's fill is checked when it leaves (write_after_free), and a launch
 * given a pointer into one is a dangling launch (redzone.c). */
#ifndef GG_SHIM_REDZONE_QUARANTINE_H
#define GG_SHIM_REDZONE_QUARANTINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "redzone/registry.h"

/* One allocation held back. */
struct gg_quarantine_entry {
	uint64_t ptr;        /* what the application got, and freed */
	uint64_t user;       /* its bytes, filled with @fill */
	uint64_t held;       /* what it holds back: @user and its band */
	void *ctx;           /* its context (the driver's handle) */
	void *stream;        /* a stream-ordered free's stream; NULL: cuMemFree_v2 */
	void *event;         /* recorded after the fill on @stream; NULL: none */
	void *read_stream;   /* the context's private stream, to read the fill through */
	const char *api;     /* the free the application called */
	uint32_t free_stack; /* callsite/depot.h */
	uint16_t ctx_slot;   /* its context's slot in redzone.c */
	uint8_t fill;
};

/* During set-up: @size bytes at most are held back (0: none), filled with @fill. */
void gg_quarantine_configure(uint64_t size, uint8_t fill);

/* The configured bytes (0: off) and byte. */
uint64_t gg_quarantine_size(void);
uint8_t gg_quarantine_fill(void);

/* How many allocations are held now, read inline by the launch hooks (a
 * launch while none is held costs one load): the rest of the quarantine's
 * state is quarantine.c's. Written under its lock. */
extern atomic_uint_fast64_t gg_quarantine_count;

/* Whether anything is held now (lock-free; a launch asks). */
static inline bool gg_quarantine_any(void)
{
	return atomic_load_explicit(&gg_quarantine_count, memory_order_relaxed) != 0;
}

/* Hold @e (its zone is already flagged GG_ZONE_QUARANTINED in the registry),
 * then release the oldest while more than the configured size is held.
 * 0, or -ENOMEM: not held (the caller frees it as without a quarantine). */
int gg_quarantine_hold(const struct gg_quarantine_entry *e);

/* Release every allocation held (of context slot @ctx_slot; -1: all), each
 * after its fill is checked; @why names the finding's detected_by ("scan",
 * "teardown", "exit", "out_of_memory"). @dead: the context is gone, nothing
 * can be read or freed (counted unchecked). Returns how many were released. */
uint64_t gg_quarantine_release(int ctx_slot, const char *why, bool dead);

/* The entry holding @ptr (its start). 0 or -ENOENT. */
int gg_quarantine_find(uint64_t ptr, struct gg_quarantine_entry *out);

/* The quarantine's figures. */
struct gg_quarantine_stats {
	uint64_t held, held_bytes;  /* now: allocations, and their bytes with their bands */
	uint64_t held_user;         /* now: their user bytes */
	uint64_t entered, released; /* allocations so far */
	uint64_t checked_bytes, unchecked_bytes; /* of released fills: read, and not read */
	uint64_t oom_releases;     /* allocations released so that a request could be retried */
	uint64_t release_failures; /* releases the driver refused (the memory is lost to it) */
};
void gg_quarantine_stats(struct gg_quarantine_stats *out);

/* An allocation failed for want of memory: release everything held (fills
 * checked) so it can be retried. True when anything was released. */
bool gg_quarantine_out_of_memory(void);

/* Whether hook @id (enum gg_hook_id) is a driver call other than an
 * allocation hook that can run out of device memory: its hook asks again
 * after gg_quarantine_out_of_memory() (the list, and why, in quarantine.c). */
bool gg_quarantine_drains(int id);

/* Fork: the lock is held across fork(); the child starts empty (what is held
 * is its parent's). */
void gg_quarantine_atfork_prepare(void);
void gg_quarantine_atfork_parent(void);
void gg_quarantine_atfork_child(void);

#endif
