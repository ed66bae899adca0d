/* Red zones (docs/how-it-works.md, "Red zones").
 *
 * An allocation of N bytes with index >= MIN_IDX is asked of the driver as
 * N + P bytes; the band [ptr+N, ptr+N+P) is filled before the call returns:
 * on a private non-blocking stream of the context, waited for (nothing of the
 * application's is waited for), or, for a stream-ordered allocation, on the
 * allocation's own stream, ahead of any work the application queues there,
 * with an event that tells scans when the fill is done. Each zone remembers
 * its own expected byte (poison), so checks never confuse the two fills.
 *
 * Everything that can fail is settled before the driver is asked (the
 * context's slot, its private stream, room in the registry), so a padded
 * allocation is always recorded, and its padding always hidden.
 *
 * This file is the zones' lifecycle (allocation, free, contexts, where an
 * address is); the launches' suspects are suspects.c's, the batched full
 * scan scan.c's, checked launches checked.c's, and the findings' counting
 * and reporting findings.c's (redzone/zones.h is what they share).
 *
 * Lock order: the boundary lock, scan_lock, redzone_state.lock, a registry
 * shard lock, then the leaves pending_lock, findings.c's lock, batch_lock and
 * ranges.c's lock. Reports and dladdr() run with no lock of this module
 * held. A reader of bands (a batched scan, a checked launch) holds scan_lock
 * and flags its zones SCANNING (gg_redzone_reading); a free of one of them
 * waits for it, so no band is read after its memory died. */
#include "redzone/redzone.h"
#include "redzone/replays.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "callsite/callsite.h"
#include "callsite/depot.h"
#include "options/config.h"
#include "base/gg.h"
#include "driver/device.h"
#include "handles/kernels.h"
#include "redzone/adjacency.h"
#include "redzone/band.h"
#include "redzone/caching.h"
#include "redzone/checked.h"
#include "redzone/findings.h"
#include "redzone/frees.h"
#include "redzone/leaks.h"
#include "redzone/quarantine.h"
#include "redzone/ranges.h"
#include "redzone/registry.h"
#include "redzone/scan.h"
#include "redzone/suspects.h"
#include "redzone/zones.h"
#include "report/report.h"
#include "base/fatal.h"

#define MAX_CTX 1024     /* live contexts at once; u16 ids in zones */
#define MAX_PENDING 4096 /* stream-ordered fills not yet seen done */
#define CHUNK 4096       /* bytes of a band read at a time */

struct ctx_slot {
	_Atomic(void *) ctx;    /* set under the lock */
	_Atomic(void *) stream; /* the private stream; created under the lock, read lock-free */
	int dev;                /* set under the lock with @ctx */
	atomic_bool alive;
	atomic_uint zones; /* zones recorded in this slot; a dead slot is reused at 0 */
};

struct pending {
	uint64_t ptr; /* the zone whose fill was queued on the application's stream */
	void *event;  /* recorded after that fill */
	uint16_t ctx;
};

static struct {
	/* Written by gg_redzone_configure() during set-up; read-only after. */
	uint64_t pad, min_idx, trace_idx, poison_lo, poison_hi;
	bool trace_set, poison_set, check_on_free, halt, check_launches;
	bool quarantine; /* GPUGUARD_QUARANTINE is on (and so are red zones) */
	uint8_t fill;

	/* Lock-free counters, which a forked child starts from 0 (GG_ZERO_COUNTERS
	 * in gg_redzone_atfork_child: every member here is one). */
	struct {
		atomic_uint_fast64_t next_index, failed, padded, fallbacks;
		atomic_uint_fast64_t scans, checked, unchecked;         /* violations: findings.c */
		atomic_uint_fast64_t unchecked_why[GG_UNCHECKED_COUNT]; /* @unchecked by reason */
		/* What was guarded and what was not (docs/how-it-works.md, "Red zones": coverage). */
		atomic_uint_fast64_t allocations, guarded, guarded_bytes, unguarded_bytes, vmm_bytes;
		atomic_uint_fast64_t unguarded[GG_REASON_COUNT];
	} count;
	/* Where zones are: [lowest pointer, highest band end) of any zone so far,
	 * so a launch's number that is no zone's address costs two compares; and
	 * the frees so far, which make the threads' range caches stale. */
	atomic_uint_fast64_t lowest, highest, frees;
	pthread_once_t resolve_once; /* finds the driver functions the bands need */
	bool resolved;               /* written once under @resolve_once: all were found */

	pthread_mutex_t lock; /* guards slot creation and reuse */
	struct ctx_slot ctx[MAX_CTX];
	atomic_uint nctx; /* slots ever used; read lock-free */

	pthread_mutex_t pending_lock; /* leaf: guards @pending, @npending (written) */
	struct pending pending[MAX_PENDING];
	_Atomic unsigned npending; /* also read lock-free: 0, nothing to take */

	/* One batched scan at a time: a batch clears the SCANNING flags it set,
	 * which would let a free go ahead under another batch's read. */
	pthread_mutex_t scan_lock;
	pthread_mutex_t batch_lock; /* leaf: guards @batch_active; @batch_done waits on it */
	pthread_cond_t batch_done;
	bool batch_active; /* zones flagged SCANNING are being read */
} redzone_state = {
	.resolve_once = PTHREAD_ONCE_INIT,
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.pending_lock = PTHREAD_MUTEX_INITIALIZER,
	.scan_lock = PTHREAD_MUTEX_INITIALIZER,
	.batch_lock = PTHREAD_MUTEX_INITIALIZER,
	.batch_done = PTHREAD_COND_INITIALIZER,
};

