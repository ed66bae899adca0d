/* gpuguard prune-metrics DIR --older-than DURATION: remove from a textfile
 * collector's directory the metrics files of processes that have exited, so
 * that the files of one-off runs do not pile up there for ever.
 *
 * A file is gpuguard's when it is a regular *.prom file whose first line is
 * the process line the shim writes (shim/report/process.h), or, for a file
 * written before there was one, whose series are gpuguard_* ones labelled
 * with a pid. Its process has exited when the file says it was written in
 * another boot, when its pid is gone, or when the pid is now another process:
 * another start time (from the process line), or, for a file without one,
 * another program (its exe label). A file whose process may still be running
 * is never removed: where /proc cannot tell (it hides other users' processes,
 * or is not mounted), only kill() saying that no process has the pid makes
 * it gone; otherwise it is kept, named and counted. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "report/process.h"

static const char prune_usage[] =
	"usage: " GG_USAGE_PRUNE "\n"
	"\n"
	"Removes from DIR (a node-exporter textfile collector's directory) the\n"
	"metrics files gpuguard wrote for processes that have exited (their pid gone,\n"
	"or now another process) and that were last written longer ago than\n"
	"DURATION. A running process's file is never removed, nor one whose process\n"
	"cannot be seen (/proc mounted hidepid, or not at all): that one is named,\n"
	"with why. Other files are left alone.\n"
	"\n"
	"  --older-than DURATION  a number and a unit: s, m, h or d (30s, 10m, 1h, 7d)\n"
	"  --dry-run              say what would be removed, remove nothing\n"
	"\n"
	"Exit status: 0 when every file to remove was removed, 1 when DIR or a file\n"
	"could not be read or removed, 2 for a usage error.\n";

/* What a metrics file says about the process that wrote it. */
struct written_by {
	int pid;
	bool has_start, has_boot, has_ns;
	unsigned long long start; /* clock ticks since boot */
	unsigned long long ns;    /* its pid namespace's inode */
	char boot[64];
	char exe[GG_EXE_LABEL_MAX]; /* the exe label as written, escaped; "" when none */
};

/* "30s", "10m", "1h", "7d" as seconds. False when it is not one. */
static bool parse_duration(const char *s, uint64_t *secs)
{
	static const struct {
		char unit;
		uint64_t secs;
	} units[] = { { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 } };
	uint64_t n = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++) {
		if (n > UINT64_MAX / 10 / 86400)
			return false;
		n = n * 10 + (uint64_t)(*p - '0');
	}
	if (p == s || !p[0] || p[1])
		return false;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (*p == units[i].unit) {
			*secs = n * units[i].secs;
			return true;
		}
	return false;
}

/* The value of " NAME=" in the process line @line, up to a space: its length
 * into @out, or false when absent or too long. */
static bool line_field(const char *line, const char *name, char *out, size_t cap)
{
	char key[32];
	const char *p;
	size_t len;

	snprintf(key, sizeof(key), " %s=", name);
	if (!(p = strstr(line, key)))
		return false;
	p += strlen(key);
	len = strcspn(p, " \n");
	if (!len || len >= cap)
		return false;
	memcpy(out, p, len);
	out[len] = '\0';
	return true;
}

static bool parse_number(const char *s, unsigned long long *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return !errno && !*end;
}

/* The label @name's value in the series line @line (escaped, as written). */
static bool series_label(const char *line, const char *name, char *out, size_t cap)
{
	char key[32];
	const char *p, *brace = strchr(line, '{'), *nl = strchr(line, '\n');
	size_t o = 0;

	if (!brace || (nl && brace > nl))
		return false;
	snprintf(key, sizeof(key), "%s=\"", name);
	for (p = brace + 1; (p = strstr(p, key)); p++)
		if (p[-1] == '{' || p[-1] == ',')
			break;
	if (!p || (nl && p > nl))
		return false;
	for (p += strlen(key); *p && *p != '"' && *p != '\n'; p++) {
		if (o + 2 >= cap)
			return false;
		if (*p == '\\' && p[1])
			out[o++] = *p++;
		out[o++] = *p;
	}
	out[o] = '\0';
	return *p == '"';
}

/* Whether @text (a file's first bytes) is a gpuguard metrics file, and who
 * wrote it. */
static bool gpuguard_file(const char *text, struct written_by *w)
{
	char field[64];
	unsigned long long n;

	memset(w, 0, sizeof(*w));
	if (!strncmp(text, GG_PROCESS_LINE " ", strlen(GG_PROCESS_LINE " "))) {
		if (!line_field(text, "pid", field, sizeof(field)) || !parse_number(field, &n) || !n ||
		    n > INT32_MAX)
			return false;
		w->pid = (int)n;
		w->has_start = line_field(text, "starttime", field, sizeof(field)) &&
			       parse_number(field, &w->start);
		w->has_boot = line_field(text, "boot_id", w->boot, sizeof(w->boot));
		w->has_ns = line_field(text, "pidns", field, sizeof(field)) &&
			    parse_number(field, &w->ns);
	}
	/* The first series: its exe label, and its pid for a file without the
	 * process line. */
	for (const char *line = text; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (strncmp(line, "gpuguard_", 9))
			continue;
		if (!series_label(line, "exe", w->exe, sizeof(w->exe)))
			w->exe[0] = '\0';
		if (!w->pid) {
			if (!series_label(line, "pid", field, sizeof(field)) ||
			    !parse_number(field, &n) || !n || n > INT32_MAX)
				return false;
			w->pid = (int)n;
		}
		return true;
	}
	return w->pid != 0;
}

