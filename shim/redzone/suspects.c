/* Suspects (docs/how-it-works.md, "Red zones": Which kernel did it): every launch's
 * parameters are read (laid out as the driver says, or extra's buffer), and
 * each zone a pointer among them falls in names the launch as its newest
 * suspect, cheaply enough to stay on in production: a memo per kernel
 * keeps the addresses its last launch was given, and a launch given the
 * same ones, while no band was given and no suspect list cleared (the
 * generation), only notes that it is the latest. With a quarantine, a
 * launch given a pointer into a freed allocation is a dangling launch,
 * reported before it is forwarded; with checked launches, each launch goes
 * on to checked.c.
 *
 * Memory order: a memo is written only under its @busy flag (acquire on
 * taking it, release on letting go); the generation is bumped with release
 * after the zones are written and read with acquire, so a memo made at an
 * older one is written out again. */
#include "redzone/suspects.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "base/gg.h"
#include "driver/device.h"
#include "handles/kernels.h"
#include "redzone/checked.h"
#include "redzone/findings.h"
#include "redzone/quarantine.h"
#include "redzone/registry.h"
#include "redzone/replays.h"
#include "redzone/zones.h"

/* A kernel launched again with the same addresses, while no band was given
 * and no suspect list cleared, leaves the zones as they are: their entry
 * names the launch @first, which stands for @last. Taken with @busy (a
 * launch that finds it taken writes the zones itself). */
#define MEMO_PTRS 8
struct memo {
	atomic_flag busy;
	uint8_t n;
	uint64_t ptr[MEMO_PTRS];    /* under @busy */
	uint64_t generation;        /* under @busy */
	atomic_uint_fast64_t first; /* the launch the zones were given */
	atomic_uint_fast64_t last;  /* the latest launch with the same addresses */
};

static struct {
	/* Written by gg_suspects_configure() during set-up; read-only after. */
	uint64_t pad;        /* GPUGUARD_REDZONE: 0, no band to name a kernel for */
	bool check_launches; /* GPUGUARD_CHECK_LAUNCHES */

	/* Bumped by every band given and every suspect list cleared (release): a
	 * kernel's memo of an older generation is written out again. */
	atomic_uint_fast64_t generation;
	/* Launches whose parameters could not be followed (no layout, no buffer). */
	atomic_uint_fast64_t unfollowed;
	struct memo memos[GG_KERNELS_MAX]; /* each under its own @busy */
} suspects_state;

void gg_suspects_configure(uint64_t pad, bool check_launches)
{
	suspects_state.pad = pad;
	suspects_state.check_launches = check_launches;
}

const atomic_uint_fast64_t *gg_suspects_generation(void)
{
	return &suspects_state.generation;
}

void gg_suspects_stale(void)
{
	atomic_fetch_add_explicit(&suspects_state.generation, 1, memory_order_release);
}

uint64_t gg_suspects_unfollowed(void)
{
	return atomic_load(&suspects_state.unfollowed);
}

void gg_suspects_atfork_child(void)
{
	atomic_fetch_add(&suspects_state.generation, 1); /* the memos name the parent's zones */
	for (unsigned i = 0; i < GG_KERNELS_MAX; i++)
		atomic_flag_clear(&suspects_state.memos[i].busy);
	atomic_store(&suspects_state.unfollowed, 0);
}

uint64_t gg_redzone_suspect_launch(uint64_t entry)
{
	int slot = GG_SUSPECT_SLOT(entry);
	uint64_t launch = GG_SUSPECT_LAUNCH(entry), last;

	if (slot < 0 || slot >= GG_KERNELS_MAX)
		return launch;
	last = atomic_load(&suspects_state.memos[slot].last) & GG_SUSPECT_LAUNCH_MASK;
	if ((atomic_load(&suspects_state.memos[slot].first) & GG_SUSPECT_LAUNCH_MASK) == launch &&
	    last > launch)
		return last;
	/* A kernel node of a graph whose later replays changed nothing. */
	last = gg_redzone_replay_index(launch) & GG_SUSPECT_LAUNCH_MASK;
	return last > launch ? last : launch;
}

#define EXTRA_PAIRS 16 /* extra's (key, value) pairs read at most */

/* The buffer of a launch's @extra (cuda.h: CU_LAUNCH_PARAM_END 0,
 * CU_LAUNCH_PARAM_BUFFER_POINTER 1, CU_LAUNCH_PARAM_BUFFER_SIZE 2). The
 * driver took the launch, so the list is well formed. */
