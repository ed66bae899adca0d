/* The report files' paths: "%p" expansion, the check that a file can be
 * created where one is asked for, and opening an output without harm (see
 * paths.h). */
#include "report/paths.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

/* statfs(2)'s f_type of the kernel's anonymous pipes (linux/magic.h). */
#define GG_PIPEFS_MAGIC 0x50495045

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

/* A pipe the process holds (/dev/stderr, /proc/self/fd/N), as opposed to a
 * FIFO named in a file system, which may have no reader. */
static bool anonymous_pipe(const char *path)
{
	struct statfs fs;

	return statfs(path, &fs) == 0 && fs.f_type == GG_PIPEFS_MAGIC;
}

/* Whether no other user could have put an entry into the directory of
 * @path: it is owned by root or @uid and no group or other may write it. */
static bool dir_trusted(const char *path, uid_t uid)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if ((size_t)(slash - path) >= sizeof(dir))
		return false;
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_uid == 0 || st.st_uid == uid) &&
	       !(st.st_mode & (S_IWGRP | S_IWOTH));
}

int gg_report_link_refused(const char *path)
{
	uid_t uid = geteuid();
	struct stat st;

	if (lstat(path, &st) || !S_ISLNK(st.st_mode))
		return 0;
	return (st.st_uid == 0 || st.st_uid == uid) && dir_trusted(path, uid) ? 0 : -ELOOP;
}

int gg_report_check_output(const char *path, bool log, char *culprit, size_t cap)
{
	struct stat st;
	int err;

	if (!cap)
		return -EINVAL;
	if ((err = gg_report_link_refused(path))) {
		snprintf(culprit, cap, "%s", path);
		return err;
	}
	if (stat(path, &st) || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
		return gg_report_check_creatable(path, culprit, cap);
	snprintf(culprit, cap, "%s", path);
	if (S_ISFIFO(st.st_mode))
		return log && anonymous_pipe(path) ? 0 : -ENXIO;
	if (!S_ISCHR(st.st_mode))
		return -ENOTSUP;
	/* Written in place: the device itself must take writes. */
	return faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) ? -errno : 0;
}

/* Whether an output may be opened on what @st describes. */
static int kind_allowed(const struct stat *st, bool log)
{
	if (S_ISREG(st->st_mode) || S_ISCHR(st->st_mode) || (log && S_ISFIFO(st->st_mode)))
		return 0;
	if (S_ISDIR(st->st_mode))
		return -EISDIR;
	return S_ISFIFO(st->st_mode) ? -ENXIO : -ENOTSUP;
}

int gg_report_open_output(const char *path, int flags, bool log)
{
	struct stat st;
	int fd, err, fl;

	bool link;

	/* Looked at before opening: opening a device may act on it. */
	if ((err = gg_report_link_refused(path)))
		return err;
	link = lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
	if (stat(path, &st) == 0 && (err = kind_allowed(&st, log)))
		return err;
	/* O_NONBLOCK: a FIFO with no reader fails with ENXIO rather than wait.
	 * O_NOFOLLOW unless the link was looked at and allowed. */
	fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (link ? 0 : O_NOFOLLOW) | flags,
		  0644);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || (err = kind_allowed(&st, log))) { /* changed meanwhile */
		close(fd);
		return err ? err : -EIO;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

const char *gg_report_output_why(const char *path, int err, bool log, char *out, size_t cap)
{
	struct stat st;
	bool there = stat(path, &st) == 0;

	struct stat lst;

	if (err == -ELOOP && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
		snprintf(out, cap,
			 "it is a symbolic link that %s, which gpuguard never follows or replaces",
			 lst.st_uid != 0 && lst.st_uid != geteuid()
				 ? "another user owns"
				 : "another user could have put there (its directory is writable by "
				   "others)");
	else if (there && S_ISFIFO(st.st_mode) && (err == -ENXIO || err == -ENOTSUP))
		snprintf(out, cap,
			 log ? "it is a FIFO, and opening one with no reader would block"
			     : "it is a FIFO, which could block the program (a regular file "
			       "or a character device such as /dev/null is written)");
	else if (there && S_ISBLK(st.st_mode) && err == -ENOTSUP)
		snprintf(out, cap, "it is a block device, which gpuguard never writes");
	else if (there && S_ISSOCK(st.st_mode) && (err == -ENOTSUP || err == -ENXIO))
		snprintf(out, cap, "it is a socket, which gpuguard never writes");
	else if (err == -ENOSPC)
		snprintf(out, cap, "%s (ENOSPC)", strerror(ENOSPC));
	else if (err == -EDQUOT)
		snprintf(out, cap, "%s (EDQUOT)", strerror(EDQUOT));
	else if (err == -EFBIG) /* past RLIMIT_FSIZE (ulimit -f) */
		snprintf(out, cap, "%s (EFBIG)", strerror(EFBIG));
	else
		snprintf(out, cap, "%s", strerror(-err));
	return out;
}

bool gg_report_is_stdout(int fd)
{
	struct stat a, b;

	return fd != STDOUT_FILENO && fstat(fd, &a) == 0 && fstat(STDOUT_FILENO, &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino && (!S_ISCHR(a.st_mode) || isatty(fd));
}
