/* Launches (docs/how-it-works.md, "The kernel-lookup audit and the gate": refused launches):
 * which kernel a launched handle is, the launches the driver refused, counted
 * per kernel, and the kernels in flight when a synchronize reports a sticky
 * error (the context is lost, no band can be read any more: they are the answer
 * to "which kernel crashed").
 *
 * A launch costs a few stores into a ring, and no driver call (the driver
 * must see each of the application's calls once, and nothing more: so the
 * ring holds the process's launches, not each context's). Names are looked up
 * only when something is reported. */
#include "audit/audit.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/gg.h"
#include "handles/graphs.h"
#include "handles/kernels.h"
#include "report/report.h"

#define RING GG_AUDIT_RING /* the latest launches of the process */
#define IN_FLIGHT 8        /* kernels an ERROR names */
#define LAUNCH_ERRORS 256  /* kernels with a refused launch */

struct gg_audit_launch gg_audit_ring[GG_AUDIT_RING]; /* lock-free (audit/audit.h) */

/* Keyed by the kernel's names (module, function: the kernels table's
 * copies, never freed), so a module reloaded in a new context, whose handles
 * are new, is the same kernel; by handle when it has no name. */
struct launch_error {
	const void *handle;        /* the first refused handle */
	const char *name, *module; /* NULL: unnamed, matched by @handle */
	uint64_t count;
	const char *result;
};

static struct {
	pthread_mutex_t lock; /* leaf: guards everything below */
	uint64_t synced;      /* launches counted at the last good synchronize */
	bool reported;        /* a sticky error was said: the context is lost */
	struct launch_error errors[LAUNCH_ERRORS];
	unsigned nerrors;
	uint64_t refused; /* every refused launch, kept or not */
} launches_state = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void refused(const void *handle, uint64_t index, const char *rc_name);

void gg_audit_launched(const void *handle, uint64_t index, int rc, const char *rc_name)
{
	struct gg_audit_launch *l = &gg_audit_ring[index % RING];

	atomic_store_explicit(&l->index, 0, memory_order_relaxed);
	l->handle = handle;
	l->nodes = 0;
	atomic_store_explicit(&l->index, index, memory_order_release);
	if (!rc)
		return;
	/* A kernel that cannot run here (lazy loading fails at first use). */
	if (rc == 209 /* NO_BINARY_FOR_GPU */ || rc == 500 /* NOT_FOUND */ ||
	    rc == 400 /* INVALID_HANDLE */)
		gg_audit_launch_failed("launch", handle, rc, rc_name);
	refused(handle, index, rc_name);
}

/* Launch @index of @handle was refused: counted per kernel, the first said. */
static void refused(const void *handle, uint64_t index, const char *rc_name)
{
	struct gg_report_kernel k;
	bool first = false, named;

	/* Named before the lock (the table is lock-free): the latch is kept per
	 * image and kernel name, as the WARN promises. */
	gg_kernels_name_handle(handle, &k);
	named = k.name != k.unnamed;
	pthread_mutex_lock(&launches_state.lock);
	launches_state.refused++;
	unsigned i;

	for (i = 0; i < launches_state.nerrors; i++) {
		const struct launch_error *e = &launches_state.errors[i];

		if (named ? e->name && !strcmp(e->name, k.name) && !strcmp(e->module, k.module)
			  : !e->name && e->handle == handle)
			break;
	}
	if (i == launches_state.nerrors && i < LAUNCH_ERRORS) {
		struct launch_error *e = &launches_state.errors[launches_state.nerrors++];

		e->handle = handle;
		e->name = named ? k.name : NULL;
		e->module = named ? k.module : NULL;
		first = true;
	}
	if (i < LAUNCH_ERRORS) {
		launches_state.errors[i].count++;
		launches_state.errors[i].result = rc_name;
	}
	pthread_mutex_unlock(&launches_state.lock);
	if (first)
		gg_report_launch_refused(&k, index, rc_name);
}

/* Refused: each of its kernels' launches was. (Not a failed lookup: the
 * graph's kernels were loaded when it was instantiated.) */
static __attribute__((noinline)) void replay_refused(const struct gg_graph *g, uint64_t first,
						     const char *rc_name)
{
	for (unsigned k = 0; k < g->nkernels; k++)
		refused(g->k[k].fn, first + k, rc_name);
}

void gg_audit_replayed(const struct gg_graph *g, uint64_t first, int rc, const char *rc_name)
{
	if (GG_UNLIKELY(rc))
		replay_refused(g, first, rc_name);
	else
		gg_audit_replay_taken(g, g->nkernels, first);
}

