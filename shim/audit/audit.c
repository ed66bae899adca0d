/* Kernel-lookup audit and seal gate (docs/how-it-works.md, "The kernel-lookup audit and the
 * gate").
 *
 * Every looked-up (module, function) pair is kept, keyed by the module's
 * name; a failed lookup is also kept against its call site, which costs one
 * unwind (a successful lookup never unwinds). At a seal the unresolved pairs
 * are printed and a required one aborts the process, unless allowed; after a
 * seal, a failed lookup that is not expected absent is a late miss.
 *
 * Lock order: the boundary lock, then audit_state.lock. Nothing is written to
 * the log while audit_state.lock is held, except by report callbacks of
 * gg_audit_foreach_unresolved(), which only format and write. */
#include "audit/audit.h"

#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/image.h"
#include "callsite/callsite.h"
#include "options/config.h"
#include "options/listfile.h"
#include "base/gg.h"
#include "driver/device.h"
#include "handles/kernels.h"
#include "report/report.h"
#include "base/fatal.h"

struct site {
	struct site *next;
	struct gg_callsite cs; /* what tells sites apart */
	uintptr_t address;
	char *object;
	uintptr_t offset;
	char *symbol;
	uintptr_t symbol_offset;
	uint64_t count;
	const char *result; /* a static string from the hooks' table */
};

struct pair {
	uint64_t hash;
	char *module;
	char *function;
	bool expected_absent;
	bool cannot_run;        /* found, then failed where it is used (lazy loading): unresolved */
	_Atomic uint64_t found; /* also added to without the lock (lookup_memo) */
	uint64_t failed;
	struct site *sites; /* newest first; printed oldest first */
};

/* A load the process tried (JSON "modules"). */
struct module_rec {
	char *name;
	bool library, loaded;
	const char *result;          /* when it failed: a static string from the hooks' table */
	uint32_t site;               /* interned call site (callsite.c) */
	struct gg_image_info *image; /* what its image carries; NULL: not read */
	unsigned cc;                 /* the device's compute capability at the load; 0: unknown */
	int8_t runs_here;            /* 1, 0, or -1: unknown */
};

#define MODULES_MAX 4096

struct named {
	uintptr_t key; /* handle | kind; 0 = empty slot */
	char *name;    /* NULL in a deleted slot */
};

static struct {
	pthread_mutex_t lock;
	/* All below guarded by @lock. */
	struct pair **pairs; /* open addressing, never shrinks; pairs are never freed */
	size_t pairs_cap, npairs;
	struct named *names; /* open addressing with deleted slots (name == NULL) */
	size_t names_cap, names_used;
	_Atomic uint64_t calls; /* also added to without the lock (lookup_memo) */
	uint64_t failed_calls;
	uint64_t unresolved; /* the last gate's count plus every late miss since */
	uint64_t late_misses;
	uint64_t seals;
	bool sealed;
	bool warned;                /* a late miss was logged since the last seal (allow mode) */
	struct module_rec *modules; /* every load tried, in order; the first MODULES_MAX */
	size_t nmodules, modules_cap;
	uint64_t loads_failed;

	/* Bumped (under @lock) when a handle's name changes or the pairs are
	 * freed: a thread's lookup_memo is then stale. Read lock-free. */
	atomic_uint_fast64_t epoch;

	/* Written by gg_audit_configure() during set-up; read-only after. */
	bool allow;
	char **expected;
	size_t nexpected;
} audit_state = { .lock = PTHREAD_MUTEX_INITIALIZER };

#define KEY(kind, handle) (((uintptr_t)(handle) << 1) | (uintptr_t)(kind))

static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t hash_key(uintptr_t key)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ull;

	return h ^ (h >> 29);
}

/* ---- expected-absent patterns ---- */

static void drop_expected(size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(audit_state.expected[i]);
	free(audit_state.expected);
	audit_state.expected = NULL;
	audit_state.nexpected = 0;
}

/* The patterns of the file at @path, one a line ('#' starts a comment;
 * options/listfile.h reads and splits it). Read whole or not at all: a list
 * read in part is no list, and whatever goes wrong is said. */
