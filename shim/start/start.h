/* Start-up of the shim: the one-time set-up on first real use, exit and fork.
 * Below the entry points (hooks/), which start it on their first call. */
#ifndef GG_SHIM_START_START_H
#define GG_SHIM_START_START_H

#include <stdbool.h>

/* GPUGUARD_DISABLE=1, read once; reads nothing else and sets nothing up. */
bool gg_start_disabled(void);

/* Called by every hook: on the first call of the process, reads the
 * configuration and opens the log. False when the shim is disabled. */
bool gg_start_active(void);

/* Whether hook @id (enum gg_hook_id) has no work in this configuration, so
 * the routes hand out the driver's own function. Reads the configuration
 * once; sets nothing up. */
bool gg_start_hook_idle(int id);

#include <stdatomic.h>

#include "start/start-mode.h"
extern atomic_int gg_start_mode;

/* A byte per hook (enum gg_hook_id): 1 when its wrapper has no work on any
 * route in this configuration, so even the exported entry point jumps
 * straight to the driver. Written by set-up before the mode says ACTIVE,
 * read-only after; read by every exported entry point. */
extern unsigned char gg_start_pass[];

/* gg_start_active() in one load when the shim is set up (the hot path). */
static inline bool gg_start_ready(void)
{
	int mode = atomic_load_explicit(&gg_start_mode, memory_order_acquire);

	if (__builtin_expect(mode == GG_MODE_ACTIVE, 1))
		return true;
	return mode != GG_MODE_DISABLED && gg_start_active();
}

/* _exit (@which 0) or _Exit (1) of @status: the reports first, like exit()
 * (test-fork.c), then the C library's. */
__attribute__((noreturn)) void gg_start_exit(int which, int status);

#endif