void gg_redzone_configure(const struct gg_config *cfg)
{
	redzone_state.pad = cfg->redzone;
	redzone_state.min_idx = cfg->redzone_min_idx;
	redzone_state.trace_set = cfg->trace_idx_set;
	redzone_state.trace_idx = cfg->trace_idx;
	redzone_state.fill = cfg->fill;
	redzone_state.poison_set = cfg->poison_set;
	redzone_state.poison_lo = cfg->poison_lo;
	redzone_state.poison_hi = cfg->poison_hi;
	redzone_state.check_on_free = cfg->check_on_free;
	redzone_state.halt = cfg->halt_on_error;
	redzone_state.check_launches = cfg->check_launches;
	gg_suspects_configure(cfg->redzone, cfg->check_launches);
	gg_redzone_replay_hot = (struct gg_redzone_replay_hot){ .following = cfg->redzone != 0,
								.checking = cfg->redzone &&
									    cfg->check_launches,
								.generation = gg_suspects_generation(),
								.epoch = gg_kernels_epoch_counter() };
	gg_leaks_configure(cfg->leak_check);
	/* The quarantine holds guarded allocations: none without red zones. */
	gg_quarantine_configure(cfg->redzone ? cfg->quarantine : 0, cfg->free_fill);
	redzone_state.quarantine = cfg->redzone && cfg->quarantine;
	if (cfg->quarantine && !cfg->redzone)
		gg_report_warn("GPUGUARD_QUARANTINE without GPUGUARD_REDZONE: only guarded "
			       "allocations are quarantined, so nothing is (set GPUGUARD_REDZONE=64, "
			       "say)");
	if (cfg->leak_check && !cfg->redzone)
		gg_report_warn("GPUGUARD_LEAK_CHECK=1 without GPUGUARD_REDZONE: allocations are "
			       "recorded only with red zones, so no leak can be found (set "
			       "GPUGUARD_REDZONE=64, say)");
	if (cfg->check_launches && !cfg->redzone)
		gg_report_warn("GPUGUARD_CHECK_LAUNCHES=1 without GPUGUARD_REDZONE: there is no band "
			       "to check, so no launch is checked (set GPUGUARD_REDZONE=64, say)");
}

uint64_t gg_redzone_next_index(void)
{
	return atomic_fetch_add_explicit(&redzone_state.count.next_index, 1, memory_order_relaxed);
}

void gg_redzone_fallback(struct gg_redzone_ticket *t)
{
	atomic_fetch_add_explicit(&redzone_state.count.fallbacks, 1, memory_order_relaxed);
	t->reason = GG_REASON_oom_fallback;
}

bool gg_redzone_out_of_memory(void)
{
	return gg_quarantine_out_of_memory();
}

/* Once, with no lock held (the loader runs): a driver without a function the
 * bands need gets no band at all, and one WARN names what it lacks. */
static void resolve(void)
{
	const char *missing = NULL;

	redzone_state.resolved = gg_device_resolve(&missing) == 0;
	if (!redzone_state.resolved)
		gg_report_warn("GPUGUARD_REDZONE=%llu, but the driver has no %s: no allocation gets a "
			       "red zone (counted as unguarded, reason \"driver\")",
			       (unsigned long long)redzone_state.pad, missing ? missing : "?");
}

static uint8_t expected_byte(uint64_t index)
{
	if (!redzone_state.poison_set)
		return redzone_state.fill;
	return index >= redzone_state.poison_lo && index < redzone_state.poison_hi ? redzone_state.fill
										   : 0x00;
}

uint64_t gg_redzone_band_length(uint64_t user, uint8_t flags)
{
	uint64_t pad = redzone_state.pad;

	return pad + (flags & GG_ZONE_ROUNDED ? gg_adjacency_slack(user, pad) : 0);
}

/* The live slot of @ctx, or -1. Lock-free: slots only ever get added. */
int gg_redzone_find_ctx(void *ctx)
{
	unsigned n = atomic_load_explicit(&redzone_state.nctx, memory_order_acquire);

	for (unsigned i = 0; i < n; i++) {
		struct ctx_slot *s = &redzone_state.ctx[i];

		if (atomic_load_explicit(&s->ctx, memory_order_acquire) == ctx &&
		    atomic_load_explicit(&s->alive, memory_order_acquire))
			return (int)i;
	}
	return -1;
}

/* The slot of @ctx with its private stream, made if new: a dead slot with
 * no zone left is reused. -ENOSPC, or the driver's error. */
static int ctx_slot(void *ctx)
{
	int id = gg_redzone_find_ctx(ctx);
	struct ctx_slot *s;
	void *current;
	int err = 0, dev = 0;

	if (id >= 0 && atomic_load_explicit(&redzone_state.ctx[id].stream, memory_order_acquire))
		return id;
	/* @ctx is current: its device, asked only for a slot to be made. */
	if ((err = gg_device_current(&current, &dev)))
		return err;
	pthread_mutex_lock(&redzone_state.lock);
	if ((id = gg_redzone_find_ctx(ctx)) < 0) {
		unsigned n = atomic_load_explicit(&redzone_state.nctx, memory_order_relaxed);

		for (unsigned i = 0; i < n && id < 0; i++)
			if (!redzone_state.ctx[i].alive && !redzone_state.ctx[i].zones)
				id = (int)i;
		if (id < 0 && n < MAX_CTX)
			id = (int)n;
		if (id >= 0) {
			s = &redzone_state.ctx[id];
			s->dev = dev;
			atomic_store(&s->stream, NULL);
			atomic_store(&s->ctx, ctx);
			atomic_store(&s->alive, true);
			if ((unsigned)id == n)
				atomic_store_explicit(&redzone_state.nctx, n + 1, memory_order_release);
		}
	}
	if (id < 0) {
		err = -ENOSPC;
	} else if (!redzone_state.ctx[id].stream) {
		void *stream = NULL;

		err = gg_device_stream_create(ctx, &stream);
		atomic_store_explicit(&redzone_state.ctx[id].stream, stream, memory_order_release);
	}
	pthread_mutex_unlock(&redzone_state.lock);
	return err ? err : id;
}

