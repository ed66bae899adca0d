/* Every byte the shim writes goes through here: write(2) on one descriptor,
 * lines formatted into a stack buffer, nothing allocated. Never stdout.
 *
 * The report prints exactly what it is handed: the plain structs below are
 * its vocabulary, filled by the floors above (call sites, the audit, red
 * zones, the figures gathered at boundaries and exit). It reads no module. */
#ifndef GG_SHIM_REPORT_REPORT_H
#define GG_SHIM_REPORT_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/gg.h"
#include "report/paths.h"

struct gg_config;

/* A frame described with dladdr. @object and @symbol point into the loaded
 * object's own strings (or a copy the caller keeps). */
struct gg_site {
	uintptr_t address;  /* absolute return address; 0 when unknown */
	const char *object; /* object path, "" when unknown */
	uintptr_t offset;   /* address - the object's load base */
	const char *symbol; /* nearest dynamic symbol, NULL when none */
	uintptr_t symbol_offset;
};

/* Frames kept outward of a site inside a stripped executable's statically
 * linked CUDA runtime. */
#define GG_REPORT_OUTER 8

/* A call site: its frame, and when it lies inside a stripped executable's
 * statically linked runtime, the frames outward of it (innermost first), from
 * which gpuguard symbolize names the application's frame. */
struct gg_report_site {
	struct gg_site at;
	bool in_static_runtime;
	unsigned nouter;
	struct gg_site outer[GG_REPORT_OUTER];
};

/* One (unresolved pair, call site) of the audit's table. */
struct gg_report_row {
	const char *module, *function;
	bool expected_absent;
	uint64_t pair_failed;       /* failed lookups of the pair, all sites */
	unsigned site_index;        /* 0 for the pair's first site */
	uint64_t count;             /* failed lookups from this site */
	const char *result;         /* last result code name from this site */
	struct gg_report_site site; /* site.at.address 0 when unknown */
};

/* A kernel as a report names it: from the lookup that produced its handle,
 * else the driver's name, else "function@0xHANDLE" (in @unnamed); module "?"
 * when unknown. */
struct gg_report_kernel {
	const char *name, *module;
	char unnamed[40];
};

/* A kernel's launch: its names and the launch's index (1, 2, ...). */
struct gg_report_launch {
	struct gg_report_kernel kernel;
	uint64_t launch;
};

#define GG_REPORT_SUSPECTS 4

/* Frames of a stack: GPUGUARD_STACK_DEPTH's most. */
#define GG_REPORT_STACK_MAX 64

/* A stack as kept in the stack depot (callsite/depot.h), described:
 * innermost first, its first frame the call site. */
struct gg_report_stack {
	unsigned n;
	struct gg_site frame[GG_REPORT_STACK_MAX];
};

/* A violation's kind, as the JSON names it. */
#define GG_KIND_OVERRUN "overrun"           /* a band found changed */
#define GG_KIND_DOUBLE_FREE "double_free"   /* a free of an allocation already freed */
#define GG_KIND_INVALID_FREE "invalid_free" /* a free of a pointer inside an allocation */
#define GG_KIND_API_OVERRUN "api_overrun"   /* a copy or set refused for reaching a band */
#define GG_KIND_UNDERFLOW "underflow"       /* a write below an allocation's start, in the band below */
#define GG_KIND_WRITE_AFTER_FREE "write_after_free" /* a quarantined fill found changed */
#define GG_KIND_DANGLING_LAUNCH "dangling_launch"   /* a launch given quarantined memory */

/* A red zone found changed, or a free of what is no allocation's start
 * (@kind says which; a free's finding has no band figures). */
struct gg_report_violation {
	const char *kind; /* GG_KIND_*; NULL: GG_KIND_OVERRUN */
	uint64_t index, user, pad;
	uint64_t slack;                /* the band's bytes past @pad, up to the driver's alignment */
	uint64_t first, last, changed; /* offsets into the band; changed bytes */
	uint8_t first_value, expected;
	uint64_t ptr;
	const char *detected_by;             /* "scan", "free", "teardown", "exit", "launch" */
	struct gg_report_site site;          /* where it was allocated */
	const struct gg_report_stack *stack; /* the allocation's stack; NULL: none kept */
	/* A free's finding: the call (cuMemFree_v2, ...), the pointer it was
	 * given, this free's stack and, for a double free, the first free's. */
	const char *api;
	uint64_t address;
	const struct gg_report_stack *free_stack, *first_free_stack;
	int param;                         /* a dangling launch's parameter index */
	uint64_t node;                     /* its graph kernel node (a replay's), or 0 */
	bool by_launch;                    /* right after @kernel's launch (launch:1) */
	struct gg_report_launch kernel;    /* when @by_launch: the kernel that wrote it */
	struct gg_report_site kernel_site; /* and where it was launched */
	unsigned nsuspects;                /* the kernels launched with its address, newest first */
	struct gg_report_launch suspects[GG_REPORT_SUSPECTS];
	/* A band changed up to its top, where another allocation starts: that
	 * one (@upper_ptr 0: none). An overrun's suspects are then the kernels
	 * given either; an underflow's (of the upper one), those given it. */
	uint64_t upper_ptr, upper_index, upper_user;
	struct gg_report_site upper_site;
};

