/* Finding the real driver functions, lazily and without recursion.
 *
 * The driver may be linked, dlopen()ed RTLD_LOCAL long after start-up, or
 * absent. A hook asks gg_real_get(); the first answer found (the next object
 * after the shim, libcuda.so.1 if already loaded, or a pointer the dlsym or
 * cuGetProcAddress routes saw the driver hand out) is cached for good. */
#include <dlfcn.h>
#include <fnmatch.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "base/gg.h"
#include "base/loader.h"
#include "driver/real.h"
#include "report/report.h"

typedef void *(*dlsym_fn)(void *, const char *);

/* The real functions, outside real_state because every hook reads its entry
 * inline (hooks.h). Lock-free: each set once from NULL, never changed. */
_Atomic(void *) gg_real_fns[GG_HOOK_COUNT];

static const char *const hook_names[GG_HOOK_COUNT] = {
#define GG_HOOK(name, pfn, params, args) [GG_ID_##name] = #name,
#include "driver/hooks.def"
#undef GG_HOOK
};

__thread int gg_real_inside __attribute__((tls_model("initial-exec")));
atomic_ulong gg_real_calls[GG_HOOK_COUNT];
bool gg_real_counting;

/* The shim's own loadable segments, for gg_real_in_shim(). */
#define SELF_SEGMENTS 8

static struct {
	pthread_once_t once; /* finds @self */
	struct {
		uintptr_t lo[SELF_SEGMENTS], len[SELF_SEGMENTS];
		int n;
	} self;                    /* written once under @once */
	atomic_bool pinned;        /* the driver object is pinned (RTLD_NODELETE) */
	pthread_mutex_t proc_lock; /* serialises building @proc_addr, once */
	_Atomic(void *) proc_base; /* driver's load base; set (release) after @proc_addr is built */
	void *proc_addr[GG_HOOK_COUNT]; /* hooked exports of that driver; read-only once published */
	atomic_uint_fast64_t unmatched; /* cuGetProcAddress answers no export (lock-free) */
} real_state = { .once = PTHREAD_ONCE_INIT, .proc_lock = PTHREAD_MUTEX_INITIALIZER };

/* Whether @addr lies in a loadable segment of @info's object: what dladdr
 * means by an address in an object. */
static bool object_holds(const struct dl_phdr_info *info, uintptr_t addr)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && addr - (info->dlpi_addr + ph->p_vaddr) < ph->p_memsz)
			return true;
	}
	return false;
}

struct object_query {
	uintptr_t addr;
	const char *name; /* the object's file name, as dladdr's dli_fname */
};

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct object_query *q = arg;

	(void)size;
	if (!object_holds(info, q->addr))
		return 0;
	q->name = info->dlpi_name;
	return 1;
}

/* The linker's symbol for the shim's own ELF header, in its first segment. */
extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));

/* From the shim's own program headers, read in memory: no question to the
 * loader, whose list a forked child may never get (base/loader.h). */
static void resolve_once(void)
{
	const char *self = (const char *)&__ehdr_start;
	const ElfW(Ehdr) * eh;
	const ElfW(Phdr) * ph;
	uintptr_t bias = 0;
	bool found = false;

	/* The program headers lie past the header, outside the object the
	 * compiler takes __ehdr_start for (UBSan's object-size check). */
	__asm__("" : "+r"(self));
	eh = (const ElfW(Ehdr) *)self;
	ph = (const ElfW(Phdr) *)(self + eh->e_phoff);

	/* The header is the first byte of the segment that maps file offset 0. */
	for (int i = 0; i < eh->e_phnum && !found; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0) {
			bias = (uintptr_t)eh - ph[i].p_vaddr;
			found = true;
		}
	for (int i = 0; found && i < eh->e_phnum && real_state.self.n < SELF_SEGMENTS; i++)
		if (ph[i].p_type == PT_LOAD) {
			real_state.self.lo[real_state.self.n] = bias + ph[i].p_vaddr;
			real_state.self.len[real_state.self.n++] = ph[i].p_memsz;
		}
}