size_t gg_redzone_request(uint64_t index, size_t bytes, void *stream, bool async,
			  struct gg_redzone_ticket *t)
{
	size_t pad = (size_t)redzone_state.pad;
	bool capturing = false;
	void *ctx;

	t->ctx = -1;
	t->caller = 0;
	t->reason = GG_REASON_off;
	if (!pad)
		return 0;
	t->reason = !bytes                          ? GG_REASON_zero_size
		    : index < redzone_state.min_idx ? GG_REASON_min_idx
		    : bytes > SIZE_MAX - pad        ? GG_REASON_overflow
						    : GG_REASON_COUNT;
	if (t->reason != GG_REASON_COUNT)
		return 0;
	/* A zone that cannot be recorded gets no band. */
	t->reason = GG_REASON_registry_full;
	if (!gg_registry_room())
		return 0;
	pthread_once(&redzone_state.resolve_once, resolve);
	t->reason = GG_REASON_driver;
	if (!redzone_state.resolved)
		return 0;
	/* A stream being captured into a graph gets none either: the fill would
	 * become part of the graph. */
	t->reason = GG_REASON_no_context;
	if (gg_device_context(&ctx))
		return 0;
	t->reason = GG_REASON_capturing;
	if (async && (gg_device_capturing(stream, &capturing) || capturing))
		return 0;
	t->reason = GG_REASON_no_context;
	if ((t->ctx = ctx_slot(ctx)) < 0)
		return 0;
	t->reason = GG_REASON_COUNT; /* none: it gets its band */
	return pad;
}

static void pending_add(uint64_t ptr, void *event, uint16_t ctx)
{
	pthread_mutex_lock(&redzone_state.pending_lock);
	if (redzone_state.npending < MAX_PENDING)
		redzone_state.pending[redzone_state.npending++] = (struct pending){ .ptr = ptr,
										    .event = event,
										    .ctx = ctx };
	else
		event = NULL; /* full: the zone stays pending, checked never */
	pthread_mutex_unlock(&redzone_state.pending_lock);
	(void)event;
}

/* Take the pending entry of @ptr out of the list; its event, or NULL. */
static void *pending_take(uint64_t ptr)
{
	void *event = NULL;

	/* None pending (every synchronous allocation's case): no lock. An entry
	 * for @ptr was added before its zone could be freed, which ordered it. */
	if (!atomic_load_explicit(&redzone_state.npending, memory_order_acquire))
		return NULL;
	pthread_mutex_lock(&redzone_state.pending_lock);
	for (unsigned i = 0; i < redzone_state.npending; i++) {
		if (redzone_state.pending[i].ptr == ptr) {
			event = redzone_state.pending[i].event;
			redzone_state.pending[i] = redzone_state.pending[--redzone_state.npending];
			break;
		}
	}
	pthread_mutex_unlock(&redzone_state.pending_lock);
	return event;
}

/* Whether the stream-ordered fill of @z is done; clears the flag once it is. */
bool gg_redzone_fill_done(struct gg_zone *z)
{
	struct ctx_slot *s = &redzone_state.ctx[z->ctx];
	void *event;
	int done;

	if (!(z->flags & GG_ZONE_PENDING))
		return true;
	if (!(event = pending_take(z->ptr)))
		return false; /* the list was full: never known to be done */
	done = gg_device_event_done(s->ctx, event);
	if (done == 1) {
		(void)gg_device_event_destroy(s->ctx, event);
		z->flags &= (uint8_t)~GG_ZONE_PENDING;
		return true;
	}
	pending_add(z->ptr, event, z->ctx);
	return false;
}

static void guarded(size_t bytes)
{
	atomic_fetch_add_explicit(&redzone_state.count.guarded, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&redzone_state.count.guarded_bytes, bytes, memory_order_relaxed);
}

static void unguarded(enum gg_report_reason why, size_t bytes)
{
	atomic_fetch_add_explicit(&redzone_state.count.unguarded[why], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&redzone_state.count.unguarded_bytes, bytes, memory_order_relaxed);
}

/* Forget the zone at @ptr (freed, or its memory died). */
static void forgotten(const struct gg_zone *z, bool ctx_alive)
{
	void *event = pending_take(z->ptr);

	if (event && ctx_alive)
		(void)gg_device_event_destroy(redzone_state.ctx[z->ctx].ctx, event);
	atomic_fetch_sub(&redzone_state.ctx[z->ctx].zones, 1);
}

/* Memory was given back to the driver: every thread's cache of interior
 * pointers (gg_redzone_interior_base) is stale. */
static void ranges_stale(void)
{
	atomic_fetch_add_explicit(&redzone_state.frees, 1, memory_order_relaxed);
}

static void note_bounds(uint64_t lo, uint64_t hi)
{
	uint64_t cur = atomic_load_explicit(&redzone_state.lowest, memory_order_relaxed);

	while ((!cur || lo < cur) && !atomic_compare_exchange_weak(&redzone_state.lowest, &cur, lo))
		;
	cur = atomic_load_explicit(&redzone_state.highest, memory_order_relaxed);
	while (hi > cur && !atomic_compare_exchange_weak(&redzone_state.highest, &cur, hi))
		;
}