static const uint8_t *extra_buffer(void **extra, size_t *size)
{
	const uint8_t *buf = NULL;

	*size = 0;
	for (int i = 0; extra && i < EXTRA_PAIRS && extra[2 * i]; i++) {
		uintptr_t key = (uintptr_t)extra[2 * i];

		if (key == 1)
			buf = extra[2 * i + 1];
		else if (key == 2 && extra[2 * i + 1])
			*size = *(const size_t *)extra[2 * i + 1];
	}
	return *size ? buf : NULL;
}

/* The device addresses launch @l was given: its pointer-sized parameters by
 * @layout; without a layout, every 8-aligned word of extra's buffer. -1:
 * they cannot be known (kernelParams, and no layout). */
/* Pointer-sized parameter @i of @layout, read from kernelParams (0: none). */
static inline uint64_t param_word(void **params, const struct gg_kernel_layout *layout, unsigned i)
{
	const void *p = params[layout->param[i]];
	uint64_t v = 0;

	if (p)
		memcpy(&v, p, sizeof(v));
	return v;
}

static int launch_pointers(const struct gg_redzone_launch *l, const struct gg_kernel_layout *layout,
			   uint64_t *out, int16_t *which)
{
	bool known = layout && layout->known;
	const uint8_t *buf;
	size_t size;
	uint64_t v;
	int n = 0;

	if (l->params) {
		if (!known)
			return -1;
		for (unsigned i = 0; i < layout->nptr; i++)
			if ((v = param_word(l->params, layout, i)))
				which[n] = (int16_t)layout->param[i], out[n++] = v;
		return n;
	}
	if (!(buf = extra_buffer(l->extra, &size)))
		return known ? 0 : -1;
	if (known) {
		for (unsigned i = 0; i < layout->nptr; i++)
			if (layout->offset[i] + sizeof(v) <= size &&
			    (memcpy(&v, buf + layout->offset[i], sizeof(v)), v))
				which[n] = (int16_t)layout->param[i], out[n++] = v;
		return n;
	}
	/* No layout: the word's place in the buffer stands for the parameter. */
	for (size_t off = 0; off + sizeof(v) <= size && n < GG_LAUNCH_PTRS; off += sizeof(v))
		if ((memcpy(&v, buf + off, sizeof(v)), v))
			which[n] = (int16_t)(off / sizeof(v)), out[n++] = v;
	return n;
}

/* Launch @index of kernel @slot given @ptrs: the newest suspect of each
 * zone they point into (its start, or inside it). Returns which of @ptrs
 * point into a quarantined allocation (bit i: @ptrs[i]), found by the same
 * lookup. */
static uint64_t give(int slot, const uint64_t *ptrs, int n, uint64_t index)
{
	uint64_t dangling = 0;

	for (int i = 0; i < n; i++) {
		uint64_t base;
		int r = gg_registry_suspect(ptrs[i], GG_SUSPECT(slot, index),
					    gg_redzone_suspect_launch);

		if (r < 0 && (base = gg_redzone_interior_base(ptrs[i])) && base != ptrs[i])
			r = gg_registry_suspect(base, GG_SUSPECT(slot, index),
						gg_redzone_suspect_launch);
		if (r > 0)
			dangling |= UINT64_C(1) << i;
	}
	return dangling;
}

/* With @m held: launch @index of kernel @slot was given @ptrs, other than
 * the memo's. The zones of the memo's addresses learn their latest launch,
 * those of @ptrs get this one, and the memo becomes @ptrs. Lets @m go. */
static uint64_t remember(struct memo *m, int slot, const uint64_t *ptrs, int n, uint64_t index,
			 uint64_t generation)
{
	uint64_t dangling;

	uint64_t first = atomic_load(&m->first), last = atomic_load(&m->last);

	for (unsigned i = 0; m->n && last != first && i < m->n; i++) {
		uint64_t base;

		/* An address into the middle of a zone: its entry is the base's. */
		if (gg_registry_renew_suspect(m->ptr[i], GG_SUSPECT(slot, first),
					      GG_SUSPECT(slot, last)) &&
		    (base = gg_redzone_interior_base(m->ptr[i])) && base != m->ptr[i])
			(void)gg_registry_renew_suspect(base, GG_SUSPECT(slot, first),
							GG_SUSPECT(slot, last));
	}
	dangling = give(slot, ptrs, n, index);
	m->n = n <= MEMO_PTRS ? (uint8_t)n : 0;
	memcpy(m->ptr, ptrs, (size_t)m->n * 8);
	/* Read before the zones were written; a dangling launch's stands for
	 * no generation, so the next launch is looked at (and reported) again. */
	m->generation = dangling ? UINT64_MAX : generation;
	atomic_store(&m->first, index);
	atomic_store(&m->last, index);
	atomic_flag_clear_explicit(&m->busy, memory_order_release);
	return dangling;
}

