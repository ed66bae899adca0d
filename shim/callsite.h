/* Call sites: the first frame outside the shim, the driver and the other
 * GPUGUARD_SKIP_OBJECTS, found by unwinding (SPEC §3). libunwind is loaded
 * privately on first use; glibc's backtrace() is the fallback. */
#ifndef GG_CALLSITE_H
#define GG_CALLSITE_H

#include <stddef.h>
#include <stdint.h>

#define GG_CALLSITE_MAX_FRAMES 64

/* A frame described with dladdr. @object and @symbol point into the loaded
 * object's own strings and stay valid while it is loaded; callers that keep a
 * site longer copy them. */
struct gg_site {
	uintptr_t address;  /* absolute return address; 0 when unknown */
	const char *object; /* object path, "" when unknown */
	uintptr_t offset;   /* address - the object's load base */
	const char *symbol; /* nearest dynamic symbol, NULL when none */
	uintptr_t symbol_offset;
};

/* Parse GPUGUARD_SKIP_OBJECTS (comma list of basename globs). Set-up only. */
void gg_callsite_configure(const char *skip_list);

/* Return addresses of the current thread's frames, outermost last, starting
 * with the caller of this function. Returns how many were stored. */
int gg_callsite_frames(uintptr_t *pcs, int max);

/* The first of @pcs whose object is neither the shim nor matches a skip glob;
 * 0 when every frame is skipped. */
uintptr_t gg_callsite_pick(const uintptr_t *pcs, int n);

/* How many times this process unwound its stack (for tests and reports). */
uint64_t gg_callsite_unwinds(void);

/* gg_callsite_frames + gg_callsite_pick. */
uintptr_t gg_callsite_find(void);

/* Describe @address. 0, or -ENOENT when it lies in no loaded object. */
int gg_callsite_describe(uintptr_t address, struct gg_site *site);

/* Interned call sites: a small id for a return address, so a million zones
 * from ten call sites hold ten addresses. Lock-free; 0 means unknown (the
 * table is full, or @address is 0). */
uint32_t gg_callsite_intern(uintptr_t address);
uintptr_t gg_callsite_address(uint32_t id);

/* Whether @address lies in the shim itself. */
int gg_callsite_in_shim(uintptr_t address);

/* Whether @path's basename matches one of the skip globs. */
int gg_callsite_skipped(const char *path);

#endif
