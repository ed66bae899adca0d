/* The quarantine.
 *
 * A freed guarded allocation is not handed to the driver: redzone.c fills
 * its user bytes with the free byte (on the free's own stream for a
 * stream-ordered free, with an event after the fill; else on the legacy
 * stream, waited for) and flags its zone GG_ZONE_QUARANTINED in the registry,
 * where a launch's parameters are already looked up (dangling launches), and
 * it is held here, first in first out, until more than the configured bytes
 * are held, a boundary, its context's end, exit, or an allocation that ran
 * out of memory.
 *
 * Leaving, its fill is checked: after the event (so only the work queued
 * before its free is waited for), through bounded windows, the first and
 * the last WINDOW bytes, so a release reads at most 2 * WINDOW bytes to the
 * host however large the allocation (the bytes between are counted as
 * unchecked, never as clean: BENCHMARKS.md has the cost). Then it is freed
 * as the application asked: cuMemFreeAsync on the free's stream (cuMemFree_v2
 * when that stream is gone, as the driver's answer says), or cuMemFree_v2.
 *
 * The FIFO is a ring of entries under one lock, held only to add or take an
 * entry: the device work of a release runs with no lock held. */
#include "redzone/quarantine.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/gg.h"
#include "driver/device.h"
#include "driver/real.h"
#include "redzone/band.h"
#include "redzone/redzone.h"

#define WINDOW (64u << 10) /* bytes read at each end of a released fill */
#define CHUNK 4096         /* read at a time, into the stack */

static struct {
	/* Written by gg_quarantine_configure() during set-up; read-only after. */
	uint64_t size;
	uint8_t fill;

	pthread_mutex_t lock;             /* guards the ring and @bytes */
	struct gg_quarantine_entry *ring; /* @cap entries, @n of them from @head on */
	size_t cap, head, n;
	uint64_t bytes; /* held back: the sum of the entries' @held */
	uint64_t user;  /* the sum of their @user */

	/* Lock-free counters, which a forked child starts from 0 (GG_ZERO_COUNTERS
	 * in gg_quarantine_atfork_child: every member here is one). */
	struct {
		atomic_uint_fast64_t entered, released, checked_bytes, unchecked_bytes, oom_releases,
			release_failures;
	} count;
} quarantine_state = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* @n of the ring, for the launch hooks (quarantine.h). */
atomic_uint_fast64_t gg_quarantine_count;

void gg_quarantine_configure(uint64_t size, uint8_t fill)
{
	quarantine_state.size = size;
	quarantine_state.fill = fill;
}

uint64_t gg_quarantine_size(void)
{
	return quarantine_state.size;
}

uint8_t gg_quarantine_fill(void)
{
	return quarantine_state.fill;
}

/* Under the lock: the @i-th entry from the oldest. */
static struct gg_quarantine_entry *at(size_t i)
{
	return &quarantine_state.ring[(quarantine_state.head + i) % quarantine_state.cap];
}

/* Under the lock: room for one more entry. */
static int room(void)
{
	struct gg_quarantine_entry *ring;
	size_t cap;

	if (quarantine_state.n < quarantine_state.cap)
		return 0;
	cap = quarantine_state.cap ? quarantine_state.cap * 2 : 64;
	if (cap > SIZE_MAX / sizeof(*ring) || !(ring = malloc(cap * sizeof(*ring))))
		return -ENOMEM;
	for (size_t i = 0; i < quarantine_state.n; i++)
		ring[i] = *at(i);
	free(quarantine_state.ring);
	quarantine_state.ring = ring;
	quarantine_state.cap = cap;
	quarantine_state.head = 0;
	return 0;
}

/* Under the lock: remove the @i-th entry into @out, keeping the order. */
static void take_at(size_t i, struct gg_quarantine_entry *out)
{
	*out = *at(i);
	if (i == 0) {
		quarantine_state.head = (quarantine_state.head + 1) % quarantine_state.cap;
	} else {
		for (size_t k = i; k + 1 < quarantine_state.n; k++)
			*at(k) = *at(k + 1);
	}
	quarantine_state.n--;
	quarantine_state.bytes -= out->held;
	quarantine_state.user -= out->user;
	atomic_store_explicit(&gg_quarantine_count, quarantine_state.n, memory_order_relaxed);
}

/* Take the oldest entry (of context slot @slot; -1: any), when the
 * quarantine holds more than @limit bytes. 1 and *@out, or 0. */
