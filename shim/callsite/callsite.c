/* Unwinding and describing call sites.
 *
 * libunwind is never a DT_NEEDED of the shim: Debian's libunwind.so.8 exports
 * _Unwind_* and backtrace, which would take over C++ exception unwinding and
 * backtrace() for the whole process. It is dlopen()ed RTLD_LOCAL on the first
 * unwind, and its entry points are called through pointers.
 *
 * The CUDA runtime that nvcc links into the executable by default is code of
 * the executable: GPUGUARD_SKIP_OBJECTS cannot skip it. Its frames are told
 * apart by their function names in the executable's symbol table, read once,
 * on the first unwind that meets a frame of the executable, into a sorted
 * array of address ranges that every later unwind searches. */
#include "callsite/callsite.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <execinfo.h>
#include <fnmatch.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "callsite/elfsyms.h"
#include "base/gg.h"
#include "base/loader.h"
#include "callsite/gccunwind.h"
#include "callsite/runtime-syms.h"
#include "driver/real.h"

#ifdef GG_HAVE_LIBUNWIND_H
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#define GG_STR(x) #x
#define GG_XSTR(x) GG_STR(x)
#endif

#define SITES (1u << 16)           /* interned call sites; power of two */
#define CHAINS (1u << 12)          /* interned sites inside a stripped runtime; power of two */
#define CHAIN_ID 0x80000000u       /* the ids of @chains */
#define GG_CALLSITE_FIND_FRAMES 64 /* frames a call site is looked for in */

/* A site inside a stripped executable's runtime, with its outer frames. */
struct chain {
	_Atomic uint32_t state; /* CHAIN_FREE, then CHAIN_BUSY while written, then CHAIN_READY */
	uint32_t hash;
	struct gg_callsite cs;
};
enum {
	CHAIN_FREE,
	CHAIN_BUSY,
	CHAIN_READY
};

/* The executable's functions that GPUGUARD_SKIP_SYMBOLS names. */
struct runtime {
	struct gg_ranges functions; /* symbol values, less exe_bias */
	bool stripped;              /* no symbol table, but the runtime is linked in */
};

static struct {
	/* Set-up's lists, kept; what follows up to @unwinds is read from them
	 * at the first question (configured()), and read-only after. */
	const char *skip_objects_list, *skip_symbols_list;
	pthread_once_t config_once;
	struct gg_globs skip, skip_symbols;
	void *exe_base;     /* the executable's, as dladdr() gives it */
	uintptr_t exe_bias; /* its symbols' values + this = their addresses */
	char exe[PATH_MAX]; /* the executable's full path; dladdr gives argv[0] */

	atomic_uint_fast64_t unwinds;         /* lock-free */
	atomic_uint_fast64_t unwound_nothing; /* lock-free: no unwinder this process may use */
	_Atomic uintptr_t sites[SITES];       /* lock-free: a slot is set once, from 0 */
	struct chain chains[CHAINS];          /* lock-free: a slot is written once */

	pthread_once_t once; /* loads libunwind */
#ifdef GG_HAVE_LIBUNWIND_H
	/* Written once under @once. */
	int (*getcontext)(unw_context_t *);
	int (*init_local)(unw_cursor_t *, unw_context_t *);
	int (*step)(unw_cursor_t *);
	int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
	int (*fast_backtrace)(void **, int); /* unw_backtrace: cached frame info */
#endif
	pthread_once_t runtime_once; /* reads the executable's symbol table */
	struct runtime runtime;      /* written once under @runtime_once */
} callsite_state = { .config_once = PTHREAD_ONCE_INIT,
		     .once = PTHREAD_ONCE_INIT,
		     .runtime_once = PTHREAD_ONCE_INIT };

/* The executable's bias and first mapped page, from the program headers
 * the kernel (or ld.so, when run as a command) put in the auxiliary vector:
 * the loader's own rule (its PT_PHDR gives the bias), and no question to the
 * loader, whose list a forked child may never get (base/loader.h). */
