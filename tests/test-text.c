/* The text toolkit (shim/base/text.h), which the shim's summary and the
 * command's symbolized documents both write their strings with. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "base/text.h"

/* @s (NUL-terminated) escaped into a buffer of @cap bytes, all of it: the
 * text, NUL-terminated in @out (room for 256 bytes). */
static const char *escaped(const char *s, size_t n, size_t cap, char *out)
{
	size_t o = 0, taken;
	char buf[256];

	cr_assert_leq(cap, sizeof(buf));
	while (n) {
		size_t k = gg_text_json_escape(buf, cap, s, n, &taken);

		cr_assert_leq(k, cap, "wrote %zu bytes into %zu", k, cap);
		cr_assert_gt(taken, 0, "no progress with %zu bytes of room", cap);
		cr_assert_lt(o + k, 256);
		memcpy(out + o, buf, k);
		o += k;
		s += taken;
		n -= taken;
	}
	out[o] = '\0';
	return out;
}

static const char *esc(const char *s, char *out)
{
	return escaped(s, strlen(s), 256, out);
}

Test(text, valid_utf8_sequences_have_their_length_and_code_point)
{
	static const struct {
		const char *s;
		size_t n, len;
		uint32_t cp;
	} good[] = {
		{ "A", 1, 1, 'A' },
		{ "", 1, 1, 0 }, /* a NUL is an ASCII byte */
		{ "\xc3\xa9", 2, 2, 0xe9 },
		{ "\xe2\x82\xac", 3, 3, 0x20ac },
		{ "\xf0\x9f\x98\x80", 4, 4, 0x1f600 },
		{ "\xf4\x8f\xbf\xbf", 4, 4, 0x10ffff },
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		uint32_t cp = 0x4242;

		cr_assert_eq(gg_text_utf8_len(good[i].s, good[i].n, &cp), good[i].len, "%zu", i);
		cr_assert_eq(cp, good[i].cp, "sequence %zu: U+%04X", i, cp);
	}
	cr_assert_eq(gg_text_utf8_len("\xc3\xa9", 2, NULL), 2, "the code point is optional");
}

Test(text, invalid_utf8_is_length_zero)
{
	static const char *const bad[] = {
		"\x80", /* a continuation byte first */
		"\xbf",
		"\xc0\x80",         /* overlong NUL */
		"\xc1\xbf",         /* overlong ASCII */
		"\xe0\x80\x80",     /* overlong */
		"\xf0\x80\x80\x80", /* overlong */
		"\xed\xa0\x80",     /* a surrogate, U+D800 */
		"\xed\xbf\xbf",     /* U+DFFF */
		"\xf4\x90\x80\x80", /* past U+10FFFF */
		"\xf5\x80\x80\x80",
		"\xf8\x88\x80\x80\x80",
		"\xff",
		"\xc3\x41", /* a lead byte, then no continuation */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint32_t cp = 0x4242;

		cr_assert_eq(gg_text_utf8_len(bad[i], strlen(bad[i]), &cp), 0,
			     "sequence %zu taken as valid", i);
		cr_assert_eq(cp, 0x4242, "sequence %zu set a code point", i);
	}
}

Test(text, truncated_sequences_are_invalid)
{
	cr_assert_eq(gg_text_utf8_len("\xe2\x82\xac", 2, NULL), 0, "cut short by the length");
	cr_assert_eq(gg_text_utf8_len("\xf0\x9f\x98\x80", 3, NULL), 0);
	cr_assert_eq(gg_text_utf8_len("\xc3\xa9", 1, NULL), 0);
	cr_assert_eq(gg_text_utf8_len("\xc3\xa9", 0, NULL), 0, "no bytes");
	/* Cut short by a NUL: stops there even with no length to keep it. */
	cr_assert_eq(gg_text_utf8_len("\xe2\x82", SIZE_MAX, NULL), 0);
	cr_assert_eq(gg_text_utf8_len("\xf0", SIZE_MAX, NULL), 0);
}

Test(text, utf8_put_writes_what_utf8_len_reads)
{
	static const uint32_t cps[] = { 0,     0x41,   0x7f,   0x80,    0x7ff,
					0x800, 0xfffd, 0xffff, 0x10000, 0x10ffff };

	for (size_t i = 0; i < sizeof(cps) / sizeof(cps[0]); i++) {
		char buf[4];
		uint32_t back = 0xffffffff;
		size_t n = gg_text_utf8_put(buf, cps[i]);

		cr_assert_eq(gg_text_utf8_len(buf, n, &back), n, "U+%04X", cps[i]);
		cr_assert_eq(back, cps[i]);
	}
}