static void load_expected(const char *path)
{
	char why[256], *text, *line, *at;
	size_t len, n = 0, alloc = 0, lineno = 0, line_len;
	bool oom = false;

	if (gg_config_read_list(path, &text, &len, why, sizeof(why))) {
		gg_report_expected_unreadable(path, why);
		return;
	}
	at = text;
	while (!oom && (line = gg_config_list_next(&at, text + len, &lineno, &line_len))) {
		const char *never = NULL;
		char *pattern;
		int err = gg_config_expected_pattern(line, line_len, &pattern, &never);

		if (err == -EINVAL) {
			char item[160];

			snprintf(item, sizeof(item), "line %zu: %s", lineno, never);
			gg_report_bad_item("GPUGUARD_EXPECTED_ABSENT", path, line, item);
			continue;
		}
		if (!err && n == alloc) {
			size_t more = alloc ? alloc * 2 : 16;
			char **grown = realloc(audit_state.expected, more * sizeof(char *));

			if (grown) {
				audit_state.expected = grown;
				alloc = more;
			} else {
				free(pattern);
				err = -ENOMEM;
			}
		}
		if (err) {
			oom = true;
			break;
		}
		audit_state.expected[n++] = pattern;
	}
	if (oom) {
		snprintf(why, sizeof(why), "out of memory after %zu patterns", n);
		gg_report_expected_unreadable(path, why);
		drop_expected(n);
		n = 0;
	}
	free(text);
	audit_state.nexpected = n;
}

void gg_audit_configure(const struct gg_config *cfg)
{
	audit_state.allow = cfg->allow_unresolved;
	if (cfg->expected_absent[0])
		load_expected(cfg->expected_absent);
}

/* Once per new pair, so the key may be allocated: mangled names run long. */
static bool is_expected_absent(const char *module, const char *function)
{
	size_t len = strlen(module) + strlen(function) + 3;
	char *key;
	bool match = false;

	if (!audit_state.nexpected || !(key = malloc(len)))
		return false;
	snprintf(key, len, "%s::%s", module, function);
	for (size_t i = 0; i < audit_state.nexpected && !match; i++)
		match = audit_state.expected[i] && fnmatch(audit_state.expected[i], key, 0) == 0;
	free(key);
	return match;
}

/* ---- handle names (lock held) ---- */

static int names_grow(void)
{
	size_t cap = audit_state.names_cap ? audit_state.names_cap * 2 : 64;
	struct named *old = audit_state.names, *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < audit_state.names_cap; i++) {
		if (!old[i].name)
			continue; /* drops deleted slots too */
		size_t j = hash_key(old[i].key) & (cap - 1);

		while (t[j].key)
			j = (j + 1) & (cap - 1);
		t[j] = old[i];
	}
	free(old);
	audit_state.names = t;
	audit_state.names_cap = cap;
	audit_state.names_used = 0;
	for (size_t i = 0; i < cap; i++)
		audit_state.names_used += t[i].key != 0;
	return 0;
}

static struct named *names_find(uintptr_t key)
{
	if (!audit_state.names_cap)
		return NULL;
	for (size_t j = hash_key(key) & (audit_state.names_cap - 1);;
	     j = (j + 1) & (audit_state.names_cap - 1)) {
		struct named *e = &audit_state.names[j];

		if (!e->key)
			return NULL;
		if (e->key == key && e->name)
			return e;
	}
}

static void names_set(uintptr_t key, const char *name)
{
	struct named *e = names_find(key);
	char *copy = strdup(name);

	if (!copy)
		return;
	atomic_fetch_add(&audit_state.epoch, 1);
	if (e) { /* a handle value reused without us seeing its unload */
		free(e->name);
		e->name = copy;
		return;
	}
	if ((audit_state.names_used + 1) * 4 > audit_state.names_cap * 3 && names_grow()) {
		free(copy);
		return;
	}
	size_t j = hash_key(key) & (audit_state.names_cap - 1);

	while (audit_state.names[j].key && audit_state.names[j].name)
		j = (j + 1) & (audit_state.names_cap - 1);
	audit_state.names_used += audit_state.names[j].key == 0;
	audit_state.names[j].key = key;
	audit_state.names[j].name = copy;
}