static void find_exe(void)
{
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
	unsigned long n = getauxval(AT_PHNUM);
	uintptr_t lowest = UINTPTR_MAX, bias = 0, page = (uintptr_t)sysconf(_SC_PAGESIZE);

	if (!ph)
		return;
	for (unsigned long i = 0; i < n; i++)
		if (ph[i].p_type == PT_PHDR)
			bias = (uintptr_t)ph - ph[i].p_vaddr;
	for (unsigned long i = 0; i < n; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < lowest)
			lowest = ph[i].p_vaddr;
	callsite_state.exe_bias = bias;
	/* dladdr's dli_fbase: the first mapped page (ld.so's l_map_start). */
	if (lowest != UINTPTR_MAX)
		callsite_state.exe_base = (void *)((bias + lowest) & ~(page - 1));
}

/* At the first question, not at set-up: a process that chroots or gives up
 * /proc before it gets its executable named as dladdr names it (argv[0]). */
static void configure_now(void)
{
	ssize_t n = readlink("/proc/self/exe", callsite_state.exe, sizeof(callsite_state.exe) - 1);

	callsite_state.exe[n > 0 ? n : 0] = '\0';
	find_exe();
	/* Never configured (a unit test): nothing is skipped but the shim. */
	gg_globs_parse(&callsite_state.skip,
		       callsite_state.skip_objects_list ? callsite_state.skip_objects_list : "");
	gg_globs_parse(&callsite_state.skip_symbols,
		       callsite_state.skip_symbols_list ? callsite_state.skip_symbols_list : "");
}

/* Most processes never ask where a call came from (no failed lookup, no red
 * zones): set-up only keeps the lists, and the first question reads them
 * and finds the objects (9 k instructions, and six functions for the
 * dynamic linker to bind). */
static void configured(void)
{
	pthread_once(&callsite_state.config_once, configure_now);
}

void gg_callsite_configure(const char *skip_objects, const char *skip_symbols)
{
	callsite_state.skip_objects_list = skip_objects;
	callsite_state.skip_symbols_list = skip_symbols;
}

static void load_unwinder(void)
{
#ifdef GG_HAVE_LIBUNWIND_H
	/* glibc's dlsym, not the shim's exported one (a floor above this one). */
	void *(*sym)(void *, const char *) = (void *(*)(void *, const char *))gg_real_dlsym();
	void *h = sym ? dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL) : NULL;

	if (!h)
		return;
	callsite_state.getcontext = (int (*)(unw_context_t *))sym(h, GG_XSTR(UNW_ARCH_OBJ(getcontext)));
	callsite_state.init_local = (int (*)(unw_cursor_t *, unw_context_t *))sym(
		h, GG_XSTR(unw_init_local));
	callsite_state.step = (int (*)(unw_cursor_t *))sym(h, GG_XSTR(unw_step));
	callsite_state.get_reg = (int (*)(unw_cursor_t *, unw_regnum_t, unw_word_t *))sym(
		h, GG_XSTR(unw_get_reg));
	if (!callsite_state.getcontext || !callsite_state.init_local || !callsite_state.step ||
	    !callsite_state.get_reg)
		callsite_state.getcontext = NULL; /* incomplete: use backtrace() */
	/* libunwind's own fast path: it caches how to step each frame, which makes
	 * an unwind several times cheaper than stepping a cursor. */
	callsite_state.fast_backtrace = (int (*)(void **, int))sym(h, "unw_backtrace");
#endif
}