void gg_redzone_alloc(const char *api, uint64_t index, size_t bytes, size_t pad, uint64_t ptr,
		      void *stream, bool async, const struct gg_redzone_ticket *t, int rc,
		      const char *rc_name)
{
	struct gg_zone z = { .ptr = ptr, .user = bytes, .index = index };
	/* Past the red zone, up to the driver's alignment (adjacency.c). */
	size_t slack = pad > redzone_state.pad ? pad - (size_t)redzone_state.pad : 0;
	struct ctx_slot *s;
	void *event = NULL;
	struct gg_zone old;

	if (rc != 0)
		atomic_fetch_add_explicit(&redzone_state.count.failed, 1, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&redzone_state.count.allocations, 1, memory_order_relaxed);
	gg_report_alloc(api, index, bytes, pad - slack, slack, rc == 0 ? ptr : 0, rc_name);
	if (redzone_state.trace_set && index == redzone_state.trace_idx) {
		struct gg_site frames[GG_CALLSITE_MAX_FRAMES];

		gg_report_alloc_stack(index, bytes, frames,
				      gg_callsite_stack(frames, GG_CALLSITE_MAX_FRAMES));
	}
	if (rc != 0)
		return;
	if (redzone_state.pad)
		gg_redzone_caching_check();
	if (!pad || !ptr || t->ctx < 0) {
		unguarded(t->reason < GG_REASON_COUNT ? t->reason : GG_REASON_driver, bytes);
		gg_frees_forget(ptr); /* a free of it is no double free */
		return;
	}
	s = &redzone_state.ctx[t->ctx];
	z.ctx = (uint16_t)t->ctx;
	z.expected = expected_byte(index);
	z.site = gg_depot_capture(t->caller, t->frame);
	gg_adjacency_base(ptr);
	/* The allocation's context is current (the request found it so). */
	if (async) {
		/* On the allocation's own stream, ahead of the application's next work
		 * there; the event tells scans when it is done. */
		z.flags = GG_ZONE_ASYNC;
		if (gg_device_fill(NULL, stream, ptr + bytes, z.expected, pad, false) ||
		    gg_device_event_after(NULL, stream, &event))
			z.flags |= GG_ZONE_UNFILLED;
		else
			z.flags |= GG_ZONE_PENDING;
	} else if (gg_device_fill(NULL, atomic_load(&s->stream), ptr + bytes, z.expected, pad, true)) {
		z.flags = GG_ZONE_UNFILLED; /* still recorded: the padding stays hidden */
	}
	if (slack)
		z.flags |= GG_ZONE_ROUNDED;
	/* A pointer we still hold was freed where we could not see it. */
	if (gg_registry_remove(ptr, &old) == 0)
		forgotten(&old, true);
	if (event)
		pending_add(ptr, event, z.ctx);
	atomic_fetch_add(&s->zones, 1);
	note_bounds(ptr, ptr + bytes + pad);
	if (gg_registry_insert(&z) == 0) {
		gg_suspects_stale();
		atomic_fetch_add_explicit(&redzone_state.count.padded, 1, memory_order_relaxed);
		/* A band the driver would not fill is recorded (its padding stays
		 * hidden) but never checked: not guarded. */
		if (z.flags & GG_ZONE_UNFILLED)
			unguarded(GG_REASON_driver, bytes);
		else
			guarded(bytes);
	} else {
		/* Cannot happen while gg_registry_room() held; keep the counts true. */
		forgotten(&z, true);
		unguarded(GG_REASON_registry_full, bytes);
	}
}

void gg_redzone_vmm(size_t created, size_t mapped)
{
	if (created) {
		atomic_fetch_add_explicit(&redzone_state.count.allocations, 1, memory_order_relaxed);
		unguarded(GG_REASON_vmm, created);
	}
	atomic_fetch_add_explicit(&redzone_state.count.vmm_bytes, mapped, memory_order_relaxed);
}

/* Read the band of @z through @stream (NULL: the legacy stream) in @ctx.
 * 0, or an error when it could not be read. */
static int read_band(const struct gg_zone *z, void *ctx, void *stream, struct gg_band_check *c)
{
	uint64_t band = gg_redzone_band_length(z->user, z->flags);
	uint8_t buf[CHUNK];

	memset(c, 0, sizeof(*c));
	for (uint64_t off = 0; off < band; off += CHUNK) {
		size_t n = band - off < CHUNK ? (size_t)(band - off) : CHUNK;
		int err = gg_device_read(ctx, stream, z->ptr + z->user + off, buf, n);

		if (err)
			return err;
		gg_band_compare(c, buf, n, off, z->expected);
	}
	return 0;
}

static struct gg_violation violation_of(const struct gg_zone *z, const struct gg_band_check *c,
					const char *by)
{
	return (struct gg_violation){
		.index = z->index,
		.user = z->user,
		.pad = redzone_state.pad,
		.slack = gg_redzone_band_length(z->user, z->flags) - redzone_state.pad,
		.first = c->first,
		.last = c->last,
		.changed = c->changed,
		.first_value = c->first_value,
		.expected = z->expected,
		.ptr = z->ptr,
		.site = z->site,
		.detected_by = by,
		.kernel = -1,
		.suspects = { z->suspects[0], z->suspects[1], z->suspects[2], z->suspects[3] },
	};
}

/* A band not checked when it should have been: counted with why, never
 * passed for clean. */
static void unchecked(enum gg_report_unchecked why)
{
	atomic_fetch_add_explicit(&redzone_state.count.unchecked, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&redzone_state.count.unchecked_why[why], 1, memory_order_relaxed);
}

void gg_redzone_unchecked(enum gg_report_unchecked why)
{
	unchecked(why);
}

void gg_redzone_refill(uint16_t ctx, uint64_t band, uint8_t expected, uint64_t length)
{
	struct ctx_slot *s = &redzone_state.ctx[ctx];

	(void)gg_device_fill(s->ctx, atomic_load(&s->stream), band, expected, length, true);
}

static void fill_again(const struct gg_zone *z)
{
	gg_redzone_refill(z->ctx, z->ptr + z->user, z->expected,
			  gg_redzone_band_length(z->user, z->flags));
}

/* Check the band of @z, read through @stream: 1 and *v set on a violation,
 * 0 when clean, -1 when it could not be read (counted unchecked, never clean). */
int gg_redzone_check_zone(struct gg_zone *z, void *stream, const char *by, bool refill,
			  struct gg_violation *v)
{
	struct ctx_slot *s = &redzone_state.ctx[z->ctx];
	struct gg_band_check c;

