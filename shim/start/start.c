/* Start-up: nothing happens at load time beyond what the dynamic linker does
 * (and noting the time, for after:S, and registering base/loader.c's fork
 * handlers, which only note whether other threads ran). The first hooked call
 * sets the shim up
 * (configuration, log, exit and fork handlers, the watcher), so a process
 * that never calls the driver sees no trace of it. */
#include "start/start.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/fatal.h"
#include "boundary/boundary.h"
#include "boundary/figures.h"
#include "boundary/labels.h"
#include "boundary/watcher.h"
#include "callsite/callsite.h"
#include "callsite/depot.h"
#include "handles/graphs.h"
#include "handles/kernels.h"
#include "driver/real.h"
#include "options/config.h"
#include "redzone/leaks.h"
#include "redzone/redzone.h"
#include "report/errlines.h"
#include "report/report.h"

static struct {
	pthread_once_t env_once;   /* reads GPUGUARD_DISABLE */
	bool disabled;             /* written once under @env_once */
	pthread_once_t setup_once; /* the rest of the set-up */
	atomic_bool forked;        /* a forked child whose watcher is not started yet */
	bool exitcode_set;         /* written once by set-up */
	int exitcode;
	bool own;                  /* this process called a hook itself (not only its parent) */
	pid_t pid;                 /* the process @own speaks of: a vfork child shares this memory */
	void (*real_exit[2])(int); /* the C library's _exit and _Exit, found by set-up */
	atomic_bool exiting;       /* claimed by the one exit report; read by the destructor */
	int exit_status;
	/* exit() scanned but left the verdict for after the program's own exit
	 * handlers and every library's destructors (late_verdict): set by that
	 * scan, taken once by the verdict (exchange). */
	atomic_bool verdict_pending;
	/* The exit's verdict, decided once from the figures the exit report
	 * wrote: written by that report before @verdict_set (release); the status,
	 * the JSON, the metrics and the exit line all say it. */
	uint64_t verdict_errors;
	atomic_bool verdict_set;
	pthread_once_t idle_once;    /* reads the configuration: @cfg, then @idle_hooks */
	const struct gg_config *cfg; /* set once under @idle_once (gg_config()'s); read-only */
	/* bit per gg_hook_id with no work here: written under @idle_once */
	uint64_t idle_hooks[(GG_HOOK_COUNT + 63) / 64];
} start_state = { .env_once = PTHREAD_ONCE_INIT,
		  .setup_once = PTHREAD_ONCE_INIT,
		  .idle_once = PTHREAD_ONCE_INIT };

/* The one piece of this module's state outside start_state: every hook reads
 * it first (gg_start_ready() in start/start.h, and hooks/entry-x86_64.S), so
 * it is a plain hidden global. Set (release) by set-up; GG_MODE_FORKED sends a
 * forked child's first hook to the slow path. */
atomic_int gg_start_mode;

/* Read by every exported entry point too (start.h); written by set-up. */
unsigned char gg_start_pass[GG_HOOK_COUNT];

static void read_disable(void)
{
	start_state.disabled = gg_config_disabled_in_env();
}

bool gg_start_disabled(void)
{
	pthread_once(&start_state.env_once, read_disable);
	return start_state.disabled;
}

/* Locks are held across fork() so the child's copies are consistent; the
 * forking thread counts as inside the shim until its parent or child handler
 * gave them back (driver/real.h): a handler of the program's that runs
 * meanwhile (a fork handler of its own, a signal) is refused, not deadlocked. */
static void atfork_prepare(void)
{
	gg_real_enter();
	gg_boundary_atfork_prepare();
	gg_audit_atfork_prepare();
	gg_redzone_atfork_prepare();
	gg_labels_atfork_prepare();
	gg_report_files_atfork_prepare();
	gg_report_errlines_atfork_prepare(); /* innermost: taken by any ERROR line */
}

static void atfork_parent(void)
{
	gg_report_errlines_atfork_parent();
	gg_report_files_atfork_parent();
	gg_labels_atfork_parent();
	gg_redzone_atfork_parent();
	gg_audit_atfork_parent();
	gg_boundary_atfork_parent();
	gg_real_leave();
}