/* noinline: the frame count below assumes this function has its own frame. */
__attribute__((noinline)) int gg_callsite_frames(uintptr_t *pcs, int max)
{
	/* This function's frame, then as many as asked: a walk costs by its frames. */
	int n = 0, walk = max < GG_CALLSITE_MAX_FRAMES ? max + 1 : GG_CALLSITE_MAX_FRAMES + 1;

	atomic_fetch_add_explicit(&callsite_state.unwinds, 1, memory_order_relaxed);
	/* A child forked while other threads ran: libunwind walks the loader's
	 * list, which may be locked for good; GCC's unwinder may not need it. */
	if (gg_loader_list_may_hang()) {
		n = gg_gccunwind_frames(pcs, max);
		if (n >= 0)
			return n;
		if (atomic_fetch_add_explicit(&callsite_state.unwound_nothing, 1,
					      memory_order_relaxed) == 0)
			gg_report_trace("call sites in this process are not unwound: it was forked "
					"while other threads ran, so the dynamic loader's list may "
					"stay locked, and no unwinder that does without it is loaded");
		return 0;
	}
	pthread_once(&callsite_state.once, load_unwinder);
#ifdef GG_HAVE_LIBUNWIND_H
	if (callsite_state.fast_backtrace) {
		void *buf[GG_CALLSITE_MAX_FRAMES + 1];
		int got = callsite_state.fast_backtrace(buf, walk);

		for (int i = 1; i < got && n < max; i++) /* buf[0] is this function */
			pcs[n++] = (uintptr_t)buf[i];
		return n;
	}
	if (callsite_state.getcontext) {
		unw_context_t uc;
		unw_cursor_t cursor;
		unw_word_t ip;

		if (callsite_state.getcontext(&uc) == 0 &&
		    callsite_state.init_local(&cursor, &uc) == 0) {
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
	int got = backtrace(buf, walk);

	for (int i = 1; i < got && n < max; i++) /* buf[0] is this function */
		pcs[n++] = (uintptr_t)buf[i];
	return n;
}

/* noinline, as gg_callsite_frames. A cursor's step, slower than
 * unw_backtrace's cached walk, is what tells each frame's stack pointer:
 * on x86-64 a return address lies just below the stack pointer of the frame
 * it returns to (the call pushed it there). */
__attribute__((noinline)) int gg_callsite_frames_slots(uintptr_t *pcs, uintptr_t *slots, int max)
{
#if defined(GG_HAVE_LIBUNWIND_H) && defined(__x86_64__)
	unw_context_t uc;
	unw_cursor_t cursor;
	unw_word_t ip, sp;
	int n = 0;

	/* libunwind walks the loader's list, which a child forked while other
	 * threads ran may never get: gg_callsite_frames knows what to do there. */
	if (gg_loader_list_may_hang())
		return -ENOSYS;
	atomic_fetch_add_explicit(&callsite_state.unwinds, 1, memory_order_relaxed);
	pthread_once(&callsite_state.once, load_unwinder);
	if (!callsite_state.getcontext || callsite_state.getcontext(&uc) ||
	    callsite_state.init_local(&cursor, &uc))
		return -ENOSYS;
	/* The first step leaves this function's own frame. */
	while (n < max && callsite_state.step(&cursor) > 0) {
		if (callsite_state.get_reg(&cursor, UNW_REG_IP, &ip) < 0 || !ip ||
		    callsite_state.get_reg(&cursor, UNW_REG_SP, &sp) < 0)
			break;
		pcs[n] = (uintptr_t)ip;
		slots[n++] = (uintptr_t)sp - sizeof(uintptr_t);
	}
	return n;
#else
	(void)pcs;
	(void)slots;
	(void)max;
	return -ENOSYS;
#endif
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

int gg_callsite_skipped(const char *path)
{
	const char *base = base_name(path);

	configured();
	for (int i = 0; i < callsite_state.skip.n; i++)
		if (fnmatch(callsite_state.skip.item[i], base, 0) == 0)
			return 1;
	return 0;
}

/* ---- the runtime's functions in the executable ---- */

static void load_runtime(void)
{
	struct runtime *rt = &callsite_state.runtime;
	struct gg_elf e;

	if (gg_elf_open(&e, "/proc/self/exe"))
		return; /* nothing known: every frame is the program's */
	/* Stripped, the runtime's frames cannot be told apart; whether the
	 * runtime is there at all still can. */
	if (gg_runtime_ranges(&e, &callsite_state.skip_symbols, &rt->functions) == -ENOENT)
		rt->stripped = gg_runtime_linked(&e) == 1;
	gg_elf_close(&e);
}

/* ---- finding the call site ---- */

/* What a frame is, by its return address. */
enum verdict {
	V_SITE = 1,
	V_SKIP,
	V_SITE_IN_RUNTIME
};

/* The verdicts of return addresses seen, so a site seen again costs no
 * dladdr (which walks every loaded object): lock-free, one word an entry (the address above two bits of verdict; 0 is empty). An
 * object unloaded and another mapped at its addresses could leave a stale
 * verdict, which names a wrong frame, never a wrong finding. */
#define VERDICTS 4096
static _Atomic uint64_t verdicts[VERDICTS];

static enum verdict judge(uintptr_t ret)
{
	/* A return address may sit just past the end of its function. */
	uintptr_t pc = ret - 1;
	Dl_info info;

	configured();
	if (gg_real_in_shim((const void *)pc))
		return V_SKIP; /* the shim's own frames are never a call site */
	if (!dladdr((void *)pc, &info) || !info.dli_fname)
		return V_SITE; /* JIT code or the like: the application's own */
	if (gg_callsite_skipped(info.dli_fname))
		return V_SKIP;
	if (info.dli_fbase == callsite_state.exe_base && callsite_state.skip_symbols.n) {
		const struct runtime *rt = &callsite_state.runtime;

		pthread_once(&callsite_state.runtime_once, load_runtime);
		if (gg_ranges_hold(&rt->functions, pc - callsite_state.exe_bias))
			return V_SKIP;
		if (rt->stripped)
			return V_SITE_IN_RUNTIME;
	}
	return V_SITE;
}

/* Two places an address may sit, by two hashes: two addresses on an
 * allocation's path that share one still both stay (issue 16: one miss costs
 * a dladdr, thousands of instructions). */
static enum verdict verdict_of(uintptr_t ret)
{
	uint64_t h1 = ((uint64_t)ret * 0x9e3779b97f4a7c15ull) >> 52; /* 12 bits */
	uint64_t h2 = ((uint64_t)ret * 0xc2b2ae3d27d4eb4full) >> 52;
	uint64_t e1 = atomic_load_explicit(&verdicts[h1], memory_order_relaxed);
	uint64_t e2 = atomic_load_explicit(&verdicts[h2], memory_order_relaxed);
	enum verdict v;

	if (e1 && e1 >> 2 == (uint64_t)ret)
		return (enum verdict)(e1 & 3);
	if (e2 && e2 >> 2 == (uint64_t)ret)
		return (enum verdict)(e2 & 3);
	v = judge(ret);
	if ((uint64_t)ret < (UINT64_C(1) << 62))
		atomic_store_explicit(&verdicts[e1 ? h2 : h1], (uint64_t)ret << 2 | v,
				      memory_order_relaxed);
	return v;
}

int gg_callsite_pick(const uintptr_t *pcs, int n, struct gg_callsite *cs)
{
	memset(cs, 0, sizeof(*cs));
	for (int i = 0; i < n; i++) {
		enum verdict v = verdict_of(pcs[i]);

		if (v == V_SKIP)
			continue;
		if (v == V_SITE_IN_RUNTIME) {
			cs->in_static_runtime = true;
			for (int k = i + 1; k < n && cs->nouter < GG_CALLSITE_OUTER; k++)
				cs->outer[cs->nouter++] = pcs[k];
		}
		cs->pc = pcs[i];
		return i;
	}
	return -1;
}

uint64_t gg_callsite_unwinds(void)
{
	return atomic_load_explicit(&callsite_state.unwinds, memory_order_relaxed);
}

void gg_callsite_find(struct gg_callsite *cs)
{
	uintptr_t pcs[GG_CALLSITE_FIND_FRAMES];

	gg_callsite_pick(pcs, gg_callsite_frames(pcs, GG_ARRAY_SIZE(pcs)), cs);
}

/* Every frame inward of @caller is the shim's (the hook's work and what it
 * called), so @caller is the first frame an unwind could pick. */
void gg_callsite_find_from(uintptr_t caller, struct gg_callsite *cs)
{
	if (caller && verdict_of(caller) == V_SITE) {
		memset(cs, 0, sizeof(*cs));
		cs->pc = caller;
		return;
	}
	gg_callsite_find(cs);
}

int gg_callsite_describe(uintptr_t address, struct gg_site *site)
{
	Dl_info info;

	configured();
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

void gg_callsite_report(const struct gg_callsite *cs, const struct gg_site *at,
			struct gg_report_site *out)
{
	memset(out, 0, sizeof(*out));
	out->at = *at;
	out->in_static_runtime = cs && cs->in_static_runtime;
	if (!out->in_static_runtime)
		return;
	out->nouter = cs->nouter;
	for (unsigned i = 0; i < cs->nouter && i < GG_REPORT_OUTER; i++)
		gg_callsite_describe(cs->outer[i], &out->outer[i]);
}

void gg_callsite_report_id(uint32_t id, struct gg_report_site *out)
{
	struct gg_callsite cs;
	struct gg_site at;

	gg_callsite_get(id, &cs);
	gg_callsite_describe(cs.pc, &at);
	gg_callsite_report(&cs, &at, out);
}

int gg_callsite_stack(struct gg_site *frames, int max)
{
	uintptr_t pcs[GG_CALLSITE_MAX_FRAMES];
	int n = gg_callsite_frames(pcs, GG_CALLSITE_MAX_FRAMES), kept = 0;

	for (int i = 0; i < n && kept < max; i++) {
		/* The shim's own frames say nothing about the application. */
		if (gg_real_in_shim((const void *)(pcs[i] - 1)))
			continue;
		gg_callsite_describe(pcs[i], &frames[kept++]);
	}
	return kept;
}

/* ---- interning ---- */

bool gg_callsite_same(const struct gg_callsite *a, const struct gg_callsite *b)
{
	return a->pc == b->pc && a->in_static_runtime == b->in_static_runtime &&
	       a->nouter == b->nouter && !memcmp(a->outer, b->outer, a->nouter * sizeof(a->outer[0]));
}

static uint32_t intern_address(uintptr_t address)
{
	uint32_t h = (uint32_t)((address * 0x9e3779b97f4a7c15ull) >> 40);

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

static uint32_t chain_hash(const struct gg_callsite *cs)
{
	uint64_t h = cs->pc * 0x9e3779b97f4a7c15ull;

	for (int i = 0; i < cs->nouter; i++)
		h = (h ^ cs->outer[i]) * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 32);
}

/* A slot is claimed (FREE -> BUSY), written, then published (READY); a
 * thread that meets a BUSY slot waits for it, a few stores away, so the same
 * chain never gets two ids. */
static uint32_t intern_chain(const struct gg_callsite *cs)
{
	uint32_t h = chain_hash(cs);

	for (uint32_t n = 0; n < CHAINS; n++) {
		struct chain *c = &callsite_state.chains[(h + n) & (CHAINS - 1)];
		uint32_t state = atomic_load_explicit(&c->state, memory_order_acquire);

		if (state == CHAIN_FREE &&
		    atomic_compare_exchange_strong(&c->state, &state, CHAIN_BUSY)) {
			c->hash = h;
			c->cs = *cs;
			atomic_store_explicit(&c->state, CHAIN_READY, memory_order_release);
			return CHAIN_ID | (uint32_t)(c - callsite_state.chains);
		}
		while (state == CHAIN_BUSY) {
			sched_yield();
			state = atomic_load_explicit(&c->state, memory_order_acquire);
		}
		if (c->hash == h && gg_callsite_same(&c->cs, cs))
			return CHAIN_ID | (uint32_t)(c - callsite_state.chains);
	}
	return 0;
}

uint32_t gg_callsite_intern(const struct gg_callsite *cs)
{
	if (!cs->pc)
		return 0;
	return cs->in_static_runtime ? intern_chain(cs) : intern_address(cs->pc);
}

void gg_callsite_get(uint32_t id, struct gg_callsite *cs)
{
	memset(cs, 0, sizeof(*cs));
	if (id & CHAIN_ID) {
		const struct chain *c = &callsite_state.chains[(id & ~CHAIN_ID) & (CHAINS - 1)];

		if ((id & ~CHAIN_ID) < CHAINS &&
		    atomic_load_explicit(&c->state, memory_order_acquire) == CHAIN_READY)
			*cs = c->cs;
	} else if (id && id < SITES) {
		cs->pc = atomic_load_explicit(&callsite_state.sites[id], memory_order_relaxed);
	}
}

void gg_callsite_atfork_child(void)
{
	atomic_store(&callsite_state.unwound_nothing, 0);
	/* A slot a thread of the parent was writing when it forked is written by
	 * no one in the child: free it, or the child would wait for it forever. */
	for (uint32_t i = 0; i < CHAINS; i++)
		if (atomic_load_explicit(&callsite_state.chains[i].state, memory_order_relaxed) ==
		    CHAIN_BUSY)
			atomic_store_explicit(&callsite_state.chains[i].state, CHAIN_FREE,
					      memory_order_relaxed);
}
