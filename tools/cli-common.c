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

bool gg_cli_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	int base = 10;

	if (!s || !*s)
		return false;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!*s || strspn(s, base == 16 ? "0123456789abcdefABCDEF" : "0123456789") != strlen(s))
		return false;
	errno = 0;
	*out = strtoull(s, &end, base);
	return errno == 0 && !*end;
}

/* The shim's rule (gg_config_parse_signal): what it would refuse, so is this. */
int gg_cli_parse_signal(const char *s)
{
	uint64_t n;

	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	if (!strcasecmp(s, "USR1"))
		return SIGUSR1;
	if (!strcasecmp(s, "USR2"))
		return SIGUSR2;
	if (!gg_cli_parse_u64(s, &n) || n == 0 || n >= (uint64_t)NSIG)
		return 0;
	if (n == SIGKILL || n == SIGSTOP || n == SIGSEGV || n == SIGBUS || n == SIGFPE ||
	    n == SIGILL || n == SIGABRT)
		return 0;
	return (int)n;
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