static int take(uint64_t limit, int slot, struct gg_quarantine_entry *out)
{
	int found = 0;

	pthread_mutex_lock(&quarantine_state.lock);
	if (quarantine_state.bytes > limit || (limit == 0 && quarantine_state.n)) {
		for (size_t i = 0; i < quarantine_state.n && !found; i++) {
			if (slot < 0 || at(i)->ctx_slot == slot) {
				take_at(i, out);
				found = 1;
			}
		}
	}
	pthread_mutex_unlock(&quarantine_state.lock);
	return found;
}

/* Every entry of context slot @slot (-1: all) out of the ring in one pass,
 * oldest first, into *@out (*@n of them, malloc'd; NULL when none), the
 * others kept in their order: a context's end costs one walk of the ring,
 * not one per entry (BENCHMARKS.md,
 * "A context's end with a full quarantine (issue 35)"). -ENOMEM: none taken. */
static int take_all(int slot, struct gg_quarantine_entry **out, size_t *n)
{
	size_t k = 0, kept = 0, total;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&quarantine_state.lock);
	total = quarantine_state.n;
	for (size_t i = 0; i < total; i++)
		k += slot < 0 || at(i)->ctx_slot == slot;
	if (k && !(*out = malloc(k * sizeof(**out)))) {
		pthread_mutex_unlock(&quarantine_state.lock);
		return -ENOMEM;
	}
	for (size_t i = 0; i < total; i++) {
		struct gg_quarantine_entry e = *at(i);

		if (slot < 0 || e.ctx_slot == slot) {
			(*out)[(*n)++] = e;
			quarantine_state.bytes -= e.held;
			quarantine_state.user -= e.user;
		} else {
			*at(kept++) = e; /* kept <= i: never one not yet read */
		}
	}
	quarantine_state.n = kept;
	atomic_store_explicit(&gg_quarantine_count, kept, memory_order_relaxed);
	pthread_mutex_unlock(&quarantine_state.lock);
	return 0;
}

/* Compare @n bytes of the fill read at offset @off into @c. */
static int read_window(const struct gg_quarantine_entry *e, uint64_t off, uint64_t n,
		       struct gg_band_check *c)
{
	uint8_t buf[CHUNK];

	for (uint64_t done = 0; done < n; done += CHUNK) {
		size_t len = n - done < CHUNK ? (size_t)(n - done) : CHUNK;
		int err = gg_device_read(e->ctx, NULL, e->ptr + off + done, buf, len);

		/* The legacy stream is refused while a blocking stream is captured:
		 * the context's private stream then (its work is not waited for). */
		if (err == -EBUSY)
			err = gg_device_read(e->ctx, e->read_stream, e->ptr + off + done, buf, len);
		if (err)
			return err;
		gg_band_compare(c, buf, len, off + done, e->fill);
	}
	return 0;
}

/* Check the fill of @e, whose zone is @z: report a write after free. */
static void check_fill(const struct gg_quarantine_entry *e, const struct gg_zone *z, const char *why)
{
	uint64_t head = e->user < WINDOW ? e->user : WINDOW;
	uint64_t tail_at = e->user - head > WINDOW ? e->user - WINDOW : head;
	struct gg_band_check c;

	memset(&c, 0, sizeof(c));
	if ((e->event && gg_device_event_wait(e->ctx, e->event)) || read_window(e, 0, head, &c) ||
	    read_window(e, tail_at, e->user - tail_at, &c)) {
		gg_redzone_unchecked(GG_UNCHECKED_unreadable);
		atomic_fetch_add_explicit(&quarantine_state.count.unchecked_bytes, e->user,
					  memory_order_relaxed);
		return;
	}
	atomic_fetch_add_explicit(&quarantine_state.count.checked_bytes, head + (e->user - tail_at),
				  memory_order_relaxed);
	if (tail_at > head) {
		/* The middle, never read: counted, never passed for clean. */
		gg_redzone_unchecked(GG_UNCHECKED_quarantine_middle);
		atomic_fetch_add_explicit(&quarantine_state.count.unchecked_bytes, tail_at - head,
					  memory_order_relaxed);
	}
	if (!c.changed)
		return;
	struct gg_violation v = {
		.kind = GG_VIOLATION_WRITE_AFTER_FREE,
		.index = z->index,
		.user = z->user,
		.pad = gg_redzone_pad(),
		.first = c.first,
		.last = c.last,
		.changed = c.changed,
		.first_value = c.first_value,
		.expected = e->fill,
		.ptr = e->ptr,
		.site = z->site,
		.detected_by = why,
		.kernel = -1,
		.api = e->api,
		.address = e->ptr,
		.free_stack = e->free_stack,
		.suspects = { z->suspects[0], z->suspects[1], z->suspects[2], z->suspects[3] },
	};
	gg_redzone_found(&v);
}

