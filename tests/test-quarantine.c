/* The quarantine (docs/how-it-works.md, "Quarantine"): freed guarded
 * allocations held back from the driver and checked when they leave
 * (write_after_free), launches given them (dangling_launch), and a second
 * free of one (double_free). Through app-redzone and the fake driver, whose
 * kernels run on the host in stream order when their stream is waited for. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "options/config.h"

#define RZ GG_APPS "/app-redzone"

static void assert_json(struct gg_app_run *a, const char *expr, const char *want)
{
	char *got = gg_json(a->json, expr);

	cr_assert_str_eq(got, want, "%s\ngot:  %s\nwant: %s\nstdout:\n%s\nstderr:\n%s", expr, got, want,
			 a->r.out, a->r.err);
	free(got);
}

/* What app-redzone printed, with and without the shim: the same
 * (tests/test-invariants.c,
 * Test(invariants, stdout_is_byte_for_byte_the_same)). */
static void assert_same_output(const char *const *steps, const char *shimmed)
{
	const char *args[32] = { RZ };
	struct gg_run r;
	size_t n = 1;

	for (; steps[n - 1] && n < 31; n++)
		args[n] = steps[n - 1];
	args[n] = NULL;
	gg_run(&r, GG_RUN_FAKE, (const char *[]){ "GG_TEST_PTX=" GG_PTX, NULL }, args);
	cr_assert_str_eq(shimmed, r.out, "with the shim:\n%s\nwithout:\n%s", shimmed, r.out);
	gg_run_free(&r);
}

#define Q_ENV(size) "GPUGUARD_REDZONE=64", "GPUGUARD_QUARANTINE=" size

/* The function of the first frame of stack @k of violation @i. */
#define FRAME0(i, k) "(j['violations'][" #i "]['" k "'][0]['symbol'] or '?').split('+')[0]"

/* ---- write after free ---- */

Test(quarantine, a_kernel_writing_a_freed_buffer_is_found_at_release_with_both_stacks_and_the_suspect)
{
	struct gg_app_run a;

	/* 1500 bytes: buffer 0 (1000 + its 64-byte band) is held until buffer 1's
	 * free pushes it out, its fill checked then. */
	gg_app_run(&a, RZ, (const char *[]){ Q_ENV("1500"), NULL },
		   (const char *[]){ "alloc:1000", "alloc:1000", "free:0", "fill:0", "free:1", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a,
		    "[(v['kind'], v['index'], v['user_bytes'], v['first'], v['last'], "
		    "v['changed'], v['first_value'], v['expected'], v['api'], v['detected_by'], "
		    "[s['name'] for s in v['suspects']]) for v in j['violations'] "
		    "if v['kind'] == 'write_after_free']",
		    "[('write_after_free', 0, 1000, 0, 999, 1000, 1, 221, 'cuMemFree_v2', "
		    "'quarantine', ['gg_fill'])]");
	/* Found when it left, before buffer 1's free returned. */
	assert_json(&a, "(" FRAME0(1, "stack") ", " FRAME0(1, "free_stack") ")",
		    "('redzone_alloc', 'main')");
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: write after free (quarantine): allocation #0 "
					     "of 1000 bytes at 0x"),
		     1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "suspects, newest first: gg_fill (module "
					     "kernels.ptx, launch #1)"),
		     1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR:   free stack:"), 2, "%s", a.r.err);
	/* The launch was a dangling one too; both are errors. */
	assert_json(&a, "(j['errors'], [v['kind'] for v in j['violations']])",
		    "(2, ['dangling_launch', 'write_after_free'])");
	assert_json(&a,
		    "(j['redzones']['quarantine']['entered'], "
		    "j['redzones']['quarantine']['released'], j['allocations']['live'])",
		    "(2, 2, 0)");
	gg_app_run_free(&a);
}