	if ((z->flags & GG_ZONE_UNFILLED) || !atomic_load(&s->alive) || !gg_redzone_fill_done(z) ||
	    read_band(z, s->ctx, stream, &c)) {
		unchecked(GG_UNCHECKED_unreadable);
		return -1;
	}
	atomic_fetch_add_explicit(&redzone_state.count.checked, 1, memory_order_relaxed);
	if (!c.changed)
		return 0;
	*v = violation_of(z, &c, by);
	if (refill)
		fill_again(z);
	return 1;
}

void gg_redzone_halt_if_asked(uint64_t before)
{
	if (redzone_state.halt && gg_findings_total() != before) {
		gg_report_halting();
		gg_fatal();
	}
}

void gg_redzone_found(const struct gg_violation *v)
{
	uint64_t before = gg_findings_total();

	gg_findings_record(v);
	gg_redzone_halt_if_asked(before);
}

uint64_t gg_redzone_pad(void)
{
	return redzone_state.pad;
}

/* A free of a quarantined allocation: not forwarded (the driver still holds
 * it), answered as the driver answers a pointer freed before (cuda.h,
 * cuMemFree: CUDA_ERROR_INVALID_VALUE; with no context current,
 * CUDA_ERROR_INVALID_CONTEXT as a free of anything), reported by
 * gg_redzone_freed() with both free stacks. */
static void freed_twice(struct gg_redzone_free *t)
{
	void *ctx;

	t->twice = true;
	t->no_context = gg_device_context(&ctx) == -ENOENT;
}

/* After its band's check: fill the allocation of @t with the free byte and
 * hold it back from the driver (t->quarantined), when it can be: a
 * stream-ordered free's fill is queued on its stream, followed by an event,
 * so the free keeps its order; a synchronous free's runs on the legacy
 * stream, after the work of the blocking streams, and is waited for. What
 * cannot be filled (a destroyed stream, a capture under way, no context) is
 * freed as without a quarantine, and the driver answers. */
static void quarantine(void *stream, bool async, struct gg_redzone_free *t)
{
	struct ctx_slot *s = &redzone_state.ctx[t->zone.ctx];
	struct gg_quarantine_entry e = {
		.ptr = t->zone.ptr,
		.user = t->zone.user,
		.held = t->zone.user + redzone_state.pad,
		.ctx = atomic_load(&s->ctx),
		.read_stream = atomic_load(&s->stream),
		.stream = async ? stream : NULL,
		.ctx_slot = t->zone.ctx,
		.fill = gg_quarantine_fill(),
		.api = async ? "cuMemFreeAsync" : "cuMemFree_v2",
	};
	struct gg_zone z = t->zone;
	bool capturing = false;
	void *current;

	/* Freed from another context than its own: freed as without a
	 * quarantine (its fill would run in the wrong context). */
	if ((z.flags & GG_ZONE_UNFILLED) || !atomic_load(&s->alive) || gg_device_context(&current) ||
	    current != e.ctx)
		return;
	if (async) {
		if (gg_device_capturing(stream, &capturing) || capturing ||
		    gg_device_fill(NULL, stream, z.ptr, e.fill, z.user, false))
			return;
		if (gg_device_event_after(NULL, stream, &e.event))
			e.event = NULL, e.stream = NULL; /* released by cuMemFree_v2, which waits */
	} else if (gg_device_legacy_capturing() ||
		   gg_device_fill(NULL, NULL, z.ptr, e.fill, z.user, true)) {
		return;
	}
	e.free_stack = gg_depot_capture(t->caller, t->frame);
	/* Back in the registry, flagged, its suspects those launched after the
	 * free; the kernels' memos fall to the slow path that finds it. */
	z.flags = (uint8_t)((z.flags & ~GG_ZONE_SCANNING) | GG_ZONE_QUARANTINED);
	memset(z.suspects, 0, sizeof(z.suspects));
	if (gg_registry_insert(&z))
		goto undo;
	gg_suspects_stale();
	if (gg_quarantine_hold(&e)) {
		(void)gg_registry_remove(z.ptr, NULL);
		goto undo;
	}
	t->quarantined = true;
	return;
undo:
	if (e.event)
		(void)gg_device_event_destroy(NULL, e.event);
}

void gg_redzone_released(const struct gg_zone *z, uint32_t free_stack, bool freed)
{
	ranges_stale();
	gg_frees_remember(z, free_stack);
	forgotten(z, freed);
}

void gg_redzone_freeing(uint64_t ptr, void *stream, bool async, struct gg_redzone_free *t)
{
	uint64_t before = gg_findings_total();
	struct gg_violation v;
	bool capturing = false;

	int err;

	t->held = false;
	t->violated = false;
	t->quarantined = false;
	t->twice = false;
	/* Out of the registry before the driver frees, so an allocation that gets
	 * the same address on another thread never meets this zone. */
	if (!ptr || (err = gg_registry_take(ptr, &t->zone)) == -ENOENT)
		return; /* not ours: untouched */
	if (err == -EBUSY) {
		/* Quarantined: freed already, though the driver still holds it. */
		freed_twice(t);
		return;
	}
	t->held = true;
	if (t->zone.flags & GG_ZONE_SCANNING) {
		/* A batched scan is reading its band: the memory must outlive the read. */
		pthread_mutex_lock(&redzone_state.batch_lock);
		while (redzone_state.batch_active)
			pthread_cond_wait(&redzone_state.batch_done, &redzone_state.batch_lock);
		pthread_mutex_unlock(&redzone_state.batch_lock);
		t->zone.flags &= (uint8_t)~GG_ZONE_SCANNING;
	}
	if (!redzone_state.check_on_free) {
		unchecked(GG_UNCHECKED_check_on_free_off); /* its band is never seen again */
	} else {
		/* A stream-ordered free reads after the work queued on its stream, which
		 * waits for it; one being captured into a graph cannot be waited for. */
		if (async && (gg_device_capturing(stream, &capturing) || capturing))
			unchecked(GG_UNCHECKED_capturing);
		else if (gg_redzone_check_zone(&t->zone, async ? stream : NULL, "free", false, &v) > 0)
			t->violated = true, gg_findings_record(&v);
	}
	gg_redzone_halt_if_asked(before);
	if (redzone_state.quarantine)
		quarantine(stream, async, t);
}

