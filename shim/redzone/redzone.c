/* Red zones (SPEC §4).
 *
 * An allocation of N bytes with index >= MIN_IDX is asked of the driver as
 * N + P bytes; the band [ptr+N, ptr+N+P) is filled before the call returns
 * (on a private non-blocking stream of the context, synchronised, so nothing
 * of the application's is waited for) or, for a stream-ordered allocation,
 * on the allocation's own stream, ahead of any work the application queues
 * there. Each zone remembers its own expected byte (poison), so checks never
 * confuse the two fills.
 *
 * Lock order: the boundary lock, then redzone_state.lock, then a registry
 * shard lock. Reports are written with no lock of this module held, except
 * the violation list's readers. */
#include "redzone/redzone.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "callsite.h"
#include "config.h"
#include "gg.h"
#include "hooks/device.h"
#include "redzone/registry.h"
#include "report/report.h"
#include "shim.h"

#define MAX_CTX 256         /* contexts ever seen; u16 ids in zones */
#define MAX_VIOLATIONS 256  /* kept for the reports; all are counted */
#define CHUNK 4096          /* bytes of a band read at a time */

struct ctx_slot {
	_Atomic(void *) ctx; /* set once under the lock; never reused */
	void *stream;        /* private stream; under the lock */
	int dev;
	atomic_bool alive;
};

static struct {
	/* Written by gg_redzone_configure() during set-up; read-only after. */
	uint64_t pad, min_idx, trace_idx, poison_lo, poison_hi;
	bool trace_set, poison_set, check_on_free, halt;
	uint8_t fill;

	/* Lock-free counters. */
	atomic_uint_fast64_t next_index, failed, padded, fallbacks;
	atomic_uint_fast64_t scans, checked, unchecked, violations;
	atomic_bool batched;

	pthread_mutex_t lock;  /* guards ctx streams, nctx growth, @viol, @nviol */
	struct ctx_slot ctx[MAX_CTX];
	atomic_uint nctx;      /* slots in use; read lock-free */
	struct gg_violation viol[MAX_VIOLATIONS];
	unsigned nviol;
} redzone_state = { .lock = PTHREAD_MUTEX_INITIALIZER };

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
}

uint64_t gg_redzone_next_index(void)
{
	return atomic_fetch_add_explicit(&redzone_state.next_index, 1, memory_order_relaxed);
}

size_t gg_redzone_request(uint64_t index, size_t bytes)
{
	size_t pad = (size_t)redzone_state.pad;

	if (!pad || !bytes || index < redzone_state.min_idx || bytes > SIZE_MAX - pad)
		return 0;
	return gg_registry_room() ? pad : 0; /* a zone that cannot be recorded: no band */
}

void gg_redzone_fallback(void)
{
	atomic_fetch_add_explicit(&redzone_state.fallbacks, 1, memory_order_relaxed);
}

static uint8_t expected_byte(uint64_t index)
{
	if (!redzone_state.poison_set)
		return redzone_state.fill;
	return index >= redzone_state.poison_lo && index < redzone_state.poison_hi ? redzone_state.fill
										  : 0x00;
}

/* The slot of @ctx, added if new; -ENOSPC when the table is full. Lock-free
 * when known: contexts are few and never leave the table. */
static int ctx_id(void *ctx, int dev)
{
	unsigned n = atomic_load_explicit(&redzone_state.nctx, memory_order_acquire);
	int id = -ENOSPC;

	for (unsigned i = 0; i < n; i++)
		if (atomic_load_explicit(&redzone_state.ctx[i].ctx, memory_order_relaxed) == ctx &&
		    atomic_load_explicit(&redzone_state.ctx[i].alive, memory_order_relaxed))
			return (int)i;
	pthread_mutex_lock(&redzone_state.lock);
	n = atomic_load_explicit(&redzone_state.nctx, memory_order_relaxed);
	for (unsigned i = 0; i < n; i++)
		if (redzone_state.ctx[i].ctx == ctx && redzone_state.ctx[i].alive)
			id = (int)i;
	if (id < 0 && n < MAX_CTX) {
		/* A handle value reused by a new context gets a new slot. */
		struct ctx_slot *s = &redzone_state.ctx[n];

		s->ctx = ctx;
		s->dev = dev;
		s->stream = NULL;
		s->alive = true;
		atomic_store_explicit(&redzone_state.nctx, n + 1, memory_order_release);
		id = (int)n;
	}
	pthread_mutex_unlock(&redzone_state.lock);
	return id;
}

