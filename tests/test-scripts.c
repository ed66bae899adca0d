/* The README's two commands, scripts/demo and scripts/test: they help when
 * asked, refuse what they do not take, and show why a step failed instead of
 * exiting with nothing said. Each build here is in a directory of its own and
 * fails at its first step, so no test builds the project. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

#define DEMO GG_SOURCE_ROOT "/scripts/demo"
#define TEST GG_SOURCE_ROOT "/scripts/test"

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

	gg_test_dir(dir, sizeof(dir));
	snprintf(build, sizeof(build), "%s/build", dir);
	snprintf(env_build, sizeof(env_build), "GG_BUILD_DIR=%s", build);
	gg_run(&r, 0, (const char *[]){ env_build, "CFLAGS=-include /nonexistent/gg-broken.h", NULL },
	       (const char *[]){ DEMO, NULL });
	cr_assert_eq(gg_run_exit(&r), 1, "%s", r.err);
	cr_assert_neq(strstr(r.err, "scripts/demo: 'meson setup "), NULL, "%s", r.err);
	cr_assert_neq(strstr(r.err, "can not compile programs"), NULL, "meson's own error: %s", r.err);
	gg_run_free(&r);
}

Test(scripts, test_shows_why_meson_setup_failed)
{
	char dir[64], build[96], env_build[128];
	struct gg_run r;

	gg_test_dir(dir, sizeof(dir));
	snprintf(build, sizeof(build), "%s/build", dir);
	snprintf(env_build, sizeof(env_build), "GG_BUILD_DIR=%s", build);
	gg_run(&r, 0, (const char *[]){ env_build, NULL },
	       (const char *[]){ TEST, "--", "-Dbogus=1", NULL });
	cr_assert_eq(gg_run_exit(&r), 1, "%s", r.err);
	cr_assert_neq(strstr(r.err, "scripts/test: 'meson setup "), NULL, "%s", r.err);
	cr_assert_neq(strstr(r.err, "Unknown options: \"bogus\""), NULL, "meson's own error: %s",
		      r.err);
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

/* A shell script, made executable. */
static void write_script(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(chmod(path, 0755), 0);
}

/* The demo, on this suite's build: it asks ninja for what it runs and no
 * more (the suite is most of a build), the sm_80 image among them where the
 * toolkit makes one, and shows what its words say, with no shell noise (a
 * "line 75: ... Aborted" of bash's). ninja is wrapped to note its
 * arguments. */
