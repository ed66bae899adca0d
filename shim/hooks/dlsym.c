/* dlsym interposition (docs/how-it-works.md, "What the shim does").
 *
 * glibc resolves RTLD_NEXT and RTLD_DEFAULT relative to the object that
 * called dlsym, found from dlsym's return address. A wrapper that forwards
 * with an ordinary call becomes that caller and changes the answer. So the
 * exported dlsym is a few instructions of assembly (dlsym-<arch>.S) that ask
 * gg_dlsym_route() what to do and then either return its answer or *jump*
 * to glibc's dlsym with the caller's stack untouched: every lookup but a
 * hooked cu… name resolves exactly as it would without the shim.
 *
 * A hooked name is resolved as the caller would see it without the shim;
 * when that answer is the driver's export, our wrapper is returned instead.
 * For a real handle glibc's answer does not depend on the caller; for
 * RTLD_NEXT from a caller after the shim the shim is not in the searched
 * range, so the jump is exact. RTLD_DEFAULT searches the global scope, then
 * the caller's own group (glibc searches the group of the library that was
 * dlopen()ed, which is the caller's unless the caller is one of its
 * dependencies). */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/gg.h"
#include "base/loader.h"
#include "hooks/hooks.h"
#include "start/start.h"

typedef void *(*dlsym_fn)(void *, const char *);

/* Returned in two registers: @tail non-NULL means "jump to @tail with the
 * original arguments", else @value is dlsym's result. */
struct gg_dlsym_plan {
	void *value;
	void *tail;
};

struct gg_dlsym_plan gg_dlsym_route(void *handle, const char *name, void *caller);

/* This file is built without sanitizers: the sanitizer runtimes call dlsym
 * while they start, before instrumented code can run. Every lookup but a
 * hooked name stays in this file (and driver/libc.c). */

static struct link_map *map_of(const void *addr)
{
	Dl_info info;
	struct link_map *map = NULL;

	if (!dladdr1(addr, &info, (void **)&map, RTLD_DL_LINKMAP))
		return NULL;
	return map;
}

/* True when @caller's object comes before the shim in the global search
 * list (the executable, an earlier LD_PRELOAD): only then does the shim lie
 * between the caller and the definition RTLD_NEXT would find. */
static bool precedes_shim(const void *caller)
{
	struct link_map *self = map_of((const void *)&precedes_shim);
	struct link_map *map = map_of(caller);

	if (!map) /* code outside any object: glibc treats it as the executable's */
		return true;
	for (struct link_map *m = self ? self->l_prev : NULL; m; m = m->l_prev)
		if (m == map)
			return true;
	return false;
}

/* What RTLD_DEFAULT adds to the global scope for a caller dlopen()ed
 * RTLD_LOCAL: its own group, searched through a handle of the caller. */
static void *lookup_in_callers_group(dlsym_fn real, const void *caller, const char *name)
{
	struct link_map *map = map_of(caller);
	void *h, *fn = NULL;

	if (!map || !map->l_name || !map->l_name[0])
		return NULL; /* the executable: its scope is the global one */
	/* A glibc handle is its link_map: for a caller that was dlopen()ed the
	 * same lookup, where dlopen may not be asked (base/loader.h). */
	if (!gg_loader_may_open())
		return real(map, name);
	h = dlopen(map->l_name, RTLD_LAZY | RTLD_NOLOAD);
	if (h) {
		fn = real(h, name);
		dlclose(h);
	}
	return fn;
}

/* @name as @caller would get it without the shim. The shim's exports are
 * invisible to dlsym; what depends on the caller is RTLD_DEFAULT's second
 * search, in the group of a caller loaded RTLD_LOCAL, and RTLD_NEXT, whose
 * range starts after the shim here: only the executable and earlier
 * LD_PRELOADs come before it, and they define no driver function. */
static void *resolve_without_shim(dlsym_fn real, void *handle, const char *name, void *caller)
{
	void *fn = real(handle, name);

	if (!fn && handle == RTLD_DEFAULT)
		fn = lookup_in_callers_group(real, caller, name);
	return fn;
}

/* Leave pending the error glibc would have left for a NULL answer, as a
 * failed lookup made last, so nothing clears it. glibc's message names the
 * object searched: the handle's, or for RTLD_DEFAULT and RTLD_NEXT the
 * caller's (the program's argv[0] for the program). A lookup in that object's
 * own scope names it the same way (a glibc handle is its link_map), and fails
 * as the caller's did: the shim's exports are invisible to dlsym
 * (libgpuguard.map) and nothing found the name for the caller. */
static void leave_error(dlsym_fn real, void *handle, const char *name, const void *caller)
{
	void *named = handle == RTLD_DEFAULT || handle == RTLD_NEXT ? (void *)map_of(caller) : handle;

	if (named && !real(named, name))
		return;
	if (real(handle, name)) /* found after all (the driver was loaded meanwhile) */
		(void)dlerror();
}

static bool is_hookable_name(const char *name)
{
	return name && name[0] == 'c' && name[1] == 'u' && name[2] >= 'A' && name[2] <= 'Z';
}

struct gg_dlsym_plan gg_dlsym_route(void *handle, const char *name, void *caller)
{
	dlsym_fn real = (dlsym_fn)gg_real_dlsym();
	struct gg_dlsym_plan pass = { NULL, (void *)real };
	int id;

	if (GG_UNLIKELY(!real))
		return (struct gg_dlsym_plan){ NULL, NULL };
	if (!is_hookable_name(name) || (id = gg_real_id(name)) < 0 || gg_start_disabled())
		return pass;
	if (handle == RTLD_NEXT && !precedes_shim(caller))
		return pass; /* the shim is not in the searched range: exact as it is */
	/* A driver that loads another driver object looks up its real functions:
	 * our wrapper would call back into it. */
	if (gg_real_in_driver(caller))
		return pass;

	void *fn = resolve_without_shim(real, handle, name, caller);

	if (!fn) {
		/* The intermediate lookups left another error, or none (a lookup that
		 * found our export succeeded): ctypes dereferences this message. */
		leave_error(real, handle, name, caller);
		return (struct gg_dlsym_plan){ NULL, NULL };
	}
	(void)dlerror(); /* a failed intermediate lookup must not leave an error behind */
	if (gg_real_in_driver(fn)) {
		gg_real_note((enum gg_hook_id)id, fn);
		if (!gg_start_hook_idle(id)) /* else the driver's own costs nothing */
			fn = gg_hooks_wrapper((enum gg_hook_id)id);
	}
	return (struct gg_dlsym_plan){ fn, NULL };
}

#if !defined(__x86_64__)
/* No assembly entry for this architecture: forwarding makes the shim the
 * caller, so RTLD_NEXT and RTLD_DEFAULT lookups may differ (docs/limits.md, "Limits"). */
GG_EXPORT void *dlsym(void *handle, const char *name)
{
	struct gg_dlsym_plan plan = gg_dlsym_route(handle, name, __builtin_return_address(0));

	return plan.tail ? ((dlsym_fn)plan.tail)(handle, name) : plan.value;
}
#endif