Test(quarantine, a_clean_program_reports_nothing_and_every_held_allocation_is_released)
{
	static const char *const steps[] = { "alloc:1000", "fill:0", "alloc:300", "free:0",    "free:1",
					     "alloc:1000", "fill:2", "free:2",    "range:0:0", NULL };
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ Q_ENV("1M"), NULL }, steps);
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert_eq(gg_count_errors(a.r.err), 0, "%s", a.r.err);
	assert_json(&a, "(j['errors'], j['violations'], j['redzones']['quarantine'])",
		    "(0, [], {'bytes': 1048576, 'held': 0, 'held_bytes': 0, 'entered': 3, "
		    "'released': 3, 'checked_bytes': 2300, 'unchecked_bytes': 0, 'oom_releases': 0})");
	/* A held allocation is freed, to the application: its range is unknown. */
	assert_same_output(steps, a.r.out);
	gg_app_run_free(&a);
}

Test(quarantine, a_release_reads_two_bounded_windows_and_counts_the_rest_unchecked)
{
	struct gg_app_run a;

	/* 1 MiB: the first and the last 64 KiB are read, the rest counted. */
	gg_app_run(&a, RZ, (const char *[]){ Q_ENV("4M"), NULL },
		   (const char *[]){ "alloc:1048576", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a,
		    "(j['redzones']['quarantine']['checked_bytes'], "
		    "j['redzones']['quarantine']['unchecked_bytes'], "
		    "j['redzones']['unchecked_reasons']['quarantine_middle'], j['errors'])",
		    "(131072, 917504, 1, 0)");
	gg_app_run_free(&a);
}

/* ---- dangling launches ---- */

Test(quarantine, a_launch_given_a_freed_pointer_is_reported_before_it_runs)
{
	struct gg_app_run a;

	/* gg_overrun_second(A, na, B, nb, extra): B, parameter 2, is buffer 0,
	 * freed; its start, then 16 bytes in, then in extra's buffer. */
	gg_app_run(&a, RZ, (const char *[]){ Q_ENV("1M"), NULL },
		   (const char *[]){ "alloc:1000", "alloc:100", "free:0", "two:1:0:0", "twoi:1:0:0",
				     "twox:1:0:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a,
		    "[(v['kind'], v['index'], v['parameter'], v['offset'], v['kernel']['name'], "
		    "v['kernel']['launch'], v['api'], v['detected_by']) for v in j['violations'] "
		    "if v['kind'] == 'dangling_launch']",
		    "[('dangling_launch', 0, 2, 0, 'gg_overrun_second', 1, 'cuMemFree_v2', 'launch'), "
		    "('dangling_launch', 0, 2, 16, 'gg_overrun_second', 2, 'cuMemFree_v2', 'launch'), "
		    "('dangling_launch', 0, 2, 0, 'gg_overrun_second', 3, 'cuMemFree_v2', 'launch')]");
	assert_json(&a, "(" FRAME0(0, "stack") ", " FRAME0(0, "free_stack") ")",
		    "('redzone_alloc', 'main')");
	/* Each ERROR before its launch returned to the application. */
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: dangling launch: gg_overrun_second (module "
					     "kernels.ptx, launch #"),
		     3, "%s", a.r.err);
	cr_assert_lt(strstr(a.r.err, "ERROR: dangling launch"), strstr(a.r.err, "app: two returned"),
		     "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "parameter 2 is 0x"), 3, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, " + 16), freed already by cuMemFree_v2"), 1, "%s",
		     a.r.err);
	gg_app_run_free(&a);
}

Test(quarantine, with_halt_on_error_a_dangling_kernel_is_never_forwarded)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ Q_ENV("1M"), "GPUGUARD_HALT_ON_ERROR=1", NULL },
		   (const char *[]){ "alloc:1000", "abortcount", "launch", "free:0", "fill:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), -SIGABRT, "%s", a.r.err);
	/* The driver saw the clean launch only. */
	cr_assert(strstr(a.r.out, "launches forwarded at abort: 1\n"), "%s", a.r.out);
	cr_assert_eq(strstr(a.r.out, "filled 0"), NULL, "%s", a.r.out);
	assert_json(&a, "[v['kind'] for v in j['violations']]", "['dangling_launch']");
	cr_assert_gt(strstr(a.r.err, "ERROR: halting"), strstr(a.r.err, "ERROR: dangling launch"), "%s",
		     a.r.err);
	gg_app_run_free(&a);
}

