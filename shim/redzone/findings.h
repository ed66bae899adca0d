/* Red-zone findings (findings.c): counted by kind, kept for the report
 * files, and reported. */
#ifndef GG_SHIM_REDZONE_FINDINGS_H
#define GG_SHIM_REDZONE_FINDINGS_H

#include <stdint.h>

#include "redzone/redzone.h"
#include "report/report.h"

/* Count, keep and report @v (a band's named after the zone directly above
 * it too, when it changed up to its top). No lock held: the report runs
 * dladdr(). */
void gg_findings_record(const struct gg_violation *v);

/* Violations so far, of every kind (compared before and after a check, for
 * GPUGUARD_HALT_ON_ERROR). */
uint64_t gg_findings_total(void);

/* An API range's overrun (ranges.c), reported by hooks/copies.c: counted
 * only. The total before it. */
uint64_t gg_findings_api_overrun(void);

/* The counts by kind into @out's violation fields. */
void gg_findings_stats(struct gg_report_redzone *out);

/* The kept violations as the reports print them, oldest first; @fn runs
 * with no lock held. */
void gg_findings_foreach(void (*fn)(void *ctx, const struct gg_report_violation *v), void *ctx);

/* Fork: the lock held across fork(); the child has no finding of its
 * parent's. */
void gg_findings_atfork_prepare(void);
void gg_findings_atfork_parent(void);
void gg_findings_atfork_child(void);

#endif
