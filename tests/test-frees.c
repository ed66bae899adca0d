/* Frees of what is no allocation (docs/how-it-works.md, "Stacks, frees and leaks":
 * double_free, invalid_free) and allocations still live at exit (Leaks).
 * Through app-redzone, the scenario every route runs, and the fake driver,
 * which answers a double or interior free as the driver does
 * (CUDA_ERROR_INVALID_VALUE, 1). */
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

/* What the app printed, with and without the shim: the same (docs/how-it-works.md, "What the
 * shim does"). */
static void assert_same_output(const char *app, const char *const *env, const char *const *argv,
			       const char *shimmed)
{
	const char *args[16] = { app };
	struct gg_run r;
	size_t n = 1;

	for (; argv[n - 1] && n < 15; n++)
		args[n] = argv[n - 1];
	args[n] = NULL;
	gg_run(&r, GG_RUN_FAKE, env, args);
	cr_assert_str_eq(shimmed, r.out, "with the shim:\n%s\nwithout:\n%s", shimmed, r.out);
	gg_run_free(&r);
}

static const char *const rz_env[] = { "GG_TEST_PTX=" GG_PTX, NULL };

/* A violation's kind, index, size and call, and the function of the first
 * frame of each of its stacks. */
#define FREES                                                                                    \
	"[(v['kind'], v['index'], v['user_bytes'], v['api'], v['detected_by'], "                 \
	"[(k, (v[k][0]['symbol'] or '?').split('+')[0]) for k in ('stack', 'first_free_stack', " \
	"'free_stack') if k in v]) for v in j['violations']]"

/* ---- double frees ---- */

/* The scenario frees its buffer twice, on every route to the driver. */
Test(frees, a_second_free_is_a_double_free_on_every_route)
{
	for (size_t i = 0; i < GG_ROUTES; i++) {
		char app[256];
		struct gg_app_run a;

		gg_route_run(&a, i, (const char *[]){ "GPUGUARD_REDZONE=64", NULL });
		cr_assert_eq(gg_run_exit(&a.r), 0, "%s: %s", gg_route_apps[i], a.r.err);
		assert_json(&a, FREES,
			    "[('double_free', 0, 1000, 'cuMemFree_v2', 'free', [('stack', "
			    "'app_scenario'), ('first_free_stack', 'app_scenario'), ('free_stack', "
			    "'app_scenario')])]");
		/* The two frees are two lines of the scenario. */
		assert_json(&a,
			    "[v['first_free_stack'][0]['offset'] != v['free_stack'][0]['offset'] "
			    "for v in j['violations']]",
			    "[True]");
		/* The double free, and the kernel the scenario never finds. */
		assert_json(&a, "(j['errors'], j['allocations']['live'])", "(2, 0)");
		cr_assert_eq(gg_count_lines(a.r.err, "ERROR: double free: cuMemFree_v2(0x"), 1, "%s",
			     a.r.err);
		cr_assert_eq(gg_count_lines(a.r.err, "allocation #0 of 1000 bytes was freed already; "
						     "allocated at app_scenario+0x"),
			     1, "%s", a.r.err);
		/* The driver's answer, as without the shim. */
		cr_assert(strstr(a.r.out, "second free: CUDA_ERROR_INVALID_VALUE\n"), "%s", a.r.out);
		snprintf(app, sizeof(app), "%s/%s", GG_APPS, gg_route_apps[i]);
		assert_same_output(app, rz_env, (const char *[]){ GG_PTX, NULL }, a.r.out);
		gg_app_run_free(&a);
	}
}

Test(frees, a_second_stream_ordered_free_is_a_double_free)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
		   (const char *[]){ "async:100", "free:0", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "[(v['kind'], v['index'], v['api']) for v in j['violations']]",
		    "[('double_free', 0, 'cuMemFreeAsync')]");
	cr_assert(strstr(a.r.out, "free 0: 0\nfree 0: 1\n"), "%s", a.r.out);
	assert_same_output(RZ, rz_env, (const char *[]){ "async:100", "free:0", "free:0", NULL },
			   a.r.out);
	gg_app_run_free(&a);
}

