/* Writes that never raise a signal in the program (see sink.h). A write(2)
 * can send the writing thread SIGPIPE (a pipe or socket with no reader) or
 * SIGXFSZ (a file past RLIMIT_FSIZE, `ulimit -f`), whose default actions end
 * the process, and the program's own output still buffered in stdio would
 * be lost with it; a write to the terminal from a background process group
 * sends SIGTTOU, which stops it. MSG_NOSIGNAL serves sockets only, so the
 * three are blocked in the calling thread around the write (a blocked
 * SIGTTOU is never sent: the write goes through), and a SIGPIPE or SIGXFSZ
 * that the write raised, left pending in this thread, is taken with a
 * zero-timeout sigtimedwait. One the program had pending before is left
 * pending. */
#include "report/sink.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

static int write_loop(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO; /* a descriptor that takes nothing: no errno to give */
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Take back @sig, raised by the shim's own write and pending in this thread
 * where it is blocked. */
static void take_back(int sig)
{
	static const struct timespec now = { 0, 0 };
	sigset_t one;
	int saved = errno;

	sigemptyset(&one);
	sigaddset(&one, sig);
	while (sigtimedwait(&one, NULL, &now) < 0 && errno == EINTR)
		;
	errno = saved;
}

int gg_report_write_all(int fd, const void *buf, size_t len)
{
	sigset_t quiet, old, pending;
	bool pipe_pending, fsz_pending;
	int err;

	sigemptyset(&quiet);
	sigaddset(&quiet, SIGPIPE);
	sigaddset(&quiet, SIGXFSZ);
	sigaddset(&quiet, SIGTTOU);
	if (pthread_sigmask(SIG_BLOCK, &quiet, &old))
		return -EAGAIN; /* cannot happen; never write unprotected */
	/* Blocked now: one pending here is the program's (or was sent to the
	 * process), and stays pending for it. */
	if (sigpending(&pending)) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return -EAGAIN;
	}
	pipe_pending = sigismember(&pending, SIGPIPE);
	fsz_pending = sigismember(&pending, SIGXFSZ);
	err = write_loop(fd, buf, len);
	if (err == -EPIPE && !pipe_pending)
		take_back(SIGPIPE);
	if (err == -EFBIG && !fsz_pending)
		take_back(SIGXFSZ);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}