void gg_redzone_freed(const char *api, uint64_t ptr, const struct gg_redzone_free *t, int rc,
		      const char *rc_name)
{
	gg_report_free(api, ptr, rc_name);
	if (t->twice) {
		struct gg_quarantine_entry e;
		struct gg_violation v = {
			.kind = GG_VIOLATION_DOUBLE_FREE,
			.index = t->zone.index,
			.user = t->zone.user,
			.pad = redzone_state.pad,
			.ptr = ptr,
			.site = t->zone.site,
			.detected_by = "free",
			.kernel = -1,
			.api = api,
			.address = ptr,
			.free_stack = gg_depot_capture(t->caller, t->frame),
		};

		if (!gg_quarantine_find(ptr, &e))
			v.first_free_stack = e.free_stack;
		gg_redzone_found(&v);
		return;
	}
	if (t->quarantined)
		return;
	if (!t->held) {
		/* What no zone starts, and the driver refused: freed before, or a
		 * pointer inside an allocation (frees.c). */
		if (rc != 0 && ptr && redzone_state.pad)
			gg_frees_refused(api, ptr, t->caller, t->frame);
		else if (rc == 0 && ptr)
			ranges_stale(); /* memory the shim did not pad, gone */
		return;
	}
	if (rc == 0) {
		ranges_stale();
		gg_frees_remember(&t->zone, gg_depot_capture(t->caller, t->frame));
		forgotten(&t->zone, true);
		return;
	}
	/* The driver refused: the allocation lives on, and so does its zone, as it
	 * was (docs/how-it-works.md, "Stacks, frees and leaks"), its band filled again when the check above reported it. */
	if (t->violated)
		fill_again(&t->zone);
	if (gg_registry_insert(&t->zone) != 0) {
		/* Out of memory for the registry: the band can no longer be watched. */
		unchecked(GG_UNCHECKED_no_memory);
		forgotten(&t->zone, true);
	}
}

int gg_redzone_user_size(uint64_t base, uint64_t *user)
{
	struct gg_zone z;

	if (!redzone_state.pad || gg_registry_find(base, &z))
		return -ENOENT;
	/* Quarantined: freed, to the application, so no byte of it is its own. */
	*user = z.flags & GG_ZONE_QUARANTINED ? 0 : z.user;
	return 0;
}

/* @v was found right after @lc's launch: it names the kernel and the call
 * site of its launch (unwound here, inside the launch hook). */
static void by_launch(struct gg_violation *v, struct gg_launch_check *lc)
{
	if (!lc->site_found) {
		struct gg_callsite cs;

		gg_callsite_find(&cs);
		lc->site = gg_callsite_intern(&cs);
		lc->site_found = true;
	}
	v->by_launch = true;
	v->kernel = lc->slot;
	v->launch = lc->launch;
	v->launch_site = lc->site;
}

void gg_redzone_report_found(struct gg_violation *v, struct gg_launch_check *lc)
{
	if (lc)
		by_launch(v, lc);
	gg_findings_record(v);
}

bool gg_redzone_readable(uint16_t slot, void **ctx, void **stream)
{
	struct ctx_slot *s = &redzone_state.ctx[slot];
	void *st = atomic_load(&s->stream);

	if (!atomic_load(&s->alive) || !st)
		return false;
	if (ctx)
		*ctx = atomic_load(&s->ctx);
	if (stream)
		*stream = st;
	return true;
}

void *gg_redzone_stream_of(uint16_t slot)
{
	return atomic_load(&redzone_state.ctx[slot].stream);
}

uint64_t gg_redzone_zones_of(int slot)
{
	return atomic_load(&redzone_state.ctx[slot].zones);
}

void gg_redzone_checked(uint64_t n)
{
	atomic_fetch_add_explicit(&redzone_state.count.checked, n, memory_order_relaxed);
}

/* Under the zone's shard lock: one band read at most. */
static bool scan_zone(void *arg, struct gg_zone *z)
{
	struct gg_scan *sc = arg;
	struct ctx_slot *s = &redzone_state.ctx[z->ctx];

	if (sc->only_ctx >= 0 && z->ctx != sc->only_ctx)
		return false;
	if (sc->forget) {
		forgotten(z, false);
		return true;
	}
	if (z->flags & GG_ZONE_QUARANTINED) /* its fill is checked when it leaves */
		return false;
	int r = gg_redzone_check_zone(z, atomic_load(&s->stream), sc->by, true, &sc->v);

	if (r >= 0) { /* seen clean, or reported with its suspects */
		memset(z->suspects, 0, sizeof(z->suspects));
		gg_suspects_stale();
	}
	sc->found = r > 0;
	return false;
}

/* With no lock held: the report of what scan_zone() found. */
static void scan_after(void *arg)
{
	struct gg_scan *sc = arg;

	if (sc->found && sc->lc)
		by_launch(&sc->v, sc->lc);
	if (sc->found)
		gg_findings_record(&sc->v);
	sc->found = false;
}

/* A scan of every live band (of one context when @sc->only_ctx >= 0). */
void gg_redzone_scan_live(struct gg_scan *sc)
{
	uint64_t before = gg_findings_total();

	if (!redzone_state.pad)
		return;
	if (!sc->lc) /* a checked launch's is no scan of the process's */
		atomic_fetch_add_explicit(&redzone_state.count.scans, 1, memory_order_relaxed);
	if (!gg_scan_batched(sc)) {
		/* Out of memory for the batch: band by band, with no allocation
		 * (in the shards' order, not the allocations'). */
		gg_scan_unbatched();
		gg_registry_foreach(scan_zone, scan_after, sc);
	}
	gg_redzone_halt_if_asked(before);
}

