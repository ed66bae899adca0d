/* A small JSON reader (RFC 8259): parses a whole document into a tree of
 * values, for the gpuguard command (report, symbolize). No global state;
 * numbers are converted with strtod, so the process must use the "C" locale
 * (or any locale whose decimal point is '.'), as the gpuguard command does. */
#ifndef GG_TOOLS_JSON_H
#define GG_TOOLS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gg_json_type {
	GG_JSON_NULL,
	GG_JSON_BOOL,
	GG_JSON_NUMBER,
	GG_JSON_STRING,
	GG_JSON_ARRAY,
	GG_JSON_OBJECT,
};

struct gg_json;

struct gg_json_member {
	char *key; /* UTF-8, NUL-terminated (may hold NULs from \u0000) */
	size_t key_len;
	struct gg_json *value;
};

struct gg_json {
	enum gg_json_type type;
	/* Where the value lies in the source text: bytes [start, end), and the
	 * line and column (1-based, columns in characters) of its first byte. */
	size_t start, end;
	unsigned line, column;
	union {
		bool boolean;
		struct {
			double value;
			char *text; /* the number exactly as written */
		} number;
		struct {
			char *s;    /* UTF-8, escapes decoded, NUL-terminated */
			size_t len; /* bytes, without the terminating NUL */
		} string;
		struct {
			struct gg_json **items;
			size_t len;
		} array;
		struct {
			struct gg_json_member *members; /* in document order */
			size_t len;
		} object;
	} u;
};

/* Why a document was refused. line is 0 when the text could not be read at
 * all (then message holds the system's reason); otherwise line and column
 * (1-based, columns in characters) point at the offending character. */
struct gg_json_error {
	unsigned line, column;
	size_t offset;
	char message[160];
};

/* Parse @len bytes of @text (which need not be NUL-terminated). Returns the
 * root value, or NULL with @err filled in (@err may be NULL). Nesting is
 * limited to GG_JSON_MAX_DEPTH levels. */
#define GG_JSON_MAX_DEPTH 512
struct gg_json *gg_json_parse(const char *text, size_t len, struct gg_json_error *err);

/* Read the whole file at @path and parse it. */
struct gg_json *gg_json_parse_file(const char *path, struct gg_json_error *err);

/* Read all of @fd into a malloc'ed, NUL-terminated buffer; its length in *@len.
 * NULL with errno set on failure. */
char *gg_json_read_fd(int fd, size_t *len);

/* Free a tree returned by a parse function, whole (NULL is fine): only its
 * root, never a value inside it, which it holds in blocks of its own. */
void gg_json_free(struct gg_json *v);

/* "null", "boolean", "number", "string", "array", "object". */
const char *gg_json_type_name(enum gg_json_type type);

/* Lookup helpers: each accepts NULL and a value of the wrong type. */

/* The member @key of object @obj (the last one if the key repeats), or NULL. */
const struct gg_json *gg_json_get(const struct gg_json *obj, const char *key);
/* Number of items of an array or members of an object; 0 for anything else. */
size_t gg_json_length(const struct gg_json *v);
/* Item @i of array @arr, or NULL. */
const struct gg_json *gg_json_at(const struct gg_json *arr, size_t i);
bool gg_json_is(const struct gg_json *v, enum gg_json_type type);
/* The value if @v is of the right type, else @def. */
double gg_json_number(const struct gg_json *v, double def);
const char *gg_json_string(const struct gg_json *v, const char *def);
bool gg_json_bool(const struct gg_json *v, bool def);
/* An integer in [0, UINT64_MAX] written without fraction or exponent (or an
 * integral value below 2^53 written with them), exactly; else @def. */
uint64_t gg_json_u64(const struct gg_json *v, uint64_t def);
/* Whether @v holds such an integer. */
bool gg_json_is_u64(const struct gg_json *v);

#endif
