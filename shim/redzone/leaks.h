/* Leaks (docs/how-it-works.md, "Stacks, frees and leaks"): the allocations still live at
 * exit, counted by allocation stack. An allocation whose context was destroyed
 * (cuCtxDestroy, the primary context's last release or a reset) was freed with
 * it: its zone is gone by then, and it is no leak. */
#ifndef GG_SHIM_REDZONE_LEAKS_H
#define GG_SHIM_REDZONE_LEAKS_H

#include <stdbool.h>

#include "report/report.h"

/* GPUGUARD_LEAK_CHECK. Set-up only. */
void gg_leaks_configure(bool check);

/* At exit, after the last scan: count the zones left by allocation stack.
 * Once; the figures below then hold them. */
void gg_leaks_gather(void);

/* The leaks gathered (@out->known false before gg_leaks_gather()). */
void gg_leaks_figures(struct gg_report_leaks *out);

/* Fork: the child has none of its parent's (it gathers its own at its exit). */
void gg_leaks_atfork_child(void);

#endif