/* The private stream of context slot @id, created on first use. */
static int private_stream(int id, void **stream)
{
	struct ctx_slot *s = &redzone_state.ctx[id];
	int err = 0;

	pthread_mutex_lock(&redzone_state.lock);
	if (!s->stream)
		err = gg_device_stream_create(s->ctx, &s->stream);
	*stream = s->stream;
	pthread_mutex_unlock(&redzone_state.lock);
	return err;
}

void gg_redzone_alloc(const char *api, uint64_t index, size_t bytes, size_t pad, uint64_t ptr,
		      void *stream, bool async, int rc, const char *rc_name)
{
	struct gg_zone z = { .ptr = ptr, .user = bytes, .index = index, .pad = (uint32_t)pad };
	void *ctx, *fill_stream;
	int dev, id;

	if (rc != 0)
		atomic_fetch_add_explicit(&redzone_state.failed, 1, memory_order_relaxed);
	gg_report_alloc(api, index, bytes, pad, rc == 0 ? ptr : 0, rc_name);
	if (redzone_state.trace_set && index == redzone_state.trace_idx)
		gg_report_alloc_stack(index, bytes);
	if (rc != 0 || !pad || !ptr)
		return;
	if (gg_device_current(&ctx, &dev) || (id = ctx_id(ctx, dev)) < 0)
		return; /* unrecorded: the band stays, unchecked and unseen */
	z.ctx = (uint16_t)id;
	z.expected = expected_byte(index);
	z.flags = async ? GG_ZONE_ASYNC : 0;
	/* Filled before the call returns: on the allocation's own stream (ahead
	 * of the application's next work there), else on ours, waited for. */
	if (async)
		fill_stream = stream;
	else if (private_stream(id, &fill_stream))
		return;
	if (gg_device_fill(ctx, fill_stream, ptr + bytes, z.expected, pad, !async))
		return;
	z.site = gg_callsite_intern(gg_callsite_find());
	if (gg_registry_insert(&z) == 0)
		atomic_fetch_add_explicit(&redzone_state.padded, 1, memory_order_relaxed);
}

/* What a band read found. */
struct band_check {
	uint64_t first, last, changed;
	uint8_t first_value;
};

/* Compare @n bytes read at band offset @off with @expected. */
static void compare(struct band_check *c, const uint8_t *buf, size_t n, uint64_t off,
		    uint8_t expected)
{
	for (size_t i = 0; i < n; i++) {
		if (buf[i] == expected)
			continue;
		if (!c->changed++) {
			c->first = off + i;
			c->first_value = buf[i];
		}
		c->last = off + i;
	}
}

/* Read the band of @z through @stream (NULL: the legacy stream) in @ctx.
 * 0, or an error when it could not be read. */
static int read_band(const struct gg_zone *z, void *ctx, void *stream, struct band_check *c)
{
	uint8_t buf[CHUNK];

	memset(c, 0, sizeof(*c));
	for (uint64_t off = 0; off < z->pad; off += CHUNK) {
		size_t n = z->pad - off < CHUNK ? (size_t)(z->pad - off) : CHUNK;
		int err = gg_device_read(ctx, stream, z->ptr + z->user + off, buf, n);

		if (err)
			return err;
		compare(c, buf, n, off, z->expected);
	}
	return 0;
}

