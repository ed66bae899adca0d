/* NVIDIA's Python driver clients, run with and without the shim (docs/python.md,
 * "Python programs").
 *
 * cuda-bindings and numba-cuda take every driver entry point from
 * cuGetProcAddress_v2: the shim sees them only through the pointers it swaps
 * there (docs/how-it-works.md, "What the shim does"). tests/clients/ drives each through one
 * program (three runs: without the shim, with 64-byte red zones, with
 * GPUGUARD_DISABLE=1, which must print and return the same). They run in
 * BUILDDIR/pyenv, a virtual environment of Debian's python3 holding the pins of
 * tests/clients/requirements.txt (scripts/pyenv; scripts/test makes it).
 * numba-cuda's own tests are test-peer-suite.c. A CUDA-runtime program cannot
 * start on the fake driver (the runtime needs cuGetExportTable); it must fail
 * the same way with the shim. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "pyclients.h"

static void expect_json(const char *path, const char *expr, const char *want)
{
	char *got = gg_json(path, expr);

	cr_expect_str_eq(got, want, "%s", expr);
	free(got);
}

struct three_runs {
	struct gg_run r[3];
	char dir[64];
	char json[128];
};

/* The client in all three modes: the same stdout and status each time, and
 * it exited 0; without the shim and with it disabled, nothing of
 * gpuguard's anywhere; with red zones, one ERROR (the planted overrun) and
 * no WARN, and apart from gpuguard's lines the stderr of the plain run. */
static void run_three(struct three_runs *t, const char *const *extra, const char *const *argv)
{
	struct gg_run *plain = &t->r[PLAIN];
	char *rest;

	gg_test_dir(t->dir, sizeof(t->dir));
	snprintf(t->json, sizeof(t->json), "%s/summary.json", t->dir);
	for (int m = PLAIN; m <= DISABLED; m++)
		run_mode(&t->r[m], (enum mode)m, t->json, extra, argv);
	cr_assert_eq(gg_run_exit(plain), 0, "%s:\nstdout:\n%s\nstderr:\n%s", argv[1], plain->out,
		     plain->err);
	for (int m = REDZONE; m <= DISABLED; m++) {
		struct gg_run *r = &t->r[m];

		cr_assert_eq(gg_run_exit(r), gg_run_exit(plain), "%s %s: stderr:\n%s", argv[1],
			     mode_name[m], r->err);
		cr_assert(r->out_len == plain->out_len &&
				  memcmp(r->out, plain->out, plain->out_len) == 0,
			  "%s: stdout %s:\n%s\nwithout the shim:\n%s", argv[1], mode_name[m], r->out,
			  plain->out);
	}
	cr_assert_null(strstr(plain->err, "gpuguard"), "%s", plain->err);
	cr_assert_str_eq(t->r[DISABLED].err, plain->err, "GPUGUARD_DISABLE=1 changed stderr");

	/* The overrun, and the kernel the client looks up in vain when it does
	 * (named at exit). */
	cr_expect_eq(
		gg_count_errors(t->r[REDZONE].err) -
			gg_count_lines(t->r[REDZONE].err, "] ERROR: required kernel never resolved: "),
		1, "%s", t->r[REDZONE].err);
	cr_expect_eq(gg_count_lines(t->r[REDZONE].err, "] WARN: "), 0, "%s", t->r[REDZONE].err);
	cr_expect_eq(gg_count_lines(t->r[REDZONE].err,
				    "8 bytes changed at offsets 0..7 past the end, first 0x41"),
		     1, "%s", t->r[REDZONE].err);
	rest = gg_without_gpuguard_lines(t->r[REDZONE].err);
	cr_expect_str_eq(rest, plain->err);
	free(rest);
}

static void three_runs_free(struct three_runs *t)
{
	for (int m = PLAIN; m <= DISABLED; m++)
		gg_run_free(&t->r[m]);
	cr_expect_eq(remove(t->json), 0);
	cr_expect_eq(remove(t->dir), 0, "%s holds more than the summary", t->dir);
}

/* The overrun: 8 bytes of 0x41 just past allocation @index of 1000 bytes. */
static void expect_the_overrun(const char *json, const char *index)
{
	char want[64];

	expect_json(json, "len(j['violations'])", "1");
	snprintf(want, sizeof(want), "[(%s, 1000, 0, 7, 8, 65, 'free')]", index);
	expect_json(json,
		    "[(v['index'], v['user_bytes'], v['first'], v['last'], v['changed'], "
		    "v['first_value'], v['detected_by']) for v in j['violations']]",
		    want);
}

#define BINDINGS_ARGV                                                   \
	(const char *[])                                                \
	{                                                               \
		PYTHON, CLIENTS "cuda_bindings_client.py", GG_PTX, NULL \
	}

/* What the client does, in its own words; the same in every run. */
static void expect_bindings_output(const char *out)
{
	static const char *const lines[] = {
		"devices: 1\n",
		"name: gpuguard fake device\n",
		"primary context current: True\n",
		"gg_no_such_kernel: CUDA_ERROR_NOT_FOUND\n",
		"filled: True\n",
		"overrun ran: True\n",
		"failures: 0\ndone\n",
	};

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		cr_assert_not_null(strstr(out, lines[i]), "no '%s' in:\n%s", lines[i], out);
}

