/* The exit path, exit codes and the report files (docs/how-it-works.md, "Boundaries, signals,
 * exit"; gpuguard(1), FILES). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define RZ GG_APPS "/app-redzone"
#define AUDIT GG_APPS "/app-audit"

struct files {
	char dir[64], json[128], metrics[128];
	char env_json[160], env_metrics[160];
};

static void files_init(struct files *f)
{
	gg_test_dir(f->dir, sizeof(f->dir));
	snprintf(f->json, sizeof(f->json), "%s/summary.json", f->dir);
	snprintf(f->metrics, sizeof(f->metrics), "%s/gpuguard.prom", f->dir);
	snprintf(f->env_json, sizeof(f->env_json), "GPUGUARD_SUMMARY_JSON=%s", f->json);
	snprintf(f->env_metrics, sizeof(f->env_metrics), "GPUGUARD_METRICS=%s", f->metrics);
}

static void files_free(struct files *f)
{
	gg_test_dir_remove(f->dir);
}

static int run_rz(struct gg_run *r, const char *const *env, const char *const *steps)
{
	const char *argv[16] = { RZ }, *envp[16] = { "GG_TEST_PTX=" GG_PTX };
	size_t n = 1, k = 1;

	for (; env && *env; env++)
		envp[k++] = *env;
	envp[k] = NULL;
	for (; *steps; steps++)
		argv[n++] = *steps;
	argv[n] = NULL;
	gg_run(r, GG_RUN_SHIM | GG_RUN_FAKE, envp, argv);
	return gg_run_exit(r);
}

static void touch_file(const char *path)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	fclose(f);
}

/* ---- exit status ---- */

Test(exit, an_error_turns_a_zero_status_into_the_exit_code)
{
	struct gg_run r;

	cr_assert_eq(run_rz(&r, (const char *[]){ "GPUGUARD_REDZONE=16", "GPUGUARD_EXITCODE=42", NULL },
			    (const char *[]){ "alloc:64", "overrun:0:1", "print:3000", NULL }),
		     42, "%s", r.err);
	/* Every buffered line made it out first. */
	cr_assert_eq(gg_count_lines(r.out, "buffered line "), 3000, "%zu bytes", r.out_len);
	cr_assert_neq(strstr(r.out, "buffered line 2999\n"), NULL);
	cr_assert_neq(strstr(r.out, "done\n"), NULL);
	gg_run_free(&r);
}

Test(exit, a_clean_run_keeps_status_zero)
{
	struct gg_run r;

	cr_assert_eq(run_rz(&r, (const char *[]){ "GPUGUARD_REDZONE=16", "GPUGUARD_EXITCODE=42", NULL },
			    (const char *[]){ "alloc:64", "overrun:0:0", "free:0", NULL }),
		     0, "%s", r.err);
	gg_run_free(&r);
}

Test(exit, the_applications_own_failure_status_is_kept)
{
	struct gg_run r;

	cr_assert_eq(run_rz(&r, (const char *[]){ "GPUGUARD_REDZONE=16", "GPUGUARD_EXITCODE=42", NULL },
			    (const char *[]){ "alloc:64", "overrun:0:1", "print:10", "exit:3", NULL }),
		     3, "%s", r.err);
	cr_assert_eq(gg_count_lines(r.out, "buffered line "), 10);
	gg_run_free(&r);
}

Test(exit, without_exitcode_an_error_changes_nothing)
{
	struct gg_run r;

	cr_assert_eq(run_rz(&r, (const char *[]){ "GPUGUARD_REDZONE=16", NULL },
			    (const char *[]){ "alloc:64", "overrun:0:1", NULL }),
		     0, "%s", r.err);
	cr_assert_eq(gg_count_lines(r.err, "ERROR: red zone violation (exit)"), 1, "%s", r.err);
	gg_run_free(&r);
}

static int run_audit(struct gg_run *r, const char *const *env, const char *const *steps)
{
	const char *argv[16] = { AUDIT };
	size_t n = 1;

	for (; *steps; steps++)
		argv[n++] = *steps;
	argv[n] = NULL;
	gg_run(r, GG_RUN_SHIM | GG_RUN_FAKE, env, argv);
	return gg_run_exit(r);
}

Test(exit, a_required_kernel_missing_at_exit_is_an_error)
{
	struct gg_run r;

	cr_assert_eq(run_audit(&r, (const char *[]){ "GPUGUARD_EXITCODE=7", NULL },
			       (const char *[]){ "file:" GG_PTX, "get:nope", NULL }),
		     7, "%s", r.err);
	gg_run_free(&r);
	cr_assert_eq(run_audit(&r, (const char *[]){ "GPUGUARD_EXITCODE=7", NULL },
			       (const char *[]){ "file:" GG_PTX, "get:gg_fill", NULL }),
		     0, "%s", r.err);
	gg_run_free(&r);
}

Test(exit, an_allowed_gate_failure_is_an_error_at_exit)
{
	struct gg_run r;

	cr_assert_eq(run_audit(&r,
			       (const char *[]){ "GPUGUARD_EXITCODE=9", "GPUGUARD_ALLOW_UNRESOLVED=1",
						 "GPUGUARD_BOUNDARY=launch:1", NULL },
			       (const char *[]){ "file:" GG_PTX, "get:nope", "launch", NULL }),
		     9, "%s", r.err);
	gg_run_free(&r);
}

/* docs/how-it-works.md, "Boundaries, signals, exit": the JSON's errors, the metrics, the exit
 * status under GPUGUARD_EXITCODE and gpuguard report's verdict come from one
 * definition, and an error that changes the status is named by an ERROR line
 * even at verbosity 0. Each kind of error, and a clean run, in all four places.
 */
