/* Batched scans (scan.c): every band of a context read with a constant
 * number of driver calls. */
#ifndef GG_SHIM_REDZONE_SCAN_H
#define GG_SHIM_REDZONE_SCAN_H

#include <stdbool.h>
#include <stdint.h>

#include "redzone/zones.h"

/* Scan every band (of @sc->only_ctx's context when >= 0) in batches, and
 * report what changed. False when it could not be done for lack of memory
 * (the caller scans band by band). */
bool gg_scan_batched(struct gg_scan *sc);

/* The last full scan read band by band. */
void gg_scan_unbatched(void);

/* The last full scan that read anything: whether it read in batches, and
 * how many driver calls its reads took. */
void gg_scan_figures(bool *batched, uint64_t *calls);

/* Fork: the child's scans are its own. */
void gg_scan_atfork_child(void);

#endif
