/* Red-zone findings (docs/how-it-works.md, "Red zones"; KFENCE's report.c is the model):
 * every violation the red zones find, however found (a scan, a free, a
 * checked launch, the quarantine, an API range), is counted by kind, kept
 * (the first MAX_VIOLATIONS) for the report files, and reported, named
 * after its allocation and free stacks, its kernel and its suspects. The
 * finding itself is made by the mechanism (redzone.c and its neighbours);
 * only its counting, keeping and describing live here.
 *
 * Lock order: findings_state.lock is a leaf; reports (dladdr) run with no
 * lock of this file held. */
#include "redzone/findings.h"

#include <pthread.h>
#include <stdatomic.h>

#include "base/gg.h"
#include "base/kept.h"
#include "callsite/callsite.h"
#include "callsite/depot.h"
#include "handles/kernels.h"
#include "redzone/adjacency.h"
#include "redzone/registry.h"
#include "report/report.h"

#define MAX_VIOLATIONS 256 /* kept for the reports; all are counted */

static struct {
	pthread_mutex_t lock;                     /* leaf: guards @kept, @n */
	struct gg_violation kept[MAX_VIOLATIONS]; /* the first ones, in order */
	unsigned n;

	/* Lock-free counters, which a forked child starts from 0 (GG_ZERO_COUNTERS
	 * in gg_findings_atfork_child: every member here is one). */
	struct {
		atomic_uint_fast64_t violations;
		atomic_uint_fast64_t double_frees, invalid_frees; /* of @violations (frees.c) */
		atomic_uint_fast64_t api_overruns;                /* of @violations (ranges.c) */
		atomic_uint_fast64_t underflows;                  /* of @violations (adjacency.c) */
		atomic_uint_fast64_t write_after_frees,
			dangling_launches; /* of @violations (quarantine) */
	} count;
} findings_state = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void launch_of(uint64_t entry, struct gg_report_launch *out)
{
	gg_kernels_name(GG_SUSPECT_SLOT(entry), &out->kernel);
	out->launch = gg_redzone_suspect_launch(entry);
}

/* The suspects of @v into @out, newest first: the zone's, and those of the
 * zone directly above when its band changed up to its top (a kernel given
 * either may have written there), the newest GG_REPORT_SUSPECTS of them. */
static void report_suspects(const struct gg_violation *v, struct gg_report_violation *out)
{
	struct gg_report_launch all[2 * GG_SUSPECTS];
	unsigned n = 0;

	for (unsigned i = 0; i < GG_SUSPECTS && v->suspects[i]; i++)
		launch_of(v->suspects[i], &all[n++]);
	for (unsigned i = 0; v->upper.ptr && i < GG_SUSPECTS && v->upper.suspects[i]; i++) {
		unsigned k;

		for (k = 0; k < GG_SUSPECTS && v->suspects[k] &&
			    GG_SUSPECT_SLOT(v->suspects[k]) != GG_SUSPECT_SLOT(v->upper.suspects[i]);
		     k++)
			;
		if (k == GG_SUSPECTS || !v->suspects[k]) /* a kernel given both: listed once */
			launch_of(v->upper.suspects[i], &all[n++]);
	}
	/* A memo may have made an older entry the newer launch: newest first. */
	for (unsigned i = 1; i < n; i++)
		for (unsigned k = i; k > 0 && all[k].launch > all[k - 1].launch; k--) {
			struct gg_report_launch t = all[k];

			all[k] = all[k - 1];
			all[k - 1] = t;
		}
	for (unsigned i = 0; i < n && i < GG_REPORT_SUSPECTS; i++)
		out->suspects[out->nsuspects++] = all[i];
}

/* Where a report's stacks are described: the allocation's, a free's, the
 * first free's. */
struct report_stacks {
	struct gg_report_stack alloc, free, first_free;
};

/* @v as the report prints it, its site and stacks described now into @st
 * (their strings belong to loaded objects: described when printed, never
 * kept). */
static void report_of(const struct gg_violation *v, struct gg_report_violation *out,
		      struct report_stacks *st)
{
	static const char *const kinds[] = {
		[GG_VIOLATION_OVERRUN] = GG_KIND_OVERRUN,
		[GG_VIOLATION_DOUBLE_FREE] = GG_KIND_DOUBLE_FREE,
		[GG_VIOLATION_INVALID_FREE] = GG_KIND_INVALID_FREE,
		[GG_VIOLATION_UNDERFLOW] = GG_KIND_UNDERFLOW,
		[GG_VIOLATION_WRITE_AFTER_FREE] = GG_KIND_WRITE_AFTER_FREE,
		[GG_VIOLATION_DANGLING_LAUNCH] = GG_KIND_DANGLING_LAUNCH,
	};
	bool band = v->kind == GG_VIOLATION_OVERRUN || v->kind == GG_VIOLATION_UNDERFLOW;

