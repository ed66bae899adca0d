/* Kernel-lookup audit and seal gate (docs/how-it-works.md, "The kernel-lookup audit and the
 * gate"). */
#ifndef GG_SHIM_AUDIT_AUDIT_H
#define GG_SHIM_AUDIT_AUDIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report/report.h"

struct gg_config;

/* Modules and libraries are named apart: their handles are different objects. */
enum gg_audit_kind {
	GG_AUDIT_MODULE,
	GG_AUDIT_LIBRARY
};

/* Set-up: the allow flag and the expected-absent file. */
void gg_audit_configure(const struct gg_config *cfg);

/* A module or library the driver loaded (from a file, or from an image in memory),
 * or unloaded. Unloading forgets the handle; a reused value gets its new name. */
/* A load of a module or library from the file @path, or from @image in memory,
 * as the driver answered it (@rc 0: @handle is it). Named either way and listed
 * (JSON "modules"); a failure is a failed lookup of MODULE::* with its call
 * site, and after a seal a late miss (docs/how-it-works.md, "The kernel-lookup audit and the
 * gate": a failed load). */
void gg_audit_load_file(enum gg_audit_kind kind, const char *path, int rc, const char *rc_name,
			const void *handle);
void gg_audit_load_image(enum gg_audit_kind kind, const void *image, int rc, const char *rc_name,
			 const void *handle);
void gg_audit_foreach_module(void (*fn)(void *ctx, const struct gg_report_module *m), void *ctx);
void gg_audit_unloaded(enum gg_audit_kind kind, const void *handle);

/* A kernel lookup as the driver answered it: @rc 0 means found, and @found is
 * the kernel's handle. A failed one is recorded against its call site; after
 * a seal it may abort the process. */
void gg_audit_lookup(const char *api, enum gg_audit_kind kind, const void *handle, const char *name,
		     int rc, const char *rc_name, const void *found);

/* Lazy loading (docs/how-it-works.md, "The kernel-lookup audit and the gate"):
 * cuKernelGetFunction of @kernel, cuLibraryGetModule of @library, as the driver
 * answered (@rc 0: @function, @module is it). The function is named as its
 * kernel, the module as its library; a failure is a failed lookup of that
 * kernel (of LIBRARY::*) with its call site. */
/* cuLibraryEnumerateKernels handed out @kernels (@n), nameless: each is named
 * by the driver and kept, so a launch of one that fails lazily is named. */
void gg_audit_kernels_enumerated(const void *const *kernels, unsigned n);
void gg_audit_kernel_function(const void *kernel, int rc, const char *rc_name, const void *function);
void gg_audit_library_module(const void *library, int rc, const char *rc_name, const void *module);

/* A launch of @handle the driver refused with @rc_name, for a kernel a lookup
 * named: the kernel cannot run here (lazy loading's failure at first use),
 * a failed lookup of it with the launch's call site. */
void gg_audit_launch_failed(const char *api, const void *handle, int rc, const char *rc_name);

/* Launches (launches.c); kernels are named by handles/kernels.h. */
/* A launch of @handle, the @index-th of the process, as the driver answered
 * it: a refusal is counted per kernel, the first one WARNed. */
void gg_audit_launched(const void *handle, uint64_t index, int rc, const char *rc_name);

/* A replay of graph @g (handles/graphs.h), its kernels launches @first, @first
 * + 1, ...: as many launches, each refused when the driver refused it. */
struct gg_graph;
void gg_audit_replayed(const struct gg_graph *g, uint64_t first, int rc, const char *rc_name);

/* The ring of the latest launches of the process, in flight when a sticky
 * error names them: written inline by a replay the driver took (its cost,
 * BENCHMARKS.md "Graph replays (issue 27)"), as by gg_audit_launched; the
 * rest of the module's state is launches.c's. Lock-free: readers check @index twice. */
#define GG_AUDIT_RING 64
struct gg_audit_launch {
	atomic_uint_fast64_t index; /* 0: empty; set last (release) */
	const void *handle;
	/* A graph's replay: one entry, at its last launch, stands for its
	 * @nodes launches; @handle is its record. 0: one launch. */
	unsigned nodes;
};
extern struct gg_audit_launch gg_audit_ring[GG_AUDIT_RING];