void gg_audit_unloaded(enum gg_audit_kind kind, const void *handle)
{
	gg_kernels_unloaded(handle); /* before the driver can hand its kernels' handles out again */
	pthread_mutex_lock(&audit_state.lock);
	struct named *e = names_find(KEY(kind, handle));

	if (e) {
		free(e->name);
		e->name = NULL; /* deleted: the slot keeps its key for probing */
	}
	atomic_fetch_add(&audit_state.epoch, 1);
	pthread_mutex_unlock(&audit_state.lock);
}

/* ---- pairs (lock held) ---- */

static int pairs_grow(void)
{
	size_t cap = audit_state.pairs_cap ? audit_state.pairs_cap * 2 : 256;
	struct pair **t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < audit_state.pairs_cap; i++) {
		struct pair *p = audit_state.pairs[i];

		if (!p)
			continue;
		size_t j = p->hash & (cap - 1);

		while (t[j])
			j = (j + 1) & (cap - 1);
		t[j] = p;
	}
	free(audit_state.pairs);
	audit_state.pairs = t;
	audit_state.pairs_cap = cap;
	return 0;
}

static uint64_t pair_hash(const char *module, const char *function)
{
	return hash_str(hash_str(0xcbf29ce484222325ull, module) ^ 0x3a3a, function);
}

static struct pair *pair_find_hashed(const char *module, const char *function, uint64_t h)
{
	if (!audit_state.pairs_cap)
		return NULL;
	for (size_t j = h & (audit_state.pairs_cap - 1); audit_state.pairs[j];
	     j = (j + 1) & (audit_state.pairs_cap - 1)) {
		struct pair *p = audit_state.pairs[j];

		if (p->hash == h && !strcmp(p->function, function) && !strcmp(p->module, module))
			return p;
	}
	return NULL;
}

static struct pair *pair_find(const char *module, const char *function)
{
	return pair_find_hashed(module, function, pair_hash(module, function));
}

static struct pair *pair_get(const char *module, const char *function)
{
	uint64_t h = pair_hash(module, function);
	struct pair *found = pair_find_hashed(module, function, h);
	size_t j;

	if (found)
		return found;
	if ((audit_state.npairs + 1) * 4 > audit_state.pairs_cap * 3 && pairs_grow())
		return NULL;
	struct pair *p = calloc(1, sizeof(*p));

	if (!p || !(p->module = strdup(module)) || !(p->function = strdup(function))) {
		if (p)
			free(p->module);
		free(p);
		return NULL;
	}
	p->hash = h;
	p->expected_absent = is_expected_absent(module, function);
	for (j = h & (audit_state.pairs_cap - 1); audit_state.pairs[j];
	     j = (j + 1) & (audit_state.pairs_cap - 1))
		;
	audit_state.pairs[j] = p;
	audit_state.npairs++;
	return p;
}

static void site_record(struct pair *p, const struct gg_callsite *cs, const struct gg_site *where,
			const char *result)
{
	struct site *s;

	/* Inside a stripped executable's runtime, one frame is the site of many
	 * callers: the outer frames tell them apart. */
	for (s = p->sites; s; s = s->next)
		if (gg_callsite_same(&s->cs, cs))
			break;
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return;
		s->cs = *cs;
		s->address = where->address;
		s->object = strdup(where->object);
		s->offset = where->offset;
		s->symbol = where->symbol ? strdup(where->symbol) : NULL;
		s->symbol_offset = where->symbol_offset;
		s->next = p->sites;
		p->sites = s;
	}
	s->count++;
	s->result = result;
}

/* ---- failures: the table, and late misses ---- */

/* Lock held: a failure of @p (NULL when there was no memory for it) at
 * @cs. True when it is a late miss: counted here, said by late() unlocked. */
static bool failed(struct pair *p, const struct gg_callsite *cs, const struct gg_site *where,
		   const char *rc_name, uint64_t *seal, bool *first_warning)
{
	if (p) {
		p->failed++;
		site_record(p, cs, where, rc_name);
	}
	if (!audit_state.sealed || (p && p->expected_absent))
		return false;
	/* Counted before anything else happens, abort included. */
	audit_state.unresolved++;
	audit_state.late_misses++;
	*first_warning = !audit_state.warned;
	audit_state.warned = true;
	*seal = audit_state.seals;
	return true;
}

