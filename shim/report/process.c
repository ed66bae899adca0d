/* Which process a metrics file belongs to (process.h): read from /proc with
 * open, read and readlink into the caller's buffers, so the shim can call it
 * while it writes a report. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "report/process.h"

size_t gg_report_utf8_len(const unsigned char *s)
{
	size_t n;
	uint32_t cp, min;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		n = 2, cp = s[0] & 0x1f, min = 0x80;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, cp = s[0] & 0x0f, min = 0x800;
	else if ((s[0] & 0xf8) == 0xf0)
		n = 4, cp = s[0] & 0x07, min = 0x10000;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* /proc/self or /proc/PID, then @name. */
static void proc_path(int pid, const char *name, char *out, size_t cap)
{
	if (pid)
		snprintf(out, cap, "/proc/%d/%s", pid, name);
	else
		snprintf(out, cap, "/proc/self/%s", name);
}

/* The whole of a small file into @buf, NUL-terminated: its length or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	do
		n = read(fd, buf, cap - 1);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

int gg_report_exe_label(int pid, char *out, size_t cap)
{
	static const char deleted[] = " (deleted)";
	char path[64], exe[PATH_MAX];
	const char *base;
	size_t len, o = 0;
	ssize_t n;

	proc_path(pid, "exe", path, sizeof(path));
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0 && pid)
		return n < 0 ? -errno : -ENOENT;
	if (n > 0) {
		exe[n] = '\0';
		len = (size_t)n;
		/* A program replaced on disk while it runs (an upgrade) keeps its name. */
		if (len > sizeof(deleted) - 1 && !strcmp(exe + len - (sizeof(deleted) - 1), deleted))
			exe[len - (sizeof(deleted) - 1)] = '\0';
		base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
	} else {
		base = program_invocation_short_name;
	}
	for (const unsigned char *p = (const unsigned char *)base; *p;) {
		size_t k = gg_report_utf8_len(p);
		char esc = *p == '\\' ? '\\' : *p == '"' ? '"' : *p == '\n' ? 'n' : 0;

		if (o + (k ? k : 1) + 1 >= cap)
			return -ENAMETOOLONG;
		if (esc) {
			out[o++] = '\\';
			out[o++] = esc;
		} else if (!k) {
			out[o++] = '?';
		} else {
			memcpy(out + o, p, k);
			o += k;
		}
		p += k ? k : 1;
	}
	if (o >= cap)
		return -ENAMETOOLONG;
	out[o] = '\0';
	return 0;
}

int gg_report_start_ticks(int pid, unsigned long long *ticks)
{
	char path[64], buf[1024], *p;
	ssize_t n;

	proc_path(pid, "stat", path, sizeof(path));
	if ((n = read_small(path, buf, sizeof(buf))) < 0)
		return (int)n;
	/* The command's name may hold spaces and parentheses: count from the
	 * last ')'. Then state is field 3, and the start time field 22. */
	if (!(p = strrchr(buf, ')')))
		return -EPROTO;
	for (int field = 2; field < 22; field++)
		if (!(p = strchr(p + 1, ' ')))
			return -EPROTO;
	if (p[1] < '0' || p[1] > '9')
		return -EPROTO;
	*ticks = 0;
	for (p++; *p >= '0' && *p <= '9'; p++)
		*ticks = *ticks * 10 + (unsigned long long)(*p - '0');
	return 0;
}

int gg_report_boot_id(char *out, size_t cap)
{
	ssize_t n = read_small("/proc/sys/kernel/random/boot_id", out, cap);

	if (n < 0)
		return (int)n;
	out[strcspn(out, "\n")] = '\0';
	return out[0] ? 0 : -EPROTO;
}

int gg_report_pid_ns(unsigned long long *inode)
{
	char link[64], *p;
	ssize_t n = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);

	if (n < 0)
		return -errno;
	link[n] = '\0';
	if (strncmp(link, "pid:[", 5) || link[5] < '0' || link[5] > '9')
		return -EPROTO;
	*inode = 0;
	for (p = link + 5; *p >= '0' && *p <= '9'; p++)
		*inode = *inode * 10 + (unsigned long long)(*p - '0');
	return *p == ']' && !p[1] ? 0 : -EPROTO;
}