/* A copy or set refused because its device range reached a guarded
 * allocation's band (JSON kind "api_overrun"). */
struct gg_report_api_overrun {
	const char *api;                     /* the driver function called */
	const char *side;                    /* "dst" or "src" */
	uint64_t address, bytes;             /* the device range, first byte to last */
	uint64_t index, user, ptr;           /* the allocation: index, user bytes, address */
	const char *result;                  /* what the application got instead */
	struct gg_report_site site;          /* where the allocation was made */
	struct gg_report_site call_site;     /* where the copy or set was called */
	const struct gg_report_stack *stack; /* the allocation's stack; NULL: none kept */
};

/* The audit's figures (docs/how-it-works.md, "The kernel-lookup audit and the gate"). */
struct gg_report_audit {
	uint64_t pairs;               /* distinct (module, function) pairs looked up */
	uint64_t resolved;            /* pairs with at least one successful lookup */
	uint64_t unresolved_required; /* pairs never resolved, not expected absent */
	uint64_t unresolved_expected; /* pairs never resolved, expected absent */
	uint64_t late_misses;
	uint64_t unresolved;          /* the counter: last gate's count + late misses */
	uint64_t calls, failed_calls; /* lookup calls */
	uint64_t loads_failed;        /* module and library loads the driver refused */
	uint64_t seals;
	bool sealed;
};

/* Why an allocation got no band (docs/how-it-works.md, "Red zones": coverage), in the JSON's
 * and the metrics' words. */
#define GG_REPORT_REASONS(X)                                                          \
	X(off)     /* GPUGUARD_REDZONE is 0 */                                        \
	X(min_idx) /* its index is below GPUGUARD_REDZONE_MIN_IDX */                  \
	X(zero_size)                                                                  \
	X(overflow)      /* the size plus the band overflows */                       \
	X(capturing)     /* its stream is being captured into a graph */              \
	X(no_context)    /* no current context, or no room for one more */            \
	X(registry_full) /* the zone could not have been recorded */                  \
	X(oom_fallback)  /* the padded request ran out of memory: retried as asked */ \
	X(driver)        /* the driver lacks or refused what a band needs */          \
	X(vmm)           /* virtual-memory mappings are never guarded */

enum gg_report_reason {
#define GG_REASON_ENUM(name) GG_REASON_##name,
	GG_REPORT_REASONS(GG_REASON_ENUM)
#undef GG_REASON_ENUM
	GG_REASON_COUNT
};

/* The name of @r ("min_idx"). */
const char *gg_report_reason_name(enum gg_report_reason r);

#define GG_REPORT_CACHING_MAX 4

/* What was guarded and what was not (docs/how-it-works.md, "Red zones"; the JSON's
 * "coverage"). */
/* Why a node of a CUDA graph is not followed when the graph is replayed
 * (handles/graphs.c; JSON "coverage"."graph_nodes_unfollowed"). */
#define GG_REPORT_GRAPH_UNFOLLOWED(X)                                                          \
	X(conditional)   /* a conditional node: its body runs as the device decides */         \
	X(device_launch) /* instantiated for device launch: replays the host never sees */     \
	X(params)        /* the driver did not return the node's parameters, or child graph */ \
	X(too_many)      /* past the kernel nodes followed per graph, or graphs at once */     \
	X(driver)        /* the driver lacks the graph queries */                              \
	X(unknown)       /* a replay of a graph whose instantiation was not seen */
enum gg_report_graph_unfollowed {
#define GG_GRAPH_UNFOLLOWED_ENUM(name) GG_GRAPH_UNFOLLOWED_##name,
	GG_REPORT_GRAPH_UNFOLLOWED(GG_GRAPH_UNFOLLOWED_ENUM)
#undef GG_GRAPH_UNFOLLOWED_ENUM
	GG_GRAPH_UNFOLLOWED_COUNT
};