static void atfork_child(void)
{
	gg_callsite_atfork_child();
	gg_depot_atfork_child();
	gg_real_atfork_child();
	gg_kernels_atfork_child();
	gg_graphs_atfork_child();
	gg_audit_atfork_child();
	gg_redzone_atfork_child();
	gg_boundary_atfork_child();
	gg_labels_atfork_child();
	gg_report_errlines_atfork_child();
	gg_report_files_atfork_child();
	gg_watcher_atfork_child();
	/* A process of its own (docs/how-it-works.md, "Boundaries, signals, exit"): it
	 * reports only once it calls a hook itself, which also gives it its log
	 * file and its watcher thread (no thread is created inside a fork
	 * handler). */
	start_state.own = false;
	atomic_store(&start_state.forked, true);
	if (atomic_load(&gg_start_mode) == GG_MODE_ACTIVE)
		atomic_store(&gg_start_mode, GG_MODE_FORKED);
	gg_real_leave(); /* the forking thread's count, copied */
}

/* Whether GPUGUARD_EXITCODE replaces the exit status @status (docs/how-it-works.md,
 * "Boundaries, signals, exit"), from the verdict the exit report wrote, never
 * from a later gathering: a violation recorded since (another thread, a later
 * exit handler's free) must not make the status disagree with the JSON. */
static bool status_changes(int status)
{
	if (!start_state.exitcode_set || status != 0 ||
	    !atomic_load_explicit(&start_state.verdict_set, memory_order_acquire))
		return false;
	return start_state.verdict_errors != 0;
}

/* The verdict: the leaks still live, the figures, the exit's reports and
 * files, decided once. It needs no driver call, so it can come after the
 * driver's own destructor. */
static void exit_verdict(void)
{
	struct gg_report_figures f;

	gg_real_enter(); /* its locks: a handler's boundary here is refused */
	gg_leaks_gather();
	gg_figures_gather(&f); /* the one gathering the verdict comes from */
	start_state.verdict_errors = f.errors;
	atomic_store_explicit(&start_state.verdict_set, true, memory_order_release);
	gg_report_leaks(&f);
	/* The audit's errors, named if nothing named them: every error is an
	 * ERROR line at every verbosity, whether or not it changes the status. */
	gg_report_unresolved_at_exit(&f);
	gg_real_report_calls();
	gg_report_exit_summary(&f);
	f.final = true;
	gg_report_write_files(&f);
	gg_real_leave();
}

/* The final scan, while the driver still works (library destructors, the
 * driver's among them, run after exit handlers), then the verdict now
 * (@verdict_now: _exit, a fatal signal) or after everything the program
 * still runs at exit (exit(), a return from main: late_verdict), so that
 * memory its C++ static destructors and late exit handlers free is not
 * judged leaked (docs/how-it-works.md, "Boundaries, signals, exit"). */
static void at_exit(int status, bool verdict_now)
{
	/* A forked child that never called the driver writes nothing; exit() and
	 * _exit() on two threads at once report once. */
	if (!start_state.own || atomic_exchange(&start_state.exiting, true))
		return;
	gg_real_enter(); /* its locks: a handler's boundary here is refused */
	start_state.exit_status = status;
	gg_redzone_scan("exit");
	gg_real_leave();
	if (verdict_now)
		exit_verdict();
	else
		atomic_store(&start_state.verdict_pending, true);
}

/* exit() and a return from main, as on_exit(3) calls them. From a signal
 * handler (or a driver callback) that interrupted the shim's own work on this
 * thread (driver/real.h), the report could wait forever on a lock that work
 * holds: the process ends as asked, unreported, as with _exit there. */
static void on_exit_report(int status, void *arg)
{
	(void)arg;
	if (!gg_real_inside)
		at_exit(status, false);
}

/* A SIGTERM or SIGINT at its default disposition, on the watcher thread while
 * the handler waits (boundary/ending.c): the exit's scan and reports. The
 * process then dies of @sig, so no status is changed. */