Test(scripts, demo_builds_what_it_runs_and_shows_what_it_says)
{
	char dir[64], wrapper[128], script[512], args_path[128], cmd[512];
	struct gg_run r;
	char *args, *all;
	FILE *p;
	char real_ninja[256] = "";

	p = popen("command -v ninja", "r");
	cr_assert_not_null(p);
	cr_assert_not_null(fgets(real_ninja, sizeof(real_ninja), p));
	pclose(p);
	real_ninja[strcspn(real_ninja, "\n")] = '\0';
	gg_test_dir(dir, sizeof(dir));
	snprintf(wrapper, sizeof(wrapper), "%s/ninja", dir);
	snprintf(args_path, sizeof(args_path), "%s/ninja-args", dir);
	snprintf(script, sizeof(script), "#!/bin/sh\nprintf '%%s\\n' \"$*\" >>'%s'\nexec '%s' \"$@\"\n",
		 args_path, real_ninja);
	write_script(wrapper, script);
	snprintf(cmd, sizeof(cmd), "PATH='%s':\"$PATH\" GG_BUILD_DIR='%s' exec '%s'", dir,
		 GG_BUILD_ROOT, DEMO);
	gg_run(&r, 0, NULL, (const char *[]){ "/bin/sh", "-c", cmd, NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s%s", r.out, r.err);
	args = gg_read_file(args_path);
	cr_assert_not_null(args, "the demo never ran ninja");
	/* The build: targets named, not everything. */
	cr_expect(strstr(args, "-C " GG_BUILD_ROOT " shim/libgpuguard.so tools/gpuguard examples/demo "
			       "tests/fakecuda/libcuda.so.1 tests/fakecuda/kernels.ptx"),
		  "%s", args);
	all = malloc(r.out_len + r.err_len + 1);
	cr_assert_not_null(all);
	snprintf(all, r.out_len + r.err_len + 1, "%s%s", r.out, r.err);
	cr_expect_null(strstr(all, "Aborted"), "%s", all);
	cr_expect_null(strstr(all, "scripts/demo: line"), "%s", all);
	/* Red zones by default: the write past the end is caught. */
	cr_expect(strstr(all, "ERROR: red zone violation (free): allocation #6 of 1000 bytes"), "%s",
		  all);
	cr_expect(strstr(all, "bisect: allocation #7 is read past its end"), "%s", all);
#ifdef GG_ARCH80_FATBIN
	cr_expect(strstr(args, " tests/fakecuda/arch80.fatbin\n"), "%s", args);
	cr_expect(strstr(all, "\n== 7. The same program given kernels built only for sm_80"), "%s",
		  all);
	cr_expect(strstr(all, "three bugs, and an image for another GPU\n"), "%s", all);
	cr_expect(strstr(all, "- An image with no code for this GPU"), "%s", all);
#else
	cr_expect_null(strstr(all, "== 7."), "%s", all);
	cr_expect_null(strstr(all, "image"), "%s", all);
#endif
	free(all);
	free(args);
	gg_run_free(&r);
}

/* libunwind's header is the library's, not the tests': the demo's packages
 * include it, and a machine without it is told to install it (a user who
 * cannot be root is told the command). pkg-config stands in for a machine
 * that lacks it. */
Test(scripts, the_packages_of_any_build_include_libunwind)
{
	char dir[64], fake[128], cmd[512];
	struct gg_run r;

	gg_test_dir(dir, sizeof(dir));
	snprintf(fake, sizeof(fake), "%s/pkg-config", dir);
	write_script(fake, "#!/bin/sh\ncase \"$*\" in *libunwind*) exit 1 ;; esac\n"
			   "exec /usr/bin/pkg-config \"$@\"\n");
	snprintf(fake, sizeof(fake), "%s/id", dir);
	write_script(fake, "#!/bin/sh\necho 1000\n");
	snprintf(cmd, sizeof(cmd), "PATH='%s':\"$PATH\"; . '%s/scripts/deps.sh' && gg_need", dir,
		 GG_SOURCE_ROOT);
	gg_run(&r, 0, NULL, (const char *[]){ "/bin/bash", "-c", cmd, NULL });
	cr_expect_eq(gg_run_exit(&r), 1, "%s", r.err);
	cr_expect(strstr(r.err, "error: missing Debian packages; as root run: apt-get install "
				"libunwind-dev"),
		  "%s", r.err);
	gg_run_free(&r);
}

/* A build without libunwind's header stops at meson setup and names the
 * package, rather than building a slower unwinder in silence. */
Test(scripts, a_build_without_libunwind_names_the_package)
{
	char dir[64], build[96], cmd[512];
	struct gg_run r;

	gg_test_dir(dir, sizeof(dir));
	snprintf(build, sizeof(build), "%s/build", dir);
	snprintf(cmd, sizeof(cmd),
		 "PKG_CONFIG_LIBDIR='%s' PKG_CONFIG_PATH= exec meson setup '%s' '%s' "
		 "-Dtests=disabled",
		 dir, build, GG_SOURCE_ROOT);
	gg_run(&r, 0, NULL, (const char *[]){ "/bin/sh", "-c", cmd, NULL });
	cr_expect_neq(gg_run_exit(&r), 0, "%s", r.out);
	cr_expect(strstr(r.out, "install libunwind-dev"), "%s%s", r.out, r.err);
	gg_run_free(&r);
}
