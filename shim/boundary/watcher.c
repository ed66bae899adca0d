/* The watcher (SPEC §5): a thread that runs the boundaries a signal or an
 * after:S event asks for. The signal handler only writes a byte to a pipe
 * (async-signal-safe, no lock, no allocation); the watcher drains the pipe
 * and runs one boundary for however many signals arrived, so signals during
 * a boundary coalesce into one more. It exists only when a signal or after:
 * is configured, and a forked child starts its own on its first hook call. */
#include "boundary/watcher.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "boundary/boundary.h"
#include "options/config.h"
#include "base/gg.h"
#include "report/report.h"

static struct {
	/* Written by gg_watcher_start() (set-up, or the first hook of a forked
	 * child), read-only after; the handler reads only @pipe_w. */
	int signal;
	double after[16];
	unsigned nafter;
	int pipe_r;
	volatile sig_atomic_t pipe_w; /* -1 until the pipe exists */
	struct timespec start;        /* when the shim was loaded */

	int inherited_r, inherited_w; /* a forked child's copy of its parent's pipe, to close */

	/* The watcher thread's own. */
	unsigned next_after;
	bool warned_handler; /* the application's handler replaced ours: said once */
} watcher_state = { .pipe_r = -1, .pipe_w = -1, .inherited_r = -1, .inherited_w = -1 };

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

/* Say once when the application replaced our handler. */
static void check_handler(void)
{
	struct sigaction now;

	if (!watcher_state.signal || watcher_state.warned_handler)
		return;
	if (sigaction(watcher_state.signal, NULL, &now) == 0 && now.sa_handler != on_signal) {
		watcher_state.warned_handler = true;
		gg_report_handler_replaced(watcher_state.signal);
	}
}

static void *watch(void *arg)
{
	char buf[64];

	sem_post(arg); /* started: from here on it holds nothing while it waits */
	for (;;) {
		struct pollfd pfd = { .fd = watcher_state.pipe_r, .events = POLLIN };
		int timeout = -1;

		if (watcher_state.next_after < watcher_state.nafter) {
			double wait = watcher_state.after[watcher_state.next_after] - seconds_since_start();

			timeout = wait <= 0 ? 0 : (int)(wait * 1000) + 1;
		}
		int n = poll(&pfd, watcher_state.pipe_r >= 0 ? 1 : 0, timeout);

		if (n < 0 && errno != EINTR)
			return NULL;
		if (n > 0 && (pfd.revents & POLLIN)) {
			/* However many signals came, one boundary. */
			while (read(watcher_state.pipe_r, buf, sizeof(buf)) > 0)
				;
			check_handler();
			gg_boundary_run("signal");
			continue;
		}
		while (watcher_state.next_after < watcher_state.nafter &&
		       watcher_state.after[watcher_state.next_after] <= seconds_since_start()) {
			char why[48];

			snprintf(why, sizeof(why), "after:%g", watcher_state.after[watcher_state.next_after++]);
			check_handler();
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

int gg_watcher_start(const struct gg_config *cfg, const struct gg_boundary_events *ev)
{
	int fds[2];
	int err;

	watcher_state.signal = cfg->signal;
	watcher_state.nafter = ev->nafter;
	memcpy(watcher_state.after, ev->after, sizeof(watcher_state.after));
	if (watcher_state.nafter > 1) /* else a function for the loader to bind, for nothing */
		qsort(watcher_state.after, watcher_state.nafter, sizeof(double), cmp_double);
	watcher_state.next_after = 0;
	if (!watcher_state.signal && !watcher_state.nafter)
		return 0; /* nothing to watch: no thread */
	watcher_state.pipe_r = -1;
	if (watcher_state.signal) {
		struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };

		if (pipe2(fds, O_CLOEXEC | O_NONBLOCK))
			return -errno;
		watcher_state.pipe_r = fds[0];
		watcher_state.pipe_w = fds[1];
		sigemptyset(&sa.sa_mask);
		if (sigaction(watcher_state.signal, &sa, NULL))
			return -errno;
	}
	if ((err = start_thread()))
		return err;
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
}

int gg_watcher_restart_in_child(void)
{
	int fds[2];

	/* The handler came through fork(); the thread did not. after: events the
	 * parent already ran stay run. */
	if (!watcher_state.signal && watcher_state.next_after >= watcher_state.nafter)
		return 0;
	if (watcher_state.signal) {
		if (pipe2(fds, O_CLOEXEC | O_NONBLOCK))
			return -errno;
		watcher_state.pipe_r = fds[0];
		watcher_state.pipe_w = fds[1]; /* one store the handler sees whole */
		if (watcher_state.inherited_r >= 0)
			close(watcher_state.inherited_r);
		if (watcher_state.inherited_w >= 0)
			close(watcher_state.inherited_w);
		watcher_state.inherited_r = watcher_state.inherited_w = -1;
	}
	return start_thread();
}