static void end_by_signal(int sig)
{
	/* exit() had begun (its scan done): its verdict now, or never. */
	if (atomic_exchange(&start_state.verdict_pending, false)) {
		exit_verdict();
		return;
	}
	at_exit(128 + sig, true);
}

/* The C library's _exit (@which 0) or _Exit (1), past this shim's. Found by
 * set-up, never here: a vfork child must not run the dynamic linker on its
 * parent's memory. Before set-up, the system call itself, which is all they do. */
static void find_real_exits(void)
{
	void *(*real_dlsym)(void *, const char *) = (void *(*)(void *, const char *))gg_real_dlsym();

	if (!real_dlsym)
		return;
	start_state.real_exit[0] = (void (*)(int))real_dlsym(RTLD_NEXT, "_exit");
	start_state.real_exit[1] = (void (*)(int))real_dlsym(RTLD_NEXT, "_Exit");
}

static __attribute__((noreturn)) void real_exit(int which, int status)
{
	if (start_state.real_exit[which])
		start_state.real_exit[which](status);
	for (;;)
		syscall(SYS_exit_group, status);
}

/* The variables gg_config_load() could not use, now that the log is open,
 * and every GPUGUARD_* name it does not know. */
static void report_config_problems(void)
{
	struct gg_config_problem p[GG_CONFIG_MAX_OPTIONS];
	struct gg_config_unknown u = { .next = NULL };
	unsigned n = gg_config_problems(p, GG_ARRAY_SIZE(p));

	for (unsigned i = 0; i < n; i++)
		gg_report_bad_value(p[i].name, p[i].value, p[i].why, p[i].accepts);
	while (gg_config_next_unknown(&u))
		gg_report_unknown_variable(u.name, u.nearest);
}

/* The hooks whose wrapper has nothing to do in this configuration (docs/how-it-works.md,
 * "What the shim does"; "a hook is handed out only where it has work"): the
 * launch entry points when nothing counts or checks launches, cuCtxSynchronize*
 * without sync:N. */
static void idle(uint64_t *bits, enum gg_hook_id id)
{
	bits[id / 64] |= UINT64_C(1) << (id % 64);
}

/* Whether @id is one of the copy and set family (hooks/copies.c): one
 * block of hooks.def, from cuMemcpy to cuMemsetD2D32Async_ptsz. */
static bool copies(int id)
{
	_Static_assert(GG_ID_cuMemsetD2D32Async_ptsz - GG_ID_cuMemcpy == 69, "one block, 70 hooks");
	return id >= GG_ID_cuMemcpy && id <= GG_ID_cuMemsetD2D32Async_ptsz;
}

/* Whether @id is one of the calls hooked only so that the quarantine is
 * drained when they run out of memory (the last block of driver/hooks.def,
 * from cuArrayCreate_v2 on). */
static bool drains_only(int id)
{
	_Static_assert(GG_HOOK_COUNT - 1 - GG_ID_cuArrayCreate_v2 == 9, "one block, 10 hooks");
	return id >= GG_ID_cuArrayCreate_v2;
}