/* No lock held: a late miss of module::function, said, and fatal unless allowed. */
static void late(struct gg_callsite *cs, const struct gg_site *where, uint64_t seal, bool first_warning,
		 const char *module, const char *function, const char *rc_name)
{
	struct gg_report_site site;

	if (!audit_state.allow || first_warning)
		gg_callsite_report(cs, where, &site);
	if (!audit_state.allow) {
		gg_report_late_miss(true, seal, module, function, rc_name, &site);
		gg_fatal();
	}
	if (first_warning)
		gg_report_late_miss(false, seal, module, function, rc_name, &site);
}

/* ---- loads (docs/how-it-works.md, "A failed load") ---- */

/* @img (NULL: unread) against the device: 1 runs here, 0 cannot, -1 unknown;
 * *cc gets the device's compute capability. */
static int preflight(const struct gg_image_info *img, unsigned *cc)
{
	*cc = 0;
	if (!img || !img->narchs || gg_device_compute_capability(cc))
		return -1;
	return gg_image_runs_on(img, *cc) ? 1 : 0;
}

static void load(enum gg_audit_kind kind, const char *name, int rc, const char *rc_name,
		 const void *handle, const struct gg_image_info *img)
{
	struct gg_callsite cs;
	struct gg_site where;
	struct pair *p;
	bool is_late = false, first_warning = false;
	uint64_t seal = 0;
	uint32_t site;
	unsigned cc;
	int runs = preflight(img, &cc);

	/* The kernels that will fail on this GPU, known at load, whether or not
	 * the driver refused it yet (lazy loading). */
	if (runs == 0) {
		char archs[160];

		gg_image_archs_text(img, archs, sizeof(archs));
		gg_report_cannot_run(name, archs, cc);
	}
	/* Where it was loaded matters when it failed or cannot run: only then is
	 * it unwound (an unwind, and libunwind's first load, at every module
	 * load would be most of a program's start-up cost). */
	site = 0;
	if (rc != 0 || runs == 0) {
		gg_callsite_find(&cs);
		gg_callsite_describe(cs.pc, &where);
		site = gg_callsite_intern(&cs);
	}
	pthread_mutex_lock(&audit_state.lock);
	if (audit_state.nmodules < MODULES_MAX && audit_state.nmodules == audit_state.modules_cap) {
		size_t cap = audit_state.modules_cap ? audit_state.modules_cap * 2 : 16;
		struct module_rec *grown = realloc(audit_state.modules, cap * sizeof(*grown));

		if (grown) {
			memset(grown + audit_state.modules_cap, 0,
			       (cap - audit_state.modules_cap) * sizeof(*grown));
			audit_state.modules = grown;
			audit_state.modules_cap = cap;
		}
	}
	if (audit_state.nmodules < audit_state.modules_cap) {
		struct module_rec *m = &audit_state.modules[audit_state.nmodules];

		if ((m->name = strdup(name))) {
			m->library = kind == GG_AUDIT_LIBRARY;
			m->loaded = rc == 0;
			m->result = rc ? rc_name : NULL;
			m->site = site;
			m->runs_here = (int8_t)runs;
			m->cc = cc;
			if (img && (m->image = malloc(sizeof(*m->image))))
				*m->image = *img;
			audit_state.nmodules++;
		}
	}
	if (rc == 0) {
		names_set(KEY(kind, handle), name);
		/* A failed load retried with success: MODULE::* is resolved. */
		if ((p = pair_find(name, "*")))
			p->found++;
	} else {
		audit_state.loads_failed++;
		p = pair_get(name, "*");
		is_late = failed(p, &cs, &where, rc_name, &seal, &first_warning);
	}
	pthread_mutex_unlock(&audit_state.lock);
	if (is_late)
		late(&cs, &where, seal, first_warning, name, "*", rc_name);
}

void gg_audit_load_file(enum gg_audit_kind kind, const char *path, int rc, const char *rc_name,
			const void *handle)
{
	char name[GG_AUDIT_NAME_MAX];
	struct gg_image_info img;
	bool read = path && gg_image_read_file(path, &img) == 0;

	gg_audit_name_file(path, name, sizeof(name));
	load(kind, name, rc, rc_name, handle, read ? &img : NULL);
}

