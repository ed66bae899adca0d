/* What every part of the gpuguard command shares. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/text.h"
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

size_t gg_cli_escape_char(char *out, const char *s, size_t n, size_t *taken)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char c = (unsigned char)s[0];
	uint32_t cp = 0;
	size_t k = gg_text_utf8_len(s, n, &cp);

	*taken = k ? k : 1;
	if (c == '\\') {
		out[0] = out[1] = '\\';
		return 2;
	}
	if (!k || c < 0x20 || c == 0x7f) {
		out[0] = '\\';
		out[1] = 'x';
		out[2] = hex[c >> 4];
		out[3] = hex[c & 15];
		return 4;
	}
	if (cp >= 0x80 && cp <= 0x9f) {
		memcpy(out, "\\u00", 4);
		out[4] = hex[cp >> 4];
		out[5] = hex[cp & 15];
		return 6;
	}
	memcpy(out, s, k);
	return k;
}

const char *gg_cli_name(char *out, size_t cap, const char *s)
{
	size_t n = strlen(s), o = 0;

	if (!cap)
		return "";
	for (size_t i = 0, taken; i < n; i += taken) {
		char one[GG_CLI_ESCAPE_MAX];
		size_t len = gg_cli_escape_char(one, s + i, n - i, &taken);

		/* Room for this character, and for "..." should another follow. */
		if (o + len + (i + taken < n ? 3 : 0) + 1 > cap) {
			if (o + 4 <= cap) {
				memcpy(out + o, "...", 3);
				o += 3;
			}
			break;
		}
		memcpy(out + o, one, len);
		o += len;
	}
	out[o] = '\0';
	return out;
}
