/* The modules' figures gathered into the report's struct, for the exit line,
 * the JSON summary, the metrics and the exit status: one place that says
 * what an error is (docs/how-it-works.md, "Boundaries, signals, exit"). */
#ifndef GG_SHIM_BOUNDARY_FIGURES_H
#define GG_SHIM_BOUNDARY_FIGURES_H

#include "report/report.h"

void gg_figures_gather(struct gg_report_figures *f);

/* gg_figures_gather, then GPUGUARD_SUMMARY_JSON and GPUGUARD_METRICS. */
void gg_figures_write_files(void);

/* The same as the process ends (an abort's last words): its summary says when. */
void gg_figures_write_final(void);

#endif
