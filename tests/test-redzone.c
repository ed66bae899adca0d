/* Red zones (docs/how-it-works.md, "Red zones"), through app-redzone and the fake driver. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "base/gg.h"
#include "options/config.h"
#include "redzone/band.h"
#include "redzone/redzone.h"
#include "redzone/registry.h"
#include "report/report.h"

#define RZ GG_APPS "/app-redzone"

static void run_rz(struct gg_app_run *a, const char *const *env, const char *const *steps)
{
	gg_app_run(a, RZ, env, steps);
}

static void assert_json(struct gg_app_run *a, const char *expr, const char *want)
{
	char *got = gg_json(a->json, expr);

	cr_assert_str_eq(got, want, "%s\ngot:  %s\nwant: %s\nstdout:\n%s\nstderr:\n%s", expr, got, want,
			 a->r.out, a->r.err);
	free(got);
}

static void assert_out(struct gg_app_run *a, const char *line)
{
	cr_assert_neq(strstr(a->r.out, line), NULL, "missing \"%s\" in:\n%s\nstderr:\n%s", line,
		      a->r.out, a->r.err);
}

/* " xx" repeated @n times. */
static const char *bytes_of(unsigned value, int n)
{
	static char buf[4 * 256 + 1];

	buf[0] = '\0';
	for (int i = 0; i < n; i++)
		snprintf(buf + 3 * i, sizeof(buf) - 3 * (size_t)i, " %02x", value);
	return buf;
}

static const char *band_line(int k, unsigned value, int n)
{
	static char line[4 * 256 + 32];

	snprintf(line, sizeof(line), "band %d:%s\n", k, bytes_of(value, n));
	return line;
}

/* Violations as (index, user, pad, first, last, changed, first_value, detected_by). */
#define VIOLATIONS                                                                             \
	"[(v['index'], v['user_bytes'], v['pad_bytes'], v['first'], v['last'], v['changed'], " \
	"v['first_value'], v['detected_by']) for v in j['violations']]"

/* Coverage as (allocations, guarded, guarded_bytes, unguarded, unguarded_bytes). */
#define COVERAGE                                                       \
	"(j['coverage']['allocations'], j['coverage']['guarded'], "    \
	"j['coverage']['guarded_bytes'], j['coverage']['unguarded'], " \
	"j['coverage']['unguarded_bytes'])"

/* ---- the band ---- */

Test(redzone, band_holds_the_default_fill_rounded_up_to_16)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=20", "GPUGUARD_VERBOSITY=2", NULL },
	       (const char *[]){ "alloc:100", "band:0:32", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, band_line(0, 0xee, 32));
	cr_assert_eq(gg_count_lines(a.r.err, "cuMemAlloc_v2(100 bytes) #0 -> CUDA_SUCCESS 0x"), 1);
	cr_assert_eq(gg_count_lines(a.r.err, "red zone of 32 bytes"), 1, "%s", a.r.err);
	assert_json(&a, "(j['allocations']['padded'], j['violations'], j['errors'])", "(1, [], 0)");
	gg_app_run_free(&a);
}

Test(redzone, band_holds_a_chosen_fill)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", "GPUGUARD_REDZONE_FILL=0x5a", NULL },
	       (const char *[]){ "alloc:64", "alloc:7", "band:0:16", "band:1:16", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, band_line(0, 0x5a, 16));
	assert_out(&a, band_line(1, 0x5a, 16));
	assert_json(&a, "j['config']['fill']", "90");
	gg_app_run_free(&a);
}

Test(redzone, allocations_below_min_idx_get_no_band)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", "GPUGUARD_REDZONE_MIN_IDX=2", NULL },
	       (const char *[]){ "alloc:64", "alloc:64", "alloc:64", "band:0:16", "band:2:16",
				 "range:0:0", "range:2:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert_eq(strstr(a.r.out, band_line(0, 0xee, 16)), NULL, "index 0 padded:\n%s", a.r.out);
	assert_out(&a, band_line(2, 0xee, 16));
	assert_json(&a, "(j['allocations']['calls'], j['allocations']['padded'])", "(3, 1)");
	gg_app_run_free(&a);
}

Test(redzone, zero_bytes_and_no_redzone_are_not_padded)
{
	struct gg_app_run a;

	run_rz(&a, NULL, (const char *[]){ "alloc:64", NULL });
	assert_json(&a, "(j['allocations']['calls'], j['allocations']['padded'])", "(1, 0)");
	gg_app_run_free(&a);
	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:0", NULL });
	/* The driver refuses 0 bytes, padded or not. */
	assert_out(&a, "alloc 0: 1 buffer 0\n");
	assert_json(&a,
		    "(j['allocations']['calls'], j['allocations']['failed'], "
		    "j['allocations']['padded'])",
		    "(1, 1, 0)");
	gg_app_run_free(&a);
}

/* ---- overruns ---- */

Test(redzone, kernel_overrun_is_reported_at_free_with_exact_fields)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:1000", "alloc:200", "overrun:1:8", "free:1", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, VIOLATIONS, "[(1, 200, 64, 0, 7, 8, 65, 'free')]");
	assert_json(&a, "j['violations'][0]['site']['symbol'].split('+')[0]", "redzone_alloc");
	assert_json(&a, "(j['allocations']['live'], j['errors'])", "(0, 1)");
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: red zone violation (free): allocation #1 of 200 "
					     "bytes at 0x"),
		     1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "64-byte band: 8 bytes changed at offsets 0..7 past the "
					     "end, first 0x41 (expected 0xee); allocated at "
					     "redzone_alloc+0x"),
		     1, "%s", a.r.err);
	gg_app_run_free(&a);
}

Test(redzone, a_write_past_the_end_is_reported_at_a_scan)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=32", "GPUGUARD_BOUNDARY=sync:1", NULL },
	       (const char *[]){ "alloc:100", "poke:0:3", "sync", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, VIOLATIONS, "[(0, 100, 32, 0, 2, 3, 66, 'scan')]");
	assert_json(&a, "(j['redzones']['scans'] >= 1, j['redzones']['checked'] >= 1)", "(True, True)");
	gg_app_run_free(&a);
}

/* The zones sit in shards by their address's hash; the report follows the
 * allocations (as a free-time report does), the same on every machine. */
Test(redzone, a_scan_reports_its_violations_in_allocation_order)
{
	const char *steps[2 * 12 + 2];
	char args[2 * 12][16];
	struct gg_app_run a;
	int n = 0;

	for (int k = 0; k < 12; k++)
		snprintf(args[n], sizeof(args[n]), "alloc:%d", 100 + 16 * k), steps[n] = args[n], n++;
	for (int k = 11; k >= 0; k--) /* written in the reverse order, too */
		snprintf(args[n], sizeof(args[n]), "poke:%d:1", k), steps[n] = args[n], n++;
	steps[n++] = "sync";
	steps[n] = NULL;
	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=32", "GPUGUARD_BOUNDARY=sync:1", NULL }, steps);
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "[(v['index'], v['detected_by']) for v in j['violations']]",
		    "[(0, 'scan'), (1, 'scan'), (2, 'scan'), (3, 'scan'), (4, 'scan'), (5, 'scan'), "
		    "(6, 'scan'), (7, 'scan'), (8, 'scan'), (9, 'scan'), (10, 'scan'), (11, 'scan')]");
	gg_app_run_free(&a);
}

/* Indexes far apart (each "many" allocates and frees 3000 between them) are
 * put in order by radix passes, not by slots: the report order holds. */
Test(redzone, a_scan_reports_in_allocation_order_allocations_thousands_of_indexes_apart)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=32", "GPUGUARD_BOUNDARY=sync:1", NULL },
	       (const char *[]){ "alloc:100", "many:3000:16", "alloc:100", "many:3000:16", "alloc:100",
				 "many:3000:16", "alloc:100", "poke:3:1", "poke:1:1", "poke:0:1",
				 "poke:2:1", "sync", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "[(v['index'], v['detected_by']) for v in j['violations']]",
		    "[(0, 'scan'), (3001, 'scan'), (6002, 'scan'), (9003, 'scan')]");
	gg_app_run_free(&a);
}

/* One read per context: a scan reports a context's violations together, the
 * context whose zones came first first, each in allocation order. */
Test(redzone, a_scan_reports_by_context_then_allocation_order)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=32", "GPUGUARD_BOUNDARY=sync:1", NULL },
	       (const char *[]){ "alloc:100", "ctx", "alloc:100", "push", "alloc:100", "poke:2:1",
				 "poke:1:1", "poke:0:1", "sync", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "[(v['index'], v['detected_by']) for v in j['violations']]",
		    "[(0, 'scan'), (2, 'scan'), (1, 'scan')]");
	assert_json(&a, "j['redzones']['batched']", "True");
	gg_app_run_free(&a);
}

Test(redzone, a_scan_refills_so_the_next_reports_only_new_writes)
{
	struct gg_app_run a;

	run_rz(&a,
	       (const char *[]){ "GPUGUARD_REDZONE=32", "GPUGUARD_BOUNDARY=sync:1,sync:2,sync:3",
				 NULL },
	       (const char *[]){ "alloc:100", "poke:0:5", "sync", "sync", "poke:0:2", "sync",
				 "band:0:32", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, VIOLATIONS,
		    "[(0, 100, 32, 0, 4, 5, 66, 'scan'), (0, 100, 32, 0, 1, 2, 66, 'scan')]");
	/* The last scan re-filled what the second copy wrote. */
	assert_out(&a, band_line(0, 0xee, 32));
	gg_app_run_free(&a);
}

Test(redzone, last_byte_of_the_band_is_checked_too)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", NULL },
	       (const char *[]){ "alloc:48", "overrun:0:16", "free:0", NULL });
	assert_json(&a, VIOLATIONS, "[(0, 48, 16, 0, 15, 16, 65, 'free')]");
	gg_app_run_free(&a);
}

Test(redzone, stream_ordered_allocation_is_filled_on_its_stream_and_checked_at_free)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", "GPUGUARD_VERBOSITY=2", NULL },
	       (const char *[]){ "async:256", "band:0:16", "overrun:0:4", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, band_line(0, 0xee, 16));
	assert_json(&a, VIOLATIONS, "[(0, 256, 16, 0, 3, 4, 65, 'free')]");
	cr_assert_eq(gg_count_lines(a.r.err, "cuMemAllocAsync(256 bytes) #0 -> CUDA_SUCCESS"), 1);
	gg_app_run_free(&a);
}

