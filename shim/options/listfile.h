/* A list file an option names (GPUGUARD_EXPECTED_ABSENT): read whole, only
 * from a regular file no larger than GG_LIST_FILE_MAX, and never blocking
 * (a FIFO, /dev/zero or a terminal is refused, not read). Shared with the
 * gpuguard command, which reads it once before the program runs so that a
 * file the shim would refuse is refused there. Prints nothing. */
#ifndef GG_SHIM_OPTIONS_LISTFILE_H
#define GG_SHIM_OPTIONS_LISTFILE_H

#include <stddef.h>

/* 1 MiB: ten thousand patterns and more; a list is not data. */
#define GG_LIST_FILE_MAX (1024 * 1024)

/* Read @path into a malloc'd, NUL-terminated *@text of *@len bytes (free it).
 * 0, or -errno with @why saying what was wrong in words ("it is a character
 * device, not a regular file"); nothing is returned in part. */
int gg_config_read_list(const char *path, char **text, size_t *len, char *why, size_t cap);

/* The next item of a list read by gg_config_read_list() from *@at (the
 * text ends at @end, where its NUL is): a line stripped of its blanks, not
 * empty and not a '#' comment, NUL-terminated in place after its *@len
 * bytes (which may hold a NUL of the file's own); *@lineno counts the lines
 * passed (start it at 0). NULL when the text is done. */
char *gg_config_list_next(char **at, char *end, size_t *lineno, size_t *len);

/* GPUGUARD_EXPECTED_ABSENT's pattern for the item @line (@len bytes):
 * MODULE::FUNCTION, or a bare FUNCTION, which is "*::FUNCTION" (any module).
 * 0 with a malloc'd *@pattern (free it); -EINVAL with *@why saying why it
 * can match no MODULE::FUNCTION key (a static string), a NUL byte included:
 * the pattern would end there; -ENOMEM. */
int gg_config_expected_pattern(const char *line, size_t len, char **pattern, const char **why);

#endif