Test(quarantine, a_launch_of_live_buffers_is_no_dangling_launch)
{
	struct gg_app_run a;

	/* Buffer 2 is held; the same kernel, given buffers 0 and 1, many times. */
	gg_app_run(&a, RZ, (const char *[]){ Q_ENV("1M"), NULL },
		   (const char *[]){ "alloc:100", "alloc:100", "alloc:100", "free:2", "two:0:1:0",
				     "two:0:1:0", "free:2", "two:0:1:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	/* The second free of buffer 2 is a double free, and the only finding. */
	assert_json(&a, "[v['kind'] for v in j['violations']]", "['double_free']");
	gg_app_run_free(&a);
}

/* ---- frees ---- */

Test(quarantine, a_second_free_of_a_held_allocation_is_a_double_free_and_is_not_forwarded)
{
	static const char *const steps[] = { "alloc:1000", "free:0",   "free:0",
					     "range:0:0",  "attr:0:0", NULL };
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ Q_ENV("1M"), NULL }, steps);
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a,
		    "[(v['kind'], v['index'], v['api'], v['detected_by']) for v in j['violations']]",
		    "[('double_free', 0, 'cuMemFree_v2', 'free')]");
	assert_json(&a, "(" FRAME0(0, "first_free_stack") ", " FRAME0(0, "free_stack") ")",
		    "('main', 'main')");
	/* Freed once, by gpuguard, when it left: no release was refused. */
	assert_json(&a,
		    "(j['errors'], j['redzones']['quarantine']['released'], "
		    "j['redzones']['unchecked'])",
		    "(1, 1, 0)");
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: double free: cuMemFree_v2(0x"), 1, "%s", a.r.err);
	/* The driver's answers for a pointer freed before, as without the shim. */
	cr_assert(strstr(a.r.out, "free 0: 0\nfree 0: 1\n"), "%s", a.r.out);
	assert_same_output(steps, a.r.out);
	gg_app_run_free(&a);
}

/* ---- memory ---- */

Test(quarantine, out_of_memory_with_a_full_quarantine_releases_it_and_succeeds)
{
	static const char *const steps[] = { "limit:4096", "alloc:2000", "free:0",
					     "alloc:2000", "free:1",     NULL };
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ Q_ENV("1M"), NULL }, steps);
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert(strstr(a.r.out, "alloc 2000: 0 buffer 1\n"), "%s", a.r.out);
	assert_same_output(steps, a.r.out);
	/* Released for the request, which then got its band as well. */
	assert_json(&a,
		    "(j['redzones']['quarantine']['oom_releases'], "
		    "j['allocations']['unpadded_fallbacks'], j['allocations']['padded'], "
		    "j['errors'])",
		    "(1, 0, 2, 0)");
	gg_app_run_free(&a);
}

/* ---- stream-ordered frees ---- */

Test(quarantine, stream_ordered_frees_on_two_streams_keep_their_order)
{
	static const char *const steps[] = { "salloc:1000:0", "salloc:2000:1", "sfill:0:0", "sfree:0:0",
					     "sfill:1:1",     "sfree:1:1",     "ssync",     NULL };
	const char *sizes[] = { "GPUGUARD_QUARANTINE=1M", "GPUGUARD_QUARANTINE=1",
				"GPUGUARD_QUARANTINE=1M" };

	/* Each kernel was queued before its free, on the free's stream: the fill
	 * follows it, and the release (at exit, or at once when the quarantine is
	 * too small to hold it) waits for it. The band's check at the free waits
	 * for the stream too: without it (the third run) only the order of the
	 * fill keeps the kernel's bytes from looking like a write after free. */
	for (int i = 0; i < 3; i++) {
		struct gg_app_run a;
		char want[64];

		gg_app_run(&a, RZ,
			   (const char *[]){ "GPUGUARD_REDZONE=64", sizes[i],
					     i == 2 ? "GPUGUARD_CHECK_ON_FREE=0" : NULL, NULL },
			   steps);
		cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
		snprintf(want, sizeof(want), "(0, [], 2, 2, 3000, %d)", i == 2 ? 2 : 0);
		assert_json(&a,
			    "(j['errors'], j['violations'], j['redzones']['quarantine']['entered'], "
			    "j['redzones']['quarantine']['released'], "
			    "j['redzones']['quarantine']['checked_bytes'], j['redzones']['unchecked'])",
			    want);
		assert_same_output(steps, a.r.out);
		gg_app_run_free(&a);
	}
}

