/* A small JSON reader (RFC 8259) building a tree of values; see json.h. */
#include "json.h"

#include "cli.h"
#include "base/text.h"

#include <errno.h>
#include <fcntl.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The tree's memory: its nodes, keys, strings, numbers' text, items and
 * members, carved one after the other from blocks freed together with the
 * tree. A summary's tree is most of what gpuguard report holds, and a
 * malloc of its own for each small part cost more than the part (and an
 * array grown by doubling had room for twice its items): BENCHMARKS.md,
 * "gpuguard report". */
struct block {
	struct block *next;
	size_t used, cap;
	alignas(max_align_t) char data[];
};

#define BLOCK_SIZE (256 * 1024)

/* What gg_json_parse returns: the root first, so the root is the document. */
struct document {
	struct gg_json root;
	struct block *blocks;
};

struct parser {
	struct block *blocks; /* the newest first */
	/* The items and members of the arrays and objects being read, a stack:
	 * each takes its own from the top once complete. */
	struct gg_json **items;
	size_t nitems, items_cap;
	struct gg_json_member *members;
	size_t nmembers, members_cap;
	const char *s;
	size_t len, pos;
	unsigned line;     /* line of pos, 1-based */
	size_t line_start; /* offset of its first byte */
	size_t col_pos;    /* a position on the current line whose column is known */
	unsigned col;
	struct gg_json_error *err;
};

/* Column (1-based, in characters) of @pos, which lies on the current line.
 * Remembered, so that walking along a long line stays linear. */
static unsigned column_of(struct parser *p, size_t pos)
{
	if (p->col_pos < p->line_start || p->col_pos > pos) {
		p->col_pos = p->line_start;
		p->col = 1;
	}
	for (; p->col_pos < pos; p->col_pos++)
		if (((unsigned char)p->s[p->col_pos] & 0xc0) != 0x80)
			p->col++;
	return p->col;
}

__attribute__((format(printf, 3, 4))) static void fail(struct parser *p, size_t pos, const char *fmt,
						       ...)
{
	va_list ap;

	if (!p->err)
		return;
	p->err->offset = pos;
	p->err->line = p->line;
	p->err->column = column_of(p, pos);
	va_start(ap, fmt);
	vsnprintf(p->err->message, sizeof(p->err->message), fmt, ap);
	va_end(ap);
}

static void skip_space(struct parser *p)
{
	while (p->pos < p->len) {
		char c = p->s[p->pos];

		if (c == '\n') {
			p->line++;
			p->line_start = p->pos + 1;
		} else if (c != ' ' && c != '\t' && c != '\r') {
			break;
		}
		p->pos++;
	}
}

