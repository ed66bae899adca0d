/* What every file of hook work shares (hooks.c, copies.c): the work
 * functions' declarations and the pass-through test. */
#ifndef GG_SHIM_HOOKS_WORK_H
#define GG_SHIM_HOOKS_WORK_H

#include <stdatomic.h>
#include <stdbool.h>

#include "base/gg.h"
#include "driver/real.h"
#include "start/start.h"

/* A hook's work, out of line: the exported entry point (hooks.c, or
 * entry-x86_64.S) jumps to it unless it can pass straight through. */
#define GG_WORK __attribute__((noinline))
#define GG_HOOK(name, pfn, params, args) GG_WORK CUresult gg_hooks_work_##name params;
#include "driver/hooks.def"
#undef GG_HOOK

/* False: pass straight through (disabled, or re-entered from the driver or
 * from a signal handler that interrupted the shim's work on this thread,
 * set-up included: driver/real.h). */
static inline bool gg_hooks_enter(enum gg_hook_id id)
{
	if (GG_UNLIKELY(gg_real_inside) || !gg_start_ready())
		return false;
	gg_real_inside = 1;
	atomic_signal_fence(memory_order_seq_cst);
	if (GG_UNLIKELY(gg_real_counting))
		atomic_fetch_add_explicit(&gg_real_calls[id], 1, memory_order_relaxed);
	return true;
}

static inline void gg_hooks_leave(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	gg_real_inside = 0;
}

#endif
