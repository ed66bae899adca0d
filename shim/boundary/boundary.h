/* Boundaries (SPEC §5): a red-zone scan, the gate and seal, then the reports. */
#ifndef GG_BOUNDARY_H
#define GG_BOUNDARY_H

#include <stddef.h>
#include <stdint.h>

#include "options/config.h"

struct gg_config;

/* Parse GPUGUARD_BOUNDARY. Set-up only; a bad item is reported as WARN. */
void gg_boundary_configure(const struct gg_config *cfg);

/* A kernel launch is about to be forwarded / a context synchronize returned. */
uint64_t gg_boundary_on_launch(void); /* the launch's index: 1, 2, ... */
void gg_boundary_on_sync(void);

/* Run one boundary now; @why names its event ("launch:3", "signal"). */
void gg_boundary_run(const char *why);

/* Counters for the reports. */
uint64_t gg_boundary_launches(void);

/* The events parsed from GPUGUARD_BOUNDARY (after: ones go to the watcher). */
const struct gg_boundary_events *gg_boundary_events(void);

void gg_boundary_atfork_prepare(void);
void gg_boundary_atfork_parent(void);
void gg_boundary_atfork_child(void);

#endif