struct gg_report_coverage {
	uint64_t allocations;            /* allocations the driver made: linear, and VMM handles */
	uint64_t guarded, guarded_bytes; /* given a watched band */
	uint64_t unguarded[GG_REASON_COUNT];
	uint64_t unguarded_bytes;
	uint64_t vmm_bytes;          /* bytes mapped with cuMemMap */
	uint64_t procaddr_unmatched; /* cuGetProcAddress answers for hooked names, no export */
	uint64_t graph_nodes_unfollowed[GG_GRAPH_UNFOLLOWED_COUNT]; /* by reason */
	uint64_t graph_replays_unfollowed;          /* replays of graphs with such nodes */
	const char *caching[GG_REPORT_CACHING_MAX]; /* caching allocators loaded ("pytorch") */
	unsigned ncaching;
};

/* Why a band was not checked when it should have been, in the JSON's words
 * ("redzones"."unchecked_reasons"). */
#define GG_REPORT_UNCHECKED(X)                                                   \
	X(check_on_free_off) /* freed under GPUGUARD_CHECK_ON_FREE=0 */          \
	X(capturing)         /* freed on a stream being captured into a graph */ \
	X(unreadable)        /* its context gone, its fill or the read failed */ \
	X(no_memory)         /* no memory to scan or keep it */                  \
	X(quarantine_middle) /* a released fill's bytes between its two checked windows */

enum gg_report_unchecked {
#define GG_UNCHECKED_ENUM(name) GG_UNCHECKED_##name,
	GG_REPORT_UNCHECKED(GG_UNCHECKED_ENUM)
#undef GG_UNCHECKED_ENUM
	GG_UNCHECKED_COUNT
};

/* The name of @u ("check_on_free_off"). */
const char *gg_report_unchecked_name(enum gg_report_unchecked u);

/* The red zones' figures (docs/how-it-works.md, "Red zones"). */
struct gg_report_redzone {
	uint64_t calls; /* allocation calls, failed ones included */
	uint64_t failed;
	uint64_t padded;
	uint64_t fallbacks;
	uint64_t live, live_bytes;
	uint64_t scans, checked, unchecked;
	uint64_t unchecked_why[GG_UNCHECKED_COUNT]; /* @unchecked by reason */
	uint64_t violations;                  /* every kind (the JSON's "violations", all counted) */
	uint64_t double_frees, invalid_frees; /* of @violations: frees of no allocation */
	uint64_t api_overruns;                /* of @violations: copies and sets refused */
	uint64_t underflows;                  /* of @violations: writes below an allocation's start */
	uint64_t write_after_frees, dangling_launches; /* of @violations: the quarantine's */
	/* The quarantine (GPUGUARD_QUARANTINE): its size (0: off), what it holds
	 * now, allocations that entered and left it, the bytes of their fills
	 * read and not read, and those released for a request out of memory. */
	uint64_t quarantine, quarantine_held, quarantine_held_bytes, quarantine_entered,
		quarantine_released, quarantine_checked_bytes, quarantine_unchecked_bytes,
		quarantine_oom_releases;
	uint64_t registry_bytes;      /* what the zone registry holds, at its peak size */
	bool batched;                 /* the last full scan read its bands in batched copies */
	uint64_t scan_calls;          /* driver calls that scan made to read the bands */
	uint64_t launches_checked;    /* GPUGUARD_CHECK_LAUNCHES: launches waited for and checked */
	uint64_t launches_unfollowed; /* launches whose parameters could not be known */
	struct gg_report_coverage coverage;
};

#define GG_REPORT_ARCHS 16

/* A module or library the process loaded or tried to (JSON "modules"). */
struct gg_report_module {
	const char *name;
	bool library, loaded;
	const char *result;         /* when the load failed */
	bool has_site;              /* a failed load, or one that cannot run here */
	struct gg_report_site site; /* where it was loaded */
	unsigned narchs;            /* what its image carries ("sm_80", "compute_90") */
	char archs[GG_REPORT_ARCHS][16];
	int runs_here; /* 1, 0, -1: unknown (its image was not read) */
	unsigned cc;   /* the device's compute capability then */
};

/* A kernel whose launches the driver refused (docs/how-it-works.md, "The kernel-lookup audit
 * and the gate": refused launches). */
struct gg_report_launch_error {
	struct gg_report_kernel kernel;
	uint64_t count;
	const char *result; /* the last refusal's result code name */
};

/* Lists are handed over as functions that call @emit for each item, with no
 * lock the caller of @emit could need. */
typedef void gg_report_rows_fn(void (*emit)(void *ctx, const struct gg_report_row *row), void *ctx);
typedef void gg_report_launch_errors_fn(void (*emit)(void *ctx, const struct gg_report_launch_error *e),
					void *ctx);
