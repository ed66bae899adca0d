/* The real driver functions behind the hooks: one id per hooked name (from
 * driver/hooks.def, the one list of them), found lazily and cached, and the
 * per-thread guard that tells a hook it was entered from inside another. The
 * only floor besides hooks/ where CUresult appears. */
#ifndef GG_SHIM_DRIVER_REAL_H
#define GG_SHIM_DRIVER_REAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "driver/cuda-api.h"

enum gg_hook_id {
#define GG_HOOK(name, pfn, params, args) GG_ID_##name,
#include "driver/hooks.def"
#undef GG_HOOK
	GG_HOOK_COUNT
};

/* gg_pfn_NAME: the type of the driver's NAME. */
#define GG_HOOK(name, pfn, params, args) typedef pfn gg_pfn_##name;
#include "driver/hooks.def"
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

/* glibc's dlsym, found with dlvsym (never through the public dlsym). Built
 * without sanitizers (driver/libc.c): dlsym is called while they start. */
void *gg_real_dlsym(void);

/* The id of an exact driver export name, or -1; the name of an id. */
int gg_real_id(const char *name);
const char *gg_real_name(enum gg_hook_id id);

/* Whether @addr lies in the shim's own object / in a driver object (libcuda.so*). */
bool gg_real_in_shim(const void *addr);
bool gg_real_in_driver(const void *addr);

/* The file name of the loaded object that holds @addr (dladdr's dli_fname,
 * but "" for the executable), or NULL; valid while that object stays loaded.
 * Cheaper than dladdr, which also looks for the nearest symbol. */
const char *gg_real_object_name(const void *addr);

/* The id of @fn, cuGetProcAddress's answer for @symbol, when it is a hooked
 * export of the driver object that holds @gpa (cuGetProcAddress's own address),
 * else -1. A second driver object (a stub beside the real one) gets -1: its
 * pointers pass through. An answer for a name the shim hooks that is no export
 * of any driver object is counted (docs/how-it-works.md, "Red zones": procaddr_unmatched),
 * and warned about once: calls through it are not seen. */
int gg_real_export_id(void *gpa, const char *symbol, void *fn);

/* How many cuGetProcAddress answers were unmatched so. */
uint64_t gg_real_unmatched(void);

/* Name of a CUresult ("CUDA_ERROR_NOT_FOUND"); "CUDA_ERROR_UNKNOWN_CODE" if none. */
const char *gg_real_result_name(CUresult rc);

/* How deep this thread is in the shim's own work: a hook (set to 1 on entry,
 * back to 0 on leaving: hooks do not nest), and, counted with
 * gg_real_enter()/gg_real_leave(), everything else that may hold a lock of
 * the shim's: set-up, a labelled boundary, the exit report, the fork
 * handlers, and the whole life of the watcher thread. While it is not 0, a
 * driver that calls its own exports is passed straight through (one
 * application call is seen once), and a signal handler (or a driver callback)
 * that runs there may have interrupted a lock of the shim's: such a
 * handler's gpuguard_boundary() is refused (-1), its hooked calls pass
 * straight through and its _exit() is not reported, never waited on. Plain
 * thread-local reads and writes, no lock: a handler may read it. Initial
 * exec: the shim is preloaded, and this is on every call's path, and a TLS
 * access of that model never allocates (async-signal-safe). */
extern __thread int gg_real_inside __attribute__((tls_model("initial-exec")));

/* Around shim work outside a hook that may take a lock: nests. The signal
 * fences keep the compiler from moving the count past the work, as a handler
 * on this thread sees it. */
static inline void gg_real_enter(void)
{
	gg_real_inside++;
	atomic_signal_fence(memory_order_seq_cst);
}

static inline void gg_real_leave(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	gg_real_inside--;
}

/* Calls of each hooked entry point (lock-free), counted only when
 * @gg_real_counting (verbosity 2, whose exit line is their only reader: one
 * shared counter a call is a cache line every thread writes). Set at set-up. */
extern atomic_ulong gg_real_calls[GG_HOOK_COUNT];
extern bool gg_real_counting;

/* At exit (verbosity 2): the per-entry-point call counts. A forked child
 * forgets its parent's, and its locks start free. */
void gg_real_report_calls(void);
void gg_real_atfork_child(void);

#endif