/* Check @e and hand it to the driver, with no lock held. */
static void release(const struct gg_quarantine_entry *e, const char *why, bool dead)
{
	struct gg_zone z;
	bool zoned = gg_registry_remove(e->ptr, &z) == 0;
	int err = 0;

	atomic_fetch_add_explicit(&quarantine_state.count.released, 1, memory_order_relaxed);
	if (dead) {
		/* Its context died with its memory: nothing to read or free. */
		gg_redzone_unchecked(GG_UNCHECKED_unreadable);
		atomic_fetch_add_explicit(&quarantine_state.count.unchecked_bytes, e->user,
					  memory_order_relaxed);
	} else {
		void *stream = e->stream;
		bool capturing = false;

		if (zoned)
			check_fill(e, &z, why);
		/* Never onto a stream being captured now: there the free would be
		 * captured into the application's graph as a free node, not run,
		 * and one of memory no graph allocated invalidates the capture
		 * (cuda.h, cuMemFreeAsync; docs/how-it-works.md, "Quarantine").
		 * Freed at once instead, once the work queued before the
		 * application's free is done (its event): the shim's calls run in
		 * relaxed capture mode (driver/device.c), where a synchronous free
		 * prohibits no capture (cuda.h, cuThreadExchangeStreamCaptureMode). */
		if (stream && (gg_device_capturing(stream, &capturing) || capturing)) {
			stream = NULL;
			if (e->event)
				(void)gg_device_event_wait(e->ctx, e->event);
		}
		if (e->event)
			(void)gg_device_event_destroy(e->ctx, e->event);
		/* As the application asked; its stream destroyed since, at once. */
		err = gg_device_free(e->ctx, stream, e->ptr);
		if (err == -EIO && e->stream)
			err = gg_device_free(e->ctx, NULL, e->ptr);
		if (err)
			atomic_fetch_add_explicit(&quarantine_state.count.release_failures, 1,
						  memory_order_relaxed);
	}
	if (zoned)
		gg_redzone_released(&z, e->free_stack, !dead);
}

int gg_quarantine_hold(const struct gg_quarantine_entry *e)
{
	struct gg_quarantine_entry out;
	int err;

	pthread_mutex_lock(&quarantine_state.lock);
	if (!(err = room())) {
		quarantine_state.n++;
		*at(quarantine_state.n - 1) = *e;
		quarantine_state.bytes += e->held;
		quarantine_state.user += e->user;
		atomic_store_explicit(&gg_quarantine_count, quarantine_state.n, memory_order_relaxed);
	}
	pthread_mutex_unlock(&quarantine_state.lock);
	if (err)
		return err;
	atomic_fetch_add_explicit(&quarantine_state.count.entered, 1, memory_order_relaxed);
	/* Over its size: the oldest go (this one too, when it alone is larger). */
	while (take(quarantine_state.size, -1, &out))
		release(&out, "quarantine", false);
	return 0;
}

uint64_t gg_quarantine_release(int ctx_slot, const char *why, bool dead)
{
	struct gg_quarantine_entry out, *all;
	uint64_t n = 0;
	size_t k;

	if (!gg_quarantine_any())
		return 0;
	if (!take_all(ctx_slot, &all, &k)) {
		for (size_t i = 0; i < k; i++)
			release(&all[i], why, dead);
		free(all);
		return k;
	}
	/* No memory for the list: one at a time, a walk of the ring each. */
	while (take(0, ctx_slot, &out)) {
		release(&out, why, dead);
		n++;
	}
	return n;
}

bool gg_quarantine_out_of_memory(void)
{
	uint64_t n;

	if (!quarantine_state.size || !gg_quarantine_any())
		return false;
	n = gg_quarantine_release(-1, "out_of_memory", false);
	atomic_fetch_add_explicit(&quarantine_state.count.oom_releases, n, memory_order_relaxed);
	return n != 0;
}