void gg_audit_load_image(enum gg_audit_kind kind, const void *image, int rc, const char *rc_name,
			 const void *handle)
{
	char name[GG_AUDIT_NAME_MAX];
	struct gg_image_info img;
	/* Its extent is unknown: read safely, only as far as its headers say. */
	bool read = image && gg_image_read(image, SIZE_MAX, &img) == 0;

	gg_audit_name_image(image, rc == 0, name, sizeof(name));
	load(kind, name, rc, rc_name, handle, read ? &img : NULL);
}

/* ---- lazy loading: materialised where it is used ---- */

/* A failure of @module::@function where it is used, as a failed lookup with
 * its call site: unresolved even when a lookup of it had succeeded (the
 * kernel was found, but cannot run here). */
static void named_failure(const char *module, const char *function, const char *rc_name,
			  bool cannot_run)
{
	struct gg_callsite cs;
	struct gg_site where;
	struct pair *p;
	bool is_late, first_warning = false;
	uint64_t seal = 0;

	gg_callsite_find(&cs);
	gg_callsite_describe(cs.pc, &where);
	pthread_mutex_lock(&audit_state.lock);
	audit_state.calls++;
	audit_state.failed_calls++;
	p = pair_get(module, function);
	if (p && cannot_run)
		p->cannot_run = true;
	is_late = failed(p, &cs, &where, rc_name, &seal, &first_warning);
	pthread_mutex_unlock(&audit_state.lock);
	if (is_late)
		late(&cs, &where, seal, first_warning, p ? p->module : module, function, rc_name);
}

/* A CUkernel no lookup named (cuLibraryEnumerateKernels hands them out
 * nameless): its driver name and its library's, asked while the handle is
 * the caller's and outside the audit's lock, and kept in the kernels table
 * so its launches are named too. -1 when the driver cannot say. */
static int kernel_from_driver(const void *kernel, char *module, size_t cap, const char **name)
{
	void *library = NULL;
	struct named *e;

	if (gg_device_kernel_name(kernel, true, name) || !*name)
		return -1;
	if (gg_device_kernel_library(kernel, &library) || !library) {
		snprintf(module, cap, "library@unknown");
	} else {
		pthread_mutex_lock(&audit_state.lock);
		if ((e = names_find(KEY(GG_AUDIT_LIBRARY, library))))
			snprintf(module, cap, "%s", e->name);
		else
			snprintf(module, cap, "library@%p", library);
		pthread_mutex_unlock(&audit_state.lock);
	}
	gg_kernels_found(kernel, true, library, module, *name, NULL);
	return 0;
}

void gg_audit_kernels_enumerated(const void *const *kernels, unsigned n)
{
	char module[GG_AUDIT_NAME_MAX];
	const char *name;

	/* Handed out nameless: each named now, while the handles are surely
	 * the library's kernels, so a launch that fails lazily is named too. */
	for (unsigned i = 0; i < n; i++) {
		struct gg_report_kernel k;

		gg_kernels_name_handle(kernels[i], &k);
		if (kernels[i] && !strcmp(k.module, "?"))
			(void)kernel_from_driver(kernels[i], module, sizeof(module), &name);
	}
}

void gg_audit_kernel_function(const void *kernel, int rc, const char *rc_name, const void *function)
{
	struct gg_report_kernel k;
	char module[GG_AUDIT_NAME_MAX];
	const char *name;

	gg_kernels_name_handle(kernel, &k);
	if (!strcmp(k.module, "?") && kernel_from_driver(kernel, module, sizeof(module), &name) == 0) {
		k.name = name;
		k.module = module;
	}
	gg_report_lookup("cuKernelGetFunction", kernel, k.name, rc_name);
	if (!strcmp(k.module, "?")) /* neither a lookup nor the driver named it */
		return;
	if (rc == 0) /* its kernel's names; no owner: retired at any unload */
		gg_kernels_found(function, false, NULL, k.module, k.name, NULL);
	else
		named_failure(k.module, k.name, rc_name, true);
}

