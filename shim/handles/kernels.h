/* The kernels the shim has seen looked up or launched: each handle gets a
 * small number (its slot), its names, and the layout of its parameters, read
 * from the driver once, on its first launch that needs it. Lock-free and
 * insert only, so a launch pays a probe or two; a forked child keeps the
 * table (its handles are its parent's). */
#ifndef GG_SHIM_HANDLES_KERNELS_H
#define GG_SHIM_HANDLES_KERNELS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "report/report.h"

#define GG_KERNELS_MAX 8192 /* slots; a handle past them is named function@0x... */
#define GG_KERNEL_PTRS 16   /* pointer-sized parameters followed per kernel */

/* Where a kernel's pointer-sized parameters are: 8 bytes at an 8-aligned
 * offset, the only ones that can hold a device address. */
struct gg_kernel_layout {
	bool known;                    /* the driver gave it; else nothing is known of the parameters */
	uint8_t nptr;                  /* the first GG_KERNEL_PTRS of them */
	uint8_t param[GG_KERNEL_PTRS]; /* their indices in kernelParams */
	uint16_t offset[GG_KERNEL_PTRS]; /* their offsets in extra's buffer */
};

/* The slot of @handle, added if new; -1 when the table is full. */
int gg_kernels_slot(const void *handle);

/* A lookup in @owner (a module or library) produced @handle (a CUkernel when
 * @kernel): its names (@key, when not NULL, identifies them: found again
 * with the same key and owner, nothing is compared), copied (never freed: reports may name the slot at any
 * time). A handle the driver hands out again for another kernel gets a slot
 * of its own. Callers serialise the lookups of one handle. */
void gg_kernels_found(const void *handle, bool kernel, const void *owner, const char *module,
		      const char *function, const void *key);

/* @owner was unloaded (NULL: a context ended, with every module of it): its
 * kernels' handles, and those no lookup was seen to produce, may be handed
 * out again. Their slots keep their names (for what was reported of them),
 * the handles get new slots, and gg_kernels_epoch() changes, so callers'
 * caches of slots go. */
void gg_kernels_unloaded(const void *owner);
uint64_t gg_kernels_epoch(void);

/* A forked child: a claim another thread had under way is given up. */
void gg_kernels_atfork_child(void);

/* The counter gg_kernels_epoch() reads, for a launch's fast path to read
 * itself (read-only: acquire loads). */
const atomic_uint_fast64_t *gg_kernels_epoch_counter(void);

/* The layout of slot @slot, read from the driver on first use; NULL while
 * another thread reads it (the caller treats it as unknown). */
const struct gg_kernel_layout *gg_kernels_layout(int slot);

/* The names of slot @slot, or of @handle: from its lookup, else the driver's
 * name (cuFuncGetName/cuKernelGetName), else "function@0x...". */
void gg_kernels_name(int slot, struct gg_report_kernel *out);
void gg_kernels_name_handle(const void *handle, struct gg_report_kernel *out);

#endif