Test(redzone, check_on_free_can_be_turned_off)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", "GPUGUARD_CHECK_ON_FREE=0", NULL },
	       (const char *[]){ "alloc:64", "overrun:0:4", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "(j['violations'], j['allocations']['live'])", "([], 0)");
	gg_app_run_free(&a);
}

/* A band never checked is counted unchecked, with why: never passed for clean. */
Test(redzone, a_band_freed_unchecked_is_counted_unchecked_with_its_reason)
{
	struct gg_app_run a;
	struct gg_run rep;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", "GPUGUARD_CHECK_ON_FREE=0", NULL },
	       (const char *[]){ "alloc:64", "alloc:64", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	/* The live one is checked at exit, the freed one never. */
	assert_json(
		&a,
		"(j['redzones']['checked'], j['redzones']['unchecked'], "
		"j['redzones']['unchecked_reasons'])",
		"(1, 1, {'check_on_free_off': 1, 'capturing': 0, 'unreadable': 0, 'no_memory': 0})");
	gg_run(&rep, 0, NULL, (const char *[]){ GG_CLI, "report", a.json, NULL });
	cr_assert_neq(strstr(rep.out, "1 band checked, 1 unchecked (1 check_on_free_off)"), NULL, "%s",
		      rep.out);
	gg_run_free(&rep);
	gg_app_run_free(&a);
	/* Checked at free: nothing unchecked, and no reason in the report. */
	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", NULL },
	       (const char *[]){ "alloc:64", "alloc:64", "free:0", NULL });
	assert_json(&a,
		    "(j['redzones']['checked'], j['redzones']['unchecked'], "
		    "sum(j['redzones']['unchecked_reasons'].values()))",
		    "(2, 0, 0)");
	gg_run(&rep, 0, NULL, (const char *[]){ GG_CLI, "report", a.json, NULL });
	cr_assert_neq(strstr(rep.out, "2 bands checked, 0 unchecked\n"), NULL, "%s", rep.out);
	gg_run_free(&rep);
	gg_app_run_free(&a);
}

Test(redzone, exit_scans_the_bands_still_live)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", NULL },
	       (const char *[]){ "alloc:64", "alloc:64", "overrun:1:1", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, VIOLATIONS, "[(1, 64, 16, 0, 0, 1, 65, 'exit')]");
	assert_json(&a, "(j['redzones']['checked'], j['allocations']['live'])", "(2, 2)");
	gg_app_run_free(&a);
}

Test(redzone, clean_run_reports_nothing)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_BOUNDARY=sync:1", NULL },
	       (const char *[]){ "alloc:64", "alloc:1000", "overrun:0:0", "sync", "free:0", "free:1",
				 NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "] ERROR: "), 0, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "] WARN: "), 0, "%s", a.r.err);
	assert_json(&a, "(j['violations'], j['errors'], j['redzones']['checked'] >= 4)",
		    "([], 0, True)");
	gg_app_run_free(&a);
}

Test(redzone, halt_on_error_aborts_at_the_first_violation)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", "GPUGUARD_HALT_ON_ERROR=1", NULL },
	       (const char *[]){ "alloc:64", "overrun:0:2", "free:0", "alloc:64", NULL });
	cr_assert_eq(gg_run_exit(&a.r), -SIGABRT, "%s", a.r.err);
	cr_assert_eq(strstr(a.r.out, "free 0"), NULL, "aborted inside the free: %s", a.r.out);
	assert_json(&a, "len(j['violations'])", "1");
	/* The stop is said, after the violation, at every verbosity. */
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: halting at the first error "
					     "(GPUGUARD_HALT_ON_ERROR=1)"),
		     1, "%s", a.r.err);
	cr_assert_gt(strstr(a.r.err, "ERROR: halting"), strstr(a.r.err, "red zone violation"));
	gg_app_run_free(&a);
	run_rz(&a,
	       (const char *[]){ "GPUGUARD_REDZONE=16", "GPUGUARD_HALT_ON_ERROR=1",
				 "GPUGUARD_VERBOSITY=0", NULL },
	       (const char *[]){ "alloc:64", "overrun:0:2", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), -SIGABRT, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: halting at the first error"), 1, "%s", a.r.err);
	gg_app_run_free(&a);
	/* No violation, no halt line. */
	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", "GPUGUARD_HALT_ON_ERROR=1", NULL },
	       (const char *[]){ "alloc:64", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "halting"), 0, "%s", a.r.err);
	gg_app_run_free(&a);
}

Test(redzone, verbosity_zero_still_detects)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", "GPUGUARD_VERBOSITY=0", NULL },
	       (const char *[]){ "alloc:64", "overrun:0:2", "free:0", NULL });
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: red zone violation (free)"), 1, "%s", a.r.err);
	assert_json(&a, "j['errors']", "1");
	gg_app_run_free(&a);
}

/* ---- poison ---- */

Test(redzone, poison_fills_the_range_and_zeroes_the_rest_without_false_reports)
{
	struct gg_app_run a;

	run_rz(&a,
	       (const char *[]){ "GPUGUARD_REDZONE=16", "GPUGUARD_REDZONE_POISON=1:3",
				 "GPUGUARD_REDZONE_FILL=0x77", "GPUGUARD_BOUNDARY=sync:1", NULL },
	       (const char *[]){ "alloc:32", "alloc:32", "alloc:32", "alloc:32", "sync", "band:0:16",
				 "band:1:16", "band:2:16", "band:3:16", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, band_line(0, 0x00, 16));
	assert_out(&a, band_line(1, 0x77, 16));
	assert_out(&a, band_line(2, 0x77, 16));
	assert_out(&a, band_line(3, 0x00, 16));
	assert_json(&a, "(j['violations'], j['redzones']['checked'])", "([], 8)");
	gg_app_run_free(&a);
}

Test(redzone, reading_past_the_end_sees_the_poison)
{
	struct gg_app_run a;

	/* The output of a read past the end changes with the band's byte. */
	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", "GPUGUARD_REDZONE_POISON=0:1", NULL },
	       (const char *[]){ "alloc:4", "copy:0:0", "sum:0:2", NULL });
	assert_out(&a, "sum of 0 + 2 bytes: 740\n"); /* 4 x 0x42 + 2 x 0xee */
	gg_app_run_free(&a);
	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", "GPUGUARD_REDZONE_POISON=1:2", NULL },
	       (const char *[]){ "alloc:4", "copy:0:0", "sum:0:2", NULL });
	assert_out(&a, "sum of 0 + 2 bytes: 264\n"); /* 4 x 0x42 + 2 x 0x00 */
	gg_app_run_free(&a);
}

/* ---- padding stays invisible ---- */

Test(redzone, out_of_memory_on_the_padded_request_is_retried_unpadded)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "limit:1000", "alloc:1000", "alloc:1", "range:0:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, "alloc 1000: 0 buffer 0\n");
	assert_out(&a, "alloc 1: 2 buffer 1\n"); /* the limit is the application's own */
	assert_out(&a, "range 0+0: 0 base buffer size 1000\n");
	assert_json(&a,
		    "(j['allocations']['calls'], j['allocations']['failed'], "
		    "j['allocations']['padded'], j['allocations']['unpadded_fallbacks'])",
		    "(2, 1, 0, 2)");
	/* One allocation made, unguarded for that reason (the failed one is none). */
	assert_json(&a, COVERAGE, "(1, 0, 0, {'oom_fallback': 1}, 1000)");
	gg_app_run_free(&a);
}

Test(redzone, address_range_and_pointer_attributes_report_the_user_size)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:100", "range:0:0", "range:0:99", "range:0:100", "attr:0:0",
				 "attr:0:50", "attr:0:120", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, "range 0+0: 0 base buffer size 100\n");
	assert_out(&a, "range 0+99: 0 base buffer size 100\n");
	assert_out(&a, "range 0+100: 500 base none size 0\n"); /* inside the band: unknown */
	assert_out(&a, "attr 0+0: 0 size 100; attrs: 0 size 100\n");
	assert_out(&a, "attr 0+50: 0 size 100; attrs: 0 size 100\n");
	assert_out(&a, "attr 0+120: 1 size 0; attrs: 0 size 0\n");
	gg_app_run_free(&a);
}

Test(redzone, padding_changes_no_output_of_a_clean_program)
{
	static const char *const steps[] = { RZ,         "alloc:100", "range:0:10", "attr:0:10",
					     "async:64", "copy:0:0",  "sum:0:0",    "free:1",
					     "free:0",   NULL };
	struct gg_run with, without;

	gg_run(&with, GG_RUN_SHIM | GG_RUN_FAKE,
	       (const char *[]){ "GPUGUARD_REDZONE=64", "GG_TEST_PTX=" GG_PTX, NULL }, steps);
	gg_run(&without, GG_RUN_FAKE, (const char *[]){ "GG_TEST_PTX=" GG_PTX, NULL }, steps);
	cr_assert_eq(gg_run_exit(&with), 0, "%s", with.err);
	cr_assert_str_eq(with.out, without.out);
	gg_run_free(&with);
	gg_run_free(&without);
}

/* ---- teardown ---- */

Test(redzone, context_reset_checks_live_bands_before_their_memory_dies)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=32", NULL },
	       (const char *[]){ "alloc:64", "alloc:64", "overrun:1:3", "reset", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, "reset: 0\n");
	assert_json(&a, VIOLATIONS, "[(1, 64, 32, 0, 2, 3, 65, 'teardown')]");
	/* Forgotten once the memory died: nothing left for the exit scan. */
	assert_json(&a,
		    "(j['allocations']['live'], j['redzones']['checked'], "
		    "j['redzones']['unchecked'])",
		    "(0, 2, 0)");
	gg_app_run_free(&a);
}

Test(redzone, context_destroy_checks_its_bands_only)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", NULL },
	       (const char *[]){ "alloc:64", "ctx", "alloc:64", "overrun:1:1", "destroy", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, "destroy: 0\n");
	assert_json(&a, VIOLATIONS, "[(1, 64, 16, 0, 0, 1, 65, 'teardown')]");
	assert_json(&a, "j['allocations']['live']", "1");
	gg_app_run_free(&a);
}

Test(redzone, a_reset_spares_the_zones_of_created_contexts)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "ctx", "alloc:100", "reset", "range:0:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, "range 0+0: 0 base buffer size 100\n");
	assert_json(&a,
		    "(j['allocations']['live'], j['redzones']['checked'], "
		    "j['redzones']['unchecked'])",
		    "(1, 1, 0)");
	gg_app_run_free(&a);
}

/* ---- frees the driver refuses (docs/how-it-works.md, "Red zones") ---- */

