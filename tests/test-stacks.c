/* Allocation and free stacks (docs/how-it-works.md, "Stacks, frees and leaks"): up to
 * GPUGUARD_STACK_DEPTH frames from the call site outward, each distinct stack
 * kept once (the stack depot, callsite/depot.c), in the log, the JSON, gpuguard
 * report and gpuguard symbolize. Through app-redzone and the fake driver. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define RZ GG_APPS "/app-redzone"

static void assert_json(struct gg_app_run *a, const char *expr, const char *want)
{
	char *got = gg_json(a->json, expr);

	cr_assert_str_eq(got, want, "%s\ngot:  %s\nwant: %s\nstdout:\n%s\nstderr:\n%s", expr, got, want,
			 a->r.out, a->r.err);
	free(got);
}

/* The function names of a stack's frames ("?" for a frame with no symbol). */
#define NAMES(stack) "[(f['symbol'] or '?').split('+')[0] for f in " stack "]"

/* ---- the depth ---- */

Test(stacks, an_allocation_keeps_eight_frames_by_default_the_first_its_call_site)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
		   (const char *[]){ "deep:20:10", "alloc:100", "overrun:0:8", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "j['config']['stack_depth']", "8");
	/* Made 20 frames down redzone_deep: the call site, then seven of those. */
	assert_json(&a, NAMES("j['leaks'][0]['stack']"),
		    "['redzone_alloc', 'redzone_deep', 'redzone_deep', 'redzone_deep', "
		    "'redzone_deep', 'redzone_deep', 'redzone_deep', 'redzone_deep']");
	assert_json(&a,
		    "[(x['stack'][0] == {k: x['site'][k] for k in x['stack'][0]}) "
		    "for x in j['leaks'] + j['violations']]",
		    "[True, True]");
	/* The violation's ERROR line, then its stack, at every line ERROR. */
	assert_json(&a, NAMES("j['violations'][0]['stack']") "[:2]", "['redzone_alloc', 'main']");
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: red zone violation (free): allocation #1 "), 1,
		     "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "] ERROR:   allocation stack:"), 1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "] ERROR:     #0 redzone_alloc+0x"), 1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "] ERROR:     #1 main+0x"), 1, "%s", a.r.err);
	gg_app_run_free(&a);
}

Test(stacks, depth_one_keeps_the_call_site_alone)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_STACK_DEPTH=1", NULL },
		   (const char *[]){ "deep:20:10", "alloc:100", "overrun:0:8", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "j['config']['stack_depth']", "1");
	assert_json(&a, "[" NAMES("x['stack']") " for x in j['leaks'] + j['violations']]",
		    "[['redzone_alloc'], ['redzone_alloc']]");
	/* The ERROR line names the site; there is no stack to add. */
	cr_assert_eq(gg_count_lines(a.r.err, "allocated at redzone_alloc+0x"), 1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "allocation stack"), 0, "%s", a.r.err);
	gg_app_run_free(&a);
}

Test(stacks, depth_64_keeps_64_frames)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_STACK_DEPTH=64", NULL },
		   (const char *[]){ "deep:80:10", "deep:80:20", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	/* Two allocations of one stack (the same step's line), seen again. */
	assert_json(&a,
		    "[(l['count'], len(l['stack']), " NAMES(
			    "l['stack']") "[0], "
					  "set(" NAMES("l['stack']") "[1:])) for l in j['leaks']]",
		    "[(2, 64, 'redzone_alloc', {'redzone_deep'})]");
	gg_app_run_free(&a);
}

