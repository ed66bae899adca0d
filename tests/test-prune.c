/* gpuguard prune-metrics (tools/cmd-prune.c): the metrics files of exited
 * processes go, a running process's file never does, nor anything that is
 * not gpuguard's. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <errno.h>
#include <grp.h>
#include <sched.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

#define RZ GG_APPS "/app-redzone"

/* Last modified @seconds ago. */
static void age(const char *path, long seconds)
{
	struct timespec t[2];

	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= seconds;
	t[1] = t[0];
	cr_assert_eq(utimensat(AT_FDCWD, path, t, 0), 0, "%s", path);
}

/* Write @text to @dir/@name, last modified @seconds ago. */
static void put(const char *dir, const char *name, const char *text, long seconds)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_not_null(f = fopen(path, "w"), "%s", path);
	fputs(text, f);
	fclose(f);
	age(path, seconds);
}

static bool there(const char *dir, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

static int prune(struct gg_run *r, const char *const *args)
{
	const char *argv[16] = { GG_CLI, "prune-metrics" };
	size_t n = 2;

	for (; *args; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	gg_run(r, 0, NULL, argv);
	return gg_run_exit(r);
}

/* Process @pid's start time in clock ticks since boot (/proc/PID/stat, field 22). */
static unsigned long long start_of(int pid)
{
	char path[64], *text, *p;
	unsigned long long ticks;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	cr_assert_not_null(text = gg_read_file(path));
	cr_assert_not_null(p = strrchr(text, ')'));
	for (int field = 2; field < 22; field++)
		cr_assert_not_null(p = strchr(p + 1, ' '));
	ticks = strtoull(p + 1, NULL, 10);
	free(text);
	return ticks;
}

static unsigned long long own_start(void)
{
	return start_of((int)getpid());
}

static char *boot_id(void)
{
	char *id = gg_read_file("/proc/sys/kernel/random/boot_id");

	cr_assert_not_null(id);
	id[strcspn(id, "\n")] = '\0';
	return id;
}

/* A pid that no process has now: a child's, once reaped. */
static int gone_pid(void)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (!pid)
		_exit(0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	return (int)pid;
}

/* Real files: a process that ended and one still running, both written long
 * ago; only the ended one's goes. Once the running one has ended, its file
 * goes too, when it is old enough. */
Test(prune, the_file_of_an_exited_process_goes_and_a_running_ones_stays)
{
	char dir[64], metrics[128], env_metrics[160], go[128], step[160], live[160], done[160];
	struct gg_spawn s;
	struct gg_run r, p;

	gg_test_dir(dir, sizeof(dir));
	snprintf(metrics, sizeof(metrics), "%s/gpuguard.%%p.prom", dir);
	snprintf(env_metrics, sizeof(env_metrics), "GPUGUARD_METRICS=%s", metrics);
	snprintf(go, sizeof(go), "%s/go", dir);
	snprintf(step, sizeof(step), "wait:%s", go);
	gg_spawn(&s, GG_RUN_SHIM | GG_RUN_FAKE,
		 (const char *[]){ env_metrics, "GPUGUARD_REDZONE=16", "GPUGUARD_BOUNDARY=sync:1",
				   "GG_TEST_PTX=" GG_PTX, NULL },
		 (const char *[]){ RZ, "alloc:64", "sync", step, NULL });
	cr_assert(gg_spawn_wait_output(&s, "synced\n", 30));
	snprintf(live, sizeof(live), "%s/gpuguard.%d.prom", dir, s.pid);
	cr_assert(gg_wait_file(live, 30), "the running process wrote no metrics");
	free(gg_read_metrics(live));

	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE,
	       (const char *[]){ env_metrics, "GPUGUARD_REDZONE=16", "GG_TEST_PTX=" GG_PTX, NULL },
	       (const char *[]){ RZ, "alloc:64", NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	gg_run_free(&r);
	cr_assert_eq(gg_dir_entries(dir), 2, "the ended process wrote no metrics");
	/* Its pid: the file that is not the running process's. */
	snprintf(done, sizeof(done), "ls %s | grep -v '^go$' | grep -vx 'gpuguard.%d.prom'", dir,
		 s.pid);
	gg_run(&r, 0, NULL, (const char *[]){ "/bin/sh", "-c", done, NULL });
	cr_assert_eq(gg_run_exit(&r), 0);
	r.out[strcspn(r.out, "\n")] = '\0';
	snprintf(done, sizeof(done), "%s/%s", dir, r.out);
	gg_run_free(&r);

	age(live, 7200);
	age(done, 7200);
	cr_assert_eq(prune(&p, (const char *[]){ dir, "--older-than", "1h", NULL }), 0, "%s", p.err);
	cr_assert_neq(strstr(p.out, "its process is gone\n"), NULL, "%s", p.out);
	cr_assert_neq(strstr(p.out, "prune-metrics: 1 file removed, 1 of running processes kept, "
				    "0 newer than 1h kept\n"),
		      NULL, "%s", p.out);
	cr_assert_eq(access(done, F_OK), -1, "the ended process's file is still there");
	cr_assert_eq(access(live, F_OK), 0, "the running process's file was removed");
	gg_run_free(&p);

	/* It ends: its last write is new, then old. */
	fclose(fopen(go, "w"));
	gg_spawn_finish(&s, &r);
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	gg_run_free(&r);
	cr_assert_eq(prune(&p, (const char *[]){ "--older-than", "1h", dir, NULL }), 0, "%s", p.err);
	cr_assert_eq(access(live, F_OK), 0, "a file newer than the duration was removed");
	cr_assert_neq(strstr(p.out, "0 files removed, 0 of running processes kept, 1 newer than 1h "
				    "kept\n"),
		      NULL, "%s", p.out);
	gg_run_free(&p);
	age(live, 7200);
	cr_assert_eq(prune(&p, (const char *[]){ "--older-than=1h", dir, NULL }), 0, "%s", p.err);
	cr_assert_eq(access(live, F_OK), -1, "%s", p.out);
	gg_run_free(&p);
}

/* A pid that runs is another process when its start time (the process
 * line) or, in a file without that line, its program is not the writer's;
 * a file of another boot is of an exited process. */
Test(prune, a_pid_reused_by_another_process_or_boot_is_told_from_the_writer)
{
	char dir[64], text[512], *boot = boot_id();
	unsigned long long start = own_start();
	int pid = (int)getpid();
	struct gg_run p;

	gg_test_dir(dir, sizeof(dir));
	snprintf(text, sizeof(text),
		 "# gpuguard-process pid=%d starttime=%llu boot_id=%s\n"
		 "gpuguard_errors{exe=\"test-prune\",pid=\"%d\"} 0\n",
		 pid, start, boot, pid);
	put(dir, "same.prom", text, 7200);
	snprintf(text, sizeof(text),
		 "# gpuguard-process pid=%d starttime=%llu boot_id=%s\n"
		 "gpuguard_errors{exe=\"test-prune\",pid=\"%d\"} 0\n",
		 pid, start + 1, boot, pid);
	put(dir, "later-start.prom", text, 7200);
	snprintf(text, sizeof(text),
		 "# gpuguard-process pid=%d starttime=%llu boot_id=%s\n"
		 "gpuguard_errors{exe=\"test-prune\",pid=\"%d\"} 0\n",
		 pid, start, "00000000-0000-0000-0000-000000000000", pid);
	put(dir, "other-boot.prom", text, 7200);
	/* Files from before the process line: the program's name decides. */
	snprintf(text, sizeof(text), "gpuguard_errors{exe=\"test-prune\",pid=\"%d\"} 0\n", pid);
	put(dir, "old-same.prom", text, 7200);
	snprintf(text, sizeof(text), "gpuguard_errors{exe=\"another\",pid=\"%d\"} 0\n", pid);
	put(dir, "old-other.prom", text, 7200);
	snprintf(text, sizeof(text), "gpuguard_errors{pid=\"%d\"} 0\n", gone_pid());
	put(dir, "old-gone.prom", text, 7200);

	cr_assert_eq(prune(&p, (const char *[]){ dir, "--older-than", "1m", NULL }), 0, "%s", p.err);
	cr_assert(there(dir, "same.prom"), "%s", p.out);
	cr_assert(there(dir, "old-same.prom"), "%s", p.out);
	cr_assert(!there(dir, "later-start.prom"), "%s", p.out);
	cr_assert(!there(dir, "other-boot.prom"), "%s", p.out);
	cr_assert(!there(dir, "old-other.prom"), "%s", p.out);
	cr_assert(!there(dir, "old-gone.prom"), "%s", p.out);
	cr_assert_eq(gg_count_lines(p.out, "its pid is another process now"), 1, "%s", p.out);
	cr_assert_eq(gg_count_lines(p.out, "written before the last boot"), 1, "%s", p.out);
	cr_assert_eq(gg_count_lines(p.out, "its pid is another program now"), 1, "%s", p.out);
	cr_assert_eq(gg_count_lines(p.out, "its process is gone"), 1, "%s", p.out);
	cr_assert_neq(strstr(p.out, "4 files removed, 2 of running processes kept"), NULL, "%s", p.out);
	gg_run_free(&p);
	free(boot);
}

/* --dry-run names what it would remove and removes nothing; files that are
 * not gpuguard's metrics (another exporter's, a link, another suffix) are
 * never touched. */
Test(prune, a_dry_run_removes_nothing_and_other_files_are_left_alone)
{
	char dir[64], text[256], link[128], target[128];
	struct gg_run p;
	int gone = gone_pid();

	gg_test_dir(dir, sizeof(dir));
	snprintf(text, sizeof(text),
		 "# gpuguard-process pid=%d starttime=1\n"
		 "gpuguard_errors{exe=\"a\",pid=\"%d\"} 0\n",
		 gone, gone);
	put(dir, "gone.prom", text, 7200);
	put(dir, "gone.json", text, 7200);
	snprintf(text, sizeof(text),
		 "# HELP node_thing x\n# TYPE node_thing gauge\n"
		 "node_thing{pid=\"%d\"} 1\n",
		 gone);
	put(dir, "other-exporter.prom", text, 7200);
	snprintf(target, sizeof(target), "%s/gone.json", dir);
	snprintf(link, sizeof(link), "%s/link.prom", dir);
	cr_assert_eq(symlink(target, link), 0);

	cr_assert_eq(prune(&p, (const char *[]){ "--dry-run", dir, "--older-than", "1m", NULL }), 0,
		     "%s", p.err);
	cr_assert_eq(gg_count_lines(p.out, "would remove "), 1, "%s", p.out);
	cr_assert_neq(strstr(p.out, "/gone.prom: pid "), NULL, "%s", p.out);
	cr_assert_neq(strstr(p.out, "1 file would be removed"), NULL, "%s", p.out);
	cr_assert(there(dir, "gone.prom"), "a dry run removed a file");
	gg_run_free(&p);

	cr_assert_eq(prune(&p, (const char *[]){ dir, "--older-than", "1m", NULL }), 0, "%s", p.err);
	cr_assert_eq(gg_count_lines(p.out, ": pid "), 1, "%s", p.out);
	cr_assert(!there(dir, "gone.prom"), "%s", p.out);
	cr_assert(there(dir, "gone.json") && there(dir, "other-exporter.prom") &&
			  there(dir, "link.prom"),
		  "%s", p.out);
	gg_run_free(&p);
}

/* A missing or bad --older-than, or two directories, is a usage error (2)
 * and removes nothing. */
Test(prune, bad_arguments_are_usage_errors_and_remove_nothing)
{
	static const struct {
		const char *args[6], *want;
	} bad[] = {
		{ { "DIR" }, "--older-than DURATION is required" },
		{ { "DIR", "--older-than", "10" }, "\"10\" is not a valid value" },
		{ { "DIR", "--older-than", "1w" }, "\"1w\" is not a valid value" },
		{ { "DIR", "--older-than", "-1h" }, "\"-1h\" is not a valid value" },
		{ { "DIR", "--older-than" }, "--older-than needs a value" },
		{ { "DIR", "DIR", "--older-than", "1h" }, "one directory only" },
		{ { "DIR", "--force", "--older-than", "1h" }, "unknown option \"--force\"" },
		{ { "--older-than", "1h" }, "no directory given" },
	};
	char dir[64], text[128];
	int gone = gone_pid();

	gg_test_dir(dir, sizeof(dir));
	snprintf(text, sizeof(text), "gpuguard_errors{exe=\"a\",pid=\"%d\"} 0\n", gone);
	put(dir, "gone.prom", text, 7200);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *args[8];
		struct gg_run p;
		size_t n = 0;

		for (size_t j = 0; bad[i].args[j]; j++)
			args[n++] = strcmp(bad[i].args[j], "DIR") ? bad[i].args[j] : dir;
		args[n] = NULL;
		cr_expect_eq(prune(&p, args), 2, "%s: %s", bad[i].want, p.err);
		cr_expect_neq(strstr(p.err, bad[i].want), NULL, "%s", p.err);
		gg_run_free(&p);
	}
	cr_assert(there(dir, "gone.prom"));
}

/* ---- /proc that hides processes ------------------------------------------ */

/* The users of the hidepid tests: the one prune-metrics runs as, and another
 * whose process it must not see. */
#define PRUNER 65534 /* nobody */
#define OTHER 65533

/* A child of user @uid that waits until killed: its pid. */
static int process_of(uid_t uid)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (!pid) {
		/* Dumpable again after the change of user, so that its /proc entry is
		 * its user's, as a process started by that user has it. */
		if (setgroups(0, NULL) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid) ||
		    prctl(PR_SET_DUMPABLE, 1))
			_exit(1);
		for (;;)
			pause();
	}
	/* Running as @uid once /proc says so (its start time is read then). */
	for (int i = 0; i < 5000; i++) {
		char path[64];
		struct stat st;

		snprintf(path, sizeof(path), "/proc/%d", (int)pid);
		if (!stat(path, &st) && st.st_uid == uid)
			return (int)pid;
		usleep(1000);
	}
	cr_assert_fail("process %d never ran as user %u", (int)pid, (unsigned)uid);
	return -1;
}