static void violation(const struct gg_zone *z, const struct band_check *c, const char *by)
{
	struct gg_violation v = {
		.index = z->index, .user = z->user, .pad = z->pad,
		.first = c->first, .last = c->last, .changed = c->changed,
		.first_value = c->first_value, .expected = z->expected,
		.ptr = z->ptr, .site = z->site, .detected_by = by,
	};

	atomic_fetch_add_explicit(&redzone_state.violations, 1, memory_order_relaxed);
	pthread_mutex_lock(&redzone_state.lock);
	if (redzone_state.nviol < MAX_VIOLATIONS)
		redzone_state.viol[redzone_state.nviol++] = v;
	pthread_mutex_unlock(&redzone_state.lock);
	gg_report_violation(&v);
}

/* Check one band; true when it was read. */
static bool check(const struct gg_zone *z, void *stream, const char *by, bool refill)
{
	struct ctx_slot *s = &redzone_state.ctx[z->ctx];
	struct band_check c;

	if (!atomic_load_explicit(&s->alive, memory_order_acquire) || read_band(z, s->ctx, stream, &c)) {
		atomic_fetch_add_explicit(&redzone_state.unchecked, 1, memory_order_relaxed);
		return false;
	}
	atomic_fetch_add_explicit(&redzone_state.checked, 1, memory_order_relaxed);
	if (!c.changed)
		return true;
	violation(z, &c, by);
	/* Re-filled, so the next scan reports only new writes. */
	if (refill && stream)
		(void)gg_device_fill(s->ctx, stream, z->ptr + z->user, z->expected, z->pad, true);
	return true;
}

static void halt_if_asked(uint64_t before)
{
	if (redzone_state.halt && atomic_load(&redzone_state.violations) != before)
		gg_shim_fatal();
}

void gg_redzone_freeing(uint64_t ptr, void *stream, bool async)
{
	struct gg_zone z;
	uint64_t before = atomic_load(&redzone_state.violations);

	if (!ptr || gg_registry_remove(ptr, &z))
		return; /* not ours: untouched */
	if (redzone_state.check_on_free)
		/* Sync frees read on the legacy stream: after the work that could write. */
		check(&z, async ? stream : NULL, "free", false);
	halt_if_asked(before);
}

void gg_redzone_freed(const char *api, uint64_t ptr, int rc, const char *rc_name)
{
	gg_report_free(api, ptr, rc_name);
	(void)rc;
}

int gg_redzone_user_size(uint64_t base, uint64_t *user)
{
	struct gg_zone z;

	if (!redzone_state.pad || gg_registry_find(base, &z))
		return -ENOENT;
	*user = z.user;
	return 0;
}

struct scan {
	const char *by;
	int only_ctx;  /* -1: all */
	int only_dev;  /* -1: all */
	bool forget;   /* drop the zones after checking (their memory dies) */
};

static bool scan_zone(void *arg, struct gg_zone *z)
{
	struct scan *sc = arg;
	struct ctx_slot *s = &redzone_state.ctx[z->ctx];
	void *stream = NULL;

	if ((sc->only_ctx >= 0 && z->ctx != sc->only_ctx) || (sc->only_dev >= 0 && s->dev != sc->only_dev))
		return false;
	if (!atomic_load_explicit(&s->alive, memory_order_acquire) || private_stream(z->ctx, &stream))
		atomic_fetch_add_explicit(&redzone_state.unchecked, 1, memory_order_relaxed);
	else
		check(z, stream, sc->by, !sc->forget);
	return sc->forget;
}

static void scan(struct scan *sc)
{
	uint64_t before = atomic_load(&redzone_state.violations);

	if (!redzone_state.pad)
		return;
	atomic_fetch_add_explicit(&redzone_state.scans, 1, memory_order_relaxed);
	gg_registry_foreach(scan_zone, sc);
	halt_if_asked(before);
}

void gg_redzone_scan(const char *why)
{
	struct scan sc = { .by = strcmp(why, "exit") ? "scan" : "exit", .only_ctx = -1, .only_dev = -1 };

	scan(&sc);
}

static int find_ctx(void *ctx)
{
	unsigned n = atomic_load_explicit(&redzone_state.nctx, memory_order_acquire);

	for (unsigned i = 0; i < n; i++)
		if (redzone_state.ctx[i].ctx == ctx && redzone_state.ctx[i].alive)
			return (int)i;
	return -1;
}

