/* The stack depot, after the sanitizers' stack depot: each distinct stack
 * is stored once, in memory of its own (mmap, never the program's heap),
 * and named by a 32-bit id that says where it lies. A hash table of
 * buckets finds a stack again; a bucket's list is read without a lock (a
 * node is complete before it is linked, and never changes after); adding
 * one takes the depot's lock, which only a stack never seen before costs.
 *
 * Unwinding N frames for every allocation and free costs (BENCHMARKS.md):
 * most programs allocate from a few places, so a stack seen before is
 * known again without unwinding. The hot cache keeps, for a hooked call's
 * return address and stack pointer, the stack slots where the return
 * addresses outward of it were found and their values; when every slot
 * still holds its value the stack is the same (each return address fixes
 * the next frame's size, so the next slot is a return address's slot too),
 * and its id is the cached one. A frame that moves its stack pointer by a
 * size of its own (alloca) could hold a stale value in such a slot: the
 * slots read are bounded by the highest this thread's own unwinds have
 * seen, so a read never leaves the thread's stack, and the worst a stale
 * match does is name an older stack. x86-64 with libunwind only (where a
 * return address's slot is known); elsewhere every stack is unwound. */
#include "callsite/depot.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>

#include "base/gg.h"
#include "callsite/callsite.h"

#define BUCKETS (1u << 15) /* power of two */
#define CHUNK_SHIFT 18     /* 256 KiB of stacks a chunk */
#define CHUNK (1u << CHUNK_SHIFT)
#define CHUNKS 512   /* 128 MiB at most; then stacks of their call site alone */
#define UNIT_SHIFT 3 /* nodes are 8-byte aligned: an id counts 8-byte units */
#define OFFSET_BITS (CHUNK_SHIFT - UNIT_SHIFT)

/* A stack: its call site's interned id and its frames, innermost first. */
struct node {
	struct node *next; /* the bucket's next; written before the node is linked */
	uint32_t hash;
	uint32_t site;
	uint32_t n;
	uint32_t id;
	uintptr_t pc[];
};

/* The hot cache: sets of two entries, by the hooked call's return address
 * and stack pointer; an entry is a seqlock (odd while written), then the
 * slots' offsets from @slot0 and the return addresses they held. Its room
 * follows the depth: the table is mapped at the first capture. */
#define HOT_SETS 512
#define HOT_WAYS 2
/* Frames inward of a site an entry leaves room for (a runtime's, a
 * library's between the program and the driver). */
#define HOT_INWARD 16
struct hot {
	_Atomic uint32_t seq;
	_Atomic uint32_t id;
	_Atomic uintptr_t caller;
	_Atomic uintptr_t slot0; /* where @caller lies: the same path, the same stack */
	_Atomic uint32_t n;      /* return addresses outward of @caller checked */
				 /* Then _Atomic uintptr_t ret[room], _Atomic uint32_t off[room]. */
};

static struct {
	unsigned depth; /* GPUGUARD_STACK_DEPTH; written at set-up, read-only after */

	_Atomic(struct node *) buckets[BUCKETS]; /* lock-free reads; linked under @lock */
	_Atomic(char *) chunks[CHUNKS];          /* set once each, under @lock */
	pthread_mutex_t lock;                    /* adds a node: @used, @nchunks, links */
	unsigned nchunks;                        /* under @lock */
	size_t used;                             /* bytes used of the last chunk; under @lock */
	atomic_uint_fast64_t stacks, bytes;      /* lock-free counters */

	pthread_once_t hot_once; /* maps @hot */
	char *hot;               /* written once under @hot_once; entries lock-free */
	unsigned room;           /* frames an entry holds; read-only after set-up */
	size_t hot_size;         /* bytes an entry takes */
	/* At depth 1, the stack of each interned call site (an address's id,
	 * below 2^16), so a site seen before costs no hashing of its frame. */
	_Atomic uint32_t by_site[1u << 16]; /* lock-free: set once, from 0 */
	atomic_uint fills;                  /* picks the way a fill replaces */
} depot_state = { .depth = 8, .lock = PTHREAD_MUTEX_INITIALIZER, .hot_once = PTHREAD_ONCE_INIT };

/* The highest stack slot this thread's own unwinds have read: the hot
 * cache never reads above it. */
static __thread uintptr_t stack_top __attribute__((tls_model("initial-exec")));

void gg_depot_configure(unsigned depth)
{
	depot_state.depth = depth < 1 ? 1 : depth > GG_DEPOT_DEPTH_MAX ? GG_DEPOT_DEPTH_MAX : depth;
}

