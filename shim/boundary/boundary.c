/* Boundary events and running a boundary. launch:N fires before the N-th
 * intercepted launch is forwarded, sync:N after the N-th context synchronize
 * returns; after:S and the signal are run by the watcher (watcher.c). */
#include "boundary/boundary.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"
#include "boundary/figures.h"
#include "boundary/labels.h"
#include "options/config.h"
#include "base/gg.h"
#include "redzone/redzone.h"
#include "report/report.h"

static struct {
	/* Written by gg_boundary_configure() during set-up; read-only after. */
	struct gg_boundary_events ev;

	atomic_uint_fast64_t syncs; /* lock-free; launches: gg_boundary_launch_counter */
	pthread_mutex_t lock;       /* one boundary at a time; taken before the audit lock */
} boundary_state = { .lock = PTHREAD_MUTEX_INITIALIZER };

struct gg_boundary_launch_counter gg_boundary_launch_counter;

/* One WARN for each bad item of GPUGUARD_BOUNDARY, each naming its item. */
static void bad_item(void *list, const char *item, const char *why)
{
	char text[256];

	snprintf(text, sizeof(text), "%s; expected " GG_CONFIG_BOUNDARY_ACCEPTS, why);
	gg_report_bad_item("GPUGUARD_BOUNDARY", list, item, text);
}

void gg_boundary_configure(const struct gg_config *cfg)
{
	(void)gg_config_parse_boundary(cfg->boundary, &boundary_state.ev, bad_item,
				       (void *)cfg->boundary);
	for (unsigned i = 0; i < boundary_state.ev.nlaunch; i++)
		gg_boundary_launch_counter.mask |= UINT64_C(1) << (boundary_state.ev.launch[i] & 63);
}

void gg_boundary_run(const char *why)
{
	pthread_mutex_lock(&boundary_state.lock);
	/* Red-zone scan first (docs/how-it-works.md, "Boundaries, signals, exit"), then the
	 * gate and seal, then the reports. */
	gg_redzone_scan(why);
	gg_audit_seal(why);
	gg_figures_write_files();
	pthread_mutex_unlock(&boundary_state.lock);
}

/* A labelled boundary (gpuguard_boundary): the same three steps, with the
 * label and what it found recorded before the reports are written, so the
 * summary this boundary writes already holds them. */
uint64_t gg_boundary_label(const char *label)
{
	struct gg_report_figures f;
	uint64_t found;

	pthread_mutex_lock(&boundary_state.lock);
	gg_redzone_scan(label);
	gg_audit_seal_quiet(label);
	gg_figures_gather(&f);
	found = gg_labels_record(label, f.errors);
	gg_figures_write_files();
	pthread_mutex_unlock(&boundary_state.lock);
	return found;
}

static bool fire(const uint64_t *events, unsigned n, uint64_t count, const char *kind)
{
	for (unsigned i = 0; i < n; i++) {
		if (events[i] == count) {
			char why[48];

			snprintf(why, sizeof(why), "%s:%llu", kind, (unsigned long long)count);
			gg_boundary_run(why);
			return true; /* the same N listed twice is one boundary */
		}
	}
	return false;
}

bool gg_boundary_launch_event(uint64_t n)
{
	return fire(boundary_state.ev.launch, boundary_state.ev.nlaunch, n, "launch");
}

void gg_boundary_on_sync(void)
{
	uint64_t n = atomic_fetch_add_explicit(&boundary_state.syncs, 1, memory_order_relaxed) + 1;

	if (boundary_state.ev.nsync)
		(void)fire(boundary_state.ev.sync, boundary_state.ev.nsync, n, "sync");
}

const struct gg_boundary_events *gg_boundary_events(void)
{
	return &boundary_state.ev;
}

uint64_t gg_boundary_launches(void)
{
	return atomic_load_explicit(&gg_boundary_launch_counter.count, memory_order_relaxed);
}

/* A boundary running on the watcher thread finishes before fork(): the child
 * never copies one half done, nor the locks (of libc, of a sanitizer) that
 * thread holds inside it. Taken first: the boundary lock comes before the
 * audit and red-zone locks. */
void gg_boundary_atfork_prepare(void)
{
	pthread_mutex_lock(&boundary_state.lock);
}

void gg_boundary_atfork_parent(void)
{
	pthread_mutex_unlock(&boundary_state.lock);
}

/* The child counts its own launches and synchronisations (test-fork.c). */
void gg_boundary_atfork_child(void)
{
	pthread_mutex_init(&boundary_state.lock, NULL);
	atomic_store(&gg_boundary_launch_counter.count, 0);
	atomic_store(&boundary_state.syncs, 0);
}