static int peek(const struct parser *p)
{
	return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static void free_blocks(struct block *b)
{
	while (b) {
		struct block *next = b->next;

		free(b);
		b = next;
	}
}

/* @n bytes aligned to @align (a power of two) from the parser's blocks, or
 * NULL (said). A part bigger than a quarter block gets a block of its own,
 * behind the current one, which goes on serving the small ones. */
static void *take(struct parser *p, size_t n, size_t align)
{
	struct block *b = p->blocks;
	size_t at;

	if (b) {
		at = (b->used + align - 1) & ~(align - 1);
		if (at <= b->cap && n <= b->cap - at) {
			b->used = at + n;
			return b->data + at;
		}
	}
	if (n > BLOCK_SIZE / 4) {
		if (n > SIZE_MAX - sizeof(*b) || !(b = malloc(sizeof(*b) + n)))
			goto oom;
		b->used = b->cap = n;
		if (p->blocks) {
			b->next = p->blocks->next;
			p->blocks->next = b;
		} else {
			b->next = NULL;
			p->blocks = b;
		}
		return b->data;
	}
	if (!(b = malloc(sizeof(*b) + BLOCK_SIZE)))
		goto oom;
	b->next = p->blocks;
	b->cap = BLOCK_SIZE;
	b->used = n;
	p->blocks = b;
	return b->data;
oom:
	fail(p, p->pos, "out of memory");
	return NULL;
}

/* The last part taken, @got bytes at @at, is only @n long. */
static void give_back(struct parser *p, const char *at, size_t got, size_t n)
{
	struct block *b = p->blocks;

	if (b && at + got == b->data + b->used)
		b->used -= got - n;
}

static struct gg_json *new_value(struct parser *p, enum gg_json_type type)
{
	struct gg_json *v = take(p, sizeof(*v), alignof(struct gg_json));

	if (!v)
		return NULL;
	memset(v, 0, sizeof(*v));
	v->type = type;
	v->start = p->pos;
	v->line = p->line;
	v->column = column_of(p, p->pos);
	return v;
}

/* The 4 hex digits at @at, or -1. */
static long hex4(const struct parser *p, size_t at)
{
	uint64_t v;

	if (at + 4 > p->len || gg_text_parse_hex(p->s + at, 4, &v))
		return -1;
	return (long)v;
}

/* The string whose opening quote is at p->pos: decoded into a new buffer
 * (*@out, *@out_len), p->pos left after the closing quote. */
static bool parse_string(struct parser *p, char **out, size_t *out_len)
{
	size_t open = p->pos, end = open + 1;
	char *buf;
	size_t n = 0;

	/* Find the closing quote first: the decoded text is never longer. */
	while (end < p->len && p->s[end] != '"')
		end += p->s[end] == '\\' ? 2 : 1;
	if (end >= p->len) {
		fail(p, open, "unterminated string");
		return false;
	}
	buf = take(p, end - open, 1);
	if (!buf)
		return false;
	for (size_t i = open + 1; i < end;) {
		unsigned char c = (unsigned char)p->s[i];

		if (c < 0x20) {
			fail(p, i, "control character U+%04X in string (write it as \\u%04x)", c, c);
			goto bad;
		}
		if (c >= 0x80) {
			size_t k = gg_text_utf8_len(p->s + i, end - i, NULL);

			if (!k) {
				fail(p, i, "invalid UTF-8 byte 0x%02x in string", c);
				goto bad;
			}
			memcpy(buf + n, p->s + i, k);
			n += k;
			i += k;
			continue;
		}
		if (c != '\\') {
			buf[n++] = (char)c;
			i++;
			continue;
		}
		c = (unsigned char)p->s[i + 1];
		switch (c) {
		case '"':
		case '\\':
		case '/':
			buf[n++] = (char)c;
			break;
		case 'b':
			buf[n++] = '\b';
			break;
		case 'f':
			buf[n++] = '\f';
			break;
		case 'n':
			buf[n++] = '\n';
			break;
		case 'r':
			buf[n++] = '\r';
			break;
		case 't':
			buf[n++] = '\t';
			break;
		case 'u': {
			long hi = hex4(p, i + 2), lo;
			unsigned long cp;

			if (hi < 0 || i + 6 > end) {
				fail(p, i, "invalid \\u escape (\\u and 4 hex digits)");
				goto bad;
			}
			cp = (unsigned long)hi;
			/* A lone \udc80..\udcff is a byte that is no UTF-8, as the
			 * shim writes a label's (gg_text_json_escape_bytes) and
			 * Python's surrogateescape reads it: the byte itself. */
			if (hi >= 0xdc80 && hi <= 0xdcff) {
				buf[n++] = (char)(hi - 0xdc00);
				i += 6;
				continue;
			}
			if (hi >= 0xdc00 && hi <= 0xdfff) {
				fail(p, i, "unpaired surrogate \\u%04lx (a low surrogate first)", cp);
				goto bad;
			}
			if (hi >= 0xd800 && hi <= 0xdbff) {
				if (i + 12 > end || p->s[i + 6] != '\\' || p->s[i + 7] != 'u' ||
				    (lo = hex4(p, i + 8)) < 0xdc00 || lo > 0xdfff) {
					fail(p, i,
					     "unpaired surrogate \\u%04lx (no low "
					     "surrogate after it)",
					     cp);
					goto bad;
				}
				cp = 0x10000 + ((cp - 0xd800) << 10) + ((unsigned long)lo - 0xdc00);
				i += 6;
			}
			n += gg_text_utf8_put(buf + n, (uint32_t)cp);
			i += 6;
			continue;
		}
		default:
			if (c >= 0x20 && c < 0x7f)
				fail(p, i, "invalid escape '\\%c'", c);
			else
				fail(p, i, "invalid escape (byte 0x%02x after '\\')", c);
			goto bad;
		}
		i += 2;
	}
	buf[n] = '\0';
	give_back(p, buf, end - open, n + 1);
	*out = buf;
	*out_len = n;
	p->pos = end + 1;
	return true;
bad:
	return false;
}

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static struct gg_json *parse_number(struct parser *p)
{
	size_t i = p->pos;
	struct gg_json *v;

	if (i < p->len && p->s[i] == '-')
		i++;
	if (i < p->len && p->s[i] == '0') {
		i++;
		if (i < p->len && is_digit((unsigned char)p->s[i])) {
			fail(p, p->pos, "invalid number (a leading zero)");
			return NULL;
		}
	} else if (i < p->len && is_digit((unsigned char)p->s[i])) {
		while (i < p->len && is_digit((unsigned char)p->s[i]))
			i++;
	} else {
		fail(p, p->pos, "invalid number");
		return NULL;
	}
	if (i < p->len && p->s[i] == '.') {
		if (++i >= p->len || !is_digit((unsigned char)p->s[i])) {
			fail(p, p->pos, "invalid number (no digit after '.')");
			return NULL;
		}
		while (i < p->len && is_digit((unsigned char)p->s[i]))
			i++;
	}
	if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
		i++;
		if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
			i++;
		if (i >= p->len || !is_digit((unsigned char)p->s[i])) {
			fail(p, p->pos, "invalid number (no digit in the exponent)");
			return NULL;
		}
		while (i < p->len && is_digit((unsigned char)p->s[i]))
			i++;
	}
	v = new_value(p, GG_JSON_NUMBER);
	if (!v)
		return NULL;
	v->u.number.text = take(p, i - p->pos + 1, 1);
	if (!v->u.number.text)
		return NULL;
	memcpy(v->u.number.text, p->s + p->pos, i - p->pos);
	v->u.number.text[i - p->pos] = '\0';
	v->u.number.value = strtod(v->u.number.text, NULL);
	p->pos = i;
	v->end = i;
	return v;
}

