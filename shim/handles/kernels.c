/* The kernels table (kernels.h): open addressing on the handle, insert only.
 * A slot is claimed by CAS on its handle; what a reader needs of it is
 * published before (names) or with a flag of its own (layout, driver name). */
#include "handles/kernels.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/gg.h"
#include "driver/device.h"

#define MASK (GG_KERNELS_MAX - 1)
#define CLAIMING ((const void *)1) /* a slot being claimed: its names not yet written */
#define GONE ((const void *)2)     /* a slot whose handle was unloaded: never matches */

enum {
	LAYOUT_UNREAD,
	LAYOUT_READING,
	LAYOUT_READY
};

struct kernel {
	_Atomic(const void *) handle; /* set last (release) */
	/* Copies of the lookup's names, never freed (a report may name a slot
	 * at any time, a forked child's too): @module is stored before @function. */
	_Atomic(const char *) module;
	_Atomic(const char *) function; /* NULL: no lookup named it (a launch added it) */
	_Atomic(const void *) owner;    /* the module or library of its lookup */
	_Atomic(const void *) key;      /* the caller's identity of its names (never read through) */
	atomic_bool is_kernel;          /* a CUkernel (cuLibraryGetKernel) */
	atomic_int layout_state;        /* LAYOUT_*: @layout is read-only once READY */
	struct gg_kernel_layout layout;
	_Atomic(char *) driver_name; /* the driver's name, copied once */
};

static struct {
	struct kernel k[GG_KERNELS_MAX]; /* lock-free, insert only */
	atomic_uint_fast64_t epoch;      /* unloads so far */
	/* The slots claimed, in order, so an unload visits those, not them all:
	 * an entry is written before @nclaimed counts it (release). */
	uint16_t claimed[GG_KERNELS_MAX];
	atomic_uint nclaimed;    /* entries written */
	atomic_uint claims_next; /* entries taken */
} kernels_state;

static unsigned home_of(const void *handle)
{
	uint64_t h = (uint64_t)(uintptr_t)handle * 0x9e3779b97f4a7c15ull;

	return (unsigned)(h >> 40) & MASK;
}

static void claim_note(unsigned slot)
{
	/* Claims may finish out of order: each takes its own entry first. */
	unsigned at = atomic_fetch_add(&kernels_state.claims_next, 1);

	kernels_state.claimed[at] = (uint16_t)slot;
	/* Counted once every entry before it is written. */
	while (atomic_load(&kernels_state.nclaimed) != at)
		;
	atomic_store_explicit(&kernels_state.nclaimed, at + 1, memory_order_release);
}

/* The slot of @handle; when absent, added unnamed (when @add). -1: absent,
 * or the table is full. */
static int find(const void *handle, bool add, bool is_kernel)
{
	if (!handle || handle == CLAIMING || handle == GONE)
		return -1;
	for (unsigned i = home_of(handle), n = 0; n < GG_KERNELS_MAX; i = (i + 1) & MASK, n++) {
		struct kernel *k = &kernels_state.k[i];
		const void *cur = atomic_load_explicit(&k->handle, memory_order_acquire);

		while (cur == CLAIMING) /* a few stores away from done */
			cur = atomic_load_explicit(&k->handle, memory_order_acquire);
		if (cur == handle)
			return (int)i;
		if (cur)
			continue;
		if (!add)
			return -1;
		if (!atomic_compare_exchange_strong(&k->handle, &cur, CLAIMING)) {
			if (cur == handle ||
			    (cur == CLAIMING && (cur = atomic_load(&k->handle)) == handle))
				return (int)i;
			continue;
		}
		atomic_store(&k->is_kernel, is_kernel);
		atomic_store_explicit(&k->handle, handle, memory_order_release);
		claim_note(i);
		return (int)i;
	}
	return -1;
}

int gg_kernels_slot(const void *handle)
{
	return find(handle, true, false);
}

