/* docs/how-it-works.md, "What the shim does": the application sees exactly what it would
 * without the shim. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define APP(name) GG_APPS "/" name

static const char *const trace_env[] = { "GPUGUARD_VERBOSITY=2", NULL };

static void assert_same_run(unsigned flags, const char *const *env, const char *const *argv,
			    bool same_stderr)
{
	struct gg_run with, without;

	gg_run(&with, flags | GG_RUN_SHIM, env, argv);
	gg_run(&without, flags, env, argv);
	cr_assert_eq(with.status, without.status, "%s: status %d vs %d\n%s", argv[0], with.status,
		     without.status, with.err);
	cr_assert_eq(with.out_len, without.out_len, "%s: stdout differs", argv[0]);
	cr_assert_eq(memcmp(with.out, without.out, with.out_len), 0,
		     "%s: stdout differs\n-- with --\n%s\n-- without --\n%s", argv[0], with.out,
		     without.out);
	if (same_stderr)
		cr_assert_str_eq(with.err, without.err, "%s", argv[0]);
	gg_run_free(&with);
	gg_run_free(&without);
}

Test(invariants, bad_calls_keep_their_result_codes_and_outputs)
{
	struct gg_run r;

	assert_same_run(GG_RUN_FAKE, trace_env, (const char *[]){ APP("app-bad-calls"), GG_PTX, NULL },
			false);
	/* The matrix really ran, and the shim really saw it. */
	gg_run(&r, GG_RUN_FAKE | GG_RUN_SHIM, trace_env,
	       (const char *[]){ APP("app-bad-calls"), GG_PTX, NULL });
	cr_assert_gt(gg_count_lines(r.out, " -> "), 80, "%s", r.out);
	cr_assert_gt(gg_count_lines(r.out, "CUDA_ERROR_"), 50, "%s", r.out);
	cr_assert_neq(strstr(r.err, "intercepted "), NULL, "%s", r.err);
	gg_run_free(&r);
}

Test(invariants, stdout_is_byte_for_byte_the_same)
{
	static const char *const apps[][4] = {
		{ APP("app-direct"), GG_PTX, NULL },
		{ APP("app-dlsym"), GG_PTX, NULL },
		{ APP("app-procaddr"), GG_PTX, NULL },
		{ APP("app-procaddr"), "--ptsz", GG_PTX, NULL },
	};

	for (size_t i = 0; i < sizeof(apps) / sizeof(apps[0]); i++)
		assert_same_run(GG_RUN_FAKE, trace_env, apps[i], false);
}

Test(invariants, non_cuda_processes_show_no_difference)
{
	/* A bad value would be reported by an active shim, and a log or summary
	 * file created: none must appear. */
	static const char *const env[] = { "GPUGUARD_VERBOSITY=2", "GPUGUARD_REDZONE=lots",
					   "GPUGUARD_LOG=/tmp/gg-never-written.%p.log",
					   "GPUGUARD_SUMMARY_JSON=/tmp/gg-never-written.%p.json",
					   NULL };

	cr_assert_eq(system("rm -f /tmp/gg-never-written.*"), 0);
	assert_same_run(0, env, (const char *[]){ "/bin/true", NULL }, true);
	assert_same_run(0, env,
			(const char *[]){ "/bin/sh", "-c", "echo out; echo err >&2; exit 3", NULL },
			true);
	if (access("/usr/bin/python3", X_OK) == 0)
		assert_same_run(
			0, env,
			(const char *[]){ "/usr/bin/python3", "-c",
					  "import ctypes; print(ctypes.CDLL(None).dlsym is not None)",
					  NULL },
			false);
	assert_same_run(0, env, (const char *[]){ "/usr/bin/python3", "-c", "pass", NULL }, true);
	/* Only looking up a launch entry point in the driver is no hooked call
	 * either: the answer depends on the configuration (docs/how-it-works.md, "What the
	 * shim does"), which is read without setting the shim up. */
	if (access("/usr/bin/python3", X_OK) == 0)
		assert_same_run(GG_RUN_FAKE, env,
				(const char *[]){ "/usr/bin/python3", "-c",
						  "import ctypes; d = ctypes.CDLL('libcuda.so.1'); "
						  "print(d.cuLaunchKernel is not None, "
						  "d.cuCtxSynchronize is not None)",
						  NULL },
				false);
	cr_assert_neq(system("ls /tmp/gg-never-written.* >/dev/null 2>&1"), 0, "a file was written");
}

Test(invariants, cudart_without_a_driver_gets_the_same_error)
{
	struct gg_run r;

	if (!GG_CUDART_APP[0])
		cr_skip_test("the toolkit has no libcudart.so");
	if (system("{ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | grep -q 'libcuda\\.so\\.1 '") ==
	    0)
		cr_skip_test("a real driver is installed here");
	assert_same_run(0, trace_env, (const char *[]){ GG_CUDART_APP, NULL }, true);
	gg_run(&r, GG_RUN_SHIM, trace_env, (const char *[]){ GG_CUDART_APP, NULL });
	cr_assert_neq(strstr(r.out, "cudaGetDeviceCount: 35 (cudaErrorInsufficientDriver)"), NULL, "%s",
		      r.out);
	gg_run_free(&r);
}

Test(invariants, cxx_exceptions_and_backtrace_work_with_the_shim)
{
	struct gg_run r;

	assert_same_run(0, trace_env, (const char *[]){ APP("app-cxx-exceptions"), NULL }, true);
	gg_run(&r, GG_RUN_SHIM, trace_env, (const char *[]){ APP("app-cxx-exceptions"), NULL });
	cr_assert_eq(gg_run_exit(&r), 0);
	cr_assert_eq(strncmp(r.out, "caught 100 of 100; backtrace ok\n", 32), 0, "%s", r.out);
	cr_assert_eq(strstr(r.out, "libunwind"), NULL, "%s", r.out);
	cr_assert_eq(strstr(r.out, "libgpuguard"), NULL, "%s", r.out);
	gg_run_free(&r);
}

Test(invariants, disabled_shim_passes_through_and_writes_nothing)
{
	static const char *const env[] = { "GPUGUARD_DISABLE=1", "GPUGUARD_VERBOSITY=2",
					   "GPUGUARD_REDZONE=lots", NULL };
	struct gg_run r;

	assert_same_run(GG_RUN_FAKE, env, (const char *[]){ APP("app-direct"), GG_PTX, NULL }, true);
	gg_run(&r, GG_RUN_FAKE | GG_RUN_SHIM, env, (const char *[]){ APP("app-procaddr-traps"), NULL });
	cr_assert_eq(gg_run_exit(&r), 0);
	cr_assert_eq(strstr(r.out, "libgpuguard.so"), NULL, "a wrapper was handed out: %s", r.out);
	gg_run_free(&r);
}