/* The context of slot @id is gone: its stream went with it. */
static void ctx_dead(int id)
{
	pthread_mutex_lock(&redzone_state.lock);
	redzone_state.ctx[id].stream = NULL;
	atomic_store(&redzone_state.ctx[id].alive, false);
	pthread_mutex_unlock(&redzone_state.lock);
}

void gg_redzone_context_ending(void *ctx)
{
	struct scan sc = { .by = "teardown", .only_ctx = find_ctx(ctx), .only_dev = -1 };

	if (sc.only_ctx >= 0)
		scan(&sc);
}

void gg_redzone_context_ended(void *ctx)
{
	struct scan sc = { .by = "teardown", .only_ctx = find_ctx(ctx), .only_dev = -1 };

	if (sc.only_ctx < 0)
		return;
	ctx_dead(sc.only_ctx);
	sc.forget = true;
	gg_registry_foreach(scan_zone, &sc); /* dead: counted unchecked? no: forgotten */
}

/* Whether any context of @dev ever held a zone: nothing to do otherwise. */
static bool device_seen(int dev)
{
	unsigned n = atomic_load_explicit(&redzone_state.nctx, memory_order_acquire);

	for (unsigned i = 0; i < n; i++)
		if (redzone_state.ctx[i].dev == dev && redzone_state.ctx[i].alive)
			return true;
	return false;
}

void gg_redzone_device_ending(int dev)
{
	struct scan sc = { .by = "teardown", .only_ctx = -1, .only_dev = dev };

	if (device_seen(dev))
		scan(&sc);
}

void gg_redzone_device_ended(int dev, bool reset)
{
	bool active = false;
	unsigned n = atomic_load_explicit(&redzone_state.nctx, memory_order_acquire);

	/* A release that was not the last leaves the primary context alive. */
	if (!device_seen(dev) || (!reset && (gg_device_primary_active(dev, &active) || active)))
		return;
	for (unsigned i = 0; i < n; i++) {
		struct scan sc = { .by = "teardown", .only_ctx = (int)i, .only_dev = dev, .forget = true };

		if (redzone_state.ctx[i].dev != dev || !redzone_state.ctx[i].alive)
			continue;
		ctx_dead((int)i);
		gg_registry_foreach(scan_zone, &sc);
	}
}

void gg_redzone_stats(struct gg_redzone_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->calls = atomic_load_explicit(&redzone_state.next_index, memory_order_relaxed);
	out->failed = atomic_load_explicit(&redzone_state.failed, memory_order_relaxed);
	out->padded = atomic_load_explicit(&redzone_state.padded, memory_order_relaxed);
	out->fallbacks = atomic_load_explicit(&redzone_state.fallbacks, memory_order_relaxed);
	gg_registry_totals(&out->live, &out->live_bytes);
	out->registry_bytes = gg_registry_footprint();
	out->scans = atomic_load_explicit(&redzone_state.scans, memory_order_relaxed);
	out->checked = atomic_load_explicit(&redzone_state.checked, memory_order_relaxed);
	out->unchecked = atomic_load_explicit(&redzone_state.unchecked, memory_order_relaxed);
	out->violations = atomic_load_explicit(&redzone_state.violations, memory_order_relaxed);
	out->batched = atomic_load_explicit(&redzone_state.batched, memory_order_relaxed);
}

void gg_redzone_foreach_violation(void (*fn)(void *ctx, const struct gg_violation *v), void *ctx)
{
	pthread_mutex_lock(&redzone_state.lock);
	for (unsigned i = 0; i < redzone_state.nviol; i++)
		fn(ctx, &redzone_state.viol[i]);
	pthread_mutex_unlock(&redzone_state.lock);
}

void gg_redzone_atfork_prepare(void)
{
	pthread_mutex_lock(&redzone_state.lock);
}

void gg_redzone_atfork_parent(void)
{
	pthread_mutex_unlock(&redzone_state.lock);
}

void gg_redzone_atfork_child(void)
{
	pthread_mutex_init(&redzone_state.lock, NULL);
	gg_registry_atfork_child();
}