void gg_audit_library_module(const void *library, int rc, const char *rc_name, const void *module)
{
	char name[GG_AUDIT_NAME_MAX];
	struct named *e;

	gg_report_lookup("cuLibraryGetModule", library, "*", rc_name);
	pthread_mutex_lock(&audit_state.lock);
	if ((e = names_find(KEY(GG_AUDIT_LIBRARY, library))))
		snprintf(name, sizeof(name), "%s", e->name);
	else
		snprintf(name, sizeof(name), "library@%p", library);
	/* Its functions are the library's kernels: looked up under its name. */
	if (rc == 0)
		names_set(KEY(GG_AUDIT_MODULE, module), name);
	pthread_mutex_unlock(&audit_state.lock);
	if (rc != 0)
		named_failure(name, "*", rc_name, true);
}

void gg_audit_launch_failed(const char *api, const void *handle, int rc, const char *rc_name)
{
	struct gg_report_kernel k;

	gg_kernels_name_handle(handle, &k);
	if (!strcmp(k.module, "?")) /* no lookup named it: a bad handle, not a missing kernel */
		return;
	gg_report_lookup(api, handle, k.name, rc_name);
	/* CUDA_ERROR_INVALID_HANDLE may be the stream's: a failed lookup, with
	 * its site, but no proof that the kernel cannot run here. */
	named_failure(k.module, k.name, rc_name, rc != 400);
}

/* ---- lookups ---- */

/* The thread's last resolved lookup, for the same call again (a program that
 * looks its kernel up before each launch): counted without the lock or
 * hashing names (issue 16). The driver gave @found for @name in @handle; while
 * no name changed, no pair was freed (@epoch) and the kernels table kept the
 * handle (@kernels_epoch), the call is the same pair's. */
static __thread struct {
	const void *handle, *name, *found;
	enum gg_audit_kind kind;
	uint64_t epoch, kernels_epoch;
	struct pair *pair;
} lookup_memo __attribute__((tls_model("initial-exec")));

static bool memo_hit(enum gg_audit_kind kind, const void *handle, const char *name, const void *found)
{
	if (lookup_memo.found != found || lookup_memo.handle != handle || lookup_memo.name != name ||
	    lookup_memo.kind != kind || !found ||
	    lookup_memo.epoch != atomic_load_explicit(&audit_state.epoch, memory_order_acquire) ||
	    lookup_memo.kernels_epoch != gg_kernels_epoch())
		return false;
	atomic_fetch_add_explicit(&audit_state.calls, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&lookup_memo.pair->found, 1, memory_order_relaxed);
	return true;
}

/* Lock held: remember @p, the pair of a resolved lookup, as of @epoch. */
static void memo_set(enum gg_audit_kind kind, const void *handle, const char *name, const void *found,
		     struct pair *p, uint64_t epoch, uint64_t kernels_epoch)
{
	lookup_memo.handle = handle;
	lookup_memo.name = name;
	lookup_memo.found = found;
	lookup_memo.kind = kind;
	lookup_memo.epoch = epoch;
	lookup_memo.kernels_epoch = kernels_epoch;
	lookup_memo.pair = p;
}

void gg_audit_lookup(const char *api, enum gg_audit_kind kind, const void *handle, const char *name,
		     int rc, const char *rc_name, const void *found)
{
	char module[GG_AUDIT_NAME_MAX];
	const char *function = name ? name : "(null)";
	struct gg_site where;
	struct gg_callsite cs;
	struct pair *p;
	bool is_late = false, first_warning = false;
	uint64_t seal = 0;

	gg_report_lookup(api, handle, name, rc_name);
	if (rc == 0 && memo_hit(kind, handle, name, found))
		return;
	if (rc != 0) { /* only failures are kept against a call site: one unwind */
		gg_callsite_find(&cs);
		gg_callsite_describe(cs.pc, &where);
	}

	/* Read before the lock: a change after it only makes the memo stale. */
	uint64_t kernels_epoch = gg_kernels_epoch();

	pthread_mutex_lock(&audit_state.lock);
	struct named *e = names_find(KEY(kind, handle));
	const char *mod_name = module;

	/* A known handle's name is used in place: no formatting on the hot path. */
	if (e)
		mod_name = e->name;
	else
		snprintf(module, sizeof(module), "%s@%p",
			 kind == GG_AUDIT_MODULE ? "module" : "library", handle);
	audit_state.calls++;
	p = pair_get(mod_name, function);
	if (rc == 0) {
		if (p) {
			p->found++;
			/* The kernels table keeps copies of the names; the pair is
			 * their identity while it lives. */
			gg_kernels_found(found, kind == GG_AUDIT_LIBRARY, handle, p->module,
					 p->function, p);
			memo_set(kind, handle, name, found, p,
				 atomic_load_explicit(&audit_state.epoch, memory_order_relaxed),
				 kernels_epoch);
		}
	} else {
		audit_state.failed_calls++;
		is_late = failed(p, &cs, &where, rc_name, &seal, &first_warning);
	}
	pthread_mutex_unlock(&audit_state.lock);

	/* The pair's copy of the name outlives the lock: pairs are never freed. */
	if (is_late)
		late(&cs, &where, seal, first_warning, p ? p->module : module, function, rc_name);
}

