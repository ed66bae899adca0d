/* API ranges: a copy or set whose device range reaches a guarded
 * allocation's band is refused before the driver sees it, so the padding is
 * never observable, and the finding (api_overrun) names the call, the range,
 * the allocation and the call site. The hooks (hooks/copies.c) turn each
 * call's arguments into device ranges; this module judges them. */
#ifndef GG_SHIM_REDZONE_RANGES_H
#define GG_SHIM_REDZONE_RANGES_H

#include <stdbool.h>
#include <stdint.h>

#include "report/report.h"

/* One device range of a call: [ptr, ptr + bytes), every byte it touches
 * from the first to the last (a 2D or 3D copy's rows and the pitch between
 * them). */
struct gg_range {
	const char *side; /* "dst" or "src" */
	uint64_t ptr;
	uint64_t bytes;
};

/* Whether ranges are checked at all (red zones are on): the hooks skip
 * reading descriptors otherwise. */
bool gg_ranges_on(void);

/* Whether @r, given to the driver's @api (called from the return address
 * @caller, 0 when unknown), keeps to the user bytes of the guarded allocation
 * it starts in (or starts in none). False when it starts in a band or runs
 * into one: the finding is then recorded, counted with the violations and
 * reported as refused with @result, and GPUGUARD_HALT_ON_ERROR aborts here. */
bool gg_ranges_allowed(const char *api, const struct gg_range *r, uintptr_t caller, const char *result);

/* The findings kept for the reports (the first 256; all are counted), each
 * handed to @fn with no lock held. */
void gg_ranges_foreach(void (*fn)(void *ctx, const struct gg_report_api_overrun *o), void *ctx);

/* A forked child starts with none of its parent's findings. */
void gg_ranges_atfork_prepare(void);
void gg_ranges_atfork_parent(void);
void gg_ranges_atfork_child(void);

#endif