Test(redzone, a_free_refused_for_want_of_a_context_keeps_the_zone_watched)
{
	struct gg_app_run a;

	/* numba's cuda.close() frees with no context current. */
	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:1000", "pop", "free:0", "push", "range:0:0", "overrun:0:8",
				 "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, "free 0: 201\n"); /* CUDA_ERROR_INVALID_CONTEXT, as without the shim */
	assert_out(&a, "range 0+0: 0 base buffer size 1000\n");
	assert_out(&a, "free 0: 0\n");
	assert_json(&a, VIOLATIONS, "[(0, 1000, 64, 0, 7, 8, 65, 'free')]");
	assert_json(&a, "j['allocations']['live']", "0");
	gg_app_run_free(&a);
}

Test(redzone, a_stream_ordered_free_on_a_destroyed_stream_keeps_the_zone_watched)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "async:1000", "deadfree:0", "range:0:0", "overrun:0:8", "free:0",
				 NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, "free 0 on a destroyed stream: refused\n");
	assert_out(&a, "range 0+0: 0 base buffer size 1000\n");
	assert_json(&a, VIOLATIONS, "[(0, 1000, 64, 0, 7, 8, 65, 'free')]");
	gg_app_run_free(&a);
}

Test(redzone, a_violation_seen_at_a_refused_free_is_reported_once)
{
	struct gg_app_run a;

	/* Checked at the refused free, re-filled, so the exit scan finds it clean. */
	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:1000", "overrun:0:3", "pop", "free:0", "push", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, VIOLATIONS, "[(0, 1000, 64, 0, 2, 3, 65, 'free')]");
	assert_json(&a, "(j['allocations']['live'], j['redzones']['unchecked'])", "(1, 0)");
	gg_app_run_free(&a);
}

/* ---- legacy teardown entry points (docs/how-it-works.md, "What the shim does") ---- */

Test(redzone, legacy_ctx_destroy_checks_its_bands)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", NULL },
	       (const char *[]){ "alloc:64", "ctx", "alloc:64", "overrun:1:1", "old-destroy", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, "old-destroy: 0\n");
	assert_json(&a, VIOLATIONS, "[(1, 64, 16, 0, 0, 1, 65, 'teardown')]");
	assert_json(&a, "j['allocations']['live']", "1");
	gg_app_run_free(&a);
}

/* PyCUDA ends its contexts with the deprecated cuCtxDetach: the last detach
 * destroys the context, so its bands are checked, then forgotten. */
Test(redzone, the_last_detach_checks_and_forgets_its_contexts_bands)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", NULL },
	       (const char *[]){ "alloc:64", "ctx", "alloc:64", "overrun:1:1", "detach", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, "detach: 0 (gone)\n");
	assert_json(&a, VIOLATIONS, "[(1, 64, 16, 0, 0, 1, 65, 'teardown')]");
	/* Only the primary context's allocation is left for the exit scan. */
	assert_json(&a, "(j['allocations']['live'], j['redzones']['unchecked'])", "(1, 0)");
	gg_app_run_free(&a);
}

/* A detach that leaves the context alive (it was attached once more) forgets
 * nothing: its band is still watched, and the exit scan finds the overrun. */
Test(redzone, a_detach_that_leaves_the_context_alive_forgets_nothing)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", NULL },
	       (const char *[]){ "ctx", "attach", "alloc:64", "detach", "overrun:0:1", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, "attach: 0 (created)\n");
	assert_out(&a, "detach: 0 (alive)\n");
	assert_json(&a, VIOLATIONS, "[(0, 64, 16, 0, 0, 1, 65, 'exit')]");
	assert_json(&a, "j['allocations']['live']", "1");
	gg_app_run_free(&a);
}

Test(redzone, legacy_primary_reset_and_release_check_live_bands)
{
	const char *ops[] = { "old-reset", "old-release" };

	for (int i = 0; i < 2; i++) {
		struct gg_app_run a;
		char line[64];

		run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=32", NULL },
		       (const char *[]){ "alloc:64", "alloc:64", "overrun:1:3", ops[i], NULL });
		cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
		snprintf(line, sizeof(line), "%s: 0\n", ops[i]);
		assert_out(&a, line);
		assert_json(&a, VIOLATIONS, "[(1, 64, 32, 0, 2, 3, 65, 'teardown')]");
		assert_json(&a, "(j['allocations']['live'], j['redzones']['unchecked'])", "(0, 0)");
		gg_app_run_free(&a);
	}
}

Test(redzone, padding_stays_hidden_across_many_context_lifetimes)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "cycles:1200", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, "cycles: 0 of 1200 showed padding\n");
	assert_json(&a, "(j['allocations']['padded'], j['violations'])", "(1200, [])");
	gg_app_run_free(&a);
}

Test(redzone, a_stream_ordered_fill_is_never_read_before_it_is_done)
{
	struct gg_app_run a;

	/* The application never synchronises the allocation's stream before the
	 * boundary: a scan through the shim's own stream would read the band
	 * before the fill queued on the application's stream has run. */
	run_rz(&a,
	       (const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_BOUNDARY=launch:1",
				 "GPUGUARD_HALT_ON_ERROR=1", NULL },
	       (const char *[]){ "async:100", "launch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "(j['violations'], j['redzones']['checked'] + j['redzones']['unchecked'])",
		    "([], 4)");
	gg_app_run_free(&a);
}

static char *scan_calls_with(const char *zones)
{
	struct gg_app_run a;
	char step[32], *v;

	snprintf(step, sizeof(step), "hold:%s:64", zones);
	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_BOUNDARY=sync:1", NULL },
	       (const char *[]){ step, "alloc:64", "alloc:64", "poke:1:2", "sync", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	v = gg_json(a.json, "(j['redzones']['batched'], j['redzones']['scan_driver_calls'], "
			    "j['redzones']['checked'], "
			    "[(x['index'], x['detected_by']) for x in j['violations']])");
	gg_app_run_free(&a);
	return v;
}

Test(redzone, a_scan_reads_every_band_in_a_constant_number_of_driver_calls)
{
	/* 2 (or 200) live zones, then the two the test writes past. */
	char *few = scan_calls_with("2"), *many = scan_calls_with("200");
	char want_few[64], want_many[64];

	/* One batched copy and one wait per scan, whatever the number of zones;
	 * the last scan is the exit scan, after the boundary reported the write. */
	snprintf(want_few, sizeof(want_few), "(True, 2, 8, [(3, 'scan')])");
	snprintf(want_many, sizeof(want_many), "(True, 2, 404, [(201, 'scan')])");
	cr_assert_str_eq(few, want_few);
	cr_assert_str_eq(many, want_many);
	free(few);
	free(many);
}

/* ---- tracing ---- */

Test(redzone, trace_idx_names_the_allocating_function)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", "GPUGUARD_REDZONE_TRACE_IDX=1", NULL },
	       (const char *[]){ "alloc:64", "alloc:128", "alloc:64", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "INFO: allocation #1 (128 bytes) was made at:"), 1, "%s",
		     a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "INFO:   #0 redzone_alloc+0x"), 1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "INFO:   #1 main+0x"), 1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "was made at"), 1, "only #1: %s", a.r.err);
	gg_app_run_free(&a);
}

/* ---- scale ---- */

Test(redzone, threads_allocating_and_freeing_lose_no_count)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", NULL },
	       (const char *[]){ "threads:16:300:64", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a,
		    "(j['allocations']['calls'], j['allocations']['padded'], "
		    "j['allocations']['live'], j['violations'])",
		    "(4800, 4800, 0, [])");
	gg_app_run_free(&a);
}

Test(redzone, a_million_live_zones_fit, .timeout = 600)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", NULL },
	       (const char *[]){ "many:1000000:16", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "(j['allocations']['padded'], j['allocations']['live'], j['violations'])",
		    "(1000000, 0, [])");
	/* What the registry cost per zone at its peak. */
	assert_json(&a, "j['redzones']['registry_bytes'] // 1000000 <= 96", "True");
	gg_app_run_free(&a);
}

/* ---- band comparison (unit) ---- */

/* What a byte-by-byte walk reports of @n bytes at @buf. */
static struct gg_band_check walked(const uint8_t *buf, size_t n, uint64_t off, uint8_t expected)
{
	struct gg_band_check c = { 0 };

	for (size_t i = 0; i < n; i++) {
		if (buf[i] == expected)
			continue;
		if (!c.changed++)
			c.first = off + i, c.first_value = buf[i];
		c.last = off + i;
	}
	return c;
}

static void assert_band(const uint8_t *band, size_t n, uint8_t expected, const char *what)
{
	struct gg_band_check got = { 0 }, want = walked(band, n, 7, expected);

	gg_band_compare(&got, band, n, 7, expected);
	cr_assert(got.changed == want.changed && got.first == want.first && got.last == want.last &&
			  got.first_value == want.first_value,
		  "%s: %zu bytes of %#x: changed %llu first %llu last %llu value %#x, want %llu %llu "
		  "%llu %#x",
		  what, n, expected, (unsigned long long)got.changed, (unsigned long long)got.first,
		  (unsigned long long)got.last, got.first_value, (unsigned long long)want.changed,
		  (unsigned long long)want.first, (unsigned long long)want.last, want.first_value);
	cr_assert_eq(gg_band_intact(band, n, expected), want.changed == 0, "%s: %zu bytes", what, n);
}

/* Bands of 1 to 200 bytes (under a word, not a multiple of 8, past the
 * 64-byte steps), starting at every alignment, each ending where its buffer
 * ends (a read past it is a sanitizer's error): one changed byte at each
 * place, or at both ends, by one low or one high bit. */
Test(band, a_changed_byte_is_found_at_every_place_of_every_length_and_alignment)
{
	static const uint8_t bytes[] = { 0x00, 0xee, 0xff };

	for (size_t n = 1; n <= 200; n++) {
		for (size_t align = 0; align < 16; align++) {
			uint8_t *buf = malloc(align + n), *band = buf + align;

			cr_assert_not_null(buf);
			for (size_t e = 0; e < GG_ARRAY_SIZE(bytes); e++) {
				uint8_t x = bytes[e];

				memset(buf, x ^ 0x5a, align); /* what lies before is not the band */
				memset(band, x, n);
				assert_band(band, n, x, "intact");
				for (size_t pos = 0; pos < n; pos++) {
					/* Every place of short bands; the edges of the
					 * words and steps, and the middle, of long ones. */
					if (n > 80 && pos > 9 && pos != 31 && pos != 32 && pos != 63 &&
					    pos != 64 && pos != n / 2 && pos + 9 < n)
						continue;
					band[pos] = x ^ (pos & 1 ? 0x80 : 0x01);
					assert_band(band, n, x, "one changed");
					band[pos] = x;
				}
				band[0] = band[n - 1] = (uint8_t)~x;
				assert_band(band, n, x, "both ends changed");
			}
			free(buf);
		}
	}
}

