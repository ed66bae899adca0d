/* Boundaries (SPEC §5): a red-zone scan, the gate and seal, then the reports. */
#ifndef GG_BOUNDARY_H
#define GG_BOUNDARY_H

#include <stdatomic.h>
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

/* Launch @n may be a launch:N event: fire it when it is. */
void gg_boundary_launch_event(uint64_t n);

/* A kernel launch is about to be forwarded: its index, 1, 2, ... */
static inline uint64_t gg_boundary_on_launch(void)
{
	uint64_t n = atomic_fetch_add_explicit(&gg_boundary_launch_counter.count, 1,
					       memory_order_relaxed) + 1;

	if (__builtin_expect(gg_boundary_launch_counter.mask >> (n & 63) & 1, 0))
		gg_boundary_launch_event(n);
	return n;
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