static void end_process(int pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* gpuguard prune-metrics @args, run as PRUNER in a mount namespace of its own
 * (and, with @pid_ns, a pid namespace of its own too, as in a container)
 * where /proc is mounted with @proc_options (NULL: no /proc, an empty
 * directory over it); stdout, stderr and status into @r. False, with why in
 * @why, when this system cannot set that up (not root, no namespaces): the
 * test is then skipped. */
static bool prune_hidden(struct gg_run *r, const char *dir, const char *proc_options, bool pid_ns,
			 const char *const *args, char *why, size_t cap)
{
	char cli[128], out[128], err[128], setup[128], copy[PATH_MAX + 512];
	const char *argv[16] = { cli, "prune-metrics" };
	size_t n = 2;
	int status;
	pid_t pid;

	if (geteuid()) {
		snprintf(why, cap, "not root: cannot mount a /proc that hides processes");
		return false;
	}
	/* A copy that PRUNER can run wherever the build tree lies. */
	snprintf(cli, sizeof(cli), "%s/gpuguard", dir);
	snprintf(copy, sizeof(copy), "cp '%s' '%s' && chmod 755 '%s'", GG_CLI, cli, cli);
	cr_assert_eq(system(copy), 0, "%s", copy);
	for (; *args; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	snprintf(err, sizeof(err), "%s/err.txt", dir);
	snprintf(setup, sizeof(setup), "%s/setup.txt", dir);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		FILE *f = fopen(setup, "w");
		const char *step;

		if (!f)
			_exit(126);
		if (unshare(CLONE_NEWNS | (pid_ns ? CLONE_NEWPID : 0))) {
			step = pid_ns ? "unshare(CLONE_NEWNS | CLONE_NEWPID)" : "unshare(CLONE_NEWNS)";
		} else if (pid_ns && (pid = fork()) != 0) {
			int st;

			/* The first process of the new namespace runs the rest. */
			if (pid < 0 || waitpid(pid, &st, 0) != pid)
				_exit(126);
			_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 126);
		} else if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
			step = "making / private";
		} else if (proc_options ? mount("proc", "/proc", "proc",
						MS_NOSUID | MS_NODEV | MS_NOEXEC, proc_options)
					: mount("tmpfs", "/proc", "tmpfs", 0, "size=16k")) {
			step = proc_options ? "mounting /proc" : "mounting a tmpfs over /proc";
		} else {
			int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

			if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0 || setgroups(0, NULL) ||
			    setresgid(PRUNER, PRUNER, PRUNER) || setresuid(PRUNER, PRUNER, PRUNER))
				_exit(126);
			execv(cli, (char **)argv);
			_exit(127);
		}
		fprintf(f, "%s (%s) failed: %s", step, proc_options ? proc_options : "none",
			strerror(errno));
		fclose(f);
		_exit(125);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 125) {
		char *text = gg_read_file(setup);

		snprintf(why, cap, "%s", text ? text : "the mount namespace could not be set up");
		free(text);
		return false;
	}
	cr_assert(!WIFEXITED(status) || WEXITSTATUS(status) < 126, "prune-metrics did not start (%d)",
		  WEXITSTATUS(status));
	memset(r, 0, sizeof(*r));
	r->status = status;
	cr_assert_not_null(r->out = gg_read_file(out));
	cr_assert_not_null(r->err = gg_read_file(err));
	r->out_len = strlen(r->out);
	r->err_len = strlen(r->err);
	unlink(out);
	unlink(err);
	unlink(setup);
	unlink(cli);
	return true;
}