	*out = (struct gg_report_violation){
		.kind = v->kind < GG_ARRAY_SIZE(kinds) ? kinds[v->kind] : GG_KIND_OVERRUN,
		.index = v->index,
		.user = v->user,
		.pad = v->pad,
		.slack = v->slack,
		.first = v->first,
		.last = v->last,
		.changed = v->changed,
		.first_value = v->first_value,
		.expected = v->expected,
		.ptr = v->ptr,
		.detected_by = v->detected_by,
		.by_launch = v->by_launch,
		.api = v->api,
		.address = v->address,
		.stack = &st->alloc,
		.param = v->param,
		.node = (uintptr_t)v->node,
	};
	gg_depot_report(v->site, &out->site, &st->alloc);
	if (v->upper.ptr) {
		out->upper_ptr = v->upper.ptr;
		out->upper_index = v->upper.index;
		out->upper_user = v->upper.user;
		gg_depot_report(v->upper.site, &out->upper_site, NULL);
	}
	if (!band) {
		gg_depot_report(v->free_stack, NULL, &st->free);
		out->free_stack = &st->free;
	}
	if (v->kind == GG_VIOLATION_DOUBLE_FREE) {
		gg_depot_report(v->first_free_stack, NULL, &st->first_free);
		out->first_free_stack = &st->first_free;
	}
	if (v->by_launch) {
		launch_of(GG_SUSPECT(v->kernel, v->launch), &out->kernel);
		gg_callsite_report_id(v->launch_site, &out->kernel_site);
	}
	report_suspects(v, out);
}

/* Record and report a violation (a band's named after the zone directly
 * above it too, when it changed up to its top). No lock held: the report
 * runs dladdr(). */
void gg_findings_record(const struct gg_violation *found)
{
	struct gg_violation attributed = *found, *v = &attributed;
	struct gg_report_violation r;
	struct report_stacks st;

	gg_adjacency_attribute(v);
	atomic_fetch_add_explicit(&findings_state.count.violations, 1, memory_order_relaxed);
	if (v->kind == GG_VIOLATION_UNDERFLOW)
		atomic_fetch_add_explicit(&findings_state.count.underflows, 1, memory_order_relaxed);
	else if (v->kind == GG_VIOLATION_DOUBLE_FREE)
		atomic_fetch_add_explicit(&findings_state.count.double_frees, 1, memory_order_relaxed);
	else if (v->kind == GG_VIOLATION_INVALID_FREE)
		atomic_fetch_add_explicit(&findings_state.count.invalid_frees, 1, memory_order_relaxed);
	else if (v->kind == GG_VIOLATION_WRITE_AFTER_FREE)
		atomic_fetch_add_explicit(&findings_state.count.write_after_frees, 1,
					  memory_order_relaxed);
	else if (v->kind == GG_VIOLATION_DANGLING_LAUNCH)
		atomic_fetch_add_explicit(&findings_state.count.dangling_launches, 1,
					  memory_order_relaxed);
	pthread_mutex_lock(&findings_state.lock);
	if (findings_state.n < MAX_VIOLATIONS)
		findings_state.kept[findings_state.n++] = *v;
	pthread_mutex_unlock(&findings_state.lock);
	report_of(v, &r, &st);
	gg_report_violation(&r);
}

struct walk {
	void (*fn)(void *ctx, const struct gg_report_violation *v);
	void *ctx;
};

static void walked(void *arg, const void *element)
{
	const struct walk *w = arg;
	struct gg_report_violation r;
	struct report_stacks st;

	report_of(element, &r, &st);
	w->fn(w->ctx, &r);
}

_Static_assert(sizeof(struct gg_violation) <= GG_KEPT_COPY, "a kept violation is copied out whole");

void gg_findings_foreach(void (*fn)(void *ctx, const struct gg_report_violation *v), void *ctx)
{
	gg_kept_walk(&findings_state.lock, findings_state.kept, &findings_state.n,
		     sizeof(findings_state.kept[0]), walked, &(struct walk){ fn, ctx });
}

uint64_t gg_findings_total(void)
{
	return atomic_load(&findings_state.count.violations);
}

uint64_t gg_findings_api_overrun(void)
{
	atomic_fetch_add_explicit(&findings_state.count.api_overruns, 1, memory_order_relaxed);
	return atomic_fetch_add_explicit(&findings_state.count.violations, 1, memory_order_relaxed);
}

void gg_findings_stats(struct gg_report_redzone *out)
{
	out->violations = atomic_load_explicit(&findings_state.count.violations, memory_order_relaxed);
	out->double_frees = atomic_load_explicit(&findings_state.count.double_frees,
						 memory_order_relaxed);
	out->invalid_frees = atomic_load_explicit(&findings_state.count.invalid_frees,
						  memory_order_relaxed);
	out->api_overruns = atomic_load_explicit(&findings_state.count.api_overruns,
						 memory_order_relaxed);
	out->underflows = atomic_load_explicit(&findings_state.count.underflows, memory_order_relaxed);
	out->write_after_frees = atomic_load(&findings_state.count.write_after_frees);
	out->dangling_launches = atomic_load(&findings_state.count.dangling_launches);
}

void gg_findings_atfork_prepare(void)
{
	pthread_mutex_lock(&findings_state.lock);
}

void gg_findings_atfork_parent(void)
{
	pthread_mutex_unlock(&findings_state.lock);
}

void gg_findings_atfork_child(void)
{
	/* A process of its own: none of its parent's findings. */
	pthread_mutex_init(&findings_state.lock, NULL);
	findings_state.n = 0;
	GG_ZERO_COUNTERS(&findings_state.count);
}