Test(exit, every_kind_of_error_is_the_same_in_the_json_metrics_status_and_report)
{
	static const struct {
		const char *what, *prog, *env[3], *steps[4], *error_line;
		unsigned errors;
	} kinds[] = {
		{ "a violation",
		  RZ,
		  { "GPUGUARD_REDZONE=64" },
		  { "alloc:100", "overrun:0:8" },
		  "ERROR: red zone violation (exit): allocation #0",
		  1 },
		{ "a gate failure under allow",
		  AUDIT,
		  { "GPUGUARD_ALLOW_UNRESOLVED=1", "GPUGUARD_BOUNDARY=launch:1" },
		  { ("file:" GG_PTX), "get:nope", "launch" },
		  NULL,
		  1 },
		{ "a late miss under allow",
		  AUDIT,
		  { "GPUGUARD_ALLOW_UNRESOLVED=1", "GPUGUARD_BOUNDARY=launch:1" },
		  { ("file:" GG_PTX), "launch", "get:nope" },
		  NULL,
		  1 },
		{ "a required kernel unresolved at exit",
		  AUDIT,
		  { NULL },
		  { ("file:" GG_PTX), "get:nope" },
		  "ERROR: required kernel never resolved: kernels.ptx::nope (1 failed lookup, "
		  "CUDA_ERROR_NOT_FOUND) at lookup_a+0x",
		  1 },
		{ "a double free",
		  RZ,
		  { "GPUGUARD_REDZONE=64" },
		  { "alloc:100", "free:0", "free:0" },
		  "ERROR: double free: cuMemFree_v2(0x",
		  1 },
		{ "an invalid free",
		  RZ,
		  { "GPUGUARD_REDZONE=64" },
		  { "alloc:100", "ifree:0:8" },
		  "ERROR: invalid free: cuMemFree_v2(0x",
		  1 },
		{ "a leak under leak check",
		  RZ,
		  { "GPUGUARD_REDZONE=64", "GPUGUARD_LEAK_CHECK=1" },
		  { "alloc:100" },
		  "ERROR: leak: 1 allocation (100 bytes) still live at exit",
		  1 },
		{ "a leak without leak check",
		  RZ,
		  { "GPUGUARD_REDZONE=64" },
		  { "alloc:100" },
		  NULL,
		  0 },
		{ "a failed module load",
		  AUDIT,
		  { NULL },
		  { "tryfile:/nonexistent/k.ptx" },
		  "ERROR: required module never loaded: k.ptx (1 failed load, "
		  "CUDA_ERROR_FILE_NOT_FOUND) at ",
		  1 },
		{ "a clean run", AUDIT, { NULL }, { ("file:" GG_PTX), "get:gg_fill" }, NULL, 0 },
	};

	/* Each kind with GPUGUARD_EXITCODE, then without: the ERROR line is the
	 * same either way. */
	for (size_t t = 0; t < 2 * sizeof(kinds) / sizeof(kinds[0]); t++) {
		size_t i = t / 2;
		bool code = t % 2 == 0;
		struct files f;
		struct gg_run r, rep;
		const char *env[8] = { ("GG_TEST_PTX=" GG_PTX),
				       code ? "GPUGUARD_EXITCODE=86" : "GG_NONE=1",
				       "GPUGUARD_VERBOSITY=0" },
			   *argv[8];
		size_t k = 3, n = 1;
		char *v, *prom, want[64];

		argv[0] = kinds[i].prog;

		files_init(&f);
		env[k++] = f.env_json;
		env[k++] = f.env_metrics;
		for (size_t j = 0; j < 3 && kinds[i].env[j]; j++)
			env[k++] = kinds[i].env[j];
		env[k] = NULL;
		for (size_t j = 0; j < 4 && kinds[i].steps[j]; j++)
			argv[n++] = kinds[i].steps[j];
		argv[n] = NULL;
		gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE, env, argv);
		cr_assert_eq(gg_run_exit(&r), kinds[i].errors && code ? 86 : 0, "%s: %s", kinds[i].what,
			     r.err);
		v = gg_json(f.json, "j['errors']");
		snprintf(want, sizeof(want), "%u", kinds[i].errors);
		cr_assert_str_eq(v, want, "%s", kinds[i].what);
		free(v);
		prom = gg_read_metrics(f.metrics);
		snprintf(want, sizeof(want), "} %u\n", kinds[i].errors);
		cr_assert_neq(strstr(strstr(prom, "\ngpuguard_errors{"), want), NULL, "%s: %s",
			      kinds[i].what, prom);
		/* An audit error is what the unresolved gauge counts, sealed or not. */
		snprintf(want, sizeof(want), "} %u\n",
			 !strcmp(kinds[i].prog, AUDIT) ? kinds[i].errors : 0);
		cr_assert_neq(strstr(strstr(prom, "\ngpuguard_kernel_lookups_unresolved{"), want), NULL,
			      "%s: %s", kinds[i].what, prom);
		/* The late miss alone is counted as one (what its alert rule reads). */
		snprintf(want, sizeof(want), "} %d\n", strstr(kinds[i].what, "late miss") != NULL);
		cr_assert_neq(
			strstr(strstr(prom, "\ngpuguard_kernel_lookups_late_misses_total{"), want),
			NULL, "%s: %s", kinds[i].what, prom);
		free(prom);
		gg_run(&rep, 0, NULL, (const char *[]){ GG_CLI, "report", f.json, NULL });
		cr_assert_eq(gg_run_exit(&rep), kinds[i].errors ? 1 : 0, "%s: %s", kinds[i].what,
			     rep.out);
		/* One ERROR line each; the lines of its stacks are indented under it. */
		cr_assert_eq(gg_count_errors(r.err), kinds[i].errors ? 1 : 0,
			     "%s, named once at verbosity 0: %s", kinds[i].what, r.err);
		if (kinds[i].error_line)
			cr_assert_eq(gg_count_lines(r.err, kinds[i].error_line), 1, "%s", r.err);
		gg_run_free(&rep);
		gg_run_free(&r);
		files_free(&f);
	}
}

/* The verdict comes after the program's own exit handlers: a violation found
 * there (an exit handler registered before gpuguard's, so run after its
 * scan, overruns and frees a buffer: the free's check finds it) is in the
 * JSON, the metrics and the status alike. */
Test(exit, a_violation_found_in_a_late_exit_handler_is_in_the_verdict_and_the_status)
{
	struct files f;
	struct gg_run r;
	char *v, *prom;
	int status;

	files_init(&f);
	status = run_rz(&r,
			(const char *[]){ f.env_json, f.env_metrics, "GPUGUARD_REDZONE=16",
					  "GPUGUARD_EXITCODE=42", "GG_TEST_LATE_OVERRUN=1", NULL },
			(const char *[]){ "alloc:64", NULL });
	cr_assert_neq(strstr(r.err, "app: late free"), NULL, "the late overrun ran: %s", r.err);
	v = gg_json(f.json, "(j['errors'], [x['detected_by'] for x in j['violations']])");
	prom = gg_read_metrics(f.metrics);
	cr_assert_str_eq(v, "(1, ['free'])", "%s", r.err);
	cr_assert_neq(strstr(strstr(prom, "\ngpuguard_errors{"), "} 1\n"), NULL, "%s", prom);
	cr_assert_eq(status, 42, "the JSON says 1 error, the status says %d: %s", status, r.err);
	free(prom);
	free(v);
	gg_run_free(&r);
	files_free(&f);
}

/* Leaks are judged after everything the program runs at exit: memory freed
 * by an exit handler registered before gpuguard's (as a C++ static object's
 * destructor is), or by a library's destructor (run in _dl_fini, after
 * gpuguard's own destructor), is no leak, and --exitcode leaves status 0
 * alone; memory nobody frees is still a leak. Each by exit() and by a
 * return from main. */
Test(exit, memory_freed_by_late_exit_handlers_and_library_destructors_is_no_leak)
{
	static const struct {
		const char *what, *env, *steps[4];
		int leaks;
	} cases[] = {
		{ "an exit handler", "GG_TEST_LATE_FREE=1", { "alloc:64", "alloc:128", NULL }, 0 },
		{ "a library's destructor",
		  "GG_TEST_LATEFREE_LIB=" GG_LATEFREE_LIB,
		  { "alloc:64", "latefree:0", NULL },
		  0 },
		{ "a library's destructor, one left",
		  "GG_TEST_LATEFREE_LIB=" GG_LATEFREE_LIB,
		  { "alloc:64", "alloc:32", "latefree:0", NULL },
		  1 },
		{ "nobody", "GG_TEST_NOTHING=1", { "alloc:64", NULL }, 1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (int by_exit = 0; by_exit < 2; by_exit++) {
			const char *steps[8];
			size_t n = 0;
			struct files f;
			struct gg_run r;
			char *v;
			int status;

			for (; cases[i].steps[n]; n++)
				steps[n] = cases[i].steps[n];
			if (by_exit)
				steps[n++] = "exit:0";
			steps[n] = NULL;
			files_init(&f);
			status = run_rz(&r,
					(const char *[]){ f.env_json, "GPUGUARD_REDZONE=16",
							  "GPUGUARD_LEAK_CHECK=1",
							  "GPUGUARD_EXITCODE=9", cases[i].env, NULL },
					steps);
			v = gg_json(f.json, "(j['errors'], sum(l['count'] for l in j['leaks']))");
			if (cases[i].leaks) {
				cr_expect_eq(status, 9, "%s: %s", cases[i].what, r.err);
				cr_expect_str_eq(v, "(1, 1)", "%s: %s", cases[i].what, r.err);
				cr_expect_eq(gg_count_errors(r.err), 1, "%s: %s", cases[i].what, r.err);
			} else {
				cr_expect_eq(status, 0, "%s: %s", cases[i].what, r.err);
				cr_expect_str_eq(v, "(0, 0)", "%s: %s", cases[i].what, r.err);
				cr_expect_eq(gg_count_errors(r.err), 0, "%s: %s", cases[i].what, r.err);
			}
			free(v);
			gg_run_free(&r);
			files_free(&f);
		}
	}
}

/* A boundary on another thread after the exit report began (an exit
 * handler of the program's, run after gpuguard's, starts it and joins it):
 * the exit's files stay the last word ("ended" set, the leaks judged), and
 * they and the status agree. Labelled (gpuguard_boundary) and launch:N. */
static void assert_exit_files_stay_final(const char *how, const char *boundary)
{
	char env_how[64];
	struct files f;
	struct gg_run r;
	char *v;

	files_init(&f);
	snprintf(env_how, sizeof(env_how), "GG_TEST_LATE_BOUNDARY=%s", how);
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(run_rz(&r,
				    (const char *[]){ f.env_json, f.env_metrics, boundary,
						      "GPUGUARD_LEAK_CHECK=1", "GPUGUARD_EXITCODE=9",
						      env_how, NULL },
				    (const char *[]){ "alloc:64", "free:0", NULL }),
			     0, "%s", r.err);
		cr_assert_neq(strstr(r.err, "app: late "), NULL, "the late boundary ran: %s", r.err);
		v = gg_json(f.json, "j['ended'] is not None and 'leaks' in j and j['errors'] == 0");
		cr_assert_str_eq(v, "True", "a boundary overwrote the exit's summary: %s",
				 gg_read_file(f.json));
		free(v);
		gg_run_free(&r);
	}
	files_free(&f);
}

