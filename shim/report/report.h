/* Every byte the shim writes goes through here: write(2) on one descriptor,
 * lines formatted into a stack buffer, nothing allocated. Never stdout. */
#ifndef GG_REPORT_H
#define GG_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gg.h"
#include "report/paths.h"

struct gg_config;

/* Open GPUGUARD_LOG (stderr when unset). Called once by the shim's set-up. */
void gg_report_open(const struct gg_config *cfg);

/* At set-up: an ERROR for each report file (GPUGUARD_SUMMARY_JSON,
 * GPUGUARD_METRICS) whose directory cannot take it, so it is known before
 * the run rather than after it. The writes are still tried. */
void gg_report_check_files(const struct gg_config *cfg);

/* At exit, when GPUGUARD_EXITCODE will change the status and the audit holds
 * errors (no seal ran, or its gate and late misses only warned): an ERROR for
 * each required pair never resolved, at every verbosity (SPEC §6). */
void gg_report_unresolved_at_exit(void);

/* A forked child, at its first hook call: reopen a log path holding %p for
 * its own pid. */
void gg_report_atfork_child(void);

/* Lines start "gpuguard[PID] LEVEL: ". ERROR is always written; WARN and INFO
 * at verbosity >= 1; TRACE (written as INFO) at verbosity >= 2. */
void gg_report_error(const char *fmt, ...) GG_PRINTF(1, 2);
void gg_report_warn(const char *fmt, ...) GG_PRINTF(1, 2);
void gg_report_info(const char *fmt, ...) GG_PRINTF(1, 2);
void gg_report_trace(const char *fmt, ...) GG_PRINTF(1, 2);

/* One line each at verbosity 2: an intercepted lookup, allocation or free. */
void gg_report_lookup(const char *api, const void *module, const char *name, const char *rc_name);
void gg_report_alloc(const char *api, uint64_t index, size_t bytes, size_t pad, uint64_t ptr,
		     const char *rc_name);
void gg_report_free(const char *api, uint64_t ptr, const char *rc_name);

/* At exit, verbosity 2: how often each hooked entry point was called. */
void gg_report_calls(const char *const *names, const unsigned long *counts, unsigned n);

/* A GPUGUARD_* variable whose value could not be used, and one gpuguard does
 * not know, with the known name nearest to it (may be NULL). WARNs printed at
 * every verbosity. */
void gg_report_bad_value(const char *var, const char *value, const char *why);
void gg_report_unknown_variable(const char *var, const char *nearest);

/* Audit (SPEC §3). */
struct gg_site;
struct gg_callsite;
void gg_report_expected_unreadable(const char *path, const char *reason);
void gg_report_seal_table(uint64_t seal, const char *why);
void gg_report_gate(uint64_t seal, uint64_t required, bool allowed);
void gg_report_late_miss(bool fatal, uint64_t seal, const char *module, const char *function,
			 const char *result, const struct gg_site *where,
			 const struct gg_callsite *cs);

/* Red zones (SPEC §4): a changed band (ERROR), and the stack of the
 * allocation GPUGUARD_REDZONE_TRACE_IDX names (INFO). */
struct gg_violation;
void gg_report_violation(const struct gg_violation *v);
void gg_report_alloc_stack(uint64_t index, size_t bytes);

/* A list variable with one bad item (WARN). */
void gg_report_bad_item(const char *var, const char *value, const char *item, const char *why);

/* The JSON summary and the metrics as configured; errors are logged. */
void gg_report_write_files(void);
int gg_report_write_json(const char *pattern);
int gg_report_write_metrics(const char *pattern);

/* The exit summary line (INFO), and the WARN that the application replaced
 * the boundary signal's handler. */
void gg_report_exit_summary(void);
void gg_report_handler_replaced(int sig);

/* True when TRACE lines are printed, so callers can skip formatting work. */
int gg_report_tracing(void);

#endif