/* cuda-bindings: the planted overrun, and the missing kernel in the table of
 * unresolved lookups, looked up from cuda-bindings' Cython layer (the first
 * frame outside libcuda, libcudart and libgpuguard). */
static void expect_bindings_summary(const char *json)
{
	expect_the_overrun(json, "0");
	expect_json(json,
		    "(j['lookups']['total'], j['lookups']['resolved'], "
		    "j['lookups']['unresolved_required'])",
		    "(3, 2, 1)");
	expect_json(
		json,
		"[(u['function'], u['result'], u['count'], u['module'][:6]) for u in j['unresolved']]",
		"[('gg_no_such_kernel', 'CUDA_ERROR_NOT_FOUND', 1, 'image:')]");
	expect_json(json, "j['unresolved'][0]['site']['object'].rsplit('/', 1)[-1].split('.')[0]",
		    "cydriver");
	expect_json(json, "(j['allocations']['padded'], j['allocations']['live'])", "(1, 0)");
	/* The overrun, and the required kernel still unresolved at exit
	 * (docs/how-it-works.md, "Boundaries, signals, exit"). */
	expect_json(json, "j['errors']", "2");
}

Test(pyclients, cuda_bindings_prints_and_returns_the_same_and_its_overrun_is_reported, .timeout = 300)
{
	struct three_runs t;

	require_pyenv();
	run_three(&t, NULL, BINDINGS_ARGV);
	expect_bindings_output(t.r[PLAIN].out);
	expect_bindings_summary(t.json);
	three_runs_free(&t);
}

/* CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM=1: cuda-bindings asks
 * cuGetProcAddress_v2 for the per-thread entry points, and the shim's
 * wrappers of those are what it calls (its count of intercepted calls, at
 * verbosity 2, names them). */
Test(pyclients, cuda_bindings_with_per_thread_default_streams, .timeout = 300)
{
	static const char *const per_thread[] = { "CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM=1",
						  "GPUGUARD_VERBOSITY=2", NULL };
	struct three_runs t;
	struct gg_run calls;
	char dir[64], path[128], env_calls[160], *text;
	const char *intercepted, *ptsz;

	require_pyenv();
	run_three(&t, per_thread, BINDINGS_ARGV);
	expect_bindings_output(t.r[PLAIN].out);
	expect_bindings_summary(t.json);
	intercepted = strstr(t.r[REDZONE].err, "INFO: intercepted ");
	cr_assert_not_null(intercepted, "%s", t.r[REDZONE].err);
	ptsz = strstr(intercepted, " cuLaunchKernel_ptsz ");
	cr_expect(ptsz && strtoul(ptsz + strlen(" cuLaunchKernel_ptsz "), NULL, 10) == 2, "%s",
		  intercepted);
	cr_expect_null(strstr(intercepted, " cuLaunchKernel "), "%s", intercepted);
	three_runs_free(&t);

	/* It really took the per-thread forms (the fake counts its entry points). */
	gg_test_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/calls.txt", dir);
	snprintf(env_calls, sizeof(env_calls), "FAKECUDA_CALLS_FILE=%s", path);
	run_mode(&calls, PLAIN, NULL, (const char *[]){ per_thread[0], env_calls, NULL },
		 BINDINGS_ARGV);
	cr_assert_eq(gg_run_exit(&calls), 0, "%s", calls.err);
	text = gg_read_file(path);
	cr_assert_not_null(text);
	cr_expect_not_null(strstr(text, "\ncuLaunchKernel_ptsz 2\n"), "%s", text);
	cr_expect_not_null(strstr(text, "\ncuMemcpyDtoH_v2_ptds 2\n"), "%s", text);
	cr_expect_null(strstr(text, "\ncuLaunchKernel "), "%s", text);
	gg_run_free(&calls);
	cr_expect_eq(remove(path), 0);
	cr_expect_eq(remove(dir), 0);
}

/* GPUGUARD_SKIP_OBJECTS decides which frames are not the call site: skipping
 * every CPython extension as well leaves the interpreter, which runs the
 * Python code (the line of Python is not known to a native unwinder). */
Test(pyclients, skip_objects_moves_a_python_programs_call_site_to_the_interpreter, .timeout = 300)
{
	struct gg_run r;
	char dir[64], json[128];

	require_pyenv();
	gg_test_dir(dir, sizeof(dir));
	snprintf(json, sizeof(json), "%s/summary.json", dir);
	run_mode(&r, REDZONE, json,
		 (const char *[]){ "GPUGUARD_SKIP_OBJECTS=libcuda.so*,libcudart.so*,libgpuguard.so*,*."
				   "cpython-*.so",
				   NULL },
		 BINDINGS_ARGV);
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	expect_json(json, "[u['function'] for u in j['unresolved']]", "['gg_no_such_kernel']");
	expect_json(json,
		    "j['unresolved'][0]['site']['object'].rsplit('/', 1)[-1].startswith(('python3', "
		    "'libpython3'))",
		    "True");
	expect_json(json, "j['unresolved'][0]['site']['symbol'] is not None", "True");
	gg_run_free(&r);
	cr_expect_eq(remove(json), 0);
	cr_expect_eq(remove(dir), 0);
}