Test(text, json_escape_keeps_utf8_and_escapes_quotes_and_backslashes)
{
	char out[256];

	cr_assert_str_eq(esc("plain /path/lib.so", out), "plain /path/lib.so");
	cr_assert_str_eq(esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", out),
			 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	cr_assert_str_eq(esc("a\"b\\c", out), "a\\\"b\\\\c");
}

Test(text, json_escape_writes_control_characters_and_del_as_u00xx)
{
	char out[256];

	cr_assert_str_eq(esc("\x01tab\there\nnl\x1f", out), "\\u0001tab\\u0009here\\u000anl\\u001f");
	cr_assert_str_eq(esc("del\x7f", out), "del\\u007f");
	cr_assert_str_eq(escaped("a\0b", 3, 256, out), "a\\u0000b", "a NUL within @n");
}

Test(text, json_escape_writes_each_byte_that_is_not_utf8_as_u00xx)
{
	char out[256];

	cr_assert_str_eq(esc("\xff\xfe", out), "\\u00ff\\u00fe");
	cr_assert_str_eq(esc("x\xc3", out), "x\\u00c3", "a sequence cut short at the end");
	cr_assert_str_eq(esc("\xe2\x82"
			     "A",
			     out),
			 "\\u00e2\\u0082A", "cut short mid-string");
	cr_assert_str_eq(esc("\xed\xa0\x80", out), "\\u00ed\\u00a0\\u0080", "a surrogate");
	cr_assert_str_eq(esc("\xc0\xaf", out), "\\u00c0\\u00af", "an overlong slash");
}

Test(text, json_escape_writes_whole_characters_into_a_small_buffer)
{
	const char *s = "\xe2\x82\xac\"\x01\xf0\x9f\x98\x80z";
	const char *want = "\xe2\x82\xac\\\"\\u0001\xf0\x9f\x98\x80z";
	char out[256], buf[8];
	size_t taken;

	/* The same text whatever the room, from the least that always progresses. */
	for (size_t cap = GG_TEXT_JSON_CHAR_MAX; cap <= 16; cap++)
		cr_assert_str_eq(escaped(s, strlen(s), cap, out), want, "cap %zu", cap);
	/* Never half a character: 2 bytes of room hold no euro sign, 5 no \u0001. */
	cr_assert_eq(gg_text_json_escape(buf, 2, "\xe2\x82\xac", 3, &taken), 0);
	cr_assert_eq(taken, 0);
	cr_assert_eq(gg_text_json_escape(buf, 5, "a\x01", 2, &taken), 1);
	cr_assert_eq(taken, 1);
	cr_assert_eq(gg_text_json_escape(buf, 1, "\"", 1, &taken), 0);
	cr_assert_eq(taken, 0);
}

Test(text, hex_digits_parse)
{
	static const struct {
		const char *s;
		size_t n;
		uint64_t v;
	} good[] = {
		{ "0", 1, 0 },
		{ "deadBEEF", 8, 0xdeadbeef },
		{ "12345678", 4, 0x1234 }, /* only @n bytes */
		{ "ffffffffffffffff", 16, UINT64_MAX },
		{ "0000ffffffffffffffff", 20, UINT64_MAX }, /* leading zeros */
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		uint64_t v = 42;

		cr_assert_eq(gg_text_parse_hex(good[i].s, good[i].n, &v), 0, "'%s'", good[i].s);
		cr_assert_eq(v, good[i].v, "'%s'", good[i].s);
	}
	cr_assert_eq(gg_text_hex_digit('a'), 10);
	cr_assert_eq(gg_text_hex_digit('F'), 15);
	cr_assert_eq(gg_text_hex_digit('g'), -1);
	cr_assert_eq(gg_text_hex_digit('/'), -1);
	cr_assert_eq(gg_text_hex_digit(':'), -1);
}

Test(text, hex_overflow_is_erange_and_leaves_the_value)
{
	uint64_t v = 42;

	cr_assert_eq(gg_text_parse_hex("10000000000000000", 17, &v), -ERANGE);
	cr_assert_eq(gg_text_parse_hex("fffffffffffffffff", 17, &v), -ERANGE);
	cr_assert_eq(gg_text_parse_0x("0x10000000000000000", &v), -ERANGE);
	cr_assert_eq(v, 42);
	cr_assert_eq(gg_text_parse_hex("10000000000000000g", 18, &v), -EINVAL,
		     "a byte that is no digit outranks the overflow");
}

Test(text, hex_refuses_what_is_not_digits)
{
	static const char *const bad[] = { "", "g", "12 ", " 12", "-1", "+1", "1x", "0x1" };
	uint64_t v = 42;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(gg_text_parse_hex(bad[i], strlen(bad[i]), &v), -EINVAL, "'%s'", bad[i]);
	cr_assert_eq(v, 42);
}

Test(text, hex_with_0x_as_a_summary_writes_it)
{
	static const char *const bad[] = { "",     "0",     "0x",    "x12",  "12",   "0x-5", "0x 5",
					   "0x+5", "0x0x5", "0x12 ", "0x1g", "0y12", "0012" };
	uint64_t v = 0;

	cr_assert_eq(gg_text_parse_0x("0x7f00dead", &v), 0);
	cr_assert_eq(v, 0x7f00dead);
	cr_assert_eq(gg_text_parse_0x("0X1A", &v), 0);
	cr_assert_eq(v, 0x1a);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(gg_text_parse_0x(bad[i], &v), -EINVAL, "'%s'", bad[i]);
	cr_assert_eq(gg_text_parse_0x(NULL, &v), -EINVAL);
}