void gg_redzone_scan(const char *why)
{
	if (redzone_state.pad)
		gg_redzone_caching_check();
	struct gg_scan sc = { .by = strcmp(why, "exit") ? "scan" : "exit", .only_ctx = -1 };

	/* A boundary and exit release the quarantine, its fills checked. */
	(void)gg_quarantine_release(-1, sc.by, false);
	gg_redzone_scan_live(&sc);
}

void gg_redzone_context_ending(void *ctx)
{
	struct gg_scan sc = { .by = "teardown", .only_ctx = gg_redzone_find_ctx(ctx) };

	if (sc.only_ctx >= 0) {
		(void)gg_quarantine_release(sc.only_ctx, "teardown", false);
		gg_redzone_scan_live(&sc);
	}
}

void gg_redzone_context_ended(void *ctx)
{
	struct gg_scan sc = { .by = "teardown", .only_ctx = gg_redzone_find_ctx(ctx), .forget = true };

	/* Its modules went with it: their functions' handles may come back;
	 * and its memory, which the threads' range caches may name. */
	gg_kernels_unloaded(NULL);
	ranges_stale();
	if (sc.only_ctx < 0)
		return;
	/* What it quarantined died with it, unseen (a detach, say, that ended it). */
	(void)gg_quarantine_release(sc.only_ctx, "teardown", true);
	/* Its stream and events went with it. */
	atomic_store(&redzone_state.ctx[sc.only_ctx].alive, false);
	atomic_store(&redzone_state.ctx[sc.only_ctx].stream, NULL);
	if (redzone_state.pad)
		gg_registry_foreach(scan_zone, NULL, &sc);
}

void gg_redzone_context_detached(void *ctx)
{
	bool alive = false;

	/* A detach that was not the last leaves it alive; when the driver cannot
	 * say, it is taken for gone: a dead context must never be read. */
	if (gg_device_context_alive(ctx, &alive) || !alive)
		gg_redzone_context_ended(ctx);
}

void *gg_redzone_device_ending(int dev)
{
	void *primary = NULL;

	/* Only the primary context dies: contexts made with cuCtxCreate live on. */
	if (!redzone_state.pad || gg_device_primary(dev, &primary) || gg_redzone_find_ctx(primary) < 0)
		return NULL;
	gg_redzone_context_ending(primary);
	return primary;
}

void gg_redzone_device_ended(int dev, void *primary, bool reset)
{
	bool active = false;

	/* A release that was not the last leaves the primary context alive. */
	if (!primary || (!reset && (gg_device_primary_active(dev, &active) || active)))
		return;
	gg_redzone_context_ended(primary); /* its kernels' handles too */
}

/* A checked launch's reads, like a batched scan's: one at a time, and a free
 * of a zone flagged SCANNING waits until it is done. */
void gg_redzone_reading(bool on)
{
	if (on)
		pthread_mutex_lock(&redzone_state.scan_lock);
	pthread_mutex_lock(&redzone_state.batch_lock);
	redzone_state.batch_active = on;
	if (!on)
		pthread_cond_broadcast(&redzone_state.batch_done);
	pthread_mutex_unlock(&redzone_state.batch_lock);
	if (!on)
		pthread_mutex_unlock(&redzone_state.scan_lock);
}

/* The allocations a thread's launches and copies pointed into the middle
 * of, as the driver said, until a free may have changed them. Only a hint:
 * not every free is one the shim sees (memory it did not pad, a context's
 * end takes all of its own), so what the cache says is never the ground of
 * a refusal or a report; those ask the driver again (interior_base's
 * @fresh). */
#define RANGES 8
static __thread struct {
	uint64_t lo, hi, base, frees;
} ranges[RANGES] __attribute__((tls_model("initial-exec")));
static __thread unsigned ranges_next __attribute__((tls_model("initial-exec")));

/* The zone base @ptr points into, when it is not a zone's own address: from
 * the thread's cache unless @fresh, else the driver (in the launch's or the
 * copy's context, current), whose answer replaces what the cache held. */
static uint64_t interior_base(uint64_t ptr, bool fresh)
{
	uint64_t frees = atomic_load_explicit(&redzone_state.frees, memory_order_relaxed), base;
	size_t size;
	unsigned i;

	if (ptr < atomic_load_explicit(&redzone_state.lowest, memory_order_relaxed) ||
	    ptr >= atomic_load_explicit(&redzone_state.highest, memory_order_relaxed))
		return 0;
	for (i = 0; i < RANGES; i++) {
		if (ranges[i].frees != frees || ptr < ranges[i].lo || ptr >= ranges[i].hi)
			continue;
		if (!fresh)
			return ranges[i].base;
		ranges[i].frees = frees - 1; /* asked again below */
	}
	if (gg_device_range(ptr, &base, &size))
		return 0;
	i = ranges_next++ % RANGES;
	ranges[i].lo = base;
	ranges[i].hi = base + size;
	ranges[i].base = base;
	ranges[i].frees = frees;
	return base;
}

uint64_t gg_redzone_interior_base(uint64_t ptr)
{
	return interior_base(ptr, false);
}

uint64_t gg_redzone_interior_base_now(uint64_t ptr)
{
	return interior_base(ptr, true);
}

void gg_redzone_reaches(uint64_t ptr, uint64_t end)
{
	note_bounds(ptr, end);
}