/* A stale pointer freed after the driver handed its address out again frees
 * the new allocation: the driver takes it, and so does gpuguard (it cannot
 * tell it from the new allocation's own free). The new allocation's own
 * free is then the second, and its double free names the stale free first
 * (docs/how-it-works.md, "Frees"). */
Test(frees, a_double_free_after_the_address_was_handed_out_again_is_the_new_allocations)
{
	static const char *const steps[] = { "alloc:100", "free:0", "alloc:100", "same:0:1",
					     "free:0",    "free:1", NULL };
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", NULL }, steps);
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert(strstr(a.r.out, "free 0: 0\nalloc 100: 0 buffer 1\nbuffers 0 and 1: same address\n"
				  "free 0: 0\nfree 1: 1\n"),
		  "%s", a.r.out);
	assert_json(&a,
		    "[(v['kind'], v['index'], [k for k in v if k.endswith('stack')]) "
		    "for v in j['violations']]",
		    "[('double_free', 1, ['stack', 'first_free_stack', 'free_stack'])]");
	assert_json(&a, "(j['errors'], j['allocations']['live'])", "(1, 0)");
	assert_same_output(RZ, rz_env, steps, a.r.out);
	gg_app_run_free(&a);
}

/* A freed zone's address given to an allocation no zone records (here its
 * band did not fit the driver's memory: unpadded, oom_fallback) is that
 * allocation's: the freed zone is forgotten, and no free of the new
 * allocation, a second one included, is taken for the old zone's (whose
 * stacks it would name). */
Test(frees, an_unguarded_allocation_at_a_freed_address_is_not_the_freed_zone)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
		   (const char *[]){ "alloc:100", "free:0", "limit:150", "alloc:100", "same:0:1",
				     "free:1", "free:1", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert(strstr(a.r.out, "buffers 0 and 1: same address\nfree 1: 0\nfree 1: 1\n"), "%s",
		  a.r.out);
	assert_json(&a, "j['coverage']['unguarded']", "{'oom_fallback': 1}");
	assert_json(&a, "(j['violations'], j['errors'])", "([], 0)");
	gg_app_run_free(&a);
}

/* Frees that are no mistake find nothing, however many and on threads. */
Test(frees, good_frees_report_nothing)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
		   (const char *[]){ "many:300:64", "threads:4:200:16", "async:64", "free:0",
				     "sites:50:1", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "(j['violations'], j['errors'], j['leaks'])", "([], 0, [])");
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR"), 0, "%s", a.r.err);
	gg_app_run_free(&a);
}

/* ---- invalid frees ---- */

/* A pointer inside an allocation (or inside its band) is no allocation: the
 * driver refuses it, the shim says which allocation it lies in, and the
 * zone stays, its band still watched. */
Test(frees, an_interior_free_is_an_invalid_free_and_the_zone_stays)
{
	static const char *const steps[] = { "alloc:100",   "ifree:0:16", "ifree:0:100",
					     "overrun:0:8", "free:0",     NULL };
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", NULL }, steps);
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert(strstr(a.r.out, "free 0+16: 1\nfree 0+100: 1\n"), "%s", a.r.out);
	cr_assert(strstr(a.r.out, "free 0: 0\n"), "%s", a.r.out);
	assert_json(&a,
		    "[(v['kind'], v['index'], v.get('offset'), v['detected_by']) "
		    "for v in j['violations']]",
		    "[('invalid_free', 0, 16, 'free'), ('invalid_free', 0, 100, 'free'), "
		    "('overrun', 0, None, 'free')]");
	assert_json(&a,
		    "[(int(v['address'], 16) - int(v['site']['address'], 16) != 0, "
		    "(v['free_stack'][0]['symbol'] or '?').split('+')[0]) "
		    "for v in j['violations'] if v['kind'] == 'invalid_free']",
		    "[(True, 'main'), (True, 'main')]");
	assert_json(&a, "(j['errors'], j['allocations']['live'])", "(3, 0)");
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: invalid free: cuMemFree_v2(0x"), 2, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, " + 16, inside allocation #0 of 100 bytes, not its "
					     "start; allocated at redzone_alloc+0x"),
		     1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, " + 100, in the red zone of allocation #0 of 100 "
					     "bytes"),
		     1, "%s", a.r.err);
	assert_same_output(RZ, rz_env,
			   (const char *[]){ "alloc:100", "ifree:0:16", "ifree:0:100", "free:0", NULL },
			   "alloc 100: 0 buffer 0\nfree 0+16: 1\nfree 0+100: 1\nfree 0: 0\ndone\n");
	gg_app_run_free(&a);
}