/* Replay @first of @g (its @nodes kernel nodes, > 0) was taken by the driver. */
static inline void gg_audit_replay_taken(const struct gg_graph *g, unsigned nodes, uint64_t first)
{
	uint64_t last = first + nodes - 1;
	struct gg_audit_launch *l = &gg_audit_ring[last % GG_AUDIT_RING];

	atomic_store_explicit(&l->index, 0, memory_order_relaxed);
	l->handle = g;
	l->nodes = nodes;
	atomic_store_explicit(&l->index, last, memory_order_release);
}

/* The same, before the replay is forwarded (an unchanged replay's path:
 * nothing but the entry is then kept across the driver's call): its entry,
 * to be withdrawn by gg_audit_replay_refused if the driver refuses it. Its
 * indices were taken before it was forwarded too, so a synchronize meanwhile
 * counts them either way. */
static inline struct gg_audit_launch *gg_audit_replay_taking(const struct gg_graph *g, unsigned nodes,
							     uint64_t first)
{
	struct gg_audit_launch *l = &gg_audit_ring[(first + nodes - 1) % GG_AUDIT_RING];

	gg_audit_replay_taken(g, nodes, first);
	return l;
}
/* The driver refused replay @first of @g, whose entry is @l: withdrawn
 * (unless a launch 64 later took its place), each of its kernels' launches
 * refused. */
void gg_audit_replay_refused(struct gg_audit_launch *l, const struct gg_graph *g, uint64_t first,
			     int rc, const char *rc_name);

/* A synchronize (@api) answered @rc, @launches launches into the process: a
 * good one marks the launches so far done; a sticky error is an ERROR naming
 * the kernels launched since the last good one, once (the context is lost). */
void gg_audit_synchronized(const char *api, uint64_t launches, int rc, const char *rc_name);

void gg_audit_foreach_launch_error(void (*fn)(void *ctx, const struct gg_report_launch_error *e),
				   void *ctx);
uint64_t gg_audit_launches_refused(void);
void gg_audit_launches_atfork_child(void);

/* The gate: print the unresolved pairs, seal, and abort when a required one is
 * missing (unless allowed). @why names the boundary. */
void gg_audit_seal(const char *why);

/* The same, its table printed only when the gate fails. */
void gg_audit_seal_quiet(const char *why);

void gg_audit_stats(struct gg_report_audit *out);

/* Call @fn for every (unresolved pair, call site), required pairs first,
 * under the audit lock: @fn must not call back into the audit. */
void gg_audit_foreach_unresolved(void (*fn)(void *ctx, const struct gg_report_row *row), void *ctx);

/* Unresolved required pairs right now: an error at exit. */
uint64_t gg_audit_unresolved_now(void);

/* The audit's errors (docs/how-it-works.md, "Boundaries, signals, exit"): gate failures and
 * late misses under GPUGUARD_ALLOW_UNRESOLVED once a seal ran; before any seal,
 * the required pairs unresolved, which are errors when the process exits so.
 * One definition for the JSON, the metrics and the exit status. */
uint64_t gg_audit_errors(const struct gg_report_audit *a);

/* Fork: the child's lock starts free. */
void gg_audit_atfork_prepare(void);
void gg_audit_atfork_parent(void);
void gg_audit_atfork_child(void);

/* Naming helpers (names.c), exposed for tests. */
#define GG_AUDIT_NAME_MAX 256
void gg_audit_name_file(const char *path, char *out, size_t cap);
/* @loaded: the driver took it (a refused image is not read: named by address).
 * A taken one is named by the hash of the bytes gg_image_bytes() hands over;
 * by its address where none can be read safely. */
void gg_audit_name_image(const void *image, bool loaded, char *out, size_t cap);
/* FNV-1a, 64-bit, of @len bytes: the hash of image names. */
uint64_t gg_audit_hash(const void *data, size_t len);

#endif
