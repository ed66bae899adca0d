/* Fuzz target: the expected-absent list (GPUGUARD_EXPECTED_ABSENT), read
 * from a file as the shim reads it (shim/options/listfile.c), split into
 * patterns, and matched against the keys of a few lookups as the audit
 * matches them (fnmatch). */
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "options/listfile.h"
#include "fuzz.h"

static const char *const keys[] = {
	"kernels.ptx::maybe_fast",
	"app+0x2040::_Z6kernelPfi",
	"image:0123456789abcdef::gg_scale",
	"module@0x5555deadbeef::*",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = gg_fuzz_path("expected-absent");
	char why[256], *text, *at, *line;
	size_t len, lineno = 0, line_len;

	gg_fuzz_write(path, data, size);
	if (gg_config_read_list(path, &text, &len, why, sizeof(why))) {
		if (!memchr(why, '\0', sizeof(why)))
			abort();
		return 0;
	}
	if (len != size || text[len] != '\0')
		abort();
	at = text;
	while ((line = gg_config_list_next(&at, text + len, &lineno, &line_len))) {
		const char *never = NULL;
		char *pattern;

		if (!line_len || *line == '#' || line[line_len] || lineno > len + 1)
			abort();
		if (gg_config_expected_pattern(line, line_len, &pattern, &never)) {
			if (!never)
				abort();
			continue;
		}
		/* The whole line is the pattern, "*::" before a bare function,
		 * with a function after its first "::". */
		if (strlen(line) != line_len || !strstr(pattern, line) || !strstr(pattern, "::")[2])
			abort();
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			(void)fnmatch(pattern, keys[k], 0);
		free(pattern);
	}
	free(text);
	return 0;
}