/* What is known of the process that wrote a file. */
enum fate {
	GONE,   /* positive evidence: it has exited */
	RUNS,   /* it, or a process not told from it, runs */
	UNSEEN, /* its pid cannot be looked at: it may run */
};

/* What kill(@pid, 0) says of @pid (it sends nothing): -ESRCH only when no
 * process has it; 0 or -EPERM (another user's process) when one does. */
static int pid_probe(int pid)
{
	return kill(pid, 0) ? -errno : 0;
}

/* What became of the process that wrote @w; @why (@cap bytes) says how it is
 * known, or why the file is kept. Only positive evidence makes a process
 * gone: another boot, a pid no process has (kill), or a /proc entry that
 * shows another process; a pid that /proc hides (hidepid=2 or invisible
 * shows no other user's processes, hidepid=1 lets none be read), or a /proc
 * that cannot be read at all (@proc false), is kept. */
static enum fate fate_of(const struct written_by *w, const char *boot, bool proc, char *why, size_t cap)
{
	unsigned long long start, ns;
	char exe[GG_EXE_LABEL_MAX];
	int err;

	if (w->has_boot && boot[0] && strcmp(w->boot, boot)) {
		snprintf(why, cap, "written before the last boot");
		return GONE;
	}
	/* Its pid is a pid of the writer's namespace: from another (a
	 * container's), neither kill() nor /proc can see that process. */
	if (w->has_ns && (gg_report_pid_ns(&ns) || ns != w->ns)) {
		snprintf(why, cap,
			 "process %d is of another pid namespace (pid:[%llu]), which cannot be "
			 "seen from here; not known to be gone",
			 w->pid, w->ns);
		return UNSEEN;
	}
	if (!proc) {
		if (pid_probe(w->pid) == -ESRCH) {
			snprintf(why, cap, "its process is gone");
			return GONE;
		}
		snprintf(why, cap,
			 "process %d exists and /proc cannot be read, so whether it is the "
			 "writer cannot be told; not known to be gone",
			 w->pid);
		return UNSEEN;
	}
	err = gg_report_start_ticks(w->pid, &start);
	if (err == -ENOENT || err == -ESRCH) {
		/* No entry: no such pid, or one that /proc hides. */
		if ((err = pid_probe(w->pid)) == -ESRCH) {
			snprintf(why, cap, "its process is gone");
			return GONE;
		}
		if (err == -EPERM)
			snprintf(why, cap,
				 "process %d cannot be seen (/proc hides other users' "
				 "processes), not known to be gone",
				 w->pid);
		else
			snprintf(why, cap,
				 "process %d exists but /proc does not show it, not known to be "
				 "gone",
				 w->pid);
		return UNSEEN;
	}
	if (err) {
		snprintf(why, cap, "process %d cannot be read in /proc (%s), not known to be gone",
			 w->pid, strerror(-err));
		return UNSEEN;
	}
	/* Another start time is another process, whatever the boot. */
	if (w->has_start) {
		snprintf(why, cap, "%s",
			 start != w->start ? "its pid is another process now" : "its process runs");
		return start != w->start ? GONE : RUNS;
	}
	/* No start time to compare: the program's name tells a reused pid. */
	if (!w->exe[0] || gg_report_exe_label(w->pid, exe, sizeof(exe))) {
		snprintf(why, cap, "its pid runs and could not be told from the writer");
		return RUNS;
	}
	snprintf(why, cap, "%s",
		 strcmp(exe, w->exe) ? "its pid is another program now" : "its process may run");
	return strcmp(exe, w->exe) ? GONE : RUNS;
}

struct tally {
	unsigned removed, live, unseen, recent, failed;
};

/* One entry of the directory. Every name printed is escaped
 * (gg_cli_name): a file's name, which anyone who can write there chooses,
 * must not forge a line of the output (a cron job's mail). */