static void idle_hooks(const struct gg_config *cfg, const struct gg_boundary_events *ev, uint64_t *bits)
{
	static const enum gg_hook_id launches[] = {
		GG_ID_cuLaunchKernel,
		GG_ID_cuLaunchKernel_ptsz,
		GG_ID_cuLaunchKernelEx,
		GG_ID_cuLaunchKernelEx_ptsz,
		GG_ID_cuLaunchCooperativeKernel,
		GG_ID_cuLaunchCooperativeKernel_ptsz,
		/* A graph's replay is a launch of each of its kernels. */
		GG_ID_cuGraphInstantiate,
		GG_ID_cuGraphInstantiate_v2,
		GG_ID_cuGraphInstantiateWithFlags,
		GG_ID_cuGraphInstantiateWithParams,
		GG_ID_cuGraphInstantiateWithParams_ptsz,
		GG_ID_cuGraphExecUpdate,
		GG_ID_cuGraphExecUpdate_v2,
		GG_ID_cuGraphExecKernelNodeSetParams,
		GG_ID_cuGraphExecKernelNodeSetParams_v2,
		GG_ID_cuGraphExecNodeSetParams,
		GG_ID_cuGraphExecDestroy,
		GG_ID_cuGraphLaunch,
		GG_ID_cuGraphLaunch_ptsz,
		/* A launch captured into a graph is none until it is replayed. */
		GG_ID_cuStreamBeginCapture,
		GG_ID_cuStreamBeginCapture_ptsz,
		GG_ID_cuStreamBeginCapture_v2,
		GG_ID_cuStreamBeginCapture_v2_ptsz,
		GG_ID_cuStreamBeginCaptureToGraph,
		GG_ID_cuStreamBeginCaptureToGraph_ptsz,
		GG_ID_cuStreamEndCapture,
		GG_ID_cuStreamEndCapture_ptsz,
	};
	static const enum gg_hook_id syncs[] = { GG_ID_cuCtxSynchronize, GG_ID_cuCtxSynchronize_v2 };

	if (!ev->nlaunch && !cfg->check_launches && !cfg->redzone)
		for (size_t i = 0; i < GG_ARRAY_SIZE(launches); i++)
			idle(bits, launches[i]);
	if (!ev->nsync)
		for (size_t i = 0; i < GG_ARRAY_SIZE(syncs); i++)
			idle(bits, syncs[i]);
	/* Copies and sets are checked only against red zones. */
	for (int id = 0; id < GG_HOOK_COUNT && !cfg->redzone; id++)
		if (copies(id))
			idle(bits, (enum gg_hook_id)id);
	/* The calls hooked only to drain the quarantine when they run out of
	 * memory, while there is none. */
	for (int id = 0; id < GG_HOOK_COUNT && !(cfg->redzone && cfg->quarantine); id++)
		if (drains_only(id))
			idle(bits, (enum gg_hook_id)id);
}

/* The configuration, read once, and from it alone the idle hooks: a dlsym of a
 * driver name must not set the shim up (a process that never calls a hook
 * writes nothing: docs/how-it-works.md, "What the shim does"); set-up reads the same copy. */
static void load_config(void)
{
	struct gg_boundary_events ev;

	if (gg_start_disabled()) {
		memset(start_state.idle_hooks, 0xff, sizeof(start_state.idle_hooks));
		return;
	}
	start_state.cfg = gg_config_read();
	memset(&ev, 0, sizeof(ev));
	(void)gg_config_parse_boundary(start_state.cfg->boundary, &ev, NULL, NULL);
	idle_hooks(start_state.cfg, &ev, start_state.idle_hooks);
}

bool gg_start_hook_idle(int id)
{
	pthread_once(&start_state.idle_once, load_config);
	return id >= 0 && id < GG_HOOK_COUNT && (start_state.idle_hooks[id / 64] >> (id % 64) & 1);
}

static void setup(void)
{
	const struct gg_config *cfg;

	if (gg_start_disabled()) {
		atomic_store_explicit(&gg_start_mode, GG_MODE_DISABLED, memory_order_release);
		return;
	}
	pthread_once(&start_state.idle_once, load_config);
	cfg = start_state.cfg;
	gg_report_open(cfg);
	report_config_problems();
	gg_report_check_files(cfg);
	gg_callsite_configure(cfg->skip_objects, cfg->skip_symbols);
	gg_depot_configure(cfg->stack_depth);
	gg_audit_configure(cfg);
	gg_redzone_configure(cfg);
	gg_boundary_configure(cfg);
	start_state.exitcode_set = cfg->exitcode_set;
	start_state.exitcode = cfg->exitcode;
	gg_real_counting = cfg->verbosity >= 2; /* before the mode says ACTIVE */
	/* Idle on every route, the exported entry points included: the copies
	 * with red zones off (their wrappers' only work is the bands'), the
	 * drains with no quarantine. */
	for (int id = 0; id < GG_HOOK_COUNT; id++)
		gg_start_pass[id] = (copies(id) || drains_only(id)) && gg_start_hook_idle(id);
	start_state.pid = getpid();
	start_state.own = true;
	find_real_exits();
	gg_fatal_last_words(gg_figures_write_final);
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	on_exit(on_exit_report, NULL);
	gg_watcher_start(cfg, gg_boundary_events(), end_by_signal); /* says what it could not do */
	atomic_store_explicit(&gg_start_mode, GG_MODE_ACTIVE, memory_order_release);
}

