/* The watcher (docs/how-it-works.md, "Boundaries, signals, exit"): a thread that runs the
 * boundaries a signal or an after:S event asks for. The signal handler only
 * writes a byte to a pipe (async-signal-safe, no lock, no allocation); the
 * watcher drains the pipe and runs one boundary for however many signals
 * arrived, so signals during a boundary coalesce into one more. It exists only
 * when a signal or after: is configured, and a forked child starts its own on
 * its first hook call.
 *
 * The signal stays the program's whenever the program handles it: a handler
 * (or SIG_IGN) in place at set-up is kept, and a handler the program installs
 * later is never installed over; each is said once, and no signal boundary
 * runs. /proc shows which signals a process catches (SigCgt) but not whose
 * handler catches them, and a program may call sigaction at any time, so
 * `gpuguard scan` sends no signal at all: it asks the watcher through its
 * control socket (watcher.h), and the watcher asks sigaction at that moment
 * whether its handler is the one in place, then runs the boundary itself or
 * answers whose the signal is. Only the peer's credentials as the kernel
 * gives them (SO_PEERCRED) decide who may ask. The watcher also looks every
 * GG_WATCHER_CHECK_MS while its handler is in place, to say once that the
 * program replaced it.
 *
 * It also runs the exit work of a SIGTERM or SIGINT left at its default
 * (ending.c), so it exists whenever one of those is, too. */
#include "boundary/watcher.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "boundary/boundary.h"
#include "boundary/ending.h"
#include "driver/real.h"
#include "options/config.h"
#include "base/gg.h"
#include "report/report.h"

static struct {
	/* Written by gg_watcher_start() (set-up, or the first hook of a forked
	 * child), read-only after; the handler reads only @pipe_w. */
	int signal;     /* GPUGUARD_SIGNAL, 0 = none */
	bool installed; /* the shim's handler was installed for @signal */
	double after[16];
	unsigned nafter;
	int pipe_r;
	volatile sig_atomic_t pipe_w; /* -1 until the pipe exists */
	struct timespec start;        /* when the shim was loaded */

	int inherited_r, inherited_w; /* a forked child's copy of its parent's pipe, to close */
	int control; /* the listening control socket (watcher.h), -1: none; set before the
		      * thread starts, closed by a forked child (which has no thread yet) */

	/* The watcher thread's own (a forked child's thread inherits them). */
	unsigned next_after;
	bool lost; /* the program replaced our handler: said once; a scan is answered so */
} watcher_state = { .pipe_r = -1, .pipe_w = -1, .inherited_r = -1, .inherited_w = -1, .control = -1 };

/* Loaded: the clock of after:S starts here, though nothing else does. */
__attribute__((constructor)) static void note_start(void)
{
	clock_gettime(CLOCK_MONOTONIC, &watcher_state.start);
}

static void on_signal(int sig)
{
	int saved = errno;
	char b = 1;

	(void)sig;
	/* Only write(2): the pipe is non-blocking, so a full pipe (many signals
	 * pending) drops the byte, which coalescing would drop anyway. */
	if (watcher_state.pipe_w >= 0)
		(void)!write(watcher_state.pipe_w, &b, 1);
	errno = saved;
}

/* "SIGUSR1 (signal 10)", or "signal 40". */
static const char *signal_name(int sig, char *buf, size_t cap)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		snprintf(buf, cap, "SIG%s (signal %d)", abbrev, sig);
	else
		snprintf(buf, cap, "signal %d", sig);
	return buf;
}

/* Whether our handler is the one in place for the signal now. */
static bool ours_in_place(void)
{
	struct sigaction now;

	return sigaction(watcher_state.signal, NULL, &now) == 0 && now.sa_handler == on_signal;
}

/* The calling thread (the watcher) named, for whoever lists a process's
 * threads. */
static void name_watcher(void)
{
	(void)prctl(PR_SET_NAME, "gpuguard-watch", 0, 0, 0);
}

/* Whether the program replaced our handler since: if so, from now on the
 * signal is the program's alone, said once. Never installs ours again: the
 * program's handler stays. */
static void check_handler(void)
{
	if (!watcher_state.installed || watcher_state.lost || ours_in_place())
		return;
	watcher_state.lost = true;
	gg_report_handler_replaced(watcher_state.signal);
}

/* ---- the control socket (watcher.h) ---- */

