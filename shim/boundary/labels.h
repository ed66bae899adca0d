/* Labelled boundaries (gpuguard_boundary): what each found, for the JSON's
 * "labels". */
#ifndef GG_SHIM_BOUNDARY_LABELS_H
#define GG_SHIM_BOUNDARY_LABELS_H

#include <stdint.h>

#include "report/report.h"

/* A labelled boundary ran and the process's errors are now @errors: keep
 * @label with the errors found since the labelled boundary before and the
 * ERROR lines written since (report/errlines.h) when there are any. The
 * errors found. Called under the boundary lock. */
uint64_t gg_labels_record(const char *label, uint64_t errors);

/* The labelled boundaries that found something, in order (the JSON's rows). */
gg_report_labels_fn gg_labels_foreach;

/* Labelled boundaries that found something but were not kept (past the
 * summary's room, or memory refused): the JSON's "labels_omitted". */
uint64_t gg_labels_omitted(void);

void gg_labels_atfork_prepare(void);
void gg_labels_atfork_parent(void);
void gg_labels_atfork_child(void);

#endif
