/* numba-cuda's own driver tests as a client (docs/python.md, "Python programs"): the
 * same outcome, test by test, with and without the shim. A test binary of its
 * own: it runs for a minute or two, in parallel with the rest of the suite. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "pyclients.h"

/* numba-cuda's driver tests over the fake driver, without and with the
 * shim: tests/clients/peer_suite.py records every test's outcome (with a
 * per-test time limit) and compares the two runs, test by test. It also
 * lists the tests that fail without the shim: where the fake driver is not
 * a faithful GPU (tests/fakecuda/fakecuda.h). */
Test(pyclients, numba_cuda_driver_tests_have_the_same_outcomes_with_the_shim, .timeout = 1400)
{
	struct gg_run plain, shim, cmp, seen;
	char dir[64], out_plain[128], out_shim[128], json_env[160], *passed;

	require_pyenv();
	gg_test_dir(dir, sizeof(dir));
	snprintf(out_plain, sizeof(out_plain), "%s/plain.json", dir);
	snprintf(out_shim, sizeof(out_shim), "%s/shim.json", dir);
	run_mode(&plain, PLAIN, NULL, NULL,
		 (const char *[]){ PYTHON, CLIENTS "peer_suite.py", "run", out_plain, "--timeout",
				   "120", "--total", "600", NULL });
	cr_assert_eq(gg_run_exit(&plain), 0, "stdout:\n%s\nstderr:\n%s", plain.out, plain.err);
	snprintf(json_env, sizeof(json_env), "GPUGUARD_SUMMARY_JSON=%s/gg.%%p.json", dir);
	run_mode(&shim, REDZONE, NULL, (const char *[]){ json_env, NULL },
		 (const char *[]){ PYTHON, CLIENTS "peer_suite.py", "run", out_shim, "--timeout", "120",
				   "--total", "600", NULL });
	cr_assert_eq(gg_run_exit(&shim), 0, "stdout:\n%s\nstderr:\n%s", shim.out, shim.err);
	/* The shim was there: the tests' allocations were padded (one summary
	 * per pytest process that used the driver). */
	gg_run(&seen, 0, NULL,
	       (const char *[]){
		       "/usr/bin/python3", "-c",
		       "import glob, json, jsonschema, sys\n"
		       "s = [json.load(open(f)) for f in glob.glob(sys.argv[1] + '/gg.*.json')]\n"
		       "v = jsonschema.Draft202012Validator(json.load(open(sys.argv[2])))\n"
		       "for j in s: v.validate(j)\n"
		       "print(sum(j['allocations']['padded'] for j in s), 'allocations padded,',\n"
		       "      sum(j['errors'] for j in s), 'errors found, in', len(s), 'processes')\n",
		       dir, GG_SUMMARY_SCHEMA, NULL });
	cr_assert_eq(gg_run_exit(&seen), 0, "%s", seen.err);
	fprintf(stderr, "with the shim: %s", seen.out);
	cr_expect_gt(strtoul(seen.out, NULL, 10), 100, "%s", seen.out);
	gg_run(&cmp, 0, NULL,
	       (const char *[]){ PYTHON, CLIENTS "peer_suite.py", "compare", out_plain, out_shim,
				 NULL });
	/* The comparison goes to the test log, whatever the verdict. */
	fprintf(stderr, "%s", cmp.out);
	cr_assert_eq(gg_run_exit(&cmp), 0, "%s\n%s", cmp.out, cmp.err);
	/* A run where nothing works compares equal too: most tests must pass. */
	passed = gg_json_file(out_plain, "sum(o == 'pass' for o in j['tests'].values()) >= 150");
	cr_expect_str_eq(passed, "True", "%s", cmp.out);
	free(passed);
	gg_run_free(&plain);
	gg_run_free(&shim);
	gg_run_free(&cmp);
	gg_run_free(&seen);
	cr_expect_eq(remove(out_plain), 0);
	cr_expect_eq(remove(out_shim), 0);
	snprintf(json_env, sizeof(json_env), "rm -f %s/gg.*.json", dir);
	cr_expect_eq(system(json_env), 0);
	cr_expect_eq(remove(dir), 0);
}
