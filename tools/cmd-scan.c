/* gpuguard scan PID (gpuguard(1), scan): run a boundary in a running process,
 * and only where its shim runs it. A signal reaches a process whether or not
 * anything there handles it (SIGUSR1 and SIGUSR2 terminate a process that
 * does not), and /proc says that a signal is caught (SigCgt), not whose
 * handler catches it: the program may install its own at any moment, before
 * the shim's set-up (which then keeps it) or after it. So scan sends no
 * signal: it asks the process's shim through its watcher's control socket
 * (shim/boundary/watcher.h), an abstract unix socket named by the pid and
 * start time, whose answering end must be that pid (SO_PEERCRED). The
 * watcher asks sigaction at that moment whether the shim's handler of
 * GPUGUARD_SIGNAL is the one in place and, if it is, runs the boundary itself
 * before it answers; otherwise it answers whose the signal is, and nothing
 * runs. Before it asks, scan checks what /proc can say (libgpuguard.so
 * mapped, the GPUGUARD_SIGNAL it was started with, GPUGUARD_DISABLE), to say
 * which is missing; where no socket answers, /proc's masks say why.
 *
 * With --wait it waits (bounded) for the process to get there, then for its
 * JSON summary to count one more seal, and prints what the boundary found. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "boundary/watcher.h"
#include "cli.h"
#include "json.h"
#include "options/config.h"
#include "report/paths.h"

static const char scan_usage[] =
	"usage: " GG_USAGE_SCAN "\n"
	"\n"
	"Runs a boundary in process PID while it keeps running: a scan of every red\n"
	"zone, the gate, and its JSON summary and metrics rewritten. It asks PID's\n"
	"shim through its control socket, and only a shim whose handler of the\n"
	"signal it was started with in GPUGUARD_SIGNAL (gpuguard --signal) is the one\n"
	"in place runs it; no signal is sent. Otherwise it says why.\n"
	"\n"
	"  --wait             wait until PID's shim listens, then until its summary\n"
	"                     (GPUGUARD_SUMMARY_JSON) shows the boundary ran, and print\n"
	"                     what it found\n"
	"  --timeout SECONDS  how long --wait waits in all (default 30)\n"
	"  --signal SIG       the signal expected (refused unless PID listens to it)\n"
	"\n"
	"Exit status: 0 when the boundary ran (with --wait: when the summary shows\n"
	"it), 1 when it did not or the summary did not show it in time, 2 for a usage\n"
	"error.\n";

/* ---- what /proc says ---- */

/* The whole of /proc/PID/NAME, NUL-terminated. 0 or -errno. */
static int read_proc(int pid, const char *name, char **out, size_t *len)
{
	char path[64], *buf = NULL;
	size_t cap = 0, n = 0;
	int fd, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	for (;;) {
		ssize_t got;

		if (cap - n < 4096) {
			char *bigger = realloc(buf, cap ? cap * 2 : 16384);

			if (!bigger) {
				err = -ENOMEM;
				break;
			}
			buf = bigger;
			cap = cap ? cap * 2 : 16384;
		}
		got = read(fd, buf + n, cap - n - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			err = -errno;
			break;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

/* NAME's value in an environ block (NUL-separated), or NULL. */
static const char *env_get(const char *env, size_t len, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = env; p < env + len; p += strlen(p) + 1)
		if (!strncmp(p, name, n) && p[n] == '=')
			return p + n + 1;
	return NULL;
}

/* The state letter and the caught- and ignored-signal masks of /proc/PID/status. */
static int read_status(int pid, char *state, uint64_t *caught, uint64_t *ignored)
{
	char *text, *line;
	int err = read_proc(pid, "status", &text, NULL);

	if (err)
		return err;
	*state = '?';
	*caught = *ignored = 0;
	if ((line = strstr(text, "\nState:")))
		sscanf(line + 7, " %c", state);
	if ((line = strstr(text, "\nSigCgt:")))
		*caught = strtoull(line + 8, NULL, 16);
	if ((line = strstr(text, "\nSigIgn:")))
		*ignored = strtoull(line + 8, NULL, 16);
	free(text);
	return 0;
}

/* A connection to @pid's control socket (shim/boundary/watcher.h), whose
 * answering end is @pid itself: the fd, or -errno (-ECONNREFUSED: nothing
 * listens there; -EPERM: something else answers under that name). */
static int connect_shim(int pid)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct ucred peer;
	socklen_t peer_len = sizeof(peer);
	unsigned long long start;
	char *stat;
	int fd, err, n;

	if ((err = read_proc(pid, "stat", &stat, NULL)))
		return err;
	err = gg_watcher_start_time(stat, &start);
	free(stat);
	if (err)
		return err;
	n = snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, GG_WATCHER_SOCKET, pid, start);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&addr,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n))) {
		err = errno == ENOENT ? -ECONNREFUSED : -errno;
		close(fd);
		return err;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &peer_len) || peer.pid != pid) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* Whether libgpuguard.so (or a versioned libgpuguard.so.N) is mapped:
 * 1, 0, or -errno when the maps cannot be read. */