Test(exit, a_labelled_boundary_after_the_exit_report_never_overwrites_it)
{
	assert_exit_files_stay_final("label", "GPUGUARD_BOUNDARY=");
}

Test(exit, a_launch_boundary_on_another_thread_after_the_exit_report_never_overwrites_it)
{
	assert_exit_files_stay_final("launch", "GPUGUARD_BOUNDARY=launch:1");
}

Test(exit, verbosity_zero_still_records_and_sets_the_exit_code)
{
	struct files f;
	struct gg_run r;

	files_init(&f);
	cr_assert_eq(run_rz(&r,
			    (const char *[]){ f.env_json, "GPUGUARD_REDZONE=16", "GPUGUARD_EXITCODE=5",
					      "GPUGUARD_VERBOSITY=0", NULL },
			    (const char *[]){ "alloc:64", "overrun:0:1", NULL }),
		     5, "%s", r.err);
	cr_assert_eq(gg_count_lines(r.err, "INFO"), 0, "%s", r.err);
	char *v = gg_json(f.json, "(len(j['violations']), j['errors'])");

	cr_assert_str_eq(v, "(1, 1)");
	free(v);
	gg_run_free(&r);
	files_free(&f);
}

Test(exit, the_exit_line_sums_up_at_verbosity_one)
{
	struct gg_run r;

	run_rz(&r, (const char *[]){ "GPUGUARD_REDZONE=16", NULL },
	       (const char *[]){ "alloc:64", "alloc:32", "overrun:1:1", NULL });
	/* One of a kind is said in the singular, to the end of the line. */
	cr_assert_neq(strstr(r.err, "INFO: exit: 1 kernel, 0 missing, 0 late; 2 allocations, "
				    "2 padded; 1 violation\n"),
		      NULL, "%s", r.err);
	cr_assert_eq(gg_count_lines(r.err, "16-byte band: 1 byte changed at offset 0 past the end, "
					   "first 0x"),
		     1, "%s", r.err);
	gg_run_free(&r);
}

/* ---- the report files ---- */

/* A Prometheus text-format check: promtool accepts it (gg_read_metrics);
 * HELP and TYPE before each family, valid names, numeric values, the metrics
 * gpuguard(1) FILES lists, every series labelled with @exe (the program's name) and
 * the pid, and the first line the process line prune-metrics reads. */