Test(pyclients, numba_cuda_prints_and_returns_the_same_and_its_overrun_is_reported, .timeout = 300)
{
	static const char *const lines[] = { "detect: True\n", "round trip: True\n", "filled: True\n",
					     "copied: True\n", "overrun ran: True\ndone\n" };
	struct three_runs t;

	require_pyenv();
	run_three(&t, NULL, (const char *[]){ PYTHON, CLIENTS "numba_cuda_client.py", GG_PTX, NULL });
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		cr_assert_not_null(strstr(t.r[PLAIN].out, lines[i]), "no '%s' in:\n%s", lines[i],
				   t.r[PLAIN].out);
	/* dst is the second allocation (to_device made the first); the module's
	 * three kernels come from cuLibraryGetKernel, all found. */
	expect_the_overrun(t.json, "1");
	expect_json(t.json, "(j['allocations']['padded'], j['allocations']['live'])", "(2, 0)");
	expect_json(t.json, "(j['lookups']['total'], j['lookups']['resolved'])", "(3, 3)");
	expect_json(t.json, "j['errors']", "1");
	three_runs_free(&t);
}

/* numba-cuda gives each device array a driver allocation of its own, and
 * queues its free when Python collects it: the band is checked when the
 * queue is flushed, or at once with NUMBA_CUDA_MAX_PENDING_DEALLOCS_COUNT=0
 * (docs/python.md, "Python programs"). The script says on stderr when it dropped the
 * array and when it flushed the queue; gpuguard's ERROR falls between them,
 * or before both. */
Test(pyclients, numba_cuda_frees_in_batches_so_a_band_is_checked_when_they_are_flushed, .timeout = 300)
{
	static const char *const counts[] = { NULL, "NUMBA_CUDA_MAX_PENDING_DEALLOCS_COUNT=0" };

	require_pyenv();
	for (int i = 0; i < 2; i++) {
		const char *extra[] = { counts[i], NULL };
		const char *dropped, *flushed, *error;
		char dir[64], json[128];
		struct gg_run r;

		gg_test_dir(dir, sizeof(dir));
		snprintf(json, sizeof(json), "%s/summary.json", dir);
		run_mode(&r, REDZONE, json, extra,
			 (const char *[]){ PYTHON, CLIENTS "numba_cuda_frees.py", GG_PTX, NULL });
		cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
		dropped = strstr(r.err,
				 i ? "dropped; 0 frees pending\n" : "dropped; 1 frees pending\n");
		flushed = strstr(r.err, "flushed\n");
		error = strstr(r.err, "] ERROR: ");
		cr_assert(dropped && flushed && error, "%s", r.err);
		cr_assert_eq(gg_count_errors(r.err), 1, "%s", r.err);
		if (i == 0)
			cr_assert(dropped < error && error < flushed, "checked at the flush:\n%s",
				  r.err);
		else
			cr_assert(error < dropped, "checked at once:\n%s", r.err);
		/* Two arrays, two allocations, each with its band; found at its free. */
		expect_json(json, "(j['allocations']['calls'], j['allocations']['padded'])", "(2, 2)");
		expect_json(json, "[(v['index'], v['detected_by']) for v in j['violations']]",
			    "[(0, 'free')]");
		gg_run_free(&r);
		cr_expect_eq(remove(json), 0);
		cr_expect_eq(remove(dir), 0);
	}
}

/* The CUDA runtime over the fake driver stops at cuGetExportTable, which
 * the fake does not imitate: with the shim (red zones on, its log in a file)
 * the program gets the same error, prints the same, writes the same to
 * stderr and exits the same, and the shim finds nothing to warn about. CuPy
 * and PyTorch need a real GPU (scripts/gpu-check). */
Test(pyclients, a_cuda_runtime_program_fails_to_start_the_same_with_the_shim)
{
	struct gg_run plain, shim;

	cr_assert(GG_CUDART_APP[0], "the toolkit has no libcudart.so to build app-cudart with");
	run_mode(&plain, PLAIN, NULL, NULL, (const char *[]){ GG_CUDART_APP, NULL });
	run_mode(&shim, REDZONE, NULL, NULL, (const char *[]){ GG_CUDART_APP, NULL });
	cr_assert_not_null(
		strstr(plain.out, "cudaGetDeviceCount: 801 (cudaErrorNotSupported) count -1\n"), "%s",
		plain.out);
	cr_assert_eq(gg_run_exit(&shim), gg_run_exit(&plain));
	cr_assert_str_eq(shim.out, plain.out);
	/* Nothing recorded, nothing said: not even the exit line (docs/how-it-works.md,
	 * "Boundaries, signals, exit"). */
	cr_assert_str_eq(shim.err, plain.err);
	gg_run_free(&plain);
	gg_run_free(&shim);
}