/* A band read in pieces (4096 bytes at a time) adds up to the whole band's
 * report, at the pieces' offsets. */
Test(band, pieces_add_up_to_the_whole_band)
{
	enum {
		N = 10000,
		PIECE = 4096
	};
	uint8_t *band = malloc(N);
	struct gg_band_check whole = { 0 }, pieces = { 0 };

	cr_assert_not_null(band);
	memset(band, 0xee, N);
	band[5000] = 0x41, band[4095] = 0x42, band[9999] = 0x43;
	gg_band_compare(&whole, band, N, 0, 0xee);
	for (size_t off = 0; off < N; off += PIECE)
		gg_band_compare(&pieces, band + off, N - off < PIECE ? N - off : PIECE, off, 0xee);
	cr_assert(whole.changed == 3 && whole.first == 4095 && whole.last == 9999 &&
		  whole.first_value == 0x42);
	cr_assert(pieces.changed == whole.changed && pieces.first == whole.first &&
		  pieces.last == whole.last && pieces.first_value == whole.first_value);
	free(band);
}

/* ---- the registry (unit) ---- */

Test(redzone, registry_insert_find_remove)
{
	struct gg_zone z = { .ptr = 0x7000000100, .user = 10, .index = 3 }, out;
	uint64_t live, bytes;

	cr_assert(gg_registry_room());
	cr_assert_eq(gg_registry_insert(&z), 0);
	cr_assert_eq(gg_registry_insert(&z), -EEXIST);
	cr_assert_eq(gg_registry_find(0x7000000100, &out), 0);
	cr_assert_eq(out.index, 3);
	cr_assert_eq(gg_registry_find(0x7000000200, &out), -ENOENT);
	gg_registry_totals(&live, &bytes);
	cr_assert(live == 1 && bytes == 10);
	cr_assert_eq(gg_registry_remove(0x7000000100, &out), 0);
	cr_assert_eq(gg_registry_remove(0x7000000100, &out), -ENOENT);
}

/* A zone keeps its size and index whole: past 4 GiB and past 2^32. */
Test(redzone, registry_keeps_sizes_past_4_gib_and_indexes_past_2_to_the_32)
{
	struct gg_zone z = { .ptr = 0x7000000100,
			     .user = (UINT64_C(5) << 30) + 3,
			     .index = (UINT64_C(1) << 32) + 7 },
		       out;
	uint64_t live, bytes;

	cr_assert_eq(gg_registry_insert(&z), 0);
	cr_assert_eq(gg_registry_find(0x7000000100, &out), 0);
	cr_assert_eq(out.user, (UINT64_C(5) << 30) + 3);
	cr_assert_eq(out.index, (UINT64_C(1) << 32) + 7);
	gg_registry_totals(&live, &bytes);
	cr_assert(live == 1 && bytes == (UINT64_C(5) << 30) + 3);
	cr_assert_eq(gg_registry_remove(0x7000000100, &out), 0);
}

Test(redzone, registry_keeps_every_probe_chain_after_removals)
{
	enum {
		N = 20000
	};
	struct gg_zone z = { .user = 1 }, out;
	uint64_t live, bytes;

	for (uint64_t i = 0; i < N; i++) {
		z.ptr = 0x10000000000 + i * 256;
		z.index = i;
		cr_assert_eq(gg_registry_insert(&z), 0);
	}
	/* Remove every third, then every other pointer must still be found. */
	for (uint64_t i = 0; i < N; i += 3)
		cr_assert_eq(gg_registry_remove(0x10000000000 + i * 256, NULL), 0);
	for (uint64_t i = 0; i < N; i++) {
		int err = gg_registry_find(0x10000000000 + i * 256, &out);

		cr_assert_eq(err, i % 3 ? 0 : -ENOENT, "%llu", (unsigned long long)i);
		if (!err)
			cr_assert_eq(out.index, i);
	}
	gg_registry_totals(&live, &bytes);
	cr_assert_eq(live, N - (N + 2) / 3);
}

/* ---- other allocators, and coverage (docs/how-it-works.md, "Red zones") ---- */

/* Each allocator's band: filled, reported past its end, hidden from the
 * address range, checked at free. */
static void allocator_is_guarded(const char *step, const char *made, size_t user)
{
	struct gg_app_run a;
	char want[128];

	/* FAKECUDA_MANAGED: a device with managed memory (the fake's default has none). */
	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=32", "FAKECUDA_MANAGED=1", NULL },
	       (const char *[]){ step, "band:0:32", "poke:0:3", "range:0:0", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, made);
	assert_out(&a, band_line(0, 0xee, 32));
	snprintf(want, sizeof(want), "range 0+0: 0 base buffer size %zu\n", user);
	assert_out(&a, want);
	snprintf(want, sizeof(want), "[(0, %zu, 32, 0, 2, 3, 66, 'free')]", user);
	assert_json(&a, VIOLATIONS, want);
	snprintf(want, sizeof(want), "(1, 1, %zu, {}, 0)", user);
	assert_json(&a, COVERAGE, want);
	gg_app_run_free(&a);
}

Test(redzone, pool_allocation_gets_a_band)
{
	allocator_is_guarded("pool:100", "pool 100: 0 buffer 0\n", 100);
}

/* The band follows pitch * height; the application gets the pitch it would
 * have had (the fake's is the width rounded up to 512). */
Test(redzone, pitched_allocation_gets_a_band_after_its_last_row)
{
	allocator_is_guarded("pitch:100:3", "pitch 100:3: 0 buffer 0 pitch 512\n", 3 * 512);
}

Test(redzone, pitched_allocation_keeps_its_pitch_without_red_zones_too)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ NULL }, (const char *[]){ "pitch:600:2", "range:0:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, "pitch 600:2: 0 buffer 0 pitch 1024\n");
	assert_out(&a, "range 0+0: 0 base buffer size 2048\n");
	gg_app_run_free(&a);
}

/* Every allocation is counted, guarded or under its reason. */
Test(redzone, coverage_counts_each_reason)
{
	struct gg_app_run a;

	/* Red zones off: every allocation under "off", and the exit line quiet. */
	run_rz(&a, (const char *[]){ NULL }, (const char *[]){ "alloc:100", "pool:8", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, COVERAGE, "(2, 0, 0, {'off': 2}, 108)");
	cr_expect(!strstr(a.r.err, " not ("), "%s", a.r.err);
	gg_app_run_free(&a);

	/* Below MIN_IDX: said at exit with the reason. A call the driver refused
	 * (0 bytes: CUDA_ERROR_INVALID_VALUE) made no allocation to count. */
	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", "GPUGUARD_REDZONE_MIN_IDX=1", NULL },
	       (const char *[]){ "alloc:100", "alloc:0", "alloc:50", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, COVERAGE, "(2, 1, 50, {'min_idx': 1}, 100)");
	cr_expect(strstr(a.r.err, "; 1 guarded, 1 not (min_idx 1)\n"), "%s", a.r.err);
	gg_app_run_free(&a);
}

/* Every allocation guarded: no word about coverage at exit. */
Test(redzone, coverage_line_is_absent_when_everything_was_guarded)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", NULL },
	       (const char *[]){ "alloc:100", "pool:10", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, COVERAGE, "(2, 2, 110, {}, 0)");
	cr_expect(strstr(a.r.err, "2 allocations, 2 padded; 0 violations\n"), "%s", a.r.err);
	cr_expect(!strstr(a.r.err, "the driver has no"), "%s", a.r.err);
	gg_app_run_free(&a);
}

/* The registry's realloc, through -Wl,--wrap=realloc: fails once armed. */
void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);
static bool realloc_fails;
static unsigned realloc_calls;

void *__wrap_realloc(void *p, size_t n)
{
	realloc_calls++;
	return realloc_fails ? NULL : __real_realloc(p, n);
}

static bool count_zone(void *ctx, struct gg_zone *z)
{
	(void)z;
	++*(unsigned *)ctx;
	return false;
}

static void count_run(void *ctx, struct gg_zone *zones, size_t n)
{
	(void)zones;
	*(unsigned *)ctx += (unsigned)n;
}

/* The exit report of a process that never padded an allocation (red zones
 * off) reads the registry: it gives no shard its arrays for that, and says
 * the same footprint as once they have them. */
Test(redzone, reading_an_unused_registry_gives_it_no_arrays_and_the_same_footprint)
{
	uint64_t live = 1, bytes = 1;
	unsigned walked = 0;
	size_t before;

	gg_registry_totals(&live, &bytes);
	gg_registry_foreach(count_zone, NULL, &walked);
	gg_registry_foreach_run(count_run, &walked);
	gg_registry_clear_flags_all(GG_ZONE_SCANNING);
	before = gg_registry_footprint();
	cr_expect_eq(realloc_calls, 0);
	cr_expect(live == 0 && bytes == 0 && walked == 0);
	cr_assert(gg_registry_room());
	cr_expect_gt(realloc_calls, 0);
	cr_expect_eq(gg_registry_footprint(), before);
}

/* A registry that cannot grow (the host is out of memory) records no more
 * zones: the next allocation gets no band, and is counted registry_full. */
Test(redzone, an_allocation_the_registry_has_no_room_for_is_unguarded_registry_full)
{
	struct gg_config cfg = { .redzone = 64 };
	struct gg_redzone_ticket t;
	struct gg_report_redzone st;
	struct gg_zone z = { .user = 100 };
	int n = 0;

	gg_redzone_configure(&cfg);
	cr_assert(gg_registry_room());
	realloc_fails = true;
	/* A shard grows ahead after each insert: the first that cannot is tight. */
	while (gg_registry_room() && n < 100000) {
		z.ptr = 0x7f0000000000ull + (uint64_t)++n * 512;
		cr_assert_eq(gg_registry_insert(&z), 0, "insert %d", n);
	}
	cr_assert(!gg_registry_room(), "%d inserts and still room", n);
	cr_assert_eq(gg_redzone_request(7, 100, NULL, false, &t), 0);
	cr_assert_eq(t.reason, GG_REASON_registry_full);
	gg_redzone_alloc("cuMemAlloc_v2", 7, 100, 0, 0x7e0000000000ull, NULL, false, &t, 0,
			 "CUDA_SUCCESS");
	gg_redzone_stats(&st);
	cr_expect_eq(st.coverage.unguarded[GG_REASON_registry_full], 1);
	cr_expect_eq(st.coverage.unguarded_bytes, 100);
	cr_expect_eq(st.coverage.guarded, 0);
	/* Room again once it can grow: the next one is not refused for it. */
	realloc_fails = false;
	z.ptr = 0x7f0000000000ull + (uint64_t)++n * 512;
	cr_assert_eq(gg_registry_insert(&z), 0);
	cr_expect(gg_registry_room());
}