static struct gg_json *parse_value(struct parser *p, unsigned depth);

/* The items from @base up, copied to the tree: the array's own, exactly
 * as many. */
static bool close_array(struct parser *p, struct gg_json *v, size_t base)
{
	size_t n = p->nitems - base;

	v->u.array.items = take(p, n * sizeof(*p->items), alignof(struct gg_json *));
	if (!v->u.array.items)
		return false;
	memcpy(v->u.array.items, p->items + base, n * sizeof(*p->items));
	v->u.array.len = n;
	p->nitems = base;
	return true;
}

static bool close_object(struct parser *p, struct gg_json *v, size_t base)
{
	size_t n = p->nmembers - base;

	v->u.object.members = take(p, n * sizeof(*p->members), alignof(struct gg_json_member));
	if (!v->u.object.members)
		return false;
	memcpy(v->u.object.members, p->members + base, n * sizeof(*p->members));
	v->u.object.len = n;
	p->nmembers = base;
	return true;
}

static struct gg_json *parse_array(struct parser *p, unsigned depth)
{
	struct gg_json *v = new_value(p, GG_JSON_ARRAY);
	size_t base = p->nitems;

	if (!v)
		return NULL;
	p->pos++;
	skip_space(p);
	if (peek(p) == ']') {
		v->end = ++p->pos;
		return v;
	}
	for (;;) {
		struct gg_json *item;

		skip_space(p);
		item = parse_value(p, depth + 1);
		if (!item)
			return NULL;
		if (!gg_cli_grow((void **)&p->items, &p->items_cap, p->nitems, sizeof(item))) {
			fail(p, p->pos, "out of memory");
			return NULL;
		}
		p->items[p->nitems++] = item;
		skip_space(p);
		if (peek(p) == ',') {
			p->pos++;
			continue;
		}
		if (peek(p) == ']')
			break;
		if (peek(p) < 0)
			fail(p, p->pos, "unexpected end of input (expected ',' or ']')");
		else
			fail(p, p->pos, "expected ',' or ']'");
		return NULL;
	}
	if (!close_array(p, v, base))
		return NULL;
	v->end = ++p->pos;
	return v;
}

static struct gg_json *parse_object(struct parser *p, unsigned depth)
{
	struct gg_json *v = new_value(p, GG_JSON_OBJECT);
	size_t base = p->nmembers;