void gg_kernels_found(const void *handle, bool kernel, const void *owner, const char *module,
		      const char *function, const void *key)
{
	/* The driver hands out one handle per kernel and module: the first
	 * lookup's names stand. A launch that came first left none. */
	int slot = find(handle, true, kernel);
	struct kernel *k;
	const char *had;
	char *m, *f;

	if (slot < 0 || !function)
		return;
	k = &kernels_state.k[slot];
	/* The same lookup again (the common case): nothing to compare or copy. */
	if (key && atomic_load_explicit(&k->key, memory_order_relaxed) == key &&
	    atomic_load_explicit(&k->owner, memory_order_relaxed) == owner)
		return;
	had = atomic_load(&k->function);
	const void *was = atomic_load(&k->owner);

	/* An owner known on both sides that differs, or another name: another
	 * kernel (cuKernelGetFunction's functions have no owner). */
	if (had && (strcmp(had, function) || (was && owner && was != owner))) {
		/* Another kernel's handle, seen in a module that was unloaded
		 * unseen: that slot keeps its names, the handle gets a new one. */
		atomic_store(&k->handle, GONE);
		atomic_fetch_add(&kernels_state.epoch, 1);
		if ((slot = find(handle, true, kernel)) < 0)
			return;
		k = &kernels_state.k[slot];
		had = atomic_load(&k->function);
	}
	if (kernel)
		atomic_store(&k->is_kernel, true);
	if (owner)
		atomic_store(&k->owner, owner);
	atomic_store(&k->key, key);
	if (had || !(f = strdup(function)))
		return;
	if (!(m = strdup(module ? module : "?"))) {
		free(f);
		return;
	}
	/* Lookups of one handle are serialised by the audit's lock. */
	atomic_store(&k->module, m);
	atomic_store_explicit(&k->function, f, memory_order_release);
}

void gg_kernels_unloaded(const void *owner)
{
	bool any = false;

	unsigned n = atomic_load_explicit(&kernels_state.nclaimed, memory_order_acquire);

	for (unsigned c = 0; c < n; c++) {
		struct kernel *k = &kernels_state.k[kernels_state.claimed[c]];
		const void *h = atomic_load(&k->handle), *o = atomic_load(&k->owner);

		/* A handle of unknown provenance (no lookup seen) may be one of
		 * them; a context's end takes its functions (CUkernels outlive it). */
		if (h && h != CLAIMING && h != GONE &&
		    (o == owner || !o || (!owner && !atomic_load(&k->is_kernel)))) {
			atomic_store(&k->handle, GONE);
			any = true;
		}
	}
	if (any)
		atomic_fetch_add(&kernels_state.epoch, 1);
}

void gg_kernels_atfork_child(void)
{
	/* Only this thread came along: a claim another thread had under way
	 * never finishes. Its slot is retired and its entry counted. */
	for (unsigned i = 0; i < GG_KERNELS_MAX; i++) {
		const void *h = atomic_load(&kernels_state.k[i].handle);

		if (h == CLAIMING)
			atomic_store(&kernels_state.k[i].handle, GONE);
	}
	atomic_store(&kernels_state.nclaimed, atomic_load(&kernels_state.claims_next));
}

const atomic_uint_fast64_t *gg_kernels_epoch_counter(void)
{
	return &kernels_state.epoch;
}

uint64_t gg_kernels_epoch(void)
{
	return atomic_load_explicit(&kernels_state.epoch, memory_order_acquire);
}

/* Read @k's layout from the driver: a CUkernel's through cuKernelGetParamInfo,
 * a handle of unknown kind tried as a function, then as a CUkernel (cuda.h:
 * CUDA_ERROR_INVALID_VALUE for a handle of the other kind, and past the
 * last parameter). */