/* The file name of the object holding @addr (NULL if none): dl_iterate_phdr
 * costs about 150 instructions an object loaded, where dladdr also searches
 * that object's symbol table for the nearest symbol (about 10 k in the fake
 * driver, more in NVIDIA's, which exports thousands). dladdr where the
 * loader's list may never be walkable (base/loader.h). */
const char *gg_real_object_name(const void *addr)
{
	struct object_query q = { .addr = (uintptr_t)addr };
	Dl_info info;

	if (gg_loader_list_may_hang())
		return dladdr(addr, &info) ? info.dli_fname : NULL;
	dl_iterate_phdr(find_object, &q);
	return q.name;
}

int gg_real_id(const char *name)
{
	for (int i = 0; i < GG_HOOK_COUNT; i++)
		if (!strcmp(hook_names[i], name))
			return i;
	return -1;
}

const char *gg_real_name(enum gg_hook_id id)
{
	return hook_names[id];
}

/* A range test against the shim's segments, noted once: every driver
 * function resolved asks it. */
bool gg_real_in_shim(const void *addr)
{
	pthread_once(&real_state.once, resolve_once);
	for (int i = 0; i < real_state.self.n; i++)
		if ((uintptr_t)addr - real_state.self.lo[i] < real_state.self.len[i])
			return true;
	return false;
}

bool gg_real_in_driver(const void *addr)
{
	Dl_info info;
	const char *base;

	if (!dladdr(addr, &info) || !info.dli_fname)
		return false;
	base = strrchr(info.dli_fname, '/');
	base = base ? base + 1 : info.dli_fname;
	return fnmatch("libcuda.so*", base, 0) == 0;
}

/* Keep the object holding @fn loaded for good: cached pointers into it must
 * never dangle, whatever the application dlclose()s. */
static void pin(void *fn)
{
	const char *name;

	/* Where dlopen may not be asked (base/loader.h), a later note tries again. */
	if (atomic_load_explicit(&real_state.pinned, memory_order_relaxed) || !gg_loader_may_open())
		return;
	if (!atomic_exchange(&real_state.pinned, true) && (name = gg_real_object_name(fn)))
		(void)dlopen(name, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
}

void gg_real_note(enum gg_hook_id id, void *fn)
{
	void *expected = NULL;

	if (!fn || gg_real_in_shim(fn))
		return;
	if (atomic_compare_exchange_strong(&gg_real_fns[id], &expected, fn) ||
	    !atomic_load_explicit(&real_state.pinned, memory_order_relaxed))
		pin(fn);
}

void *gg_real_resolve(enum gg_hook_id id)
{
	dlsym_fn real_dlsym = (dlsym_fn)gg_real_dlsym();
	void *fn = NULL, *h;

	if (!real_dlsym)
		return NULL;
	/* Linked or RTLD_GLOBAL driver: the next definition after the shim. */
	fn = real_dlsym(RTLD_NEXT, hook_names[id]);
	if (!fn && gg_loader_may_open()) {
		/* dlopen()ed RTLD_LOCAL: reachable only through its own handle. Never load it. */
		h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
		if (h) {
			fn = real_dlsym(h, hook_names[id]);
			dlclose(h);
		}
	}
	gg_real_note(id, fn);
	return atomic_load_explicit(&gg_real_fns[id], memory_order_acquire);
}

/* Fill proc_addr with the hooked exports of the driver loaded at @base (file
 * @path). Called with proc_lock held, before proc_base is published; false
 * when nothing was found, so a later call tries again. */
static bool build_proc_table(const char *path, void *base)
{
	dlsym_fn real_dlsym = (dlsym_fn)gg_real_dlsym();
	void *h = real_dlsym && gg_loader_may_open() ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) : NULL;
	bool found = false;

	if (!h)
		return false;
	for (int i = 0; i < GG_HOOK_COUNT; i++) {
		void *fn = real_dlsym(h, hook_names[i]);
		Dl_info fi;

		/* The handle's scope is the driver and its dependencies: keep only its own. */
		if (fn && dladdr(fn, &fi) && fi.dli_fbase == base) {
			real_state.proc_addr[i] = fn;
			found = true;
		}
	}
	dlclose(h);
	return found;
}