Test(quarantine, a_kernel_queued_after_a_stream_ordered_free_is_found)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ Q_ENV("1M"), NULL },
		   (const char *[]){ "salloc:1000:0", "sfree:0:0", "sfill:0:1", "ssync", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "[(v['kind'], v['api'], v['detected_by']) for v in j['violations']]",
		    "[('dangling_launch', 'cuMemFreeAsync', 'launch'), "
		    "('write_after_free', 'cuMemFreeAsync', 'exit')]");
	gg_app_run_free(&a);
}

/* A context's end releases its own held allocations in one walk of the
 * quarantine (BENCHMARKS.md, "10. Quarantine (issue 26): what holding freed
 * memory back costs"), and only those: the primary context's two, held
 * before them, stay held, oldest first. 500 bytes hold all four (328 + 160);
 * after the end, a free of 200 bytes pushes out exactly the oldest (buffer
 * 0), so buffer 1 is still held when a kernel writes it. */
Test(quarantine, a_contexts_end_releases_its_own_held_allocations_and_keeps_the_others_in_order)
{
	const char *const steps[] = { "alloc:100", "alloc:100", "free:0", "free:1", "ctx",
				      "alloc:16",  "alloc:16",  "free:2", "free:3", "destroy",
				      "alloc:200", "free:4",    "fill:1", NULL };
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ Q_ENV("500"), NULL }, steps);
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a,
		    "([(v['kind'], v['index'], v['detected_by']) for v in j['violations']], "
		    "j['redzones']['quarantine']['entered'], j['redzones']['quarantine']['released'], "
		    "j['redzones']['quarantine']['held'])",
		    "([('dangling_launch', 1, 'launch'), ('write_after_free', 1, 'exit')], 5, 5, 0)");
	gg_app_run_free(&a);
}

/* Every driver call that can run out of device memory, not only the
 * allocations, drains the quarantine and is asked again (redzone/quarantine.c,
 * gg_quarantine_drains): an array, a 3D array, cuMemCreate, and the upload
 * and the launch of a graph whose memory node allocates at each, the launch
 * of one built with cuGraphAddMemAllocNode, need memory the quarantine holds
 * (tests/apps/scenario.c, GG_SCENARIO_OOM), on every route, and each
 * succeeds as without the shim. */
Test(quarantine, every_call_that_runs_out_of_memory_drains_the_quarantine_on_every_route)
{
	static const char *const calls[] = { "cuArrayCreate_v2",
					     "cuArray3DCreate_v2",
					     "cuMemCreate",
					     "cuGraphUpload",
					     "cuGraphLaunch",
					     "cuGraphAddMemAllocNode",
					     "cuGraphLaunch of a built graph" };

	for (size_t i = 0; i < GG_ROUTES; i++) {
		struct gg_app_run a;

		gg_route_run(&a, i, (const char *[]){ Q_ENV("16M"), "GG_SCENARIO_OOM=1", NULL });
		for (size_t k = 0; k < sizeof(calls) / sizeof(calls[0]); k++) {
			char want[96];

			snprintf(want, sizeof(want), "out of memory: %s CUDA_SUCCESS\n", calls[k]);
			cr_assert_neq(strstr(a.r.out, want), NULL, "%s: no \"%s\" in:\n%s\n%s",
				      gg_route_apps[i], want, a.r.out, a.r.err);
		}
		/* Six held each time, each given back. */
		assert_json(&a, "j['redzones']['quarantine']['oom_releases']", "36");
		gg_app_run_free(&a);
	}
}

