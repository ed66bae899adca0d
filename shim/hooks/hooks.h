/* Internal interface of shim/hooks/: the hook table and how real driver
 * functions are found. The only place CUresult appears. */
#ifndef GG_HOOKS_H
#define GG_HOOKS_H

#include <stdatomic.h>
#include <stdbool.h>

#include "hooks/cuda-api.h"

enum gg_hook_id {
#define GG_HOOK(name, pfn, params, args) GG_ID_##name,
#include "hooks/hooks.def"
#undef GG_HOOK
	GG_HOOK_COUNT
};

/* gg_pfn_NAME, and the wrapper gg_hook_NAME that is exported as NAME. */
#define GG_HOOK(name, pfn, params, args) typedef pfn gg_pfn_##name; CUresult gg_hook_##name params;
#include "hooks/hooks.def"
#undef GG_HOOK

/* The driver's function for @id, resolved on first use and cached: the driver
 * is often dlopen()ed long after the shim starts. NULL while there is none.
 * Inline, as every hook calls it; gg_real_resolve() is the slow path. */
extern _Atomic(void *) gg_real_fns[GG_HOOK_COUNT];
void *gg_real_resolve(enum gg_hook_id id);

static inline void *gg_real_get(enum gg_hook_id id)
{
	void *fn = atomic_load_explicit(&gg_real_fns[id], memory_order_acquire);

	return __builtin_expect(fn != NULL, 1) ? fn : gg_real_resolve(id);
}

/* Remember @fn as the driver's function for @id when none is known yet. */
void gg_real_note(enum gg_hook_id id, void *fn);

/* glibc's dlsym, found with dlvsym (never through the public dlsym). */
void *gg_real_dlsym(void);

/* The hook's id for an exact driver export name, or -1. */
int gg_hooks_id(const char *name);
const char *gg_hooks_name(enum gg_hook_id id);

/* Our wrapper of hooked export @id. */
void *gg_hooks_wrapper(enum gg_hook_id id);

/* Whether @addr lies in the shim's own object / in a driver object (libcuda.so*). */
bool gg_hooks_in_shim(const void *addr);
bool gg_hooks_in_driver(const void *addr);

/* For cuGetProcAddress: @fn as returned by the real @gpa; our wrapper when @fn is
 * the address of a hooked export of the driver that holds @gpa, else @fn. */
void *gg_hooks_swap_proc(void *gpa, void *fn);

/* After fork, in the child: locks start free. */
void gg_hooks_atfork_child(void);

/* At exit (verbosity 2): the per-entry-point call counts. A forked child
 * forgets its parent's. */
void gg_hooks_report_calls(void);

/* Whether this thread is inside a hook: a signal handler (or a driver
 * callback) that runs there may interrupt a lock of the shim's. */
bool gg_hooks_inside(void);
void gg_hooks_forget_calls(void);

/* Name of a CUresult ("CUDA_ERROR_NOT_FOUND"); "CUDA_ERROR_UNKNOWN_CODE" if none. */
const char *gg_hooks_result_name(CUresult rc);

#endif
