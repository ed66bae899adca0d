/* The log's paths and lines (docs/how-it-works.md, "What the shim does"). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
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

	snprintf(want, sizeof(want),
		 "gpuguard[%d] ERROR: e 1\ngpuguard[%d] WARN: w 2\n"
		 "gpuguard[%d] INFO: i 3\n",
		 (int)getpid(), (int)getpid(), (int)getpid());
	cr_assert_str_eq(log, want);
}

Test(report, verbosity_two_traces_with_names_escaped)
{
	const char *log = log_of("2", emit_all);

	cr_assert_neq(strstr(log, "INFO: t 4\n"), NULL, "%s", log);
	cr_assert_neq(strstr(log, "INFO: cuModuleGetFunction(module 0x10, \"bad\\x22name\\x0a\") "
				  "-> CUDA_ERROR_NOT_FOUND\n"),
		      NULL, "%s", log);
}

/* ---- the log's descriptor and SIGPIPE (docs/how-it-works.md, "Reading the settings") ---- */

/* Set up the log as the shim's set-up does, with GPUGUARD_LOG @log ("" =
 * stderr). */
static void open_log_as_set_up(const char *log)
{
	struct gg_config c;

	if (log[0])
		setenv("GPUGUARD_LOG", log, 1);
	else
		unsetenv("GPUGUARD_LOG");
	setenv("GPUGUARD_VERBOSITY", "1", 1);
	gg_config_load(&c);
	gg_report_open(&c);
}

/* fd 2 becomes the write end of a pipe whose reader has gone. */
static void stderr_to_a_broken_pipe(void)
{
	int p[2];

	cr_assert_eq(pipe(p), 0);
	close(p[0]);
	cr_assert_eq(dup2(p[1], 2), 2);
	close(p[1]);
}

static bool sigpipe_pending(void)
{
	sigset_t pending;

	cr_assert_eq(sigpending(&pending), 0);
	return sigismember(&pending, SIGPIPE);
}

/* A temporary file, unlinked; its descriptor. */
static int scratch_file(void)
{
	char path[] = "/tmp/gg-report-XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	unlink(path);
	return fd;
}

/* What @fd's file holds, from its start. */
static const char *contents(int fd)
{
	static char buf[4096];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	cr_assert_geq(n, 0);
	buf[n] = '\0';
	return buf;
}

Test(report, a_log_line_into_a_pipe_with_no_reader_never_raises_sigpipe)
{
	signal(SIGPIPE, SIG_DFL); /* a SIGPIPE would end this test's process */
	stderr_to_a_broken_pipe();
	open_log_as_set_up("");
	gg_report_error("nobody reads this");
	cr_assert_not(sigpipe_pending());
}

Test(report, a_sigpipe_of_the_logs_own_making_is_taken_back_while_the_program_blocks_it)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	cr_assert_eq(sigprocmask(SIG_BLOCK, &set, NULL), 0);
	stderr_to_a_broken_pipe();
	open_log_as_set_up("");
	gg_report_error("nobody reads this");
	cr_assert_not(sigpipe_pending(), "the shim's SIGPIPE was left to the program");
}

Test(report, a_sigpipe_the_program_had_pending_is_left_pending)
{
	static const struct timespec now = { 0, 0 };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	cr_assert_eq(sigprocmask(SIG_BLOCK, &set, NULL), 0);
	raise(SIGPIPE);
	cr_assert(sigpipe_pending());
	stderr_to_a_broken_pipe();
	open_log_as_set_up("");
	gg_report_error("nobody reads this");
	cr_assert(sigpipe_pending(), "the program's own SIGPIPE was taken");
	cr_assert_eq(sigtimedwait(&set, NULL, &now), SIGPIPE);
}

/* ---- SIGXFSZ (ulimit -f): a log past the file size limit ---- */

static bool sigxfsz_pending(void)
{
	sigset_t pending;

	cr_assert_eq(sigpending(&pending), 0);
	return sigismember(&pending, SIGXFSZ);
}

