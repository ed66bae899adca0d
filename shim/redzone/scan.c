/* Batched scans (docs/how-it-works.md, "Red zones"): a full scan reads every band of a
 * context with one batched copy (when the driver has cuMemcpyBatchAsync), a
 * constant number of driver calls however many zones there are, and asks
 * whether runs of bands are intact at once. Its zones are flagged SCANNING
 * while it reads, under the zones' reading locks (gg_redzone_reading), and a
 * free of one of them waits for the batch, so no band is read after its
 * memory died. What the zones are, their contexts and their fills, is the
 * zone lifecycle's (redzone.c, through redzone/zones.h).
 *
 * Lock order: the reading locks (redzone.c), then a registry shard lock
 * while the zones are collected; reports run with neither held. */
#include "redzone/scan.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "driver/device.h"
#include "redzone/adjacency.h"
#include "redzone/band.h"
#include "redzone/registry.h"
#include "redzone/suspects.h"
#include "redzone/zones.h"

static struct {
	/* The last full scan that read anything (lock-free). */
	atomic_bool batched;        /* it read its bands in batches */
	atomic_uint_fast64_t calls; /* the driver calls of its reads */
} scan_state;

/* A zone as a batched scan reads and reports it: 40 bytes, where a copy of
 * the registry's zone would be 72, for most zones have no suspects; those of
 * a zone that has some are kept aside, in the batch's @suspects. */
struct batch_zone {
	uint64_t ptr, user, index;
	uint32_t site;
	uint32_t suspects; /* its place in batch.suspects, or NO_SUSPECTS */
	uint16_t ctx;
	uint8_t expected;
	uint8_t flags; /* the zone's: GG_ZONE_ROUNDED says its band's length */
};
#define NO_SUSPECTS UINT32_MAX

/* A zone of a batch by its address: where a band changed up to its top
 * looks for the zone directly above it. */
struct batch_place {
	uint64_t ptr;
	size_t pos; /* in batch.zones */
};

struct batch {
	struct batch_zone *zones; /* the zones flagged SCANNING */
	size_t n, cap;
	uint64_t (*suspects)[GG_SUSPECTS]; /* their suspects, as they were when read */
	size_t nsuspects, suspects_cap;
	uint64_t lo, hi; /* their lowest and highest allocation index */
	bool mixed;      /* they are of more than one context */
	int only_ctx;    /* -1: every context */
	/* The context slot of the zone collected last, and whether it could be
	 * read then (one that ends meanwhile fails its read: unchecked). */
	int slot_seen;
	bool slot_readable;
	bool oom;
	uint64_t bytes; /* the bands' lengths, added up */
	/* Its zones by address, made at the first band changed up to its top
	 * (almost never); @places_failed: out of memory for them. */
	struct batch_place *places;
	bool places_failed;
};

/* The array @p of *@cap elements of @size bytes, grown to twice as many
 * (*@cap updated), or NULL (@p as it was). */
static void *grown(void *p, size_t *cap, size_t size)
{
	size_t want = *cap ? *cap * 2 : 1024;

	if (want > SIZE_MAX / size || !(p = realloc(p, want * size)))
		return NULL;
	*cap = want;
	return p;
}

/* Under the zone's shard lock: take it into the batch, or count it unchecked. */
static void collect_zone(struct batch *b, struct gg_zone *z)
{
	uint32_t sus = NO_SUSPECTS;

	if ((b->only_ctx >= 0 && z->ctx != b->only_ctx) || (z->flags & GG_ZONE_QUARANTINED))
		return;               /* a quarantined one's fill is checked when it leaves */
	if (z->ctx != b->slot_seen) { /* almost every zone is of the last one's context */
		b->slot_seen = z->ctx;
		b->slot_readable = gg_redzone_readable(z->ctx, NULL, NULL);
	}
	if ((z->flags & GG_ZONE_UNFILLED) || !b->slot_readable ||
	    ((z->flags & GG_ZONE_PENDING) && !gg_redzone_fill_done(z))) {
		gg_redzone_unchecked(GG_UNCHECKED_unreadable);
		return;
	}
	if (b->n == b->cap) {
		struct batch_zone *zones = grown(b->zones, &b->cap, sizeof(*zones));

		if (!zones)
			goto oom;
		b->zones = zones;
	}
	if (z->suspects[0] && b->nsuspects == b->suspects_cap) {
		uint64_t(*suspects)[GG_SUSPECTS] = b->nsuspects < NO_SUSPECTS
							   ? grown(b->suspects, &b->suspects_cap,
								   sizeof(*suspects))
							   : NULL;

		if (!suspects)
			goto oom;
		b->suspects = suspects;
	}
	if (z->suspects[0]) {
		/* Read now: clean, or reported with them (a kernel still running may
		 * write later, unnamed; the next check names what comes after). An
		 * empty list is left alone: clearing it would change nothing a
		 * kernel's memo relies on. */
		sus = (uint32_t)b->nsuspects;
		memcpy(b->suspects[b->nsuspects++], z->suspects, sizeof(z->suspects));
		memset(z->suspects, 0, sizeof(z->suspects));
		gg_suspects_stale();
	}
	z->flags |= GG_ZONE_SCANNING;
	if (!b->n)
		b->lo = b->hi = z->index;
	else if (z->index < b->lo)
		b->lo = z->index;
	else if (z->index > b->hi)
		b->hi = z->index;
	b->mixed |= b->n && z->ctx != b->zones[0].ctx;
	b->zones[b->n++] = (struct batch_zone){
		.ptr = z->ptr,
		.user = z->user,
		.index = z->index,
		.site = z->site,
		.suspects = sus,
		.ctx = z->ctx,
		.expected = z->expected,
		.flags = z->flags,
	};
	b->bytes += gg_redzone_band_length(z->user, z->flags);
	return;
oom:
	b->oom = true;
	gg_redzone_unchecked(GG_UNCHECKED_no_memory);
}