static int shim_mapped(int pid)
{
	char *maps, *line, *eol;
	int err = read_proc(pid, "maps", &maps, NULL), found = 0;

	if (err)
		return err;
	for (line = maps; line && *line && !found; line = eol ? eol + 1 : NULL) {
		const char *base;

		if ((eol = strchr(line, '\n')))
			*eol = '\0';
		/* "ADDR PERMS OFFSET DEV INODE   PATH": the path's last component. */
		if ((base = strrchr(line, '/')) && !strncmp(base + 1, "libgpuguard.so", 14) &&
		    (base[15] == '\0' || base[15] == '.' || base[15] == ' '))
			found = 1;
	}
	free(maps);
	return found;
}

/* ---- can this process be signalled? ---- */

enum verdict {
	READY,   /* every condition holds: send */
	NOT_YET, /* one does not hold yet; --wait waits for it */
	NEVER,   /* it never will, or we may not know: give up now */
};

struct target {
	int pid;
	const char *want;    /* --signal as given, or NULL */
	bool wait;           /* --wait: the summary path is needed too */
	int sig;             /* set when READY */
	int fd;              /* when READY: connected to its shim's control socket */
	char json[PATH_MAX]; /* --wait: the summary, as this command reads it */
	char why[1024];      /* what is missing, when not READY */
};

static void because(struct target *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void because(struct target *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->why, sizeof(t->why), fmt, ap);
	va_end(ap);
}

static const char *sig_name(int sig, char *buf, size_t cap)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		snprintf(buf, cap, "SIG%s", abbrev);
	else
		snprintf(buf, cap, "signal %d", sig);
	return buf;
}

/* Where this command finds the process's summary: GPUGUARD_SUMMARY_JSON with
 * %p expanded, relative to the process's working directory. */
static bool summary_path(struct target *t, const char *pattern)
{
	char expanded[PATH_MAX], link[64], cwd[PATH_MAX];
	ssize_t n;

	if (gg_report_expand_path(pattern, t->pid, expanded, sizeof(expanded)))
		return false;
	if (expanded[0] == '/')
		return snprintf(t->json, sizeof(t->json), "%s", expanded) < (int)sizeof(t->json);
	/* Resolved now: /proc/PID/cwd is gone once the process is (the gate may stop it). */
	snprintf(link, sizeof(link), "/proc/%d/cwd", t->pid);
	if ((n = readlink(link, cwd, sizeof(cwd) - 1)) > 0) {
		cwd[n] = '\0';
		return snprintf(t->json, sizeof(t->json), "%s/%s", cwd, expanded) <
		       (int)sizeof(t->json);
	}
	return snprintf(t->json, sizeof(t->json), "%s/%s", link, expanded) < (int)sizeof(t->json);
}