/* ---- the gate ---- */

static void count_unresolved(uint64_t *required, uint64_t *expected)
{
	*required = *expected = 0;
	for (size_t i = 0; i < audit_state.pairs_cap; i++) {
		struct pair *p = audit_state.pairs[i];

		if (p && (!p->found || p->cannot_run))
			++*(p->expected_absent ? expected : required);
	}
}

static void seal_now(const char *why, bool table)
{
	struct gg_report_audit stats;
	uint64_t required, expected, seal;

	pthread_mutex_lock(&audit_state.lock);
	count_unresolved(&required, &expected);
	audit_state.unresolved = required;
	audit_state.sealed = true;
	audit_state.warned = false;
	seal = ++audit_state.seals;
	pthread_mutex_unlock(&audit_state.lock);

	gg_audit_stats(&stats);
	if (table || required)
		gg_report_seal_table(seal, why, &stats, gg_audit_foreach_unresolved,
				     gg_audit_foreach_module);
	if (!required)
		return;
	gg_report_gate(seal, required, audit_state.allow);
	if (!audit_state.allow)
		gg_fatal();
}

void gg_audit_seal(const char *why)
{
	seal_now(why, true);
}

/* A labelled boundary's seal (one per pytest test): its table only when
 * the gate fails, so a suite's log is not a table per test. */
void gg_audit_seal_quiet(const char *why)
{
	seal_now(why, false);
}

void gg_audit_stats(struct gg_report_audit *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&audit_state.lock);
	out->pairs = audit_state.npairs;
	count_unresolved(&out->unresolved_required, &out->unresolved_expected);
	out->resolved = out->pairs - out->unresolved_required - out->unresolved_expected;
	out->late_misses = audit_state.late_misses;
	/* Before any seal the counter has no gate to count from: what is
	 * unresolved now is what a gate would count (the exit's verdict, and the
	 * metric that alerts on it). */
	out->unresolved = audit_state.seals ? audit_state.unresolved : out->unresolved_required;
	out->calls = audit_state.calls;
	out->failed_calls = audit_state.failed_calls;
	out->loads_failed = audit_state.loads_failed;
	out->seals = audit_state.seals;
	out->sealed = audit_state.sealed;
	pthread_mutex_unlock(&audit_state.lock);
}

uint64_t gg_audit_errors(const struct gg_report_audit *a)
{
	/* After a seal every required pair then unresolved was counted by the
	 * gate, and every later failure as a late miss: nothing is left over.
	 * Before one, gg_audit_stats counts the pairs unresolved now. */
	return a->unresolved;
}

uint64_t gg_audit_unresolved_now(void)
{
	uint64_t required, expected;

	pthread_mutex_lock(&audit_state.lock);
	count_unresolved(&required, &expected);
	pthread_mutex_unlock(&audit_state.lock);
	return required;
}

static void visit_pair(const struct pair *p, void (*fn)(void *, const struct gg_report_row *),
		       void *ctx)
{
	struct gg_report_row row = {
		.module = p->module,
		.function = p->function,
		.expected_absent = p->expected_absent,
		.pair_failed = p->failed,
		.site.at.object = "",
	};
	const struct site *order[64];
	unsigned n = 0;

	/* Sites are kept newest first: take the newest 64, print them oldest first. */
	for (const struct site *s = p->sites; s && n < GG_ARRAY_SIZE(order); s = s->next)
		order[n++] = s;
	if (!n) {
		fn(ctx, &row);
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		const struct site *s = order[n - 1 - i];

		struct gg_site at = {
			.address = s->address,
			.object = s->object ? s->object : "",
			.offset = s->offset,
			.symbol = s->symbol,
			.symbol_offset = s->symbol_offset,
		};

		row.site_index = i;
		row.count = s->count;
		row.result = s->result;
		gg_callsite_report(&s->cs, &at, &row.site);
		fn(ctx, &row);
	}
}