/* Under their shard's lock: a run of zones (free slots have ptr 0). */
static void collect_run(void *arg, struct gg_zone *zones, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (zones[i].ptr)
			collect_zone(arg, &zones[i]);
}

/* By context (one read per context), then allocation index: a scan reports
 * its violations in the order of the allocations, not of the shards' hash. */
static int by_ctx_then_index(const void *a, const void *b)
{
	const struct batch_zone *x = a, *y = b;

	if (x->ctx != y->ctx)
		return (x->ctx > y->ctx) - (x->ctx < y->ctx);
	return (x->index > y->index) - (x->index < y->index);
}

#define RADIX_BITS 11 /* two passes put 10^5 zones (17 bits of index) in order */
#define NO_SLOT UINT32_MAX

/* The order a batch reads and reports its zones in (by_ctx_then_index):
 * @order[i] is the position in b->zones of the i-th zone. @scratch: room for
 * 2 * b->n keys. Zones of one context are put in order by their allocation
 * indexes without comparing them: when the indexes are dense (their span
 * under 4 times their number, as in a process that keeps most of what it
 * allocated), each zone is put in its index's slot and the slots are read in
 * order; else by radix passes over the index bits that differ. Either costs
 * 10 to 30 instructions a zone where qsort cost 400. Zones of several
 * contexts, or indexes 2^32 apart, go by qsort. */
static void batch_order(struct batch *b, uint32_t *order, uint64_t *scratch)
{
	uint64_t span = b->hi - b->lo, *keys = scratch, *tmp = scratch + b->n;

	if (span < 4 * (uint64_t)b->n && !b->mixed) {
		uint32_t *slot = (uint32_t *)(void *)scratch; /* span + 1 <= 4n fit in 16n bytes */
		size_t k = 0;

		memset(slot, 0xff, (span + 1) * sizeof(*slot));
		for (size_t i = 0; i < b->n; i++)
			slot[b->zones[i].index - b->lo] = (uint32_t)i;
		for (uint64_t j = 0; j <= span; j++)
			if (slot[j] != NO_SLOT)
				order[k++] = slot[j];
		if (k == b->n)
			return;
		/* Two zones with one index (never made so): every zone by qsort. */
	}
	if (b->mixed || span >> 32 || span < 4 * (uint64_t)b->n) {
		qsort(b->zones, b->n, sizeof(*b->zones), by_ctx_then_index);
		for (size_t i = 0; i < b->n; i++)
			order[i] = (uint32_t)i;
		return;
	}
	for (size_t i = 0; i < b->n; i++)
		keys[i] = (b->zones[i].index - b->lo) << 32 | i;
	for (unsigned shift = 32; shift < 64 && span >> (shift - 32); shift += RADIX_BITS) {
		size_t count[1u << RADIX_BITS] = { 0 }, at = 0;
		uint64_t *t;

		for (size_t i = 0; i < b->n; i++)
			count[(keys[i] >> shift) & ((1u << RADIX_BITS) - 1)]++;
		for (size_t d = 0; d < GG_ARRAY_SIZE(count); d++) {
			size_t c = count[d];

			count[d] = at;
			at += c;
		}
		for (size_t i = 0; i < b->n; i++)
			tmp[count[(keys[i] >> shift) & ((1u << RADIX_BITS) - 1)]++] = keys[i];
		t = keys, keys = tmp, tmp = t;
	}
	for (size_t i = 0; i < b->n; i++)
		order[i] = (uint32_t)keys[i];
}

