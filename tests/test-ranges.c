/* API ranges: a copy or set that reaches a red zone is refused as the driver
 * refuses it without one, never performed, and reported (api_overrun). Each
 * run of app-ranges is made with and without the shim, on the fake driver,
 * and the two stdouts (every result code the application saw) must agree. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "driver/real.h"

#define RANGES GG_APPS "/app-ranges"
#define MAX_ARGS 400

static const char *const routes[] = { "direct", "dlsym", "procaddr" };

/* The hooked copy and set family: one block of driver/hooks.def. */
static bool in_family(int id)
{
	return id >= GG_ID_cuMemcpy && id <= GG_ID_cuMemsetD2D32Async_ptsz;
}

static bool has(const char *name, const char *part)
{
	return strstr(name, part) != NULL;
}

/* Which sides of a family member are device memory. */
static bool writes_device(const char *name)
{
	return !has(name, "DtoH") && !has(name, "DtoA");
}

static bool reads_device(const char *name)
{
	return !has(name, "HtoD") && !has(name, "AtoD") && !has(name, "Memset");
}

/* A 2D or 3D form (not the batched 3D copies, whose operands are linear here). */
static bool planar(const char *name)
{
	return (has(name, "2D") || has(name, "3D")) && !has(name, "Batch");
}

struct runs {
	struct gg_run with, without;
	char dir[64], json[128];
	const char *argv[MAX_ARGS];
	char args[MAX_ARGS][96];
	int n;
};

static void arg(struct runs *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void arg(struct runs *r, const char *fmt, ...)
{
	va_list ap;

	cr_assert_lt(r->n, MAX_ARGS - 1);
	va_start(ap, fmt);
	vsnprintf(r->args[r->n], sizeof(r->args[r->n]), fmt, ap);
	va_end(ap);
	r->argv[r->n] = r->args[r->n];
	r->n++;
}

static void start(struct runs *r, const char *route)
{
	memset(r, 0, sizeof(*r));
	arg(r, "%s", RANGES);
	arg(r, "%s", route);
}

/* Each family member's step on buffer @k: @bytes for a linear range, rows of
 * @width bytes @pitch apart for a 2D or 3D one (@rows of them). */
static void every_member(struct runs *r, int k, long bytes, long pitch, long width, long rows)
{
	for (int id = 0; id < GG_HOOK_COUNT; id++) {
		const char *name = gg_real_name((enum gg_hook_id)id);

		if (!in_family(id))
			continue;
		if (writes_device(name) && planar(name))
			arg(r, "to3d:%s:%d:%ld:%ld:%ld:1", name, k, pitch, width, rows);
		else if (writes_device(name))
			arg(r, "to:%s:%d:%ld", name, k, bytes);
		if (reads_device(name) && planar(name))
			arg(r, "from3d:%s:%d:%ld:%ld:%ld:1", name, k, pitch, width, rows);
		else if (reads_device(name))
			arg(r, "from:%s:%d:%ld", name, k, bytes);
	}
}

static int members(void)
{
	int n = 0;

	for (int id = 0; id < GG_HOOK_COUNT; id++) {
		const char *name = gg_real_name((enum gg_hook_id)id);

		n += in_family(id) ? writes_device(name) + reads_device(name) : 0;
	}
	return n;
}

/* Run the steps without the shim, then with it (@env, and red zones of 64
 * bytes unless @env says otherwise), and require the same stdout: the
 * application saw the same results. */
static void run(struct runs *r, const char *const *env)
{
	const char *e[16];
	char json_env[160];
	bool redzone = false;
	int n = 0;

	r->argv[r->n] = NULL;
	gg_test_dir(r->dir, sizeof(r->dir));
	snprintf(r->json, sizeof(r->json), "%s/summary.json", r->dir);
	snprintf(json_env, sizeof(json_env), "GPUGUARD_SUMMARY_JSON=%s", r->json);
	e[n++] = json_env;
	for (; env && *env && n < 14; env++) {
		redzone |= !strncmp(*env, "GPUGUARD_REDZONE=", 17);
		e[n++] = *env;
	}
	if (!redzone)
		e[n++] = "GPUGUARD_REDZONE=64";
	e[n] = NULL;
	gg_run(&r->without, GG_RUN_FAKE, NULL, r->argv);
	gg_run(&r->with, GG_RUN_SHIM | GG_RUN_FAKE, e, r->argv);
	cr_assert_eq(gg_run_exit(&r->without), 0, "%s", r->without.err);
	cr_assert_str_eq(r->with.out, r->without.out,
			 "%s: the application saw other results under the shim\n-- with --\n%s\n"
			 "-- without --\n%s\n-- stderr --\n%s",
			 r->argv[1], r->with.out, r->without.out, r->with.err);
}

static void done(struct runs *r)
{
	gg_run_free(&r->with);
	gg_run_free(&r->without);
}

static void assert_json(struct runs *r, const char *expr, const char *want)
{
	char *got = gg_json(r->json, expr);

	cr_assert_str_eq(got, want, "%s\ngot:  %s\nwant: %s\nstdout:\n%s\nstderr:\n%s", expr, got, want,
			 r->with.out, r->with.err);
	free(got);
}

static void assert_results(struct runs *r, const char *result, int want)
{
	int n = (int)gg_count_lines(r->without.out, result);

	cr_assert_eq(n, want, "%d lines with \"%s\", not %d:\n%s", n, result, want, r->without.out);
}

/* ---- past the end ---- */

/* 116 bytes into 100 (the copy), or three rows 40 bytes apart whose
 * last one ends 4 bytes past. */
Test(ranges, every_copy_and_set_past_the_end_is_refused_as_without_the_shim_on_every_route)
{
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		struct runs r;
		char want[64];

		start(&r, routes[i]);
		arg(&r, "alloc:100");
		every_member(&r, 0, 116, 40, 24, 3);
		arg(&r, "free:0");
		run(&r, NULL);
		assert_results(&r, ": CUDA_ERROR_INVALID_VALUE", members());
		assert_results(&r, "not found", 0);
		/* A batch's copies before the refused one are done, as the driver does
		 * them: eight batched forms, each writing and reading. */
		assert_results(&r, "(its first copy done)", 16);
		/* Refused, reported once each, and the band untouched: nothing at its free. */
		snprintf(want, sizeof(want), "(%d, %d, {'api_overrun'}, {(0, 100)}, %d)", members(),
			 members(), members());
		assert_json(&r,
			    "(len(j['violations']), len({(v['api'], v['side']) for v in "
			    "j['violations']}), {v.get('kind') for v in j['violations']}, "
			    "{(v['index'], v['user_bytes']) for v in j['violations']}, j['errors'])",
			    want);
		cr_assert_eq(gg_count_lines(r.with.err, "ERROR: api_overrun: "), (size_t)members(),
			     "%s", r.with.err);
		cr_assert_eq(gg_count_lines(r.with.err, "red zone violation"), 0, "%s", r.with.err);
		done(&r);
	}
}

