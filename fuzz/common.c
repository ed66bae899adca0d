/* The fuzz targets' scratch directory (fuzz.h). */
#include "fuzz.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct {
	char dir[256]; /* "" until the first gg_fuzz_path() */
	char path[512];
} fuzz_state;

/* The files the targets wrote, then the directory: nothing is left behind. */
static void remove_dir(void)
{
	DIR *d = opendir(fuzz_state.dir);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(fuzz_state.path, sizeof(fuzz_state.path), "%s/%s", fuzz_state.dir, de->d_name);
		unlink(fuzz_state.path);
	}
	if (d)
		closedir(d);
	rmdir(fuzz_state.dir);
}

const char *gg_fuzz_path(const char *name)
{
	if (!fuzz_state.dir[0]) {
		const char *tmp = getenv("TMPDIR");

		snprintf(fuzz_state.dir, sizeof(fuzz_state.dir), "%s/gg-fuzz-XXXXXX",
			 tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(fuzz_state.dir)) {
			perror("gg-fuzz: mkdtemp");
			abort();
		}
		atexit(remove_dir);
	}
	snprintf(fuzz_state.path, sizeof(fuzz_state.path), "%s/%s", fuzz_state.dir, name);
	return fuzz_state.path;
}

void gg_fuzz_write(const char *path, const void *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	size_t done = 0;

	if (fd < 0) {
		perror("gg-fuzz: open");
		abort();
	}
	while (done < size) {
		ssize_t n = write(fd, (const char *)data + done, size - done);

		if (n <= 0) {
			perror("gg-fuzz: write");
			abort();
		}
		done += (size_t)n;
	}
	close(fd);
}