static int zone_of(uint64_t ptr, struct gg_zone *z, bool fresh)
{
	uint64_t base;

	if (!redzone_state.pad)
		return -ENOENT;
	if (!gg_registry_find(ptr, z))
		return 0;
	/* Anywhere in the driver's allocation: past the user's bytes is padding,
	 * a pitched allocation's spare rows after its band included. */
	if (!(base = interior_base(ptr, fresh)) || base == ptr || gg_registry_find(base, z))
		return -ENOENT;
	return 0;
}

int gg_redzone_zone_of(uint64_t ptr, struct gg_zone *z)
{
	return zone_of(ptr, z, false);
}

int gg_redzone_zone_of_now(uint64_t ptr, struct gg_zone *z)
{
	return zone_of(ptr, z, true);
}

void gg_redzone_finding(void)
{
	uint64_t before;

	before = gg_findings_api_overrun();
	gg_redzone_halt_if_asked(before);
}

void gg_redzone_stats(struct gg_report_redzone *out)
{
	memset(out, 0, sizeof(*out));
	out->calls = atomic_load_explicit(&redzone_state.count.next_index, memory_order_relaxed);
	out->failed = atomic_load_explicit(&redzone_state.count.failed, memory_order_relaxed);
	out->padded = atomic_load_explicit(&redzone_state.count.padded, memory_order_relaxed);
	out->fallbacks = atomic_load_explicit(&redzone_state.count.fallbacks, memory_order_relaxed);
	gg_registry_totals(&out->live, &out->live_bytes);
	out->registry_bytes = gg_registry_footprint();
	out->scans = atomic_load_explicit(&redzone_state.count.scans, memory_order_relaxed);
	out->checked = atomic_load_explicit(&redzone_state.count.checked, memory_order_relaxed);
	out->unchecked = atomic_load_explicit(&redzone_state.count.unchecked, memory_order_relaxed);
	for (int u = 0; u < GG_UNCHECKED_COUNT; u++)
		out->unchecked_why[u] = atomic_load_explicit(&redzone_state.count.unchecked_why[u],
							     memory_order_relaxed);
	gg_findings_stats(out);
	{
		struct gg_quarantine_stats q;

		gg_quarantine_stats(&q);
		out->quarantine = gg_quarantine_size();
		out->quarantine_held = q.held;
		out->quarantine_held_bytes = q.held_bytes;
		out->quarantine_entered = q.entered;
		out->quarantine_released = q.released;
		out->quarantine_checked_bytes = q.checked_bytes;
		out->quarantine_unchecked_bytes = q.unchecked_bytes;
		out->quarantine_oom_releases = q.oom_releases;
		/* Quarantined zones are in the registry, but freed to the application. */
		out->live -= q.held < out->live ? q.held : out->live;
		out->live_bytes -= q.held_user < out->live_bytes ? q.held_user : out->live_bytes;
	}
	gg_scan_figures(&out->batched, &out->scan_calls);
	out->launches_checked = gg_checked_count();
	out->launches_unfollowed = gg_suspects_unfollowed();
	out->coverage.allocations = atomic_load(&redzone_state.count.allocations);
	out->coverage.guarded = atomic_load(&redzone_state.count.guarded);
	out->coverage.guarded_bytes = atomic_load(&redzone_state.count.guarded_bytes);
	for (int r = 0; r < GG_REASON_COUNT; r++)
		out->coverage.unguarded[r] = atomic_load(&redzone_state.count.unguarded[r]);
	out->coverage.unguarded_bytes = atomic_load(&redzone_state.count.unguarded_bytes);
	out->coverage.vmm_bytes = atomic_load(&redzone_state.count.vmm_bytes);
	out->coverage.ncaching = gg_redzone_caching(out->coverage.caching, GG_REPORT_CACHING_MAX);
}

void gg_redzone_atfork_prepare(void)
{
	pthread_mutex_lock(&redzone_state.scan_lock);
	pthread_mutex_lock(&redzone_state.lock);
	gg_registry_atfork_prepare();
	pthread_mutex_lock(&redzone_state.pending_lock);
	gg_findings_atfork_prepare();
	pthread_mutex_lock(&redzone_state.batch_lock);
	gg_ranges_atfork_prepare();
	gg_quarantine_atfork_prepare();
}

void gg_redzone_atfork_parent(void)
{
	gg_quarantine_atfork_parent();
	gg_ranges_atfork_parent();
	pthread_mutex_unlock(&redzone_state.batch_lock);
	gg_findings_atfork_parent();
	pthread_mutex_unlock(&redzone_state.pending_lock);
	gg_registry_atfork_parent();
	pthread_mutex_unlock(&redzone_state.lock);
	pthread_mutex_unlock(&redzone_state.scan_lock);
}

void gg_redzone_atfork_child(void)
{
	gg_redzone_caching_atfork_child();
	gg_frees_atfork_child();
	gg_leaks_atfork_child();
	pthread_mutex_init(&redzone_state.scan_lock, NULL);
	pthread_mutex_init(&redzone_state.lock, NULL);
	gg_registry_atfork_child();
	pthread_mutex_init(&redzone_state.pending_lock, NULL);
	gg_findings_atfork_child();
	pthread_mutex_init(&redzone_state.batch_lock, NULL);
	pthread_cond_init(&redzone_state.batch_done, NULL);
	gg_ranges_atfork_child();
	gg_quarantine_atfork_child();
	redzone_state.batch_active = false; /* the scanning thread did not come along */
	/* A process of its own (docs/how-it-works.md, "Boundaries, signals, exit"): no zone, count or violation of its
	 * parent's; it numbers its own allocations from 0. The context slots
	 * stay: they describe contexts, not findings. */
	GG_ZERO_COUNTERS(&redzone_state.count);
	gg_suspects_atfork_child(); /* the memos name the parent's zones */
	gg_scan_atfork_child();
	gg_checked_atfork_child();
	for (unsigned i = 0; i < atomic_load(&redzone_state.nctx); i++)
		atomic_store(&redzone_state.ctx[i].zones, 0);
	redzone_state.npending = 0;
}