static enum verdict unreadable(struct target *t, const char *what, int err)
{
	if (err == -ENOENT || err == -ESRCH) {
		because(t, "process %d has exited", t->pid);
		return NEVER;
	}
	because(t, "cannot read /proc/%d/%s: %s%s", t->pid, what, strerror(-err),
		err == -EACCES || err == -EPERM
			? " (the process belongs to another user: run gpuguard scan as that user, or "
			  "as root)"
			: "");
	return NEVER;
}

static enum verdict check(struct target *t)
{
	char *env = NULL, name[32], shown[260]; /* the value named, escaped */
	const char *given, *disable, *json;
	size_t env_len = 0;
	uint64_t caught, ignored, bit;
	char state;
	int err, sig = 0, want = 0, mapped, fd = -1;
	enum verdict v = NOT_YET;

	if ((err = read_status(t->pid, &state, &caught, &ignored)))
		return unreadable(t, "status", err);
	if (state == 'Z' || state == 'X') {
		because(t, "process %d has exited", t->pid);
		return NEVER;
	}
	if ((err = read_proc(t->pid, "environ", &env, &env_len)))
		return unreadable(t, "environ", err);

	/* Its shim... */
	if ((mapped = shim_mapped(t->pid)) < 0) {
		v = unreadable(t, "maps", mapped);
		goto out;
	}
	if (!mapped) {
		because(t,
			"process %d has no libgpuguard.so loaded (it was not started under gpuguard "
			"or with LD_PRELOAD): a signal would reach the program itself",
			t->pid);
		goto out;
	}

	/* ...the signal it listens to, by the shim's own rules... */
	given = env_get(env, env_len, "GPUGUARD_SIGNAL");
	if (!given || !strcasecmp(given, "none")) {
		because(t,
			"process %d was not started with GPUGUARD_SIGNAL (gpuguard --signal SIG): "
			"its shim listens to no signal",
			t->pid);
		goto out;
	}
	if (gg_config_parse_signal(given, &sig, NULL) || !sig) {
		because(t,
			"process %d was started with GPUGUARD_SIGNAL=%s, which the shim refuses "
			"(it accepts " GG_CONFIG_SIGNALS "): it listens to no signal",
			t->pid, gg_cli_name(shown, sizeof(shown), given));
		goto out;
	}
	if (t->want && (gg_config_parse_signal(t->want, &want, NULL) || want != sig)) {
		because(t, "process %d listens to %s (GPUGUARD_SIGNAL=%s), not to %s", t->pid,
			sig_name(sig, name, sizeof(name)), gg_cli_name(shown, sizeof(shown), given),
			t->want);
		goto out;
	}
	sig_name(sig, name, sizeof(name));
	disable = env_get(env, env_len, "GPUGUARD_DISABLE");
	/* The shim's own rule: only these switch it off; any other value is a
	 * WARN there, and the shim stays on. */
	if (disable && (!strcmp(disable, "1") || !strcasecmp(disable, "true") ||
			!strcasecmp(disable, "yes") || !strcasecmp(disable, "on"))) {
		because(t,
			"gpuguard is disabled in process %d (GPUGUARD_DISABLE=%.16s): it installs "
			"no handler, and %s would reach the program itself",
			t->pid, disable, name);
		goto out;
	}
	/* ...and its shim's watcher, asked last: the process may have exec'd
	 * meanwhile (gpuguard becomes the program), and a socket is its
	 * image's. Where none answers, /proc's masks say why. */
	if ((fd = connect_shim(t->pid)) == -EPERM) {
		because(t,
			"a control socket named for process %d is not that process's (its peer is "
			"another process): its shim cannot be asked",
			t->pid);
		v = NEVER;
		goto out;
	}
	if (fd == -ENOENT || fd == -ESRCH) {
		v = unreadable(t, "stat", fd);
		goto out;
	}
	if (fd < 0) {
		if ((err = read_status(t->pid, &state, &caught, &ignored))) {
			v = unreadable(t, "status", err);
			goto out;
		}
		bit = UINT64_C(1) << (sig - 1);
		if (fd != -ECONNREFUSED)
			because(t, "cannot reach process %d's shim: %s", t->pid, strerror(-fd));
		else if (caught & bit)
			because(t,
				"process %d handles %s itself (its handler was installed before the "
				"shim's): the shim keeps the program's handler and runs no boundary "
				"for "
				"it, and %s would reach the program's own handler",
				t->pid, name, name);
		else if (ignored & bit)
			because(t,
				"process %d ignores %s: the shim leaves it so and runs no boundary for "
				"it",
				t->pid, name);
		else
			because(t,
				"process %d has libgpuguard.so loaded but no handler for %s yet: the "
				"shim installs it at the process's first CUDA call (a wrapper script "
				"never makes one: scan the CUDA program's own pid; --wait waits for "
				"it)",
				t->pid, name);
		goto out;
	}
	/* --wait: where the boundary will show. */
	if (t->wait) {
		json = env_get(env, env_len, "GPUGUARD_SUMMARY_JSON");
		if (!json || !*json) {
			because(t,
				"--wait reads the process's JSON summary, and process %d was started "
				"without GPUGUARD_SUMMARY_JSON (gpuguard --json FILE)",
				t->pid);
			v = NEVER; /* its shim is running: its environment is final */
			goto out;
		}
		if (!summary_path(t, json)) {
			because(t, "process %d's GPUGUARD_SUMMARY_JSON is too long a path", t->pid);
			v = NEVER;
			goto out;
		}
	}