static void prune_one(int dirfd, const char *dir, const char *name, uint64_t older_than, bool dry_run,
		      const char *boot, bool proc, struct tally *t)
{
	char text[16384], why[256], ename[GG_CLI_NAME_MAX], edir[GG_CLI_NAME_MAX];
	struct stat st, again;
	struct written_by w;
	ssize_t n;
	size_t len = strlen(name);
	int fd;

	if (len <= 5 || strcmp(name + len - 5, ".prom"))
		return;
	gg_cli_name(edir, sizeof(edir), dir);
	gg_cli_name(ename, sizeof(ename), name);
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		if (errno != ELOOP && errno != ENOENT) { /* a link is no file of ours */
			gg_cli_error("prune-metrics: cannot read \"%s/%s\": %s", edir, ename,
				     strerror(errno));
			t->failed++;
		}
		return;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return;
	}
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return;
	text[n] = '\0';
	if (!gpuguard_file(text, &w))
		return;
	if ((uint64_t)(time(NULL) - st.st_mtime) < older_than || st.st_mtime > time(NULL)) {
		t->recent++;
		return;
	}
	switch (fate_of(&w, boot, proc, why, sizeof(why))) {
	case RUNS:
		t->live++;
		return;
	case UNSEEN:
		/* Said, file by file: what could not be checked is never silent. */
		printf("kept %s/%s: %s\n", edir, ename, why);
		t->unseen++;
		return;
	case GONE:
		break;
	}
	/* Another process given that pid may have replaced the file meanwhile. */
	if (fstatat(dirfd, name, &again, AT_SYMLINK_NOFOLLOW) || again.st_ino != st.st_ino ||
	    again.st_dev != st.st_dev || again.st_mtime != st.st_mtime) {
		t->live++;
		return;
	}
	if (dry_run) {
		printf("would remove %s/%s: pid %d, %s\n", edir, ename, w.pid, why);
		t->removed++;
		return;
	}
	if (unlinkat(dirfd, name, 0)) {
		gg_cli_error("prune-metrics: cannot remove \"%s/%s\": %s", edir, ename,
			     strerror(errno));
		t->failed++;
		return;
	}
	printf("removed %s/%s: pid %d, %s\n", edir, ename, w.pid, why);
	t->removed++;
}

int gg_cmd_prune(int argc, char **argv)
{
	const char *dir = NULL, *duration = NULL;
	uint64_t older_than;
	bool dry_run = false;
	struct tally t = { 0 };
	char boot[64] = "";
	unsigned long long self_start;
	char edir[GG_CLI_NAME_MAX], earg[GG_CLI_NAME_MAX];
	struct dirent *e;
	int err;
	DIR *d;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(prune_usage, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--dry-run")) {
			dry_run = true;
		} else if (!strcmp(argv[i], "--older-than")) {
			if (i + 1 >= argc) {
				gg_cli_error("prune-metrics: --older-than needs a value (a number "
					     "and a unit: 30s, 10m, 1h, 7d)");
				return 2;
			}
			duration = argv[++i];
		} else if (!strncmp(argv[i], "--older-than=", 13)) {
			duration = argv[i] + 13;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			gg_cli_error("prune-metrics: unknown option \"%s\" (see gpuguard "
				     "prune-metrics --help)",
				     gg_cli_name(earg, sizeof(earg), argv[i]));
			return 2;
		} else if (dir) {
			gg_cli_error("prune-metrics: one directory only (\"%s\", then \"%s\")",
				     gg_cli_name(edir, sizeof(edir), dir),
				     gg_cli_name(earg, sizeof(earg), argv[i]));
			return 2;
		} else {
			dir = argv[i];
		}
	}
	if (!dir || !duration) {
		gg_cli_error(
			"prune-metrics: %s\n%s",
			!dir ? "no directory given"
			     : "--older-than DURATION is required (files younger than it are kept)",
			"usage: " GG_USAGE_PRUNE);
		return 2;
	}
	if (!parse_duration(duration, &older_than)) {
		gg_cli_error("prune-metrics: --older-than: \"%s\" is not a valid value (expected a "
			     "number and a unit: 30s, 10m, 1h, 7d)",
			     gg_cli_name(earg, sizeof(earg), duration));
		return 2;
	}
	if (!(d = opendir(dir))) {
		gg_cli_error("prune-metrics: cannot read the directory \"%s\": %s",
			     gg_cli_name(edir, sizeof(edir), dir), strerror(errno));
		return 1;
	}
	/* Without /proc only kill() can tell: a pid it says is gone goes, every
	 * other file is kept. */
	if ((err = gg_report_start_ticks(0, &self_start)))
		gg_cli_error("prune-metrics: /proc/self/stat cannot be read (%s): a file goes only "
			     "when its pid is gone; the files of pids that run are kept",
			     strerror(-err));
	if (gg_report_boot_id(boot, sizeof(boot)))
		boot[0] = '\0'; /* then a file's boot id is not compared */
	while ((e = readdir(d)))
		prune_one(dirfd(d), dir, e->d_name, older_than, dry_run, boot, !err, &t);
	closedir(d);
	printf("prune-metrics: %u %s%s, %u of running processes kept, %u newer than %s kept", t.removed,
	       gg_cli_plural(t.removed, "file", "files"), dry_run ? " would be removed" : " removed",
	       t.live, t.recent, gg_cli_name(edir, sizeof(edir), duration));
	if (t.unseen)
		printf(", %u of processes that cannot be seen kept", t.unseen);
	printf("\n");
	return t.failed ? 1 : 0;
}