/* A size the band would overflow gets none (the request fails anyway). */
Test(redzone, a_size_the_band_would_overflow_is_unguarded_for_that_reason)
{
	struct gg_config cfg = { .redzone = 64 };
	struct gg_redzone_ticket t;

	gg_redzone_configure(&cfg);
	cr_assert_eq(gg_redzone_request(5, SIZE_MAX - 8, NULL, false, &t), 0);
	cr_assert_eq(t.reason, GG_REASON_overflow);
	cr_assert_eq(gg_redzone_request(5, 0, NULL, false, &t), 0);
	cr_assert_eq(t.reason, GG_REASON_zero_size);
	cfg.redzone = 0;
	gg_redzone_configure(&cfg);
	cr_assert_eq(gg_redzone_request(5, 100, NULL, false, &t), 0);
	cr_assert_eq(t.reason, GG_REASON_off);
}

/* ---- caching allocators: the bands guard their segments ---- */

#define C10 "load:" GG_APPS "/libc10_cuda.so"
#define PYTORCH_WARN \
	"WARN: PyTorch's caching allocator is loaded and PYTORCH_NO_CUDA_MEMORY_CACHING is not 1"

Test(redzone, a_loaded_pytorch_allocator_is_warned_about_once)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", "GPUGUARD_BOUNDARY=sync:1", NULL },
	       (const char *[]){ "alloc:10", C10, "alloc:20", "alloc:30", "sync", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, "load: ok\n");
	cr_expect_eq(gg_count_lines(a.r.err, PYTORCH_WARN), 1, "%s", a.r.err);
	cr_expect(strstr(a.r.err, "(set PYTORCH_NO_CUDA_MEMORY_CACHING=1, or run under gpuguard "
				  "--per-tensor)"),
		  "%s", a.r.err);
	assert_json(&a, "j['coverage']['caching_allocators']", "['pytorch']");
	gg_app_run_free(&a);
}

Test(redzone, no_caching_warning_when_it_does_not_apply)
{
	const char *const *const cases[][2] = {
		/* its switch on */
		{ (const char *[]){ "GPUGUARD_REDZONE=16", "PYTORCH_NO_CUDA_MEMORY_CACHING=1", NULL },
		  (const char *[]){ C10, "alloc:10", NULL } },
		/* no red zones asked for */
		{ (const char *[]){ NULL }, (const char *[]){ C10, "alloc:10", NULL } },
		/* not loaded */
		{ (const char *[]){ "GPUGUARD_REDZONE=16", NULL },
		  (const char *[]){ "alloc:10", NULL } },
	};

	for (size_t i = 0; i < GG_ARRAY_SIZE(cases); i++) {
		struct gg_app_run a;

		run_rz(&a, cases[i][0], cases[i][1]);
		cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
		cr_expect(!strstr(a.r.err, "caching allocator"), "case %zu: %s", i, a.r.err);
		assert_json(&a, "j['coverage']['caching_allocators']", "[]");
		gg_app_run_free(&a);
	}
}

/* RMM has no switch outside the program: the WARN says what to do in it. */
Test(redzone, a_loaded_rmm_pool_is_warned_about_with_what_to_do)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", NULL },
	       (const char *[]){ "load:" GG_APPS "/librmm.so", "alloc:10", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_expect_eq(gg_count_lines(a.r.err, "WARN: RAPIDS RMM's caching allocator is loaded: the red "
					     "zones guard its segments, not its arrays; its pool is "
					     "chosen only from the program"),
		     1, "%s", a.r.err);
	assert_json(&a, "j['coverage']['caching_allocators']", "['rmm']");
	gg_app_run_free(&a);
}

/* Virtual memory is never guarded: counted, with the bytes mapped, and the
 * application's mapping works as without the shim. */
Test(redzone, virtual_memory_is_counted_and_left_alone)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", NULL },
	       (const char *[]){ "alloc:100", "vmm:2", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, "vmm 2: 4194304 bytes, read back 0x5a\n");
	assert_json(&a, COVERAGE, "(2, 1, 100, {'vmm': 1}, 4194304)");
	assert_json(&a, "(j['coverage']['vmm_bytes'], j['allocations']['calls'])", "(4194304, 1)");
	cr_expect(strstr(a.r.err, "; 1 guarded, 1 not (vmm 1)\n"), "%s", a.r.err);
	gg_app_run_free(&a);
}
Test(redzone, managed_allocation_gets_a_band)
{
	allocator_is_guarded("managed:100", "managed 100: 0 buffer 0\n", 100);
}

/* A driver without the functions the bands need: no band, reason "driver",
 * and one WARN naming what it lacks. Here no driver is loaded at all. */
Test(redzone, a_driver_without_what_bands_need_is_named_once)
{
	struct gg_config cfg = { .redzone = 64, .verbosity = 1 };
	struct gg_redzone_ticket t;
	char err[4096] = "";
	FILE *f = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t n;

	/* The log is fd 2 (the report writes with write(2)): into a file here. */
	cr_assert(f && saved >= 0);
	dup2(fileno(f), STDERR_FILENO);
	gg_report_note_stderr(); /* as the shim's load does, before the program */
	gg_report_open(&cfg);
	gg_redzone_configure(&cfg);
	t.reason = GG_REASON_COUNT;
	(void)gg_redzone_request(0, 100, NULL, false, &t);
	enum gg_report_reason first = t.reason;
	size_t pad = gg_redzone_request(1, 100, NULL, false, &t);

	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(f);
	n = fread(err, 1, sizeof(err) - 1, f);
	err[n] = '\0';
	fclose(f);
	cr_assert_eq(first, GG_REASON_driver);
	cr_assert_eq(pad, 0);
	cr_assert_eq(t.reason, GG_REASON_driver);
	cr_expect_eq(gg_count_lines(err, "WARN: GPUGUARD_REDZONE=64, but the driver has no cu"), 1,
		     "%s", err);
	cr_expect(strstr(err, ": no allocation gets a red zone (counted as unguarded, reason "
			      "\"driver\")"),
		  "%s", err);
}

/* More live contexts than the shim keeps slots for (1024): the allocation of
 * the one without a slot is counted, reason no_context, not lost. */
Test(redzone, an_allocation_in_a_context_past_the_slots_is_counted_no_context)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", NULL },
	       (const char *[]){ "alloc:8", "contexts:1024", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, "contexts 1024: 1024 allocations\n");
	/* The primary context took slot 0: 1023 more got one. */
	assert_json(&a, COVERAGE, "(1025, 1024, 16376, {'no_context': 1}, 16)");
	gg_app_run_free(&a);
}

/* A free while a blocking stream is captured: the check of its band must not
 * touch the legacy stream (the capture would be invalidated), nor run in the
 * application's capture mode. Every mode ends as without the shim; the band
 * left unread is counted unchecked. */
Test(redzone, a_free_during_a_stream_capture_leaves_the_capture_as_without_the_shim)
{
	for (int mode = 0; mode < 3; mode++) {
		char step[32];
		struct gg_run plain;
		struct gg_app_run a;
		char *v;

		snprintf(step, sizeof(step), "capfree:1:%d", mode);
		gg_run(&plain, GG_RUN_FAKE, (const char *[]){ "GG_TEST_PTX=" GG_PTX, NULL },
		       (const char *[]){ RZ, "alloc:100", "alloc:50", step, NULL });
		cr_assert_eq(gg_run_exit(&plain), 0, "%s", plain.err);
		run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", NULL },
		       (const char *[]){ "alloc:100", "alloc:50", step, NULL });
		cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
		cr_expect_str_eq(a.r.out, plain.out, "mode %d", mode);
		if (mode == 2) {
			cr_expect(strstr(a.r.out, "free 0, end 0, graph yes"), "%s", a.r.out);
			v = gg_json(a.json, "j['redzones']['unchecked'] >= 1");
			cr_expect_str_eq(v, "True");
			free(v);
		}
		gg_run_free(&plain);
		gg_app_run_free(&a);
	}
}

/* An allocation captured into a graph gets no band (its fill would become
 * part of the graph): counted, reason capturing. */
Test(redzone, an_allocation_captured_into_a_graph_is_unguarded_capturing)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=16", NULL },
	       (const char *[]){ "alloc:8", "capalloc:100", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, "capalloc 100: alloc 0, end 0\n");
	assert_json(&a, COVERAGE, "(2, 1, 8, {'capturing': 1}, 100)");
	gg_app_run_free(&a);
}

/* ---- checked launches and suspects (docs/how-it-works.md, "Red zones") ---- */

#define CHECKED "GPUGUARD_REDZONE=64", "GPUGUARD_CHECK_LAUNCHES=1"

/* The band's violations (the scenario the routes run also frees a buffer
 * twice: test-frees.c). */
#define OVERRUNS "[v for v in j['violations'] if v['kind'] == 'overrun']"
/* Violations as (index, detected_by, kernel name, module, launch, changed). */
#define BY_KERNEL                                                                      \
	"[(v['index'], v['detected_by'], v['kernel']['name'], v['kernel']['module'], " \
	"v['kernel']['launch'], v['changed']) for v in " OVERRUNS "]"
/* Each violation's suspects as [(name, launch)], newest first. */
#define SUSPECTS "[[(s['name'], s['launch']) for s in v['suspects']] for v in " OVERRUNS "]"

/* The ERROR of a checked launch is printed before the launch returns to the
 * program (app-redzone says "app: two returned" on stderr right after). */
static void assert_reported_before_the_launch_returned(const struct gg_app_run *a)
{
	const char *error = strstr(a->r.err, "ERROR: red zone violation (launch)");
	const char *returned = strstr(a->r.err, "app: two returned");

	cr_assert(error && returned, "%s", a->r.err);
	cr_assert_lt(error, returned, "the ERROR came after the launch returned:\n%s", a->r.err);
}

/* gg_overrun_second writes all of buffer 0 and 8 bytes past buffer 1: only
 * buffer 1 is reported, by the launch, naming the kernel and its call site. */
