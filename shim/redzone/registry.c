/* The zone registry.
 *
 * 64 shards, chosen by the pointer's hash. A shard keeps its zones in a dense
 * array (free slots chained) and an open-addressing table of dense indices
 * (linear probing, backward-shift deletion), so insert, remove and lookup are
 * O(1) expected and a zone costs 64 bytes (32 of them its suspects) plus
 * 4 / load-factor of table.
 *
 * Inserts never allocate: after each insert the shard grows ahead of need,
 * and if that fails the registry reports no room, so the caller does not pad
 * an allocation it could not record. */
#include "redzone/registry.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/gg.h"

/* A million zones cost 64 bytes each, plus the index table: a field added to
 * struct gg_zone costs 8 more a zone with alignment (BENCHMARKS.md, §2). */
_Static_assert(sizeof(struct gg_zone) == 64, "a zone is 64 bytes");

#define SHARDS 64
#define FREE_END UINT32_MAX
#define FIRST_ZONES 16 /* a shard's first arrays */
#define FIRST_TABLE 32
#define FOREACH_RUN 64 /* zones walked under one hold of a shard lock */

struct shard {
	pthread_mutex_t lock;
	/* All below guarded by @lock. */
	struct gg_zone *zones; /* dense; a free slot has ptr 0 and chains through index */
	uint32_t cap, used;    /* allocated slots, slots ever used (high-water mark) */
	uint32_t free_head;    /* first free slot below @used, FREE_END if none */
	uint32_t live;
	uint32_t *table; /* dense index + 1; 0 is empty; power-of-two size */
	uint32_t table_cap;
	uint64_t user_bytes;
	bool tight; /* the last grow ahead failed */
} __attribute__((aligned(64)));

static struct {
	pthread_once_t once;     /* gives every shard its first arrays */
	atomic_bool ready;       /* set (release) once @once has run */
	atomic_int tight_shards; /* shards that could not grow ahead */
	struct shard shard[SHARDS];
} registry_state = { .once = PTHREAD_ONCE_INIT };

static uint64_t hash_ptr(uint64_t ptr)
{
	/* Device pointers are 256-byte aligned: mix the bits that vary. */
	uint64_t h = (ptr >> 8) * 0x9e3779b97f4a7c15ull;

	return h ^ (h >> 31);
}

static struct shard *shard_of(uint64_t ptr)
{
	return &registry_state.shard[hash_ptr(ptr) >> 58]; /* top 6 bits: 64 shards */
}

/* Grow so the next insert needs no allocation. Lock held. */
static int grow_ahead(struct shard *s)
{
	if (s->free_head == FREE_END && s->used == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : FIRST_ZONES;
		struct gg_zone *z = realloc(s->zones, (size_t)cap * sizeof(*z));

		if (!z || cap < s->cap)
			return -ENOMEM;
		s->zones = z;
		s->cap = cap;
	}
	if ((uint64_t)(s->live + 1) * 4 > (uint64_t)s->table_cap * 3) {
		uint32_t cap = s->table_cap ? s->table_cap * 2 : FIRST_TABLE;
		uint32_t *t = calloc(cap, sizeof(*t));

		if (!t || cap < s->table_cap) {
			free(t);
			return -ENOMEM;
		}
		for (uint32_t i = 0; i < s->table_cap; i++) {
			uint32_t e = s->table[i];

			if (!e)
				continue;
			uint32_t j = (uint32_t)hash_ptr(s->zones[e - 1].ptr) & (cap - 1);

			while (t[j])
				j = (j + 1) & (cap - 1);
			t[j] = e;
		}
		free(s->table);
		s->table = t;
		s->table_cap = cap;
	}
	return 0;
}

static void note_tight(struct shard *s, bool tight)
{
	if (s->tight != tight) {
		s->tight = tight;
		atomic_fetch_add(&registry_state.tight_shards, tight ? 1 : -1);
	}
}

static void init_shards(void)
{
	for (int i = 0; i < SHARDS; i++) {
		struct shard *s = &registry_state.shard[i];

		pthread_mutex_init(&s->lock, NULL);
		s->free_head = FREE_END;
		note_tight(s, grow_ahead(s) != 0);
	}
	atomic_store_explicit(&registry_state.ready, true, memory_order_release);
}

static void ensure_init(void)
{
	pthread_once(&registry_state.once, init_shards);
}