/* Without red zones nothing is recorded: a bad free is the driver's to refuse. */
Test(frees, without_red_zones_no_free_is_judged)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ, NULL,
		   (const char *[]){ "alloc:100", "ifree:0:16", "free:0", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "(j['violations'], j['errors'])", "([], 0)");
	gg_app_run_free(&a);
}

/* ---- leaks ---- */

/* (count, bytes, the function of the stack's second frame), as listed. */
#define LEAKS                                                                        \
	"[(l['count'], l['bytes'], (l['stack'][1]['symbol'] or '?').split('+')[0]) " \
	"for l in j['leaks']]"

Test(leaks, are_listed_by_stack_the_most_bytes_first_and_are_no_errors)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
		   (const char *[]){ "alloc:100", "deep:3:50", "deep:3:60", "sites:2:0", "alloc:8",
				     "free:1", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	/* deep's two share a stack (one step's line); sites' ten are ten. */
	assert_json(&a, LEAKS "[:3]",
		    "[(2, 110, 'redzone_deep'), (1, 100, 'main'), (2, 32, 'redzone_place_0')]");
	assert_json(&a, "(len(j['leaks']), sum(l['count'] for l in j['leaks']), j['errors'])",
		    "(12, 23, 0)");
	cr_assert_eq(gg_count_lines(a.r.err,
				    "INFO: leaks at exit: 23 allocations (530 bytes) still live, "
				    "from 12 stacks"),
		     1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR"), 0, "%s", a.r.err);
	gg_app_run_free(&a);
}

Test(leaks, with_leak_check_each_stack_is_an_error)
{
	struct gg_app_run a;
	struct gg_run r;

	gg_app_run(&a, RZ,
		   (const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_LEAK_CHECK=1",
				     "GPUGUARD_EXITCODE=86", "GPUGUARD_VERBOSITY=0", NULL },
		   (const char *[]){ "alloc:100", "deep:3:50", "deep:3:60", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 86, "%s", a.r.err);
	assert_json(&a, "(" LEAKS ", j['errors'], j['config']['leak_check'])",
		    "([(2, 110, 'redzone_deep'), (1, 100, 'main')], 2, True)");
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: leak: 2 allocations (110 bytes) still live at "
					     "exit, allocated at redzone_alloc+0x"),
		     1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: leak: 1 allocation (100 bytes) still live at "
					     "exit, allocated at redzone_alloc+0x"),
		     1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR:     #1 redzone_deep+0x"), 1, "%s", a.r.err);
	/* gpuguard report agrees, and names the leaks. */
	gg_run(&r, 0, NULL, (const char *[]){ GG_CLI, "report", a.json, NULL });
	cr_assert_eq(gg_run_exit(&r), 1, "%s", r.out);
	cr_assert(strstr(r.out, "leaks: 3 allocations (210 bytes) live at exit, from 2 stacks\n"), "%s",
		  r.out);
	cr_assert(strstr(r.out, "errors: 2\n"), "%s", r.out);
	gg_run_free(&r);
	gg_app_run_free(&a);
}

Test(leaks, ten_stacks_are_named_and_the_others_counted)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_LEAK_CHECK=1", NULL },
		   (const char *[]){ "sites:1:0", "alloc:100", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "(len(j['leaks']), j['errors'])", "(11, 11)");
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: leak: "), 11, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: leak: 1 more stack (the JSON summary's "
					     "\"leaks\" lists them all)"),
		     1, "%s", a.r.err);
	gg_app_run_free(&a);
}