/* A log file already past a 4 KiB RLIMIT_FSIZE, opened as set-up does: the
 * next line cannot be written. Its descriptor, for reading it back. */
static int log_past_the_size_limit(char *path)
{
	struct rlimit lim = { 4096, 4096 };
	char block[8192];
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	memset(block, 'x', sizeof(block));
	cr_assert_eq(write(fd, block, sizeof(block)), (ssize_t)sizeof(block));
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	open_log_as_set_up(path);
	return fd;
}

Test(report, a_log_line_past_the_file_size_limit_never_raises_sigxfsz)
{
	char path[] = "/tmp/gg-report-XXXXXX";
	int fd;

	signal(SIGXFSZ, SIG_DFL); /* a SIGXFSZ would end this test's process */
	fd = log_past_the_size_limit(path);
	gg_report_error("past the limit");
	cr_assert_not(sigxfsz_pending());
	close(fd);
	unlink(path);
}

static volatile sig_atomic_t xfsz_handled;

static void on_xfsz(int sig)
{
	(void)sig;
	xfsz_handled++;
}

/* The program's own handler never hears of the shim's write. */
Test(report, a_program_handling_sigxfsz_never_sees_one_from_the_log)
{
	char path[] = "/tmp/gg-report-XXXXXX";
	int fd;

	signal(SIGXFSZ, on_xfsz);
	fd = log_past_the_size_limit(path);
	gg_report_error("past the limit");
	cr_assert_eq(xfsz_handled, 0);
	cr_assert_not(sigxfsz_pending());
	/* The program's own write past the limit still reaches its handler. */
	cr_assert_eq(write(fd, "y", 1), -1);
	cr_assert_eq(errno, EFBIG);
	cr_assert_eq(xfsz_handled, 1);
	close(fd);
	unlink(path);
}

Test(report, a_sigxfsz_of_the_logs_own_making_is_taken_back_while_the_program_blocks_it)
{
	char path[] = "/tmp/gg-report-XXXXXX";
	sigset_t set;
	int fd;

	sigemptyset(&set);
	sigaddset(&set, SIGXFSZ);
	cr_assert_eq(sigprocmask(SIG_BLOCK, &set, NULL), 0);
	fd = log_past_the_size_limit(path);
	gg_report_error("past the limit");
	cr_assert_not(sigxfsz_pending(), "the shim's SIGXFSZ was left to the program");
	close(fd);
	unlink(path);
}

Test(report, a_sigxfsz_the_program_had_pending_is_left_pending)
{
	static const struct timespec now = { 0, 0 };
	char path[] = "/tmp/gg-report-XXXXXX";
	sigset_t set;
	int fd;

	sigemptyset(&set);
	sigaddset(&set, SIGXFSZ);
	cr_assert_eq(sigprocmask(SIG_BLOCK, &set, NULL), 0);
	raise(SIGXFSZ);
	fd = log_past_the_size_limit(path);
	gg_report_error("past the limit");
	cr_assert(sigxfsz_pending(), "the program's own SIGXFSZ was taken");
	cr_assert_eq(sigtimedwait(&set, NULL, &now), SIGXFSZ);
	cr_assert_not(sigxfsz_pending());
	close(fd);
	unlink(path);
}

/* A daemon closes fd 2 and opens its data file, which gets fd 2. */
Test(report, the_log_never_goes_into_the_file_the_program_opens_at_fd_2)
{
	int before = scratch_file(), data;

	cr_assert_eq(dup2(before, 2), 2);
	gg_report_note_stderr(); /* as the shim's load does, before the program */
	open_log_as_set_up("");
	close(2);
	data = scratch_file();
	cr_assert_eq(data, 2);
	gg_report_error("where does this go");
	cr_assert_str_eq(contents(data), "", "the log wrote into the program's file");
	cr_assert_neq(strstr(contents(before), "ERROR: where does this go\n"), NULL, "%s",
		      contents(before));
}