/* Its abstract name for this process: pid and start time. 0 or -errno. */
static int control_address(struct sockaddr_un *addr, socklen_t *len)
{
	char stat[1024];
	unsigned long long start;
	ssize_t n;
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	n = read(fd, stat, sizeof(stat) - 1);
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	stat[n] = '\0';
	if ((err = gg_watcher_start_time(stat, &start)))
		return err;
	memset(addr, 0, sizeof(*addr));
	addr->sun_family = AF_UNIX;
	/* sun_path[0] stays '\0': the abstract namespace. */
	n = snprintf(addr->sun_path + 1, sizeof(addr->sun_path) - 1, GG_WATCHER_SOCKET, (int)getpid(),
		     start);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	return 0;
}

/* The listening socket, before the thread that answers it starts.
 * Non-blocking: the watcher polls it. 0 or -errno. */
static int control_open(void)
{
	struct sockaddr_un addr;
	socklen_t len = 0;
	int fd, err;

	if ((err = control_address(&addr, &len)))
		return err;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&addr, len) || listen(fd, 8)) {
		err = -errno;
		close(fd);
		return err;
	}
	watcher_state.control = fd;
	return 0;
}

static void control_close(void)
{
	if (watcher_state.control >= 0)
		close(watcher_state.control);
	watcher_state.control = -1;
}

/* What the program does with the signal now, as one answer line. */
static const char *programs_disposition(void)
{
	struct sigaction now;

	if (sigaction(watcher_state.signal, NULL, &now))
		return GG_WATCHER_HANDLED; /* cannot tell: never ours to run */
	if (now.sa_handler == SIG_IGN)
		return GG_WATCHER_IGNORED;
	if (now.sa_handler == SIG_DFL)
		return GG_WATCHER_DEFAULT;
	return GG_WATCHER_HANDLED;
}

/* One connection: who asks (the kernel's word for it), what, and the answer.
 * Bounded: a client that stalls is dropped after GG_WATCHER_CLIENT_MS. */
static void control_serve(int fd)
{
	struct timeval tv = { .tv_sec = GG_WATCHER_CLIENT_MS / 1000,
			      .tv_usec = GG_WATCHER_CLIENT_MS % 1000 * 1000 };
	struct ucred peer;
	socklen_t len = sizeof(peer);
	char ask[sizeof(GG_WATCHER_ASK)];
	const char *answer;
	size_t got = 0;

	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) ||
	    (peer.uid != geteuid() && peer.uid != 0)) {
		answer = GG_WATCHER_REFUSED;
		goto answer;
	}
	while (got < sizeof(ask) - 1) {
		ssize_t n = recv(fd, ask + got, sizeof(ask) - 1 - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* gone, or stalled */
		got += (size_t)n;
	}
	ask[got] = '\0';
	if (strcmp(ask, GG_WATCHER_ASK))
		return;
	/* Now, not as last seen: the program may have called sigaction a
	 * moment ago. */
	check_handler();
	if (watcher_state.installed && !watcher_state.lost) {
		gg_boundary_run("scan");
		answer = GG_WATCHER_RAN;
	} else {
		answer = programs_disposition();
	}
answer:
	(void)!send(fd, answer, strlen(answer), MSG_NOSIGNAL);
}

/* Every connection waiting now, each its own answer (two scans at once get
 * a boundary each). */
