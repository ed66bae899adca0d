/* Reading a list file whole, bounded and without blocking (see listfile.h). */
#include "options/listfile.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "a character device", for "it is ..., not a regular file". */
static const char *kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISSOCK(mode))
		return "a socket";
	return "something other than a file";
}

static int too_big(char *why, size_t cap)
{
	snprintf(why, cap, "it is larger than %d bytes (1 MiB), the most a list may hold",
		 GG_LIST_FILE_MAX);
	return -EFBIG;
}

int gg_config_read_list(const char *path, char **text, size_t *len, char *why, size_t cap)
{
	struct stat st;
	size_t have = 0, room;
	char *buf = NULL;
	int fd, err = 0;

	*text = NULL;
	*len = 0;
	/* O_NONBLOCK: opening a FIFO with no writer would wait for one. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		snprintf(why, cap, "%s", strerror(-err));
		return err;
	}
	if (fstat(fd, &st)) {
		err = -errno;
		snprintf(why, cap, "%s", strerror(-err));
	} else if (!S_ISREG(st.st_mode)) {
		snprintf(why, cap, "it is %s, not a regular file", kind(st.st_mode));
		err = -EINVAL;
	} else if (st.st_size > GG_LIST_FILE_MAX) {
		err = too_big(why, cap);
	}
	/* One byte more than the size, to see the end; more if it grows meanwhile,
	 * up to the bound. */
	room = err ? 0 : (size_t)st.st_size + 1;
	if (!err && !(buf = malloc(room + 1))) {
		snprintf(why, cap, "out of memory for its %zu bytes", room - 1);
		err = -ENOMEM;
	}
	while (!err) {
		ssize_t n;

		if (have == room) {
			char *grown;

			if (room > GG_LIST_FILE_MAX) {
				err = too_big(why, cap);
				break;
			}
			room = room * 2 > GG_LIST_FILE_MAX + 1 ? GG_LIST_FILE_MAX + 1 : room * 2;
			if (!(grown = realloc(buf, room + 1))) {
				snprintf(why, cap, "out of memory after %zu bytes", have);
				err = -ENOMEM;
				break;
			}
			buf = grown;
		}
		n = read(fd, buf + have, room - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			snprintf(why, cap, "%s after %zu bytes", strerror(-err), have);
		} else if (n == 0) {
			break;
		} else {
			have += (size_t)n;
		}
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	buf[have] = '\0';
	*text = buf;
	*len = have;
	return 0;
}

char *gg_config_list_next(char **at, char *end, size_t *lineno, size_t *len)
{
	while (*at < end) {
		char *s = *at, *e, *nl = memchr(s, '\n', (size_t)(end - s));

		++*lineno;
		e = nl ? nl : end;
		*at = nl ? nl + 1 : end;
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		while (e > s && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (s == e || *s == '#')
			continue;
		*e = '\0'; /* the newline, a blank, or the text's own NUL at @end */
		*len = (size_t)(e - s);
		return s;
	}
	return NULL;
}

int gg_config_expected_pattern(const char *line, size_t len, char **pattern, const char **why)
{
	const char *sep = strstr(line, "::");
	size_t size;
	bool bare = !sep;

	*pattern = NULL;
	/* Read as a string, the line would end at the NUL: "\0kernel" would be
	 * the empty "*::", and "m\0::f" the module "m" in any module. */
	if (memchr(line, '\0', len)) {
		*why = "a NUL byte, which no kernel's name has: the list is not text";
		return -EINVAL;
	}
	if (!sep && strchr(line, ':')) {
		*why = "a kernel's name has no ':'; write MODULE::FUNCTION, or FUNCTION for any module";
		return -EINVAL;
	}
	if (sep && !sep[2]) {
		*why = "no function after '::'; write MODULE::* for every function of a module";
		return -EINVAL;
	}
	size = len + (bare ? 3 : 0) + 1;
	if (!(*pattern = malloc(size)))
		return -ENOMEM;
	snprintf(*pattern, size, "%s%s", bare ? "*::" : "", line);
	return 0;
}