void gg_audit_foreach_unresolved(void (*fn)(void *ctx, const struct gg_report_row *row), void *ctx)
{
	pthread_mutex_lock(&audit_state.lock);
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < audit_state.pairs_cap; i++) {
			const struct pair *p = audit_state.pairs[i];

			if (p && (!p->found || p->cannot_run) && p->expected_absent == (pass == 1))
				visit_pair(p, fn, ctx);
		}
	}
	pthread_mutex_unlock(&audit_state.lock);
}

void gg_audit_atfork_prepare(void)
{
	pthread_mutex_lock(&audit_state.lock);
}

void gg_audit_atfork_parent(void)
{
	pthread_mutex_unlock(&audit_state.lock);
}

static void free_pair(struct pair *p)
{
	for (struct site *s = p->sites, *next; s; s = next) {
		next = s->next;
		free(s->object);
		free(s->symbol);
		free(s);
	}
	free(p->module);
	free(p->function);
	free(p);
}

/* A forked child is a process of its own (docs/how-it-works.md, "Boundaries, signals, exit";
 * test-fork.c): none of its parent's lookups, counts or seals. The modules'
 * names stay: they name what the child's own lookups find. */
void gg_audit_atfork_child(void)
{
	gg_audit_launches_atfork_child();
	pthread_mutex_init(&audit_state.lock, NULL);
	for (size_t i = 0; i < audit_state.pairs_cap; i++) {
		if (audit_state.pairs[i])
			free_pair(audit_state.pairs[i]);
		audit_state.pairs[i] = NULL;
	}
	audit_state.npairs = 0;
	atomic_fetch_add(&audit_state.epoch, 1); /* every thread's lookup_memo: freed pairs */
	audit_state.calls = 0;
	audit_state.failed_calls = 0;
	audit_state.unresolved = audit_state.late_misses = audit_state.seals = 0;
	audit_state.sealed = audit_state.warned = false;
	/* Its parent's loads are not its own (its modules are, by handle: names stay). */
	for (size_t i = 0; i < audit_state.nmodules; i++) {
		free(audit_state.modules[i].name);
		free(audit_state.modules[i].image);
		audit_state.modules[i] = (struct module_rec){ 0 };
	}
	audit_state.nmodules = 0;
	audit_state.loads_failed = 0;
}

void gg_audit_foreach_module(void (*fn)(void *ctx, const struct gg_report_module *m), void *ctx)
{
	/* A record is copied under the lock (the array grows), and @fn runs with
	 * none held (it may call dladdr); what it points to is never freed. */
	for (size_t i = 0;; i++) {
		struct module_rec copy;
		const struct module_rec *r = &copy;

		pthread_mutex_lock(&audit_state.lock);
		if (i >= audit_state.nmodules) {
			pthread_mutex_unlock(&audit_state.lock);
			return;
		}
		copy = audit_state.modules[i];
		pthread_mutex_unlock(&audit_state.lock);
		struct gg_report_module m = {
			.name = r->name,
			.library = r->library,
			.loaded = r->loaded,
			.result = r->result,
			.runs_here = r->runs_here,
			.cc = r->cc,
			.has_site = r->site != 0,
		};

		for (unsigned k = 0; r->image && k < r->image->narchs && k < GG_REPORT_ARCHS; k++) {
			const struct gg_image_arch *a = &r->image->archs[k];

			snprintf(m.archs[m.narchs++], sizeof(m.archs[0]), "%s_%u%s",
				 a->ptx ? "compute" : "sm", a->sm,
				 a->specific ? "a"
				 : a->family ? "f"
					     : "");
		}

		if (m.has_site)
			gg_callsite_report_id(r->site, &m.site);
		fn(ctx, &m);
	}
}