bool gg_start_active(void)
{
	int mode = atomic_load_explicit(&gg_start_mode, memory_order_acquire);

	if (GG_LIKELY(mode == GG_MODE_ACTIVE))
		return true;
	if (mode == GG_MODE_FORKED) {
		if (atomic_exchange(&start_state.forked, false)) {
			gg_real_enter(); /* set-up work: driver/real.h */
			start_state.pid = getpid();
			start_state.own = true;
			gg_report_atfork_child();
			gg_watcher_restart_in_child(); /* says itself what it could not do */
			gg_real_leave();
		}
		atomic_store_explicit(&gg_start_mode, GG_MODE_ACTIVE, memory_order_release);
		return true;
	}
	if (mode == GG_MODE_DISABLED)
		return false;
	gg_real_enter(); /* set-up holds its once and the log's lock: driver/real.h */
	pthread_once(&start_state.setup_once, setup);
	gg_real_leave();
	return atomic_load_explicit(&gg_start_mode, memory_order_acquire) == GG_MODE_ACTIVE;
}

/* The last word: the verdict and the exit status, after the program's exit
 * handlers and every library's destructors (glibc runs an exit handler
 * registered while the handlers run, here from inside _dl_fini, after them,
 * before stdio is flushed). A handler of no object (NULL), so that no
 * object's __cxa_finalize runs it early. GPUGUARD_EXITCODE then skips as
 * little as it can: stdio is flushed, and the process ends with the new
 * status. */
extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);

static void late_verdict(void *arg)
{
	(void)arg;
	if (!atomic_exchange(&start_state.verdict_pending, false))
		return;
	exit_verdict();
	if (status_changes(start_state.exit_status)) {
		fflush(NULL);
		real_exit(0, start_state.exitcode);
	}
}

__attribute__((destructor)) static void shim_fini(void)
{
	if (atomic_load_explicit(&gg_start_mode, memory_order_acquire) != GG_MODE_ACTIVE ||
	    !atomic_load(&start_state.verdict_pending))
		return;
	/* Not registered (the C library refuses once its handlers are done):
	 * the verdict now, as late as this shim can still speak. */
	if (__cxa_atexit(late_verdict, NULL, NULL))
		late_verdict(NULL);
}

/* _exit() and _Exit() end a process with no exit handler: a forked worker
 * (Python's multiprocessing, os._exit) would take its findings with it. It
 * reports like exit() (test-fork.c), as AddressSanitizer's interceptor does,
 * but never flushes stdio: the buffers may be a parent's copy. */
static int exiting_now(int status)
{
	/* A vfork() child (posix_spawn, Python's subprocess) runs on its parent's
	 * memory with no fork handler run: it must touch none of it, and its
	 * _exit (an exec that failed) is not its parent's exit. */
	if (atomic_load_explicit(&gg_start_mode, memory_order_acquire) != GG_MODE_ACTIVE ||
	    !start_state.own || getpid() != start_state.pid)
		return status;
	/* _exit is async-signal-safe, the report is not: a handler (or a driver
	 * callback) that interrupted this thread inside a hook may hold the very
	 * lock the scan needs. The process ends as asked, unreported. */
	if (gg_real_inside)
		return status;
	/* From a later exit handler of the program's, after exit()'s scan: that
	 * exit's verdict, now, with the status _exit was given. */
	if (atomic_exchange(&start_state.verdict_pending, false)) {
		exit_verdict();
		return status_changes(status) ? start_state.exitcode : status;
	}
	if (atomic_load(&start_state.exiting))
		return status;
	at_exit(status, true);
	return status_changes(status) ? start_state.exitcode : status;
}

void gg_start_exit(int which, int status)
{
	real_exit(which, exiting_now(status));
}
