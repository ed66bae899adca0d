/* SIGTERM and SIGINT left at their default disposition (docs/how-it-works.md, "Boundaries,
 * signals, exit"): a server stopped by systemctl, docker or Kubernetes gets
 * SIGTERM, and would end with no exit scan and no final reports. gpuguard's
 * handler does only async-signal-safe work: it writes the signal's number into
 * a pipe the watcher thread polls (watcher.c), waits a bounded time (poll(2) on
 * a second pipe) for the watcher to run the exit work, then puts the default
 * disposition back and raises the same signal, so the process dies of it with
 * the status it would have had without gpuguard. No lock, no allocation, no
 * stdio in the handler.
 *
 * A program that handles (or ignores) either signal keeps its disposition,
 * installed before gpuguard's set-up or after it, and reports at its exit. A
 * forked child drops to the default behaviour until its first hook call
 * gives it pipes and a watcher of its own. */
#include "boundary/ending.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/gg.h"

static const int end_signals[] = { SIGTERM, SIGINT };

static struct {
	/* Written by set-up (or a forked child's first hook) before the handler
	 * can see them; the handler reads them only. */
	bool installed[2];            /* ours was installed for end_signals[i] */
	volatile sig_atomic_t end_w;  /* the handler writes the signal here; -1: none */
	volatile sig_atomic_t done_r; /* the handler waits on this one; -1: none */
	int end_r, done_w;            /* the watcher's ends */
	int old[4];                   /* a forked child's copies of its parent's, to close */
	void (*work)(int sig);        /* the exit work, set once by set-up */
	atomic_bool ending;           /* the first end signal claims it; others only wait */
} ending_state = { .end_w = -1, .done_r = -1, .end_r = -1, .done_w = -1, .old = { -1, -1, -1, -1 } };

/* Back to the default disposition, and the signal again: once this handler
 * returns and the signal is unblocked, the process dies of it. */
static void die_of(int sig)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	sigemptyset(&dfl.sa_mask);
	(void)sigaction(sig, &dfl, NULL);
	(void)raise(sig);
}

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t); /* async-signal-safe */
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void on_end_signal(int sig)
{
	int saved = errno;
	unsigned char b = (unsigned char)sig;
	int64_t deadline = now_ms() + GG_ENDING_WAIT_MS;
	int done_r = ending_state.done_r;

	/* The first asks the watcher for the exit work; any later one (another
	 * thread, the other signal) waits for the same work. */
	if (done_r >= 0 && ending_state.end_w >= 0 &&
	    (atomic_exchange(&ending_state.ending, true) || write(ending_state.end_w, &b, 1) == 1)) {
		for (;;) {
			struct pollfd pfd = { .fd = done_r, .events = POLLIN };
			int64_t left = deadline - now_ms();

			if (left <= 0 || poll(&pfd, 1, (int)left) > 0 ||
			    (errno != EINTR && errno != EAGAIN))
				break;
		}
	}
	die_of(sig);
	errno = saved;
}

/* The program's own choice: a handler of its own, or SIG_IGN. */
static bool programs_own(const struct sigaction *sa)
{
	return sa->sa_handler != SIG_DFL && sa->sa_handler != on_end_signal;
}

static int make_pipes(void)
{
	int e[2], d[2];

	if (pipe2(e, O_CLOEXEC | O_NONBLOCK))
		return -errno;
	if (pipe2(d, O_CLOEXEC | O_NONBLOCK)) {
		int err = -errno;

		close(e[0]);
		close(e[1]);
		return err;
	}
	ending_state.end_r = e[0];
	ending_state.done_w = d[1];
	ending_state.done_r = d[0];
	ending_state.end_w = e[1]; /* last: the handler sees a whole pair */
	return 0;
}

int gg_ending_install(void (*work)(int sig), int except)
{
	struct sigaction sa = { .sa_handler = on_end_signal }, old;
	bool any = false;
	int err;

	ending_state.work = work;
	sigemptyset(&sa.sa_mask);
	/* While one ends the process, the other waits its turn. */
	for (size_t i = 0; i < GG_ARRAY_SIZE(end_signals); i++)
		sigaddset(&sa.sa_mask, end_signals[i]);
	for (size_t i = 0; i < GG_ARRAY_SIZE(end_signals); i++) {
		int sig = end_signals[i];

		ending_state.installed[i] = false;
		/* GPUGUARD_SIGNAL's, or the program's own: not ours to take. */
		if (sig == except || sigaction(sig, NULL, &old) || programs_own(&old))
			continue;
		if (!any && (err = make_pipes()))
			return err;
		any = true;
		if (sigaction(sig, &sa, &old) == 0) {
			ending_state.installed[i] = true;
			/* Another thread of the program installed one meanwhile. */
			if (programs_own(&old)) {
				(void)sigaction(sig, &old, NULL);
				ending_state.installed[i] = false;
			}
		}
	}
	return ending_state.installed[0] || ending_state.installed[1];
}

void gg_ending_uninstall(void)
{
	struct sigaction now, dfl = { .sa_handler = SIG_DFL };

	sigemptyset(&dfl.sa_mask);
	for (size_t i = 0; i < GG_ARRAY_SIZE(end_signals); i++) {
		if (!ending_state.installed[i])
			continue;
		ending_state.installed[i] = false;
		if (sigaction(end_signals[i], NULL, &now) == 0 && now.sa_handler == on_end_signal)
			(void)sigaction(end_signals[i], &dfl, NULL);
	}
	ending_state.end_w = -1;
	ending_state.done_r = -1;
}

int gg_ending_fd(void)
{
	return ending_state.installed[0] || ending_state.installed[1] ? ending_state.end_r : -1;
}

void gg_ending_run(void)
{
	unsigned char b;
	char done = 1;

	if (read(ending_state.end_r, &b, 1) != 1)
		return;
	if (ending_state.work)
		ending_state.work(b);
	/* Never drained: every handler waiting sees it. */
	(void)!write(ending_state.done_w, &done, 1);
}

void gg_ending_atfork_child(void)
{
	ending_state.old[0] = ending_state.end_r;
	ending_state.old[1] = ending_state.end_w;
	ending_state.old[2] = ending_state.done_r;
	ending_state.old[3] = ending_state.done_w;
	/* Until its own pipes exist, an end signal is just the default. */
	ending_state.end_w = -1;
	ending_state.done_r = -1;
	ending_state.end_r = ending_state.done_w = -1;
	atomic_store(&ending_state.ending, false);
}

int gg_ending_restart_in_child(void)
{
	int err;

	if (!ending_state.installed[0] && !ending_state.installed[1])
		return 0;
	if ((err = make_pipes())) {
		gg_ending_uninstall();
		return err;
	}
	for (size_t i = 0; i < GG_ARRAY_SIZE(ending_state.old); i++) {
		if (ending_state.old[i] >= 0)
			close(ending_state.old[i]);
		ending_state.old[i] = -1;
	}
	return 1;
}