/* A /proc that hides other users' processes (hidepid=2, or its name
 * invisible: no entry; hidepid=1: entries that cannot be read), or no /proc
 * at all, is no evidence that a process is gone: run as another user,
 * prune-metrics keeps the files of a live process it cannot see, with and
 * without the process line, and says why, file by file and in its count. A
 * pid that kill() says no process has still goes; the file of a process it
 * can see and tell from the writer stays, as a running one's. */
Test(prune, a_process_that_proc_hides_is_not_gone)
{
	static const struct {
		const char *options, *why;
	} mounts[] = {
		{ "hidepid=2", "cannot be seen (/proc hides other users' processes), not known "
			       "to be gone" },
		{ "hidepid=invisible", "cannot be seen (/proc hides other users' processes), "
				       "not known to be gone" },
		{ "hidepid=1", "cannot be read in /proc (Operation not permitted), not known to "
			       "be gone" },
		{ NULL, "exists and /proc cannot be read, so whether it is the writer cannot be "
			"told; not known to be gone" },
	};
	char *boot = boot_id();

	for (size_t m = 0; m < sizeof(mounts) / sizeof(mounts[0]); m++) {
		int other, own, gone;
		char dir[64], text[512], why[256], line[512];
		struct gg_run p;
		bool ran;

		/* A sanitized command cannot run without /proc: the sanitizers read
		 * their options from /proc/self/environ and LeakSanitizer stops
		 * threads through /proc/PID/task, so it fails every run there. The
		 * case runs in the other builds. */
		if (!mounts[m].options && UNDER_ASAN)
			continue;
		other = process_of(OTHER);
		own = process_of(PRUNER);
		gone = gone_pid();
		gg_test_dir(dir, sizeof(dir));
		cr_assert_eq(chown(dir, PRUNER, PRUNER), 0);
		snprintf(text, sizeof(text),
			 "# gpuguard-process pid=%d starttime=%llu boot_id=%s\n"
			 "gpuguard_errors{exe=\"app\",pid=\"%d\"} 0\n",
			 other, start_of(other), boot, other);
		put(dir, "other.prom", text, 7200);
		snprintf(text, sizeof(text), "gpuguard_errors{exe=\"app\",pid=\"%d\"} 0\n", other);
		put(dir, "other-old.prom", text, 7200);
		snprintf(text, sizeof(text),
			 "# gpuguard-process pid=%d starttime=%llu boot_id=%s\n"
			 "gpuguard_errors{exe=\"app\",pid=\"%d\"} 0\n",
			 own, start_of(own), boot, own);
		put(dir, "own.prom", text, 7200);
		snprintf(text, sizeof(text),
			 "# gpuguard-process pid=%d starttime=1 boot_id=%s\n"
			 "gpuguard_errors{exe=\"app\",pid=\"%d\"} 0\n",
			 gone, boot, gone);
		put(dir, "gone.prom", text, 7200);

		ran = prune_hidden(&p, dir, mounts[m].options, false,
				   (const char *[]){ dir, "--older-than", "1h", NULL }, why,
				   sizeof(why));
		end_process(other);
		end_process(own);
		if (!ran) {
			free(boot);
			cr_skip_test("%s", why);
		}
		cr_expect_eq(gg_run_exit(&p), 0, "%s: %s", mounts[m].options, p.err);
		cr_expect(there(dir, "other.prom"), "%s: a hidden process's file was removed: %s",
			  mounts[m].options, p.out);
		cr_expect(there(dir, "other-old.prom"), "%s: a hidden process's file was removed: %s",
			  mounts[m].options, p.out);
		cr_expect(there(dir, "own.prom"), "%s: %s", mounts[m].options, p.out);
		cr_expect(!there(dir, "gone.prom"), "%s: %s", mounts[m].options, p.out);
		cr_expect_eq(gg_count_lines(p.out, "its process is gone"), 1, "%s: %s",
			     mounts[m].options, p.out);
		snprintf(line, sizeof(line), "kept %s/other.prom: process %d %s\n", dir, other,
			 mounts[m].why);
		cr_expect_neq(strstr(p.out, line), NULL, "%s: %s", line, p.out);
		snprintf(line, sizeof(line), "kept %s/other-old.prom: process %d %s\n", dir, other,
			 mounts[m].why);
		cr_expect_neq(strstr(p.out, line), NULL, "%s: %s", line, p.out);
		if (mounts[m].options) {
			cr_expect_eq(gg_count_lines(p.out, "kept "), 2, "%s: %s", mounts[m].options,
				     p.out);
			cr_expect_neq(strstr(p.out, "prune-metrics: 1 file removed, 1 of running "
						    "processes kept, 0 newer than 1h kept, 2 of "
						    "processes that cannot be seen kept\n"),
				      NULL, "%s: %s", mounts[m].options, p.out);
			cr_expect_str_eq(p.err, "", "%s", mounts[m].options);
		} else {
			/* Without /proc its own process cannot be told from the writer either. */
			cr_expect_eq(gg_count_lines(p.out, "kept "), 3, "%s", p.out);
			cr_expect_neq(strstr(p.out, "prune-metrics: 1 file removed, 0 of running "
						    "processes kept, 0 newer than 1h kept, 3 of "
						    "processes that cannot be seen kept\n"),
				      NULL, "%s", p.out);
			cr_expect_neq(strstr(p.err, "/proc/self/stat cannot be read"), NULL, "%s",
				      p.err);
		}
		gg_run_free(&p);
		gg_test_dir_remove(dir);
	}
	free(boot);
}

