/* Frees of what is no allocation. A free the driver refuses is the only one
 * looked at: a double free and a free of an interior pointer are both
 * refused (cuMemFree_v2's CUDA_ERROR_INVALID_VALUE), so a good free costs
 * nothing here but the ring's write, and the finding never changes what the
 * application gets (the driver's own answer).
 *
 * The ring is sharded by pointer, each shard a ring of the latest frees of
 * its pointers under a lock of its own; a pointer's entries are all in its
 * shard, newest last. A lookup walks the shard's ring (256 entries): only a
 * refused free, or an allocation no zone records while the ring is not
 * empty, pays it.
 *
 * After the driver hands a freed address out again, a free of the old
 * pointer is a free of the new allocation, which the driver takes: the
 * shim cannot tell it from the new allocation's own free, and takes it as
 * that. The new allocation's later free is then the second, and is
 * reported as its double free, the stale free named as its first free
 * (docs/how-it-works.md, "Frees"). */
#include "redzone/frees.h"

#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>

#include "base/gg.h"
#include "callsite/depot.h"
#include "driver/device.h"
#include "redzone/redzone.h"

#define SHARDS 16 /* power of two */
#define RING (GG_FREES_KEPT / SHARDS)

struct freed {
	uint64_t ptr, user, index; /* ptr 0: forgotten */
	uint32_t alloc_stack, free_stack;
};

/* A shard's lock: a spin lock, for its work is a few stores (a mutex was
 * half the cost of remembering a free: BENCHMARKS.md). */
struct shard {
	atomic_flag lock;
	unsigned next;           /* under @lock: the slot the next free takes */
	atomic_uint count;       /* entries in use, newest before @next; written under @lock,
				  * read lock-free only to skip an empty ring */
	struct freed ring[RING]; /* under @lock */
};

static struct {
	struct shard shards[SHARDS];
} frees_state = {
	.shards = { [0 ... SHARDS - 1] = { .lock = ATOMIC_FLAG_INIT } },
};

static void lock(struct shard *s)
{
	while (atomic_flag_test_and_set_explicit(&s->lock, memory_order_acquire))
		sched_yield();
}

static void unlock(struct shard *s)
{
	atomic_flag_clear_explicit(&s->lock, memory_order_release);
}

static struct shard *shard_of(uint64_t ptr)
{
	return &frees_state.shards[(ptr * 0x9e3779b97f4a7c15ull) >> 60 & (SHARDS - 1)];
}

/* Under @s's lock: the newest entry of @ptr, or NULL. */
static struct freed *newest(struct shard *s, uint64_t ptr)
{
	unsigned n = atomic_load_explicit(&s->count, memory_order_relaxed);

	for (unsigned k = 1; k <= n; k++) {
		struct freed *f = &s->ring[(s->next - k) % RING];

		if (f->ptr == ptr)
			return f;
	}
	return NULL;
}

void gg_frees_remember(const struct gg_zone *z, uint32_t free_stack)
{
	struct shard *s = shard_of(z->ptr);

	lock(s);
	s->ring[s->next++ % RING] = (struct freed){ .ptr = z->ptr,
						    .user = z->user,
						    .index = z->index,
						    .alloc_stack = z->site,
						    .free_stack = free_stack };
	if (atomic_load_explicit(&s->count, memory_order_relaxed) < RING)
		atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
	unlock(s);
}

void gg_frees_forget(uint64_t ptr)
{
	struct shard *s = shard_of(ptr);
	struct freed *f;

	if (!ptr || !atomic_load_explicit(&s->count, memory_order_relaxed))
		return;
	lock(s);
	while ((f = newest(s, ptr)))
		f->ptr = 0;
	unlock(s);
}

void gg_frees_refused(const char *api, uint64_t ptr, uintptr_t caller, const void *frame)
{
	struct shard *s = shard_of(ptr);
	struct gg_violation v = {
		.pad = gg_redzone_pad(), .detected_by = "free", .kernel = -1, .api = api, .address = ptr
	};
	struct freed *f;
	struct gg_zone z;
	uint64_t base;
	size_t size;
	bool found = false;

	if (atomic_load_explicit(&s->count, memory_order_relaxed)) {
		lock(s);
		if ((f = newest(s, ptr))) {
			found = true;
			v.kind = GG_VIOLATION_DOUBLE_FREE;
			v.ptr = ptr;
			v.index = f->index;
			v.user = f->user;
			v.site = f->alloc_stack;
			v.first_free_stack = f->free_stack;
		}
		unlock(s);
	}
	/* Inside a zone: the driver names the allocation that holds it. */
	if (!found && !gg_device_range(ptr, &base, &size) && base != ptr &&
	    !gg_registry_find(base, &z)) {
		found = true;
		v.kind = GG_VIOLATION_INVALID_FREE;
		v.ptr = base;
		v.index = z.index;
		v.user = z.user;
		v.site = z.site;
	}
	if (!found)
		return;
	v.free_stack = gg_depot_capture(caller, frame);
	gg_redzone_found(&v);
}

void gg_frees_atfork_child(void)
{
	/* The entries stay, unread: a ring is read only as far as its count. */
	for (unsigned i = 0; i < SHARDS; i++) {
		atomic_flag_clear(&frees_state.shards[i].lock);
		frees_state.shards[i].next = 0;
		atomic_store(&frees_state.shards[i].count, 0);
	}
}