/* A held allocation released while the application captures a stream into
 * a graph never touches the capture: buffer 0, freed on the app's stream
 * (stream-ordered) or not (cuMemFree_v2), is pushed out by the free of
 * buffer 1 on another stream (on the capturing thread or another) while the
 * app's stream captures in each mode.
 * Onto the capturing stream, its cuMemFreeAsync would be captured and, as
 * memory no graph allocated, invalidate the capture (the fake driver does
 * as cuda.h says). The graph ends, launches and runs as without the shim. */
Test(quarantine, a_release_during_a_capture_leaves_the_capture_valid_in_every_mode)
{
	static const char *const frees[] = { "sfree:0:0", "free:0" };
	/* Pushed out from the capturing thread, or from a thread of its own. */
	static const char *const modes[] = { "capq:1:2:0",  "capq:1:2:1",  "capq:1:2:2",
					     "capqt:1:2:0", "capqt:1:2:1", "capqt:1:2:2" };

	for (size_t f = 0; f < 2; f++)
		for (size_t m = 0; m < 6; m++) {
			const char *const steps[] = { f ? "alloc:1000" : "async:1000",
						      "async:1000",
						      "alloc:100",
						      frees[f],
						      "ssync",
						      modes[m],
						      NULL };
			struct gg_app_run a;

			gg_app_run(&a, RZ, (const char *[]){ Q_ENV("1500"), NULL }, steps);
			cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
			cr_assert_neq(strstr(a.r.out, "end 0, graph yes, launch 0"), NULL, "%s\n%s",
				      a.r.out, a.r.err);
			assert_same_output(steps, a.r.out);
			assert_json(&a,
				    "(j['errors'], j['redzones']['quarantine']['entered'], "
				    "j['redzones']['quarantine']['released'])",
				    "(0, 2, 2)");
			gg_app_run_free(&a);
		}
}

/* ---- off ---- */

Test(quarantine, a_quarantine_of_0_is_exactly_no_quarantine)
{
	static const char *const steps[] = { "alloc:1000", "alloc:100",   "fill:0",       "free:0",
					     "free:0",     "overrun:1:4", "salloc:500:0", "sfree:2:0",
					     "ssync",      NULL };
	/* Everything but what moves with the process (its pid, times, and the
	 * addresses its mappings got). */
	static const char expr[] =
		"json.dumps((lambda f: f(f, {k: v for k, v in j.items() "
		"if k not in ('pid', 'started', 'ended')}))(lambda f, o: "
		"{k: f(f, v) for k, v in o.items() if k not in ('address', 'ptr')} "
		"if isinstance(o, dict) else [f(f, x) for x in o] if isinstance(o, list) else o), "
		"sort_keys=True)";
	struct gg_app_run off, unset;
	char *a, *b;

	gg_app_run(&off, RZ, (const char *[]){ Q_ENV("0"), NULL }, steps);
	gg_app_run(&unset, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", NULL }, steps);
	cr_assert_str_eq(off.r.out, unset.r.out);
	cr_assert_eq(gg_run_exit(&off.r), gg_run_exit(&unset.r));
	cr_assert_eq(gg_count_errors(off.r.err), gg_count_errors(unset.r.err), "%s", off.r.err);
	cr_assert_eq(gg_count_lines(off.r.err, "dangling"), 0, "%s", off.r.err);
	a = gg_json(off.json, expr);
	b = gg_json(unset.json, expr);
	cr_assert_str_eq(a, b);
	cr_assert_null(strstr(a, "quarantine_middle"), "%s", a);
	free(a);
	free(b);
	gg_app_run_free(&off);
	gg_app_run_free(&unset);
}

Test(quarantine, without_red_zones_is_warned_about_and_holds_nothing)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_QUARANTINE=1M", NULL },
		   (const char *[]){ "alloc:1000", "free:0", "free:0", NULL });
	cr_assert_eq(gg_count_lines(a.r.err, "WARN: GPUGUARD_QUARANTINE without GPUGUARD_REDZONE"), 1,
		     "%s", a.r.err);
	cr_assert(strstr(a.r.out, "free 0: 0\nfree 0: 1\n"), "%s", a.r.out);
	assert_json(&a, "('quarantine' in j['redzones'], j['config']['quarantine'])",
		    "(False, 1048576)");
	gg_app_run_free(&a);
}