static uint64_t generation_now(uint64_t epoch)
{
	/* A band given, a list cleared, or a module unloaded (a kernel's slot,
	 * and so its memo, may now stand for another handle). */
	return atomic_load_explicit(&suspects_state.generation, memory_order_acquire) + (epoch << 40);
}

/* The kernel of the thread's last launch (its layout known), while no module
 * was unloaded. */
static __thread struct {
	const void *fn;
	uint64_t epoch;
	int slot;
	const struct gg_kernel_layout *layout;
} last_kernel __attribute__((tls_model("initial-exec")));

/* The quarantined zone @ptr points into (its start, or inside it), as the
 * driver says now: a report never rests on the thread's cache of interior
 * pointers, which a free the shim did not see can leave stale. */
static int quarantined_zone(uint64_t ptr, struct gg_zone *z)
{
	uint64_t base;

	if (gg_registry_find(ptr, z) &&
	    (!(base = gg_redzone_interior_base_now(ptr)) || base == ptr || gg_registry_find(base, z)))
		return -ENOENT;
	return z->flags & GG_ZONE_QUARANTINED ? 0 : -ENOENT;
}

/* Launch @l of kernel @slot was given @ptrs (parameter @which[i] each); the
 * bits of @dangling name those into quarantined allocations: a dangling
 * launch each, with the kernel, the launch, the parameter and the free. */
static void report_dangling(const struct gg_redzone_launch *l, int slot, const uint64_t *ptrs,
			    const int16_t *which, int n, uint64_t dangling)
{
	struct gg_launch_check lc = { .slot = slot, .launch = l->index };

	for (int i = 0; i < n; i++) {
		struct gg_quarantine_entry e = { .api = "?" };
		struct gg_zone z;

		if (!(dangling >> i & 1) || quarantined_zone(ptrs[i], &z))
			continue;
		(void)gg_quarantine_find(z.ptr, &e);
		struct gg_violation v = {
			.kind = GG_VIOLATION_DANGLING_LAUNCH,
			.index = z.index,
			.user = z.user,
			.pad = suspects_state.pad,
			.ptr = z.ptr,
			.site = z.site,
			.detected_by = "launch",
			.api = e.api,
			.address = ptrs[i],
			.free_stack = e.free_stack,
			.param = which[i],
			.node = l->node,
		};
		uint64_t before = gg_findings_total();

		gg_redzone_report_found(&v, &lc);
		gg_redzone_halt_if_asked(before); /* GPUGUARD_HALT_ON_ERROR stops here */
	}
}

/* The launch counter's epoch now (a module unloaded moves it). */
static inline uint64_t epoch_now(void)
{
	static const atomic_uint_fast64_t *epoch_counter;

	if (GG_UNLIKELY(!epoch_counter)) /* the same pointer whoever stores it */
		epoch_counter = gg_kernels_epoch_counter();
	return atomic_load_explicit(epoch_counter, memory_order_acquire);
}

static inline bool memo_settles(const struct gg_redzone_launch *l, uint64_t epoch);

/* A launch while anything is quarantined, its memo no help: every address. */
static __attribute__((noinline)) void dangling_check(const struct gg_redzone_launch *l)
{
	const struct gg_kernel_layout *layout;
	uint64_t ptrs[GG_LAUNCH_PTRS], dangling = 0;
	int16_t which[GG_LAUNCH_PTRS];
	struct gg_zone z;
	int slot, n;

	slot = gg_kernels_slot(l->fn);
	layout = gg_kernels_layout(slot);
	if ((n = launch_pointers(l, layout, ptrs, which)) <= 0)
		return;
	for (int i = 0; i < n; i++)
		if (!quarantined_zone(ptrs[i], &z))
			dangling |= UINT64_C(1) << i;
	if (dangling)
		report_dangling(l, slot, ptrs, which, n, dangling);
}

