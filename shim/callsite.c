/* Unwinding and describing call sites.
 *
 * libunwind is never a DT_NEEDED of the shim: Debian's libunwind.so.8 exports
 * _Unwind_* and backtrace, which would take over C++ exception unwinding and
 * backtrace() for the whole process. It is dlopen()ed RTLD_LOCAL on the first
 * unwind, and its entry points are called through pointers. */
#include "callsite.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <execinfo.h>
#include <fnmatch.h>
#include <stdio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "gg.h"

#ifdef GG_HAVE_LIBUNWIND_H
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#define GG_STR(x) #x
#define GG_XSTR(x) GG_STR(x)
#endif

#define MAX_SKIP 32
#define SITES (1u << 16) /* interned call sites; power of two */

static struct {
	/* Written by gg_callsite_configure() during set-up; read-only after. */
	char skip_buf[1024];
	const char *skip[MAX_SKIP];
	int nskip;
	void *self_base; /* the shim's load base */
	char exe[PATH_MAX]; /* the executable's full path; dladdr gives argv[0] */

	atomic_uint_fast64_t unwinds; /* lock-free */
	_Atomic uintptr_t sites[SITES]; /* lock-free: a slot is set once, from 0 */

	pthread_once_t once; /* loads libunwind */
#ifdef GG_HAVE_LIBUNWIND_H
	/* Written once under @once. */
	int (*getcontext)(unw_context_t *);
	int (*init_local)(unw_cursor_t *, unw_context_t *);
	int (*step)(unw_cursor_t *);
	int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
	int (*fast_backtrace)(void **, int); /* unw_backtrace: cached frame info */
#endif
} callsite_state = { .once = PTHREAD_ONCE_INIT };

void gg_callsite_configure(const char *skip_list)
{
	Dl_info info;
	char *save = NULL, *tok;

	ssize_t n = readlink("/proc/self/exe", callsite_state.exe, sizeof(callsite_state.exe) - 1);

	callsite_state.exe[n > 0 ? n : 0] = '\0';
	if (dladdr((void *)&gg_callsite_configure, &info))
		callsite_state.self_base = info.dli_fbase;
	snprintf(callsite_state.skip_buf, sizeof(callsite_state.skip_buf), "%s", skip_list);
	callsite_state.nskip = 0;
	for (tok = strtok_r(callsite_state.skip_buf, ",", &save); tok && callsite_state.nskip < MAX_SKIP;
	     tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		if (*tok)
			callsite_state.skip[callsite_state.nskip++] = tok;
	}
}

static void load_unwinder(void)
{
#ifdef GG_HAVE_LIBUNWIND_H
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return;
	callsite_state.getcontext = (int (*)(unw_context_t *))dlsym(h, GG_XSTR(UNW_ARCH_OBJ(getcontext)));
	callsite_state.init_local =
		(int (*)(unw_cursor_t *, unw_context_t *))dlsym(h, GG_XSTR(unw_init_local));
	callsite_state.step = (int (*)(unw_cursor_t *))dlsym(h, GG_XSTR(unw_step));
	callsite_state.get_reg =
		(int (*)(unw_cursor_t *, unw_regnum_t, unw_word_t *))dlsym(h, GG_XSTR(unw_get_reg));
	if (!callsite_state.getcontext || !callsite_state.init_local || !callsite_state.step ||
	    !callsite_state.get_reg)
		callsite_state.getcontext = NULL; /* incomplete: use backtrace() */
	/* libunwind's own fast path: it caches how to step each frame, which makes
	 * an unwind several times cheaper than stepping a cursor. */
	callsite_state.fast_backtrace = (int (*)(void **, int))dlsym(h, "unw_backtrace");
#endif
}

