/* What the tests of NVIDIA's Python clients share (test-pyclients.c,
 * test-peer-suite.c): the interpreter of BUILDDIR/pyenv and runs in three
 * modes. */
#ifndef GG_TESTS_PYCLIENTS_H
#define GG_TESTS_PYCLIENTS_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <unistd.h>

#include "harness.h"

#define PYTHON GG_PYENV "/bin/python"
#define CLIENTS GG_SOURCE_ROOT "/tests/clients/"
/* Under the sanitizers the fake driver is instrumented too, so the
 * uninstrumented interpreter needs their runtime first even without the shim
 * (with it, the harness puts the runtime first itself). */
#define SANITIZER_PRELOAD "LD_PRELOAD=" GG_PRELOAD_PREFIX

enum mode {
	PLAIN,
	REDZONE,
	DISABLED
};
static const char *const mode_name[]
	__attribute__((unused)) = { "without the shim", "with GPUGUARD_REDZONE=64",
				    "with GPUGUARD_DISABLE=1" };

/* The environment's interpreter, with the clients importable: a missing
 * environment fails the test (it is never skipped) and says how to make it. */
static inline void require_pyenv(void)
{
	struct gg_run r;

	cr_assert_eq(access(PYTHON, X_OK), 0,
		     PYTHON " is missing: run scripts/pyenv %s (scripts/test does), which installs "
			    "tests/clients/requirements.txt there",
		     GG_BUILD_ROOT);
	gg_run(&r, 0, NULL,
	       (const char *[]){ PYTHON, "-c", "import cuda.bindings.driver, numba_cuda, pytest",
				 NULL });
	cr_assert_eq(gg_run_exit(&r), 0,
		     PYTHON " cannot import the clients (rerun scripts/pyenv %s): %s", GG_BUILD_ROOT,
		     r.err);
	gg_run_free(&r);
}

/* A run of @argv on the fake driver in @mode, with @extra (may be NULL) in
 * its environment; with red zones, its JSON summary goes to @json (unless
 * NULL). */
static inline void run_mode(struct gg_run *r, enum mode mode, const char *json,
			    const char *const *extra, const char *const *argv)
{
	const char *env[16];
	char json_env[256];
	size_t k = 0;
	unsigned flags = GG_RUN_FAKE;

	if (mode == PLAIN) {
		if (GG_PRELOAD_PREFIX[0])
			env[k++] = SANITIZER_PRELOAD;
	} else {
		flags |= GG_RUN_SHIM;
	}
	if (mode == REDZONE)
		env[k++] = "GPUGUARD_REDZONE=64";
	if (mode == REDZONE && json) {
		snprintf(json_env, sizeof(json_env), "GPUGUARD_SUMMARY_JSON=%s", json);
		env[k++] = json_env;
	}
	if (mode == DISABLED)
		env[k++] = "GPUGUARD_DISABLE=1";
	for (const char *const *e = extra; e && *e; e++)
		env[k++] = *e;
	env[k] = NULL;
	gg_run(r, flags, env, argv);
}

#endif
