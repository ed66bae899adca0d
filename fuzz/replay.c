/* Replays inputs through a fuzz target where there is no libFuzzer (gcc, or
 * the normal build): each argument is a file, or a directory whose files are
 * fed in name order; a directory that does not exist is no input (a target
 * without regressions has no fuzz/regressions/TARGET). A crash is the
 * target's: the sanitizers or the target's own abort() say where. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* A target without an initializer: libFuzzer's is optional too. */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char *data = NULL;
	size_t size = 0, cap = 0;

	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (size == cap) {
			unsigned char *grown = realloc(data, cap = cap ? cap * 2 : 4096);

			if (!grown)
				abort();
			data = grown;
		}
		size_t n = fread(data + size, 1, cap - size, f);

		size += n;
		if (n == 0)
			break;
	}
	fclose(f);
	fprintf(stderr, "replay: %s (%zu bytes)\n", path, size);
	/* A copy of exactly its size: a read past the end is the sanitizers' to see. */
	unsigned char *exact = malloc(size ? size : 1);

	if (!exact)
		abort();
	memcpy(exact, data, size);
	free(data);
	LLVMFuzzerTestOneInput(exact, size);
	free(exact);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
	unsigned done = 0, failed = 0;

	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		struct dirent **names;
		struct stat st;
		int n;

		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "replay: %s: none (%s)\n", argv[i], strerror(errno));
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			failed += replay_file(argv[i]) != 0;
			done++;
			continue;
		}
		if ((n = scandir(argv[i], &names, NULL, by_name)) < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			failed++;
			continue;
		}
		for (int k = 0; k < n; k++) {
			char path[4096];

			snprintf(path, sizeof(path), "%s/%s", argv[i], names[k]->d_name);
			if (names[k]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
				failed += replay_file(path) != 0;
				done++;
			}
			free(names[k]);
		}
		free(names);
	}
	fprintf(stderr, "replay: %u inputs, %u unreadable\n", done, failed);
	return failed ? 1 : 0;
}