/* Memory freed by destroying its context is freed: no leak. */
Test(leaks, allocations_freed_with_their_context_are_no_leaks)
{
	static const char *const runs[][6] = {
		{ "ctx", "alloc:100", "destroy", NULL }, { "ctx", "alloc:100", "old-destroy", NULL },
		{ "alloc:100", "reset", NULL },          { "alloc:100", "old-reset", NULL },
		{ "alloc:100", "free:0", NULL },
	};

	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		struct gg_app_run a;

		gg_app_run(&a, RZ,
			   (const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_LEAK_CHECK=1", NULL },
			   runs[i]);
		cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
		assert_json(&a, "(j['leaks'], j['errors'])", "([], 0)");
		cr_assert_eq(gg_count_lines(a.r.err, "leak"), 0, "%s", a.r.err);
		cr_assert_eq(gg_count_lines(a.r.err, "still live"), 0, "%s", a.r.err);
		gg_app_run_free(&a);
	}
}

Test(leaks, leak_check_without_red_zones_warns)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_LEAK_CHECK=1", NULL },
		   (const char *[]){ "alloc:100", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "WARN: GPUGUARD_LEAK_CHECK=1 without GPUGUARD_REDZONE"), 1,
		     "%s", a.r.err);
	assert_json(&a, "(j['leaks'], j['errors'])", "([], 0)");
	gg_app_run_free(&a);
}

/* ---- the files for CI ---- */

/* Each finding is a JUnit failure and a SARIF result of its own rule, with
 * its stacks; the SARIF follows its schema. */
Test(frees, findings_are_junit_failures_and_sarif_results_with_stacks)
{
	static const char check[] =
		"import json, sys, jsonschema\n"
		"s = json.load(open(sys.argv[1]))\n"
		"schema = json.load(open(sys.argv[2]))\n"
		"jsonschema.validators.validator_for(schema)(schema).validate(s)\n"
		"r = s['runs'][0]['results']\n"
		"print([(x['ruleId'], [t['message']['text'] for t in x.get('stacks', [])], "
		"x['locations'][0]['logicalLocations'][0]['name']) for x in r])\n";
	struct gg_app_run a;
	char sarif[160], junit[160];
	struct gg_run r;
	char *xml;

	gg_app_run(&a, RZ, (const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_LEAK_CHECK=1", NULL },
		   (const char *[]){ "alloc:100", "free:0", "free:0", "alloc:50", "ifree:1:8", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	snprintf(sarif, sizeof(sarif), "%s/out.sarif", a.dir);
	snprintf(junit, sizeof(junit), "%s/out.xml", a.dir);
	gg_run(&r, 0, NULL,
	       (const char *[]){ GG_CLI, "report", "--sarif", sarif, "--junit", junit, a.json, NULL });
	cr_assert_eq(gg_run_exit(&r), 1, "%s%s", r.out, r.err);
	cr_assert(strstr(r.out, "double free, cuMemFree_v2(0x"), "%s", r.out);
	cr_assert(strstr(r.out, "invalid free, cuMemFree_v2(0x"), "%s", r.out);
	cr_assert(strstr(r.out, "first free stack:"), "%s", r.out);
	gg_run_free(&r);
	gg_run(&r, 0, NULL,
	       (const char *[]){ "/usr/bin/python3", "-c", check, sarif,
				 GG_SOURCE_ROOT "/tests/data/sarif-schema-2.1.0.json", NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_assert_str_eq(r.out,
			 "[('double-free', ['allocation stack', 'first free stack', 'second free "
			 "stack'], 'main'), ('invalid-free', ['allocation stack', 'free stack'], "
			 "'main'), ('leak', ['allocation stack'], 'redzone_alloc')]\n");
	gg_run_free(&r);
	xml = gg_read_file(junit);
	cr_assert_not_null(xml);
	cr_assert(strstr(xml, "<failure type=\"double-free\" message=\"double free of allocation #0 "
			      "(100 bytes): cuMemFree_v2(0x"),
		  "%s", xml);
	cr_assert(strstr(xml, "<failure type=\"invalid-free\""), "%s", xml);
	cr_assert(strstr(xml, "<failure type=\"leak\" message=\"leak: 1 allocation (50 bytes) still "
			      "live at exit\""),
		  "%s", xml);
	free(xml);
	gg_app_run_free(&a);
}