typedef void gg_report_modules_fn(void (*emit)(void *ctx, const struct gg_report_module *m), void *ctx);
/* Allocations live at exit, by allocation stack (docs/how-it-works.md, "Stacks, frees and
 * leaks"). */
struct gg_report_leak {
	uint64_t count, bytes;
	struct gg_report_site site; /* the stack's first frame */
	const struct gg_report_stack *stack;
};
typedef void gg_report_leaks_fn(void (*emit)(void *ctx, const struct gg_report_leak *l), void *ctx);

/* The leaks found at exit: @known only then (a boundary's summary has none). */
struct gg_report_leaks {
	bool known;
	bool check; /* GPUGUARD_LEAK_CHECK: each stack is an error */
	uint64_t stacks, allocations, bytes;
	gg_report_leaks_fn *each; /* largest bytes first */
};

typedef void gg_report_violations_fn(void (*emit)(void *ctx, const struct gg_report_violation *v),
				     void *ctx);
typedef void gg_report_api_overruns_fn(void (*emit)(void *ctx, const struct gg_report_api_overrun *o),
				       void *ctx);

/* A labelled boundary that found something (gpuguard_boundary, JSON
 * "labels"): its label, the errors it found, and the ERROR lines written
 * since the labelled boundary before it. */
struct gg_report_label {
	const char *label;
	uint64_t boundary;      /* 1 for the process's first labelled boundary */
	uint64_t errors;        /* the errors found since the labelled boundary before */
	const char *lines;      /* '\n'-terminated ERROR lines */
	uint64_t lines_dropped; /* ERROR lines that did not fit */
};
typedef void gg_report_labels_fn(void (*emit)(void *ctx, const struct gg_report_label *l), void *ctx);

/* Everything the exit line, the JSON summary and the metrics say. */
struct gg_report_figures {
	struct gg_report_audit audit;
	struct gg_report_redzone redzone;
	uint64_t errors;                         /* what makes GPUGUARD_EXITCODE apply (README) */
	uint64_t audit_errors;                   /* the audit's share of @errors */
	gg_report_rows_fn *rows;                 /* unresolved pairs, required first */
	gg_report_violations_fn *violations;     /* the first 256 */
	gg_report_api_overruns_fn *api_overruns; /* the first 256; NULL: none */
	gg_report_launch_errors_fn *launch_errors;
	gg_report_modules_fn *modules; /* every load tried */
	uint64_t launches_refused;     /* every refused launch */
	bool final;                    /* the process ends: the JSON's "ended" */
	struct gg_report_leaks leaks;
	uint64_t stacks, stack_bytes; /* the stack depot: stacks kept, bytes */
	gg_report_labels_fn *labels;  /* labelled boundaries that found something */
	uint64_t labels_omitted;      /* those of them not kept: "labels_omitted" */
};

/* Open GPUGUARD_LOG (stderr when unset). Called once by the shim's set-up. */
void gg_report_open(const struct gg_config *cfg);

/* At set-up: an ERROR for each report file (GPUGUARD_SUMMARY_JSON,
 * GPUGUARD_METRICS) whose directory cannot take it, so it is known before
 * the run rather than after it. The writes are still tried. */
void gg_report_check_files(const struct gg_config *cfg);

/* At exit, when the audit holds errors (no seal ran, or its gate and late
 * misses only warned): an ERROR for each required pair never resolved (a
 * failed load for MODULE::*), at every verbosity, whatever GPUGUARD_EXITCODE
 * says (gpuguard(1), FILES). */
void gg_report_unresolved_at_exit(const struct gg_report_figures *f);

/* A forked child, at its first hook call: reopen a log path holding %p for
 * its own pid. */
void gg_report_atfork_child(void);

/* Note what fd 2 is (run at load time, and by tests standing in for it): the
 * default log is stderr only while fd 2 is still that file at set-up. */
void gg_report_note_stderr(void);

/* Log lines that had nowhere to go since set-up, and why (a static text, or
 * NULL when none was lost). */
uint64_t gg_report_log_lost(const char **why);

/* Lines start "gpuguard[PID] LEVEL: ". ERROR is always written; WARN and INFO
 * at verbosity >= 1; TRACE (written as INFO) at verbosity >= 2. */
void gg_report_error(const char *fmt, ...) GG_PRINTF(1, 2);
void gg_report_warn(const char *fmt, ...) GG_PRINTF(1, 2);
/* A WARN printed at every verbosity: what it says changes what is checked. */
void gg_report_setting(const char *fmt, ...) GG_PRINTF(1, 2);
void gg_report_info(const char *fmt, ...) GG_PRINTF(1, 2);
void gg_report_trace(const char *fmt, ...) GG_PRINTF(1, 2);