static char *assert_prometheus(const char *path, const char *exe)
{
	static const char check[] =
		"import re, sys\n"
		"want = {'gpuguard_kernel_lookups_total', 'gpuguard_kernel_lookups_failed_total',\n"
		"  'gpuguard_kernel_lookups_unresolved', 'gpuguard_seals_total',\n"
		"  'gpuguard_kernel_lookups_unresolved_required',\n"
		"  'gpuguard_kernel_lookups_late_misses_total', 'gpuguard_allocations_guarded_total',\n"
		"  'gpuguard_redzone_bytes',\n"
		"  'gpuguard_allocations_total', 'gpuguard_allocations_live',\n"
		"  'gpuguard_allocation_bytes_live', 'gpuguard_redzone_scans_total',\n"
		"  'gpuguard_redzone_violations_total', 'gpuguard_errors',\n"
		"  'gpuguard_allocations_unguarded_total', 'gpuguard_launch_errors_total',\n"
		"  'gpuguard_module_loads_failed_total', 'gpuguard_violations_total'}\n"
		"reasons = {'off', 'min_idx', 'zero_size', 'overflow', 'capturing', 'no_context',\n"
		"  'registry_full', 'oom_fallback', 'driver', 'vmm'}\n"
		"kinds = {'overrun', 'double_free', 'invalid_free'}\n"
		"labelled = {'gpuguard_allocations_unguarded_total': 'reason',\n"
		"  'gpuguard_violations_total': 'kind'}\n"
		"helped, typed, seen, values = set(), {}, set(), {}\n"
		"lines = open(sys.argv[1]).read().split('\\n')\n"
		"assert lines.pop() == '', 'no newline at the end'\n"
		"first = re.fullmatch(r'# gpuguard-process pid=([0-9]+) starttime=[0-9]+ "
		"boot_id=[-0-9a-f]+ pidns=[0-9]+',\n"
		"  lines[0])\n"
		"assert first, 'first line: ' + lines[0]\n"
		"for line in lines[1:]:\n"
		"  m = re.fullmatch(r'# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .+', line)\n"
		"  if m: helped.add(m[1]); continue\n"
		"  m = re.fullmatch(r'# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge)', line)\n"
		"  if m: typed[m[1]] = m[2]; continue\n"
		"  m = "
		"re.fullmatch(r'([a-zA-Z_:][a-zA-Z0-9_:]*)\\{exe=\"([^\"]*)\",pid=\"([0-9]+)\"(?:,("
		"reason|kind)=\"([a-z_]+)\")?\\} ([0-9.e+-]+)', line)\n"
		"  assert m, 'bad line: ' + line\n"
		"  assert m[2] == sys.argv[2] and m[3] == first[1], line\n"
		"  assert m[1] in helped and m[1] in typed, 'no HELP/TYPE before ' + m[1]\n"
		"  assert typed[m[1]] != 'counter' or m[1].endswith('_total'), m[1]\n"
		"  assert m[4] == labelled.get(m[1]), line\n"
		"  if m[4] == 'reason': reasons.discard(m[5])\n"
		"  if m[4] == 'kind': kinds.discard(m[5])\n"
		"  seen.add(m[1]); values[m[1] + ('.' + m[5] if m[5] else '')] = float(m[6])\n"
		"assert seen == want, seen ^ want\n"
		"assert not reasons, 'no series for reasons %s' % reasons\n"
		"assert not kinds, 'no series for kinds %s' % kinds\n"
		"print(' '.join('%s=%g' % kv for kv in sorted(values.items())))\n";
	struct gg_run r;

	char *values;

	free(gg_read_metrics(path));
	gg_run(&r, 0, NULL, (const char *[]){ "/usr/bin/python3", "-c", check, path, exe, NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	values = strdup(r.out);
	gg_run_free(&r);
	return values; /* "name=value ..." */
}

/* The summary @path validates against docs/summary.schema.json (gg_json
 * validates every summary it reads; this says so where nothing else is read). */
static void assert_schema(const char *path)
{
	char *why = gg_summary_invalid(path);

	cr_assert_null(why, "%s", why);
}

/* @src with the Python statement @stmt run over it (as `j`), written to @dst. */
static void mutate(const char *src, const char *dst, const char *stmt)
{
	static const char script[] = "import json, sys\n"
				     "j = json.load(open(sys.argv[1]))\n"
				     "exec(sys.argv[3])\n"
				     "json.dump(j, open(sys.argv[2], 'w'))\n";
	struct gg_run r;

	gg_run(&r, 0, NULL, (const char *[]){ "/usr/bin/python3", "-c", script, src, dst, stmt, NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	gg_run_free(&r);
}

/* The schema can fail: a real summary (a violation, a site) with one member
 * taken away or made wrong no longer validates, and the message names it. */
Test(exit, the_schema_rejects_a_summary_missing_a_member_or_with_a_negative_count)
{
	static const struct {
		const char *stmt, *want;
	} bad[] = {
		{ "del j['lookups']", "'lookups' is a required property" },
		{ "del j['lookups']['total']", "'total' is a required property" },
		{ "del j['violations'][0]['site']", "'site' is a required property" },
		{ "del j['config']['redzone']", "'redzone' is a required property" },
		{ "j['allocations']['live'] = -1",
		  "$.allocations.live: -1 is less than the minimum of 0" },
		{ "j['errors'] = -2", "$.errors: -2 is less than the minimum of 0" },
		{ "j['violations'][0]['pad_bytes'] = 1.5", "1.5 is not of type 'integer'" },
		{ "j['schema'] = 2", "$.schema: 1 was expected" },
		{ "j['lookups']['bogus'] = 0", "Additional properties are not allowed ('bogus'" },
		{ "j['violations'][0]['site']['offset'] = 12",
		  "$.violations[0].site.offset: 12 is not of type 'string'" },
		{ "j['violations'][0]['site']['frames'] = []",
		  "'in_static_runtime' is a dependency of 'frames'" },
	};
	struct files f;
	struct gg_run r;
	char bad_json[160];

	files_init(&f);
	cr_assert_eq(run_rz(&r, (const char *[]){ f.env_json, "GPUGUARD_REDZONE=16", NULL },
			    (const char *[]){ "alloc:64", "overrun:0:2", "free:0", NULL }),
		     0, "%s", r.err);
	assert_schema(f.json);
	snprintf(bad_json, sizeof(bad_json), "%s/bad.json", f.dir);
	mutate(f.json, bad_json, "pass");
	assert_schema(bad_json);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *why;

		mutate(f.json, bad_json, bad[i].stmt);
		why = gg_summary_invalid(bad_json);
		cr_assert_not_null(why, "%s: still valid", bad[i].stmt);
		cr_expect_neq(strstr(why, bad[i].want), NULL, "%s: %s", bad[i].stmt, why);
		free(why);
	}
	gg_run_free(&r);
	files_free(&f);
}

Test(exit, json_and_metrics_are_written_at_exit_and_follow_their_formats)
{
	struct files f;
	struct gg_run r;

	files_init(&f);
	cr_assert_eq(run_rz(&r,
			    (const char *[]){ f.env_json, f.env_metrics, "GPUGUARD_REDZONE=16",
					      "GPUGUARD_BOUNDARY=sync:1", NULL },
			    (const char *[]){ "alloc:64", "alloc:32", "overrun:0:2", "sync", "free:1",
					      NULL }),
		     0, "%s", r.err);
	assert_schema(f.json);
	char *prom = assert_prometheus(f.metrics, "app-redzone");
	char *v = gg_json(f.json, "(j['seals'], j['allocations']['live'], len(j['violations']))");

	cr_assert_str_eq(v, "(1, 1, 1)");
	free(v);
	/* Both allocations got their band: every reason's series is there, at 0. */
	cr_assert_str_eq(prom, "gpuguard_allocation_bytes_live=64 "
			       "gpuguard_allocations_guarded_total=2 gpuguard_allocations_live=1 "
			       "gpuguard_allocations_total=2 "
			       "gpuguard_allocations_unguarded_total.capturing=0 "
			       "gpuguard_allocations_unguarded_total.driver=0 "
			       "gpuguard_allocations_unguarded_total.min_idx=0 "
			       "gpuguard_allocations_unguarded_total.no_context=0 "
			       "gpuguard_allocations_unguarded_total.off=0 "
			       "gpuguard_allocations_unguarded_total.oom_fallback=0 "
			       "gpuguard_allocations_unguarded_total.overflow=0 "
			       "gpuguard_allocations_unguarded_total.registry_full=0 "
			       "gpuguard_allocations_unguarded_total.vmm=0 "
			       "gpuguard_allocations_unguarded_total.zero_size=0 gpuguard_errors=1 "
			       "gpuguard_kernel_lookups_failed_total=0 "
			       "gpuguard_kernel_lookups_late_misses_total=0 "
			       "gpuguard_kernel_lookups_total=1 gpuguard_kernel_lookups_unresolved=0 "
			       "gpuguard_kernel_lookups_unresolved_required=0 "
			       "gpuguard_launch_errors_total=0 gpuguard_module_loads_failed_total=0 "
			       "gpuguard_redzone_bytes=16 "
			       "gpuguard_redzone_scans_total=2 gpuguard_redzone_violations_total=1 "
			       "gpuguard_seals_total=1 gpuguard_violations_total.api_overrun=0 "
			       "gpuguard_violations_total.dangling_launch=0 "
			       "gpuguard_violations_total.double_free=0 "
			       "gpuguard_violations_total.invalid_free=0 "
			       "gpuguard_violations_total.overrun=1 "
			       "gpuguard_violations_total.underflow=0 "
			       "gpuguard_violations_total.write_after_free=0\n");
	free(prom);
	gg_run_free(&r);
	files_free(&f);
}

/* The exe label is the program's file name, escaped as the text format
 * says (backslash, double quote, newline), a byte that is not UTF-8 as '?',
 * and promtool accepts the file. */
Test(exit, the_exe_label_is_the_program_name_escaped_for_the_text_format)
{
	struct files f;
	struct gg_run r;
	char prog[192], cmd[512], *prom;

	files_init(&f);
	snprintf(prog, sizeof(prog), "%s/my \"app\\\\v2\nnew\xff", f.dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", RZ, prog);
	cr_assert_eq(system(cmd), 0);
	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE,
	       (const char *[]){ "GG_TEST_PTX=" GG_PTX, f.env_metrics, "GPUGUARD_REDZONE=16", NULL },
	       (const char *[]){ prog, "alloc:64", NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	prom = gg_read_metrics(f.metrics);
	cr_assert_neq(
		strstr(prom, "\ngpuguard_allocations_total{exe=\"my \\\"app\\\\\\\\v2\\nnew?\",pid=\""),
		NULL, "%s", prom);
	free(prom);
	gg_run_free(&r);
	files_free(&f);
}

Test(exit, an_abort_leaves_complete_json_and_metrics)
{
	struct files f;
	struct gg_run r;

	files_init(&f);
	cr_assert_eq(run_audit(&r,
			       (const char *[]){ f.env_json, f.env_metrics,
						 "GPUGUARD_BOUNDARY=launch:1", NULL },
			       (const char *[]){ "file:" GG_PTX, "get:nope", "launch", NULL }),
		     -SIGABRT, "%s", r.err);
	assert_schema(f.json);
	char *prom = assert_prometheus(f.metrics, "app-audit");

	/* Written after the gate counted, before the abort. */
	cr_assert_neq(strstr(prom, "gpuguard_kernel_lookups_unresolved=1 "), NULL, "%s", prom);
	cr_assert_neq(strstr(prom, "gpuguard_kernel_lookups_unresolved_required=1 "), NULL, "%s", prom);
	cr_assert_neq(strstr(prom, "gpuguard_seals_total=1"), NULL, "%s", prom);
	free(prom);
	gg_run_free(&r);
	files_free(&f);

	/* The red-zone abort too. */
	files_init(&f);
	cr_assert_eq(run_rz(&r,
			    (const char *[]){ f.env_json, f.env_metrics, "GPUGUARD_REDZONE=16",
					      "GPUGUARD_HALT_ON_ERROR=1", NULL },
			    (const char *[]){ "alloc:64", "overrun:0:1", "free:0", NULL }),
		     -SIGABRT, "%s", r.err);
	assert_schema(f.json);
	prom = assert_prometheus(f.metrics, "app-redzone");
	cr_assert_neq(strstr(prom, "gpuguard_redzone_violations_total=1 "), NULL, "%s", prom);
	free(prom);
	gg_run_free(&r);
	files_free(&f);
}

Test(exit, a_file_that_cannot_be_written_is_an_error_not_a_crash)
{
	struct gg_run r;

	cr_assert_eq(run_rz(&r,
			    (const char *[]){ "GPUGUARD_SUMMARY_JSON=/nonexistent/dir/s.json",
					      "GPUGUARD_METRICS=/nonexistent/dir/m.prom", NULL },
			    (const char *[]){ "alloc:64", NULL }),
		     0, "%s", r.err);
	cr_assert_eq(gg_count_lines(r.err, "ERROR: cannot write GPUGUARD_SUMMARY_JSON "
					   "\"/nonexistent/dir/s.json\": No such file or directory"),
		     1, "%s", r.err);
	cr_assert_eq(gg_count_lines(r.err, "ERROR: cannot write GPUGUARD_METRICS"), 1, "%s", r.err);
	gg_run_free(&r);
}

Test(exit, a_report_path_that_cannot_be_written_is_named_when_the_shim_starts)
{
	char dir[64], go[128], step[160], env_log[160], env_json[160], env_metrics[160];
	char want[512], err[8192];
	struct gg_spawn s;
	struct gg_run r;
	ssize_t n;

	gg_test_dir(dir, sizeof(dir));
	snprintf(go, sizeof(go), "%s/go", dir);
	snprintf(step, sizeof(step), "wait:%s", go);
	snprintf(env_log, sizeof(env_log), "GPUGUARD_LOG=%s/out/gpuguard.log", dir);
	snprintf(env_json, sizeof(env_json), "GPUGUARD_SUMMARY_JSON=%s/out/s.%%p.json", dir);
	snprintf(env_metrics, sizeof(env_metrics), "GPUGUARD_METRICS=%s", dir);
	gg_spawn(&s, GG_RUN_SHIM | GG_RUN_FAKE,
		 (const char *[]){ env_log, env_json, env_metrics, "GPUGUARD_VERBOSITY=0",
				   "GG_TEST_PTX=" GG_PTX, NULL },
		 (const char *[]){ RZ, "alloc:64", step, NULL });
	/* Said by the first CUDA call, so before the program goes on. */
	cr_assert(gg_spawn_wait_output(&s, "alloc 64:", 30));
	n = pread(s.err_fd, err, sizeof(err) - 1, 0);
	cr_assert_geq(n, 0);
	err[n] = '\0';
	snprintf(want, sizeof(want),
		 "ERROR: GPUGUARD_LOG=\"%s/out/gpuguard.log\": the directory "
		 "\"%s/out\" does not exist; logging to stderr",
		 dir, dir);
	cr_assert_eq(gg_count_lines(err, want), 1, "%s", err);
	snprintf(want, sizeof(want),
		 "ERROR: GPUGUARD_SUMMARY_JSON=\"%s/out/s.%%p.json\": the "
		 "directory \"%s/out\" does not exist; the JSON summary cannot be written there "
		 "until that changes",
		 dir, dir);
	cr_assert_eq(gg_count_lines(err, want), 1, "%s", err);
	snprintf(want, sizeof(want),
		 "ERROR: GPUGUARD_METRICS=\"%s\": \"%s\" is a directory; the "
		 "metrics cannot be written there until that changes",
		 dir, dir);
	cr_assert_eq(gg_count_lines(err, want), 1, "%s", err);
	touch_file(go);
	gg_spawn_finish(&s, &r);
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	gg_run_free(&r);
}

/* ---- every variable ---- */

/* (docs/how-it-works.md, "Reading the settings"): a misspelt variable must
 * not silently turn a check off; these WARNs change what is checked, so even verbosity 0 prints them. */
Test(exit, an_unknown_variable_is_named_with_the_nearest_known_one_at_verbosity_zero)
{
	struct gg_run r;

	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE,
	       (const char *[]){ "GG_TEST_PTX=" GG_PTX, "GPUGUARD_VERBOSITY=0", "GPUGUARD_REDZNE=64",
				 "GPUGUARD_NOTHING_LIKE_IT=1", "GPUGUARD_REDZONE_FILL=0x100", NULL },
	       (const char *[]){ RZ, "alloc:64", NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_assert_eq(gg_count_lines(r.err, "WARN: GPUGUARD_REDZNE is not a gpuguard variable; it is "
					   "ignored (did you mean GPUGUARD_REDZONE?"),
		     1, "%s", r.err);
	cr_assert_eq(gg_count_lines(r.err, "WARN: GPUGUARD_NOTHING_LIKE_IT is not a gpuguard "
					   "variable; it is ignored (the variables are listed"),
		     1, "%s", r.err);
	cr_assert_eq(gg_count_lines(r.err, "WARN: GPUGUARD_REDZONE_FILL=\"0x100\" is not valid"), 1,
		     "%s", r.err);
	cr_assert_eq(gg_count_lines(r.err, "gpuguard["), 3, "nothing else at verbosity 0: %s", r.err);
	gg_run_free(&r);
}

Test(exit, every_variable_with_a_bad_value_is_named_once_and_defaults)
{
	static const char *const bad[] = {
		"GPUGUARD_DISABLE=perhaps",
		"GPUGUARD_VERBOSITY=loud",
		"GPUGUARD_EXITCODE=300",
		"GPUGUARD_HALT_ON_ERROR=2",
		"GPUGUARD_ALLOW_UNRESOLVED=yes please",
		"GPUGUARD_SIGNAL=USR9",
		"GPUGUARD_REDZONE=-64",
		"GPUGUARD_REDZONE_MIN_IDX=one",
		"GPUGUARD_REDZONE_TRACE_IDX=0x",
		"GPUGUARD_REDZONE_FILL=0x100",
		"GPUGUARD_REDZONE_POISON=9:2",
		"GPUGUARD_CHECK_ON_FREE=maybe",
		"GPUGUARD_BOUNDARY=launch:x",
		NULL,
	};
	const char *env[32] = { "GG_TEST_PTX=" GG_PTX };
	struct gg_run r;
	size_t k = 1;

	for (const char *const *b = bad; *b; b++)
		env[k++] = *b;
	env[k] = NULL;
	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE, env,
	       (const char *[]){ RZ, "alloc:64", "band:0:16", NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	for (const char *const *b = bad; *b; b++) {
		char want[128];
		const char *eq = strchr(*b, '=');

		snprintf(want, sizeof(want), "WARN: %.*s=\"%s\"", (int)(eq - *b), *b, eq + 1);
		cr_assert_eq(gg_count_lines(r.err, want), 1, "%s:\n%s", want, r.err);
	}
	/* The defaults held: no padding, verbosity 1 (the exit line, no trace). */
	cr_assert_eq(strstr(r.out, "band 0: ee ee"), NULL, "%s", r.out);
	cr_assert_eq(gg_count_lines(r.err, "INFO: exit:"), 1, "%s", r.err);
	cr_assert_eq(gg_count_lines(r.err, "cuMemAlloc_v2("), 0, "%s", r.err);
	gg_run_free(&r);
}

/* node-exporter reads the metrics as another user: 0644 whatever the umask. */
Test(exit, report_files_are_readable_by_all_whatever_the_umask)
{
	struct files f;
	struct gg_run r;
	struct stat st;

	files_init(&f);
	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE,
	       (const char *[]){ f.env_json, f.env_metrics, "GG_TEST_PTX=" GG_PTX, NULL },
	       (const char *[]){ "/bin/sh", "-c", "umask 077; exec \"$0\" \"$@\"", RZ, "alloc:64",
				 NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_assert_eq(stat(f.metrics, &st), 0);
	free(gg_read_metrics(f.metrics));
	cr_expect_eq(st.st_mode & 0777, 0644, "%o", st.st_mode & 0777);
	cr_assert_eq(stat(f.json, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0644, "%o", st.st_mode & 0777);
	gg_run_free(&r);
	files_free(&f);
}

/* ---- output files never harm (docs/how-it-works.md, "Reading the settings") ---- */

/* A character device node @name in a fresh directory @dir, major:minor as
 * /dev/null (1:3) or /dev/full (1:7): the host's own device nodes are never
 * put at risk by a test. Skips where nodes cannot be made (not root). */
static void device_node(char *dir, size_t dir_cap, char *node, size_t node_cap, const char *name,
			unsigned minor)
{
	gg_test_dir(dir, dir_cap);
	snprintf(node, node_cap, "%s/%s", dir, name);
	if (mknod(node, S_IFCHR | 0666, makedev(1, minor))) {
		rmdir(dir);
		cr_skip_test("mknod: %s (device nodes need root)", strerror(errno));
	}
}

static void assert_device(const char *node, unsigned minor)
{
	struct stat st;

	cr_assert_eq(stat(node, &st), 0, "%s", node);
	cr_assert(S_ISCHR(st.st_mode), "%s is no longer a character device (mode %o)", node,
		  st.st_mode);
	cr_assert_eq(st.st_rdev, makedev(1, minor));
}

Test(exit, a_summary_into_a_character_device_is_written_in_place_never_replaced)
{
	char dir[64], node[96], env_json[160], env_metrics[160];
	struct gg_run r;

	device_node(dir, sizeof(dir), node, sizeof(node), "null", 3);
	snprintf(env_json, sizeof(env_json), "GPUGUARD_SUMMARY_JSON=%s", node);
	snprintf(env_metrics, sizeof(env_metrics), "GPUGUARD_METRICS=%s", node);
	cr_assert_eq(run_rz(&r,
			    (const char *[]){ env_json, env_metrics, "GPUGUARD_BOUNDARY=sync:1", NULL },
			    (const char *[]){ "alloc:64", "sync", NULL }),
		     0, "%s", r.err);
	cr_assert_eq(gg_count_lines(r.err, "] ERROR: "), 0, "%s", r.err);
	assert_device(node, 3);
	cr_assert_eq(gg_dir_entries(dir), 1, "a temporary file was left behind");
	gg_run_free(&r);
}

Test(exit, a_summary_into_a_fifo_is_refused_and_the_fifo_kept, .timeout = 60)
{
	char dir[64], fifo[96], env_json[160], want[256];
	struct gg_run r;
	struct stat st;

	gg_test_dir(dir, sizeof(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	snprintf(env_json, sizeof(env_json), "GPUGUARD_SUMMARY_JSON=%s", fifo);
	cr_assert_eq(
		run_rz(&r, (const char *[]){ env_json, NULL }, (const char *[]){ "alloc:64", NULL }), 0,
		"%s", r.err);
	/* Said at set-up, and again when it was to be written. */
	snprintf(want, sizeof(want),
		 "ERROR: GPUGUARD_SUMMARY_JSON=\"%s\": it is a FIFO, which could "
		 "block the program",
		 fifo);
	cr_assert_eq(gg_count_lines(r.err, want), 1, "%s", r.err);
	snprintf(want, sizeof(want), "ERROR: cannot write GPUGUARD_SUMMARY_JSON \"%s\": it is a FIFO",
		 fifo);
	cr_assert_eq(gg_count_lines(r.err, want), 1, "%s", r.err);
	cr_assert_eq(stat(fifo, &st), 0);
	cr_assert(S_ISFIFO(st.st_mode), "the FIFO was replaced");
	cr_assert_eq(gg_dir_entries(dir), 1, "a temporary file was left behind");
	gg_run_free(&r);
}

Test(exit, a_log_fifo_with_no_reader_never_blocks_the_program, .timeout = 60)
{
	char dir[64], fifo[96], env_log[160], want[256];
	struct gg_run r;

	gg_test_dir(dir, sizeof(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	snprintf(env_log, sizeof(env_log), "GPUGUARD_LOG=%s", fifo);
	cr_assert_eq(
		run_rz(&r, (const char *[]){ env_log, NULL }, (const char *[]){ "alloc:64", NULL }), 0,
		"%s", r.err);
	cr_assert_neq(strstr(r.out, "done\n"), NULL, "%s", r.out);
	snprintf(want, sizeof(want),
		 "ERROR: GPUGUARD_LOG=\"%s\": it is a FIFO, and opening one with no "
		 "reader would block; logging to stderr",
		 fifo);
	cr_assert_eq(gg_count_lines(r.err, want), 1, "%s", r.err);
	cr_assert_eq(gg_count_lines(r.err, "INFO: exit:"), 1, "%s", r.err);
	gg_run_free(&r);
}

/* Another user plants links at the temporary names (PATH.tmp.PID.N; the
 * shell's pid is the program's, exec keeps it): none is written through. */
Test(exit, a_link_planted_at_a_temporary_name_is_never_written_through)
{
	static const char plant[] =
		"for n in 0 1 2 3 4 5 6 7; do ln -s \"$GG_VICTIM\" \"$GG_JSON.tmp.$$.$n\"; "
		"ln -s \"$GG_VICTIM\" \"$GG_METRICS.tmp.$$.$n\"; done; exec \"$0\" \"$@\"";
	char victim[160], env_victim[192], env_json[192], env_metrics[192], *text;
	struct files f;
	struct gg_run r;
	struct stat st;
	FILE *v;

	files_init(&f);
	snprintf(victim, sizeof(victim), "%s/root-only", f.dir);
	cr_assert_not_null(v = fopen(victim, "w"));
	fputs("secret\n", v);
	fclose(v);
	cr_assert_eq(chmod(victim, 0600), 0);
	snprintf(env_victim, sizeof(env_victim), "GG_VICTIM=%s", victim);
	snprintf(env_json, sizeof(env_json), "GG_JSON=%s", f.json);
	snprintf(env_metrics, sizeof(env_metrics), "GG_METRICS=%s", f.metrics);
	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE,
	       (const char *[]){ f.env_json, f.env_metrics, env_victim, env_json, env_metrics,
				 "GG_TEST_PTX=" GG_PTX, NULL },
	       (const char *[]){ "/bin/sh", "-c", plant, RZ, "alloc:64", NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_assert_eq(gg_count_lines(r.err, "] ERROR: "), 0, "%s", r.err);
	cr_assert_str_eq(text = gg_read_file(victim), "secret\n");
	cr_assert_eq(stat(victim, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600, "%o", st.st_mode & 0777);
	/* Written all the same, under names of their own. */
	assert_schema(f.json);
	cr_assert_eq(stat(f.metrics, &st), 0);
	free(gg_read_metrics(f.metrics));
	cr_assert_eq(st.st_mode & 0777, 0644, "%o", st.st_mode & 0777);
	cr_assert(S_ISREG(st.st_mode));
	gg_run_free(&r);
	files_free(&f);
}

/* ---- symbolic links at the outputs' paths (gpuguard(1), GPUGUARD_LOG) ---- */

struct planted {
	char dir[64], victim[96], node[96], fifo[96], json[128], metrics[128], log[128];
};

/* Links at the JSON (a %p path), metrics and log paths of a fresh directory
 * (mode @dir_mode), planted by the shell that then runs the program (its pid
 * is the program's), owned by @owner (-1: this user): into another user's
 * file, into a character device that refuses every write (/dev/full), and
 * into a FIFO; with @dangling, the metrics link points nowhere instead. */
static void plant_and_run(struct gg_run *r, struct planted *p, mode_t dir_mode, int owner,
			  bool dangling)
{
	char script[1024], pattern[160], env[4][192];
	FILE *v;

	gg_test_dir(p->dir, sizeof(p->dir));
	snprintf(p->node, sizeof(p->node), "%s/full", p->dir);
	if (mknod(p->node, S_IFCHR | 0666, makedev(1, 7)))
		cr_skip_test("mknod: %s (device nodes need root)", strerror(errno));
	if (dangling)
		snprintf(p->node, sizeof(p->node), "%s/nothing", p->dir);
	snprintf(p->victim, sizeof(p->victim), "%s/victim", p->dir);
	cr_assert_not_null(v = fopen(p->victim, "w"));
	fputs("secret\n", v);
	fclose(v);
	cr_assert_eq(chown(p->victim, 65534, 65534), 0);
	cr_assert_eq(chmod(p->victim, 0600), 0);
	snprintf(p->fifo, sizeof(p->fifo), "%s/fifo", p->dir);
	cr_assert_eq(mkfifo(p->fifo, 0600), 0);
	cr_assert_eq(chmod(p->dir, dir_mode), 0);
	snprintf(pattern, sizeof(pattern), "%s/summary.%%p.json", p->dir);
	snprintf(p->metrics, sizeof(p->metrics), "%s/gpuguard.prom", p->dir);
	snprintf(p->log, sizeof(p->log), "%s/gpuguard.log", p->dir);
	snprintf(env[0], sizeof(env[0]), "GPUGUARD_SUMMARY_JSON=%s", pattern);
	snprintf(env[1], sizeof(env[1]), "GPUGUARD_METRICS=%s", p->metrics);
	snprintf(env[2], sizeof(env[2]), "GPUGUARD_LOG=%s", p->log);
	snprintf(script, sizeof(script),
		 "J=%s/summary.$$.json; ln -s %s $J && ln -s %s %s && ln -s %s %s && "
		 "{ [ %d -lt 0 ] || chown -h %d $J %s %s; } && exec \"$0\" \"$@\"",
		 p->dir, p->victim, p->node, p->metrics, p->fifo, p->log, owner, owner, p->metrics,
		 p->log);
	gg_run(r, GG_RUN_SHIM | GG_RUN_FAKE,
	       (const char *[]){ env[0], env[1], env[2], "GG_TEST_PTX=" GG_PTX, NULL },
	       (const char *[]){ "/bin/sh", "-c", script, RZ, "alloc:64", NULL });
	/* The program's pid, from its log lines. */
	cr_assert_not_null(strstr(r->err, "gpuguard["), "%s", r->err);
	snprintf(p->json, sizeof(p->json), "%s/summary.%d.json", p->dir,
		 atoi(strstr(r->err, "gpuguard[") + 9));
}

/* Nothing was written through a link: each is still a link, the victim and
 * the device are as they were, and no error line names the device's ENOSPC. */
static void assert_nothing_followed(const struct gg_run *r, const struct planted *p, const char *why)
{
	const char *paths[] = { p->json, p->metrics, p->log };
	char want[512];
	struct stat st;

	cr_assert_eq(gg_run_exit(r), 0, "%s", r->err);
	cr_assert_str_eq(gg_read_file(p->victim), "secret\n");
	cr_assert_eq(stat(p->victim, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	cr_assert_eq(stat(p->fifo, &st), 0);
	cr_assert(S_ISFIFO(st.st_mode));
	for (size_t i = 0; i < 3; i++) {
		cr_assert_eq(lstat(paths[i], &st), 0, "%s", paths[i]);
		cr_assert(S_ISLNK(st.st_mode), "%s was replaced", paths[i]);
	}
	cr_assert_null(strstr(r->err, "ENOSPC"), "written into the device: %s", r->err);
	snprintf(want, sizeof(want),
		 "ERROR: GPUGUARD_LOG=\"%s\": it is a symbolic link that %s, which gpuguard never "
		 "follows or replaces; logging to stderr\n",
		 p->log, why);
	cr_assert_neq(strstr(r->err, want), NULL, "%s", r->err);
	snprintf(want, sizeof(want),
		 "ERROR: cannot write GPUGUARD_SUMMARY_JSON \"%s\": it is a symbolic link that %s, "
		 "which gpuguard never follows or replaces\n",
		 p->json, why);
	cr_assert_neq(strstr(r->err, want), NULL, "%s", r->err);
	snprintf(want, sizeof(want),
		 "ERROR: cannot write GPUGUARD_METRICS \"%s\": it is a symbolic link that %s, "
		 "which gpuguard never follows or replaces\n",
		 p->metrics, why);
	cr_assert_neq(strstr(r->err, want), NULL, "%s", r->err);
}

/* A root run: another user's links into their file, a device and a FIFO. */
Test(exit, a_link_another_user_planted_at_an_output_path_is_never_followed)
{
	struct planted p;
	struct gg_run r;

	plant_and_run(&r, &p, 0755, 65534, false);
	assert_nothing_followed(&r, &p, "another user owns");
	gg_run_free(&r);
	gg_test_dir_remove(p.dir);
}

/* In a sticky world-writable directory (/tmp) any link could be another
 * user's, whoever owns it now; a dangling one is not created through. */
Test(exit, a_link_in_a_world_writable_directory_is_never_followed_even_dangling)
{
	struct planted p;
	struct gg_run r;
	struct stat st;

	plant_and_run(&r, &p, 01777, -1, true);
	assert_nothing_followed(&r, &p,
				"another user could have put there (its directory is writable by "
				"others)");
	cr_assert_neq(lstat(p.node, &st), 0, "created through a dangling link");
	gg_run_free(&r);
	gg_test_dir_remove(p.dir);
}

Test(exit, a_full_device_is_named_enospc)
{
	char dir[64], node[96], env_json[160], want[256];
	struct gg_run r;

	device_node(dir, sizeof(dir), node, sizeof(node), "full", 7);
	snprintf(env_json, sizeof(env_json), "GPUGUARD_SUMMARY_JSON=%s", node);
	cr_assert_eq(
		run_rz(&r, (const char *[]){ env_json, NULL }, (const char *[]){ "alloc:64", NULL }), 0,
		"%s", r.err);
	snprintf(want, sizeof(want),
		 "ERROR: cannot write GPUGUARD_SUMMARY_JSON \"%s\": No space left "
		 "on device (ENOSPC)\n",
		 node);
	cr_assert_neq(strstr(r.err, want), NULL, "%s", r.err);
	assert_device(node, 7);
	gg_run_free(&r);
}

/* A file system of 64 KiB, filled up: the new summary cannot be written. */
Test(exit, a_full_disk_is_named_enospc_and_the_previous_summary_is_kept)
{
	char filler[160], want[320], *before, *after;
	struct files f;
	struct gg_run r;
	int fd;

	/* The mount lives in this test's own mount namespace: it goes with it. */
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		cr_skip_test("no mount namespace of its own: %s (needs root)", strerror(errno));
	files_init(&f);
	cr_assert_eq(mount("gg-tmpfs", f.dir, "tmpfs", 0, "size=64k"), 0, "%s", strerror(errno));
	cr_assert_eq(
		run_rz(&r, (const char *[]){ f.env_json, NULL }, (const char *[]){ "alloc:64", NULL }),
		0, "%s", r.err);
	assert_schema(f.json);
	before = strdup(gg_read_file(f.json));
	gg_run_free(&r);
	snprintf(filler, sizeof(filler), "%s/filler", f.dir);
	cr_assert_geq(fd = open(filler, O_WRONLY | O_CREAT, 0600), 0);
	for (char block[4096] = { 0 }; write(fd, block, sizeof(block)) > 0;)
		;
	cr_assert_eq(errno, ENOSPC);
	close(fd);
	cr_assert_eq(run_rz(&r, (const char *[]){ f.env_json, NULL },
			    (const char *[]){ "alloc:64", "alloc:128", NULL }),
		     0, "%s", r.err);
	snprintf(want, sizeof(want),
		 "ERROR: cannot write GPUGUARD_SUMMARY_JSON \"%s\": No space left "
		 "on device (ENOSPC); the previous file is kept\n",
		 f.json);
	cr_assert_neq(strstr(r.err, want), NULL, "%s", r.err);
	after = gg_read_file(f.json);
	cr_assert_str_eq(after, before, "the previous summary was not kept whole");
	cr_assert_eq(gg_dir_entries(f.dir), 2, "a temporary file was left behind");
	gg_run_free(&r);
	free(before);
	cr_assert_eq(umount(f.dir), 0);
	files_free(&f);
}

/* ---- ulimit -f: the shim's writes past RLIMIT_FSIZE never raise SIGXFSZ ---- */

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

/* The program under `ulimit -f 2` (1 KiB; dash counts 512-byte blocks), its
 * SIGXFSZ disposition set by @trap ("" for the default), with previous
 * files that the new summary and metrics would outgrow: it ends as without
 * the shim, each file's failure is named (EFBIG), the previous files are
 * kept and no temporary file is left. */
static void run_past_the_size_limit(const char *trap)
{
	char script[256], want[320], *text;
	struct files f;
	struct gg_run r;

	files_init(&f);
	write_text(f.json, "old json\n");
	write_text(f.metrics, "old metrics\n");
	snprintf(script, sizeof(script), "%s ulimit -f 2; exec \"$0\" \"$@\"", trap);
	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE,
	       (const char *[]){ f.env_json, f.env_metrics, "GG_TEST_PTX=" GG_PTX, NULL },
	       (const char *[]){ "/bin/sh", "-c", script, RZ, "alloc:64", "print:20", NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "status %d: %s", gg_run_exit(&r), r.err);
	cr_assert_neq(strstr(r.out, "buffered line 19\n"), NULL, "stdout lost: %s", r.out);
	cr_assert_neq(strstr(r.out, "done\n"), NULL, "%s", r.out);
	snprintf(want, sizeof(want),
		 "ERROR: cannot write GPUGUARD_SUMMARY_JSON \"%s\": File too large (EFBIG); the "
		 "previous file is kept\n",
		 f.json);
	cr_assert_neq(strstr(r.err, want), NULL, "%s", r.err);
	snprintf(want, sizeof(want),
		 "ERROR: cannot write GPUGUARD_METRICS \"%s\": File too large (EFBIG); the previous "
		 "file is kept\n",
		 f.metrics);
	cr_assert_neq(strstr(r.err, want), NULL, "%s", r.err);
	cr_assert_str_eq(text = gg_read_file(f.json), "old json\n");
	cr_assert_str_eq(text = gg_read_file(f.metrics), "old metrics\n");
	cr_assert_eq(gg_dir_entries(f.dir), 2, "a temporary file was left behind");
	gg_run_free(&r);
	files_free(&f);
}

Test(exit, a_summary_past_the_file_size_limit_never_kills_the_program)
{
	run_past_the_size_limit("");
}

Test(exit, a_summary_past_the_file_size_limit_is_named_when_the_program_ignores_sigxfsz)
{
	run_past_the_size_limit("trap '' XFSZ;");
}

/* The log file past the limit: the program ends as without the shim. */
Test(exit, a_log_past_the_file_size_limit_never_kills_the_program)
{
	char log[160], env_log[192], block[2048];
	struct files f;
	struct gg_run r;
	FILE *l;

	files_init(&f);
	snprintf(log, sizeof(log), "%s/gpuguard.log", f.dir);
	snprintf(env_log, sizeof(env_log), "GPUGUARD_LOG=%s", log);
	memset(block, 'x', sizeof(block) - 1);
	block[sizeof(block) - 1] = '\0';
	cr_assert_not_null(l = fopen(log, "w"));
	fputs(block, l);
	fclose(l);
	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE,
	       (const char *[]){ env_log, "GPUGUARD_VERBOSITY=2", "GG_TEST_PTX=" GG_PTX, NULL },
	       (const char *[]){ "/bin/sh", "-c", "ulimit -f 2; exec \"$0\" \"$@\"", RZ, "alloc:64",
				 "print:20", NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "status %d: %s", gg_run_exit(&r), r.err);
	cr_assert_neq(strstr(r.out, "buffered line 19\n"), NULL, "stdout lost: %s", r.out);
	gg_run_free(&r);
	files_free(&f);
}

/* Run @argv under the shim and the fake driver, @env added, with stdout
 * @out and stderr @err, which the caller made: a pipe whose reader has gone,
 * a terminal. The exit status as gg_run_exit gives it. */
static int run_with(const char *const *argv, const char *const *env, int out, int err)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		sigset_t none;

		dup2(out, 1);
		dup2(err, 2);
		signal(SIGPIPE, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setenv("LD_PRELOAD", GG_PRELOAD_PREFIX GG_SHIM, 1);
		setenv("LD_LIBRARY_PATH", GG_FAKE_DIR, 1);
		setenv("GG_TEST_PTX", GG_PTX, 1);
		if (GG_PRELOAD_PREFIX[0])
			setenv("ASAN_OPTIONS", "detect_leaks=0:verify_asan_link_order=0", 1);
		for (; env && *env; env++)
			putenv((char *)*env);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

/* An unlinked temporary file's descriptor, and what it holds. */
static int scratch(void)
{
	char path[] = "/tmp/gg-test-XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	unlink(path);
	return fd;
}

static char *scratch_text(int fd, char *buf, size_t cap)
{
	ssize_t n = pread(fd, buf, cap - 1, 0);

	cr_assert_geq(n, 0);
	buf[n] = '\0';
	return buf;
}

/* Without the shim the program exits 0 with all its output: so with it. */
Test(exit, the_shims_log_never_kills_the_program_with_sigpipe)
{
	static char out[1 << 16];
	int o = scratch(), p[2];

	cr_assert_eq(pipe(p), 0);
	close(p[0]);
	cr_assert_eq(run_with((const char *[]){ RZ, "alloc:64", "print:100", NULL }, NULL, o, p[1]), 0,
		     "%s", scratch_text(o, out, sizeof(out)));
	cr_assert_neq(strstr(scratch_text(o, out, sizeof(out)), "buffered line 99\n"), NULL,
		      "stdout lost: %s", out);
	close(p[1]);
	close(o);
}

/* The program's stdout on a terminal is a character device, but its stdout.
 * (/proc/self/fd/1 rather than /dev/stdout: a shim that renamed over it
 * would fail there, not replace the host's /dev/stdout.) */
Test(exit, a_summary_into_the_programs_terminal_stdout_is_refused)
{
	char err[8192], *tty;
	int master = posix_openpt(O_RDWR | O_NOCTTY), slave, e = scratch();

	cr_assert_geq(master, 0);
	cr_assert_eq(grantpt(master), 0);
	cr_assert_eq(unlockpt(master), 0);
	cr_assert_not_null(tty = ptsname(master));
	cr_assert_geq(slave = open(tty, O_RDWR | O_NOCTTY), 0);
	cr_assert_eq(run_with((const char *[]){ RZ, "alloc:64", NULL },
			      (const char *[]){ "GPUGUARD_SUMMARY_JSON=/proc/self/fd/1", NULL }, slave,
			      e),
		     0, "%s", scratch_text(e, err, sizeof(err)));
	cr_assert_eq(
		gg_count_lines(scratch_text(e, err, sizeof(err)),
			       "ERROR: cannot write GPUGUARD_SUMMARY_JSON \"/proc/self/fd/1\": it is "
			       "the program's stdout, where gpuguard never writes"),
		1, "%s", err);
	close(slave);
	close(master);
	close(e);
}

/* A daemon closes fd 2 and opens its data file, which gets fd 2. */
Test(exit, a_program_that_opens_its_data_file_at_fd_2_finds_no_gpuguard_line_in_it)
{
	char dir[64], data[96], step[128], *text;
	struct gg_run r;

	gg_test_dir(dir, sizeof(dir));
	snprintf(data, sizeof(data), "%s/data", dir);
	snprintf(step, sizeof(step), "open2:%s", data);
	/* fd 2 was stderr at set-up: the log stays there. */
	cr_assert_eq(run_rz(&r, NULL, (const char *[]){ "alloc:64", step, NULL }), 0, "%s", r.err);
	cr_assert_str_eq(text = gg_read_file(data), "data\n");
	cr_assert_eq(gg_count_lines(r.err, "INFO: exit:"), 1, "%s", r.err);
	gg_run_free(&r);
	/* fd 2 closed at set-up: nowhere, rather than into what fd 2 becomes. */
	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE, (const char *[]){ "GG_TEST_PTX=" GG_PTX, NULL },
	       (const char *[]){ "/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&-", RZ, "alloc:64", step,
				 NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_assert_neq(strstr(r.out, "opened 2\n"), NULL, "%s", r.out);
	cr_assert_str_eq(text = gg_read_file(data), "data\n");
	gg_run_free(&r);
}

/* The same, before the first hooked call: with fd 2 open at the start or
 * closed, the data file opened there gets no line of gpuguard's. */
Test(exit, a_data_file_opened_at_fd_2_before_the_first_hooked_call_finds_no_gpuguard_line)
{
	static const char *const scripts[] = { "exec \"$0\" \"$@\"", "exec \"$0\" \"$@\" 2>&-" };
	char dir[64], data[96], env[128], json[96], env_json[128], *text, *v, *invalid;
	struct gg_run r;

	gg_test_dir(dir, sizeof(dir));
	snprintf(data, sizeof(data), "%s/data", dir);
	snprintf(env, sizeof(env), "GG_TEST_EARLY_OPEN2=%s", data);
	snprintf(json, sizeof(json), "%s/s.json", dir);
	snprintf(env_json, sizeof(env_json), "GPUGUARD_SUMMARY_JSON=%s", json);
	for (size_t i = 0; i < 2; i++) {
		gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE,
		       (const char *[]){ "GG_TEST_PTX=" GG_PTX, env, env_json, "GPUGUARD_VERBOSITY=2",
					 NULL },
		       (const char *[]){ "/bin/sh", "-c", scripts[i], RZ, "alloc:64", NULL });
		cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
		cr_assert_str_eq(text = gg_read_file(data), "data\n");
		free(text);
		/* Never silently blind: the summary says what the log could not. */
		v = gg_json(json, "(j['log']['lines_lost'] > 0, 'fd 2' in j['log']['why'])");
		cr_expect_str_eq(v, "(True, True)", "%s", gg_read_file(json));
		free(v);
		invalid = gg_summary_invalid(json);
		cr_expect_null(invalid, "%s", invalid);
		free(invalid);
		gg_run_free(&r);
	}
	/* With fd 2 as it was, nothing is lost and the summary has no "log". */
	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE,
	       (const char *[]){ "GG_TEST_PTX=" GG_PTX, env_json, "GPUGUARD_VERBOSITY=2", NULL },
	       (const char *[]){ RZ, "alloc:64", NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	v = gg_json(json, "'log' in j");
	cr_expect_str_eq(v, "False");
	free(v);
	gg_run_free(&r);
	gg_test_dir_remove(dir);
}