static void control_accept(void)
{
	int fd;

	while ((fd = accept4(watcher_state.control, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		control_serve(fd);
		close(fd);
	}
}

static double seconds_since_start(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - watcher_state.start.tv_sec) +
	       (double)(now.tv_nsec - watcher_state.start.tv_nsec) / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The poll timeout: until the next after: event, and no longer than the
 * next look at the handler while it is ours; -1: none. */
static int next_timeout(void)
{
	int timeout = -1;

	if (watcher_state.next_after < watcher_state.nafter) {
		double wait = watcher_state.after[watcher_state.next_after] - seconds_since_start();

		/* after: is at most 1e9 s (config.c); a day at a time keeps it an int of ms. */
		timeout = wait <= 0 ? 0 : wait >= 86400 ? 86400 * 1000 : (int)(wait * 1000) + 1;
	}
	if (watcher_state.installed && !watcher_state.lost &&
	    (timeout < 0 || timeout > GG_WATCHER_CHECK_MS))
		timeout = GG_WATCHER_CHECK_MS;
	return timeout;
}

static void *watch(void *arg)
{
	char buf[64];

	/* All of this thread's life is the shim's own work (driver/real.h): it
	 * takes no signal, but a fault's handler, or a hooked call from what it
	 * runs, must not enter the shim again. */
	gg_real_enter();
	if (watcher_state.installed && !watcher_state.lost && !ours_in_place())
		watcher_state.lost = true; /* replaced before this thread ran: said below */
	name_watcher();
	sem_post(arg); /* started: from here on it holds nothing while it waits */
	if (watcher_state.lost && watcher_state.installed)
		gg_report_handler_replaced(watcher_state.signal);
	for (;;) {
		struct pollfd fds[3] = { { .fd = watcher_state.pipe_r, .events = POLLIN },
					 { .fd = gg_ending_fd(), .events = POLLIN },
					 { .fd = watcher_state.control, .events = POLLIN } };
		struct pollfd *pfd = &fds[0];
		int n = poll(fds, 3, next_timeout()); /* a negative fd is skipped */

		if (n < 0 && errno != EINTR)
			return NULL;
		if (n > 0 && (fds[1].revents & POLLIN)) {
			gg_ending_run(); /* the process is ending: its exit work */
			continue;
		}
		check_handler();
		if (n > 0 && (fds[2].revents & POLLIN))
			control_accept();
		if (n > 0 && (pfd->revents & POLLIN)) {
			/* However many signals came, one boundary. */
			while (read(watcher_state.pipe_r, buf, sizeof(buf)) > 0)
				;
			gg_boundary_run("signal");
			continue;
		}
		while (watcher_state.next_after < watcher_state.nafter &&
		       watcher_state.after[watcher_state.next_after] <= seconds_since_start()) {
			char why[48];

			snprintf(why, sizeof(why), "after:%g",
				 watcher_state.after[watcher_state.next_after++]);
			gg_boundary_run(why);
		}
	}
}

/* Returns once the thread runs watch(). A thread still starting holds locks
 * of the C library or a sanitizer runtime (its allocator, as it sets up the
 * thread); an application fork() in that window leaves them held in the
 * child forever (seen with GCC 12's AddressSanitizer, whose fork does not
 * take its allocator lock: the child's watcher hung on its first malloc). */
static int start_thread(void)
{
	pthread_attr_t attr;
	pthread_t t;
	sigset_t all, old;
	sem_t started;
	int err;

	if (sem_init(&started, 0, 0))
		return -errno;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* The watcher takes no signal: the application's threads keep them. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&t, &attr, watch, &started);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	while (!err && sem_wait(&started) && errno == EINTR)
		;
	sem_destroy(&started);
	return -err;
}

/* The program's disposition of @sig is its own choice when it is not the
 * default: a handler of its own, or SIG_IGN. (SIG_DFL is 0, whichever member
 * of the union the program set.) */
static bool programs_own(const struct sigaction *sa)
{
	return sa->sa_handler != SIG_DFL && sa->sa_handler != on_signal;
}

static void keep_programs(int sig, const struct sigaction *sa)
{
	char name[48];

	if (sa->sa_handler == SIG_IGN)
		gg_report_setting("the program ignores %s: gpuguard leaves it so, and GPUGUARD_SIGNAL "
				  "runs no boundary",
				  signal_name(sig, name, sizeof(name)));
	else
		gg_report_setting("the program handles %s itself: gpuguard keeps its handler, and "
				  "GPUGUARD_SIGNAL runs no boundary",
				  signal_name(sig, name, sizeof(name)));
}

/* Our handler for @sig, unless the program has its own. 0: installed;
 * 1: the program's kept (said); -errno: sigaction failed. */
static int install(int sig)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART }, old;

	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, NULL, &old))
		return -errno;
	if (!programs_own(&old)) {
		if (sigaction(sig, &sa, &old))
			return -errno;
		if (!programs_own(&old))
			return 0;
		/* Another thread of the program installed one between the two
		 * calls: give it back. */
		(void)sigaction(sig, &old, NULL);
	}
	keep_programs(sig, &old);
	return 1;
}

/* No watcher to run them: the signal goes back to its default, as it was
 * (unless the program has put its own in place meanwhile), rather than be
 * caught for nothing. */
static void uninstall(void)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	if (!watcher_state.installed)
		return;
	watcher_state.installed = false;
	sigemptyset(&dfl.sa_mask);
	if (ours_in_place())
		(void)sigaction(watcher_state.signal, &dfl, NULL);
}

static void cannot(const char *what, int err, const char *where)
{
	if (!watcher_state.signal && !watcher_state.nafter)
		gg_report_error("cannot %s%s: %s; a process ended by SIGTERM or SIGINT gets no exit "
				"scan or final reports",
				what, where, strerror(-err));
	else
		gg_report_error(
			"cannot %s%s: %s; %s boundaries will not run", what, where, strerror(-err),
			watcher_state.nafter ? "GPUGUARD_SIGNAL and after:" : "GPUGUARD_SIGNAL");
}