/* Whether any zone may have been recorded: the readers below (scans, totals,
 * the footprint) leave the shards alone before then, so a process that
 * never padded an allocation (red zones off) does not give 64 shards their
 * arrays at exit only to count that they are empty (55 k instructions). */
static bool in_use(void)
{
	return atomic_load_explicit(&registry_state.ready, memory_order_acquire);
}

bool gg_registry_room(void)
{
	ensure_init();
	if (GG_LIKELY(!atomic_load_explicit(&registry_state.tight_shards, memory_order_relaxed)))
		return true;
	/* A shard that could not grow is retried here: no zone goes into it
	 * while there is no room, so its own inserts never would. */
	for (int i = 0; i < SHARDS; i++) {
		struct shard *s = &registry_state.shard[i];

		pthread_mutex_lock(&s->lock);
		if (s->tight)
			note_tight(s, grow_ahead(s) != 0);
		pthread_mutex_unlock(&s->lock);
	}
	return atomic_load_explicit(&registry_state.tight_shards, memory_order_relaxed) == 0;
}

/* Table slot holding @ptr, or -1. Lock held. */
static int64_t slot_of(const struct shard *s, uint64_t ptr)
{
	if (!s->table_cap)
		return -1;
	for (uint32_t j = (uint32_t)hash_ptr(ptr) & (s->table_cap - 1);;
	     j = (j + 1) & (s->table_cap - 1)) {
		uint32_t e = s->table[j];

		if (!e)
			return -1;
		if (s->zones[e - 1].ptr == ptr)
			return j;
	}
}

int gg_registry_insert(const struct gg_zone *z)
{
	struct shard *s = shard_of(z->ptr);
	uint32_t idx, j;
	int err = 0;

	ensure_init();
	pthread_mutex_lock(&s->lock);
	if (slot_of(s, z->ptr) >= 0) {
		err = -EEXIST;
		goto out;
	}
	if (grow_ahead(s)) { /* only when the last grow ahead failed too */
		err = -ENOMEM;
		goto out;
	}
	if (s->free_head != FREE_END) {
		idx = s->free_head;
		s->free_head = (uint32_t)s->zones[idx].index;
	} else {
		idx = s->used++;
	}
	s->zones[idx] = *z;
	for (j = (uint32_t)hash_ptr(z->ptr) & (s->table_cap - 1); s->table[j];
	     j = (j + 1) & (s->table_cap - 1))
		;
	s->table[j] = idx + 1;
	s->live++;
	s->user_bytes += z->user;
	note_tight(s, grow_ahead(s) != 0);
out:
	pthread_mutex_unlock(&s->lock);
	return err;
}

/* Remove the entry in table slot @i and free its dense slot. Lock held. */
static void remove_slot(struct shard *s, uint32_t i)
{
	uint32_t mask = s->table_cap - 1, idx = s->table[i] - 1, j = i;

	s->live--;
	s->user_bytes -= s->zones[idx].user;
	s->zones[idx].ptr = 0;
	s->zones[idx].index = s->free_head;
	s->free_head = idx;
	/* Backward-shift deletion keeps every probe chain unbroken. */
	for (;;) {
		j = (j + 1) & mask;
		if (!s->table[j])
			break;
		uint32_t home = (uint32_t)hash_ptr(s->zones[s->table[j] - 1].ptr) & mask;

		/* Move entry j into the hole i unless its home lies in (i, j]. */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			s->table[i] = s->table[j];
			i = j;
		}
	}
	s->table[i] = 0;
}

/* Under the shard's lock: the zone at @ptr copied to *@out (when not NULL)
 * and removed, unless it has one of @keep's flags (-EBUSY, still copied).
 * gg_registry_remove and gg_registry_take are this one lookup. */
static int remove_unless(uint64_t ptr, struct gg_zone *out, uint8_t keep)
{
	struct shard *s = shard_of(ptr);
	int64_t i;
	int err = -ENOENT;

	ensure_init();
	pthread_mutex_lock(&s->lock);
	if ((i = slot_of(s, ptr)) >= 0) {
		const struct gg_zone *z = &s->zones[s->table[i] - 1];

		err = z->flags & keep ? -EBUSY : 0;
		if (out)
			*out = *z;
		if (!err)
			remove_slot(s, (uint32_t)i);
	}
	pthread_mutex_unlock(&s->lock);
	return err;
}

int gg_registry_remove(uint64_t ptr, struct gg_zone *out)
{
	return remove_unless(ptr, out, 0);
}

