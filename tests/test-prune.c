/* gpuguard prune-metrics (tools/cmd-prune.c): the metrics files of exited
 * processes go, a running process's file never does, nor anything that is
 * not gpuguard's. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

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

/* This process's start time in clock ticks since boot (/proc/PID/stat, field 22). */
static unsigned long long own_start(void)
{
	char path[64], *text, *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)getpid());
	cr_assert_not_null(text = gg_read_file(path));
	cr_assert_not_null(p = strrchr(text, ')'));
	for (int field = 2; field < 22; field++)
		cr_assert_not_null(p = strchr(p + 1, ' '));
	return strtoull(p + 1, NULL, 10);
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