	t->sig = sig;
	t->fd = fd;
	fd = -1;
	v = READY;
out:
	if (fd >= 0)
		close(fd);
	free(env);
	return v;
}

/* ---- waiting ---- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A pidfd for @pid, -1 when the kernel has none (then kill(2) is used). */
static int open_pidfd(int pid)
{
#ifdef SYS_pidfd_open
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	if (fd >= 0 || errno != ENOSYS)
		return fd;
#else
	(void)pid;
#endif
	errno = ENOSYS;
	return -1;
}

/* Ask the shim on @fd for a boundary: its answer line, NUL-terminated in
 * @answer, read until @deadline (a boundary of many zones takes a while; two
 * scans at once are answered in turn). False when it gave none. */
static bool ask_shim(int fd, double deadline, char *answer, size_t cap)
{
	size_t got = 0;

	if (send(fd, GG_WATCHER_ASK, strlen(GG_WATCHER_ASK), MSG_NOSIGNAL) !=
	    (ssize_t)strlen(GG_WATCHER_ASK))
		return false;
	while (got < cap - 1 && (!got || answer[got - 1] != '\n')) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		double left = deadline - now_s();
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) == 0)
			return false;
		n = recv(fd, answer + got, cap - 1 - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		got += (size_t)n;
	}
	answer[got] = '\0';
	return true;
}

