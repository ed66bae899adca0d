/* Call sites: the first frame outside the shim, the driver and the other
 * GPUGUARD_SKIP_OBJECTS, and outside the CUDA runtime linked statically into
 * the executable (GPUGUARD_SKIP_SYMBOLS), found by unwinding (docs/python.md, "Call
 * sites"). libunwind is loaded privately on first use; glibc's backtrace() is
 * the fallback; in a child forked while other threads ran, GCC's unwinder or
 * none (callsite/gccunwind.h). */
#ifndef GG_SHIM_CALLSITE_CALLSITE_H
#define GG_SHIM_CALLSITE_CALLSITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report/report.h"

/* Frames walked at most: the deepest stack kept (64 frames) and the frames
 * inward of its call site (the shim's, the driver's, a runtime's). */
#define GG_CALLSITE_MAX_FRAMES 96

/* Frames kept outward of a site inside a stripped executable's statically
 * linked runtime: the runtime's own frames under its entry point are a few,
 * and the entry point and a kernel's launch stub two more; eight leave room
 * to reach the application's. */
#define GG_CALLSITE_OUTER GG_REPORT_OUTER

/* A call site as an unwind found it. When the executable carries the CUDA
 * runtime but no symbol table, the runtime's frames cannot be told from the
 * application's: the site is then the first frame in the executable, marked
 * @in_static_runtime, with the frames outward of it, from which gpuguard
 * symbolize and an unstripped copy name the application's frame. */
struct gg_callsite {
	uintptr_t pc; /* the site's return address; 0 when unknown */
	bool in_static_runtime;
	uint8_t nouter;                     /* frames in @outer; 0 unless @in_static_runtime */
	uintptr_t outer[GG_CALLSITE_OUTER]; /* innermost first */
};

/* GPUGUARD_SKIP_OBJECTS (comma list of basename globs) and
 * GPUGUARD_SKIP_SYMBOLS (comma list of function name globs), parsed at the
 * first question asked of this module: the strings are kept, and must stay
 * (the process-wide configuration's). Set-up only. */
void gg_callsite_configure(const char *skip_objects, const char *skip_symbols);

/* Return addresses of the current thread's frames, outermost last, starting
 * with the caller of this function. Returns how many were stored. */
int gg_callsite_frames(uintptr_t *pcs, int max);

/* The call site among @pcs: the first frame whose object is neither the shim
 * nor matches a skip glob, and that is no function of the executable's
 * matching a GPUGUARD_SKIP_SYMBOLS glob. @cs->pc is 0 when every frame is
 * skipped. The executable's symbol table is read on the first call that
 * meets one of its frames; later calls look it up in memory. Returns the
 * site's place in @pcs, or -1. */
int gg_callsite_pick(const uintptr_t *pcs, int n, struct gg_callsite *cs);

/* gg_callsite_frames, with the address of the stack slot each return
 * address was read from (@slots[i] holds @pcs[i]), for a cache that checks
 * a stack by reading those slots again (callsite/depot.c). -ENOSYS where
 * that cannot be known (no libunwind, not x86-64, or a child forked while
 * other threads ran: base/loader.h). */
int gg_callsite_frames_slots(uintptr_t *pcs, uintptr_t *slots, int max);

/* How many times this process unwound its stack (for tests and reports). */
uint64_t gg_callsite_unwinds(void);

/* gg_callsite_frames + gg_callsite_pick. */
void gg_callsite_find(struct gg_callsite *cs);

/* The same, given the hooked call's return address @caller (0: unknown): when
 * that frame is the site, as for a program that calls the driver itself, no
 * unwind is needed (issue 16). Any other verdict unwinds, so the site is the
 * one gg_callsite_find() gives. */
void gg_callsite_find_from(uintptr_t caller, struct gg_callsite *cs);

/* Describe @address (a struct gg_site of report.h: its strings are the loaded
 * object's own, valid while it is loaded; callers that keep a site longer copy
 * them). 0, or -ENOENT when it lies in no loaded object. */
int gg_callsite_describe(uintptr_t address, struct gg_site *site);

/* @cs for the report: its frame @at (described by the caller, who may hold a
 * copy) and its outer frames, described now. */
void gg_callsite_report(const struct gg_callsite *cs, const struct gg_site *at,
			struct gg_report_site *out);

/* The same for the site interned as @id. */
void gg_callsite_report_id(uint32_t id, struct gg_report_site *out);

/* The current thread's frames outside the shim, described, innermost first.
 * Returns how many were stored. */
int gg_callsite_stack(struct gg_site *frames, int max);

/* Interned call sites: a small id for a site, so a million zones from ten
 * call sites hold ten sites. No lock (a site inside a stripped runtime may
 * wait a few stores for a slot another thread is writing); 0 means unknown
 * (the table is full, or @cs->pc is 0). A site inside a stripped executable's
 * runtime is interned with its outer frames: they tell its callers apart. */
uint32_t gg_callsite_intern(const struct gg_callsite *cs);
/* The site of @id; @cs->pc is 0 for an unknown id. */
void gg_callsite_get(uint32_t id, struct gg_callsite *cs);

/* Whether two sites are the same (their frames, outer ones included). */
bool gg_callsite_same(const struct gg_callsite *a, const struct gg_callsite *b);

/* Fork: the child's interning table holds no half-written slot. */
void gg_callsite_atfork_child(void);

/* Whether @path's basename matches one of the skip globs. */
int gg_callsite_skipped(const char *path);

#endif