static void checked_two_buffers(const char *step)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ CHECKED, NULL },
	       (const char *[]){ "alloc:100", "alloc:200", step, "sync", "free:1", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_reported_before_the_launch_returned(&a);
	cr_expect_eq(gg_count_lines(a.r.err, "ERROR: red zone violation"), 1, "%s", a.r.err);
	cr_expect(strstr(a.r.err, "allocation #1 of 200 bytes"), "%s", a.r.err);
	cr_expect(strstr(a.r.err, "; written by gg_overrun_second (module kernels.ptx, launch #1) "
				  "launched at main+"),
		  "%s", a.r.err);
	assert_json(&a, BY_KERNEL, "[(1, 'launch', 'gg_overrun_second', 'kernels.ptx', 1, 8)]");
	assert_json(&a, "[v['kernel']['site']['symbol'].split('+')[0] for v in j['violations']]",
		    "['main']");
	assert_json(&a, SUSPECTS, "[[('gg_overrun_second', 1)]]");
	gg_app_run_free(&a);
}

Test(checked_launch, names_the_kernel_that_overran_one_of_its_two_buffers)
{
	checked_two_buffers("two:0:1:8");
}

Test(checked_launch, follows_the_parameters_of_extras_buffer)
{
	checked_two_buffers("twox:0:1:8");
}

Test(checked_launch, names_a_library_kernel_launched_directly)
{
	checked_two_buffers("twok:0:1:8");
}

/* The CUfunction cuKernelGetFunction gives is named as its library's kernel. */
Test(checked_launch, names_the_function_of_a_library_kernel_as_the_kernel)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ CHECKED, NULL },
	       (const char *[]){ "alloc:100", "alloc:200", "twof:0:1:8", "sync", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, BY_KERNEL, "[(1, 'launch', 'gg_overrun_second', 'kernels.ptx', 1, 8)]");
	gg_app_run_free(&a);
}

Test(checked_launch, follows_a_pointer_into_the_middle_of_an_allocation)
{
	checked_two_buffers("twoi:0:1:8");
}

Test(checked_launch, clean_launches_report_nothing)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ CHECKED, NULL },
	       (const char *[]){ "alloc:100", "alloc:200", "two:0:1:0", "twox:0:1:0", "fill:1", "sync",
				 "free:1", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_expect(!strstr(a.r.err, "ERROR"), "%s", a.r.err);
	cr_expect(!strstr(a.r.err, "WARN"), "%s", a.r.err);
	assert_json(&a, "j['violations']", "[]");
	assert_json(&a,
		    "(j['redzones']['launches_checked'], j['redzones']['launches_unfollowed'], "
		    "j['config']['check_launches'])",
		    "(3, 0, True)");
	gg_app_run_free(&a);
}

/* The closed-binary recipe: stop at the first launch that wrote past a band. */
Test(checked_launch, halt_on_error_stops_at_the_launch_that_overran)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ CHECKED, "GPUGUARD_HALT_ON_ERROR=1", NULL },
	       (const char *[]){ "alloc:100", "alloc:200", "two:0:1:0", "two:0:1:8", "two:0:1:0",
				 NULL });
	cr_assert_eq(gg_run_exit(&a.r), -SIGABRT, "%s", a.r.err);
	cr_expect(strstr(a.r.err, "written by gg_overrun_second (module kernels.ptx, launch #2)"), "%s",
		  a.r.err);
	cr_expect_eq(gg_count_lines(a.r.err, "app: two returned"), 1, "%s", a.r.err);
	assert_json(&a, BY_KERNEL, "[(1, 'launch', 'gg_overrun_second', 'kernels.ptx', 2, 8)]");
	gg_app_run_free(&a);
}

Test(checked_launch, without_red_zones_is_warned_about)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_CHECK_LAUNCHES=1", NULL },
	       (const char *[]){ "alloc:100", "alloc:200", "two:0:1:8", "sync", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_expect_eq(gg_count_lines(a.r.err, "WARN: GPUGUARD_CHECK_LAUNCHES=1 without "
					     "GPUGUARD_REDZONE: there is no band to check"),
		     1, "%s", a.r.err);
	gg_app_run_free(&a);
}

/* Every route, both parameter forms: launch #1 is the scenario's gg_fill. */
Test(checked_launch, names_the_kernel_on_every_route_with_both_parameter_forms)
{
	for (size_t i = 0; i < GG_ROUTES; i++) {
		struct gg_app_run a;

		gg_route_run(&a, i, (const char *[]){ CHECKED, "GG_SCENARIO_OVERRUN=1", NULL });
		cr_assert_eq(gg_run_exit(&a.r), 0, "%s: %s", gg_route_apps[i], a.r.err);
		assert_json(&a, BY_KERNEL,
			    "[(3, 'launch', 'gg_overrun_second', 'kernels.ptx', 2, 8), "
			    "(3, 'launch', 'gg_overrun_second', 'kernels.ptx', 3, 4)]");
		gg_app_run_free(&a);
	}
}

/* Without checked launches: the free names the kernel as a suspect, on
 * every route; the same kernel twice is one suspect, its latest launch. */
Test(suspects, name_the_kernel_on_every_route_with_both_parameter_forms)
{
	for (size_t i = 0; i < GG_ROUTES; i++) {
		struct gg_app_run a;

		gg_route_run(&a, i,
			     (const char *[]){ "GPUGUARD_REDZONE=64", "GG_SCENARIO_OVERRUN=1", NULL });
		cr_assert_eq(gg_run_exit(&a.r), 0, "%s: %s", gg_route_apps[i], a.r.err);
		assert_json(&a,
			    "[(v['index'], v['user_bytes'], v['pad_bytes'], v['first'], v['last'], "
			    "v['changed'], v['first_value'], v['detected_by']) for v in " OVERRUNS "]",
			    "[(3, 200, 64, 0, 7, 8, 65, 'free')]");
		assert_json(&a, SUSPECTS, "[[('gg_overrun_second', 3)]]");
		assert_json(&a, "['kernel' in v for v in j['violations']]", "[False, False]");
		gg_app_run_free(&a);
	}
}

Test(suspects, are_the_newest_four_kernels_given_the_allocation)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:100", "alloc:200", "two:0:1:8", "fill:1", "overrun:1:0",
				 "sum:1:0", "kcopy:0:1", "sync", "free:1", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, SUSPECTS,
		    "[[('gg_copy', 5), ('gg_sum', 4), ('gg_overrun', 3), ('gg_fill', 2)]]");
	cr_expect(strstr(a.r.err, "; suspects, newest first: gg_copy (module kernels.ptx, launch "
				  "#5), gg_sum (module kernels.ptx, launch #4), gg_overrun (module "
				  "kernels.ptx, launch #3), gg_fill (module kernels.ptx, launch #2)"),
		  "%s", a.r.err);
	gg_app_run_free(&a);
}

Test(suspects, a_kernel_launched_again_is_listed_once_at_its_latest_launch)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:100", "alloc:200", "two:0:1:8", "fill:1", "two:0:1:0", "sync",
				 "free:1", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, SUSPECTS, "[[('gg_overrun_second', 3), ('gg_fill', 2)]]");
	gg_app_run_free(&a);
}

/* A boundary's scan saw the band clean after gg_overrun_second's clean
 * launch: only the kernel launched after it is a suspect. */
Test(suspects, a_band_seen_clean_forgets_the_kernels_before)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_BOUNDARY=sync:1", NULL },
	       (const char *[]){ "alloc:100", "alloc:200", "two:0:1:0", "sync", "overrun:1:8", "free:1",
				 NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "[(v['detected_by'], v['index']) for v in j['violations']]", "[('free', 1)]");
	assert_json(&a, SUSPECTS, "[[('gg_overrun', 2)]]");
	gg_app_run_free(&a);
}

/* However a violation is found, it lists its suspects: at a scan, at exit. */
Test(suspects, are_listed_by_a_scan_and_at_exit)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_BOUNDARY=sync:2", NULL },
	       (const char *[]){ "alloc:100", "alloc:200", "alloc:300", "two:0:1:8", "sync",
				 "two:1:2:4", "sync", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "[(v['detected_by'], v['index'], v['changed']) for v in j['violations']]",
		    "[('scan', 1, 8), ('scan', 2, 4)]");
	assert_json(&a, SUSPECTS, "[[('gg_overrun_second', 2)], [('gg_overrun_second', 2)]]");
	gg_app_run_free(&a);
}

Test(suspects, a_violation_at_exit_names_them)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:100", "alloc:200", "two:0:1:8", "sync", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "[v['detected_by'] for v in j['violations']]", "['exit']");
	assert_json(&a, SUSPECTS, "[[('gg_overrun_second', 1)]]");
	gg_app_run_free(&a);
}

Test(suspects, none_when_no_kernel_was_given_the_allocation)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:100", "poke:0:8", "fill:0", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, SUSPECTS, "[[('gg_fill', 1)]]");
	cr_expect(strstr(a.r.err, "; suspects, newest first: gg_fill"), "%s", a.r.err);
	gg_app_run_free(&a);
	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:100", "poke:0:8", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, SUSPECTS, "[[]]");
	cr_expect(strstr(a.r.err, "; suspects: none (no kernel was seen launched with its address "
				  "since its band was last seen clean)"),
		  "%s", a.r.err);
	gg_app_run_free(&a);
}

/* A checked launch that found its band clean forgets the suspects before it. */
Test(checked_launch, a_clean_check_forgets_the_suspects_before_it)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ CHECKED, NULL },
	       (const char *[]){ "alloc:100", "alloc:200", "two:0:1:0", "overrun:1:8", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, BY_KERNEL, "[(1, 'launch', 'gg_overrun', 'kernels.ptx', 2, 8)]");
	assert_json(&a, SUSPECTS, "[[('gg_overrun', 2)]]");
	gg_app_run_free(&a);
}

/* gg_overrun_second's second launch, with the same addresses, leaves the
 * zone's entry as it was (a memo stands for it): a fifth kernel still pushes
 * out the oldest launch, not that entry. */
Test(suspects, a_kernel_launched_again_with_the_same_addresses_stays_among_the_newest)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:100", "alloc:200", "two:0:1:8", "fill:1", "overrun:1:0",
				 "kcopy:0:1", "two:0:1:8", "sum:1:0", "free:1", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, SUSPECTS,
		    "[[('gg_sum', 6), ('gg_overrun_second', 5), ('gg_copy', 4), ('gg_overrun', 3)]]");
	gg_app_run_free(&a);
}

