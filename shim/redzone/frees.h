/* Frees of what is no allocation (docs/how-it-works.md, "Stacks, frees and leaks"): a free of
 * a zone freed before (double_free) and of a pointer inside a zone
 * (invalid_free). The shim remembers the zones the application freed last, with
 * their allocation and free stacks, in a bounded memory. */
#ifndef GG_SHIM_REDZONE_FREES_H
#define GG_SHIM_REDZONE_FREES_H

#include <stdint.h>

#include "redzone/registry.h"

/* The zones remembered at most: the latest frees, oldest forgotten first. */
#define GG_FREES_KEPT 4096

/* The application freed @z (the driver took the free), at stack @free_stack. */
void gg_frees_remember(const struct gg_zone *z, uint32_t free_stack);

/* An allocation no zone records got @ptr from the driver: a free of @ptr is
 * its own now, no double free. */
void gg_frees_forget(uint64_t ptr);

/* The driver refused @api's free of @ptr, which starts no zone: a double
 * free when @ptr is remembered freed, an invalid free when it lies inside a
 * zone (as the driver's cuMemGetAddressRange says). Reported with this
 * free's stack (@caller and @frame as a ticket's, redzone.h). */
void gg_frees_refused(const char *api, uint64_t ptr, uintptr_t caller, const void *frame);

/* Fork: the child remembers none of its parent's frees. */
void gg_frees_atfork_child(void);

#endif