static void read_layout(struct kernel *k, const void *handle)
{
	struct gg_kernel_layout *l = &k->layout;
	bool is_kernel = atomic_load(&k->is_kernel);
	size_t offset, size;
	int err = gg_device_param_info(handle, is_kernel, 0, &offset, &size);

	if (err == -EINVAL && !is_kernel && !gg_device_param_info(handle, true, 0, &offset, &size)) {
		is_kernel = true;
		atomic_store(&k->is_kernel, true);
		err = 0;
	}
	memset(l, 0, sizeof(*l));
	/* -EINVAL at the first parameter: a kernel with none, when a lookup said
	 * what the handle is; else it may be a handle of neither kind: unknown. */
	l->known = err == 0 || (err == -EINVAL && atomic_load(&k->function));
	for (size_t i = 0; !err && i < 256; i++) {
		if (i && gg_device_param_info(handle, is_kernel, i, &offset, &size))
			break;
		if (size == 8 && offset % 8 == 0 && offset <= UINT16_MAX && l->nptr < GG_KERNEL_PTRS) {
			l->param[l->nptr] = (uint8_t)i;
			l->offset[l->nptr++] = (uint16_t)offset;
		}
	}
}

/* Copy the driver's name of @handle into @k, once. */
static void name_from_driver(struct kernel *k, const void *handle)
{
	const char *driver = NULL;
	char *name, *expected = NULL;

	if (handle == CLAIMING || handle == GONE ||
	    gg_device_kernel_name(handle, atomic_load(&k->is_kernel), &driver) || !driver ||
	    !(name = strdup(driver)))
		return;
	if (!atomic_compare_exchange_strong(&k->driver_name, &expected, name))
		free(name);
}

const struct gg_kernel_layout *gg_kernels_layout(int slot)
{
	struct kernel *k;
	int state;

	if (slot < 0)
		return NULL;
	k = &kernels_state.k[slot];
	state = atomic_load_explicit(&k->layout_state, memory_order_acquire);
	if (GG_LIKELY(state == LAYOUT_READY))
		return &k->layout;
	if (state != LAYOUT_UNREAD ||
	    !atomic_compare_exchange_strong(&k->layout_state, &state, LAYOUT_READING))
		return NULL;
	read_layout(k, atomic_load(&k->handle));
	/* The driver's name, while the handle is sure to be valid (it was just
	 * launched): a report never hands the driver a handle that may be dead. */
	if (!atomic_load(&k->function))
		name_from_driver(k, atomic_load(&k->handle));
	atomic_store_explicit(&k->layout_state, LAYOUT_READY, memory_order_release);
	return &k->layout;
}

static void unnamed(const void *handle, struct gg_report_kernel *out)
{
	/* Its address, which the reader can match with a trace. */
	snprintf(out->unnamed, sizeof(out->unnamed), "function@%p", handle);
	out->name = out->unnamed;
	out->module = "?";
}

void gg_kernels_name(int slot, struct gg_report_kernel *out)
{
	struct kernel *k;
	const void *handle;
	char *name;

	memset(out, 0, sizeof(*out));
	if (slot < 0 || slot >= GG_KERNELS_MAX) {
		unnamed(NULL, out);
		return;
	}
	k = &kernels_state.k[slot];
	handle = atomic_load_explicit(&k->handle, memory_order_acquire);
	if ((out->name = atomic_load(&k->function))) {
		out->module = atomic_load(&k->module);
		if (!out->module)
			out->module = "?";
		return;
	}
	/* Not from a lookup the shim saw: the driver's name, asked at its first
	 * launch (never now: the handle may be dead). */
	if (!(name = atomic_load(&k->driver_name))) {
		unnamed(handle, out);
		return;
	}
	out->name = name;
	out->module = "?";
}

void gg_kernels_name_handle(const void *handle, struct gg_report_kernel *out)
{
	int slot = find(handle, false, false);

	if (slot < 0) {
		memset(out, 0, sizeof(*out));
		unnamed(handle, out);
		return;
	}
	gg_kernels_name(slot, out);
}
