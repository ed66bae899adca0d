/* The stack depot (docs/how-it-works.md, "Stacks, frees and leaks"): the stack of every
 * allocation and free, up to GPUGUARD_STACK_DEPTH frames from its call site
 * outward, each distinct stack stored once under a 32-bit id, so a million
 * allocations made at ten places hold ten stacks. Lock-free to read; a new
 * stack takes one lock. */
#ifndef GG_SHIM_CALLSITE_DEPOT_H
#define GG_SHIM_CALLSITE_DEPOT_H

#include <stdint.h>

#include "report/report.h"

#define GG_DEPOT_DEPTH_MAX GG_REPORT_STACK_MAX

/* GPUGUARD_STACK_DEPTH (1 to 64; anything else is taken as the nearest).
 * Set-up only. */
void gg_depot_configure(unsigned depth);
unsigned gg_depot_depth(void);

/* The stack of the hooked call now under way: its call site as
 * gg_callsite_find_from(@caller) finds it, then up to depth - 1 frames
 * outward. @frame is the hook's work function's frame address
 * (__builtin_frame_address(0)), whose return address is @caller: a stack
 * seen before from there is known again by reading its return addresses'
 * slots, without unwinding (NULL: unwind). Its id; 0 when nothing is known
 * (every frame skipped, or the depot full). */
uint32_t gg_depot_capture(uintptr_t caller, const void *frame);

/* The frames of stack @id into @pcs (up to @max), innermost first: how
 * many, 0 for an unknown id. *@site (when not NULL): its call site's
 * interned id (callsite.h). */
unsigned gg_depot_get(uint32_t id, uint32_t *site, uintptr_t *pcs, unsigned max);

/* Stack @id for the report: its call site, and its frames described (either
 * may be NULL). An unknown id gives an unknown site and no frame. */
void gg_depot_report(uint32_t id, struct gg_report_site *site, struct gg_report_stack *stack);

/* Distinct stacks stored, and the bytes the depot holds for them. */
void gg_depot_stats(uint64_t *stacks, uint64_t *bytes);

/* Fork: the child's depot lock is free (its stacks stay: they are code's). */
void gg_depot_atfork_child(void);

#endif