/* A module of one kernel, for reload: the fake runs gg_* kernels by name. */
static void write_ptx(const char *path, const char *entry)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fprintf(f,
		".version 8.0\n.target sm_90\n.address_size 64\n\n.visible .entry %s\n{\n\tret;\n}\n",
		entry);
	fclose(f);
}

/* The driver hands a function's handle out again after its module was
 * unloaded: the shim must not read the new kernel's parameters by the old
 * one's layout (five of them where there are three, past a page's end). */
Test(suspects, a_handle_handed_out_again_after_an_unload_is_read_by_its_new_layout)
{
	char dir[] = "/tmp/gg-reload-XXXXXX", p1[64], p2[64], step[160];
	struct gg_app_run a;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(p1, sizeof(p1), "%s/two.ptx", dir);
	snprintf(p2, sizeof(p2), "%s/fill.ptx", dir);
	write_ptx(p1, "gg_overrun_second(.param .u64 a, .param .u64 na, .param .u64 b, "
		      ".param .u64 nb, .param .u64 extra)");
	write_ptx(p2, "gg_fill(.param .u64 p, .param .u8 value, .param .u64 n)");
	snprintf(step, sizeof(step), "reload:%s:%s", p1, p2);
	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", "FAKECUDA_REUSE_HANDLES=1", NULL },
	       (const char *[]){ "alloc:100", "alloc:200", step, "overrun:1:8", "free:1", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s\n%s", a.r.out, a.r.err);
	cr_assert(strstr(a.r.out, "reloaded: handle reused"), "%s", a.r.out);
	assert_json(&a, SUSPECTS, "[[('gg_overrun', 3), ('gg_fill', 2), ('gg_overrun_second', 1)]]");
	gg_app_run_free(&a);
	unlink(p1);
	unlink(p2);
	rmdir(dir);
}

/* ---- a driver before CUDA 12.4: no cuFuncGetParamInfo ---- */

#define OLD_DRIVER "LD_LIBRARY_PATH=" GG_FAKE_12_3_DIR

/* Without the layout of kernelParams, a checked launch checks every zone of
 * its context: it still finds the one written past, and only that one. */
Test(checked_launch, without_parameter_layouts_checks_every_zone_of_the_context)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ CHECKED, OLD_DRIVER, NULL },
	       (const char *[]){ "alloc:100", "alloc:200", "alloc:300", "two:0:1:8", "sync", "free:1",
				 "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_reported_before_the_launch_returned(&a);
	assert_json(&a, BY_KERNEL, "[(1, 'launch', 'gg_overrun_second', 'kernels.ptx', 1, 8)]");
	assert_json(&a, "(j['redzones']['launches_checked'], j['redzones']['launches_unfollowed'])",
		    "(1, 1)");
	gg_app_run_free(&a);
}

/* Without layouts, kernelParams name no suspect, and that is counted; the
 * words of extra's buffer still do. */
Test(suspects, without_parameter_layouts_come_from_extras_buffer_only)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", OLD_DRIVER, NULL },
	       (const char *[]){ "alloc:100", "alloc:200", "two:0:1:8", "sync", "free:1", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, SUSPECTS, "[[]]");
	assert_json(&a, "j['redzones']['launches_unfollowed']", "1");
	gg_app_run_free(&a);
	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", OLD_DRIVER, NULL },
	       (const char *[]){ "alloc:100", "alloc:200", "twox:0:1:8", "sync", "free:1", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, SUSPECTS, "[[('gg_overrun_second', 1)]]");
	assert_json(&a, "j['redzones']['launches_unfollowed']", "0");
	gg_app_run_free(&a);
}

/* The memo of a kernel launched twice with a pointer into the middle of an
 * allocation: when its addresses change, that allocation learns the latest
 * of those launches (#2), not the first. */
Test(suspects, a_pointer_into_the_middle_keeps_its_latest_launch_when_the_memo_moves_on)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:100", "alloc:200", "alloc:100", "alloc:200", "twoi:0:1:0",
				 "twoi:0:1:0", "two:2:3:0", "fill:1", "overrun:1:8", "free:1", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, SUSPECTS, "[[('gg_overrun', 5), ('gg_fill', 4), ('gg_overrun_second', 2)]]");
	gg_app_run_free(&a);
}

/* ---- underflow: a band reaches up to the next allocation ---- */

/* Violations as (kind, index, user, pad, slack, first, last, changed, first_value,
 * detected_by, the upper zone's index or None). */
#define ADJACENT                                                                           \
	"[(v['kind'], v['index'], v['user_bytes'], v['pad_bytes'], v.get('slack_bytes'), " \
	"v['first'], v['last'], v['changed'], v['first_value'], v['detected_by'], "        \
	"v['upper']['index'] if 'upper' in v else None) for v in j['violations']]"
#define ALL_SUSPECTS "[[(s['name'], s['launch']) for s in v['suspects']] for v in j['violations']]"

/* 200 + 64 bytes asked as 512 (CUDA aligns every allocation to 256 bytes):
 * the band of #0 is 312 bytes, and #1 starts right where it ends. */
Test(underflow, of_the_upper_of_two_adjacent_allocations_is_reported_at_the_lower_ones_free)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:200", "alloc:200", "under:1:4", "free:0", "free:1", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, ADJACENT, "[('underflow', 0, 200, 64, 248, 308, 311, 4, 85, 'free', 1)]");
	assert_json(&a, ALL_SUSPECTS, "[[('gg_underrun', 1)]]");
	assert_json(&a,
		    "(j['errors'], j['violations'][0]['upper']['user_bytes'], "
		    "j['violations'][0]['upper']['site']['symbol'].split('+')[0])",
		    "(1, 200, 'redzone_alloc')");
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: underflow (free): allocation #1 of 200 bytes "
					     "at 0x"),
		     1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, ": 4 bytes changed 1..4 bytes below its start, first "
					     "0x55 (expected 0xee), in the 64-byte band (and 248 "
					     "bytes up to the next 256-byte boundary) of allocation "
					     "#0 of 200 bytes at 0x"),
		     1, "%s", a.r.err);
	cr_expect(strstr(a.r.err, "; suspects, newest first: gg_underrun (module kernels.ptx, "
				  "launch #1)"),
		  "%s", a.r.err);
	gg_app_run_free(&a);
}

/* A batched scan took the suspects of both zones out of the registry before
 * it compared: the upper one's are found among the batch's. */
Test(underflow, is_reported_by_a_scan)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_BOUNDARY=sync:1", NULL },
	       (const char *[]){ "alloc:1000", "alloc:100", "under:1:2", "sync", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, ADJACENT, "[('underflow', 0, 1000, 64, 216, 278, 279, 2, 85, 'scan', 1)]");
	assert_json(&a, ALL_SUSPECTS, "[[('gg_underrun', 1)]]");
	assert_json(&a, "j['redzones']['batched']", "True");
	gg_app_run_free(&a);
}

Test(underflow, none_is_reported_when_none_happened)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_BOUNDARY=sync:1", NULL },
	       (const char *[]){ "alloc:200", "alloc:200", "fill:0", "fill:1", "under:1:0", "sync",
				 "free:0", "free:1", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "(j['violations'], j['errors'], j['redzones']['unchecked'])", "([], 0, 0)");
	cr_assert_eq(strstr(a.r.err, "ERROR"), NULL, "%s", a.r.err);
	gg_app_run_free(&a);
}

Test(underflow, an_overrun_of_the_lower_zone_is_still_an_overrun)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:200", "alloc:200", "overrun:0:8", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, ADJACENT, "[('overrun', 0, 200, 64, 248, 0, 7, 8, 65, 'free', None)]");
	assert_json(&a, ALL_SUSPECTS, "[[('gg_overrun', 1)]]");
	gg_app_run_free(&a);
}

/* Up to its top: a kernel given the lower zone may have run past its end,
 * so it is an overrun, naming the upper zone too (and the kernels given it). */
Test(underflow, an_overrun_up_to_the_top_of_the_band_is_an_overrun_naming_the_zone_above)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:200", "alloc:200", "fill:1", "overrun:0:312", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, ADJACENT, "[('overrun', 0, 200, 64, 248, 0, 311, 312, 65, 'free', 1)]");
	assert_json(&a, ALL_SUSPECTS, "[[('gg_overrun', 2), ('gg_fill', 1)]]");
	cr_assert_eq(gg_count_lines(a.r.err, "; its top is directly below allocation #1 of 200 bytes "
					     "at 0x"),
		     1, "%s", a.r.err);
	gg_app_run_free(&a);
}

/* Both given the kernel: it may have done either, so it stays an overrun. */
Test(underflow, a_write_below_a_zone_by_a_kernel_given_both_is_an_overrun_naming_both)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:200", "alloc:200", "fill:0", "under:1:4", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, ADJACENT, "[('overrun', 0, 200, 64, 248, 308, 311, 4, 85, 'free', 1)]");
	assert_json(&a, ALL_SUSPECTS, "[[('gg_underrun', 2), ('gg_fill', 1)]]");
	gg_app_run_free(&a);
}

/* A checked launch reads the band below each zone it was given too, before
 * it forgets that zone's suspects: the launch that wrote below is named. */
Test(underflow, is_reported_by_the_checked_launch_that_wrote_it)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_CHECK_LAUNCHES=1", NULL },
	       (const char *[]){ "alloc:200", "alloc:200", "under:1:4", "free:0", "free:1", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, ADJACENT, "[('underflow', 0, 200, 64, 248, 308, 311, 4, 85, 'launch', 1)]");
	assert_json(&a, "[(v['kernel']['name'], v['kernel']['launch']) for v in j['violations']]",
		    "[('gg_underrun', 1)]");
	gg_app_run_free(&a);
}

/* The fake, like NVIDIA's driver, hands out device memory in 256-byte
 * pieces: a request rounded up to one costs nothing more. */
Test(underflow, the_band_grows_to_the_next_256_bytes_at_no_cost_in_memory)
{
	static const char *const steps[] = { "meminfo",   "alloc:200", "alloc:1000", "alloc:17",
					     "alloc:192", "meminfo",   "band:0:312", NULL };
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL }, steps);
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	/* 512 + 1280 + 256 + 256: what 264, 1064, 81 and 256 bytes took unrounded */
	assert_out(&a, "meminfo used 0\n");
	assert_out(&a, "meminfo used 2304\n");
	assert_out(&a, band_line(0, 0xee, 312));
	assert_json(&a, "(j['violations'], j['errors'])", "([], 0)");
	gg_app_run_free(&a);
}

