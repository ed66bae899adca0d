/* The README's two commands, scripts/demo and scripts/test: they help when
 * asked, refuse what they do not take, and show why a step failed instead of
 * exiting with nothing said. Each build here is in a directory of its own and
 * fails at its first step, so no test builds the project. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define DEMO GG_SOURCE_ROOT "/scripts/demo"
#define TEST GG_SOURCE_ROOT "/scripts/test"

static void remove_tree(const char *dir)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(scripts, demo_help_prints_its_usage_and_runs_nothing)
{
	struct gg_run r;

	gg_run(&r, 0, NULL, (const char *[]){ DEMO, "--help", NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_assert_neq(strstr(r.out, "scripts/demo --help"), NULL, "%s", r.out);
	cr_assert_eq(strstr(r.out, "=="), NULL, "the demo ran: %s", r.out);
	gg_run_free(&r);
}

Test(scripts, demo_refuses_an_argument_it_does_not_take)
{
	struct gg_run r;

	gg_run(&r, 0, NULL, (const char *[]){ DEMO, "--fast", NULL });
	cr_assert_eq(gg_run_exit(&r), 64, "%s", r.err);
	cr_assert_str_eq(r.out, "");
	cr_assert_neq(strstr(r.err, "scripts/demo: unknown argument '--fast'"), NULL, "%s", r.err);
	gg_run_free(&r);
}

/* A compiler that cannot compile: meson setup fails, and says why. */
Test(scripts, demo_shows_why_the_build_could_not_be_set_up)
{
	char dir[64], build[96], env_build[128];
	struct gg_run r;

	gg_tmpdir(dir, sizeof(dir));
	snprintf(build, sizeof(build), "%s/build", dir);
	snprintf(env_build, sizeof(env_build), "GG_BUILD_DIR=%s", build);
	gg_run(&r, 0, (const char *[]){ env_build, "CFLAGS=-include /nonexistent/gg-broken.h", NULL },
	       (const char *[]){ DEMO, NULL });
	cr_assert_eq(gg_run_exit(&r), 1, "%s", r.err);
	cr_assert_neq(strstr(r.err, "scripts/demo: 'meson setup "), NULL, "%s", r.err);
	cr_assert_neq(strstr(r.err, "can not compile programs"), NULL, "meson's own error: %s", r.err);
	remove_tree(dir);
	gg_run_free(&r);
}

Test(scripts, test_shows_why_meson_setup_failed)
{
	char dir[64], build[96], env_build[128];
	struct gg_run r;

	gg_tmpdir(dir, sizeof(dir));
	snprintf(build, sizeof(build), "%s/build", dir);
	snprintf(env_build, sizeof(env_build), "GG_BUILD_DIR=%s", build);
	gg_run(&r, 0, (const char *[]){ env_build, NULL },
	       (const char *[]){ TEST, "--", "-Dbogus=1", NULL });
	cr_assert_eq(gg_run_exit(&r), 1, "%s", r.err);
	cr_assert_neq(strstr(r.err, "scripts/test: 'meson setup "), NULL, "%s", r.err);
	cr_assert_neq(strstr(r.err, "Unknown options: \"bogus\""), NULL, "meson's own error: %s",
		      r.err);
	remove_tree(dir);
	gg_run_free(&r);
}

Test(scripts, test_help_prints_its_usage)
{
	struct gg_run r;

	gg_run(&r, 0, NULL, (const char *[]){ TEST, "--help", NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_assert_neq(strstr(r.out, "scripts/test --sanitize"), NULL, "%s", r.out);
	cr_assert_neq(strstr(r.out, "GG_BUILD_DIR=DIR"), NULL, "%s", r.out);
	gg_run_free(&r);
}