bool gg_redzone_launching(const struct gg_redzone_launch *l)
{
	if (!suspects_state.pad)
		return false;
	/* Given what its last launch was given, and nothing quarantined since:
	 * that launch was seen clean (a dangling one leaves no memo), and the
	 * memo now stands for this one, which gg_redzone_launched() need not
	 * look at again (one comparison a launch, not two: BENCHMARKS.md). */
	if (memo_settles(l, epoch_now()))
		return true;
	dangling_check(l);
	return false;
}

/* Every launch the fast path below does not settle. */
static __attribute__((noinline)) void launched(const struct gg_redzone_launch *l, uint64_t epoch)
{
	const struct gg_kernel_layout *layout;
	uint64_t ptrs[GG_LAUNCH_PTRS], dangling = 0;
	int16_t which[GG_LAUNCH_PTRS];
	struct memo *m;
	int slot, n;

	slot = gg_kernels_slot(l->fn);
	layout = gg_kernels_layout(slot);
	if (layout && layout->known && slot >= 0)
		last_kernel.fn = l->fn, last_kernel.epoch = epoch, last_kernel.slot = slot,
		last_kernel.layout = layout;
	m = slot >= 0 ? &suspects_state.memos[slot] : NULL;
	n = launch_pointers(l, layout, ptrs, which);
	if (n < 0)
		atomic_fetch_add_explicit(&suspects_state.unfollowed, 1, memory_order_relaxed);
	if (m && n > 0) {
		if (atomic_flag_test_and_set_explicit(&m->busy, memory_order_acquire))
			dangling = give(slot, ptrs, n, l->index); /* another launch holds the memo */
		else
			dangling = remember(m, slot, ptrs, n, l->index, generation_now(epoch));
	}
	/* A launch no hook saw before it was forwarded (a graph's kernel node):
	 * its dangling pointers are reported here, as it is noted. */
	if (dangling && !l->dangling_checked)
		report_dangling(l, slot, ptrs, which, n, dangling);
	if (suspects_state.check_launches && !l->unforwarded)
		gg_checked_launch(l, slot, ptrs, n);
}

void gg_redzone_launch_check(const struct gg_redzone_launch *l)
{
	uint64_t ptrs[GG_LAUNCH_PTRS];
	int16_t which[GG_LAUNCH_PTRS];
	int slot;

	if (!suspects_state.pad || !suspects_state.check_launches)
		return;
	slot = gg_kernels_slot(l->fn);
	gg_checked_launch(l, slot, ptrs, launch_pointers(l, gg_kernels_layout(slot), ptrs, which));
}

/* The common case: the thread's last kernel again, kernelParams, the same
 * addresses as that kernel's last launch and nothing changed since: its memo
 * stands for this launch (noted), compared as the parameters are read. */
static inline bool memo_settles(const struct gg_redzone_launch *l, uint64_t epoch)
{
	if (GG_LIKELY(l->fn == last_kernel.fn && l->fn && epoch == last_kernel.epoch && l->params &&
		      !suspects_state.check_launches)) {
		const struct gg_kernel_layout *layout = last_kernel.layout;
		struct memo *m = &suspects_state.memos[last_kernel.slot];

		if (!atomic_flag_test_and_set_explicit(&m->busy, memory_order_acquire)) {
			uint64_t diff = m->generation ^ generation_now(epoch), v;
			unsigned n = 0;

			for (unsigned i = 0; i < layout->nptr; i++)
				if ((v = param_word(l->params, layout, i)))
					diff |= m->ptr[n++ & (MEMO_PTRS - 1)] ^ v;
			if (GG_LIKELY(!(diff | (n ^ m->n)) || !n)) {
				/* The same as before (or given no address): nothing to note. */
				if (n)
					atomic_store_explicit(&m->last, l->index, memory_order_relaxed);
				atomic_flag_clear_explicit(&m->busy, memory_order_release);
				return true;
			}
			atomic_flag_clear_explicit(&m->busy, memory_order_release);
		}
	}
	return false;
}

void gg_redzone_launched(const struct gg_redzone_launch *l)
{
	uint64_t epoch;

	if (!suspects_state.pad) /* no band to name a kernel for */
		return;
	epoch = epoch_now();
	if (memo_settles(l, epoch))
		return;
	launched(l, epoch);
}
