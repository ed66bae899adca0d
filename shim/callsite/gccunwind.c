/* GCC's unwinder (libgcc_s) as GCC 12 and later build it against glibc 2.35
 * and later finds each frame's unwind table with _dl_find_object, which reads
 * the loader's lock-free copy of its list: it never takes the lock a forked
 * child may wait for forever. An older libgcc_s calls dl_iterate_phdr, which
 * takes it. The one loaded is told by the names its dynamic string table
 * holds: the function it imports for the search. It is used only if the
 * process has it loaded already (mapping it would add to the list), and
 * called directly, not through glibc's backtrace(), which may load it. */
#include "callsite/gccunwind.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <unwind.h>

#include "base/loader.h"
#include "driver/real.h"

typedef _Unwind_Reason_Code (*backtrace_fn)(_Unwind_Trace_Fn, void *);
typedef _Unwind_Ptr (*get_ip_fn)(struct _Unwind_Context *);

static struct {
	pthread_once_t once;    /* finds the functions (glibc's pthread_once is fork-safe) */
	backtrace_fn backtrace; /* written once under @once; NULL: none fit */
	get_ip_fn get_ip;
} gccunwind_state = { .once = PTHREAD_ONCE_INIT };

/* Whether the dynamic string table of @map holds @name as a whole name. */
static bool names(const struct link_map *map, const char *name)
{
	const char *strtab = NULL;
	size_t size = 0, n = strlen(name);

	for (const ElfW(Dyn) *d = map->l_ld; d && d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_STRTAB)
			strtab = (const char *)d->d_un.d_ptr;
		else if (d->d_tag == DT_STRSZ)
			size = d->d_un.d_val;
	}
	if (!strtab || !size)
		return false;
	/* glibc relocates the dynamic section's addresses in place on most
	 * machines, not on all. */
	if ((uintptr_t)strtab < map->l_addr)
		strtab += map->l_addr;
	for (const char *p = strtab, *end = strtab + size; p < end;
	     p += strnlen(p, (size_t)(end - p)) + 1)
		if ((size_t)(end - p) > n && !memcmp(p, name, n + 1))
			return true;
	return false;
}

static void find(void)
{
	void *(*sym)(void *, const char *) = (void *(*)(void *, const char *))gg_real_dlsym();
	/* Only if loaded: the main lock, which every child has free. Where not
	 * even that may be asked, it never will be in this process. */
	void *h = sym && gg_loader_may_open() ? dlopen("libgcc_s.so.1", RTLD_LAZY | RTLD_NOLOAD) : NULL;
	struct link_map *map = NULL;

	if (!h)
		return;
	if (!dlinfo(h, RTLD_DI_LINKMAP, &map) && map && names(map, "_dl_find_object") &&
	    !names(map, "dl_iterate_phdr")) {
		gccunwind_state.get_ip = (get_ip_fn)sym(h, "_Unwind_GetIP");
		if (gccunwind_state.get_ip)
			gccunwind_state.backtrace = (backtrace_fn)sym(h, "_Unwind_Backtrace");
	}
	/* The handle is kept: the pointers into the object must never dangle,
	 * and a dlclose that unloaded it would take the list's lock. */
}

struct trace {
	uintptr_t *pcs;
	int n, max, skip;
};

static _Unwind_Reason_Code step(struct _Unwind_Context *ctx, void *arg)
{
	struct trace *t = arg;
	uintptr_t ip = (uintptr_t)gccunwind_state.get_ip(ctx);

	if (!ip || t->n >= t->max)
		return _URC_END_OF_STACK;
	if (t->skip > 0)
		t->skip--;
	else
		t->pcs[t->n++] = ip;
	return _URC_NO_REASON;
}

__attribute__((noinline)) int gg_gccunwind_frames(uintptr_t *pcs, int max)
{
	/* The first two frames are this function's and its caller's. */
	struct trace t = { .pcs = pcs, .max = max, .skip = 2 };

	pthread_once(&gccunwind_state.once, find);
	if (!gccunwind_state.backtrace)
		return -ENOSYS;
	gccunwind_state.backtrace(step, &t);
	return t.n;
}
