/* Writes that never raise a signal in the program (see sink.h). write(2) to
 * a pipe with no reader sends SIGPIPE to the writing thread, whose default
 * action ends the process: the program's own output still buffered in stdio
 * would be lost with it. MSG_NOSIGNAL serves sockets only, so SIGPIPE is
 * blocked in the calling thread around the write, and the one the write
 * raised, left pending there, is taken with a zero-timeout sigtimedwait. */
#include "report/sink.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

bool gg_report_pipe_like(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

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

int gg_report_write_all(int fd, const void *buf, size_t len, bool pipe_like)
{
	static const struct timespec now = { 0, 0 };
	sigset_t pipe_set, old, pending;
	bool was_pending;
	int err;

	if (!pipe_like)
		return write_loop(fd, buf, len);
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	if (pthread_sigmask(SIG_BLOCK, &pipe_set, &old))
		return -EAGAIN; /* cannot happen; never write unprotected */
	/* Blocked now: a SIGPIPE pending here is the program's (or was sent to the
	 * process), and stays pending for it. */
	was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
	err = write_loop(fd, buf, len);
	if (err == -EPIPE && !was_pending) {
		int saved = errno;

		while (sigtimedwait(&pipe_set, NULL, &now) < 0 && errno == EINTR)
			;
		errno = saved;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}
