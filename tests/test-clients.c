/* Third-party driver clients, run with and without the shim (docs/install.md,
 * "Building and installing").
 *
 * Debian's python3-numba (numba.cuda 0.56) reaches the driver through ctypes:
 * dlopen("libcuda.so.1") and dlsym() of each cu* name, the dlsym route (docs/how-it-works.md,
 * "What the shim does"). tests/clients/numba_client.py drives it (detect,
 * copies, a module of the fake's kernels, launches, an 8-byte overrun, frees)
 * and the two runs must print and return the same, while the shim reports the
 * overrun and nothing else. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* Debian's interpreter, named explicitly: the `python3` on PATH may be
 * another one (a pyenv, a venv) without Debian's python3-numba. */
#define PYTHON "/usr/bin/python3"
#define CLIENT GG_SOURCE_ROOT "/tests/clients/numba_client.py"
/* numba looks for libcuda.so.1 on the library path, then in /usr/lib; name
 * the fake outright. */
#define NUMBA_DRIVER "NUMBA_CUDA_DRIVER=" GG_FAKE_DIR "/libcuda.so.1"
/* Under the sanitizers the fake driver is instrumented too, so an
 * uninstrumented python needs their runtime first even without the shim
 * (with it, the harness puts the runtime first itself). */
#define SANITIZER_PRELOAD "LD_PRELOAD=" GG_PRELOAD_PREFIX

static void require_numba(void)
{
	struct gg_run r;

	gg_run(&r, 0, NULL, (const char *[]){ PYTHON, "-c", "import numba.cuda", NULL });
	cr_assert_eq(gg_run_exit(&r), 0,
		     PYTHON " cannot import numba.cuda (install Debian's python3-numba; "
			    "scripts/test does): %s",
		     r.err);
	gg_run_free(&r);
}

static void run_client(struct gg_run *r, unsigned flags, const char *json_env)
{
	const char *env[8] = { NUMBA_DRIVER };
	size_t k = 1;

	if (!(flags & GG_RUN_SHIM) && GG_PRELOAD_PREFIX[0])
		env[k++] = SANITIZER_PRELOAD;
	if (flags & GG_RUN_SHIM) {
		env[k++] = "GPUGUARD_REDZONE=64";
		env[k++] = json_env;
	}
	env[k] = NULL;
	gg_run(r, flags | GG_RUN_FAKE, env, (const char *[]){ PYTHON, CLIENT, GG_PTX, NULL });
}

static void expect_json(const char *path, const char *expr, const char *want)
{
	char *got = gg_json(path, expr);

	cr_expect_str_eq(got, want, "%s", expr);
	free(got);
}

Test(clients, numba_prints_and_returns_the_same_and_its_overrun_is_reported, .timeout = 280)
{
	struct gg_run plain, shim;
	char dir[64], json[128], json_env[160], *rest;

	require_numba();
	gg_test_dir(dir, sizeof(dir));
	snprintf(json, sizeof(json), "%s/summary.json", dir);
	snprintf(json_env, sizeof(json_env), "GPUGUARD_SUMMARY_JSON=%s", json);

	/* Without the shim: numba works on the fake driver, and nothing of
	 * gpuguard's is anywhere. */
	run_client(&plain, 0, NULL);
	cr_assert_eq(gg_run_exit(&plain), 0, "stdout:\n%s\nstderr:\n%s", plain.out, plain.err);
	cr_assert_not_null(strstr(plain.out, "detect: True\n"), "%s", plain.out);
	cr_assert_not_null(strstr(plain.out, "round trip: True\n"), "%s", plain.out);
	cr_assert_not_null(strstr(plain.out, "copied: True\n"), "%s", plain.out);
	cr_assert_not_null(strstr(plain.out, "overrun ran: True\ndone\n"), "%s", plain.out);
	cr_assert_null(strstr(plain.err, "gpuguard"), "%s", plain.err);
	cr_assert_null(strstr(plain.out, "gpuguard["), "%s", plain.out);

	/* With it: the same stdout, byte for byte, and the same status. */
	run_client(&shim, GG_RUN_SHIM, json_env);
	cr_assert_eq(gg_run_exit(&shim), gg_run_exit(&plain), "stderr:\n%s", shim.err);
	cr_assert_eq(shim.out_len, plain.out_len, "with the shim:\n%s\nwithout:\n%s", shim.out,
		     plain.out);
	cr_assert_eq(memcmp(shim.out, plain.out, plain.out_len), 0, "with the shim:\n%s\nwithout:\n%s",
		     shim.out, plain.out);

	/* The overrun is the one finding, found when numba frees the array;
	 * apart from gpuguard's lines, stderr is what numba wrote without it. */
	cr_expect_eq(gg_count_errors(shim.err), 1, "%s", shim.err);
	cr_expect_eq(gg_count_lines(shim.err, "] WARN: "), 0, "%s", shim.err);
	cr_expect_eq(gg_count_lines(shim.err,
				    "ERROR: red zone violation (free): allocation #1 of 1000 bytes"),
		     1, "%s", shim.err);
	cr_expect_eq(
		gg_count_lines(shim.err, "8 bytes changed at offsets 0..7 past the end, first 0x41"), 1,
		"%s", shim.err);
	rest = gg_without_gpuguard_lines(shim.err);
	cr_expect_str_eq(rest, plain.err);
	free(rest);

	expect_json(json, "len(j['violations'])", "1");
	expect_json(json,
		    "[(v['user_bytes'], v['first'], v['last'], v['changed'], v['first_value']) "
		    "for v in j['violations']]",
		    "[(1000, 0, 7, 8, 65)]");
	expect_json(json, "j['errors']", "1");
	/* Both arrays were padded and freed; the three kernels were looked up. */
	expect_json(json, "(j['allocations']['padded'], j['allocations']['live'])", "(2, 0)");
	expect_json(json, "(j['lookups']['total'], j['lookups']['resolved'])", "(3, 3)");

	gg_run_free(&plain);
	gg_run_free(&shim);
	cr_expect_eq(remove(json), 0);
	cr_expect_eq(remove(dir), 0, "%s holds more than the summary", dir);
}