/* ---- CUDA graphs: a replay is a launch of each kernel node
 * (docs/how-it-works.md, "CUDA graphs") ---- */

#define GRAPH_SCENARIO "GG_SCENARIO_GRAPH=1", "GPUGUARD_ALLOW_UNRESOLVED=1", "GPUGUARD_BOUNDARY=sync:2"

/* The scenario's graphs (tests/apps/scenario.c) on every route: captured
 * (its launch, captured, is none: the replays are #2 to #4, after a scan
 * saw the band clean), then built node by node with a child graph (#5 and
 * #6), a node's parameters set in the executable graph (#7, #8), and the
 * executable graph updated from another graph (#9, #10). Each allocation
 * names the latest replay that was given it. */
Test(graphs, a_replay_names_each_kernel_node_as_a_suspect_on_every_route)
{
	for (size_t i = 0; i < GG_ROUTES; i++) {
		struct gg_app_run a;

		gg_route_run(&a, i, (const char *[]){ "GPUGUARD_REDZONE=64", GRAPH_SCENARIO, NULL });
		cr_assert_eq(gg_run_exit(&a.r), 0, "%s: %s", gg_route_apps[i], a.r.err);
		assert_out(&a, "built graph: replayed 3 times, set and updated");
		assert_json(&a,
			    "[(v['index'], v['user_bytes'], v['changed'], v['detected_by']) for v "
			    "in " OVERRUNS "]",
			    "[(2, 1000, 8, 'free'), (3, 100, 2, 'free'), (4, 200, 4, 'free')]");
		assert_json(&a, SUSPECTS,
			    "[[('gg_overrun', 4)], [('gg_fill', 9), ('gg_overrun', 7)], "
			    "[('gg_fill', 10), ('gg_overrun', 8)]]");
		assert_json(&a,
			    "j['coverage']['graph_nodes_unfollowed'], "
			    "j['coverage']['graph_replays_unfollowed']",
			    "({}, 0)");
		gg_app_run_free(&a);
	}
}

/* Checked: each replay is waited for, and each node's zones checked, the
 * violation naming the node's kernel and its launch. */
Test(graphs, a_checked_replay_names_the_node_that_overran_on_every_route)
{
	for (size_t i = 0; i < GG_ROUTES; i++) {
		struct gg_app_run a;

		gg_route_run(&a, i, (const char *[]){ CHECKED, GRAPH_SCENARIO, NULL });
		cr_assert_eq(gg_run_exit(&a.r), 0, "%s: %s", gg_route_apps[i], a.r.err);
		assert_json(&a, BY_KERNEL,
			    "[(2, 'launch', 'gg_overrun', 'kernels.ptx', 2, 8), "
			    "(2, 'launch', 'gg_overrun', 'kernels.ptx', 3, 8), "
			    "(2, 'launch', 'gg_overrun', 'kernels.ptx', 4, 8), "
			    "(4, 'launch', 'gg_overrun', 'kernels.ptx', 6, 4), "
			    "(3, 'launch', 'gg_overrun', 'kernels.ptx', 7, 2), "
			    "(4, 'launch', 'gg_overrun', 'kernels.ptx', 8, 4)]");
		assert_json(&a, "j['redzones']['launches_checked']", "10");
		gg_app_run_free(&a);
	}
}

/* The generic node functions (tests/apps/scenario.c, GG_SCENARIO_NODE_PARAMS)
 * on every route: a node added with cuGraphAddNode (#2), set in the
 * executable graph with cuGraphExecNodeSetParams to overrun E by 4 (#3), set
 * in the graph with cuGraphNodeSetParams to overrun F by 2 and instantiated
 * again (#4): each overrun names the replay that did it, unchecked and
 * checked. */
Test(graphs, the_generic_node_functions_are_followed_on_every_route)
{
	for (size_t i = 0; i < GG_ROUTES; i++) {
		struct gg_app_run a;

		gg_route_run(&a, i,
			     (const char *[]){ "GPUGUARD_REDZONE=64", "GG_SCENARIO_NODE_PARAMS=1",
					       "GPUGUARD_ALLOW_UNRESOLVED=1", NULL });
		cr_assert_eq(gg_run_exit(&a.r), 0, "%s: %s", gg_route_apps[i], a.r.err);
		assert_out(&a, "generic nodes: added, set in the executable graph and in the graph");
		assert_json(&a,
			    "[(v['user_bytes'], v['changed'], v['detected_by']) for v in " OVERRUNS "]",
			    "[(100, 4, 'free'), (200, 2, 'free')]");
		assert_json(&a, SUSPECTS, "[[('gg_overrun', 3), ('gg_fill', 2)], [('gg_overrun', 4)]]");
		assert_json(&a, "j['coverage']['graph_nodes_unfollowed']", "{}");
		gg_app_run_free(&a);
		gg_route_run(&a, i,
			     (const char *[]){ CHECKED, "GG_SCENARIO_NODE_PARAMS=1",
					       "GPUGUARD_ALLOW_UNRESOLVED=1", NULL });
		cr_assert_eq(gg_run_exit(&a.r), 0, "%s: %s", gg_route_apps[i], a.r.err);
		assert_json(&a, "[(d, k, l, c) for (i, d, k, m, l, c) in " BY_KERNEL "]",
			    "[('launch', 'gg_overrun', 3, 4), ('launch', 'gg_overrun', 4, 2)]");
		gg_app_run_free(&a);
	}
}

/* A scan saw the band clean after two replays (the memo of the graph then
 * stood for them): the replays after it are suspects again. */
Test(graphs, a_replay_after_a_clean_scan_is_a_suspect_again)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_BOUNDARY=sync:2", NULL },
	       (const char *[]){ "alloc:100", "graph:0:0", "replay:2", "sync", "replay:2", "poke:0:8",
				 "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, SUSPECTS, "[[('gg_overrun', 4)]]");
	gg_app_run_free(&a);
}

/* Unchanged replays leave the zones alone: the first one's entry stands for
 * the latest (#5). */
Test(graphs, unchanged_replays_name_the_latest)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:100", "graph:0:0", "replay:5", "poke:0:8", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, SUSPECTS, "[[('gg_overrun', 5)]]");
	gg_app_run_free(&a);
}

/* The node moved from buffer 0 to buffer 1 between replays: buffer 0 keeps
 * the last replay that was given it (#2), buffer 1 gets the later ones. */
Test(graphs, a_node_set_between_replays_keeps_each_buffer_its_latest_replay)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:100", "alloc:200", "graph:0:0", "replay:2", "gset:1:0",
				 "replay:2", "poke:0:8", "poke:1:8", "free:0", "free:1", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, "gset 1 by 0: 0");
	assert_json(&a, SUSPECTS, "[[('gg_overrun', 2)], [('gg_overrun', 4)]]");
	gg_app_run_free(&a);
}

/* The captured launch is none: launch:2 is the second replay, before it is
 * forwarded (the second replay then is the suspect). */
Test(graphs, a_captured_launch_is_counted_only_when_replayed)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_BOUNDARY=launch:2", NULL },
	       (const char *[]){ "alloc:100", "graph:0:8", "replay:2", "free:0", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_expect_eq(gg_count_lines(a.r.err, "INFO: seal 1 (launch:2)"), 1, "%s", a.r.err);
	assert_json(&a, SUSPECTS, "[[('gg_overrun', 2)]]");
	gg_app_run_free(&a);
}

/* The replays crashed the context: the synchronize names their kernels. */
Test(graphs, a_sticky_error_names_the_replayed_kernels)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:100", "graph:0:1048576", "replay:2", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, "replayed 2: 0, synchronize 700");
	cr_expect_eq(gg_count_lines(a.r.err, "ERROR: cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS: the "
					     "context is lost; kernels launched since the last good "
					     "synchronize (2 in all), newest first: gg_overrun (module "
					     "kernels.ptx, launch #2), gg_overrun (module kernels.ptx, "
					     "launch #1)"),
		     1, "%s", a.r.err);
	gg_app_run_free(&a);
}

/* A replay the driver refused is a refused launch of each of its kernels. */
Test(graphs, a_refused_replay_is_a_launch_error_of_its_kernels)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:100", "graph:0:0", "deadreplay", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, "dead replay: 400");
	assert_json(&a, "[(e['name'], e['count'], e['result']) for e in j['launch_errors']]",
		    "[('gg_overrun', 1, 'CUDA_ERROR_INVALID_HANDLE')]");
	gg_app_run_free(&a);
}

/* An unchanged replay takes its ring entry before it is forwarded: refused,
 * the entry is withdrawn, so the sticky error of a replay after it does not
 * name it among the kernels in flight, and the refusal is still its kernel's. */
Test(graphs, a_refused_unchanged_replay_is_not_named_in_flight)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:100", "graph:0:0", "replay:1", "deadreplay", "graph:0:1048576",
				 "replay:1", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_out(&a, "dead replay: 400");
	cr_expect_eq(gg_count_lines(a.r.err, "newest first: gg_overrun (module kernels.ptx, "
					     "launch #3)"),
		     1, "%s", a.r.err);
	cr_expect_eq(gg_count_lines(a.r.err, "launch #3), "), 0, "%s", a.r.err); /* #3 alone */
	assert_json(&a, "[(e['name'], e['count'], e['result']) for e in j['launch_errors']]",
		    "[('gg_overrun', 1, 'CUDA_ERROR_INVALID_HANDLE')]");
	gg_app_run_free(&a);
}

/* Instantiated for device launch: the host's replays are followed, what the
 * device launches is not, and that is counted and said once. */
Test(graphs, what_is_not_followed_is_counted_and_warned_about_once)
{
	struct gg_app_run a;

	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:100", "graph:0:0:4", "replay:2", "graph:0:0:4", "replay:1",
				 NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a,
		    "j['coverage']['graph_nodes_unfollowed'], "
		    "j['coverage']['graph_replays_unfollowed']",
		    "({'device_launch': 2}, 3)");
	cr_expect_eq(gg_count_lines(a.r.err, "WARN: a CUDA graph has nodes gpuguard cannot follow "
					     "(device_launch)"),
		     1, "%s", a.r.err);
	gg_app_run_free(&a);
	run_rz(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
	       (const char *[]){ "alloc:100", "graph:0:0", "replay:2", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a,
		    "j['coverage']['graph_nodes_unfollowed'], "
		    "j['coverage']['graph_replays_unfollowed']",
		    "({}, 0)");
	cr_expect(!strstr(a.r.err, "cannot follow"), "%s", a.r.err);
	gg_app_run_free(&a);
}