Test(stacks, a_depth_out_of_range_is_refused_and_eight_kept)
{
	static const char *const bad[] = { "GPUGUARD_STACK_DEPTH=0", "GPUGUARD_STACK_DEPTH=65",
					   "GPUGUARD_STACK_DEPTH=deep" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gg_app_run a;

		gg_app_run(
			&a, RZ,
			(const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_VERBOSITY=0", bad[i], NULL },
			(const char *[]){ "alloc:100", NULL });
		cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
		cr_assert_eq(gg_count_lines(a.r.err, "WARN: GPUGUARD_STACK_DEPTH=\""), 1, "%s",
			     a.r.err);
		cr_assert_eq(gg_count_lines(a.r.err, "expected a number from 1 to 64"), 1, "%s",
			     a.r.err);
		assert_json(&a, "j['config']['stack_depth']", "8");
		gg_app_run_free(&a);
	}
}

Test(stacks, the_command_sets_the_depth_and_refuses_a_bad_one)
{
	char dir[64], json[128];
	struct gg_run r;
	char *v;

	gg_test_dir(dir, sizeof(dir));
	snprintf(json, sizeof(json), "%s/s.json", dir);
	gg_run(&r, GG_RUN_FAKE, (const char *[]){ "GG_TEST_PTX=" GG_PTX, NULL },
	       (const char *[]){ GG_CLI, "--redzone", "64", "--stack-depth", "3", "--json", json, "--",
				 RZ, "deep:10:8", NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	v = gg_json(json, "(j['config']['stack_depth'], len(j['leaks'][0]['stack']))");
	cr_assert_str_eq(v, "(3, 3)");
	free(v);
	gg_run_free(&r);
	gg_run(&r, GG_RUN_FAKE, NULL,
	       (const char *[]){ GG_CLI, "--stack-depth", "65", "--", RZ, NULL });
	cr_assert_eq(gg_run_exit(&r), 2, "%s", r.err);
	cr_assert(strstr(r.err, "--stack-depth") && strstr(r.err, "\"65\"") &&
			  strstr(r.err, "from 1 to 64"),
		  "%s", r.err);
	cr_assert_str_eq(r.out, "");
	gg_run_free(&r);
}

/* ---- the depot ---- */

/* A stack seen again is the same stack, however many allocations share it:
 * ten places cost ten stacks. The ten share one call site (the helper that
 * calls the driver), from one frame size: only their callers tell them
 * apart, which the depot's cache of stacks seen must not miss. */
Test(stacks, ten_places_cost_ten_stacks_however_many_allocations)
{
	char *stacks[2];
	static const char *const rounds[] = { "sites:10:1", "sites:3000:1" };

	for (int i = 0; i < 2; i++) {
		struct gg_app_run a;

		gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
			   (const char *[]){ rounds[i], NULL });
		cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
		stacks[i] = gg_json(a.json, "j['redzones']['stacks']");
		/* The ten allocation stacks, the free's, the set-up's: a few more. */
		cr_assert(atoi(stacks[i]) >= 11 && atoi(stacks[i]) <= 16, "%s stacks", stacks[i]);
		gg_app_run_free(&a);
	}
	cr_assert_str_eq(stacks[0], stacks[1], "10 and 3000 rounds: %s and %s stacks", stacks[0],
			 stacks[1]);
	free(stacks[0]);
	free(stacks[1]);
}

Test(stacks, allocations_of_ten_places_are_ten_stacks_each_with_its_own)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
		   (const char *[]){ "sites:500:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a,
		    "sorted((l['count'], l['bytes'], " NAMES("l['stack']") "[1]) for l in j['leaks'])",
		    "[(500, 8000, 'redzone_place_0'), (500, 8000, 'redzone_place_1'), "
		    "(500, 8000, 'redzone_place_2'), (500, 8000, 'redzone_place_3'), "
		    "(500, 8000, 'redzone_place_4'), (500, 8000, 'redzone_place_5'), "
		    "(500, 8000, 'redzone_place_6'), (500, 8000, 'redzone_place_7'), "
		    "(500, 8000, 'redzone_place_8'), (500, 8000, 'redzone_place_9')]");
	assert_json(&a, "len(set(l['site']['address'] for l in j['leaks']))", "1");
	gg_app_run_free(&a);
}

/* Threads allocate from one place on stacks of their own: each stack is
 * still found, and kept once. */
Test(stacks, threads_share_the_stacks_they_have_in_common)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
		   (const char *[]){ "threads:4:300:16", "sites:20:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "(j['errors'], len(j['leaks']), sum(l['count'] for l in j['leaks']))",
		    "(0, 10, 200)");
	assert_json(&a, "j['redzones']['stacks'] <= 20", "True");
	gg_app_run_free(&a);
}

/* ---- symbolize ---- */

/* Every frame of every stack in app-redzone (built with -g) gets its line,
 * in the JSON and in the log. */
Test(stacks, symbolize_resolves_every_frame)
{
	struct gg_app_run a;
	static const char app_frame[] = "(app-redzone+0x";
	char log[160];
	struct gg_run r;
	char *v;

	gg_app_run(
		&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
		(const char *[]){ "deep:5:10", "alloc:100", "overrun:0:8", "free:0", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	gg_run(&r, 0, NULL, (const char *[]){ GG_CLI, "symbolize", a.json, NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	snprintf(log, sizeof(log), "%s/symbolized.json", a.dir);
	FILE *f = fopen(log, "w");

	cr_assert_not_null(f);
	fputs(r.out, f);
	fclose(f);
	gg_run_free(&r);
	/* The app's frames (its own functions, which have debug information;
	 * not the C library's start code linked into it): each has a line in
	 * app-redzone.c; and every stack of the summary has some. */
	v = gg_json(log, "sorted(set((k, all('app-redzone.c:' in fr.get('line', '') for fr in x[k] "
			 "if fr['object'].endswith('/app-redzone') and not "
			 "(fr['symbol'] or '').startswith('_start')), any(fr['object'].endswith("
			 "'/app-redzone') for fr in x[k])) for x in j['violations'] + j['leaks'] "
			 "for k in x if k.endswith('stack')))");
	cr_assert_str_eq(v,
			 "[('first_free_stack', True, True), ('free_stack', True, True), "
			 "('stack', True, True)]",
			 "%s", v);
	free(v);
	/* The log: each frame line of the app's gets " at FILE:LINE". */
	snprintf(log, sizeof(log), "%s/run.log", a.dir);
	f = fopen(log, "w");
	cr_assert_not_null(f);
	fputs(a.r.err, f);
	fclose(f);
	gg_run(&r, 0, NULL, (const char *[]){ GG_CLI, "symbolize", "-d", GG_APPS, log, NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_assert(gg_count_lines(r.out, "ERROR:     #") >= 6, "%s", r.out);
	for (const char *line = r.out, *end; *line; line = end ? end + 1 : line + strlen(line)) {
		size_t n;

		end = strchr(line, '\n');
		n = end ? (size_t)(end - line) : strlen(line);

		if (memmem(line, n, "ERROR:     #", 12) &&
		    memmem(line, n, app_frame, strlen(app_frame)) && !memmem(line, n, "_start+", 7))
			cr_assert(memmem(line, n, " at ", 4) && memmem(line, n, "app-redzone.c:", 14),
				  "%.*s", (int)n, line);
	}
	gg_run_free(&r);
	gg_app_run_free(&a);
}
