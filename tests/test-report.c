/* The log's paths and lines (SPEC §6). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options/config.h"
#include "report/report.h"

Test(report, pid_is_substituted_in_paths)
{
	char out[64];

	cr_assert_eq(gg_report_expand_path("/tmp/gg.%p.log", 4711, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/tmp/gg.4711.log");
	cr_assert_eq(gg_report_expand_path("%p-%p", 12, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "12-12");
	cr_assert_eq(gg_report_expand_path("100%", 12, out, sizeof(out)), 0);
	cr_assert_str_eq(out, "100%");
}

Test(report, too_long_a_path_is_refused)
{
	char out[8];

	cr_assert_eq(gg_report_expand_path("/tmp/%p", 123456, out, sizeof(out)), -ENAMETOOLONG);
	cr_assert_eq(gg_report_expand_path("/tmp/abc", 1, out, sizeof(out)), -ENAMETOOLONG);
	cr_assert_eq(gg_report_expand_path("/tmp/ab", 1, out, sizeof(out)), 0);
}

static char *log_of(const char *verbosity, void (*emit)(void))
{
	char path[] = "/tmp/gg-report-XXXXXX";
	int fd = mkstemp(path);
	struct gg_config c;
	static char buf[8192];
	ssize_t n;

	cr_assert_geq(fd, 0);
	setenv("GPUGUARD_LOG", path, 1);
	setenv("GPUGUARD_VERBOSITY", verbosity, 1);
	gg_config_load(&c);
	gg_report_open(&c);
	emit();
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	cr_assert_geq(n, 0);
	buf[n] = '\0';
	close(fd);
	unlink(path);
	return buf;
}

static void emit_all(void)
{
	gg_report_error("e %d", 1);
	gg_report_warn("w %d", 2);
	gg_report_info("i %d", 3);
	gg_report_trace("t %d", 4);
	gg_report_lookup("cuModuleGetFunction", (void *)0x10, "bad\"name\n", "CUDA_ERROR_NOT_FOUND");
}

Test(report, verbosity_zero_writes_errors_only)
{
	char want[64];
	const char *log = log_of("0", emit_all);

	snprintf(want, sizeof(want), "gpuguard[%d] ERROR: e 1\n", (int)getpid());
	cr_assert_str_eq(log, want);
}

Test(report, verbosity_one_adds_warnings_and_info)
{
	char want[128];
	const char *log = log_of("1", emit_all);

	snprintf(want, sizeof(want), "gpuguard[%d] ERROR: e 1\ngpuguard[%d] WARN: w 2\n"
		 "gpuguard[%d] INFO: i 3\n", (int)getpid(), (int)getpid(), (int)getpid());
	cr_assert_str_eq(log, want);
}

Test(report, verbosity_two_traces_with_names_escaped)
{
	const char *log = log_of("2", emit_all);

	cr_assert_neq(strstr(log, "INFO: t 4\n"), NULL, "%s", log);
	cr_assert_neq(strstr(log, "INFO: cuModuleGetFunction(module 0x10, \"bad\\x22name\\x0a\") "
				  "-> CUDA_ERROR_NOT_FOUND\n"), NULL, "%s", log);
}