/* ---- the size ---- */

Test(quarantine, sizes_take_units_of_1024)
{
	static const struct {
		const char *text;
		uint64_t value;
	} good[] = {
		{ "0", 0 },
		{ "4096", 4096 },
		{ "0x1b", 27 },
		{ "64K", 64 << 10 },
		{ "64kB", 64 << 10 },
		{ "256M", 256 << 20 },
		{ "1GiB", 1ull << 30 },
		{ "2t", 2ull << 40 },
	};
	static const char *const bad[] = {
		"", "M", "12B", "1.5G", "-1", "256 M", "99999999999T", "1P"
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cr_assert_eq(gg_config_parse_size(good[i].text, &v), 0, "%s", good[i].text);
		cr_assert_eq(v, good[i].value, "%s: %llu", good[i].text, (unsigned long long)v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_neq(gg_config_parse_size(bad[i], &v), 0, "%s", bad[i]);
}

Test(quarantine, the_command_passes_a_size_with_a_unit)
{
	struct gg_run r;

	gg_run(&r, GG_RUN_FAKE, (const char *[]){ "GG_TEST_PTX=" GG_PTX, NULL },
	       (const char *[]){ GG_CLI, "--quarantine", "256M", "--", RZ, "alloc:1000", "free:0",
				 "free:0", NULL });
	cr_assert_eq(gg_count_lines(r.err, "ERROR: double free"), 1, "%s", r.err);
	gg_run_free(&r);
	gg_run(&r, GG_RUN_FAKE, NULL,
	       (const char *[]){ GG_CLI, "--quarantine", "256Q", "--", RZ, NULL });
	cr_assert_neq(gg_run_exit(&r), 0, "%s", r.err);
	cr_assert(strstr(r.err, "K, M, G or T"), "%s", r.err);
	gg_run_free(&r);
}

/* A graph replayed after the buffer its kernel node was given was freed:
 * each replay is a launch of its nodes, so the second replay is a dangling
 * launch, named with the kernel, its launch, its graph node and the free,
 * before the graph is forwarded; the first replay, of live memory, is not. */
Test(quarantine, a_graph_replayed_after_its_buffer_was_freed_is_a_dangling_launch)
{
	struct gg_app_run a;

	gg_app_run(
		&a, RZ, (const char *[]){ Q_ENV("1M"), NULL },
		(const char *[]){ "alloc:100", "graph:0:0", "replay:1", "free:0", "replay:1", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a,
		    "[(v['kind'], v['index'], v['parameter'], v['kernel']['name'], "
		    "v['kernel']['launch'], v['api'], 'node' in v) for v in j['violations'] "
		    "if v['kind'] == 'dangling_launch']",
		    "[('dangling_launch', 0, 0, 'gg_overrun', 2, 'cuMemFree_v2', True)]");
	assert_json(&a, FRAME0(0, "free_stack"), "main");
	/* The replay ran: what it wrote is found when the block leaves, its
	 * suspect the replay's node. */
	assert_json(&a,
		    "[(v['kind'], v['detected_by'], [(s['name'], s['launch']) for s in "
		    "v['suspects']]) for v in j['violations'][1:]]",
		    "[('write_after_free', 'exit', [('gg_overrun', 2)])]");
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: dangling launch: gg_overrun (module kernels.ptx, "
					     "launch #2, graph node 0x"),
		     1, "%s", a.r.err);
	gg_app_run_free(&a);
}

/* With GPUGUARD_HALT_ON_ERROR=1 the dangling replay is never forwarded:
 * the driver ran the first replay's launch only. */
Test(quarantine, with_halt_on_error_a_dangling_replay_is_never_forwarded)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ Q_ENV("1M"), "GPUGUARD_HALT_ON_ERROR=1", NULL },
		   (const char *[]){ "alloc:100", "graph:0:0", "replay:1", "free:0", "abortcount",
				     "replay:1", NULL });
	cr_assert_eq(gg_run_exit(&a.r), -SIGABRT, "%s", a.r.err);
	cr_assert(strstr(a.r.out, "launches forwarded at abort: 1\n"), "%s", a.r.out);
	cr_assert_eq(gg_count_lines(a.r.out, "replayed 1:"), 1, "%s", a.r.out);
	assert_json(&a, "[v['kind'] for v in j['violations']]", "['dangling_launch']");
	gg_app_run_free(&a);
}