/* One line each at verbosity 2: an intercepted lookup, allocation (its red
 * zone @pad, and the @slack after it up to the driver's alignment) or free. */
void gg_report_lookup(const char *api, const void *module, const char *name, const char *rc_name);
void gg_report_alloc(const char *api, uint64_t index, size_t bytes, size_t pad, size_t slack,
		     uint64_t ptr, const char *rc_name);
void gg_report_free(const char *api, uint64_t ptr, const char *rc_name);

/* At exit, verbosity 2: how often each hooked entry point was called. */
void gg_report_calls(const char *const *names, const unsigned long *counts, unsigned n);

/* A GPUGUARD_* variable whose value could not be used (@why: what was wrong,
 * may be NULL; @accepts: what is accepted), and one gpuguard does not know,
 * with the known name nearest to it (may be NULL). WARNs printed at every
 * verbosity. */
void gg_report_bad_value(const char *var, const char *value, const char *why, const char *accepts);
void gg_report_unknown_variable(const char *var, const char *nearest);

/* Audit (docs/how-it-works.md, "The kernel-lookup audit and the gate"). */
void gg_report_expected_unreadable(const char *path, const char *reason);
void gg_report_seal_table(uint64_t seal, const char *why, const struct gg_report_audit *a,
			  gg_report_rows_fn *rows, gg_report_modules_fn *modules);
void gg_report_gate(uint64_t seal, uint64_t required, bool allowed);
void gg_report_late_miss(bool fatal, uint64_t seal, const char *module, const char *function,
			 const char *result, const struct gg_report_site *where);

/* Launches (docs/how-it-works.md, "The kernel-lookup audit and the gate"): the first refusal
 * of a kernel's launch (WARN), and a sticky error at a synchronize (ERROR) with
 * the @n kernels launched since the last good synchronize (@launched of them in
 * all), newest first. */
/* Image preflight (docs/how-it-works.md, "The kernel-lookup audit and the gate"): nothing in
 * @module's image (@archs) runs on a device of compute capability @cc (WARN).
 */
void gg_report_cannot_run(const char *module, const char *archs, unsigned cc);

void gg_report_launch_refused(const struct gg_report_kernel *k, uint64_t launch, const char *result);
void gg_report_sticky_error(const char *api, const char *result, const struct gg_report_kernel *k,
			    const uint64_t *launch, unsigned n, uint64_t launched);

/* Red zones (docs/how-it-works.md, "Red zones"): a changed band (ERROR), and the @n frames of
 * the allocation GPUGUARD_REDZONE_TRACE_IDX names (INFO). */
void gg_report_violation(const struct gg_report_violation *v);
/* A copy or set refused for reaching a band (ERROR). */
void gg_report_api_overrun(const struct gg_report_api_overrun *o);

/* GPUGUARD_HALT_ON_ERROR: the ERROR that says the process is stopped here. */
void gg_report_halting(void);
void gg_report_alloc_stack(uint64_t index, size_t bytes, const struct gg_site *frames, int n);

/* At exit: with GPUGUARD_LEAK_CHECK, an ERROR for each of the ten stacks
 * that leaked the most bytes (docs/how-it-works.md, "Stacks, frees and leaks"). */
void gg_report_leaks(const struct gg_report_figures *f);

/* A list variable with one bad item (WARN). */
void gg_report_bad_item(const char *var, const char *value, const char *item, const char *why);

/* The JSON summary and the metrics as configured; a file that cannot be
 * written is an ERROR naming it and why (files.c). One rewrite at a time,
 * and the final one (@f->final, the exit's or an abort's) is final: once it
 * has begun, any later rewrite (a boundary on another thread that gathered
 * its figures before it) is dropped, so the files say what the exit said. */
void gg_report_write_files(const struct gg_report_figures *f);
/* Around fork(): the rewrite's lock held, so the child's is consistent; the
 * child writes files of its own, final included. */
void gg_report_files_atfork_prepare(void);
void gg_report_files_atfork_parent(void);
void gg_report_files_atfork_child(void);
void gg_report_write_json(const char *pattern, const struct gg_report_figures *f);
void gg_report_write_metrics(const char *pattern, const struct gg_report_figures *f);

/* The exit summary line (INFO), and the WARN that the application replaced
 * the boundary signal's handler. */
void gg_report_exit_summary(const struct gg_report_figures *f);
void gg_report_handler_replaced(int sig);

/* True when TRACE lines are printed, so callers can skip formatting work. */
int gg_report_tracing(void);

#endif
