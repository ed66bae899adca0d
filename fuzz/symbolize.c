/* Fuzz target: `gpuguard symbolize` (tools/cmd-symbolize.c) on a hostile log
 * or JSON summary and a hostile object: the input's bytes up to its first
 * NUL are the log or summary, those after it the file "app" in the
 * directory given with -d, so every location in "app" (a chain inside a
 * statically linked runtime included) reads that file's ELF headers and
 * symbols. No symbolizer is run: PATH is empty, so the offsets stay as they
 * are, and the output goes to /dev/null. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char **argv[])
{
	(void)argc;
	(void)argv;
	if (!freopen("/dev/null", "w", stdout) || setenv("PATH", "", 1) ||
	    unsetenv("LD_LIBRARY_PATH") || unsetenv("GPUGUARD_SKIP_SYMBOLS"))
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char input[4096], dir[4096], *slash;
	const uint8_t *nul = memchr(data, '\0', size);
	size_t len = nul ? (size_t)(nul - data) : size;

	snprintf(input, sizeof(input), "%s", gg_fuzz_path("input"));
	gg_fuzz_write(input, data, len);
	gg_fuzz_write(gg_fuzz_path("app"), nul ? nul + 1 : data, nul ? size - len - 1 : 0);
	snprintf(dir, sizeof(dir), "%s", input);
	slash = strrchr(dir, '/');
	*slash = '\0';
	char *argv[] = { "symbolize", "-d", dir, input, NULL };
	int status = gg_cmd_symbolize(4, argv);

	if (status < 0 || status > 2)
		abort();
	return 0;
}
