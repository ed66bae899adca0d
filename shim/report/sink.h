/* Writing the shim's bytes to a descriptor without harm to the program: no
 * write of the shim's ever raises a signal in it (SIGPIPE from a pipe or
 * socket whose reader has gone, SIGXFSZ past RLIMIT_FSIZE, SIGTTOU on the
 * terminal of a background job). */
#ifndef GG_SHIM_REPORT_SINK_H
#define GG_SHIM_REPORT_SINK_H

#include <stdbool.h>
#include <stddef.h>

/* Write all @len bytes of @buf to @fd, retrying after EINTR, with SIGPIPE,
 * SIGXFSZ and SIGTTOU blocked in this thread around the write; a SIGPIPE or
 * SIGXFSZ the write raised is taken back, one the program had pending before
 * is left pending. 0, or -errno (-EPIPE: the reader has gone; -EFBIG: past
 * the file size limit). */
int gg_report_write_all(int fd, const void *buf, size_t len);

#endif