void gg_audit_replay_refused(struct gg_audit_launch *l, const struct gg_graph *g, uint64_t first,
			     int rc, const char *rc_name)
{
	uint64_t last = first + l->nodes - 1;

	/* A writer meanwhile (a launch 64 later) makes the compare fail: its
	 * entry is kept. @l->nodes is this replay's unless so, and then unused. */
	atomic_compare_exchange_strong(&l->index, &last, 0);
	gg_audit_replayed(g, first, rc, rc_name);
}

/* Errors after which the context can do nothing more (cuda.h: "the process
 * must be terminated and relaunched"). */
static bool sticky(int rc)
{
	return rc == 700 /* ILLEGAL_ADDRESS */ || rc == 714 /* HARDWARE_STACK_ERROR */ ||
	       rc == 715 /* ILLEGAL_INSTRUCTION */ || rc == 716 /* MISALIGNED_ADDRESS */ ||
	       rc == 717 /* INVALID_ADDRESS_SPACE */ || rc == 718 /* INVALID_PC */ ||
	       rc == 719 /* LAUNCH_FAILED */;
}

void gg_audit_synchronized(const char *api, uint64_t launches, int rc, const char *rc_name)
{
	struct gg_report_kernel k[IN_FLIGHT];
	uint64_t index[IN_FLIGHT], since;
	unsigned n = 0;
	bool say = false;

	if (rc && !sticky(rc))
		return;
	pthread_mutex_lock(&launches_state.lock);
	since = launches_state.synced;
	if (!rc)
		launches_state.synced = launches;
	else if (!launches_state.reported)
		launches_state.reported = say = true;
	pthread_mutex_unlock(&launches_state.lock);
	if (!say)
		return;
	/* Newest first: the ring's launches since the last good synchronize. */
	for (uint64_t i = launches; i > since && i + RING > launches && n < IN_FLIGHT; i--) {
		struct gg_audit_launch *l = &gg_audit_ring[i % RING];
		uint64_t at = atomic_load_explicit(&l->index, memory_order_acquire);
		const void *handle = l->handle;
		unsigned nodes = l->nodes;

		if (at != i || atomic_load_explicit(&l->index, memory_order_acquire) != at)
			continue; /* overwritten meanwhile, or being written */
		if (nodes) {      /* a graph's replay: its kernels, the last first */
			const struct gg_graph *g = handle;

			for (unsigned j = nodes; j > 0 && at - (nodes - j) > since && n < IN_FLIGHT;
			     j--) {
				if (j - 1 < g->nkernels)
					gg_kernels_name_handle(g->k[j - 1].fn, &k[n]);
				else
					gg_kernels_name_handle(NULL, &k[n]);
				index[n++] = at - (nodes - j);
			}
			i = at - nodes + 1; /* the loop's i-- goes on before the replay */
			continue;
		}
		gg_kernels_name_handle(handle, &k[n]);
		index[n++] = at;
	}
	gg_report_sticky_error(api, rc_name, k, index, n, launches - since);
}

void gg_audit_foreach_launch_error(void (*fn)(void *ctx, const struct gg_report_launch_error *e),
				   void *ctx)
{
	struct launch_error copy[LAUNCH_ERRORS];
	unsigned n;

	pthread_mutex_lock(&launches_state.lock);
	n = launches_state.nerrors;
	memcpy(copy, launches_state.errors, n * sizeof(copy[0]));
	pthread_mutex_unlock(&launches_state.lock);
	for (unsigned i = 0; i < n; i++) {
		struct gg_report_launch_error e = { .count = copy[i].count, .result = copy[i].result };

		if (copy[i].name) {
			e.kernel.name = copy[i].name;
			e.kernel.module = copy[i].module;
		} else {
			gg_kernels_name_handle(copy[i].handle, &e.kernel);
		}
		fn(ctx, &e);
	}
}

uint64_t gg_audit_launches_refused(void)
{
	uint64_t n;

	pthread_mutex_lock(&launches_state.lock);
	n = launches_state.refused;
	pthread_mutex_unlock(&launches_state.lock);
	return n;
}

/* A forked child: none of its parent's launches or errors. */
void gg_audit_launches_atfork_child(void)
{
	pthread_mutex_init(&launches_state.lock, NULL);
	for (unsigned i = 0; i < RING; i++)
		atomic_store(&gg_audit_ring[i].index, 0);
	launches_state.synced = 0;
	launches_state.reported = false;
	launches_state.nerrors = 0;
	launches_state.refused = 0;
}