/* The last byte of the range is the allocation's last: nothing to report. */
Test(ranges, every_copy_and_set_that_ends_exactly_at_the_end_is_allowed_and_reported_nowhere)
{
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		struct runs r;

		start(&r, routes[i]);
		arg(&r, "alloc:100");
		every_member(&r, 0, 100, 40, 20, 3);
		arg(&r, "free:0");
		run(&r, NULL);
		assert_results(&r, ": CUDA_SUCCESS", members() + 1);
		assert_json(&r, "(j['violations'], j['errors'])", "([], 0)");
		cr_assert_eq(gg_count_lines(r.with.err, "ERROR"), 0, "%s", r.with.err);
		done(&r);
	}
}

/* Within the user bytes, anywhere: inside, from an interior pointer. */
Test(ranges, a_range_inside_the_allocation_from_an_interior_pointer_is_allowed)
{
	struct runs r;

	start(&r, "direct");
	arg(&r, "alloc:100");
	arg(&r, "to:cuMemcpyHtoD_v2:0:50:50");
	arg(&r, "to:cuMemsetD32_v2:0:96:4");
	arg(&r, "from:cuMemcpyDtoD_v2:0:1:99");
	arg(&r, "to:cuMemcpyHtoD_v2:0:51:50");
	run(&r, NULL);
	assert_results(&r, ": CUDA_SUCCESS", 3);
	assert_json(&r,
		    "[(v['api'], int(v['address'], 16) - int(v['ptr'], 16), v['bytes']) "
		    "for v in j['violations']]",
		    "[('cuMemcpyHtoD_v2', 50, 51)]");
	done(&r);
}

/* ---- before the start ---- */

/* 448 bytes and a 64-byte band fill two 256-byte granules of the fake (one
 * of 512 of NVIDIA's): the next allocation starts right after the band, so
 * one byte before it is the band's last. */