/* A file's name is the writer's choice: every name prune-metrics prints is
 * escaped (backslash doubled, controls and bytes that are not UTF-8 as \xNN,
 * C1 controls as \u00NN), so that none forges a line or passes for another
 * name, whichever line prints it (removed, would remove, kept) and in the
 * directory's name too. */
Test(prune, names_are_escaped_so_none_forges_a_line)
{
	static const struct {
		const char *name, *shown;
	} names[] = {
		{ "a\nremoved x.prom: pid 1, its process is gone\nb.prom",
		  "a\\x0aremoved x.prom: pid 1, its process is gone\\x0ab.prom" },
		{ "cr\rtab\tesc\x1b[2J.prom", "cr\\x0dtab\\x09esc\\x1b[2J.prom" },
		{ "bad\xff\xc3utf8.prom", "bad\\xff\\xc3utf8.prom" },
		{ "c1\xc2\x85nel.prom", "c1\\u0085nel.prom" },
		{ "back\\x0aslash.prom", "back\\\\x0aslash.prom" },
		{ "caf\xc3\xa9.prom", "caf\xc3\xa9.prom" },
	};
	const size_t n = sizeof(names) / sizeof(names[0]);
	char top[64], dir[128], text[256], want[512];
	struct gg_run p;
	int gone = gone_pid();

	gg_test_dir(top, sizeof(top));
	snprintf(dir, sizeof(dir), "%s/d\nremoved", top);
	cr_assert_eq(mkdir(dir, 0755), 0);
	snprintf(text, sizeof(text), "gpuguard_errors{exe=\"a\",pid=\"%d\"} 0\n", gone);
	for (size_t i = 0; i < n; i++)
		put(dir, names[i].name, text, 7200);

	for (int dry = 1; dry >= 0; dry--) {
		cr_assert_eq(
			prune(&p, dry ? (const char *[]){ "--dry-run", dir, "--older-than", "1m", NULL }
				      : (const char *[]){ dir, "--older-than", "1m", NULL }),
			0, "%s", p.err);
		/* One line a file, and the count: no line more. */
		cr_expect_eq(gg_count_lines(p.out, ""), n + 1, "%s", p.out);
		cr_expect_eq(gg_count_lines(p.out, ": pid "), n, "%s", p.out);
		for (size_t i = 0; i < n; i++) {
			snprintf(want, sizeof(want), "%s%s/d\\x0aremoved/%s: pid %d, ",
				 dry ? "would remove " : "removed ", top, names[i].shown, gone);
			cr_expect_neq(strstr(p.out, want), NULL, "%s\nin:\n%s", want, p.out);
		}
		cr_expect_null(strchr(p.out, '\r'), "%s", p.out);
		cr_expect_null(strchr(p.out, '\x1b'), "%s", p.out);
		cr_expect_null(strstr(p.out, "\xc2\x85"), "%s", p.out);
		gg_run_free(&p);
	}
	for (size_t i = 0; i < n; i++)
		cr_expect(!there(dir, names[i].name), "%s", names[i].shown);

	/* A duration or an option is escaped in the messages that name it. */
	cr_expect_eq(prune(&p, (const char *[]){ dir, "--older-than", "1h\nremoved x", NULL }), 2);
	cr_expect_neq(strstr(p.err, "\"1h\\x0aremoved x\" is not a valid value"), NULL, "%s", p.err);
	cr_expect_eq(gg_count_lines(p.err, ""), 1, "%s", p.err);
	gg_run_free(&p);
	cr_expect_eq(prune(&p, (const char *[]){ dir, "--x\ny", "--older-than", "1h", NULL }), 2);
	cr_expect_neq(strstr(p.err, "unknown option \"--x\\x0ay\""), NULL, "%s", p.err);
	gg_run_free(&p);
}

