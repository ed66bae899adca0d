/* The text toolkit (text.h): UTF-8, JSON string bodies and hex numbers for
 * the shim and the command alike. Pure: no libc call beyond arithmetic, so
 * async-signal-safe and nothing for the dynamic linker to bind at set-up. */
#include <errno.h>
#include <stdbool.h>

#include "base/text.h"

size_t gg_text_utf8_len(const char *s, size_t n, uint32_t *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t k;
	uint32_t c, min;

	if (!n)
		return 0;
	if (p[0] < 0x80) {
		if (cp)
			*cp = p[0];
		return 1;
	}
	if ((p[0] & 0xe0) == 0xc0)
		k = 2, c = p[0] & 0x1f, min = 0x80;
	else if ((p[0] & 0xf0) == 0xe0)
		k = 3, c = p[0] & 0x0f, min = 0x800;
	else if ((p[0] & 0xf8) == 0xf0)
		k = 4, c = p[0] & 0x07, min = 0x10000;
	else
		return 0;
	/* Stops at the first byte that is no continuation: never reads past a
	 * NUL, so a NUL-terminated string may be passed with @n = SIZE_MAX. */
	for (size_t i = 1; i < k; i++) {
		if (i >= n || (p[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	if (cp)
		*cp = c;
	return k;
}

size_t gg_text_utf8_put(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

static size_t json_escape(char *out, size_t cap, const char *s, size_t n, size_t *taken, bool lossless)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, i = 0;

	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		size_t k = gg_text_utf8_len(s + i, n - i, NULL);

		if (c == '"' || c == '\\') {
			if (cap - o < 2)
				break;
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c < 0x20 || c == 0x7f || !k) {
			bool escaped = lossless && !k; /* a byte, not a character */

			if (cap - o < 6)
				break;
			out[o++] = '\\';
			out[o++] = 'u';
			out[o++] = escaped ? 'd' : '0';
			out[o++] = escaped ? 'c' : '0';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
			k = 1;
		} else {
			if (cap - o < k)
				break;
			for (size_t j = 0; j < k; j++)
				out[o++] = s[i + j];
		}
		i += k ? k : 1;
	}
	*taken = i;
	return o;
}

size_t gg_text_json_escape(char *out, size_t cap, const char *s, size_t n, size_t *taken)
{
	return json_escape(out, cap, s, n, taken, false);
}

size_t gg_text_json_escape_bytes(char *out, size_t cap, const char *s, size_t n, size_t *taken)
{
	return json_escape(out, cap, s, n, taken, true);
}

int gg_text_hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int gg_text_parse_hex(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	int err = 0;

	if (!n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int d = gg_text_hex_digit((unsigned char)s[i]);

		if (d < 0)
			return -EINVAL;
		if (v >> 60)
			err = -ERANGE; /* but a later byte that is no digit makes it -EINVAL */
		v = v << 4 | (uint64_t)d;
	}
	if (err)
		return err;
	*out = v;
	return 0;
}

int gg_text_parse_0x(const char *s, uint64_t *out)
{
	size_t n = 0;

	if (!s || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return -EINVAL;
	s += 2;
	while (s[n])
		n++;
	return gg_text_parse_hex(s, n, out);
}