	if (!v)
		return NULL;
	p->pos++;
	skip_space(p);
	if (peek(p) == '}') {
		v->end = ++p->pos;
		return v;
	}
	for (;;) {
		struct gg_json_member m = { 0 };

		skip_space(p);
		if (peek(p) != '"') {
			if (peek(p) < 0)
				fail(p, p->pos, "unexpected end of input (expected a string key)");
			else
				fail(p, p->pos, "expected a string key");
			return NULL;
		}
		if (!parse_string(p, &m.key, &m.key_len))
			return NULL;
		skip_space(p);
		if (peek(p) != ':') {
			if (peek(p) < 0)
				fail(p, p->pos, "unexpected end of input (expected ':')");
			else
				fail(p, p->pos, "expected ':'");
			return NULL;
		}
		p->pos++;
		skip_space(p);
		m.value = parse_value(p, depth + 1);
		if (!m.value)
			return NULL;
		if (!gg_cli_grow((void **)&p->members, &p->members_cap, p->nmembers, sizeof(m))) {
			fail(p, p->pos, "out of memory");
			return NULL;
		}
		p->members[p->nmembers++] = m;
		skip_space(p);
		if (peek(p) == ',') {
			p->pos++;
			continue;
		}
		if (peek(p) == '}')
			break;
		if (peek(p) < 0)
			fail(p, p->pos, "unexpected end of input (expected ',' or '}')");
		else
			fail(p, p->pos, "expected ',' or '}'");
		return NULL;
	}
	if (!close_object(p, v, base))
		return NULL;
	v->end = ++p->pos;
	return v;
}

static bool word_at(const struct parser *p, const char *w)
{
	size_t n = strlen(w);

	return p->len - p->pos >= n && memcmp(p->s + p->pos, w, n) == 0;
}

static bool is_word_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}

/* A value starting at p->pos (no space before it). */
static struct gg_json *parse_value(struct parser *p, unsigned depth)
{
	static const struct {
		const char *word;
		enum gg_json_type type;
		bool value;
	} literals[] = {
		{ "true", GG_JSON_BOOL, true },
		{ "false", GG_JSON_BOOL, false },
		{ "null", GG_JSON_NULL, false },
	};
	int c = peek(p);
	struct gg_json *v;

	if (depth > GG_JSON_MAX_DEPTH) {
		fail(p, p->pos, "nesting deeper than %d levels", GG_JSON_MAX_DEPTH);
		return NULL;
	}
	if (c == '{')
		return parse_object(p, depth);
	if (c == '[')
		return parse_array(p, depth);
	if (c == '-' || is_digit(c))
		return parse_number(p);
	if (c == '"') {
		v = new_value(p, GG_JSON_STRING);
		if (!v)
			return NULL;
		if (!parse_string(p, &v->u.string.s, &v->u.string.len))
			return NULL;
		v->end = p->pos;
		return v;
	}
	for (size_t i = 0; i < sizeof(literals) / sizeof(literals[0]); i++) {
		size_t n = strlen(literals[i].word);

		if (!word_at(p, literals[i].word) ||
		    (p->pos + n < p->len && is_word_char((unsigned char)p->s[p->pos + n])))
			continue;
		v = new_value(p, literals[i].type);
		if (!v)
			return NULL;
		v->u.boolean = literals[i].value;
		p->pos += n;
		v->end = p->pos;
		return v;
	}
	if (c < 0)
		fail(p, p->pos, "unexpected end of input (expected a value)");
	else if (is_word_char(c))
		fail(p, p->pos,
		     "invalid literal (expected true, false, null, a number, a string, "
		     "an array or an object)");
	else if (c >= 0x20 && c < 0x7f)
		fail(p, p->pos, "expected a value, found '%c'", c);
	else
		fail(p, p->pos, "expected a value, found byte 0x%02x", (unsigned)c);
	return NULL;
}

struct gg_json *gg_json_parse(const char *text, size_t len, struct gg_json_error *err)
{
	struct parser p = { .s = text, .len = len, .line = 1, .col = 1, .err = err };
	struct document *doc = NULL;
	struct gg_json *root;

	if (err)
		memset(err, 0, sizeof(*err));
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) /* a byte order mark */
		p.pos = p.line_start = p.col_pos = 3;
	skip_space(&p);
	if (p.pos == p.len) {
		fail(&p, p.pos, "empty document (expected a value)");
		return NULL;
	}
	root = parse_value(&p, 1);
	skip_space(&p);
	if (root && p.pos < p.len)
		fail(&p, p.pos, "unexpected data after the JSON value");
	else if (root && !(doc = malloc(sizeof(*doc))))
		fail(&p, p.pos, "out of memory");
	free(p.items);
	free(p.members);
	if (!doc) {
		free_blocks(p.blocks);
		return NULL;
	}
	/* Nothing points at the root: its copy in the document is the root. */
	doc->root = *root;
	doc->blocks = p.blocks;
	return &doc->root;
}