#define ZONE_AT(b, order, i) (&(b)->zones[(order)[i]])

/* Read the bands of the @n zones @order names (all of one context) into
 * *@at onwards, at @dsts (*@at ends past them): one batched copy, or one
 * read per band when the driver has no batched copy. @srcs and @sizes: room
 * for @n. */
static bool read_group(const struct batch *b, const uint32_t *order, size_t n, uint8_t **at,
		       uint64_t *srcs, void **dsts, size_t *sizes, bool *batched, uint64_t *calls)
{
	void *ctx, *stream;
	int err;

	if (!gg_redzone_readable(ZONE_AT(b, order, 0)->ctx, &ctx, &stream))
		return false; /* its context ended since the zones were collected */

	for (size_t i = 0; i < n; i++) {
		const struct batch_zone *z = ZONE_AT(b, order, i);

		srcs[i] = z->ptr + z->user;
		dsts[i] = *at;
		sizes[i] = gg_redzone_band_length(z->user, z->flags);
		*at += sizes[i];
	}
	err = gg_device_read_batch(ctx, stream, srcs, dsts, sizes, n);
	if (!err)
		*calls += 2; /* the copy and the wait */
	if (err == -ENOSYS) {
		*batched = false;
		err = 0;
		for (size_t i = 0; i < n && !err; i++) {
			err = gg_device_read(ctx, stream, srcs[i], dsts[i], sizes[i]);
			*calls += 2;
		}
	}
	return err == 0;
}

static int by_place(const void *a, const void *b)
{
	const struct batch_place *x = a, *y = b;

	return (x->ptr > y->ptr) - (x->ptr < y->ptr);
}

/* The zone of batch @b that starts at @ptr, or NULL (none, or out of memory
 * to look: the registry is asked instead). Its suspects are the batch's:
 * collecting it cleared the registry's. */
static const struct batch_zone *batch_zone_at(struct batch *b, uint64_t ptr)
{
	size_t lo = 0, hi = b->n;

	if (!b->places && !b->places_failed) {
		if (!(b->places = malloc(b->n * sizeof(*b->places)))) {
			b->places_failed = true;
		} else {
			for (size_t i = 0; i < b->n; i++)
				b->places[i] = (struct batch_place){ .ptr = b->zones[i].ptr, .pos = i };
			qsort(b->places, b->n, sizeof(*b->places), by_place);
		}
	}
	if (!b->places)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->places[mid].ptr < ptr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < b->n && b->places[lo].ptr == ptr ? &b->zones[b->places[lo].pos] : NULL;
}

/* Compare the band of @z, @length bytes read at @band; report a violation. */
static void check_read(struct batch *b, const struct batch_zone *z, const uint8_t *band,
		       uint64_t length, const struct gg_scan *sc)
{
	struct gg_band_check c = { 0 };
	uint64_t pad = gg_redzone_pad();

	gg_band_compare(&c, band, length, 0, z->expected);
	if (!c.changed)
		return;
	struct gg_violation v = {
		.index = z->index,
		.user = z->user,
		.pad = pad,
		.slack = length - pad,
		.first = c.first,
		.last = c.last,
		.changed = c.changed,
		.first_value = c.first_value,
		.expected = z->expected,
		.ptr = z->ptr,
		.site = z->site,
		.detected_by = sc->by,
		.kernel = -1,
	};
	const struct batch_zone *u;

	if (z->suspects != NO_SUSPECTS)
		memcpy(v.suspects, b->suspects[z->suspects], sizeof(v.suspects));
	/* Changed up to its top: the zone directly above, as this batch read
	 * it (one of another context, or not in the batch: the registry's). */
	if (gg_adjacency_at_top(&v) && (u = batch_zone_at(b, z->ptr + z->user + length))) {
		v.upper.ptr = u->ptr;
		v.upper.user = u->user;
		v.upper.index = u->index;
		v.upper.site = u->site;
		if (u->suspects != NO_SUSPECTS)
			memcpy(v.upper.suspects, b->suspects[u->suspects], sizeof(v.upper.suspects));
	}
	gg_redzone_report_found(&v, sc->lc);
	gg_redzone_refill(z->ctx, z->ptr + z->user, z->expected, length);
}

#define RUN 64 /* bands asked at once whether they are intact */

/* Compare the bands of a group read into @dsts (end to end, in order), of
 * @sizes bytes each. */
