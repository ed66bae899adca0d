/* Boundaries (docs/how-it-works.md, "Boundaries, signals, exit"): a red-zone scan, the gate
 * and seal, then the reports. */
#ifndef GG_SHIM_BOUNDARY_BOUNDARY_H
#define GG_SHIM_BOUNDARY_BOUNDARY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "options/config.h"

struct gg_config;

/* Parse GPUGUARD_BOUNDARY. Set-up only; a bad item is reported as WARN. */
void gg_boundary_configure(const struct gg_config *cfg);

/* The launch count, read inline by the launch hooks (issue 16): the rest of
 * the module's state is boundary.c's. @mask has bit N % 64 set for each
 * launch:N event, so one launch in 64 per event looks at the list. */
struct gg_boundary_launch_counter {
	atomic_uint_fast64_t count; /* lock-free */
	uint64_t mask;              /* written during set-up; read-only after */
};
extern struct gg_boundary_launch_counter gg_boundary_launch_counter;

/* Launch @n may be a launch:N event: fire it when it is (then true). */
bool gg_boundary_launch_event(uint64_t n);

/* A kernel launch is about to be forwarded: its index, 1, 2, ... */
static inline uint64_t gg_boundary_on_launch(void)
{
	uint64_t n = atomic_fetch_add_explicit(&gg_boundary_launch_counter.count, 1,
					       memory_order_relaxed) +
		     1;

	if (__builtin_expect(gg_boundary_launch_counter.mask >> (n & 63) & 1, 0))
		(void)gg_boundary_launch_event(n);
	return n;
}

/* Launches @first .. @first + @n - 1 were taken: each launch:N among them
 * fires. Only the launches whose number has an event's bit (N % 64) are
 * looked at, whatever the replay's number of launches. Whether one fired. */
static inline bool gg_boundary_launches_fire(uint64_t first, uint64_t n)
{
	bool any = false;

	for (uint64_t m = gg_boundary_launch_counter.mask; __builtin_expect(m != 0, 0); m &= m - 1)
		for (uint64_t i = first + (((uint64_t)__builtin_ctzll(m) - first) & 63); i < first + n;
		     i += 64)
			any |= gg_boundary_launch_event(i);
	return any;
}

/* Whether an event's bit (N % 64) is among launches @first .. @first + @n
 * - 1: the mask turned so that bit j stands for launch @first + j. */
static inline bool gg_boundary_launches_any(uint64_t first, uint64_t n)
{
	uint64_t m = gg_boundary_launch_counter.mask;
	unsigned s = (unsigned)first & 63;

	m = m >> s | m << ((64 - s) & 63);
	return n >= 64 || (m & ((UINT64_C(1) << n) - 1));
}

/* The @n (> 0) launches of a graph's replay are about to be forwarded: the
 * first's index (the others follow it); each launch:N among them fires.
 * _take only takes the indices, for a caller that tests @mask itself. */
static inline uint64_t gg_boundary_launches_take(uint64_t n)
{
	return atomic_fetch_add_explicit(&gg_boundary_launch_counter.count, n, memory_order_relaxed) +
	       1;
}
static inline uint64_t gg_boundary_on_launches(uint64_t n)
{
	uint64_t first = gg_boundary_launches_take(n);

	(void)gg_boundary_launches_fire(first, n);
	return first;
}

/* A context synchronize returned. */
void gg_boundary_on_sync(void);

/* Run one boundary now; @why names its event ("launch:3", "signal"). */
void gg_boundary_run(const char *why);

/* Run a boundary labelled @label (gpuguard_boundary): the errors found
 * since the labelled boundary before it. */
uint64_t gg_boundary_label(const char *label);

/* Counters for the reports. */
uint64_t gg_boundary_launches(void);

/* The events parsed from GPUGUARD_BOUNDARY (after: ones go to the watcher). */
const struct gg_boundary_events *gg_boundary_events(void);

void gg_boundary_atfork_prepare(void);
void gg_boundary_atfork_parent(void);
void gg_boundary_atfork_child(void);

#endif
