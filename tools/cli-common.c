/* What every part of the gpuguard command shares. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "options/config.h"

bool gg_cli_parse_u64(const char *s, uint64_t *out)
{
	return gg_config_parse_u64(s, out) == 0;
}

const char *gg_cli_plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

void gg_cli_error(const char *fmt, ...)
{
	va_list ap;

	fputs("gpuguard: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

bool gg_cli_grow(void **items, size_t *cap, size_t len, size_t size)
{
	size_t n;
	void *bigger;

	if (len < *cap)
		return true;
	n = *cap ? *cap * 2 : 8;
	if (n > SIZE_MAX / size)
		return false;
	bigger = realloc(*items, n * size);
	if (!bigger)
		return false;
	*items = bigger;
	*cap = n;
	return true;
}
