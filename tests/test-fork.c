/* A forked child is a process of its own (docs/how-it-works.md, "Boundaries, signals, exit"):
 * none of its parent's findings, counters or zones; its own allocation numbers;
 * nothing written unless it calls the driver itself; _exit reports like exit.
 */
#include <criterion/criterion.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define GG_ARRAY_SIZE_T(a) (sizeof(a) / sizeof((a)[0]))

#define RZ GG_APPS "/app-redzone"

/* One run with GPUGUARD_EXITCODE=86, 64-byte bands, and a summary and a
 * metrics file per process. */
struct forked {
	struct gg_run r;
	char dir[64];
	char env_json[160], env_metrics[160];
	glob_t files;   /* the summaries written, one per process */
	glob_t metrics; /* the metrics files written, likewise */
};

enum {
	BY_PRELOAD,
	BY_COMMAND
};

/* @prog run with the shim preloaded by the harness (BY_PRELOAD), or by the
 * gpuguard command with the same settings as its options (BY_COMMAND); @more
 * (may be NULL) adds variables to the harness's. */
static void run_forked_with(struct forked *f, int how, const char *prog, const char *const *args,
			    const char *const *more)
{
	const char *argv[32];
	char pattern[128], json[128], metrics[128];
	size_t n = 0;

	gg_test_dir(f->dir, sizeof(f->dir));
	snprintf(json, sizeof(json), "%s/s.%%p.json", f->dir);
	snprintf(metrics, sizeof(metrics), "%s/m.%%p.prom", f->dir);
	snprintf(f->env_json, sizeof(f->env_json), "GPUGUARD_SUMMARY_JSON=%s", json);
	snprintf(f->env_metrics, sizeof(f->env_metrics), "GPUGUARD_METRICS=%s", metrics);
	if (how == BY_COMMAND) {
		const char *opts[] = { GG_CLI,   "--redzone", "64",        "--exitcode", "86",
				       "--json", json,        "--metrics", metrics,      "--" };

		for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
			argv[n++] = opts[i];
	}
	argv[n++] = prog;
	for (; *args && n < 31; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	if (how == BY_COMMAND)
		gg_run(&f->r, GG_RUN_FAKE, (const char *[]){ "GG_TEST_PTX=" GG_PTX, NULL }, argv);
	else {
		const char *env[16] = { f->env_json, f->env_metrics, "GPUGUARD_REDZONE=64",
					"GPUGUARD_EXITCODE=86", "GG_TEST_PTX=" GG_PTX };
		size_t k = 5;

		for (; more && *more && k < 15; more++)
			env[k++] = *more;
		env[k] = NULL;
		gg_run(&f->r, GG_RUN_SHIM | GG_RUN_FAKE, env, argv);
	}
	snprintf(pattern, sizeof(pattern), "%s/s.*.json", f->dir);
	cr_assert_neq(glob(pattern, 0, NULL, &f->files), GLOB_ABORTED);
	snprintf(pattern, sizeof(pattern), "%s/m.*.prom", f->dir);
	cr_assert_neq(glob(pattern, 0, NULL, &f->metrics), GLOB_ABORTED);
	for (size_t i = 0; i < f->metrics.gl_pathc; i++)
		free(gg_read_metrics(f->metrics.gl_pathv[i]));
}

static void run_forked_by(struct forked *f, int how, const char *prog, const char *const *args)
{
	run_forked_with(f, how, prog, args, NULL);
}

static void run_forked(struct forked *f, const char *prog, const char *const *args)
{
	run_forked_by(f, BY_PRELOAD, prog, args);
}

static void forked_free(struct forked *f)
{
	globfree(&f->files);
	globfree(&f->metrics);
	gg_run_free(&f->r);
}

/* Over every summary: @expr of each (bound to j), in pid order. */
static char *each_summary(struct forked *f, const char *expr)
{
	char all[4096] = "";

	for (size_t i = 0; i < f->files.gl_pathc; i++) {
		char *v = gg_json(f->files.gl_pathv[i], expr);

		strncat(all, v, sizeof(all) - strlen(all) - 2);
		strcat(all, ";");
		free(v);
	}
	return strdup(all);
}

static void assert_out(const struct gg_run *r, const char *line)
{
	cr_assert_neq(strstr(r->out, line), NULL, "missing \"%s\" in:\n%s\nstderr:\n%s", line, r->out,
		      r->err);
}

/* Violations of a summary as (index, changed). */
#define VIOLS "[(v['index'], v['changed']) for v in j['violations']]"

Test(fork, a_child_that_never_calls_the_driver_writes_nothing_and_keeps_its_status)
{
	struct forked f;

	run_forked(&f, RZ, (const char *[]){ "alloc:100", "overrun:0:4", "child:idle", NULL });
	assert_out(&f.r, "child idle exited 0\n");
	cr_assert_eq(gg_run_exit(&f.r), 86, "the parent's own violation: %s", f.r.err);
	cr_assert_eq(f.files.gl_pathc, 1, "only the parent writes a summary");
	cr_assert_eq(f.metrics.gl_pathc, 1, "only the parent writes a metrics file");
	{
		/* ... and both are the parent's: s.PID.json and m.PID.prom */
		char *pid = gg_json(f.files.gl_pathv[0], "j['pid']"), want[128];

		snprintf(want, sizeof(want), "%s/m.%s.prom", f.dir, pid);
		cr_assert_str_eq(f.metrics.gl_pathv[0], want);
		free(pid);
	}
	cr_assert_eq(gg_count_lines(f.r.err, "INFO: exit:"), 1, "%s", f.r.err);
	forked_free(&f);
}

Test(fork, a_clean_worker_exits_0_and_counts_only_its_own_work)
{
	const char *modes[] = { "child:clean", "child:clean-_exit" };

	for (int i = 0; i < 2; i++) {
		struct forked f;
		char *v;

		run_forked(&f, RZ,
			   (const char *[]){ "alloc:100", "alloc:100", "overrun:0:4", modes[i], NULL });
		assert_out(&f.r, i ? "child clean-_exit exited 0\n" : "child clean exited 0\n");
		cr_assert_eq(gg_run_exit(&f.r), 86, "%s", f.r.err);
		cr_assert_eq(f.files.gl_pathc, 2, "%s", f.r.err);
		/* The parent's two allocations and one violation; the child's one. */
		v = each_summary(&f, "(j['allocations']['calls'], " VIOLS ", j['errors'])");
		cr_assert(!strcmp(v, "(2, [(0, 4)], 1);(1, [], 0);") ||
				  !strcmp(v, "(1, [], 0);(2, [(0, 4)], 1);"),
			  "%s", v);
		free(v);
		forked_free(&f);
	}
}

Test(fork, a_worker_that_overruns_reports_its_own_violation_in_its_own_summary_and_status)
{
	const char *modes[] = { "child:overrun", "child:overrun-_exit" };

	for (int i = 0; i < 2; i++) {
		struct forked f;
		char *v, line[64];

		/* The parent is clean: its status stays 0. */
		run_forked(&f, RZ, (const char *[]){ "alloc:100", "alloc:100", modes[i], NULL });
		snprintf(line, sizeof(line), "child %s exited 86\n", modes[i] + 6);
		assert_out(&f.r, line);
		cr_assert_eq(gg_run_exit(&f.r), 0, "%s", f.r.err);
		cr_assert_eq(f.files.gl_pathc, 2, "%s", f.r.err);
		/* The child's first allocation is its own #0, not the parent's #2. */
		v = each_summary(&f, "(j['allocations']['calls'], " VIOLS ", j['errors'])");
		cr_assert(!strcmp(v, "(2, [], 0);(1, [(0, 8)], 1);") ||
				  !strcmp(v, "(1, [(0, 8)], 1);(2, [], 0);"),
			  "%s", v);
		free(v);
		forked_free(&f);
	}
}

Test(fork, a_child_starts_with_an_empty_quarantine)
{
	struct forked f;
	char *v;

	/* The parent's buffer 0 is held when it forks: the child releases only
	 * its own allocation, and the parent its own, once. */
	run_forked_with(&f, BY_PRELOAD, RZ,
			(const char *[]){ "alloc:100", "free:0", "child:clean", NULL },
			(const char *[]){ "GPUGUARD_QUARANTINE=1M", NULL });
	assert_out(&f.r, "child clean exited 0\n");
	cr_assert_eq(gg_run_exit(&f.r), 0, "%s", f.r.err);
	cr_assert_eq(f.files.gl_pathc, 2, "%s", f.r.err);
	v = each_summary(&f, "(j['allocations']['calls'], j['redzones']['quarantine']['entered'], "
			     "j['redzones']['quarantine']['released'], j['redzones']['unchecked'], "
			     "j['errors'])");
	cr_assert(!strcmp(v, "(1, 1, 1, 0, 0);(1, 1, 1, 0, 0);"), "%s", v);
	free(v);
	forked_free(&f);
}

Test(fork, threads_and_children_count_each_overrun_once)
{
	struct forked f;
	char *v, cmd[256];
	struct gg_run rep;

	/* 4 threads each overrun one buffer and fork 2 children that overrun one. */
	run_forked(&f, RZ, (const char *[]){ "brood:4:2", NULL });
	assert_out(&f.r, "brood: 0 of 8 children exited 0\n"); /* each its own 86 */
	cr_assert_eq(gg_run_exit(&f.r), 86, "%s", f.r.err);
	cr_assert_eq(f.files.gl_pathc, 9, "%s", f.r.err);
	v = each_summary(&f, "(len(j['violations']), j['allocations']['calls'])");
	{
		unsigned viol = 0, calls = 0, a, b;

		for (const char *p = v; sscanf(p, "(%u, %u);", &a, &b) == 2; p = strchr(p, ';') + 1)
			viol += a, calls += b;
		cr_assert_eq(viol, 12, "%s", v);
		cr_assert_eq(calls, 12, "%s", v);
	}
	free(v);
	snprintf(cmd, sizeof(cmd), "%s report %s/s.*.json", GG_CLI, f.dir);
	gg_run(&rep, 0, NULL, (const char *[]){ "/bin/sh", "-c", cmd, NULL });
	cr_assert_eq(gg_run_exit(&rep), 1, "%s", rep.err);
	cr_assert_neq(strstr(rep.out, "red zone violations: 12"), NULL, "%s", rep.out);
	gg_run_free(&rep);
	forked_free(&f);
}

Test(fork, a_python_multiprocessing_pool_started_with_fork)
{
	struct forked f;
	char *v;

	run_forked(&f, "/usr/bin/python3",
		   (const char *[]){ GG_SOURCE_ROOT "/tests/apps/mp-workers.py", GG_PTX, NULL });
	/* Clean workers keep 0 (the pool would break otherwise); the one that
	 * overran carries its own status; the parent its own violation. */
	assert_out(&f.r, "pool: [0, 1, 4, 9]\nclean worker exited 0\noverrunning worker exited 86\n");
	cr_assert_eq(gg_run_exit(&f.r), 86, "%s", f.r.err);
	/* The parent, the pool's workers that took a task (one may take all four,
	 * and one that calls no driver function writes nothing), the two single
	 * workers: 1 + 4 + 1 + 1 allocations, 2 violations in all. */
	cr_assert(f.files.gl_pathc == 4 || f.files.gl_pathc == 5, "%zu files: %s", f.files.gl_pathc,
		  f.r.err);
	v = each_summary(&f, "(len(j['violations']), j['allocations']['calls'])");
	{
		unsigned viol = 0, calls = 0, a, b;

		for (const char *p = v; sscanf(p, "(%u, %u);", &a, &b) == 2; p = strchr(p, ';') + 1)
			viol += a, calls += b;
		cr_assert_eq(viol, 2, "the parent's and the overrunning worker's: %s", v);
		cr_assert_eq(calls, 7, "%s", v);
	}
	free(v);
	forked_free(&f);
}

/* The same pool run by the gpuguard command, as the README's CI job does it:
 * --exitcode and a summary per process (%p), then gpuguard report over them
 * all counts the parent's own violation and the overrunning worker's, each
 * once (a child's summary holds none of its parent's). */
Test(fork, a_python_multiprocessing_pool_under_the_command_is_reported_once_per_violation)
{
	struct forked f;
	char *v, cmd[256];
	struct gg_run rep;

	run_forked_by(&f, BY_COMMAND, "/usr/bin/python3",
		      (const char *[]){ GG_SOURCE_ROOT "/tests/apps/mp-workers.py", GG_PTX, NULL });
	assert_out(&f.r, "pool: [0, 1, 4, 9]\nclean worker exited 0\noverrunning worker exited 86\n");
	cr_assert_eq(gg_run_exit(&f.r), 86, "%s", f.r.err);
	cr_assert(f.files.gl_pathc == 4 || f.files.gl_pathc == 5, "%zu files: %s", f.files.gl_pathc,
		  f.r.err);
	v = each_summary(&f, "len(j['violations'])");
	{
		unsigned viol = 0, with = 0, a;

		for (const char *p = v; sscanf(p, "%u;", &a) == 1; p = strchr(p, ';') + 1)
			viol += a, with += a != 0;
		cr_assert_eq(viol, 2, "the parent's and the overrunning worker's: %s", v);
		cr_assert_eq(with, 2, "one in each of two summaries: %s", v);
	}
	free(v);
	snprintf(cmd, sizeof(cmd), "%s report %s/s.*.json", GG_CLI, f.dir);
	gg_run(&rep, 0, NULL, (const char *[]){ "/bin/sh", "-c", cmd, NULL });
	cr_assert_eq(gg_run_exit(&rep), 1, "%s", rep.err);
	cr_assert(strstr(rep.out, "red zone violations: 2\n") ||
			  strstr(rep.out, "red zone violations: 2, in "),
		  "%s", rep.out);
	gg_run_free(&rep);
	forked_free(&f);
}

/* A vfork() child runs on its parent's memory and no fork handler runs: its
 * _exit after a failed exec (posix_spawn, Python's subprocess) must not run
 * the parent's exit report as its own, nor stop the parent's. */
Test(fork, a_vfork_child_that_fails_to_exec_leaves_its_parents_exit_alone)
{
	struct forked f;
	char *v;

	run_forked(&f, RZ, (const char *[]){ "alloc:100", "overrun:0:4", "vfork", NULL });
	assert_out(&f.r, "vfork child exited 127\n");
	cr_assert_eq(gg_run_exit(&f.r), 86, "the parent's own violation: %s", f.r.err);
	cr_assert_eq(f.files.gl_pathc, 1, "only the parent writes a summary: %s", f.r.err);
	v = each_summary(&f, VIOLS);
	cr_assert_str_eq(v, "[(0, 4)];");
	free(v);
	cr_assert_eq(gg_count_lines(f.r.err, "INFO: exit:"), 1, "%s", f.r.err);
	forked_free(&f);
}

/* _exit is async-signal-safe and the report is not: called from inside a
 * hooked call (a signal handler, or here a stream callback the driver runs in
 * cuCtxSynchronize) it ends the process as asked, with no report that could
 * wait on a lock the interrupted hook holds. */
Test(fork, an_exit_from_inside_a_hook_ends_the_process_unreported)
{
	struct forked f;

	run_forked(&f, RZ, (const char *[]){ "alloc:100", "overrun:0:4", "cbexit:0", NULL });
	cr_assert_eq(strstr(f.r.out, "the callback did not run"), NULL, "%s", f.r.out);
	cr_assert_eq(gg_run_exit(&f.r), 0, "the status it asked for: %s", f.r.err);
	cr_assert_eq(f.files.gl_pathc, 0, "%s", f.r.err);
	cr_assert_str_eq(f.r.err, "");
	forked_free(&f);
}

/* ---- children of a threaded process (apps/app-fork-storm.c) ---- */

#define STORM GG_APPS "/app-fork-storm"

/* How many items of each_summary()'s @list are @item. */
static unsigned items_equal(const char *list, const char *item)
{
	unsigned n = 0;
	size_t len = strlen(item);

	for (const char *p = list; *p; p = strchr(p, ';') + 1)
		n += !strncmp(p, item, len) && p[len] == ';';
	return n;
}
#define FILLER GG_APPS "/libfork-filler.so"

/* glibc does not reset the lock of the dynamic loader's list of objects in a
 * forked child: a thread that walked the list (dl_iterate_phdr) when another
 * forked leaves it locked there for good. Here one stays inside the walk
 * while the children are forked: whatever a child's call and exit need, they
 * must not wait for that lock. Each child is given 20 s (apps/app-fork-storm.c). */
Test(fork, a_child_forked_while_a_thread_walks_the_loaders_list_calls_the_driver_and_exits)
{
	/* The parent set up before the fork, or never: then the child is the
	 * first to call the driver, and sets the shim up itself. */
	const char *const runs[][5] = {
		{ "init", "hold", "forks:3:alloc", "release", NULL },
		{ "hold", "forks:3:alloc", "release", NULL },
	};

	for (size_t i = 0; i < GG_ARRAY_SIZE_T(runs); i++) {
		struct forked f;
		char *v;

		run_forked(&f, STORM, runs[i]);
		assert_out(&f.r, "forks: 3 exited 0, 0 hung, 0 otherwise\n");
		cr_assert_eq(gg_run_exit(&f.r), 0, "%s", f.r.err);
		/* Each child, ended by _exit, exit and _Exit, reported its own
		 * allocation; the parent that called the driver its own none. */
		cr_assert_eq(f.files.gl_pathc, i == 0 ? 4 : 3, "%s", f.r.err);
		v = each_summary(&f, "j['allocations']['calls']");
		cr_assert_eq(items_equal(v, "1"), 3, "%s: %s", v, f.r.err);
		free(v);
		forked_free(&f);
	}
}

/* There a call site is found by GCC's unwinder, which finds unwind tables
 * without the loader's list (libunwind walks it); the program has it loaded
 * (a C++ program always does; this C one loads it). */
Test(fork, such_a_child_finds_its_call_sites_with_gccs_unwinder)
{
	struct forked f;
	char *v;

	run_forked_with(&f, BY_PRELOAD, STORM,
			(const char *[]){ "load:libgcc_s.so.1", "init", "hold", "forks:1:miss",
					  "forks:1:trace", "release", NULL },
			(const char *[]){ "GPUGUARD_REDZONE_TRACE_IDX=0", NULL });
	/* The miss is an error of the child's own: its status is GPUGUARD_EXITCODE's 86. */
	assert_out(&f.r,
		   "forks: 0 exited 0, 0 hung, 1 otherwise\nforks: 1 exited 0, 0 hung, 0 otherwise\n");
	cr_assert_neq(strstr(f.r.err, "child 0 ended with status 0x5600"), NULL, "%s", f.r.err);
	cr_assert_eq(gg_run_exit(&f.r), 1, "%s", f.r.err);
	cr_assert_eq(f.files.gl_pathc, 3, "%s", f.r.err);
	/* The missing kernel's site is the program's frame that asked. */
	v = each_summary(&f, "[r['site']['symbol'].split('+')[0] for r in j['unresolved']]");
	cr_assert(strstr(v, "['fork_child_work'];"), "%s", v);
	free(v);
	/* The traced allocation's stack goes through that frame too. */
	cr_assert_neq(strstr(f.r.err, "was made at:"), NULL, "%s", f.r.err);
	cr_assert_neq(strstr(f.r.err, " fork_child_work+0x"), NULL, "%s", f.r.err);
	forked_free(&f);
}

/* Without such an unwinder a site that needs an unwind is unknown there, and
 * the child still exits; the log says why at verbosity 2. (A sanitizer's
 * runtime loads libgcc_s: there the site is found, as above.) */
Test(fork, without_gccs_unwinder_such_a_child_leaves_its_sites_unknown_and_says_why)
{
	struct forked f;
	bool gcc;
	char *v;

	run_forked_with(&f, BY_PRELOAD, STORM,
			(const char *[]){ "gcc", "init", "hold", "forks:1:miss", "release", NULL },
			(const char *[]){ "GPUGUARD_VERBOSITY=2", NULL });
	gcc = strstr(f.r.out, "libgcc_s: loaded\n") != NULL;
	assert_out(&f.r, "forks: 0 exited 0, 0 hung, 1 otherwise\n");
	cr_assert_neq(strstr(f.r.err, "child 0 ended with status 0x5600"), NULL, "%s", f.r.err);
	cr_assert_eq(gg_run_exit(&f.r), 1, "%s", f.r.err);
	cr_assert_eq(f.files.gl_pathc, 2, "%s", f.r.err);
	v = each_summary(&f, "[r['site']['symbol'] or r['site']['address'] for r in j['unresolved']]");
	cr_assert(strstr(v, gcc ? "['fork_child_work+0x" : "['0x0'];"), "%s", v);
	free(v);
	cr_assert_eq(gg_count_lines(f.r.err, "call sites in this process are not unwound"), gcc ? 0 : 1,
		     "%s", f.r.err);
	cr_assert_eq(
		gg_count_lines(f.r.err, "caching allocators loaded in this process are not looked for"),
		1, "%s", f.r.err);
	forked_free(&f);
}

/* The storm: threads that keep the loader's locks busy (walking its
 * list, loading and unloading a library) and call the driver, while the main
 * thread forks a few hundred children that each make one driver call and
 * end with _exit, exit or _Exit. No child may hang, and the program's output
 * and status are what they are without the shim. Each child is given 20 s. */
Test(fork, children_of_a_threaded_process_that_call_the_driver_and_exit_never_hang)
{
	const char *const runs[][6] = {
		{ "init", "hammer:2:" FILLER, "forks:300:alloc", "calm", NULL },
		{ "hammer:2:" FILLER, "forks:60:alloc", "calm", NULL },
	};
	const char *const outs[] = { "forks: 300 exited 0, 0 hung, 0 otherwise\n",
				     "forks: 60 exited 0, 0 hung, 0 otherwise\n" };
	const size_t files[] = { 301,
				 60 }; /* the children's, and the parent's that called the driver */

	for (size_t i = 0; i < GG_ARRAY_SIZE_T(runs); i++) {
		struct forked f;
		struct gg_run plain;
		const char *argv[8] = { STORM };

		run_forked(&f, STORM, runs[i]);
		cr_assert_str_eq(f.r.out, outs[i], "%s", f.r.err);
		cr_assert_eq(gg_run_exit(&f.r), 0, "%s", f.r.err);
		/* Every child wrote its own summary, as at an exit(). */
		cr_assert_eq(f.files.gl_pathc, files[i], "%zu summaries: %s", f.files.gl_pathc,
			     f.r.err);
		forked_free(&f);
		if (i == 0) /* the smaller run says as much without the shim */
			continue;
		for (size_t k = 0; runs[i][k]; k++)
			argv[k + 1] = runs[i][k];
		gg_run(&plain, GG_RUN_FAKE, (const char *[]){ "GG_TEST_PTX=" GG_PTX, NULL }, argv);
		cr_assert_str_eq(plain.out, outs[i], "%s", plain.err);
		cr_assert_eq(gg_run_exit(&plain), 0, "%s", plain.err);
		gg_run_free(&plain);
	}
}

/* Issue "never harm the host" round 3, 3: threads that allocate, copy,
 * launch and run labelled boundaries, while the main thread forks children
 * (each calls the driver and ends, by _exit, exit and _Exit in turn) and a
 * thread sends the shim's signal in a loop; with a signal by name and by
 * number, and with after: and launch:N boundaries besides. Every process
 * ends as it would without the shim, writes a summary the schema accepts and
 * finds nothing; without after:, only the parent ran boundaries. A hang ends in the app's
 * watchdog (status 97); the sanitized suite runs it too. */
Test(fork, a_storm_of_forks_threads_and_signals_ends_cleanly_with_a_valid_summary_per_process)
{
	static const char *const envs[][4] = {
		{ "GPUGUARD_SIGNAL=USR2", "GG_TEST_SIGNAL=12", NULL },
		{ "GPUGUARD_SIGNAL=40", "GG_TEST_SIGNAL=40",
		  "GPUGUARD_BOUNDARY=after:0.01,after:0.05,launch:40", NULL },
	};

	for (size_t i = 0; i < GG_ARRAY_SIZE_T(envs); i++) {
		struct forked f;
		char *v;

		run_forked_with(&f, BY_PRELOAD, STORM,
				(const char *[]){ "watchdog:120", "init", "storm:4:12:200", NULL },
				envs[i]);
		cr_assert_str_eq(f.r.out, "forks: 12 exited 0, 0 hung, 0 otherwise\nstorm: done\n",
				 "%s: %s", envs[i][0], f.r.err);
		cr_assert_eq(gg_run_exit(&f.r), 0, "%s: %s", envs[i][0], f.r.err);
		cr_assert_eq(f.files.gl_pathc, 13, "%s: %zu summaries: %s", envs[i][0],
			     f.files.gl_pathc, f.r.err);
		for (size_t k = 0; k < f.files.gl_pathc; k++) {
			char *invalid = gg_summary_invalid(f.files.gl_pathv[k]);

			cr_assert_null(invalid, "%s: %s", f.files.gl_pathv[k], invalid);
		}
		v = each_summary(&f, "(j['errors'], len(j['violations']))");
		cr_assert_eq(items_equal(v, "(0, 0)"), 13, "%s: %s", envs[i][0], v);
		free(v);
		/* The parent's boundaries (a child forked before an after: event
		 * fired runs that event itself: its own watcher's). */
		v = each_summary(&f, "j['seals'] > 0");
		cr_assert_geq(items_equal(v, "True"), 1, "%s: %s", envs[i][0], v);
		if (i == 0)
			cr_assert_eq(items_equal(v, "True"), 1, "only the parent: %s", v);
		free(v);
		cr_assert_eq(gg_count_errors(f.r.err), 0, "%s: %s", envs[i][0], f.r.err);
		cr_assert_null(strstr(f.r.err, "Sanitizer"), "%s", f.r.err);
		cr_assert_null(strstr(f.r.err, "runtime error"), "%s", f.r.err);
		forked_free(&f);
	}
}