Test(ranges, a_set_starting_one_byte_before_an_allocation_is_refused_in_the_band_below_it)
{
	struct runs r;

	start(&r, "direct");
	arg(&r, "alloc:448");
	arg(&r, "alloc:100");
	arg(&r, "to:cuMemsetD8_v2:1:1:-1");
	arg(&r, "to:cuMemsetD8Async:1:1:-1");
	arg(&r, "free:1");
	arg(&r, "free:0");
	run(&r, NULL);
	assert_results(&r, "to 1: CUDA_ERROR_INVALID_VALUE", 2);
	assert_json(&r,
		    "[(v['api'], v['index'], v['user_bytes'], v['bytes']) for v in j['violations']]",
		    "[('cuMemsetD8_v2', 0, 448, 1), ('cuMemsetD8Async', 0, 448, 1)]");
	cr_assert_eq(gg_count_lines(r.with.err, "1 byte: starts 63 bytes past the end of allocation "
						"#0 (448 bytes at 0x"),
		     2, "%s", r.with.err);
	done(&r);
}

/* ---- 2D and 3D ---- */

/* The last row needs only its width: rows 40 apart, 20 wide, end at 100. */
Test(ranges, a_2d_copy_whose_last_row_runs_past_is_refused_and_one_that_ends_at_the_end_is_not)
{
	struct runs r;

	start(&r, "dlsym");
	arg(&r, "alloc:100");
	arg(&r, "to3d:cuMemcpy2D_v2:0:40:20:3:1");
	arg(&r, "to3d:cuMemcpy2D_v2:0:40:21:3:1");
	arg(&r, "from3d:cuMemcpy2DAsync_v2:0:40:20:3:1");
	arg(&r, "from3d:cuMemcpy2DAsync_v2:0:40:21:3:1");
	arg(&r, "to3d:cuMemcpy3D_v2:0:20:20:5:1");
	arg(&r, "to3d:cuMemcpy3D_v2:0:20:20:3:2");
	arg(&r, "free:0");
	run(&r, NULL);
	assert_results(&r, ": CUDA_SUCCESS", 3 + 1 /* the free */);
	assert_json(&r, "[(v['api'], v['side'], v['bytes']) for v in j['violations']]",
		    "[('cuMemcpy2D_v2', 'dst', 101), ('cuMemcpy2DAsync_v2', 'src', 101), "
		    "('cuMemcpy3D_v2', 'dst', 120)]");
	done(&r);
}

/* A pitched allocation's band follows pitch * height: a fifth row of four is past it. */
Test(ranges, a_copy_past_pitch_times_height_of_a_pitched_allocation_is_refused)
{
	struct runs r;

	start(&r, "procaddr");
	arg(&r, "pitch:64:4");
	arg(&r, "to3d:cuMemcpy2D_v2:0:512:64:4:1");
	arg(&r, "to3d:cuMemcpy2D_v2:0:512:64:5:1");
	arg(&r, "to3d:cuMemsetD2D32Async:0:512:64:5:1");
	arg(&r, "to:cuMemcpyHtoDAsync_v2:0:2049");
	/* Past the band too: the spare rows a pitched allocation got for it. */
	arg(&r, "to:cuMemsetD8_v2:0:1:2200");
	arg(&r, "free:0");
	run(&r, NULL);
	assert_results(&r, "pitch 64 x 4: buffer 0, pitch 512", 1);
	assert_results(&r, ": CUDA_SUCCESS", 1 + 1 /* the free */);
	assert_json(&r,
		    "[(v['api'], v['index'], v['user_bytes'], v['bytes']) for v in j['violations']]",
		    "[('cuMemcpy2D_v2', 0, 2048, 2112), ('cuMemsetD2D32Async', 0, 2048, 2112), "
		    "('cuMemcpyHtoDAsync_v2', 0, 2048, 2049), ('cuMemsetD8_v2', 0, 2048, 1)]");
	done(&r);
}

/* ---- what a finding says ---- */

