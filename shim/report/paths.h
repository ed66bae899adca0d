/* The report files' paths (GPUGUARD_LOG, _SUMMARY_JSON, _METRICS): "%p"
 * expansion, whether a file can be created there, and what may be written
 * there without harm. Shared with the gpuguard command, which checks the
 * paths it is given before it runs the program. Nothing here allocates or
 * prints. */
#ifndef GG_SHIM_REPORT_PATHS_H
#define GG_SHIM_REPORT_PATHS_H

#include <stdbool.h>
#include <stddef.h>

/* Copy @pattern to @out with each "%p" replaced by @pid. 0 or -ENAMETOOLONG. */
int gg_report_expand_path(const char *pattern, int pid, char *out, size_t cap);

/* Whether a file can be created at @path (already expanded): its directory
 * exists, is a directory this process may create files in, and @path is not
 * itself a directory. 0, or -errno; then @culprit holds what is at fault (the
 * directory, or @path for -EISDIR), for the message. */
int gg_report_check_creatable(const char *path, char *culprit, size_t cap);

/* Whether a symbolic link at @path (already expanded) is refused: 0 when
 * @path is no link or one that only root or this user could have put there
 * (owned by root or the effective user, in a directory owned by one of them
 * that no group or other may write: /dev/stderr, /proc/self/fd/1, a user's
 * own link in a directory of their own), followed then; -ELOOP for any
 * other (another user's link, or any link in a world-writable directory
 * such as /tmp, dangling or not), which is never followed or replaced. */
int gg_report_link_refused(const char *path);

/* Whether an output may go to @path (already expanded), the log (@log) or a
 * report file: what is there already decides. Absent or a regular file: it
 * must be creatable (gg_report_check_creatable, same @culprit). A character
 * device (/dev/null): written in place, never replaced, so it must be
 * writable. A FIFO: opening one with no reader would block, so a named FIFO
 * is refused; the log may be a pipe the process holds (/dev/stderr). A block
 * device or a socket: never written. 0, or -errno: -ENXIO for a FIFO,
 * -ENOTSUP for a block device or socket, -EISDIR, or what
 * gg_report_check_creatable() or access(2) said. */
int gg_report_check_output(const char *path, bool log, char *culprit, size_t cap);

/* Open @path (already expanded) for writing an output, with @flags added
 * (O_CREAT, O_APPEND), close-on-exec, and never block: a FIFO with no reader
 * fails at once (-ENXIO), and is refused altogether unless @log (-ENXIO); a
 * block device or a socket is never opened (-ENOTSUP); a regular file or a
 * character device is. A refused link is never followed (-ELOOP), and
 * nothing else is followed at the last component either (O_NOFOLLOW), so a
 * link planted between the look and the open is not. The descriptor is
 * blocking again when returned. A descriptor, or -errno. */
int gg_report_open_output(const char *path, int flags, bool log);

/* Why an output at @path could not be opened or written (@err, a -errno of the
 * functions above or of a write), in words, into @out: a FIFO, device or
 * socket is named as such, and a full disk as ENOSPC. */
const char *gg_report_output_why(const char *path, int err, bool log, char *out, size_t cap);

/* Whether writing to @fd (not fd 1 itself) lands in what the program writes
 * to its stdout (/dev/stdout, /proc/self/fd/1, the file stdout was redirected
 * to, its terminal); a sink such as /dev/null, where nothing lands, is no
 * stdout. gpuguard never writes there. */
bool gg_report_is_stdout(int fd);

#endif