static void check_group(struct batch *b, const uint32_t *order, size_t n, void *const *dsts,
			const size_t *sizes, const struct gg_scan *sc)
{
	gg_redzone_checked(n);
	for (size_t i = 0, j; i < n; i = j) {
		uint8_t expected = ZONE_AT(b, order, i)->expected;

		/* Up to RUN bands of one byte: one question while all are intact
		 * (almost always), each band's own compare when one is not. */
		for (j = i + 1; j < n && j - i < RUN && ZONE_AT(b, order, j)->expected == expected; j++)
			;
		if (gg_band_intact(dsts[i],
				   (size_t)((uint8_t *)dsts[j - 1] + sizes[j - 1] - (uint8_t *)dsts[i]),
				   expected))
			continue;
		for (size_t k = i; k < j; k++)
			check_read(b, ZONE_AT(b, order, k), dsts[k], sizes[k], sc);
	}
}

/* A scan of every band, in batches. False when it could not be done (the
 * caller scans band by band). */
bool gg_scan_batched(struct gg_scan *sc)
{
	struct batch b = { .only_ctx = sc->only_ctx, .slot_seen = -1 };
	uint64_t live, user_bytes, calls = 0, *scratch = NULL, *srcs = NULL;
	uint32_t *order = NULL;
	void **dsts = NULL;
	size_t *sizes = NULL;
	uint8_t *buf = NULL;
	bool batched = true;

	gg_redzone_reading(true);
	/* Room for every zone now live (of the context, for one context's
	 * scan): the walk grows it only for zones made meanwhile. */
	if (sc->only_ctx >= 0)
		live = gg_redzone_zones_of(sc->only_ctx);
	else
		gg_registry_totals(&live, &user_bytes);
	if (live && live < SIZE_MAX / sizeof(*b.zones) && (b.zones = malloc(live * sizeof(*b.zones))))
		b.cap = live;
	gg_registry_foreach_run(collect_run, &b);
	/* Positions are 32-bit: 4 billion bands (a batch of 160 GB) would be
	 * read band by band. */
	if (b.n && !b.oom &&
	    (b.n > UINT32_MAX || b.bytes > SIZE_MAX / 2 || !(order = malloc(b.n * sizeof(*order))) ||
	     !(scratch = malloc(2 * b.n * sizeof(*scratch))) || !(srcs = malloc(b.n * sizeof(*srcs))) ||
	     !(dsts = malloc(b.n * sizeof(*dsts))) || !(sizes = malloc(b.n * sizeof(*sizes))) ||
	     !(buf = malloc((size_t)b.bytes))))
		b.oom = true;
	if (b.n && !b.oom) {
		uint8_t *at = buf;

		batch_order(&b, order, scratch);
		for (size_t i = 0, j; i < b.n; i = j) {
			uint16_t ctx = ZONE_AT(&b, order, i)->ctx;

			/* One context (as good as always): one group, no looking. */
			for (j = b.mixed ? i + 1 : b.n; j < b.n && ZONE_AT(&b, order, j)->ctx == ctx;
			     j++)
				;
			if (read_group(&b, order + i, j - i, &at, srcs, dsts, sizes, &batched, &calls))
				check_group(&b, order + i, j - i, dsts, sizes, sc);
			else
				for (size_t k = i; k < j; k++)
					gg_redzone_unchecked(GG_UNCHECKED_unreadable);
		}
	}
	/* Every zone flagged SCANNING is this batch's: a checked launch, the
	 * only other reader, flags its zones under scan_lock too, and clears
	 * them before it lets go. One walk clears them all. */
	if (b.n)
		gg_registry_clear_flags_all(GG_ZONE_SCANNING);
	gg_redzone_reading(false);
	free(buf);
	free(sizes);
	free(dsts);
	free(srcs);
	free(scratch);
	free(order);
	free(b.suspects);
	free(b.places);
	free(b.zones);
	/* The figures are the last full scan's that read anything (an exit with
	 * no zone left would hide them). */
	if (b.n && sc->only_ctx < 0) {
		atomic_store(&scan_state.calls, calls);
		atomic_store(&scan_state.batched, batched);
	}
	return !b.oom;
}

void gg_scan_unbatched(void)
{
	atomic_store(&scan_state.batched, false);
}

void gg_scan_figures(bool *batched, uint64_t *calls)
{
	*batched = atomic_load_explicit(&scan_state.batched, memory_order_relaxed);
	*calls = atomic_load_explicit(&scan_state.calls, memory_order_relaxed);
}

void gg_scan_atfork_child(void)
{
	atomic_store(&scan_state.calls, 0);
	atomic_store(&scan_state.batched, false);
}