Test(ranges, an_api_overrun_names_the_call_the_range_the_allocation_and_the_call_site)
{
	struct runs r;

	start(&r, "direct");
	arg(&r, "alloc:100");
	arg(&r, "to:cuMemcpyHtoD_v2:0:116");
	run(&r, (const char *[]){ "GPUGUARD_EXITCODE=86", NULL });
	cr_assert_eq(gg_run_exit(&r.with), 86, "%s", r.with.err);
	assert_json(&r,
		    "[(v['kind'], v['api'], v['side'], v['address'] == v['ptr'], v['bytes'], "
		    "v['index'], v['user_bytes'], v['result'], v['call_site']['symbol'].split('+')[0], "
		    "v['site']['object'].endswith('app-ranges')) for v in j['violations']]",
		    "[('api_overrun', 'cuMemcpyHtoD_v2', 'dst', True, 116, 0, 100, "
		    "'CUDA_ERROR_INVALID_VALUE', 'ranges_linear', True)]");
	assert_json(&r, "j['errors']", "1");
	/* The allocation's stack, as the band's findings carry it: the call site first. */
	assert_json(&r,
		    "[(len(v['stack']) > 1, v['stack'][0]['address'] == v['site']['address']) "
		    "for v in j['violations']]",
		    "[(True, True)]");
	cr_assert_eq(gg_count_lines(r.with.err, "ERROR: api_overrun: cuMemcpyHtoD_v2 dst 0x"), 1, "%s",
		     r.with.err);
	cr_assert_eq(gg_count_lines(r.with.err, ", 116 bytes: runs 16 bytes past the end of "
						"allocation #0 (100 bytes at 0x"),
		     1, "%s", r.with.err);
	cr_assert_eq(gg_count_lines(r.with.err,
				    "refused with CUDA_ERROR_INVALID_VALUE, the driver's "
				    "answer without the red zone; called at ranges_linear+0x"),
		     1, "%s", r.with.err);
	cr_assert_eq(gg_count_lines(r.with.err, "1 allocation, 1 padded; 1 violation"), 1, "%s",
		     r.with.err);
	done(&r);
}

Test(ranges, halt_on_error_stops_at_the_first_api_overrun_with_its_reports_written)
{
	struct runs r;

	start(&r, "direct");
	arg(&r, "alloc:100");
	arg(&r, "to:cuMemsetD8_v2:0:101");
	arg(&r, "to:cuMemsetD8_v2:0:100");
	r.argv[r.n] = NULL;
	gg_test_dir(r.dir, sizeof(r.dir));
	snprintf(r.json, sizeof(r.json), "%s/summary.json", r.dir);
	char json_env[160];

	snprintf(json_env, sizeof(json_env), "GPUGUARD_SUMMARY_JSON=%s", r.json);
	gg_run(&r.with, GG_RUN_SHIM | GG_RUN_FAKE,
	       (const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_HALT_ON_ERROR=1", json_env, NULL },
	       r.argv);
	gg_run(&r.without, GG_RUN_FAKE, NULL, r.argv);
	cr_assert_eq(gg_run_exit(&r.with), -6, "%s", r.with.err);
	cr_assert_null(strstr(r.with.out, "cuMemsetD8_v2 to 0"), "%s", r.with.out);
	assert_json(&r, "[v['api'] for v in j['violations']]", "['cuMemsetD8_v2']");
	done(&r);
}

/* ---- routes ---- */

/* With red zones off a copy has no work: dlsym and cuGetProcAddress hand out
 * the driver's own function; with them on, the wrapper. */
Test(ranges, copies_are_handed_out_only_while_red_zones_are_on)
{
	static const char *const fns[] = { "cuMemcpyHtoD_v2", "cuMemsetD2D8Async_ptsz",
					   "cuMemcpyBatchAsync_v2", "cuMemcpy3DPeer_ptds" };

	for (size_t i = 1; i < sizeof(routes) / sizeof(routes[0]); i++)
		for (int on = 0; on < 2; on++) {
			struct gg_run g;
			const char *argv[8] = { RANGES, routes[i] };
			char steps[4][64], want[128];

			for (int k = 0; k < 4; k++) {
				snprintf(steps[k], sizeof(steps[k]), "where:%s", fns[k]);
				argv[2 + k] = steps[k];
			}
			gg_run(&g, GG_RUN_SHIM | GG_RUN_FAKE,
			       (const char *[]){ on ? "GPUGUARD_REDZONE=64" : "GPUGUARD_REDZONE=0",
						 NULL },
			       argv);
			cr_assert_eq(gg_run_exit(&g), 0, "%s", g.err);
			for (int k = 0; k < 4; k++) {
				snprintf(want, sizeof(want), "%s: %s:%s\n", fns[k],
					 on ? "libgpuguard.so" : "libcuda.so.1", fns[k]);
				cr_assert_neq(strstr(g.out, want), NULL, "%s: missing %s in:\n%s",
					      routes[i], want, g.out);
			}
			gg_run_free(&g);
		}
}

/* Red zones off, every route: nothing checked, nothing reported, the
 * driver's answers as they are. */
Test(ranges, with_red_zones_off_every_copy_passes_straight_to_the_driver)
{
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		struct runs r;

		start(&r, routes[i]);
		arg(&r, "alloc:100");
		every_member(&r, 0, 116, 40, 24, 3);
		run(&r, (const char *[]){ "GPUGUARD_REDZONE=0", NULL });
		assert_results(&r, ": CUDA_ERROR_INVALID_VALUE", members());
		assert_json(&r, "(j['violations'], j['errors'])", "([], 0)");
		done(&r);
	}
}