/* The driver calls that can run out of device memory: those whose \return
 * list in cuda.h names CUDA_ERROR_OUT_OF_MEMORY and that take device memory,
 * and those that take it for a graph's memory nodes (cuda.h's cuGraphUpload:
 * it "uses memory cached by stream to back the allocations owned by
 * hGraphExec", as a launch does when no upload did). Each, when the driver
 * answers CUDA_ERROR_OUT_OF_MEMORY while the quarantine holds something, is
 * asked again once it gave that back (hooks/hooks.c).
 *   allocations: cuMemAlloc_v2, cuMemAllocPitch_v2, cuMemAllocManaged,
 *     cuMemAllocAsync, cuMemAllocFromPoolAsync (and their _ptsz forms);
 *     cuMemCreate (physical memory for virtual mappings);
 *   arrays: cuArrayCreate_v2, cuArray3DCreate_v2, cuMipmappedArrayCreate;
 *   graphs with memory nodes: cuGraphAddMemAllocNode, every
 *     cuGraphInstantiate form, cuGraphUpload, cuGraphLaunch (and _ptsz);
 *   module and library loads (their globals and code live on the device):
 *     cuModuleLoad, cuModuleLoadData, cuModuleLoadDataEx,
 *     cuModuleLoadFatBinary, cuLibraryLoadData, cuLibraryLoadFromFile;
 *   contexts (each takes device memory for its own state):
 *     cuCtxCreate_v2, _v3, _v4, cuDevicePrimaryCtxRetain.
 * Not among them: page-locked host memory (cuMemAllocHost, cuMemHostAlloc,
 * cuMemHostRegister), which the quarantine's device memory cannot give
 * back; address space alone (cuMemAddressReserve); and the calls whose
 * out-of-memory is the driver's own bookkeeping (streams, events, graph
 * nodes other than memory nodes). Not hooked at all, so not drained for:
 * the legacy cuArrayCreate and cuArray3DCreate (32-bit descriptors),
 * cuCtxCreate (v1), and green contexts (cuGreenCtxCreate). */
bool gg_quarantine_drains(int id)
{
	switch (id) {
	case GG_ID_cuMemCreate:
	case GG_ID_cuArrayCreate_v2:
	case GG_ID_cuArray3DCreate_v2:
	case GG_ID_cuMipmappedArrayCreate:
	case GG_ID_cuGraphAddMemAllocNode:
	case GG_ID_cuGraphInstantiate:
	case GG_ID_cuGraphInstantiate_v2:
	case GG_ID_cuGraphInstantiateWithFlags:
	case GG_ID_cuGraphInstantiateWithParams:
	case GG_ID_cuGraphInstantiateWithParams_ptsz:
	case GG_ID_cuGraphUpload:
	case GG_ID_cuGraphUpload_ptsz:
	case GG_ID_cuGraphLaunch:
	case GG_ID_cuGraphLaunch_ptsz:
	case GG_ID_cuModuleLoad:
	case GG_ID_cuModuleLoadData:
	case GG_ID_cuModuleLoadDataEx:
	case GG_ID_cuModuleLoadFatBinary:
	case GG_ID_cuLibraryLoadData:
	case GG_ID_cuLibraryLoadFromFile:
	case GG_ID_cuCtxCreate_v2:
	case GG_ID_cuCtxCreate_v3:
	case GG_ID_cuCtxCreate_v4:
	case GG_ID_cuDevicePrimaryCtxRetain:
		return true;
	default:
		return false; /* the allocations retry in their own hooks (FORWARD_ALLOC) */
	}
}

int gg_quarantine_find(uint64_t ptr, struct gg_quarantine_entry *out)
{
	int err = -ENOENT;

	pthread_mutex_lock(&quarantine_state.lock);
	for (size_t i = 0; i < quarantine_state.n && err; i++) {
		if (at(i)->ptr == ptr) {
			*out = *at(i);
			err = 0;
		}
	}
	pthread_mutex_unlock(&quarantine_state.lock);
	return err;
}

void gg_quarantine_stats(struct gg_quarantine_stats *out)
{
	pthread_mutex_lock(&quarantine_state.lock);
	out->held = quarantine_state.n;
	out->held_bytes = quarantine_state.bytes;
	out->held_user = quarantine_state.user;
	pthread_mutex_unlock(&quarantine_state.lock);
	out->entered = atomic_load(&quarantine_state.count.entered);
	out->released = atomic_load(&quarantine_state.count.released);
	out->checked_bytes = atomic_load(&quarantine_state.count.checked_bytes);
	out->unchecked_bytes = atomic_load(&quarantine_state.count.unchecked_bytes);
	out->oom_releases = atomic_load(&quarantine_state.count.oom_releases);
	out->release_failures = atomic_load(&quarantine_state.count.release_failures);
}

void gg_quarantine_atfork_prepare(void)
{
	pthread_mutex_lock(&quarantine_state.lock);
}

void gg_quarantine_atfork_parent(void)
{
	pthread_mutex_unlock(&quarantine_state.lock);
}

void gg_quarantine_atfork_child(void)
{
	/* Its parent's memory, its parent's to check (the ring's array is kept). */
	pthread_mutex_init(&quarantine_state.lock, NULL);
	quarantine_state.n = 0;
	quarantine_state.head = 0;
	quarantine_state.bytes = 0;
	quarantine_state.user = 0;
	atomic_store(&gg_quarantine_count, 0);
	GG_ZERO_COUNTERS(&quarantine_state.count);
}
