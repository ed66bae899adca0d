/* Control from the process: gpuguard_boundary(label) and
 * gpuguard_version(), found with dlsym as a program (or ctypes) finds them,
 * and the JSON's "labels". Through apps/app-redzone's label steps. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define RZ GG_APPS "/app-redzone"

static void expect_json(const char *path, const char *expr, const char *want)
{
	char *got = gg_json(path, expr);

	cr_expect_str_eq(got, want, "%s", expr);
	free(got);
}

static void expect_out(const struct gg_run *r, const char *line)
{
	cr_expect_not_null(strstr(r->out, line), "no '%s' in:\n%s\nstderr:\n%s", line, r->out, r->err);
}

Test(control, a_labelled_boundary_returns_the_errors_found_since_the_labelled_boundary_before)
{
	struct gg_app_run a;
	struct gg_run report;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
		   (const char *[]){ "label:clean", "alloc:100", "overrun:0:8", "label:dirty",
				     "label:again", "alloc:64", "poke:1:4", "poke:1:2", "label:twice",
				     NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	expect_out(&a.r, "label clean: 0\n");
	expect_out(&a.r, "label dirty: 1\n");
	expect_out(&a.r, "label again: 0\n");
	expect_out(&a.r, "label twice: 1\n");
	/* Only the labels that found something, each with the ERROR lines the
	 * log received since the one before, word for word. */
	expect_json(
		a.json,
		"[(l['label'], l['boundary'], l['errors'], l['lines_dropped']) for l in j['labels']]",
		"[('dirty', 2, 1, 0), ('twice', 4, 1, 0)]");
	expect_json(a.json, "j['labels_omitted']", "0");
	cr_expect_eq(gg_count_lines(a.r.err, "labels_omitted"), 0, "%s", a.r.err);
	expect_json(a.json,
		    "[sum('red zone violation (scan): allocation #%d ' % i in x for x in l['lines']) "
		    "for i, l in enumerate(j['labels'])]",
		    "[1, 1]");
	expect_json(a.json,
		    "all(any(x.endswith('ERROR:   allocation stack:') for x in l['lines']) and "
		    "all(x.startswith('gpuguard[') and ' ERROR: ' in x for x in l['lines']) "
		    "for l in j['labels'])",
		    "True");
	cr_expect_eq(gg_count_lines(a.r.err, "] ERROR: red zone violation (scan)"), 2, "%s", a.r.err);
	/* gpuguard report groups them by label (a pytest test's node id). */
	gg_run(&report, 0, NULL, (const char *[]){ GG_CLI, "report", a.json, NULL });
	cr_expect_eq(gg_run_exit(&report), 1, "%s%s", report.out, report.err);
	cr_expect_not_null(strstr(report.out,
				  "\nfindings by test: 2 tests\n  dirty: 1 error\n"
				  "      red zone violation (scan): allocation #0 of 100 bytes"),
			   "%s", report.out);
	cr_expect_not_null(strstr(report.out, "\n  twice: 1 error\n      red zone violation (scan): "
					      "allocation #1 of 64 bytes"),
			   "%s", report.out);
	gg_run_free(&report);
	for (int i = 0; i < 2; i++) {
		char expr[64], *lines;

		snprintf(expr, sizeof(expr), "'\\n'.join(j['labels'][%d]['lines'])", i);
		lines = gg_json(a.json, expr);
		cr_expect_not_null(strstr(a.r.err, lines),
				   "label %d's lines are not the log's:\n%s\nlog:\n%s", i, lines,
				   a.r.err);
		free(lines);
	}
	gg_app_run_free(&a);
}

