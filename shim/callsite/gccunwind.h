/* Unwinding where the loader's list of objects may never be walkable (a
 * child forked while other threads ran, base/loader.h): libunwind walks it
 * at every frame it has not cached, and loading libunwind maps an object. */
#ifndef GG_SHIM_CALLSITE_GCCUNWIND_H
#define GG_SHIM_CALLSITE_GCCUNWIND_H

#include <stdint.h>

/* The return addresses of the calling thread's frames, outermost last,
 * starting with the caller of the function that called this one, by GCC's
 * unwinder, when the process has one loaded that takes no lock of the
 * loader (it finds unwind tables with _dl_find_object). How many were
 * stored, or -ENOSYS: no such unwinder is loaded. */
int gg_gccunwind_frames(uintptr_t *pcs, int max);

#endif