/* ---- interior pointers into memory handed out again ---- */

#define RZ GG_APPS "/app-redzone"

/* app-redzone's @steps under the shim (@env and GG_TEST_PTX) and without
 * it: the same stdout, and no finding at all. */
static void assert_unrefused(const char *const *env, const char *const *steps)
{
	const char *args[32] = { RZ };
	struct gg_app_run a;
	struct gg_run r;
	size_t n = 1;

	for (; steps[n - 1] && n < 31; n++)
		args[n] = steps[n - 1];
	args[n] = NULL;
	gg_run(&r, GG_RUN_FAKE, (const char *[]){ "GG_TEST_PTX=" GG_PTX, NULL }, args);
	gg_app_run(&a, RZ, env, steps);
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_assert_str_eq(a.r.out, r.out,
			 "%s: other results under the shim\n-- with --\n%s\n"
			 "-- without --\n%s\n-- stderr --\n%s",
			 steps[n - 2], a.r.out, r.out, a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR"), 0, "%s", a.r.err);
	char *got = gg_json(a.json, "(j['violations'], j['errors'])");

	cr_assert_str_eq(got, "([], 0)", "%s", a.r.err);
	free(got);
	gg_run_free(&r);
	gg_app_run_free(&a);
}

/* Buffer 1 (4000 bytes) is not padded (the fake's limit leaves no room for
 * a band: oom_fallback) and lies between two zones; a copy into its middle
 * teaches the thread where it starts. Freed (on this thread or another,
 * where the shim sees only a pointer it did not pad), its place goes to
 * buffers 3 and 4 of 100 bytes, each padded: 16 bytes 8 into buffer 4 are
 * its own, though the thread once knew that address as 2056 bytes into an
 * allocation starting where buffer 3 now does. */
#define REUSED(free_step, alloc3, alloc4, touch)                                                 \
	(const char *[])                                                                         \
	{                                                                                        \
		"alloc:64", "limit:4319", "alloc:4000", "limit:0", "alloc:64", "icopy:1:2048:8", \
			free_step, alloc3, alloc4, touch, "free:3", touch, NULL                  \
	}

Test(ranges, a_copy_or_set_into_memory_freed_unseen_and_handed_out_again_is_never_refused)
{
	static const char *const frees[] = { "free:1", "tfree:1" };
	static const char *const touches[] = { "icopy:4:8:16", "iset:4:8:16", "ifill:4:8:16" };
	static const char *const quarantine[] = { "GPUGUARD_QUARANTINE=0",
						  "GPUGUARD_QUARANTINE=100000" };

	for (size_t f = 0; f < 2; f++)
		for (size_t t = 0; t < 3; t++)
			for (size_t q = 0; q < 2; q++) {
				const char *env[] = { "GPUGUARD_REDZONE=64", quarantine[q], NULL };

				assert_unrefused(
					env, REUSED(frees[f], "alloc:100", "alloc:100", touches[t]));
				/* Handed out again on another thread. */
				assert_unrefused(
					env, REUSED(frees[f], "talloc:100", "talloc:100", touches[t]));
			}
}

/* The memory of a context dies with it, freed by no call the shim follows
 * one by one: the next context's allocations take its place. */
Test(ranges, a_copy_or_set_into_a_dead_contexts_memory_handed_out_again_is_never_refused)
{
	static const char *const touches[] = { "icopy:3:8:16", "iset:3:8:16", "ifill:3:8:16" };

	for (size_t t = 0; t < 3; t++)
		for (int q = 0; q < 2; q++) {
			const char *env[] = { "GPUGUARD_REDZONE=64",
					      q ? "GPUGUARD_QUARANTINE=100000"
						: "GPUGUARD_QUARANTINE=0",
					      NULL };

			assert_unrefused(env, (const char *[]){ "alloc:64", "ctx", "alloc:4000",
								"icopy:1:2048:8", "destroy",
								"alloc:100", "alloc:100", "same:1:2",
								"free:2", touches[t], NULL });
		}
}