static int export_id(void *gpa, void *fn);

/* Whether @symbol (a cuGetProcAddress name: "cuMemAlloc") names a hooked
 * function: a hooked name is it, or it with a version or stream suffix. */
static bool hooked_family(const char *symbol)
{
	size_t n = strlen(symbol);

	for (int i = 0; i < GG_HOOK_COUNT; i++) {
		const char *h = hook_names[i];

		if (!strncmp(h, symbol, n) &&
		    (!h[n] || !strncmp(h + n, "_v", 2) || !strncmp(h + n, "_pt", 3)))
			return true;
	}
	return false;
}

/* Whether @fn is the address of a function some driver object exports. */
static bool driver_export(void *fn)
{
	Dl_info info;

	return dladdr(fn, &info) && info.dli_saddr == fn && info.dli_sname && gg_real_in_driver(fn);
}

/* An answer for a hooked name that is no driver export: counted, warned about once. */
static void unmatched(const char *symbol, void *fn)
{
	if (!symbol || !hooked_family(symbol) || driver_export(fn))
		return;
	if (atomic_fetch_add(&real_state.unmatched, 1) == 0)
		gg_report_warn("cuGetProcAddress(\"%.64s\") returned %p, which is no function the "
			       "driver exports: calls through it are not seen (counted in "
			       "coverage.procaddr_unmatched)",
			       symbol, fn);
}

uint64_t gg_real_unmatched(void)
{
	return atomic_load(&real_state.unmatched);
}

int gg_real_export_id(void *gpa, const char *symbol, void *fn)
{
	int id = export_id(gpa, fn);

	if (id < 0)
		unmatched(symbol, fn);
	return id;
}

static int export_id(void *gpa, void *fn)
{
	Dl_info info;
	void *base;

	if (!dladdr(gpa, &info) || !info.dli_fname)
		return -1;
	base = atomic_load_explicit(&real_state.proc_base, memory_order_acquire);
	if (!base) {
		pthread_mutex_lock(&real_state.proc_lock);
		base = atomic_load_explicit(&real_state.proc_base, memory_order_relaxed);
		if (!base && build_proc_table(info.dli_fname, info.dli_fbase)) {
			base = info.dli_fbase;
			atomic_store_explicit(&real_state.proc_base, base, memory_order_release);
		}
		pthread_mutex_unlock(&real_state.proc_lock);
		if (!base)
			return -1;
	}
	if (base != info.dli_fbase)
		return -1;
	for (int i = 0; i < GG_HOOK_COUNT; i++)
		if (real_state.proc_addr[i] == fn)
			return i;
	return -1;
}

static const struct {
	CUresult rc;
	const char *name;
} result_names[] = {
#define GG_RESULT(name, value) { name, #name },
#include "cu-result-names.h"
#undef GG_RESULT
};

const char *gg_real_result_name(CUresult rc)
{
	for (size_t i = 0; i < GG_ARRAY_SIZE(result_names); i++)
		if (result_names[i].rc == rc)
			return result_names[i].name;
	return "CUDA_ERROR_UNKNOWN_CODE";
}

void gg_real_report_calls(void)
{
	unsigned long counts[GG_HOOK_COUNT];

	for (int i = 0; i < GG_HOOK_COUNT; i++)
		counts[i] = atomic_load_explicit(&gg_real_calls[i], memory_order_relaxed);
	gg_report_calls(hook_names, counts, GG_HOOK_COUNT);
}

void gg_real_atfork_child(void)
{
	/* A fork while another thread built the table must not leave it held. */
	pthread_mutex_init(&real_state.proc_lock, NULL);
	atomic_store(&real_state.unmatched, 0);
	for (int i = 0; i < GG_HOOK_COUNT; i++)
		atomic_store_explicit(&gg_real_calls[i], 0, memory_order_relaxed);
}