/* A pid means a process of the writer's pid namespace only: run from
 * another (a container's, with its own /proc), prune-metrics can neither
 * see that process nor kill() it, which is no sign that it is gone. A file
 * of this namespace's running process, written with its namespace, is kept
 * there, and named; one written without (before the field) is judged as
 * before; here, a file of another namespace is kept too. */
Test(prune, a_process_of_another_pid_namespace_is_not_gone)
{
	char dir[64], text[512], why[256], path[64], link[64], line[512], *boot = boot_id();
	unsigned long long ns;
	int live = process_of(PRUNER), gone = gone_pid();
	struct gg_run p;
	bool ran;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/ns/pid");
	cr_assert_gt(n = readlink(path, link, sizeof(link) - 1), 0);
	link[n] = '\0';
	cr_assert_eq(sscanf(link, "pid:[%llu]", &ns), 1, "%s", link);
	gg_test_dir(dir, sizeof(dir));
	cr_assert_eq(chown(dir, PRUNER, PRUNER), 0);
	snprintf(text, sizeof(text),
		 "# gpuguard-process pid=%d starttime=%llu boot_id=%s pidns=%llu\n"
		 "gpuguard_errors{exe=\"app\",pid=\"%d\"} 0\n",
		 live, start_of(live), boot, ns, live);
	put(dir, "live.prom", text, 7200);
	snprintf(text, sizeof(text),
		 "# gpuguard-process pid=%d starttime=1 boot_id=%s pidns=%llu\n"
		 "gpuguard_errors{exe=\"app\",pid=\"%d\"} 0\n",
		 gone, boot, ns, gone);
	put(dir, "gone-here.prom", text, 7200);

	/* In a namespace of its own: both kept, said why. */
	ran = prune_hidden(&p, dir, "hidepid=0", true,
			   (const char *[]){ dir, "--older-than", "1h", NULL }, why, sizeof(why));
	if (!ran) {
		end_process(live);
		free(boot);
		cr_skip_test("%s", why);
	}
	cr_expect_eq(gg_run_exit(&p), 0, "%s", p.err);
	cr_expect(there(dir, "live.prom"), "a running process's file was removed: %s", p.out);
	cr_expect(there(dir, "gone-here.prom"), "%s", p.out);
	snprintf(line, sizeof(line),
		 "kept %s/live.prom: process %d is of another pid namespace (pid:[%llu]), which "
		 "cannot be seen from here; not known to be gone\n",
		 dir, live, ns);
	cr_expect_neq(strstr(p.out, line), NULL, "%s\nin:\n%s", line, p.out);
	cr_expect_neq(strstr(p.out, "prune-metrics: 0 files removed, 0 of running processes kept, 0 "
				    "newer than 1h kept, 2 of processes that cannot be seen kept\n"),
		      NULL, "%s", p.out);
	gg_run_free(&p);

	/* In the writer's: the running one's stays, the ended one's goes. */
	snprintf(text, sizeof(text),
		 "# gpuguard-process pid=%d starttime=1 boot_id=%s pidns=%llu\n"
		 "gpuguard_errors{exe=\"app\",pid=\"%d\"} 0\n",
		 gone, boot, ns + 1, gone);
	put(dir, "gone-elsewhere.prom", text, 7200);
	cr_assert_eq(prune(&p, (const char *[]){ dir, "--older-than", "1h", NULL }), 0, "%s", p.err);
	end_process(live);
	cr_expect(there(dir, "live.prom"), "%s", p.out);
	cr_expect(!there(dir, "gone-here.prom"), "%s", p.out);
	cr_expect(there(dir, "gone-elsewhere.prom"), "%s", p.out);
	cr_expect_neq(strstr(p.out, "prune-metrics: 1 file removed, 1 of running processes kept, 0 "
				    "newer than 1h kept, 1 of processes that cannot be seen kept\n"),
		      NULL, "%s", p.out);
	gg_run_free(&p);
	free(boot);
}