int gg_registry_take(uint64_t ptr, struct gg_zone *out)
{
	return remove_unless(ptr, out, GG_ZONE_QUARANTINED);
}

/* Run @fn on the zone at @ptr under its shard's lock. 0 or -ENOENT. */
static int on_zone(uint64_t ptr, void (*fn)(struct gg_zone *z, void *arg), void *arg)
{
	struct shard *s = shard_of(ptr);
	int64_t i;
	int err = -ENOENT;

	ensure_init();
	pthread_mutex_lock(&s->lock);
	if ((i = slot_of(s, ptr)) >= 0) {
		fn(&s->zones[s->table[i] - 1], arg);
		err = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return err;
}

static void clear_flags(struct gg_zone *z, void *arg)
{
	z->flags &= (uint8_t) ~*(const uint8_t *)arg;
}

int gg_registry_clear_flags(uint64_t ptr, uint8_t flags)
{
	return on_zone(ptr, clear_flags, &flags);
}

struct suspect_arg {
	uint64_t entry, now;
	uint64_t (*launch_of)(uint64_t);
};

/* One entry per kernel, newest first: a kernel launched again moves to the
 * front; a fifth kernel pushes out the one whose launch (as @launch_of says:
 * a kernel's memo may make an old entry stand for a newer launch) is oldest. */
static void push_suspect(struct gg_zone *z, void *arg)
{
	const struct suspect_arg *a = arg;
	uint64_t *s = z->suspects, kernel = a->entry >> 48, oldest = UINT64_MAX;
	int i, out = GG_SUSPECTS - 1;

	for (i = 0; i < GG_SUSPECTS && s[i] && s[i] >> 48 != kernel; i++) {
		uint64_t at = a->launch_of ? a->launch_of(s[i]) : GG_SUSPECT_LAUNCH(s[i]);

		if (at < oldest)
			oldest = at, out = i;
	}
	if (i < GG_SUSPECTS)
		out = i; /* the kernel's own entry, or a free one */
	for (; out > 0; out--)
		s[out] = s[out - 1];
	s[0] = a->entry;
	((struct suspect_arg *)arg)->now = z->flags;
}

int gg_registry_suspect(uint64_t ptr, uint64_t entry, uint64_t (*launch_of)(uint64_t))
{
	struct suspect_arg a = { .entry = entry, .launch_of = launch_of };
	int err = on_zone(ptr, push_suspect, &a);

	/* push_suspect() leaves the flags in @a.now: one lookup serves both. */
	return err ? err : (a.now & GG_ZONE_QUARANTINED) ? 1 : 0;
}

static void renew_suspect(struct gg_zone *z, void *arg)
{
	const struct suspect_arg *a = arg;

	for (int k = 0; k < GG_SUSPECTS; k++)
		if (z->suspects[k] == a->entry)
			z->suspects[k] = a->now;
}

int gg_registry_renew_suspect(uint64_t ptr, uint64_t old, uint64_t now)
{
	struct suspect_arg a = { .entry = old, .now = now };

	return on_zone(ptr, renew_suspect, &a);
}

/* Newest first: keep the ones launched after *@arg, forget the rest. */
static void clear_suspects(struct gg_zone *z, void *arg)
{
	uint64_t launch = *(const uint64_t *)arg & GG_SUSPECT_LAUNCH_MASK, *sus = z->suspects;
	int k = 0;

	while (k < GG_SUSPECTS && sus[k] && GG_SUSPECT_LAUNCH(sus[k]) > launch)
		k++;
	for (; k < GG_SUSPECTS; k++)
		sus[k] = 0;
}

int gg_registry_clear_suspects(uint64_t ptr, uint64_t launch)
{
	return on_zone(ptr, clear_suspects, &launch);
}

static void copy_zone(struct gg_zone *z, void *arg)
{
	*(struct gg_zone *)arg = *z;
}

int gg_registry_find(uint64_t ptr, struct gg_zone *out)
{
	return on_zone(ptr, copy_zone, out);
}

static void hold_zone(struct gg_zone *z, void *arg)
{
	z->flags |= GG_ZONE_SCANNING;
	*(struct gg_zone *)arg = *z;
}

int gg_registry_hold(uint64_t ptr, struct gg_zone *out)
{
	return on_zone(ptr, hold_zone, out);
}

void gg_registry_foreach(bool (*fn)(void *ctx, struct gg_zone *z), void (*after)(void *ctx), void *ctx)
{
	if (!in_use())
		return;
	for (int k = 0; k < SHARDS; k++) {
		struct shard *s = &registry_state.shard[k];

		/* Dense indices never move, so the walk survives the lock being let go. */
		for (uint32_t idx = 0;; idx++) {
			pthread_mutex_lock(&s->lock);
			if (idx >= s->used) {
				pthread_mutex_unlock(&s->lock);
				break;
			}
			struct gg_zone *z = &s->zones[idx];

			bool called = z->ptr != 0;

			if (called && fn(ctx, z)) {
				int64_t i = slot_of(s, z->ptr);

				if (i >= 0)
					remove_slot(s, (uint32_t)i);
			}
			pthread_mutex_unlock(&s->lock);
			if (called && after)
				after(ctx);
		}
	}
}

/* A run is up to FOREACH_RUN slots under one hold of the lock: a full scan's
 * walk of 10^5 zones then costs 3 instructions a zone in locks instead of
 * 60, and an allocation or free waits for at most one run. Dense indices
 * never move, so the walk survives the lock being let go between runs. */
void gg_registry_foreach_run(void (*fn)(void *ctx, struct gg_zone *zones, size_t n), void *ctx)
{
	if (!in_use())
		return;
	for (int k = 0; k < SHARDS; k++) {
		struct shard *s = &registry_state.shard[k];

		for (uint32_t idx = 0;;) {
			pthread_mutex_lock(&s->lock);
			if (idx >= s->used) {
				pthread_mutex_unlock(&s->lock);
				break;
			}
			uint32_t n = s->used - idx < FOREACH_RUN ? s->used - idx : FOREACH_RUN;

			fn(ctx, &s->zones[idx], n);
			idx += n;
			pthread_mutex_unlock(&s->lock);
		}
	}
}

/* A free slot's flags are nobody's: cleared with the rest. */
static void clear_run(void *ctx, struct gg_zone *zones, size_t n)
{
	uint8_t keep = (uint8_t) ~*(const uint8_t *)ctx;

	for (size_t i = 0; i < n; i++)
		zones[i].flags &= keep;
}

void gg_registry_clear_flags_all(uint8_t flags)
{
	gg_registry_foreach_run(clear_run, &flags);
}

void gg_registry_totals(uint64_t *live, uint64_t *user_bytes)
{
	*live = *user_bytes = 0;
	if (!in_use())
		return;
	for (int k = 0; k < SHARDS; k++) {
		struct shard *s = &registry_state.shard[k];

		pthread_mutex_lock(&s->lock);
		*live += s->live;
		*user_bytes += s->user_bytes;
		pthread_mutex_unlock(&s->lock);
	}
}

size_t gg_registry_footprint(void)
{
	size_t bytes = sizeof(registry_state);

	/* Before first use, what first use gives every shard: the figure does
	 * not depend on whether anything asked for the arrays yet. */
	if (!in_use())
		return bytes +
		       SHARDS * (FIRST_ZONES * sizeof(struct gg_zone) + FIRST_TABLE * sizeof(uint32_t));
	for (int k = 0; k < SHARDS; k++) {
		struct shard *s = &registry_state.shard[k];

		pthread_mutex_lock(&s->lock);
		bytes += (size_t)s->cap * sizeof(struct gg_zone) +
			 (size_t)s->table_cap * sizeof(uint32_t);
		pthread_mutex_unlock(&s->lock);
	}
	return bytes;
}

void gg_registry_atfork_prepare(void)
{
	ensure_init();
	for (int k = 0; k < SHARDS; k++)
		pthread_mutex_lock(&registry_state.shard[k].lock);
}

void gg_registry_atfork_parent(void)
{
	for (int k = SHARDS - 1; k >= 0; k--)
		pthread_mutex_unlock(&registry_state.shard[k].lock);
}

/* Empty: the parent's zones are the parent's to check
 * (docs/how-it-works.md, "Boundaries, signals, exit"). The
 * arrays stay, so the child's inserts still need no allocation. */
void gg_registry_atfork_child(void)
{
	for (int k = 0; k < SHARDS; k++) {
		struct shard *s = &registry_state.shard[k];

		pthread_mutex_init(&s->lock, NULL);
		if (s->table)
			memset(s->table, 0, (size_t)s->table_cap * sizeof(*s->table));
		s->used = s->live = 0;
		s->free_head = FREE_END;
		s->user_bytes = 0;
	}
}