/* Sleep a little, or less when the process ends: the pidfd turns readable. */
static void pause_for(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	if (pidfd >= 0) {
		(void)poll(&p, 1, 20);
	} else {
		struct timespec ts = { 0, 20 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
}

static bool ended(int pidfd, int pid)
{
	char state;
	uint64_t caught, ignored;

	if (pidfd >= 0) {
		struct pollfd p = { .fd = pidfd, .events = POLLIN };

		return poll(&p, 1, 0) > 0;
	}
	return read_status(pid, &state, &caught, &ignored) || state == 'Z' || state == 'X';
}

/* What a summary says: its seal count and findings. False when it cannot be
 * read (not written yet, or being replaced). */
struct findings {
	uint64_t seals, violations, required, late, errors;
	bool allow_unresolved;
};

static bool read_summary(const char *path, struct findings *f)
{
	struct gg_json_error err;
	struct gg_json *doc = gg_json_parse_file(path, &err);
	const struct gg_json *lookups;

	if (!doc)
		return false;
	lookups = gg_json_get(doc, "lookups");
	f->seals = gg_json_u64(gg_json_get(doc, "seals"), 0);
	f->violations = gg_json_length(gg_json_get(doc, "violations"));
	f->required = gg_json_u64(gg_json_get(lookups, "unresolved_required"), 0);
	f->late = gg_json_u64(gg_json_get(lookups, "late_misses"), 0);
	f->errors = gg_json_u64(gg_json_get(doc, "errors"), 0);
	f->allow_unresolved = gg_json_bool(gg_json_get(gg_json_get(doc, "config"), "allow_unresolved"),
					   false);
	gg_json_free(doc);
	return true;
}

static void print_findings(int pid, const struct findings *before, const struct findings *f,
			   const char *path)
{
	char shown[GG_CLI_NAME_MAX];
	uint64_t fresh = f->violations > before->violations ? f->violations - before->violations : 0;

	printf("gpuguard: process %d ran its boundary (seal %" PRIu64 "): %" PRIu64 " red-zone %s "
	       "(%" PRIu64 " new), %" PRIu64 " required %s unresolved, %" PRIu64 " late %s; %" PRIu64
	       " %s in all\n",
	       pid, f->seals, f->violations, gg_cli_plural(f->violations, "violation", "violations"),
	       fresh, f->required, gg_cli_plural(f->required, "kernel", "kernels"), f->late,
	       gg_cli_plural(f->late, "miss", "misses"), f->errors,
	       gg_cli_plural(f->errors, "error", "errors"));
	if (f->required && !f->allow_unresolved)
		printf("gpuguard: the gate stops the process: %s missing "
		       "(GPUGUARD_ALLOW_UNRESOLVED is off)\n",
		       gg_cli_plural(f->required, "a required kernel is", "required kernels are"));
	/* The path is the process's environment's: escaped, as every name. */
	printf("gpuguard: summary: %s (gpuguard report shows it all)\n",
	       gg_cli_name(shown, sizeof(shown), path));
}

/* ---- the command ---- */

int gg_cmd_scan(int argc, char **argv)
{
	struct target t = { 0 };
	struct findings before = { 0 }, after;
	const char *pid_arg = NULL;
	double timeout = 30, deadline;
	char name[32], shown[GG_CLI_NAME_MAX];
	uint64_t pid;
	char answer[32];
	enum verdict v;
	int pidfd, rc = 1;
	bool ok;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *value = NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(scan_usage, stdout);
			return fflush(stdout) ? 2 : 0;
		}
		if (!strcmp(a, "--wait")) {
			t.wait = true;
			continue;
		}
		if (!strcmp(a, "--signal") || !strcmp(a, "--timeout")) {
			if (i + 1 >= argc) {
				gg_cli_error("scan: %s needs a value",
					     gg_cli_name(shown, sizeof(shown), a));
				return 2;
			}
			value = argv[++i];
		} else if (!strncmp(a, "--signal=", 9) || !strncmp(a, "--timeout=", 10)) {
			value = strchr(a, '=') + 1;
		}
		if (value && !strncmp(a, "--signal", 8)) {
			const char *why = NULL;
			int sig = 0;

			if (gg_config_parse_signal(value, &sig, &why) || !sig) {
				gg_cli_error(
					"scan: --signal: \"%s\" is not a signal gpuguard listens to "
					"(%s%sexpected %s)",
					gg_cli_name(shown, sizeof(shown), value), why ? why : "",
					why ? "; " : "", GG_CONFIG_SIGNALS);
				return 2;
			}
			t.want = value;
		} else if (value) {
			char *end;

			errno = 0;
			timeout = strtod(value, &end);
			if (!*value || *end || errno || !(timeout > 0) || timeout > 86400) {
				gg_cli_error("scan: --timeout: \"%s\" is not a valid value (expected "
					     "seconds, more than 0 and at most 86400)",
					     gg_cli_name(shown, sizeof(shown), value));
				return 2;
			}
		} else if (a[0] == '-' || pid_arg) {
			gg_cli_error("scan: unexpected '%s' (usage: " GG_USAGE_SCAN ")",
				     gg_cli_name(shown, sizeof(shown), a));
			return 2;
		} else {
			pid_arg = a;
		}
	}
	if (!pid_arg || !gg_cli_parse_u64(pid_arg, &pid) || pid == 0 || pid > INT_MAX) {
		if (pid_arg)
			gg_cli_error("scan: \"%s\" is not a process id",
				     gg_cli_name(shown, sizeof(shown), pid_arg));
		else
			gg_cli_error("scan: which process? (usage: " GG_USAGE_SCAN ")");
		return 2;
	}
	t.pid = (int)pid;
	pidfd = open_pidfd(t.pid);
	if ((pidfd < 0 && errno == ESRCH) || (pidfd < 0 && kill(t.pid, 0) && errno == ESRCH)) {
		gg_cli_error("scan: no process %d", t.pid);
		return 1;
	}

	/* Until every condition holds: at once, or (--wait) until the deadline. */
	deadline = now_s() + timeout;
	while ((v = check(&t)) == NOT_YET && t.wait && now_s() < deadline && !ended(pidfd, t.pid))
		pause_for(pidfd);
	if (v != READY) {
		if (v == NOT_YET && t.wait && !ended(pidfd, t.pid))
			gg_cli_error("scan: gave up after %g s, nothing sent: %s", timeout, t.why);
		else if (v == NOT_YET && t.wait)
			gg_cli_error("scan: process %d has exited, nothing sent", t.pid);
		else
			gg_cli_error("scan: %s; nothing sent", t.why);
		goto out;
	}
	sig_name(t.sig, name, sizeof(name));
	if (t.wait)
		(void)read_summary(t.json, &before); /* none yet: no seal yet */
	ok = ask_shim(t.fd, deadline, answer, sizeof(answer));
	close(t.fd);
	if (!ok) {
		gg_cli_error("scan: process %d's shim gave no answer within %g s: whether its "
			     "boundary ran is not known",
			     t.pid, timeout);
		goto out;
	}
	if (strcmp(answer, GG_WATCHER_RAN)) {
		if (!strcmp(answer, GG_WATCHER_REFUSED))
			gg_cli_error("scan: process %d's shim answers only its own user and root; "
				     "nothing ran",
				     t.pid);
		else if (!strcmp(answer, GG_WATCHER_IGNORED))
			gg_cli_error("scan: process %d ignores %s now (the program set it so after "
				     "the shim's set-up): the shim leaves it so and runs no boundary "
				     "for it; nothing sent",
				     t.pid, name);
		else if (!strcmp(answer, GG_WATCHER_DEFAULT))
			gg_cli_error("scan: process %d has put %s back to its default disposition "
				     "(it would end the process): the shim runs no boundary for it; "
				     "nothing sent",
				     t.pid, name);
		else
			gg_cli_error("scan: process %d handles %s itself (its handler was "
				     "installed after the shim's): the shim keeps the program's "
				     "handler and runs no boundary for it, and %s would reach the "
				     "program's own handler; nothing sent",
				     t.pid, name, name);
		goto out;
	}
	printf("gpuguard: process %d ran a boundary (its shim's handler of %s is in place; no "
	       "signal sent): it scanned its red zones, ran the gate and rewrote its reports\n",
	       t.pid, name);
	if (!t.wait) {
		rc = 0;
		goto out;
	}
	fflush(stdout);

	/* The boundary ran when the summary counts one more seal. Its files are
	 * written before the gate may stop the process, so look once more after
	 * it ended. */
	for (;;) {
		bool gone = ended(pidfd, t.pid);

		if (read_summary(t.json, &after) && after.seals > before.seals) {
			print_findings(t.pid, &before, &after, t.json);
			rc = 0;
			break;
		}
		if (gone) {
			gg_cli_error("scan: process %d ended before its summary %s showed the boundary",
				     t.pid, gg_cli_name(shown, sizeof(shown), t.json));
			break;
		}
		if (now_s() >= deadline) {
			gg_cli_error("scan: %s showed no new boundary within %g s (still %" PRIu64
				     " %s); the process may be stopped or its summary unwritable",
				     gg_cli_name(shown, sizeof(shown), t.json), timeout, before.seals,
				     gg_cli_plural(before.seals, "seal", "seals"));
			break;
		}
		pause_for(pidfd);
	}
out:
	if (pidfd >= 0)
		close(pidfd);
	return rc;
}
