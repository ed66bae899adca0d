/* The text toolkit: UTF-8, the body of a JSON string, hex numbers. One copy
 * for the shim and the gpuguard command, which both link it (the static
 * library gg-text, shim/meson.build); it sits on the lowest floor and uses
 * nothing but <stddef.h> and <stdint.h>.
 *
 * Pure arithmetic over the caller's buffers: nothing is allocated, locked,
 * logged or written, errno is left alone. So every function here is
 * async-signal-safe and may run on the shim's error paths. */
#ifndef GG_SHIM_BASE_TEXT_H
#define GG_SHIM_BASE_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence at @s, of at most @n bytes: 1 to 4;
 * 0 when @n is 0 or the bytes are no valid sequence (a continuation byte
 * first, an overlong form, a surrogate, past U+10FFFF, or cut short by @n
 * or by a byte that is no continuation, a NUL among them). An ASCII byte,
 * NUL included, is a sequence of 1. When valid, *@cp (if @cp) is its code
 * point. */
size_t gg_text_utf8_len(const char *s, size_t n, uint32_t *cp);

/* Code point @cp (at most U+10FFFF) as UTF-8 into @out, which has room for
 * 4 bytes: its length. */
size_t gg_text_utf8_put(char *out, uint32_t cp);

/* The most bytes one character of the input becomes in a JSON string: \u00XX. */
#define GG_TEXT_JSON_CHAR_MAX 6

/* The @n bytes at @s as the body of a JSON string (no quotes), into @out,
 * @cap bytes: '"' and '\' after a backslash; the C0 controls, DEL and every
 * byte that does not begin a valid UTF-8 sequence as \u00XX (lower-case
 * hex), so the document stays valid whatever bytes a name holds; every
 * other character as it is. Writes whole characters only, as many as fit:
 * returns the bytes written, and *@taken the bytes of @s they came from.
 * With @cap at least GG_TEXT_JSON_CHAR_MAX, *@taken is never 0 while @n is
 * not. Nothing is NUL-terminated. */
size_t gg_text_json_escape(char *out, size_t cap, const char *s, size_t n, size_t *taken);

/* The same, but lossless: a byte that does not begin a valid UTF-8 sequence
 * (always 0x80 to 0xff) is written as the lone surrogate \udcXX, as Python's
 * surrogateescape decodes it, so the bytes come back exactly: a label
 * (docs/python.md, "Python and pytest"); the command's JSON reader turns it
 * back into the byte. */
size_t gg_text_json_escape_bytes(char *out, size_t cap, const char *s, size_t n, size_t *taken);

/* The value of hex digit @c (either case), or -1. */
int gg_text_hex_digit(int c);

/* The @n bytes at @s, hex digits only (no "0x", sign or space), as a number
 * in *@out: 0; -EINVAL when @n is 0 or a byte is no hex digit; -ERANGE when
 * every byte is a digit but the value is past UINT64_MAX (leading zeros are
 * free). *@out is set only on success. */
int gg_text_parse_hex(const char *s, size_t n, uint64_t *out);

/* NUL-terminated "0x" (or "0X") and hex digits, as a summary writes an
 * address: as gg_text_parse_hex; -EINVAL without the prefix or a digit. */
int gg_text_parse_0x(const char *s, uint64_t *out);

#endif