Test(control,
     boundary_is_minus_one_before_set_up_when_disabled_in_a_callback_and_absent_without_the_shim)
{
	struct gg_app_run a;
	struct gg_run plain;

	/* Before any hooked call: nothing set up, nothing to check. */
	gg_app_run(&a, RZ, (const char *[]){ "GG_TEST_EARLY_LABEL=early", NULL },
		   (const char *[]){ "label:late", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	expect_out(&a.r, "label early: -1\n");
	expect_out(&a.r, "label late: 0\n");
	gg_app_run_free(&a);

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_DISABLE=1", "GPUGUARD_REDZONE=64", NULL },
		   (const char *[]){ "alloc:100", "overrun:0:8", "label:disabled", "version", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	expect_out(&a.r, "label disabled: -1\n");
	expect_out(&a.r, "version: " GG_TEST_VERSION "\n");
	cr_expect_null(strstr(a.r.err, "gpuguard"), "%s", a.r.err);
	gg_app_run_free(&a);

	/* From a stream callback, inside a driver call: no boundary there. */
	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
		   (const char *[]){ "alloc:100", "overrun:0:8", "cblabel", "label:after", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	expect_out(&a.r, "label in callback: -1\n");
	expect_out(&a.r, "label after: 1\n");
	gg_app_run_free(&a);

	gg_run(&plain, GG_RUN_FAKE, (const char *[]){ "GG_TEST_PTX=" GG_PTX, NULL },
	       (const char *[]){ RZ, "label:none", "version", NULL });
	cr_assert_eq(gg_run_exit(&plain), 0, "%s", plain.err);
	expect_out(&plain, "label none: absent\n");
	expect_out(&plain, "version: absent\n");
	gg_run_free(&plain);
}

Test(control, version_is_the_shims)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ, NULL, (const char *[]){ "version", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	expect_out(&a.r, "version: " GG_TEST_VERSION "\n");
	expect_json(a.json, "j['version']", GG_TEST_VERSION);
	gg_app_run_free(&a);
}

/* A forked child that overruns a buffer of its own: its finding is its own
 * (its exit reports it), never the parent's next label. */
Test(control, a_forked_childs_findings_are_not_the_parents_label)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
		   (const char *[]){ "label:before", "child:overrun", "label:after", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	expect_out(&a.r, "child overrun exited 0\n");
	expect_out(&a.r, "label after: 0\n");
	cr_expect_eq(gg_count_lines(a.r.err, "] ERROR: red zone violation"), 1, "%s", a.r.err);
	expect_json(a.json, "j['labels']", "[]");
	gg_app_run_free(&a);
}

/* From many threads at once, each its own boundary in turn. */
Test(control, labelled_boundaries_from_many_threads_at_once)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
		   (const char *[]){ "alloc:100", "labels:8:25", "overrun:0:8", "label:last", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	expect_out(&a.r, "labels: 0\n");
	expect_out(&a.r, "label last: 1\n");
	expect_json(a.json, "[(l['label'], l['boundary']) for l in j['labels']]", "[('last', 201)]");
	/* No seal table per labelled boundary: the log is not a table per test. */
	cr_expect_eq(gg_count_lines(a.r.err, "] INFO: seal "), 0, "%s", a.r.err);
	gg_app_run_free(&a);
}

/* Past the 4096 labels a summary keeps, a label that found something is
 * counted (labels_omitted), warned of once, the moment the first is left
 * out, and gpuguard report says how many tests it could not attribute; a
 * label that found nothing is no omission. */
Test(control, labels_past_the_summarys_room_are_counted_and_said, .timeout = 600)
{
	struct gg_app_run a;
	struct gg_run report;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=16", "GPUGUARD_STACK_DEPTH=1", NULL },
		   (const char *[]){ "dirtylabels:4100", "label:clean", "alloc:64", "overrun:0:1",
				     "label:late", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	expect_out(&a.r, "dirtylabels: 4100\n");
	expect_out(&a.r, "label clean: 0\n");
	expect_out(&a.r, "label late: 1\n");
	expect_json(a.json, "(len(j['labels']), j['labels'][-1]['label'], j['labels_omitted'])",
		    "(4096, 'dirty-4095', 5)");
	cr_expect_eq(gg_count_lines(a.r.err, "] WARN: labelled boundaries: the summary keeps the "
					     "first 4096 labels that found something; \"dirty-4096\" "
					     "and those after it"),
		     1, "%s", a.r.err);
	cr_expect_eq(gg_count_lines(a.r.err, "labels_omitted"), 1);
	gg_run(&report, 0, NULL, (const char *[]){ GG_CLI, "report", a.json, NULL });
	cr_expect_eq(gg_run_exit(&report), 1, "%s", report.err);
	cr_expect_not_null(strstr(report.out, "\nfindings by test: 4096 tests\n  5 more tests found "
					      "something that could not be attributed: the summary "
					      "left their labels out (labels_omitted)"),
			   "%.2000s", report.out);
	gg_run_free(&report);
	gg_app_run_free(&a);
}

/* A label's bytes come back exactly from the JSON, whatever they are:
 * bytes that are no UTF-8 (a file name's), a surrogate's encoding, quotes,
 * backslashes and control characters; Python reads them back with
 * surrogateescape, and gpuguard report reads the summary. */
Test(control, a_labels_bytes_round_trip_through_the_json_exactly)
{
	static const char label[] = "t\xff\xe9.py::a\"b\\c\x01\x7f\xed\xa0\x80\xc3\xa9[\xe2\x82]";
	char arg[64];
	struct gg_app_run a;
	struct gg_run report;

	snprintf(arg, sizeof(arg), "label:%s", label);
	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
		   (const char *[]){ "alloc:100", "overrun:0:8", arg, NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	expect_json(a.json, "j['labels'][0]['label'].encode('utf-8', 'surrogateescape')",
		    "b't\\xff\\xe9.py::a\"b\\\\c\\x01\\x7f\\xed\\xa0\\x80\\xc3\\xa9[\\xe2\\x82]'");
	gg_run(&report, 0, NULL, (const char *[]){ GG_CLI, "report", a.json, NULL });
	cr_expect_eq(gg_run_exit(&report), 1, "%s%s", report.out, report.err);
	cr_expect_not_null(strstr(report.out, "\nfindings by test: 1 test\n"), "%s%s", report.out,
			   report.err);
	gg_run_free(&report);
	gg_app_run_free(&a);
}

/* Issue "never harm the host" round 3, 2: gpuguard_boundary from a signal
 * handler that interrupted a labelled boundary on the same thread waited
 * forever on the boundary's own lock. A handler's call that interrupted any
 * of the shim's work holding a lock on its thread is refused (-1) at once:
 * the boundary (the fake driver raises the signal inside the scan's
 * cuStreamSynchronize), a hook (inside the driver call a hook forwards), the
 * exit report (its scan), and the fork handlers (the program's own prepare
 * handler runs while the shim's hold their locks). A watchdog in the app
 * turns a hang into status 97. */
Test(control, a_boundary_from_a_handler_that_interrupted_the_shims_work_is_refused_at_once)
{
	static const struct {
		const char *what, *env, *steps[8], *after;
	} cases[] = {
		{ "a labelled boundary",
		  NULL,
		  { "raisein:cuStreamSynchronize:12", "label:outer", "label:next", NULL },
		  "label outer: 0\nlabel next: 0\n" },
		{ "a hook",
		  NULL,
		  { "raisein:cuMemAlloc_v2:12", "alloc:32", "label:next", NULL },
		  "label next: 0\n" },
		{ "the exit report", NULL, { "raisein:cuStreamSynchronize:12", NULL }, "" },
		{ "the fork handlers",
		  "GG_TEST_EARLY_ATFORK=12",
		  { "child:clean", "label:next", NULL },
		  "child clean exited 0\nlabel next: 0\n" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *steps[16] = { "watchdog:20", "labelhandler:12", "alloc:64" };
		size_t n = 3;
		struct gg_app_run a;
		char *invalid;

		for (size_t k = 0; cases[i].steps[k]; k++)
			steps[n++] = cases[i].steps[k];
		steps[n] = NULL;
		gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", cases[i].env, NULL },
			   steps);
		cr_expect_eq(gg_run_exit(&a.r), 0, "%s: %s", cases[i].what, a.r.err);
		cr_expect_eq(gg_count_lines(a.r.out, "handler label: -1"), 1,
			     "%s: the handler's boundary, refused once:\n%s\nstderr:\n%s",
			     cases[i].what, a.r.out, a.r.err);
		cr_expect_not_null(strstr(a.r.out, cases[i].after), "%s: %s", cases[i].what, a.r.out);
		cr_expect_eq(gg_count_errors(a.r.err), 0, "%s: %s", cases[i].what, a.r.err);
		invalid = gg_summary_invalid(a.json);
		cr_expect_null(invalid, "%s: %s", cases[i].what, invalid);
		free(invalid);
		gg_app_run_free(&a);
	}
}

/* The same for a handler that calls exit() while a labelled boundary runs
 * on its thread: the exit report would wait on the boundary's locks, so the
 * process ends as asked, unreported, as with _exit (test-fork.c); and with
 * no boundary running, exit() from a handler reports as ever. */
Test(control, an_exit_from_a_handler_that_interrupted_a_boundary_ends_the_process_unreported)
{
	struct gg_app_run a;
	char *invalid;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
		   (const char *[]){ "watchdog:20", "exithandler:12:3", "alloc:64",
				     "raisein:cuStreamSynchronize:12", "label:outer", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 3, "%s", a.r.err);
	cr_expect_null(strstr(a.r.out, "label outer"), "%s", a.r.out);
	cr_expect_null(strstr(a.r.err, "watchdog"), "%s", a.r.err);
	cr_expect_eq(access(a.json, F_OK), -1, "a report was written");
	gg_app_run_free(&a);

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
		   (const char *[]){ "watchdog:20", "exithandler:12:3", "alloc:64", "overrun:0:4",
				     "raise:12", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 3, "%s", a.r.err);
	invalid = gg_summary_invalid(a.json);
	cr_expect_null(invalid, "%s", invalid);
	free(invalid);
	expect_json(a.json, "[v['detected_by'] for v in j['violations']]", "['exit']");
	gg_app_run_free(&a);
}

/* Outside the shim's work, the same handler runs its boundary. */
Test(control, a_boundary_from_a_handler_that_interrupted_the_program_runs)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
		   (const char *[]){ "watchdog:20", "labelhandler:12", "alloc:64", "overrun:0:4",
				     "raise:12", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	expect_out(&a.r, "handler label: 1\n");
	expect_json(a.json, "[l['label'] for l in j['labels']]", "['handler']");
	gg_app_run_free(&a);
}