/* noinline: the frame count below assumes this function has its own frame. */
__attribute__((noinline)) int gg_callsite_frames(uintptr_t *pcs, int max)
{
	int n = 0;

	atomic_fetch_add_explicit(&callsite_state.unwinds, 1, memory_order_relaxed);
	pthread_once(&callsite_state.once, load_unwinder);
#ifdef GG_HAVE_LIBUNWIND_H
	if (callsite_state.fast_backtrace) {
		void *buf[GG_CALLSITE_MAX_FRAMES + 1];
		int got = callsite_state.fast_backtrace(buf, GG_CALLSITE_MAX_FRAMES + 1);

		for (int i = 1; i < got && n < max; i++) /* buf[0] is this function */
			pcs[n++] = (uintptr_t)buf[i];
		return n;
	}
	if (callsite_state.getcontext) {
		unw_context_t uc;
		unw_cursor_t cursor;
		unw_word_t ip;

		if (callsite_state.getcontext(&uc) == 0 && callsite_state.init_local(&cursor, &uc) == 0) {
			/* The first step leaves this function's own frame. */
			while (n < max && callsite_state.step(&cursor) > 0) {
				if (callsite_state.get_reg(&cursor, UNW_REG_IP, &ip) < 0 || !ip)
					break;
				pcs[n++] = (uintptr_t)ip;
			}
			return n;
		}
	}
#endif
	void *buf[GG_CALLSITE_MAX_FRAMES + 1];
	int got = backtrace(buf, GG_CALLSITE_MAX_FRAMES + 1);

	for (int i = 1; i < got && n < max; i++) /* buf[0] is this function */
		pcs[n++] = (uintptr_t)buf[i];
	return n;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

int gg_callsite_skipped(const char *path)
{
	const char *base = base_name(path);

	for (int i = 0; i < callsite_state.nskip; i++)
		if (fnmatch(callsite_state.skip[i], base, 0) == 0)
			return 1;
	return 0;
}

int gg_callsite_in_shim(uintptr_t address)
{
	Dl_info info;

	return dladdr((void *)(address - 1), &info) && info.dli_fbase == callsite_state.self_base;
}

uintptr_t gg_callsite_pick(const uintptr_t *pcs, int n)
{
	for (int i = 0; i < n; i++) {
		Dl_info info;

		/* A return address may sit just past the end of its function. */
		if (!dladdr((void *)(pcs[i] - 1), &info) || !info.dli_fname)
			return pcs[i]; /* JIT code or the like: the application's own */
		if (info.dli_fbase == callsite_state.self_base)
			continue; /* the shim's own frames are never a call site */
		if (!gg_callsite_skipped(info.dli_fname))
			return pcs[i];
	}
	return 0;
}

uint64_t gg_callsite_unwinds(void)
{
	return atomic_load_explicit(&callsite_state.unwinds, memory_order_relaxed);
}

uintptr_t gg_callsite_find(void)
{
	uintptr_t pcs[GG_CALLSITE_MAX_FRAMES];

	return gg_callsite_pick(pcs, gg_callsite_frames(pcs, GG_ARRAY_SIZE(pcs)));
}

int gg_callsite_describe(uintptr_t address, struct gg_site *site)
{
	Dl_info info;

	memset(site, 0, sizeof(*site));
	site->address = address;
	site->object = "";
	if (!address || !dladdr((void *)(address - 1), &info) || !info.dli_fname)
		return -ENOENT;
	site->object = info.dli_fname;
	if (callsite_state.exe[0] && !strcmp(info.dli_fname, program_invocation_name))
		site->object = callsite_state.exe;
	site->offset = address - (uintptr_t)info.dli_fbase;
	if (info.dli_sname && info.dli_saddr) {
		site->symbol = info.dli_sname;
		site->symbol_offset = address - (uintptr_t)info.dli_saddr;
	}
	return 0;
}

uint32_t gg_callsite_intern(uintptr_t address)
{
	uint32_t h = (uint32_t)((address * 0x9e3779b97f4a7c15ull) >> 40);

	if (!address)
		return 0;
	/* Linear probing; slot 0 is never used, so id 0 can mean unknown. */
	for (uint32_t n = 0; n < SITES; n++) {
		uint32_t i = (h + n) & (SITES - 1);
		uintptr_t seen;

		if (!i)
			continue;
		/* Read first: a known site costs no write to a shared line. */
		seen = atomic_load_explicit(&callsite_state.sites[i], memory_order_acquire);
		if (!seen && atomic_compare_exchange_strong(&callsite_state.sites[i], &seen, address))
			return i;
		if (seen == address)
			return i;
	}
	return 0;
}

uintptr_t gg_callsite_address(uint32_t id)
{
	return id && id < SITES ? atomic_load_explicit(&callsite_state.sites[id], memory_order_relaxed)
				: 0;
}