char *gg_json_read_fd(int fd, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);

	if (!buf)
		return NULL;
	for (;;) {
		ssize_t got;

		if (cap - n < 2) {
			char *bigger = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);

			if (!bigger) {
				free(buf);
				errno = ENOMEM;
				return NULL;
			}
			buf = bigger;
			cap *= 2;
		}
		got = read(fd, buf + n, cap - n - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int e = errno;

			free(buf);
			errno = e;
			return NULL;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

struct gg_json *gg_json_parse_file(const char *path, struct gg_json_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct gg_json *root;
	size_t len;
	char *text;

	if (fd >= 0) {
		text = gg_json_read_fd(fd, &len);
		if (!text) {
			int e = errno;

			close(fd);
			errno = e;
		} else {
			close(fd);
		}
	} else {
		text = NULL;
	}
	if (!text) {
		if (err) {
			memset(err, 0, sizeof(*err));
			snprintf(err->message, sizeof(err->message), "%s", strerror(errno));
		}
		return NULL;
	}
	root = gg_json_parse(text, len, err);
	free(text);
	return root;
}

void gg_json_free(struct gg_json *v)
{
	struct document *doc = (struct document *)v; /* the root is its first member */

	if (!doc)
		return;
	free_blocks(doc->blocks);
	free(doc);
}

const char *gg_json_type_name(enum gg_json_type type)
{
	switch (type) {
	case GG_JSON_NULL:
		return "null";
	case GG_JSON_BOOL:
		return "boolean";
	case GG_JSON_NUMBER:
		return "number";
	case GG_JSON_STRING:
		return "string";
	case GG_JSON_ARRAY:
		return "array";
	case GG_JSON_OBJECT:
		return "object";
	}
	return "?";
}

const struct gg_json *gg_json_get(const struct gg_json *obj, const char *key)
{
	size_t n;

	if (!obj || obj->type != GG_JSON_OBJECT || !key)
		return NULL;
	n = strlen(key);
	for (size_t i = obj->u.object.len; i-- > 0;) {
		const struct gg_json_member *m = &obj->u.object.members[i];

		if (m->key_len == n && memcmp(m->key, key, n) == 0)
			return m->value;
	}
	return NULL;
}

size_t gg_json_length(const struct gg_json *v)
{
	if (v && v->type == GG_JSON_ARRAY)
		return v->u.array.len;
	if (v && v->type == GG_JSON_OBJECT)
		return v->u.object.len;
	return 0;
}

const struct gg_json *gg_json_at(const struct gg_json *arr, size_t i)
{
	if (!arr || arr->type != GG_JSON_ARRAY || i >= arr->u.array.len)
		return NULL;
	return arr->u.array.items[i];
}

bool gg_json_is(const struct gg_json *v, enum gg_json_type type)
{
	return v && v->type == type;
}

double gg_json_number(const struct gg_json *v, double def)
{
	return v && v->type == GG_JSON_NUMBER ? v->u.number.value : def;
}

const char *gg_json_string(const struct gg_json *v, const char *def)
{
	return v && v->type == GG_JSON_STRING ? v->u.string.s : def;
}

bool gg_json_bool(const struct gg_json *v, bool def)
{
	return v && v->type == GG_JSON_BOOL ? v->u.boolean : def;
}

/* The exact integer @v holds, if any. */
static bool to_u64(const struct gg_json *v, uint64_t *out)
{
	const char *t;
	uint64_t n = 0;

	if (!v || v->type != GG_JSON_NUMBER)
		return false;
	t = v->u.number.text;
	if (t[0] == '-') {
		/* -0 and friends are 0; anything else negative is not. */
		if (v->u.number.value != 0)
			return false;
		*out = 0;
		return true;
	}
	if (strspn(t, "0123456789") == strlen(t)) {
		for (; *t; t++) {
			unsigned d = (unsigned)(*t - '0');

			if (n > (UINT64_MAX - d) / 10)
				return false;
			n = n * 10 + d;
		}
		*out = n;
		return true;
	}
	/* "1e3", "2.0": exact only while doubles are. */
	if (v->u.number.value >= 0 && v->u.number.value < 9007199254740992.0 &&
	    v->u.number.value == (double)(uint64_t)v->u.number.value) {
		*out = (uint64_t)v->u.number.value;
		return true;
	}
	return false;
}

uint64_t gg_json_u64(const struct gg_json *v, uint64_t def)
{
	uint64_t n;

	return to_u64(v, &n) ? n : def;
}

bool gg_json_is_u64(const struct gg_json *v)
{
	uint64_t n;

	return to_u64(v, &n);
}