/* The control socket for a watcher about to start; what it could not do is
 * said: the signal still works, `gpuguard scan` cannot ask. */
static void control_start(const char *where)
{
	int err = control_open();

	if (err)
		gg_report_setting("cannot open gpuguard's control socket%s: %s; gpuguard scan cannot "
				  "run a boundary in this process (GPUGUARD_SIGNAL still does)",
				  where, strerror(-err));
}

int gg_watcher_start(const struct gg_config *cfg, const struct gg_boundary_events *ev,
		     void (*end_work)(int sig))
{
	char name[48], what[96];
	int fds[2];
	int err;

	watcher_state.signal = cfg->signal;
	watcher_state.installed = false;
	watcher_state.lost = false;
	watcher_state.nafter = ev->nafter;
	memcpy(watcher_state.after, ev->after, sizeof(watcher_state.after));
	if (watcher_state.nafter > 1) /* else a function for the loader to bind, for nothing */
		qsort(watcher_state.after, watcher_state.nafter, sizeof(double), cmp_double);
	watcher_state.next_after = 0;
	watcher_state.pipe_r = -1;
	if (watcher_state.signal) {
		if (pipe2(fds, O_CLOEXEC | O_NONBLOCK)) {
			err = -errno;
			cannot("make the boundary watcher's pipe", err, "");
			return err;
		}
		watcher_state.pipe_r = fds[0];
		watcher_state.pipe_w = fds[1];
		if ((err = install(watcher_state.signal)) < 0) {
			snprintf(what, sizeof(what), "install gpuguard's handler of %s",
				 signal_name(watcher_state.signal, name, sizeof(name)));
			cannot(what, err, "");
		}
		watcher_state.installed = err == 0;
		if (!watcher_state.installed) {
			watcher_state.pipe_w = -1;
			close(fds[0]);
			close(fds[1]);
			watcher_state.pipe_r = -1;
		}
	}
	/* SIGTERM and SIGINT left at their default: the exit work through here. */
	int ending = gg_ending_install(end_work, watcher_state.signal);

	if (ending < 0) {
		snprintf(what, sizeof(what), "install gpuguard's handler of SIGTERM and SIGINT");
		cannot(what, ending, "");
	}
	if (!watcher_state.installed && !watcher_state.nafter && ending <= 0)
		return 0; /* nothing to watch: no thread */
	if (watcher_state.installed)
		control_start("");
	if ((err = start_thread())) {
		control_close();
		uninstall();
		gg_ending_uninstall();
		cannot("start the boundary watcher thread", err, "");
		return err;
	}
	return 0;
}

/* In a forked child, before it calls the driver: its signals are dropped, not
 * written into the pipe it shares with its parent, whose watcher would run a
 * boundary of the parent's for them. */
void gg_watcher_atfork_child(void)
{
	watcher_state.inherited_r = watcher_state.pipe_r;
	watcher_state.inherited_w = watcher_state.pipe_w;
	watcher_state.pipe_w = -1;
	/* Its parent's socket: the child's own, named by its own pid, comes
	 * with its watcher. */
	control_close();
	gg_ending_atfork_child();
}

int gg_watcher_restart_in_child(void)
{
	int fds[2], err;

	/* The handler (or the program's) came through fork(); the thread did
	 * not. after: events the parent already ran stay run. */
	bool listening = watcher_state.installed && !watcher_state.lost;
	int ending = gg_ending_restart_in_child();

	if (ending < 0)
		cannot("make the pipes of gpuguard's SIGTERM and SIGINT handler", ending,
		       " in this forked process");
	if (!listening && watcher_state.next_after >= watcher_state.nafter && ending <= 0)
		return 0;
	if (listening) {
		if (pipe2(fds, O_CLOEXEC | O_NONBLOCK)) {
			err = -errno;
			uninstall();
			cannot("make the boundary watcher's pipe", err, " in this forked process");
			return err;
		}
		watcher_state.pipe_r = fds[0];
		watcher_state.pipe_w = fds[1]; /* one store the handler sees whole */
		if (watcher_state.inherited_r >= 0)
			close(watcher_state.inherited_r);
		if (watcher_state.inherited_w >= 0)
			close(watcher_state.inherited_w);
		watcher_state.inherited_r = watcher_state.inherited_w = -1;
		control_start(" in this forked process");
	}
	if ((err = start_thread())) {
		control_close();
		uninstall();
		gg_ending_uninstall();
		cannot("start the boundary watcher thread", err, " in this forked process");
	}
	return err;
}
