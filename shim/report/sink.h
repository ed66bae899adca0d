/* Writing the shim's bytes to a descriptor without harm to the program: a
 * pipe or socket whose reader has gone never raises SIGPIPE in it. */
#ifndef GG_SHIM_REPORT_SINK_H
#define GG_SHIM_REPORT_SINK_H

#include <stdbool.h>
#include <stddef.h>

/* Write all @len bytes of @buf to @fd, retrying after EINTR. When @pipe_like
 * (@fd is a pipe or a socket), SIGPIPE is blocked in this thread around the
 * write, and a SIGPIPE the write raised is taken back; one the program had
 * pending before is left pending. 0, or -errno (-EPIPE: the reader has gone). */
int gg_report_write_all(int fd, const void *buf, size_t len, bool pipe_like);

/* Whether a write to @fd could raise SIGPIPE (a pipe, FIFO or socket). */
bool gg_report_pipe_like(int fd);

#endif