unsigned gg_depot_depth(void)
{
	return depot_state.depth;
}

static uint32_t hash_of(uint32_t site, const uintptr_t *pc, unsigned n)
{
	uint64_t h = ((uint64_t)site + 1) * 0x9e3779b97f4a7c15ull ^ n;

	for (unsigned i = 0; i < n; i++) {
		h = (h ^ pc[i]) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return (uint32_t)(h ^ (h >> 29));
}

static struct node *find(uint32_t hash, uint32_t site, const uintptr_t *pc, unsigned n)
{
	struct node *node = atomic_load_explicit(&depot_state.buckets[hash & (BUCKETS - 1)],
						 memory_order_acquire);

	for (; node; node = node->next)
		if (node->hash == hash && node->site == site && node->n == n &&
		    !memcmp(node->pc, pc, n * sizeof(*pc)))
			return node;
	return NULL;
}

/* Room for @size bytes, under the lock; NULL when the depot is full or no
 * memory can be mapped. *@id: the id of that place. */
static void *take(size_t size, uint32_t *id)
{
	char *chunk;

	size = (size + (1u << UNIT_SHIFT) - 1) & ~(size_t)((1u << UNIT_SHIFT) - 1);
	if (!depot_state.nchunks || depot_state.used + size > CHUNK) {
		if (depot_state.nchunks == CHUNKS)
			return NULL;
		chunk = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (chunk == MAP_FAILED)
			return NULL;
		atomic_store_explicit(&depot_state.chunks[depot_state.nchunks], chunk,
				      memory_order_release);
		depot_state.nchunks++;
		depot_state.used = 0;
		atomic_fetch_add_explicit(&depot_state.bytes, CHUNK, memory_order_relaxed);
	}
	chunk = atomic_load_explicit(&depot_state.chunks[depot_state.nchunks - 1],
				     memory_order_relaxed);
	*id = (uint32_t)(depot_state.nchunks << OFFSET_BITS | depot_state.used >> UNIT_SHIFT);
	depot_state.used += size;
	return chunk + (*id & ((1u << OFFSET_BITS) - 1)) * (1u << UNIT_SHIFT);
}

/* The id of the stack (@site, @pc[0..@n)), stored if new; 0 when it cannot be. */
static uint32_t store(uint32_t site, const uintptr_t *pc, unsigned n)
{
	uint32_t hash = hash_of(site, pc, n), id = 0;
	struct node *node = find(hash, site, pc, n);
	_Atomic(struct node *) *bucket = &depot_state.buckets[hash & (BUCKETS - 1)];

	if (node)
		return node->id;
	pthread_mutex_lock(&depot_state.lock);
	/* Another thread may have stored it meanwhile. */
	if (!(node = find(hash, site, pc, n)) && (node = take(sizeof(*node) + n * sizeof(*pc), &id))) {
		node->next = atomic_load_explicit(bucket, memory_order_relaxed);
		node->hash = hash;
		node->site = site;
		node->n = n;
		node->id = id;
		memcpy(node->pc, pc, n * sizeof(*pc));
		atomic_store_explicit(bucket, node, memory_order_release);
		atomic_fetch_add_explicit(&depot_state.stacks, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&depot_state.lock);
	/* Full: the call site alone, which may be there already. */
	if (!node && n > 1)
		return store(site, pc, 1);
	return node ? node->id : 0;
}

static const struct node *node_of(uint32_t id)
{
	uint32_t chunk = id >> OFFSET_BITS;
	const char *base;

	if (!chunk || chunk > CHUNKS)
		return NULL;
	base = atomic_load_explicit(&depot_state.chunks[chunk - 1], memory_order_acquire);
	if (!base)
		return NULL;
	return (const struct node *)(const void *)(base + (id & ((1u << OFFSET_BITS) - 1)) *
								  (1u << UNIT_SHIFT));
}

/* ---- the hot cache ---- */

static void map_hot(void)
{
	size_t room = depot_state.depth + HOT_INWARD;
	size_t size = sizeof(struct hot) + room * (sizeof(uintptr_t) + sizeof(uint32_t));
	void *p;

	size = (size + 7) & ~(size_t)7;
	p = mmap(NULL, HOT_SETS * HOT_WAYS * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return; /* no cache: every stack is unwound */
	depot_state.room = (unsigned)room;
	depot_state.hot_size = size;
	depot_state.hot = p;
}

static struct hot *hot_entry(uintptr_t caller, uintptr_t slot0, unsigned way)
{
	uint64_t h = ((uint64_t)caller ^ (uint64_t)slot0 << 17) * 0x9e3779b97f4a7c15ull;

	return (struct hot *)(void *)(depot_state.hot +
				      ((h >> 40) % HOT_SETS * HOT_WAYS + way) * depot_state.hot_size);
}

static _Atomic uintptr_t *hot_ret(struct hot *e)
{
	return (_Atomic uintptr_t *)(void *)(e + 1);
}

static _Atomic uint32_t *hot_off(struct hot *e)
{
	return (_Atomic uint32_t *)(void *)(hot_ret(e) + depot_state.room);
}

/* The cached stack whose return addresses are all still where they were
 * seen, or 0. Reads the stack above @slot0 (which holds @caller): never
 * instrumented, since those are other functions' frames. */
__attribute__((no_sanitize_address)) static uint32_t hot_find(uintptr_t caller, uintptr_t slot0)
{
	uintptr_t top = stack_top;

	for (unsigned w = 0; w < HOT_WAYS; w++) {
		struct hot *e = hot_entry(caller, slot0, w);
		_Atomic uintptr_t *ret = hot_ret(e);
		_Atomic uint32_t *off = hot_off(e);
		uint32_t seq = atomic_load_explicit(&e->seq, memory_order_acquire), id, n;
		bool same;

		if (seq & 1 || atomic_load_explicit(&e->caller, memory_order_relaxed) != caller ||
		    atomic_load_explicit(&e->slot0, memory_order_relaxed) != slot0)
			continue;
		n = atomic_load_explicit(&e->n, memory_order_relaxed);
		id = atomic_load_explicit(&e->id, memory_order_relaxed);
		same = n <= depot_state.room;
		for (unsigned i = 0; same && i < n; i++) {
			uintptr_t at = slot0 + atomic_load_explicit(&off[i], memory_order_relaxed);

			same = at + sizeof(uintptr_t) <= top &&
			       *(const volatile uintptr_t *)at ==
				       atomic_load_explicit(&ret[i], memory_order_relaxed);
		}
		atomic_thread_fence(memory_order_acquire);
		if (same && atomic_load_explicit(&e->seq, memory_order_relaxed) == seq)
			return id;
	}
	return 0;
}

/* Remember stack @id, whose walk found @pcs at @slots, the hooked call's
 * return address at @at0, and whose frames end before @end. */
__attribute__((no_sanitize_address)) static void hot_fill(const uintptr_t *pcs, const uintptr_t *slots,
							  int at0, int end, uint32_t id)
{
	uintptr_t slot0 = slots[at0], caller = pcs[at0];
	unsigned n = (unsigned)(end - at0 - 1), way;
	_Atomic uintptr_t *ret;
	_Atomic uint32_t *off;
	struct hot *e;
	uint32_t seq;

	if (n > depot_state.room)
		return;
	/* Each slot must hold what the walk read from it (a frame a signal
	 * interrupted has its return address elsewhere). */
	for (int i = at0; i < end; i++)
		if (slots[i] < slot0 || slots[i] - slot0 > UINT32_MAX ||
		    *(const uintptr_t *)slots[i] != pcs[i])
			return;
	way = atomic_fetch_add_explicit(&depot_state.fills, 1, memory_order_relaxed) % HOT_WAYS;
	e = hot_entry(caller, slot0, way);
	ret = hot_ret(e);
	off = hot_off(e);
	seq = atomic_load_explicit(&e->seq, memory_order_relaxed);
	if (seq & 1 || !atomic_compare_exchange_strong(&e->seq, &seq, seq + 1))
		return; /* another thread writes it */
	atomic_store_explicit(&e->caller, caller, memory_order_relaxed);
	atomic_store_explicit(&e->slot0, slot0, memory_order_relaxed);
	atomic_store_explicit(&e->id, id, memory_order_relaxed);
	atomic_store_explicit(&e->n, n, memory_order_relaxed);
	for (unsigned i = 0; i < n; i++) {
		atomic_store_explicit(&off[i], (uint32_t)(slots[at0 + 1 + i] - slot0),
				      memory_order_relaxed);
		atomic_store_explicit(&ret[i], pcs[at0 + 1 + i], memory_order_relaxed);
	}
	atomic_store_explicit(&e->seq, seq + 2, memory_order_release);
}

/* ---- capture ---- */

uint32_t gg_depot_capture(uintptr_t caller, const void *frame)
{
	uintptr_t pcs[GG_CALLSITE_MAX_FRAMES], slots[GG_CALLSITE_MAX_FRAMES], slot0 = 0;
	struct gg_callsite cs;
	/* The frames walked: the depth, and room for those inward of the site. */
	int n = -ENOSYS, at, at0, end, walk = (int)depot_state.depth + 2 * HOT_INWARD;
	uint32_t id;

	if (depot_state.depth == 1) {
		uint32_t site;

		/* The site alone: no unwind when the hook's caller is the site. */
		gg_callsite_find_from(caller, &cs);
		if (!cs.pc)
			return 0;
		site = gg_callsite_intern(&cs);
		if (site >= GG_ARRAY_SIZE(depot_state.by_site))
			return store(site, &cs.pc, 1);
		if (!(id = atomic_load_explicit(&depot_state.by_site[site], memory_order_acquire)) &&
		    (id = store(site, &cs.pc, 1)))
			atomic_store_explicit(&depot_state.by_site[site], id, memory_order_release);
		return id;
	}
	if (walk > GG_CALLSITE_MAX_FRAMES)
		walk = GG_CALLSITE_MAX_FRAMES;
		/* The work function's return address lies just above its saved frame
	 * pointer (x86-64). */
#if defined(__x86_64__)
	if (caller && frame && *((const uintptr_t *)frame + 1) == caller) {
		pthread_once(&depot_state.hot_once, map_hot);
		slot0 = (uintptr_t)frame + sizeof(uintptr_t);
		if (depot_state.hot && (id = hot_find(caller, slot0)))
			return id;
		if (depot_state.hot)
			n = gg_callsite_frames_slots(pcs, slots, walk);
	}
#else
	(void)frame;
#endif
	if (n < 0) {
		n = gg_callsite_frames(pcs, walk);
		slot0 = 0;
	}
	if ((at = gg_callsite_pick(pcs, n, &cs)) < 0)
		return 0;
	end = n - at < (int)depot_state.depth ? n : at + (int)depot_state.depth;
	id = store(gg_callsite_intern(&cs), pcs + at, (unsigned)(end - at));
	if (!slot0 || !id)
		return id;
	for (int i = 0; i < n; i++)
		if (slots[i] + sizeof(uintptr_t) > stack_top)
			stack_top = slots[i] + sizeof(uintptr_t);
	/* The walk's frame of the hooked call's caller: where the cache starts. */
	for (at0 = 0; at0 <= at && slots[at0] != slot0; at0++)
		;
	if (at0 <= at && pcs[at0] == caller)
		hot_fill(pcs, slots, at0, end, id);
	return id;
}

/* ---- reading ---- */

unsigned gg_depot_get(uint32_t id, uint32_t *site, uintptr_t *pcs, unsigned max)
{
	const struct node *node = id ? node_of(id) : NULL;
	unsigned n;

	if (site)
		*site = node ? node->site : 0;
	if (!node)
		return 0;
	n = node->n < max ? node->n : max;
	memcpy(pcs, node->pc, n * sizeof(*pcs));
	return n;
}

void gg_depot_report(uint32_t id, struct gg_report_site *site, struct gg_report_stack *stack)
{
	uintptr_t pcs[GG_DEPOT_DEPTH_MAX];
	uint32_t site_id;
	unsigned n = gg_depot_get(id, &site_id, pcs, GG_DEPOT_DEPTH_MAX);

	if (site)
		gg_callsite_report_id(site_id, site);
	if (!stack)
		return;
	stack->n = n;
	for (unsigned i = 0; i < n; i++)
		gg_callsite_describe(pcs[i], &stack->frame[i]);
}

void gg_depot_stats(uint64_t *stacks, uint64_t *bytes)
{
	*stacks = atomic_load_explicit(&depot_state.stacks, memory_order_relaxed);
	*bytes = atomic_load_explicit(&depot_state.bytes, memory_order_relaxed);
}

void gg_depot_atfork_child(void)
{
	/* A thread of the parent may have held it, halfway through adding a
	 * node no bucket links yet: the node is lost, the depot stays whole. */
	pthread_mutex_init(&depot_state.lock, NULL);
	/* An entry a parent's thread was writing stays odd: free it. */
	for (unsigned i = 0; depot_state.hot && i < HOT_SETS * HOT_WAYS; i++) {
		struct hot *e = (struct hot *)(void *)(depot_state.hot + i * depot_state.hot_size);
		uint32_t seq = atomic_load_explicit(&e->seq, memory_order_relaxed);

		if (seq & 1) { /* half written: matches nothing */
			atomic_store_explicit(&e->caller, 0, memory_order_relaxed);
			atomic_store_explicit(&e->seq, seq + 1, memory_order_relaxed);
		}
	}
}
