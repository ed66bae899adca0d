/* The report files' paths: "%p" expansion and the check that a file can be
 * created where one is asked for (see paths.h). */
#include "report/paths.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gg_report_expand_path(const char *pattern, int pid, char *out, size_t cap)
{
	size_t o = 0;

	for (const char *p = pattern; *p; p++) {
		char num[16];
		const char *piece = p;
		size_t n = 1;

		if (p[0] == '%' && p[1] == 'p') {
			n = (size_t)snprintf(num, sizeof(num), "%d", pid);
			piece = num;
			p++;
		}
		if (o + n >= cap)
			return -ENAMETOOLONG;
		memcpy(out + o, piece, n);
		o += n;
	}
	if (o >= cap)
		return -ENAMETOOLONG;
	out[o] = '\0';
	return 0;
}

int gg_report_check_creatable(const char *path, char *culprit, size_t cap)
{
	const char *slash = strrchr(path, '/');
	size_t dir_len;
	struct stat st;

	if (!cap)
		return -EINVAL;
	/* The directory: "." for a bare name, "/" for a file at the root. */
	if (!slash) {
		snprintf(culprit, cap, ".");
	} else {
		dir_len = slash == path ? 1 : (size_t)(slash - path);
		if (dir_len >= cap)
			return -ENAMETOOLONG;
		memcpy(culprit, path, dir_len);
		culprit[dir_len] = '\0';
	}
	if (!*path || (slash && !slash[1])) { /* "" or "dir/": no file name */
		snprintf(culprit, cap, "%s", path);
		return -EISDIR;
	}
	if (stat(culprit, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	/* A file is made there by creating a temporary one and renaming it:
	 * the directory must be writable and searchable, by the effective ids. */
	if (faccessat(AT_FDCWD, culprit, W_OK | X_OK, AT_EACCESS))
		return -errno;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(culprit, cap, "%s", path);
		return -EISDIR;
	}
	return 0;
}