/* The same on every route (tests/apps/scenario.c, GG_SCENARIO_DANGLING): a
 * captured graph given buffer D, replayed (#1), D freed, replayed again
 * (#2): a dangling launch naming gg_fill, its graph node and D's free. */

Test(quarantine, a_dangling_replay_is_found_on_every_route)
{
	for (size_t i = 0; i < GG_ROUTES; i++) {
		struct gg_app_run a;

		gg_route_run(&a, i,
			     (const char *[]){ Q_ENV("1M"), "GG_SCENARIO_DANGLING=1",
					       "GPUGUARD_ALLOW_UNRESOLVED=1", NULL });
		cr_assert_eq(gg_run_exit(&a.r), 0, "%s: %s", gg_route_apps[i], a.r.err);
		cr_expect(strstr(a.r.out, "dangling replay: CUDA_SUCCESS\n"), "%s", a.r.out);
		assert_json(&a,
			    "[(v['kind'], v['kernel']['name'], v['kernel']['launch'], v['api'], "
			    "'node' in v) for v in j['violations'] if v['kind'] == 'dangling_launch']",
			    "[('dangling_launch', 'gg_fill', 2, 'cuMemFree_v2', True)]");
		assert_json(&a,
			    "[len(v['free_stack']) > 1 for v in j['violations'] "
			    "if v['kind'] == 'dangling_launch']",
			    "[True]");
		cr_expect_eq(gg_count_lines(a.r.err,
					    "ERROR: dangling launch: gg_fill (module kernels.ptx, "
					    "launch #2, graph node 0x"),
			     1, "%s: %s", gg_route_apps[i], a.r.err);
		gg_app_run_free(&a);
	}
}

/* With GPUGUARD_HALT_ON_ERROR=1, on every route: the dangling replay is
 * reported and the process stops before the graph is forwarded (the driver
 * saw one graph launch, the first replay). */
Test(quarantine, with_halt_on_error_a_dangling_replay_is_never_forwarded_on_every_route)
{
	for (size_t i = 0; i < GG_ROUTES; i++) {
		struct gg_app_run a;

		gg_route_run(&a, i,
			     (const char *[]){ Q_ENV("1M"), "GG_SCENARIO_DANGLING=halt",
					       "GPUGUARD_HALT_ON_ERROR=1",
					       "GPUGUARD_ALLOW_UNRESOLVED=1", NULL });
		cr_assert_eq(gg_run_exit(&a.r), -SIGABRT, "%s: %s", gg_route_apps[i], a.r.err);
		cr_expect(strstr(a.r.out, "graph launches forwarded at abort: 1\n"), "%s: %s",
			  gg_route_apps[i], a.r.out);
		cr_expect(!strstr(a.r.out, "dangling replay:"), "%s: %s", gg_route_apps[i], a.r.out);
		assert_json(&a,
			    "[v['kernel']['name'] for v in j['violations'] "
			    "if v['kind'] == 'dangling_launch']",
			    "['gg_fill']");
		cr_expect_eq(gg_count_lines(a.r.err, "ERROR: dangling launch: gg_fill"), 1, "%s",
			     a.r.err);
		gg_app_run_free(&a);
	}
}
