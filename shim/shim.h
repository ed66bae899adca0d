/* Start-up of the shim: the one-time set-up on first real use, exit and fork. */
#ifndef GG_SHIM_H
#define GG_SHIM_H

#include <stdbool.h>

/* GPUGUARD_DISABLE=1, read once; reads nothing else and sets nothing up. */
bool gg_shim_disabled(void);

/* Called by every hook: on the first call of the process, reads the
 * configuration and opens the log. False when the shim is disabled. */
bool gg_shim_active(void);

#include <stdatomic.h>

enum { GG_MODE_UNSET, GG_MODE_ACTIVE, GG_MODE_DISABLED, GG_MODE_FORKED };
extern atomic_int gg_shim_mode;

/* gg_shim_active() in one load when the shim is set up (the hot path). */
static inline bool gg_shim_ready(void)
{
	int mode = atomic_load_explicit(&gg_shim_mode, memory_order_acquire);

	if (__builtin_expect(mode == GG_MODE_ACTIVE, 1))
		return true;
	return mode != GG_MODE_DISABLED && gg_shim_active();
}

/* Write the reports (JSON, metrics), then abort(): every abort of the shim. */
__attribute__((noreturn)) void gg_shim_fatal(void);

#endif
