/* The report files' paths (GPUGUARD_LOG, _SUMMARY_JSON, _METRICS): "%p"
 * expansion, and whether a file can be created there. Shared with the
 * gpuguard command, which checks the paths it is given before it runs the
 * program. Nothing here allocates or prints. */
#ifndef GG_REPORT_PATHS_H
#define GG_REPORT_PATHS_H

#include <stddef.h>

/* Copy @pattern to @out with each "%p" replaced by @pid. 0 or -ENAMETOOLONG. */
int gg_report_expand_path(const char *pattern, int pid, char *out, size_t cap);

/* Whether a file can be created at @path (already expanded): its directory
 * exists, is a directory this process may create files in, and @path is not
 * itself a directory. 0, or -errno; then @culprit holds what is at fault (the
 * directory, or @path for -EISDIR), for the message. */
int gg_report_check_creatable(const char *path, char *culprit, size_t cap);

#endif