Test(report, with_fd_2_closed_at_set_up_the_log_goes_nowhere)
{
	int data;

	close(2);
	open_log_as_set_up("");
	data = scratch_file();
	cr_assert_eq(data, 2);
	gg_report_error("nowhere");
	cr_assert_str_eq(contents(data), "", "the log wrote into the program's file");
}

/* Before its first hooked call, a daemon closes fd 2 and opens its data
 * file there (or was started without fd 2 and opens it): set-up finds fd 2
 * open, but it is no longer the stderr the process was started with. */
Test(report, a_file_the_program_opened_at_fd_2_before_set_up_never_gets_the_log)
{
	int before = scratch_file(), data;

	cr_assert_eq(dup2(before, 2), 2);
	gg_report_note_stderr();
	close(2);
	data = scratch_file();
	cr_assert_eq(data, 2);
	open_log_as_set_up("");
	gg_report_error("where does this go");
	cr_assert_str_eq(contents(data), "", "the log wrote into the program's file");
	cr_assert_str_eq(contents(before), "");
}

Test(report, started_without_fd_2_a_file_opened_there_never_gets_the_log)
{
	int data;

	close(2);
	gg_report_note_stderr();
	data = scratch_file();
	cr_assert_eq(data, 2);
	open_log_as_set_up("");
	gg_report_error("where does this go");
	cr_assert_str_eq(contents(data), "", "the log wrote into the program's file");
}

/* The log file's own descriptor, closed by the program and its number reused. */
Test(report, a_log_file_descriptor_the_program_reused_is_never_written)
{
	char path[] = "/tmp/gg-report-XXXXXX", link[64], target[PATH_MAX];
	int log = mkstemp(path), reused = -1, data;
	DIR *d;
	struct dirent *e;

	cr_assert_geq(log, 0);
	open_log_as_set_up(path);
	/* The shim's descriptor of the log file: above the low numbers, close-on-exec. */
	cr_assert_not_null(d = opendir("/proc/self/fd"));
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, target, sizeof(target) - 1);
		if (n > 0 && fd != log && (target[n] = '\0', !strcmp(target, path)))
			reused = fd;
	}
	closedir(d);
	cr_assert_gt(reused, 2);
	cr_assert(fcntl(reused, F_GETFD) & FD_CLOEXEC);
	close(reused);
	data = scratch_file();
	cr_assert_eq(dup2(data, reused), reused);
	gg_report_error("not into the program's file");
	cr_assert_str_eq(contents(data), "");
	cr_assert_str_eq(contents(log), "");
	close(log);
	unlink(path);
}

Test(report, a_log_fifo_with_no_reader_is_refused_without_blocking, .timeout = 60)
{
	char dir[] = "/tmp/gg-report-XXXXXX", fifo[64], want[256];
	int err = scratch_file();

	cr_assert_not_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_eq(dup2(err, 2), 2);
	gg_report_note_stderr();
	open_log_as_set_up(fifo);
	gg_report_error("after");
	snprintf(want, sizeof(want),
		 "ERROR: GPUGUARD_LOG=\"%s\": it is a FIFO, and opening one with "
		 "no reader would block; logging to stderr\n",
		 fifo);
	cr_assert_neq(strstr(contents(err), want), NULL, "%s", contents(err));
	cr_assert_neq(strstr(contents(err), "ERROR: after\n"), NULL, "%s", contents(err));
	unlink(fifo);
	rmdir(dir);
}

Test(report, a_log_fifo_with_a_reader_gets_the_lines, .timeout = 60)
{
	char dir[] = "/tmp/gg-report-XXXXXX", fifo[64], buf[256];
	int reader;
	ssize_t n;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	reader = open(fifo, O_RDONLY | O_NONBLOCK);
	cr_assert_geq(reader, 0);
	open_log_as_set_up(fifo);
	gg_report_error("through the fifo");
	n = read(reader, buf, sizeof(buf) - 1);
	cr_assert_gt(n, 0);
	buf[n] = '\0';
	cr_assert_neq(strstr(buf, "ERROR: through the fifo\n"), NULL, "%s", buf);
	close(reader);
	unlink(fifo);
	rmdir(dir);
}
