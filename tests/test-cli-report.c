/* The gpuguard command's JSON reader, `gpuguard report` and `gpuguard
 * symbolize`. The commands run in-process with stdout and stderr captured;
 * their inputs are written into a temporary directory. gg_cli_error comes from
 * the file the test executable is linked with. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "harness.h"
#include "json.h"
#include "report.h"

/* ---- helpers ------------------------------------------------------------- */

static char dir[256]; /* the temporary directory of a test (harness.c's fixture) */

static void make_dir(void)
{
	gg_test_dir(dir, sizeof(dir));
}

static void remove_dir(void)
{
	if (dir[0])
		gg_test_dir_remove(dir);
}

/* DIR/NAME, in a static buffer of its own (eight in turn). */
static const char *in_tmp(const char *name)
{
	static char paths[8][PATH_MAX];
	static unsigned next;
	char *p = paths[next++ % 8];

	snprintf(p, PATH_MAX, "%s/%s", dir, name);
	return p;
}

__attribute__((format(printf, 2, 3))) static const char *write_file(const char *name, const char *fmt,
								    ...)
{
	const char *path = in_tmp(name);
	FILE *f = fopen(path, "w");
	va_list ap;

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	cr_assert_eq(fclose(f), 0);
	return path;
}

static char *read_all(FILE *f)
{
	long n;
	char *s;

	cr_assert_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	rewind(f);
	s = calloc(1, (size_t)n + 1);
	cr_assert_not_null(s);
	cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
	return s;
}

struct result {
	int status;
	char *out, *err;
};

/* Run @cmd with the NULL-terminated @args (args[0] is the subcommand's name),
 * standard input from @input (a path, or NULL to leave it), capturing stdout
 * and stderr. */
static struct result run(int (*cmd)(int, char **), const char *input, const char *const *args)
{
	char *argv[64];
	int argc = 0, saved[3];
	FILE *out = tmpfile(), *err = tmpfile();
	struct result r;

	cr_assert(out && err);
	for (; args[argc]; argc++) {
		cr_assert_lt(argc, 63);
		argv[argc] = strdup(args[argc]);
	}
	argv[argc] = NULL;
	fflush(stdout);
	fflush(stderr);
	saved[0] = dup(STDIN_FILENO);
	saved[1] = dup(STDOUT_FILENO);
	saved[2] = dup(STDERR_FILENO);
	if (input) {
		int fd = open(input, O_RDONLY);

		cr_assert_geq(fd, 0);
		dup2(fd, STDIN_FILENO);
		close(fd);
	}
	dup2(fileno(out), STDOUT_FILENO);
	dup2(fileno(err), STDERR_FILENO);
	r.status = cmd(argc, argv);
	fflush(stdout);
	fflush(stderr);
	for (int i = 0; i < 3; i++) {
		dup2(saved[i], i);
		close(saved[i]);
	}
	r.out = read_all(out);
	r.err = read_all(err);
	fclose(out);
	fclose(err);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	return r;
}

#define RUN(cmd, input, ...) run(cmd, input, (const char *const[]){ __VA_ARGS__, NULL })

static void free_result(struct result *r)
{
	free(r->out);
	free(r->err);
}

static size_t count_of(const char *haystack, const char *needle)
{
	size_t n = 0;

	for (const char *p = haystack; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* ---- the JSON reader ----------------------------------------------------- */

static struct gg_json *parse(const char *text)
{
	struct gg_json_error err;
	struct gg_json *v = gg_json_parse(text, strlen(text), &err);

	cr_assert_not_null(v, "%s: line %u, column %u: %s", text, err.line, err.column, err.message);
	return v;
}

Test(json, reads_nested_objects_and_arrays_in_document_order)
{
	struct gg_json *v = parse(" { \"b\": [1, {\"c\": [true, false, null]}, []], \"a\": {} }\n");
	const struct gg_json *b = gg_json_get(v, "b"), *c;

	cr_assert_eq(v->type, GG_JSON_OBJECT);
	cr_assert_eq(gg_json_length(v), 2);
	cr_assert_str_eq(v->u.object.members[0].key, "b");
	cr_assert_str_eq(v->u.object.members[1].key, "a");
	cr_assert_eq(gg_json_length(b), 3);
	cr_assert_eq(gg_json_number(gg_json_at(b, 0), -1), 1);
	c = gg_json_get(gg_json_at(b, 1), "c");
	cr_assert_eq(gg_json_length(c), 3);
	cr_assert_eq(gg_json_bool(gg_json_at(c, 0), false), true);
	cr_assert_eq(gg_json_bool(gg_json_at(c, 1), true), false);
	cr_assert(gg_json_is(gg_json_at(c, 2), GG_JSON_NULL));
	cr_assert(gg_json_is(gg_json_at(b, 2), GG_JSON_ARRAY));
	cr_assert_eq(gg_json_length(gg_json_at(b, 2)), 0);
	cr_assert(gg_json_is(gg_json_get(v, "a"), GG_JSON_OBJECT));
	cr_assert_null(gg_json_get(v, "z"));
	gg_json_free(v);
}

Test(json, decodes_every_escape_and_surrogate_pairs_to_utf8)
{
	struct gg_json *v = parse("[\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t\", \"\\u00e9\\u20AC\", "
				  "\"\\ud83d\\ude00\", \"a\\u0000b\", \"\xc3\xa9 raw\"]");

	cr_assert_str_eq(gg_json_string(gg_json_at(v, 0), NULL), "q\" b\\ s/ \b\f\n\r\t");
	cr_assert_str_eq(gg_json_string(gg_json_at(v, 1), NULL), "\xc3\xa9\xe2\x82\xac");
	cr_assert_str_eq(gg_json_string(gg_json_at(v, 2), NULL), "\xf0\x9f\x98\x80");
	cr_assert_eq(gg_json_at(v, 3)->u.string.len, 3);
	cr_assert_eq(memcmp(gg_json_at(v, 3)->u.string.s, "a\0b", 4), 0);
	cr_assert_str_eq(gg_json_string(gg_json_at(v, 4), NULL), "\xc3\xa9 raw");
	gg_json_free(v);
}

Test(json, keeps_each_number_as_a_double_and_as_written)
{
	struct gg_json *v = parse("[0, -0, 1.5e3, -2.25E-2, 18446744073709551615, "
				  "18446744073709551616, 1e999, 7.0, -1]");

	cr_assert_str_eq(gg_json_at(v, 2)->u.number.text, "1.5e3");
	cr_assert_eq(gg_json_number(gg_json_at(v, 2), 0), 1500.0);
	cr_assert_eq(gg_json_number(gg_json_at(v, 3), 0), -0.0225);
	cr_assert_eq(gg_json_u64(gg_json_at(v, 0), 9), 0);
	cr_assert_eq(gg_json_u64(gg_json_at(v, 1), 9), 0);
	/* Exact beyond 2^53, from the text. */
	cr_assert_eq(gg_json_u64(gg_json_at(v, 4), 9), UINT64_MAX);
	cr_assert_eq(gg_json_u64(gg_json_at(v, 5), 9), 9);
	cr_assert_str_eq(gg_json_at(v, 5)->u.number.text, "18446744073709551616");
	cr_assert_eq(gg_json_u64(gg_json_at(v, 6), 9), 9);
	cr_assert_eq(gg_json_u64(gg_json_at(v, 7), 9), 7);
	cr_assert_eq(gg_json_u64(gg_json_at(v, 8), 9), 9);
	cr_assert_not(gg_json_is_u64(gg_json_at(v, 8)));
	gg_json_free(v);
}

Test(json, lookups_take_null_and_wrong_types_and_give_the_defaults)
{
	struct gg_json *v = parse("{\"n\": 3, \"s\": \"x\", \"k\": 1, \"k\": 2}");

	cr_assert_null(gg_json_get(NULL, "n"));
	cr_assert_null(gg_json_get(gg_json_get(v, "n"), "n"));
	cr_assert_null(gg_json_at(v, 0));
	cr_assert_null(gg_json_at(NULL, 0));
	cr_assert_eq(gg_json_length(NULL), 0);
	cr_assert_eq(gg_json_length(gg_json_get(v, "s")), 0);
	cr_assert_eq(gg_json_number(gg_json_get(v, "s"), 42), 42);
	cr_assert_str_eq(gg_json_string(gg_json_get(v, "n"), "def"), "def");
	cr_assert_eq(gg_json_bool(NULL, true), true);
	cr_assert_eq(gg_json_u64(gg_json_get(v, "s"), 5), 5);
	cr_assert_str_eq(gg_json_string(gg_json_get(v, "s"), NULL), "x");
	/* A repeated key: the last one counts. */
	cr_assert_eq(gg_json_u64(gg_json_get(v, "k"), 0), 2);
	gg_json_free(v);
}

Test(json, values_know_where_they_are_in_the_text)
{
	const char *text = "{\n  \"a\": [1,\n    \"\xc3\xa9\", 22 ]\n}";
	struct gg_json *v = parse(text);
	const struct gg_json *a = gg_json_get(v, "a"), *e = gg_json_at(a, 1), *n = gg_json_at(a, 2);

	cr_assert_eq(a->line, 2);
	cr_assert_eq(a->column, 8);
	cr_assert_eq(text[a->start], '[');
	cr_assert_eq(text[a->end - 1], ']');
	cr_assert_eq(e->line, 3);
	cr_assert_eq(e->column, 5);
	/* Columns count characters: the é is one. */
	cr_assert_eq(n->column, 10);
	cr_assert_eq(n->end - n->start, 2);
	cr_assert_eq(v->end, strlen(text));
	gg_json_free(v);
}

struct bad_doc {
	const char *text;
	unsigned line, column;
	const char *message;
};

Test(json, refuses_malformed_documents_naming_line_column_and_problem)
{
	static const struct bad_doc docs[] = {
		{ "{\"a\" 1}", 1, 6, "expected ':'" },
		{ "{\n  \"a\": 1,\n  \"b\" 2\n}", 3, 7, "expected ':'" },
		{ "{\"a\": 1,}", 1, 9, "expected a string key" },
		{ "{\"a\": 1 \"b\": 2}", 1, 9, "expected ',' or '}'" },
		{ "{a: 1}", 1, 2, "expected a string key" },
		{ "[1 2]", 1, 4, "expected ',' or ']'" },
		{ "[1,2", 1, 5, "unexpected end of input" },
		{ "[1,]", 1, 4, "expected a value, found ']'" },
		{ "\"abc", 1, 1, "unterminated string" },
		{ "[\"ok\", \"a\\q\"]", 1, 10, "invalid escape '\\q'" },
		{ "\"\\u12g4\"", 1, 2, "invalid \\u escape" },
		{ "\"x\\ud800\"", 1, 3, "unpaired surrogate \\ud800" },
		{ "\"\\ud800\\u0041\"", 1, 2, "unpaired surrogate" },
		{ "\"\\udc00\"", 1, 2, "unpaired surrogate \\udc00" },
		{ "\"a\tb\"", 1, 3, "control character U+0009" },
		{ "\"a\nb\"", 1, 3, "control character U+000A" },
		{ "\"\xc3\xa9\xff\"", 1, 3, "invalid UTF-8 byte 0xff" },
		{ "\"\xc0\xaf\"", 1, 2, "invalid UTF-8" },
		{ "01", 1, 1, "invalid number (a leading zero)" },
		{ "[1.]", 1, 2, "no digit after '.'" },
		{ "-", 1, 1, "invalid number" },
		{ "1e+", 1, 1, "no digit in the exponent" },
		{ "+1", 1, 1, "expected a value, found '+'" },
		{ "tru", 1, 1, "invalid literal" },
		{ "nulls", 1, 1, "invalid literal" },
		{ "{} x", 1, 4, "unexpected data after the JSON value" },
		{ "", 1, 1, "empty document" },
		{ "  \n ", 2, 2, "empty document" },
		{ "[\"\xc3\xa9\", x]", 1, 7, "invalid literal" },
	};

	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		struct gg_json_error err;
		struct gg_json *v = gg_json_parse(docs[i].text, strlen(docs[i].text), &err);

		cr_assert_null(v, "accepted: %s", docs[i].text);
		cr_expect_eq(err.line, docs[i].line, "%s: line %u", docs[i].text, err.line);
		cr_expect_eq(err.column, docs[i].column, "%s: column %u", docs[i].text, err.column);
		cr_expect(strstr(err.message, docs[i].message), "%s: \"%s\", expected \"%s\"",
			  docs[i].text, err.message, docs[i].message);
	}
}

/* The tree lives in blocks of its own (tools/json.c): strings longer than a
 * block's quarter, arrays of many items nested in arrays and objects, and
 * every value after them read back whole and in order. */
Test(json, reads_long_strings_and_many_items_whole)
{
	enum {
		LONG = 300000,
		ITEMS = 100000
	};
	size_t cap = LONG + 32 * ITEMS + 256, n = 0;
	char *text = malloc(cap);
	struct gg_json *v;
	const struct gg_json *arr, *s;

	cr_assert_not_null(text);
	n += (size_t)snprintf(text + n, cap - n, "{ \"long\": \"");
	for (size_t i = 0; i < LONG; i++)
		text[n++] = (char)('a' + i % 26);
	n += (size_t)snprintf(text + n, cap - n, "\", \"items\": [");
	for (int i = 0; i < ITEMS; i++)
		n += (size_t)snprintf(text + n, cap - n, "%s[%d, {\"k\": \"%d\"}]", i ? "," : "", i, i);
	n += (size_t)snprintf(text + n, cap - n, "], \"after\": \"x\\u00e9\", \"n\": 1.5e3 }");
	v = parse(text);
	s = gg_json_get(v, "long");
	cr_assert_eq(s->u.string.len, LONG);
	for (size_t i = 0; i < LONG; i += 997)
		cr_assert_eq(s->u.string.s[i], 'a' + i % 26, "byte %zu", i);
	cr_assert_eq(s->u.string.s[LONG], '\0');
	arr = gg_json_get(v, "items");
	cr_assert_eq(gg_json_length(arr), ITEMS);
	for (int i = 0; i < ITEMS; i += 7) {
		const struct gg_json *pair = gg_json_at(arr, (size_t)i);
		char want[16];

		cr_assert_eq(gg_json_length(pair), 2);
		cr_assert_eq(gg_json_u64(gg_json_at(pair, 0), 0), (uint64_t)i);
		snprintf(want, sizeof(want), "%d", i);
		cr_assert_str_eq(gg_json_string(gg_json_get(gg_json_at(pair, 1), "k"), ""), want);
	}
	cr_assert_str_eq(gg_json_string(gg_json_get(v, "after"), ""), "x\xc3\xa9");
	cr_assert_str_eq(gg_json_get(v, "n")->u.number.text, "1.5e3");
	cr_assert_eq(gg_json_length(v), 4);
	gg_json_free(v);
	free(text);
}

Test(json, refuses_nesting_deeper_than_the_limit)
{
	size_t n = GG_JSON_MAX_DEPTH + 1;
	char *deep = malloc(2 * n + 1), *ok = malloc(2 * n + 1);
	struct gg_json_error err;
	struct gg_json *v;

	memset(deep, '[', n);
	memset(deep + n, ']', n);
	deep[2 * n] = '\0';
	cr_assert_null(gg_json_parse(deep, 2 * n, &err));
	cr_assert(strstr(err.message, "nesting deeper than"), "%s", err.message);
	cr_assert_eq(err.column, GG_JSON_MAX_DEPTH + 1);
	memset(ok, '[', n - 1);
	memset(ok + n - 1, ']', n - 1);
	v = gg_json_parse(ok, 2 * (n - 1), NULL);
	cr_assert_not_null(v);
	gg_json_free(v);
	free(deep);
	free(ok);
}

Test(json, reads_a_file_and_names_the_system_error_of_a_missing_one)
{
	struct gg_json_error err;
	struct gg_json *v;

	make_dir();
	v = gg_json_parse_file(write_file("f.json", "\xef\xbb\xbf{\"k\": \"v\"}"), &err);
	cr_assert_not_null(v, "%s", err.message);
	cr_assert_str_eq(gg_json_string(gg_json_get(v, "k"), NULL), "v");
	gg_json_free(v);
	cr_assert_null(gg_json_parse_file(in_tmp("absent.json"), &err));
	cr_assert_eq(err.line, 0);
	cr_assert_str_eq(err.message, strerror(ENOENT));
	remove_dir();
}

/* ---- gpuguard report ----------------------------------------------------- */

/* Run Debian's python3 on @script with the arguments @args (NULL-ended),
 * which must exit 0 or 3; its output (stdout and stderr) in *@out (free with
 * free()). Whether it exited 0. */
static bool python(const char *script, const char *const *args, char **out)
{
	char cmd[PATH_MAX * 4 + 8192];
	size_t n;
	FILE *p;
	int status;

	n = (size_t)snprintf(cmd, sizeof(cmd), "/usr/bin/python3 -c \"$(cat <<'EOF'\n%sEOF\n)\"",
			     script);
	for (; *args; args++)
		n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, " '%s'", *args);
	cr_assert_lt(n + 8, sizeof(cmd));
	strcat(cmd, " 2>&1");
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	*out = calloc(1, 65536);
	cr_assert_not_null(*out);
	fread(*out, 1, 65535, p); /* the first errors are enough */
	status = pclose(p);
	cr_assert(WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3), "%s",
		  *out);
	return WEXITSTATUS(status) == 0;
}

/* The errors of the summary @path against docs/summary.schema.json,
 * NULL when it validates. Free with free(). */
static char *schema_errors(const char *path)
{
	static const char script[] = "import json, sys, jsonschema\n"
				     "schema = json.load(open(sys.argv[2]))\n"
				     "v = jsonschema.Draft202012Validator(schema)\n"
				     "errors = list(v.iter_errors(json.load(open(sys.argv[1]))))\n"
				     "for e in errors: print('%s: %s' % (e.json_path, e.message))\n"
				     "sys.exit(3 if errors else 0)\n";
	char *out;

	if (python(script, (const char *[]){ path, GG_SOURCE_ROOT "/docs/summary.schema.json", NULL },
		   &out)) {
		free(out);
		return NULL;
	}
	return out;
}

/* The summaries written here are what the shim writes: valid. */
static void assert_valid(const char *path)
{
	char *why = schema_errors(path);

	cr_assert_null(why, "%s does not follow docs/summary.schema.json:\n%s", path, why);
}

/* A summary as the shim writes it (gpuguard(1), FILES), of the program @exe
 * (JSON text) with red zones of @redzone bytes, and the members @extra ("" or
 * JSON members, each followed by a comma) before "errors". */
static const char *summary_full(const char *name, int pid, const char *exe, int redzone,
				const char *unresolved, const char *violations, const char *extra,
				int errors)
{
	return write_file(
		name,
		"{ \"schema\": 1, \"pid\": %d, \"exe\": \"%s\", \"sealed\": true, "
		"\"seals\": 1,\n"
		"  \"config\": { \"redzone\": %d, \"fill\": 238, \"allow_unresolved\": false, "
		"\"verbosity\": 1,\n"
		"    \"boundary\": \"sync\", \"signal\": 0, \"redzone_min_idx\": 0, "
		"\"check_on_free\": true,\n"
		"    \"halt_on_error\": false, \"skip_symbols\": \"\", \"expected_absent\": null },\n"
		"  \"lookups\": { \"total\": 12, \"resolved\": 10, \"unresolved_required\": 1,\n"
		"               \"unresolved_expected\": 1, \"late_misses\": 0, "
		"\"unresolved\": 1, \"calls\": 14, \"failed_calls\": 4 },\n"
		"  \"unresolved\": [%s],\n"
		"  \"allocations\": { \"calls\": 10, \"failed\": 0, \"padded\": 9,\n"
		"      \"unpadded_fallbacks\": 0, \"live\": 2, \"live_bytes\": 2048 },\n"
		"  \"redzones\": { \"scans\": 2, \"checked\": 18, \"unchecked\": 0, "
		"\"registry_bytes\": 4096,\n"
		"      \"scan_driver_calls\": 2, \"batched\": true },\n"
		"  \"violations\": [%s],\n"
		"  %s\"errors\": %d }\n",
		pid, exe, redzone, unresolved, violations, extra, errors);
}

static const char *summary_unchecked(const char *name, int pid, const char *unresolved,
				     const char *violations, int errors)
{
	return summary_full(name, pid, "/path/app", 64, unresolved, violations, "", errors);
}

static const char *summary(const char *name, int pid, const char *unresolved, const char *violations,
			   int errors)
{
	const char *path = summary_unchecked(name, pid, unresolved, violations, errors);

	assert_valid(path);
	return path;
}

#define MISSING_KERNEL                                                                            \
	"{ \"module\": \"app+0x2040\", \"function\": \"missing_kernel\",\n"                       \
	"      \"expected_absent\": false, \"count\": 1, \"result\": \"CUDA_ERROR_NOT_FOUND\",\n" \
	"      \"site\": { \"address\": \"0x55d0c0de1234\", \"object\": \"/path/app\",\n"         \
	"                \"offset\": \"0x1234\", \"symbol\": \"main+0x56\" } }"
#define MISSING_KERNEL_ELSEWHERE                                                                  \
	"{ \"module\": \"app+0x2040\", \"function\": \"missing_kernel\",\n"                       \
	"      \"expected_absent\": false, \"count\": 2, \"result\": \"CUDA_ERROR_NOT_FOUND\",\n" \
	"      \"site\": { \"address\": \"0x55d0c0de1260\", \"object\": \"/path/app\",\n"         \
	"                \"offset\": \"0x1260\", \"symbol\": \"main+0x80\" } }"
#define OPTIONAL_KERNEL                                                                          \
	"{ \"module\": \"app+0x2040\", \"function\": \"fast_path_sm100\",\n"                     \
	"      \"expected_absent\": true, \"count\": 3, \"result\": \"CUDA_ERROR_NOT_FOUND\",\n" \
	"      \"site\": { \"address\": \"0x55d0c0de1258\", \"object\": \"/path/app\",\n"        \
	"                \"offset\": \"0x1258\", \"symbol\": null } }"
#define VIOLATION(index)                                                                 \
	"{ \"index\": " #index ", \"user_bytes\": 1000, \"pad_bytes\": 64,\n"            \
	"      \"first\": 0, \"last\": 7, \"changed\": 8, \"first_value\": 65, "         \
	"\"expected\": 238,\n"                                                           \
	"      \"detected_by\": \"scan\", \"site\": { \"address\": \"0x55d0c0de1300\", " \
	"\"object\": \"/path/app\", \"offset\": \"0x1300\", \"symbol\": \"load_weights+0x56\" } }"

/* Three processes of a job: 4711 misses a kernel (from two call sites) and
 * overflows allocation #7, 4712 misses the same kernel and overflows #9,
 * 4713 is clean. */
static void job_files(const char **a, const char **b, const char **clean)
{
	make_dir();
	*a = summary("run.4711.json", 4711,
		     MISSING_KERNEL ", " OPTIONAL_KERNEL ", " MISSING_KERNEL_ELSEWHERE, VIOLATION(7),
		     2);
	*b = summary("run.4712.json", 4712, MISSING_KERNEL, VIOLATION(9), 1);
	*clean = summary("run.4713.json", 4713, "", "", 0);
}

Test(report, summarizes_one_file_with_its_lookups_and_violations)
{
	const char *a, *b, *clean;
	struct result r;

	job_files(&a, &b, &clean);
	r = RUN(gg_cmd_report, NULL, "report", a);
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_assert_str_eq(r.err, "");
	cr_expect(strstr(r.out, "process 4711: /path/app, sealed (1 seal), 2 errors\n"), "%s", r.out);
	cr_expect(strstr(r.out, "  lookups: 12 kernels, 10 resolved, 1 required unresolved, "
				"1 expected absent, 0 late misses\n"),
		  "%s", r.out);
	cr_expect(strstr(r.out, "  allocations: 10 calls, 0 failed, 9 padded, 0 unpadded "
				"fallbacks, 2 live (2048 bytes)\n"),
		  "%s", r.out);
	cr_expect(strstr(r.out, "  red zones: 2 scans, 18 bands checked, 0 unchecked\n"), "%s", r.out);
	cr_expect(strstr(r.out, "unresolved kernel lookups: 2 (1 required, 1 expected absent)\n"
				"  REQUIRED  app+0x2040::missing_kernel  3x\n"
				"            1x CUDA_ERROR_NOT_FOUND at main+0x56 (app+0x1234)\n"
				"            2x CUDA_ERROR_NOT_FOUND at main+0x80 (app+0x1260)\n"
				"  expected  app+0x2040::fast_path_sm100  3x\n"
				"            3x CUDA_ERROR_NOT_FOUND at app+0x1258\n"),
		  "%s", r.out);
	cr_expect(strstr(r.out, "red zone violations: 1\n"
				"  allocation #7 (1000 bytes, 64-byte band): 8 bytes changed\n"
				"      at offsets 0..7 past the end, first 0x41 (expected 0xee), "
				"detected by scan\n"
				"      allocated at load_weights+0x56 (app+0x1300)\n"),
		  "%s", r.out);
	cr_expect(strstr(r.out, "\nerrors: 2\n"), "%s", r.out);
	/* One process: no pid lists. */
	cr_expect_null(strstr(r.out, "pid"), "%s", r.out);
	free_result(&r);
	remove_dir();
}

Test(report, says_one_of_a_kind_in_the_singular)
{
	const char *one;
	struct result r;

	make_dir();
	one = write_file(
		"one.json",
		"{ \"schema\": 1, \"pid\": 4711, \"exe\": \"/path/app\", \"sealed\": true, "
		"\"seals\": 1,\n"
		"  \"config\": { \"redzone\": 64, \"fill\": 238, \"allow_unresolved\": false, "
		"\"verbosity\": 1,\n"
		"    \"boundary\": \"sync\", \"signal\": 0, \"redzone_min_idx\": 0, "
		"\"check_on_free\": true,\n"
		"    \"halt_on_error\": false, \"skip_symbols\": \"\", \"expected_absent\": null },\n"
		"  \"lookups\": { \"total\": 1, \"resolved\": 1, \"unresolved_required\": 0,\n"
		"    \"unresolved_expected\": 0, \"late_misses\": 1, \"unresolved\": 0, "
		"\"calls\": 2, \"failed_calls\": 1 },\n"
		"  \"unresolved\": [],\n"
		"  \"allocations\": { \"calls\": 1, \"failed\": 0, \"padded\": 1,\n"
		"      \"unpadded_fallbacks\": 1, \"live\": 1, \"live_bytes\": 1 },\n"
		"  \"redzones\": { \"scans\": 1, \"checked\": 1, \"unchecked\": 0, \"registry_bytes\": "
		"64,\n"
		"      \"scan_driver_calls\": 1, \"batched\": false },\n"
		"  \"violations\": [ { \"index\": 0, \"user_bytes\": 1, \"pad_bytes\": 16,\n"
		"      \"first\": 3, \"last\": 3, \"changed\": 1, \"first_value\": 65, "
		"\"expected\": 238, \"detected_by\": \"free\", \"site\": { \"address\": \"0x1300\", "
		"\"object\": \"/path/app\", \"offset\": \"0x1300\", \"symbol\": null } } ],\n"
		"  \"errors\": 1 }\n");
	assert_valid(one);
	r = RUN(gg_cmd_report, NULL, "report", one);
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_expect(strstr(r.out, "process 4711: /path/app, sealed (1 seal), 1 error\n"), "%s", r.out);
	cr_expect(strstr(r.out, "  lookups: 1 kernel, 1 resolved, 0 required unresolved, "
				"0 expected absent, 1 late miss\n"),
		  "%s", r.out);
	cr_expect(strstr(r.out, "  allocations: 1 call, 0 failed, 1 padded, 1 unpadded "
				"fallback, 1 live (1 byte)\n"),
		  "%s", r.out);
	cr_expect(strstr(r.out, "  red zones: 1 scan, 1 band checked, 0 unchecked\n"), "%s", r.out);
	cr_expect(strstr(r.out, "  allocation #0 (1 byte, 16-byte band): 1 byte changed\n"
				"      at offset 3 past the end, first 0x41 (expected 0xee), "
				"detected by free\n"),
		  "%s", r.out);
	free_result(&r);
	remove_dir();
}

Test(report, exits_zero_for_a_clean_file)
{
	const char *a, *b, *clean;
	struct result r;

	job_files(&a, &b, &clean);
	r = RUN(gg_cmd_report, NULL, "report", clean);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_expect(strstr(r.out, "unresolved kernel lookups: none\n"), "%s", r.out);
	cr_expect(strstr(r.out, "red zone violations: none\n"), "%s", r.out);
	cr_expect(strstr(r.out, "\nerrors: 0\n"), "%s", r.out);
	free_result(&r);
	remove_dir();
}

Test(report, merges_the_same_missing_kernel_across_processes)
{
	const char *a, *b, *clean;
	struct result r;

	job_files(&a, &b, &clean);
	r = RUN(gg_cmd_report, NULL, "report", clean, b, a);
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_expect(strstr(r.out, "gpuguard report: 3 processes\n"), "%s", r.out);
	cr_expect_eq(count_of(r.out, "app+0x2040::missing_kernel"), 1, "%s", r.out);
	cr_expect(strstr(r.out, "  REQUIRED  app+0x2040::missing_kernel  4x in 2 processes: "
				"4711, 4712\n"
				"            2x CUDA_ERROR_NOT_FOUND at main+0x56 (app+0x1234)\n"
				"            2x CUDA_ERROR_NOT_FOUND at main+0x80 (app+0x1260) "
				"(pid 4711)\n"),
		  "%s", r.out);
	/* Seen in one process only: its pid is named. */
	cr_expect(strstr(r.out, "  expected  app+0x2040::fast_path_sm100  3x in 1 process: "
				"4711\n"),
		  "%s", r.out);
	cr_expect(strstr(r.out, "unresolved kernel lookups: 2 (1 required, 1 expected absent)\n"), "%s",
		  r.out);
	/* Totals over the three. */
	cr_expect(strstr(r.out, "totals:\n  lookups: 36 kernels, 30 resolved, 3 required "
				"unresolved, 3 expected absent, 0 late misses\n"),
		  "%s", r.out);
	cr_expect(strstr(r.out, "  allocations: 30 calls, 0 failed, 27 padded, 0 unpadded "
				"fallbacks, 6 live (6144 bytes)\n"),
		  "%s", r.out);
	cr_expect(strstr(r.out, "\nerrors: 3 in 2 of 3 processes (4711: 2, 4712: 1)\n"), "%s", r.out);
	free_result(&r);
	remove_dir();
}

Test(report, lists_each_violation_with_its_pid_and_processes_by_pid)
{
	const char *a, *b, *clean;
	const char *p1, *p2, *p3;
	struct result r;

	job_files(&a, &b, &clean);
	r = RUN(gg_cmd_report, NULL, "report", b, clean, a);
	cr_assert_eq(r.status, 1);
	cr_expect(strstr(r.out, "red zone violations: 2\n"
				"  pid 4711: allocation #7 (1000 bytes, 64-byte band)"),
		  "%s", r.out);
	cr_expect(strstr(r.out, "  pid 4712: allocation #9 (1000 bytes, 64-byte band)"), "%s", r.out);
	p1 = strstr(r.out, "  process 4711: /path/app, sealed (1 seal), 2 errors [");
	p2 = strstr(r.out, "  process 4712: /path/app, sealed (1 seal), 1 error [");
	p3 = strstr(r.out, "  process 4713: /path/app, sealed (1 seal), 0 errors [");
	cr_assert(p1 && p2 && p3, "%s", r.out);
	cr_expect(p1 < p2 && p2 < p3, "%s", r.out);
	cr_expect(strstr(p1, "run.4711.json]\n"), "%s", r.out);
	free_result(&r);
	remove_dir();
}

Test(report, groups_the_same_violation_of_several_processes)
{
	struct result r;
	const char *a, *b;

	make_dir();
	a = summary("a.json", 10, "", VIOLATION(7), 1);
	b = summary("b.json", 11, "", VIOLATION(7), 1);
	r = RUN(gg_cmd_report, NULL, "report", a, b);
	cr_assert_eq(r.status, 1);
	/* Grouped for reading, counted once each. */
	cr_expect(strstr(r.out, "red zone violations: 2, in 1 entry (alike ones grouped)\n"
				"  pids 10, 11: allocation #7 "),
		  "%s", r.out);
	free_result(&r);
	remove_dir();
}

Test(report, names_the_file_line_and_column_of_a_malformed_file)
{
	const char *a, *b, *clean, *bad;
	char want[PATH_MAX + 64];
	struct result r;

	job_files(&a, &b, &clean);
	bad = write_file("run.4714.json", "{ \"schema\": 1,\n  \"pid\": 4714,\n  \"exe\" \"x\" }\n");
	r = RUN(gg_cmd_report, NULL, "report", a, bad);
	cr_assert_eq(r.status, 2);
	snprintf(want, sizeof(want), "gpuguard: report: %s: line 3, column 9: expected ':'\n", bad);
	cr_expect_str_eq(r.err, want);
	/* Named and skipped: the readable one is still reported (gpuguard(1),
	 * report). */
	snprintf(want, sizeof(want), "gpuguard report: %s\n", a);
	cr_expect_eq(strncmp(r.out, want, strlen(want)), 0, "%s", r.out);
	cr_expect(strstr(r.out, "\nskipped: 1 file that could not be read (named on standard "
				"error)\n"),
		  "%s", r.out);
	free_result(&r);
	remove_dir();
}

/* A summary cut short (its process killed while writing it): the place
 * named is where the text stops, and the message says that it stops. */
Test(report, names_the_line_and_column_where_a_truncated_file_ends)
{
	const char *cut;
	char want[PATH_MAX + 96];
	struct result r;

	make_dir();
	cut = write_file("run.4714.json", "{ \"schema\": 1, \"pid\": 4714,\n"
					  "  \"lookups\": { \"total\": 1");
	r = RUN(gg_cmd_report, NULL, "report", cut);
	cr_assert_eq(r.status, 2);
	snprintf(want, sizeof(want),
		 "gpuguard: report: %s: line 2, column 26: unexpected end of "
		 "input (expected ',' or '}')\n",
		 cut);
	cr_expect_str_eq(r.err, want);
	cr_expect_str_eq(r.out, "");
	free_result(&r);
	remove_dir();
}

Test(report, a_set_of_unreadable_files_only_reports_nothing_and_fails)
{
	struct result r;

	make_dir();
	r = RUN(gg_cmd_report, NULL, "report", "/nonexistent/run.1.json", "/nonexistent/run.2.json");
	cr_assert_eq(r.status, 2);
	cr_expect_str_eq(r.out, "");
	cr_expect(strstr(r.err, "/nonexistent/run.1.json") && strstr(r.err, "/nonexistent/run.2.json"),
		  "%s", r.err);
	free_result(&r);
	remove_dir();
}

/* The text of the file @path. Free with free(). */
static char *file_text(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text;

	cr_assert_not_null(f, "%s", path);
	text = read_all(f);
	fclose(f);
	return text;
}

/* A valid summary (one unresolved kernel, one violation) with the text from
 * @from to the end of the first @until after it (or @from alone when @until
 * is NULL) replaced by @to, at DIR/x.json. */
static const char *broken_summary(const char *from, const char *until, const char *to)
{
	char *text = file_text(summary("x.json", 1, MISSING_KERNEL, VIOLATION(7), 2));
	char *at = strstr(text, from), *end;
	const char *path;

	cr_assert_not_null(at, "%s", from);
	end = at + strlen(from);
	if (until) {
		end = strstr(end, until);
		cr_assert_not_null(end, "%s", until);
		end += strlen(until);
	}
	path = write_file("x.json", "%.*s%s%s", (int)(at - text), text, to, end);
	free(text);
	return path;
}

/* Refused (exit 2, nothing on stdout, a message naming the file and what is
 * wrong), and invalid against docs/summary.schema.json too. */
static void expect_refused(const char *path, const char *what, const char *message)
{
	struct result r = RUN(gg_cmd_report, NULL, "report", path);
	char *why = schema_errors(path);
	char want[PATH_MAX + 300];

	snprintf(want, sizeof(want), "gpuguard: report: %s: ", path);
	cr_expect_eq(r.status, 2, "%s: %s", what, r.out);
	cr_expect(strstr(r.err, want), "%s: %s", what, r.err);
	cr_expect(strstr(r.err, message), "%s: %s", what, r.err);
	cr_expect_str_eq(r.out, "", "%s", what);
	cr_expect_not_null(why, "%s: the schema accepts it", what);
	free(why);
	free_result(&r);
}

Test(report, refuses_what_is_not_a_schema_1_summary)
{
	struct {
		const char *text, *message;
	} cases[] = {
		{ "[1]", "line 1, column 1: not a gpuguard summary (a JSON array, not an object)" },
		{ "{\"pid\": 1}", "not a gpuguard summary (no \"schema\" member)" },
		{ "{\"schema\": 2, \"pid\": 1, \"errors\": 0}",
		  "line 1, column 12: schema 2 is not supported (this gpuguard reads schema 1)" },
	};
	struct {
		const char *from, *until, *to, *message;
	} broken[] = {
		{ "\"total\": 12", NULL, "\"total\": \"12\"",
		  "\"lookups.total\" is a string, expected a non-negative integer" },
		{ "\"errors\": 2", NULL, "\"errors\": -1",
		  "\"errors\" is the number -1, expected a non-negative integer" },
		{ "\"object\": \"/path/app\"", NULL, "\"object\": 5",
		  "\"unresolved[0].site.object\" is the number 5, expected a string or null" },
		{ "\"live\": 2", NULL, "\"live\": 2.5",
		  "\"allocations.live\" is the number 2.5, expected a non-negative integer" },
	};

	make_dir();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_refused(write_file("x.json", "%s", cases[i].text), cases[i].text,
			       cases[i].message);
	for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++)
		expect_refused(broken_summary(broken[i].from, broken[i].until, broken[i].to),
			       broken[i].to, broken[i].message);
	remove_dir();
}

/* A member the report reads is required: a summary without it is refused,
 * not read as zeros ("0 kernels"). */
Test(report, refuses_a_summary_missing_a_member_it_reads)
{
	struct {
		const char *from, *until, *message;
	} missing[] = {
		{ "  \"lookups\"", "},\n",
		  "line 1, column 1: no \"lookups\" member (expected an object)" },
		{ "\"total\": 12, ", NULL,
		  "no \"lookups.total\" member (expected a non-negative integer)" },
		{ "\"late_misses\": 0, ", NULL,
		  "no \"lookups.late_misses\" member (expected a non-negative integer)" },
		{ "  \"unresolved\": [", "],\n", "no \"unresolved\" member (expected an array)" },
		{ "  \"allocations\"", "},\n", "no \"allocations\" member (expected an object)" },
		{ "\"live\": 2, ", NULL,
		  "no \"allocations.live\" member (expected a non-negative integer)" },
		{ "  \"redzones\"", "},\n", "no \"redzones\" member (expected an object)" },
		{ "\"scans\": 2, ", NULL,
		  "no \"redzones.scans\" member (expected a non-negative integer)" },
		{ "  \"violations\": [", "],\n", "no \"violations\" member (expected an array)" },
		{ "\"pid\": 1, ", NULL, "no \"pid\" member (expected a non-negative integer)" },
		{ ",\n  \"errors\": 2", NULL,
		  "no \"errors\" member (expected a non-negative integer)" },
	};

	make_dir();
	for (size_t i = 0; i < sizeof(missing) / sizeof(missing[0]); i++)
		expect_refused(broken_summary(missing[i].from, missing[i].until, ""), missing[i].from,
			       missing[i].message);
	remove_dir();
}

/* The shim writes its counters as uint64_t: one above 2^63 (or 2^53, where
 * doubles stop being exact) is read to the last digit. */
Test(report, reads_a_counter_of_2_to_the_64_minus_1_exactly)
{
	const char *path;
	struct result r;

	make_dir();
	path = broken_summary("\"user_bytes\": 1000", NULL, "\"user_bytes\": 18446744073709551615");
	assert_valid(path);
	r = RUN(gg_cmd_report, NULL, "report", path);
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_expect(strstr(r.out, "  allocation #7 (18446744073709551615 bytes, 64-byte band): "
				"8 bytes changed\n"),
		  "%s", r.out);
	free_result(&r);
	remove_dir();
}

Test(report, names_an_unreadable_file)
{
	struct result r;

	make_dir();
	r = RUN(gg_cmd_report, NULL, "report", in_tmp("absent.json"));
	cr_assert_eq(r.status, 2);
	cr_expect(strstr(r.err, "absent.json: cannot read: No such file or directory\n"), "%s", r.err);
	free_result(&r);
	remove_dir();
}

Test(report, usage_errors_exit_2_and_help_exits_0)
{
	struct result r = RUN(gg_cmd_report, NULL, "report");

	cr_expect_eq(r.status, 2);
	cr_expect(strstr(r.err, "gpuguard: report: no FILE.json given"), "%s", r.err);
	free_result(&r);
	r = RUN(gg_cmd_report, NULL, "report", "--bogus", "x.json");
	cr_expect_eq(r.status, 2);
	cr_expect(strstr(r.err, "unknown option '--bogus'"), "%s", r.err);
	free_result(&r);
	r = RUN(gg_cmd_report, NULL, "report", "--help");
	cr_expect_eq(r.status, 0);
	cr_expect(!strncmp(r.out,
			   "usage: gpuguard report [--junit FILE] [--sarif FILE] "
			   "[--require-coverage] FILE.json...\n",
			   87),
		  "%s", r.out);
	free_result(&r);
}

Test(report, reads_standard_input_for_a_dash)
{
	const char *a, *b, *clean;
	struct result r;

	job_files(&a, &b, &clean);
	r = RUN(gg_cmd_report, b, "report", "-");
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_expect(strstr(r.out, "process 4712: /path/app"), "%s", r.out);
	free_result(&r);
	remove_dir();
}

Test(report, escapes_control_characters_of_names)
{
	struct result r;

	make_dir();
	summary("e.json", 5,
		"{ \"module\": \"m\\u001b[2J\", \"function\": \"f\\n\\u009b\", \"count\": 1, "
		"\"expected_absent\": false, \"result\": \"R\", \"site\": { \"address\": \"0x1\", "
		"\"object\": \"\", \"offset\": \"0x1\", \"symbol\": null } }",
		"", 1);
	r = RUN(gg_cmd_report, NULL, "report", in_tmp("e.json"));
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_expect(strstr(r.out, "  REQUIRED  m\\x1b[2J::f\\x0a\\u009b  1x\n"), "%s", r.out);
	cr_expect_null(strchr(r.out, '\x1b'));
	cr_expect_null(strstr(r.out, "\xc2\x9b"));
	free_result(&r);
	remove_dir();
}

/* A summary of pid @pid that leaked from stacks 0, @step, 2 @step, ... below
 * @stacks: stack i is its own site (leak_I) over one frame all share, 16, 32
 * or 48 bytes by i % 3, one allocation each. With @more, as many violations
 * (allocation #I) and missing kernels (k_I), each at a site of its own. */
static const char *leak_summary(const char *name, int pid, int stacks, int step, bool more)
{
	const char *path = in_tmp(name);
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	fprintf(f,
		"{ \"schema\": 1, \"pid\": %d, \"exe\": \"/a\", \"sealed\": true, \"seals\": 1,\n"
		"  \"lookups\": { \"total\": 0, \"resolved\": 0, \"unresolved_required\": 0, "
		"\"unresolved_expected\": 0, \"late_misses\": 0, \"unresolved\": 0 },\n"
		"  \"allocations\": { \"calls\": 1, \"failed\": 0, \"padded\": 1, "
		"\"unpadded_fallbacks\": 0, \"live\": 0, \"live_bytes\": 0 },\n"
		"  \"redzones\": { \"scans\": 1, \"checked\": 1, \"unchecked\": 0 },\n"
		"  \"unresolved\": [\n",
		pid);
	for (int i = 0; more && i < stacks; i += step)
		fprintf(f,
			"%s{\"module\":\"m\",\"function\":\"k_%d\",\"expected_absent\":false,"
			"\"count\":1,\"result\":\"CUDA_ERROR_NOT_FOUND\",\"site\":{\"address\":"
			"\"0x%x\",\"object\":\"/a\",\"offset\":\"0x%x\"}}\n",
			i ? "," : "", i, 0x20000 + i, 0x20000 + i);
	fprintf(f, "  ],\n  \"violations\": [\n");
	for (int i = 0; more && i < stacks; i += step)
		fprintf(f,
			"%s{\"index\":%d,\"user_bytes\":16,\"pad_bytes\":64,\"first\":0,\"last\":0,"
			"\"changed\":1,\"first_value\":1,\"expected\":238,\"detected_by\":\"scan\","
			"\"site\":{\"address\":\"0x%x\",\"object\":\"/a\",\"offset\":\"0x%x\"}}\n",
			i ? "," : "", i, 0x30000 + i, 0x30000 + i);
	fprintf(f, "  ],\n  \"leaks\": [\n");
	for (int i = 0; i < stacks; i += step)
		fprintf(f,
			"%s{\"count\":1,\"bytes\":%d,\"site\":{\"address\":\"0x%x\",\"object\":\"/a\","
			"\"offset\":\"0x%x\",\"symbol\":\"leak_%d+0x1\"},\"stack\":[{\"address\":"
			"\"0x%x\",\"object\":\"/a\",\"offset\":\"0x%x\",\"symbol\":\"leak_%d+0x1\"},"
			"{\"address\":\"0x7000\",\"object\":\"/a\",\"offset\":\"0x7000\",\"symbol\":"
			"\"main+0x2\"}]}\n",
			i ? "," : "", 16 * (1 + i % 3), 0x10000 + i, i, i, 0x10000 + i, i, i);
	fprintf(f, "  ],\n  \"errors\": 0 }\n");
	cr_assert_eq(fclose(f), 0);
	return path;
}

/* (docs/ci.md, "Report formats"): report's time is linear in the findings.
 * Two processes with 20000 distinct leak stacks, violations and missing
 * kernels, the second with every fourth of them again: each is one entry,
 * with the pids it was seen in, and grouping compares a finding with at
 * most one entry (the one its hash finds), so it takes time linear in the
 * findings; a search through the entries so far compared each with all the
 * entries before it (131072 leak stacks took minutes). Leaks: the most
 * bytes first, then the most allocations, ties in the order first seen. */
Test(report, groups_many_distinct_findings_comparing_each_once)
{
	enum {
		N = 20000
	};
	struct proc procs[2] = { { 0 } };
	struct view vw = { 0 };
	struct gg_json_error err;
	size_t rows, last = N - 1;

	make_dir();
	procs[0].file = leak_summary("a.json", 301, N, 1, true);
	procs[1].file = leak_summary("b.json", 302, N, 4, true);
	for (int i = 0; i < 2; i++) {
		procs[i].root = gg_json_parse_file(procs[i].file, &err);
		cr_assert_not_null(procs[i].root, "%s: %s", procs[i].file, err.message);
		procs[i].pid = 301 + (uint64_t)i;
	}
	vw.procs = procs;
	vw.nprocs = 2;
	gg_view_group(&vw);
	cr_expect_eq(vw.nleaks, N);
	cr_expect_eq(vw.nviolations, N);
	cr_expect_eq(vw.npairs, N);
	/* Each finding of the second process (a kernel: then its site too) met
	 * its entry once; the first one's met none. */
	rows = 4 * (N / 4);
	cr_expect_leq(vw.compared, rows, "%zu findings compared with an entry, for %zu found",
		      vw.compared, rows);
	for (size_t k = 0; k < vw.npairs; k++) {
		cr_expect_eq(vw.pairs[k].nsites, 1);
		cr_expect_eq(vw.pairs[k].pids.len, k % 4 ? 1 : 2, "pair %zu", k);
	}
	for (size_t k = 0; k < vw.nviolations; k++)
		cr_expect_eq(vw.violations[k].rows, k % 4 ? 1 : 2, "violation %zu", k);
	/* 96 bytes in both processes: stacks 8, 20, 32, ... (i % 12 == 8) in the
	 * order first seen; then 48 bytes in one (i % 3 == 2, not in both), ... */
	for (size_t k = 0; k < N / 12; k++) {
		const struct leak_group *g = &vw.leaks[k];

		cr_expect_eq(g->bytes, 96, "leak %zu", k);
		cr_expect_eq(g->count, 2, "leak %zu", k);
		cr_expect_eq(g->pids.len, 2, "leak %zu", k);
		cr_expect_eq(g->seen, 8 + 12 * k, "leak %zu: stack %zu", k, g->seen);
	}
	cr_expect_eq(vw.leaks[N / 12].bytes, 64); /* 32 bytes in both: i % 12 == 4 */
	cr_expect_eq(vw.leaks[N / 12].seen, 4);
	/* Last: 16 bytes in one process (i % 3 == 0, not in both), the latest. */
	while (last % 3 || !(last % 4))
		last--;
	cr_expect_eq(vw.leaks[N - 1].bytes, 16);
	cr_expect_eq(vw.leaks[N - 1].seen, last);
	gg_view_free_groups(&vw);
	for (int i = 0; i < 2; i++)
		gg_json_free(procs[i].root);
	remove_dir();
}

/* The same leaks, printed: the totals, the first ten entries with their pids
 * in order, and how many more. */
Test(report, prints_the_leaks_of_many_stacks_most_bytes_first)
{
	enum {
		STACKS = 16384
	};
	uint64_t count = 0, bytes = 0;
	const char *a, *b;
	struct result r;
	char line[256];
	const char *at;

	make_dir();
	a = leak_summary("a.json", 301, STACKS, 1, false);
	b = leak_summary("b.json", 302, STACKS, 4, false);
	for (int i = 0; i < STACKS; i++) {
		int times = i % 4 ? 1 : 2;

		count += times;
		bytes += (uint64_t)times * 16 * (1 + i % 3);
	}
	r = RUN(gg_cmd_report, NULL, "report", b, a);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.err, "");
	snprintf(line, sizeof(line),
		 "\nleaks: %" PRIu64 " allocations (%" PRIu64 " bytes) live at exit, from %d stacks\n",
		 count, bytes, STACKS);
	cr_expect_neq(strstr(r.out, line), NULL, "%s\n%.3000s", line, r.out);
	at = r.out;
	for (int k = 0; k < 10; k++) {
		int i = 8 + 12 * k;

		snprintf(line, sizeof(line),
			 "\n  pids 301, 302: 2 allocations (96 bytes) allocated at leak_%d+0x1 "
			 "(a+0x%x)\n",
			 i, i);
		cr_expect_neq(at = strstr(at, line), NULL, "entry %d: %s\n%.3000s", k, line, r.out);
		if (!at)
			break;
	}
	cr_expect_eq(count_of(r.out, " allocated at leak_"), 10, "%.3000s", r.out);
	snprintf(line, sizeof(line), "\n  and %d more stacks\n", STACKS - 10);
	cr_expect_neq(strstr(r.out, line), NULL, "%s", line);
	free_result(&r);
	remove_dir();
}

/* @text with each line break and the indent after it read as one space:
 * the report's wrapped lines as one (malloc'd). */
static char *unwrapped(const char *text)
{
	char *out = malloc(strlen(text) + 1), *o = out;

	cr_assert_not_null(out);
	for (const char *p = text; *p; p++) {
		if (*p != '\n') {
			*o++ = *p;
			continue;
		}
		*o++ = ' ';
		while (p[1] == ' ')
			p++;
	}
	*o = '\0';
	return out;
}

/* Coverage's reasons and caching allocators of several processes, many of
 * them: each named once, with its counts added up, in the order first seen,
 * the reasons found by hash (a search through those so far, and looking each
 * member up by its key while checking, made them quadratic). */
Test(report, adds_up_many_coverage_reasons_and_allocators_in_order)
{
	enum {
		REASONS = 3000
	};
	const char *files[2];
	struct result r;
	char *text, want[64];
	const char *at;

	make_dir();
	for (int f = 0; f < 2; f++) {
		const char *path = in_tmp(f ? "b.json" : "a.json");
		FILE *out = fopen(path, "w");

		cr_assert_not_null(out);
		fprintf(out,
			"{ \"schema\": 1, \"pid\": %d, \"exe\": \"/a\",\n"
			"  \"lookups\": { \"total\": 0, \"resolved\": 0, \"unresolved_required\": 0, "
			"\"unresolved_expected\": 0, \"late_misses\": 0, \"unresolved\": 0 },\n"
			"  \"unresolved\": [], \"violations\": [],\n"
			"  \"allocations\": { \"calls\": 1, \"failed\": 0, \"padded\": 1, "
			"\"unpadded_fallbacks\": 0, \"live\": 0, \"live_bytes\": 0 },\n"
			"  \"redzones\": { \"scans\": 1, \"checked\": 1, \"unchecked\": 0 },\n"
			"  \"coverage\": { \"allocations\": %d, \"guarded\": 0, \"unguarded\": {",
			401 + f, REASONS * (1 + f));
		/* The second process: the same names, the other way round. */
		for (int i = 0; i < REASONS; i++)
			fprintf(out, "%s\"r%d\": %d", i ? ", " : "", f ? REASONS - 1 - i : i, 1 + f);
		fprintf(out, " },\n    \"caching_allocators\": [");
		for (int i = 0; i < REASONS; i++)
			fprintf(out, "%s\"a%d\"", i ? ", " : "", f ? REASONS - 1 - i : i);
		fprintf(out, "] },\n  \"errors\": 0 }\n");
		cr_assert_eq(fclose(out), 0);
		files[f] = path;
	}
	r = RUN(gg_cmd_report, NULL, "report", files[0], files[1]);
	cr_assert_eq(r.status, 0, "%s", r.err);
	text = unwrapped(r.out);
	cr_expect_eq(count_of(text, " 3, r"), REASONS - 1, "%.3000s", text);
	at = text;
	for (int i = 0; i < REASONS && at; i++) {
		snprintf(want, sizeof(want), i ? ", r%d 3" : "(r%d 3, ", i);
		cr_expect_neq(at = strstr(at, want), NULL, "reason %d: %s", i, want);
	}
	cr_expect_neq(strstr(text, "; caching allocators: a0, a1, a2, "), NULL, "%.3000s", text);
	snprintf(want, sizeof(want), ", a%d (the bands guard", REASONS - 1);
	cr_expect_neq(strstr(text, want), NULL, "%s", want);
	for (int i = 0; i < REASONS; i++) {
		snprintf(want, sizeof(want), " a%d,", i);
		cr_expect_eq(count_of(text, want), i < REASONS - 1, "%s", want);
	}
	free(text);
	free_result(&r);
	remove_dir();
}

/* Every name report prints, on standard error too, is escaped as on
 * standard output (tools/cli.h, gg_cli_name): a file that cannot be read, an
 * output that is an input, an option, a summary's key; each message is one
 * line. */
Test(report, names_files_options_and_keys_escaped_on_one_line)
{
	const char *bad, *in;
	struct result r;

	make_dir();
	r = RUN(gg_cmd_report, NULL, "report", in_tmp("no\nsuch\x1b.json"));
	cr_expect_eq(r.status, 2);
	cr_expect_neq(strstr(r.err, "/no\\x0asuch\\x1b.json: cannot read: "), NULL, "%s", r.err);
	cr_expect_eq(count_of(r.err, "\n"), 1, "%s", r.err);
	free_result(&r);

	in = summary("in\nput\\.json", 7, "", "", 0);
	r = RUN(gg_cmd_report, NULL, "report", "--junit", in, in);
	cr_expect_eq(r.status, 2);
	cr_expect_neq(strstr(r.err, "/in\\x0aput\\\\.json: is one of the summaries to read"), NULL,
		      "%s", r.err);
	cr_expect_eq(count_of(r.err, "\n"), 1, "%s", r.err);
	free_result(&r);

	r = RUN(gg_cmd_report, NULL, "report", "--x\ny", in);
	cr_expect_eq(r.status, 2);
	cr_expect_neq(strstr(r.err, "unknown option '--x\\x0ay'"), NULL, "%s", r.err);
	free_result(&r);

	/* Read: its name in the report's first line, escaped there too. */
	r = RUN(gg_cmd_report, NULL, "report", in);
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_neq(strstr(r.out, "/in\\x0aput\\\\.json\n"), NULL, "%s", r.out);
	free_result(&r);

	bad = summary_full("bad.json", 8, "/a", 64, "", "",
			   "\"coverage\": { \"allocations\": 1, \"guarded\": 0, "
			   "\"unguarded\": { \"x\\ny\": \"many\" } },\n  ",
			   0);
	r = RUN(gg_cmd_report, NULL, "report", bad);
	cr_expect_eq(r.status, 2);
	cr_expect_neq(strstr(r.err, "\"coverage.unguarded.x\\x0ay\" is a string"), NULL, "%s", r.err);
	cr_expect_eq(count_of(r.err, "\n"), 1, "%s", r.err);
	free_result(&r);
	remove_dir();
}

Test(report, lines_fit_100_columns_with_many_processes)
{
	const char *args[48] = { "report" };
	char name[32];
	struct result r;
	int n = 40;

	make_dir();
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "rank.%d.json", 100000 + i);
		args[i + 1] = strdup(summary(name, 100000 + i, MISSING_KERNEL, VIOLATION(7), 2));
	}
	r = run(gg_cmd_report, NULL, args);
	cr_assert_eq(r.status, 1, "%s", r.err);
	for (char *line = r.out, *nl; (nl = strchr(line, '\n')); line = nl + 1)
		cr_expect_leq(nl - line, 100, "%.*s", (int)(nl - line), line);
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%d", 100000 + i);
		/* In the kernel's pid list, the violation's and the errors line. */
		cr_expect_geq(count_of(r.out, name), 4, "%s", name);
		free((char *)args[i + 1]);
	}
	cr_expect(strstr(r.out, "  REQUIRED  app+0x2040::missing_kernel  40x in 40 processes: "
				"100000, 100001,"),
		  "%s", r.out);
	free_result(&r);
	remove_dir();
}

Test(report, shows_the_line_symbolize_added_to_a_site)
{
	struct result r;

	make_dir();
	summary("l.json", 6,
		"{ \"module\": \"m\", \"function\": \"f\", \"count\": 2, \"expected_absent\": false, "
		"\"result\": \"R\", \"site\": { \"address\": \"0x1234\", \"object\": \"/x/lib.so\", "
		"\"offset\": \"0x34\", \"symbol\": \"g+0x4\", \"line\": \"/src/g.c:12\" } }",
		"", 1);
	r = RUN(gg_cmd_report, NULL, "report", in_tmp("l.json"));
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_expect(strstr(r.out, "            2x R at g+0x4 (lib.so+0x34) at /src/g.c:12\n"), "%s",
		  r.out);
	free_result(&r);
	remove_dir();
}

/* ---- gpuguard report --junit, --sarif, --require-coverage ---------------- */

/* Checks JUnit XML the way a CI system reads it (well-formed, one suite of
 * test cases, counts that match them) and prints each test case's name, with
 * its pid property as " (pid N)", and the types of its failures, then their
 * texts, indented. */
static const char junit_script[] =
	"import sys, xml.etree.ElementTree as ET\n"
	"root = ET.parse(sys.argv[1]).getroot()\n"
	"assert root.tag == 'testsuites', root.tag\n"
	"suites = list(root)\n"
	"assert [s.tag for s in suites] == ['testsuite'], suites\n"
	"s = suites[0]\n"
	"assert s.get('name') == 'gpuguard', s.attrib\n"
	"cases = list(s)\n"
	"assert all(c.tag == 'testcase' for c in cases), cases\n"
	"failed = sum(1 for c in cases if c.find('failure') is not None)\n"
	"errors = sum(1 for c in cases if c.find('error') is not None)\n"
	"for e in (root, s):\n"
	"    want = (str(len(cases)), str(failed), str(errors))\n"
	"    got = (e.get('tests'), e.get('failures'), e.get('errors'))\n"
	"    assert got == want, (e.tag, got, want)\n"
	"def findings(c): return [f for f in c if f.tag != 'properties']\n"
	"for c in cases:\n"
	"    assert c.get('classname') == 'gpuguard', c.attrib\n"
	"    for f in findings(c):\n"
	"        assert f.tag in ('failure', 'error'), f.tag\n"
	"        assert f.get('message') and '\\n' not in f.get('message'), f.attrib\n"
	"    pid = {p.get('name'): p.get('value') for p in c.iter('property')}.get('pid')\n"
	"    name = c.get('name') + (' (pid %s)' % pid if pid else '')\n"
	"    print('%s: %s' % (name, ' '.join(f.get('type') for f in findings(c))))\n"
	"for c in cases:\n"
	"    for f in findings(c):\n"
	"        print('  %s' % f.get('message'))\n"
	"        for line in (f.text or '').splitlines(): print('    ' + line)\n";

/* What junit_script says of @path. Free with free(). */
static char *junit_of(const char *path)
{
	char *out;

	cr_assert(python(junit_script, (const char *[]){ path, NULL }, &out), "%s", out);
	return out;
}

/* Validates SARIF against the 2.1.0 schema (tests/data, with formats such as
 * "uri" checked) and what GitHub's code scanning reads of it, and prints a
 * line a result: its rule, location and fingerprint; then the invocation's
 * verdict and notifications. */
static const char sarif_script[] =
	"import json, sys, jsonschema\n"
	"log = json.load(open(sys.argv[1]))\n"
	"schema = json.load(open(sys.argv[2]))\n"
	"v = jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())\n"
	"errors = list(v.iter_errors(log))\n"
	"for e in errors: print('%s: %s' % (list(e.absolute_path), e.message))\n"
	"if errors: sys.exit(3)\n"
	"assert log['version'] == '2.1.0', log['version']\n"
	"assert log['$schema'] == 'https://json.schemastore.org/sarif-2.1.0.json'\n"
	"run, = log['runs']\n"
	"driver = run['tool']['driver']\n"
	"assert driver['name'] == 'gpuguard', driver\n"
	"ids = [r['id'] for r in driver['rules']]\n"
	"assert len(set(ids)) == len(ids), ids\n"
	"for r in run['results']:\n"
	"    assert ids[r['ruleIndex']] == r['ruleId'], r\n"
	"    assert r['level'] == 'error' and r['message']['text'], r\n"
	"    loc = r['locations'][0]['physicalLocation']\n"
	"    art = loc['artifactLocation']\n"
	"    print(r['ruleId'], art['uri'], art.get('uriBaseId', '-'),\n"
	"          loc.get('region', {}).get('startLine', '-'),\n"
	"          loc.get('address', {}).get('fullyQualifiedName', '-'),\n"
	"          r['partialFingerprints']['gpuguardFinding/v1'])\n"
	"inv, = run['invocations']\n"
	"print('successful' if inv['executionSuccessful'] else 'not successful')\n"
	"for n in inv.get('toolExecutionNotifications', []): print(n['message']['text'])\n";

static char *sarif_of(const char *path)
{
	char *out;

	cr_assert(python(sarif_script,
			 (const char *[]){ path, GG_SOURCE_ROOT "/tests/data/sarif-schema-2.1.0.json",
					   NULL },
			 &out),
		  "%s does not follow the SARIF 2.1.0 schema:\n%s", path, out);
	return out;
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The fingerprints of the results sarif_script printed, one a line, sorted. */
static char *fingerprints(const char *printed)
{
	char *lines[64], *out = calloc(1, 64 * 20), *copy = strdup(printed), *save = NULL;
	size_t n = 0;

	cr_assert(out && copy);
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *last = strrchr(l, ' ');

		if (last && strlen(last + 1) == 16 && n < 64)
			lines[n++] = last + 1;
	}
	qsort(lines, n, sizeof(lines[0]), by_string);
	for (size_t i = 0; i < n; i++)
		strcat(strcat(out, lines[i]), "\n");
	free(copy);
	return out;
}

Test(report, junit_has_one_testcase_per_process_and_a_failure_per_finding)
{
	const char *a, *b, *clean;
	struct result r;
	char *junit;

	job_files(&a, &b, &clean);
	r = RUN(gg_cmd_report, NULL, "report", "--junit", in_tmp("junit.xml"), clean, b, a);
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_expect_str_eq(r.err, "");
	/* The human report is still written. */
	cr_expect(strstr(r.out, "gpuguard report: 3 processes\n"), "%s", r.out);
	junit = junit_of(in_tmp("junit.xml"));
	cr_expect_str_eq(
		junit,
		"app (pid 4711): unresolved-kernel redzone-violation\n"
		"app (pid 4712): unresolved-kernel redzone-violation\n"
		"app (pid 4713): \n"
		"  required kernel app+0x2040::missing_kernel never resolved (3 failed lookups)\n"
		"    1x CUDA_ERROR_NOT_FOUND at main+0x56 (app+0x1234)\n"
		"    2x CUDA_ERROR_NOT_FOUND at main+0x80 (app+0x1260)\n"
		"  red-zone violation: 8 bytes past the end of allocation #7 (1000 bytes) changed, "
		"detected by scan\n"
		"    allocated at load_weights+0x56 (app+0x1300)\n"
		"  required kernel app+0x2040::missing_kernel never resolved (1 failed lookup)\n"
		"    1x CUDA_ERROR_NOT_FOUND at main+0x56 (app+0x1234)\n"
		"  red-zone violation: 8 bytes past the end of allocation #9 (1000 bytes) changed, "
		"detected by scan\n"
		"    allocated at load_weights+0x56 (app+0x1300)\n");
	free(junit);
	free_result(&r);
	remove_dir();
}

Test(report, junit_gives_a_clean_process_a_testcase_without_failure)
{
	const char *a, *b, *clean;
	struct result r;
	char *junit;

	job_files(&a, &b, &clean);
	r = RUN(gg_cmd_report, NULL, "report", "--junit=", clean);
	cr_expect_eq(r.status, 2, "an empty --junit= is refused");
	cr_expect_str_eq(r.err, "gpuguard: report: --junit needs a FILE\n");
	free_result(&r);
	r = RUN(gg_cmd_report, NULL, "report", clean, "--junit");
	cr_expect_eq(r.status, 2);
	cr_expect_str_eq(r.err, "gpuguard: report: --junit needs a FILE\n");
	free_result(&r);
	r = RUN(gg_cmd_report, NULL, "report",
		"--junit="
		"/dev/null",
		"--junit", in_tmp("j.xml"), clean);
	cr_assert_eq(r.status, 0, "%s", r.err);
	junit = junit_of(in_tmp("j.xml"));
	cr_expect_str_eq(junit, "app (pid 4713): \n");
	free(junit);
	junit = file_text(in_tmp("j.xml"));
	cr_expect(strstr(junit, "tests=\"1\" failures=\"0\" errors=\"0\""), "%s", junit);
	cr_expect_null(strstr(junit, "<failure"), "%s", junit);
	free(junit);
	free_result(&r);
	remove_dir();
}

/* A CI system follows a test case from run to run by its name: the
 * program's, never its pid (a property of the case). */
Test(report, junit_names_a_testcase_by_its_program_with_the_pid_as_a_property)
{
	const char *a, *b, *clean;
	struct result r;
	char *junit;

	job_files(&a, &b, &clean);
	r = RUN(gg_cmd_report, NULL, "report", "--junit", in_tmp("j.xml"), clean);
	cr_assert_eq(r.status, 0, "%s", r.err);
	junit = file_text(in_tmp("j.xml"));
	cr_expect(strstr(junit,
			 "    <testcase name=\"app\" classname=\"gpuguard\">\n"
			 "      <properties><property name=\"pid\" value=\"4713\"/></properties>\n"),
		  "%s", junit);
	cr_expect_null(strstr(junit, "4713)"), "%s", junit);
	free(junit);
	free_result(&r);
	remove_dir();
}

/* The names in a summary can hold any character: the XML stays well-formed,
 * and what XML 1.0 cannot hold at all is written as the terminal report
 * writes it, or replaced. */
Test(report, junit_escapes_names_and_replaces_what_xml_forbids)
{
	struct result r;
	char *junit;

	make_dir();
	summary_full("e.json", 5, "/bin/a<b>&\\\"c\\u0001\\u0000d", 64,
		     "{ \"module\": \"m]]>\\u0002\", \"function\": \"f&amp;\\u001f\\u007f\\ufffe\", "
		     "\"count\": 1, \"expected_absent\": false, \"result\": \"R<\", \"site\": "
		     "{ \"address\": \"0x1\", \"object\": \"/x/o'\\\"<\", \"offset\": \"0x1\", "
		     "\"symbol\": \"s\\t+0x1\" } }",
		     "", "", 1);
	r = RUN(gg_cmd_report, NULL, "report", "--junit", in_tmp("j.xml"), in_tmp("e.json"));
	cr_assert_eq(r.status, 1, "%s", r.err);
	junit = junit_of(in_tmp("j.xml"));
	cr_expect_str_eq(junit,
			 "a<b>&\"c\\x01\\x00d (pid 5): unresolved-kernel\n"
			 "  required kernel m]]>\\x02::f&amp;\\x1f\\x7f\xef\xbf\xbd never resolved "
			 "(1 failed lookup)\n"
			 "    1x R< at s\\x09+0x1 (o'\"<+0x1)\n");
	free(junit);
	junit = file_text(in_tmp("j.xml"));
	for (const char *p = junit; *p; p++)
		cr_expect((unsigned char)*p >= 0x20 || *p == '\n', "byte 0x%02x at %td", *p, p - junit);
	free(junit);
	free_result(&r);
	remove_dir();
}

Test(report, sarif_has_a_result_per_finding_at_its_host_call_site)
{
	const char *a, *b, *clean, *line;
	struct result r;
	char *sarif;

	job_files(&a, &b, &clean);
	/* Symbolized: the site has a source line. */
	line = summary("line.json", 4714,
		       "{ \"module\": \"lib.so+0x40\", \"function\": \"k\", \"count\": 2, "
		       "\"expected_absent\": false, \"result\": \"R\", \"site\": { \"address\": "
		       "\"0x7f0000001234\", \"object\": \"/x/lib.so\", \"offset\": \"0x34\", "
		       "\"symbol\": \"g+0x4\", \"line\": \"/src/g.c:12\" } }",
		       "", 1);
	r = RUN(gg_cmd_report, NULL, "report", "--sarif", in_tmp("s.sarif"), a, b, clean, line);
	cr_assert_eq(r.status, 1, "%s", r.err);
	sarif = sarif_of(in_tmp("s.sarif"));
	/* 4711 and 4712: a required kernel and a violation each; none for the
	 * expected-absent one, nor for the clean 4713. */
	cr_expect_eq(count_of(sarif, "\nunresolved-kernel ") +
			     !strncmp(sarif, "unresolved-kernel ", 18),
		     3, "%s", sarif);
	cr_expect_eq(count_of(sarif, "redzone-violation "), 2, "%s", sarif);
	cr_expect(strstr(sarif, "unresolved-kernel file:///path/app - - app+0x1234 "), "%s", sarif);
	cr_expect(strstr(sarif, "redzone-violation file:///path/app - - app+0x1300 "), "%s", sarif);
	cr_expect(strstr(sarif, "unresolved-kernel file:///src/g.c - 12 - "), "%s", sarif);
	cr_expect(strstr(sarif, "\nsuccessful\n"), "%s", sarif);
	free(sarif);
	sarif = file_text(in_tmp("s.sarif"));
	cr_expect(strstr(sarif, "\"logicalLocations\": [ { \"name\": \"load_weights\", \"kind\": "
				"\"function\" } ]"),
		  "%s", sarif);
	cr_expect(strstr(sarif,
			 "\"text\": \"red-zone violation: 8 bytes past the end of "
			 "allocation #9 (1000 bytes) changed, detected by scan in app (pid 4712).\\n"
			 "allocated at load_weights+0x56 (app+0x1300)\" }"),
		  "%s", sarif);
	free(sarif);
	free_result(&r);
	remove_dir();
}

/* A path below the directory the report runs in (a CI job's checkout) is
 * relative to %SRCROOT%, as code scanning wants; in a stripped program's
 * static runtime, the application's frame symbolize found stands for it. */
Test(report, sarif_makes_paths_below_the_working_directory_relative)
{
	char cwd[PATH_MAX], rows[PATH_MAX * 3 + 1024];
	struct result r;
	char *sarif;

	make_dir();
	cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
	snprintf(rows, sizeof(rows),
		 "{ \"index\": 1, \"user_bytes\": 8, \"pad_bytes\": 16, \"first\": 0, \"last\": 0, "
		 "\"changed\": 1, \"first_value\": 1, \"expected\": 238, \"detected_by\": \"free\", "
		 "\"site\": { \"address\": \"0x7f00\", \"object\": \"%s/b/app s\", \"offset\": "
		 "\"0xf00\", \"symbol\": null, \"in_static_runtime\": true, \"frames\": [ { "
		 "\"address\": \"0x7f80\", \"object\": \"%s/b/app s\", \"offset\": \"0xf80\", "
		 "\"symbol\": null } ], \"application\": { \"object\": \"%s/b/app s\", "
		 "\"offset\": \"0xf80\", \"symbol\": \"load+0x8\" } } }",
		 cwd, cwd, cwd);
	summary("s.json", 7, "", rows, 1);
	r = RUN(gg_cmd_report, NULL, "report", "--sarif", in_tmp("s.sarif"), in_tmp("s.json"));
	cr_assert_eq(r.status, 1, "%s", r.err);
	sarif = sarif_of(in_tmp("s.sarif"));
	cr_expect(strstr(sarif, "redzone-violation b/app%20s %SRCROOT% - app s+0xf80 "), "%s", sarif);
	free(sarif);
	free_result(&r);
	remove_dir();
}

/* What changes from run to run of the same program (pids, addresses under
 * ASLR, handles, where the build lies, the order of the rows, allocation
 * indices) leaves the fingerprints as they are; another finding has
 * another. */
Test(report, sarif_fingerprints_are_the_same_across_two_runs)
{
	static const char unresolved[] =
		"{ \"module\": \"module@0x%s\", \"function\": \"k\", \"count\": 1, "
		"\"expected_absent\": false, \"result\": \"R\", \"site\": { \"address\": \"0x%s1234\", "
		"\"object\": \"/ci/%s/app\", \"offset\": \"0x1234\", \"symbol\": \"main+0x56\" } }";
	static const char violation[] =
		"{ \"index\": %d, \"user_bytes\": 1000, \"pad_bytes\": 64, \"first\": 0, \"last\": 7, "
		"\"changed\": 8, \"first_value\": 65, \"expected\": 238, \"detected_by\": \"%s\", "
		"\"site\": { \"address\": \"0x%s1300\", \"object\": \"/ci/%s/app\", \"offset\": "
		"\"0x%s\", \"symbol\": \"load_weights+0x56\" } }";
	char u1[512], u2[512], v1[512], v2[512], v3[512], rows[1600];
	char *s1, *s2, *s3, *f1, *f2, *f3;
	struct result r;

	make_dir();
	snprintf(u1, sizeof(u1), unresolved, "55d0c0de0000", "55d0c0de", "build-1");
	snprintf(u2, sizeof(u2), unresolved, "7f3a00000000", "7f3a0000", "build-2");
	snprintf(v1, sizeof(v1), violation, 7, "scan", "55d0c0de", "build-1", "1300");
	snprintf(v2, sizeof(v2), violation, 9, "free", "7f3a0000", "build-2", "1300");
	snprintf(v3, sizeof(v3), violation, 9, "free", "7f3a0000", "build-2", "1308");
	snprintf(rows, sizeof(rows), "%s, %s", v1, v3);
	summary("run1.json", 4711, u1, rows, 3);
	snprintf(rows, sizeof(rows), "%s, %s", v3, v2);
	summary("run2.json", 90210, u2, rows, 3);
	summary("other.json", 90210, u2, v3, 2);
	r = RUN(gg_cmd_report, NULL, "report", "--sarif", in_tmp("1.sarif"), in_tmp("run1.json"));
	cr_assert_eq(r.status, 1, "%s", r.err);
	free_result(&r);
	r = RUN(gg_cmd_report, NULL, "report", "--sarif", in_tmp("2.sarif"), in_tmp("run2.json"));
	cr_assert_eq(r.status, 1, "%s", r.err);
	free_result(&r);
	r = RUN(gg_cmd_report, NULL, "report", "--sarif", in_tmp("3.sarif"), in_tmp("other.json"));
	cr_assert_eq(r.status, 1, "%s", r.err);
	free_result(&r);
	s1 = sarif_of(in_tmp("1.sarif"));
	s2 = sarif_of(in_tmp("2.sarif"));
	s3 = sarif_of(in_tmp("3.sarif"));
	f1 = fingerprints(s1);
	f2 = fingerprints(s2);
	f3 = fingerprints(s3);
	cr_expect_eq(count_of(f1, "\n"), 3, "%s", s1);
	cr_expect_str_eq(f1, f2, "%s\n%s", s1, s2);
	/* The violation at 0x1300 is not in the third. */
	cr_expect_eq(count_of(f3, "\n"), 2, "%s", s3);
	cr_expect_str_neq(f1, f3);
	free(s1), free(s2), free(s3), free(f1), free(f2), free(f3);
	remove_dir();
}

/* @dir/run@n.json: app-redzone, run under gpuguard on the fake driver, its
 * 64-byte allocation overrun by 8. The environment is ours, less what
 * would steer the shim or preload something else. */
/* gpuguard @opts -- @app @steps, its summary in @json_name, with @env added. */
static void run_app_env(const char *json_name, const char *app, const char *const *env,
			const char *const *opts, const char *const *steps)
{
	extern char **environ;
	char json[PATH_MAX], *envp[256], *argv[32];
	size_t k = 0, a = 0;
	pid_t pid;
	int status;

	snprintf(json, sizeof(json), "%s/%s", dir, json_name);
	for (char **e = environ; *e && k < 250; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "LD_LIBRARY_PATH=", 16) &&
		    strncmp(*e, "GPUGUARD_", 9) && strncmp(*e, "FAKECUDA_", 9) &&
		    strncmp(*e, "ASAN_OPTIONS=", 13))
			envp[k++] = *e;
	envp[k++] = "LD_LIBRARY_PATH=" GG_FAKE_DIR;
	envp[k++] = "GG_TEST_PTX=" GG_PTX;
	if (GG_PRELOAD_PREFIX[0]) /* a sanitized shim, loaded by a sanitized program */
		envp[k++] = "ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0";
	for (; env && *env && k < 254; env++)
		envp[k++] = (char *)*env;
	envp[k] = NULL;
	argv[a++] = GG_CLI;
	for (const char *const *o = opts; *o && a < 10; o++)
		argv[a++] = (char *)*o;
	argv[a++] = "--json", argv[a++] = json, argv[a++] = "--";
	argv[a++] = (char *)app;
	for (const char *const *st = steps; *st && a < 30; st++)
		argv[a++] = (char *)*st;
	argv[a] = NULL;
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0), dup2(null, 1), dup2(null, 2);
		execve(GG_CLI, argv, envp);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status 0x%x", status);
}

static void run_app(const char *json_name, const char *const *opts, const char *const *steps)
{
	run_app_env(json_name, GG_APPS "/app-redzone", NULL, opts, steps);
}

/* A JUnit or SARIF text of the two runs below: the checked launch's kernel,
 * and the suspect each violation names. */
static void expect_kernel_and_suspects(const char *text)
{
	cr_expect(strstr(text, "found after kernel gg_overrun_second (kernels.ptx, launch 1), "
			       "launched at main+"),
		  "%s", text);
	cr_expect_eq(count_of(text, "suspects: gg_overrun_second (kernels.ptx, launch 1)"), 2, "%s",
		     text);
}

/* Which kernel did it, in every form: a checked launch's kernel, and the
 * suspects of a violation found at a free. */
Test(report, names_the_kernel_that_wrote_past_a_band_and_the_suspects)
{
	const char *const steps[] = { "alloc:64", "alloc:64", "two:0:1:8", "sync", "free:1", NULL };
	struct result r;
	char *junit, *sarif;

	make_dir();
	run_app("checked.json", (const char *[]){ "--redzone", "16", "--check-launches", NULL }, steps);
	run_app("suspects.json", (const char *[]){ "--redzone", "16", NULL }, steps);
	r = RUN(gg_cmd_report, NULL, "report", in_tmp("checked.json"));
	cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
	cr_expect(strstr(r.out, "detected by launch"), "%s", r.out);
	cr_expect(strstr(r.out, "      written by gg_overrun_second (module kernels.ptx, launch #1 at\n"
				"          main+"),
		  "%s", r.out);
	cr_expect(!strstr(r.out, "suspects:"), "%s", r.out);
	free_result(&r);
	r = RUN(gg_cmd_report, NULL, "report", in_tmp("suspects.json"));
	cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
	cr_expect(strstr(r.out, "detected by free"), "%s", r.out);
	cr_expect(strstr(r.out, "      suspects: gg_overrun_second (launch #1)\n"), "%s", r.out);
	cr_expect(!strstr(r.out, "written by"), "%s", r.out);
	free_result(&r);
	r = RUN(gg_cmd_report, NULL, "report", "--junit", in_tmp("j.xml"), "--sarif", in_tmp("s.sarif"),
		in_tmp("checked.json"), in_tmp("suspects.json"));
	cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
	free_result(&r);
	junit = junit_of(in_tmp("j.xml"));
	expect_kernel_and_suspects(junit);
	free(junit);
	sarif = sarif_of(in_tmp("s.sarif"));
	free(sarif);
	sarif = file_text(in_tmp("s.sarif"));
	expect_kernel_and_suspects(sarif);
	free(sarif);
	remove_dir();
}

#ifdef GG_ARCH80_FATBIN
/* The image preflight's finding, a module a line. */
Test(report, lists_the_modules_that_cannot_run_on_their_gpu)
{
	struct result r;

	make_dir();
	run_app_env("lazy.json", GG_APPS "/app-audit",
		    (const char *[]){ "CUDA_MODULE_LOADING=LAZY", NULL },
		    (const char *[]){ "--verbosity", "0", NULL },
		    (const char *[]){ "file:" GG_PTX, "trylib:" GG_ARCH80_FATBIN, NULL });
	r = RUN(gg_cmd_report, NULL, "report", in_tmp("lazy.json"));
	cr_expect(strstr(r.out, "  cannot run here: arch80.fatbin (sm_80; loaded, its kernels fail at "
				"first use)\n"),
		  "%s", r.out);
	cr_expect_eq(count_of(r.out, "cannot run here"), 1, "%s", r.out);
	free_result(&r);
	remove_dir();
}
#endif

static void run_overrun(int n)
{
	char name[32];

	snprintf(name, sizeof(name), "run%d.json", n);
	run_app(name, (const char *[]){ "--redzone", "16", NULL },
		(const char *[]){ "alloc:64", "overrun:0:8", NULL });
}

Test(report, sarif_fingerprints_of_a_program_run_twice_are_the_same)
{
	struct result r;
	char *s1, *s2, *f1, *f2, *j1, *j2;

	make_dir();
	run_overrun(1);
	run_overrun(2);
	j1 = file_text(in_tmp("run1.json"));
	j2 = file_text(in_tmp("run2.json"));
	cr_assert_str_neq(j1, j2, "two runs, two pids");
	r = RUN(gg_cmd_report, NULL, "report", "--sarif", in_tmp("1.sarif"), in_tmp("run1.json"));
	cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
	free_result(&r);
	r = RUN(gg_cmd_report, NULL, "report", "--sarif", in_tmp("2.sarif"), in_tmp("run2.json"));
	cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
	free_result(&r);
	s1 = sarif_of(in_tmp("1.sarif"));
	s2 = sarif_of(in_tmp("2.sarif"));
	f1 = fingerprints(s1);
	f2 = fingerprints(s2);
	cr_expect(strstr(s1, "redzone-violation "), "%s", s1);
	cr_expect_eq(count_of(f1, "\n"), 1, "%s", s1);
	cr_expect_str_eq(f1, f2, "%s\n%s", s1, s2);
	free(s1), free(s2), free(f1), free(f2), free(j1), free(j2);
	remove_dir();
}

/* Members of "coverage" as the shim writes them (gpuguard(1), FILES). */
#define COVERAGE(guarded, unguarded)                                                          \
	"\"coverage\": { \"allocations\": 10, \"guarded\": " #guarded ", \"guarded_bytes\": " \
	"9000, \"unguarded\": { " unguarded " }, \"unguarded_bytes\": 16, \"vmm_bytes\": 0, " \
	"\"procaddr_unmatched\": 0, \"caching_allocators\": [] },\n  "

Test(report, require_coverage_fails_a_run_that_guarded_nothing)
{
	const char *blind, *seeing;
	struct result r;
	char *junit, *sarif;

	make_dir();
	blind = summary_full("blind.json", 4711, "/path/app", 64, "", "",
			     COVERAGE(0, "\"min_idx\": 9, \"zero_size\": 1"), 0);
	seeing = summary_full("seeing.json", 4712, "/path/app", 64, "", "", COVERAGE(10, ""), 0);
	assert_valid(blind);
	/* Without the option, nothing failed. */
	r = RUN(gg_cmd_report, NULL, "report", blind);
	cr_expect_eq(r.status, 0, "%s", r.err);
	free_result(&r);
	r = RUN(gg_cmd_report, NULL, "report", "--require-coverage", "--junit", in_tmp("j.xml"),
		"--sarif", in_tmp("s.sarif"), seeing, blind);
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_expect_str_eq(r.err, "gpuguard: report: --require-coverage: pid 4711 (/path/app): red "
				"zones were on and none of its 10 allocations was guarded (min_idx 9, "
				"zero_size 1)\n");
	junit = junit_of(in_tmp("j.xml"));
	cr_expect_str_eq(junit,
			 "app (pid 4711): no-coverage\n"
			 "app (pid 4712): \n"
			 "  pid 4711 (/path/app): red zones were on and none of its 10 allocations was "
			 "guarded (min_idx 9, zero_size 1)\n");
	sarif = sarif_of(in_tmp("s.sarif"));
	cr_expect_str_eq(sarif, "not successful\n--require-coverage: pid 4711 (/path/app): red "
				"zones were on and none of its 10 allocations was guarded (min_idx 9, "
				"zero_size 1)\n");
	free(junit);
	free(sarif);
	free_result(&r);
	remove_dir();
}

/* A summary from before the "coverage" member: allocations.padded says what
 * was guarded. */
Test(report, require_coverage_reads_padded_allocations_without_a_coverage_member)
{
	const char *path;
	struct result r;

	make_dir();
	path = broken_summary("\"padded\": 9", NULL, "\"padded\": 0");
	assert_valid(path);
	r = RUN(gg_cmd_report, NULL, "report", "--require-coverage", path);
	cr_expect_eq(r.status, 1, "%s", r.err);
	cr_expect(strstr(r.err, "gpuguard: report: --require-coverage: pid 1 (/path/app): red "
				"zones were on and none of its 10 allocations was guarded\n"),
		  "%s", r.err);
	free_result(&r);
	r = RUN(gg_cmd_report, NULL, "report", "--require-coverage", summary("ok.json", 2, "", "", 0));
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.err, "");
	free_result(&r);
	remove_dir();
}

Test(report, require_coverage_passes_a_run_that_guarded_something)
{
	const char *partly, *off;
	struct result r;

	make_dir();
	partly = summary_full("partly.json", 4711, "/path/app", 64, "", "",
			      COVERAGE(1, "\"min_idx\": 9"), 0);
	/* Red zones off: nothing to guard, nothing missed. */
	off = summary_full("off.json", 4712, "/path/app", 0, "", "", COVERAGE(0, "\"off\": 10"), 0);
	r = RUN(gg_cmd_report, NULL, "report", "--require-coverage", "--junit", in_tmp("j.xml"), partly,
		off);
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.err, "");
	free_result(&r);
	r = RUN(gg_cmd_report, NULL, "report", "--require-coverage", off);
	cr_expect_eq(r.status, 0, "%s", r.err);
	free_result(&r);
	remove_dir();
}

/* However many processes, one that guarded something does not make up for
 * one that guarded nothing; and when none of them did, even without an
 * allocation seen, the set fails. */
Test(report, require_coverage_fails_a_set_in_which_no_process_guarded_anything)
{
	const char *none;
	struct result r;

	make_dir();
	none = summary_full("none.json", 4711, "/path/app", 64, "", "",
			    "\"coverage\": { \"allocations\": 0, \"guarded\": 0 },\n  ", 0);
	r = RUN(gg_cmd_report, NULL, "report", "--require-coverage", none);
	cr_expect_eq(r.status, 1, "%s", r.err);
	cr_expect_str_eq(r.err, "gpuguard: report: --require-coverage: no process guarded any "
				"allocation while red zones were on\n");
	free_result(&r);
	r = RUN(gg_cmd_report, NULL, "report", "--require-coverage", none,
		summary_full("b.json", 4712, "/path/b", 64, "", "", COVERAGE(3, ""), 0));
	cr_expect_eq(r.status, 0, "%s", r.err);
	free_result(&r);
	remove_dir();
}

Test(report, require_coverage_fails_when_no_summary_was_read)
{
	struct result r;
	char *junit, *sarif;

	make_dir();
	/* A glob that matched nothing: the shell passes it as it is. */
	r = RUN(gg_cmd_report, NULL, "report", "--require-coverage", "--junit", in_tmp("j.xml"),
		"--sarif", in_tmp("s.sarif"), in_tmp("out/*.json"));
	cr_expect_eq(r.status, 2, "%s", r.err);
	cr_expect_str_eq(r.out, "");
	cr_expect(strstr(r.err,
			 "out/*.json: cannot read: No such file or directory\n"
			 "gpuguard: report: --require-coverage: no summary was read (1 file given, "
			 "none could be read)\n"),
		  "%s", r.err);
	junit = junit_of(in_tmp("j.xml"));
	cr_expect(strstr(junit, "out/*.json: unreadable-summary\ncoverage: no-coverage\n"), "%s",
		  junit);
	sarif = sarif_of(in_tmp("s.sarif"));
	cr_expect(strstr(sarif, "not successful\n"), "%s", sarif);
	cr_expect(strstr(sarif, "--require-coverage: no summary was read (1 file given, none "
				"could be read)\n"),
		  "%s", sarif);
	free(junit);
	free(sarif);
	free_result(&r);
	/* No file at all (a glob under nullglob, an empty xargs). */
	r = RUN(gg_cmd_report, NULL, "report", "--require-coverage", "--junit", in_tmp("j.xml"));
	cr_expect_eq(r.status, 1, "%s", r.err);
	cr_expect_str_eq(r.err, "gpuguard: report: --require-coverage: no summary was read (no "
				"file given)\n");
	junit = junit_of(in_tmp("j.xml"));
	cr_expect_str_eq(junit, "coverage: no-coverage\n  no summary was read (no file given)\n");
	free(junit);
	free_result(&r);
	remove_dir();
}

/* gpuguard(1), report: a file that cannot be read is named and skipped; the CI
 * files still hold the others, and say which was skipped. */
Test(report, junit_and_sarif_are_written_for_the_readable_files_when_one_is_skipped)
{
	const char *a, *b, *clean, *bad;
	struct result r;
	char *junit, *sarif, want[PATH_MAX + 64];

	job_files(&a, &b, &clean);
	bad = write_file("bad.json", "{ \"schema\": 1,\n");
	r = RUN(gg_cmd_report, NULL, "report", "--junit", in_tmp("j.xml"), "--sarif", in_tmp("s.sarif"),
		bad, a);
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_expect(strstr(r.out, "\nskipped: 1 file that could not be read"), "%s", r.out);
	junit = junit_of(in_tmp("j.xml"));
	snprintf(want, sizeof(want),
		 "app (pid 4711): unresolved-kernel redzone-violation\n"
		 "%s: unreadable-summary\n",
		 bad);
	cr_expect_eq(strncmp(junit, want, strlen(want)), 0, "%s", junit);
	cr_expect(strstr(junit, "  line 2, column 1: unexpected end of input"), "%s", junit);
	sarif = sarif_of(in_tmp("s.sarif"));
	cr_expect_eq(count_of(sarif, "file:///path/app"), 2, "%s", sarif);
	snprintf(want, sizeof(want),
		 "not successful\n%s: line 2, column 1: unexpected end of "
		 "input",
		 bad);
	cr_expect(strstr(sarif, want), "%s", sarif);
	free(junit);
	free(sarif);
	free_result(&r);
	remove_dir();
}

Test(report, a_ci_file_that_cannot_be_written_is_named_and_fails)
{
	const char *a, *b, *clean;
	struct result r;

	job_files(&a, &b, &clean);
	r = RUN(gg_cmd_report, NULL, "report", "--sarif", "/nonexistent/s.sarif", clean);
	cr_expect_eq(r.status, 2);
	cr_expect_str_eq(r.err, "gpuguard: report: --sarif /nonexistent/s.sarif: No such file or "
				"directory\n");
	cr_expect(strstr(r.out, "\nerrors: 0\n"), "%s", r.out);
	free_result(&r);
	remove_dir();
}

Test(report, says_what_coverage_guarded_and_why_not)
{
	const char *a, *b;
	struct result r;

	make_dir();
	a = summary_full("a.json", 10, "/path/app", 64, "", "", COVERAGE(9, "\"min_idx\": 1"), 0);
	r = RUN(gg_cmd_report, NULL, "report", a);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect(strstr(r.out, "\n  coverage: 9 of 10 allocations guarded; 1 not (min_idx 1)\n"), "%s",
		  r.out);
	free_result(&r);
	b = summary_full("b.json", 11, "/path/app", 64, "", "",
			 "\"coverage\": { \"allocations\": 4, \"guarded\": 0, \"guarded_bytes\": 0, "
			 "\"unguarded\": { \"capturing\": 3, \"min_idx\": 1 }, \"unguarded_bytes\": "
			 "400, \"vmm_bytes\": 0, \"procaddr_unmatched\": 2, "
			 "\"caching_allocators\": [ \"pytorch\" ] },\n  ",
			 0);
	assert_valid(b);
	r = RUN(gg_cmd_report, NULL, "report", a, b);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect(strstr(r.out,
			 "\n  coverage: 9 of 14 allocations guarded; 5 not (min_idx 2, "
			 "capturing 3); 2 cuGetProcAddress answers\n      matched no driver "
			 "function (calls through them are not seen); caching allocator: pytorch "
			 "(the\n      bands guard its segments, not each tensor)\n"),
		  "%s", r.out);
	free_result(&r);
	/* An older summary: no line. */
	r = RUN(gg_cmd_report, NULL, "report", summary("c.json", 12, "", "", 0));
	cr_expect_null(strstr(r.out, "coverage"), "%s", r.out);
	free_result(&r);
	remove_dir();
}

Test(report, refuses_a_coverage_member_of_the_wrong_shape)
{
	struct {
		const char *coverage, *message;
	} cases[] = {
		{ "\"coverage\": [],\n  ", "\"coverage\" is a array, expected an object" },
		{ "\"coverage\": { \"allocations\": 1, \"guarded\": \"1\" },\n  ",
		  "\"coverage.guarded\" is a string, expected a non-negative integer" },
		{ "\"coverage\": { \"allocations\": 1, \"guarded\": 1, \"unguarded\": { \"off\": -1 } "
		  "},\n  ",
		  "\"coverage.unguarded.off\" is the number -1, expected a non-negative "
		  "integer" },
		{ "\"coverage\": { \"allocations\": 1, \"guarded\": 1, \"caching_allocators\": [ 1 ] "
		  "},\n  ",
		  "\"coverage.caching_allocators[0]\" is a number, expected a string" },
	};

	struct result r;

	make_dir();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_refused(summary_full("x.json", 1, "/path/app", 64, "", "", cases[i].coverage, 0),
			       cases[i].coverage, cases[i].message);
	/* What the report reads, it needs, rather than read as zeros. */
	r = RUN(gg_cmd_report, NULL, "report",
		summary_full("x.json", 1, "/path/app", 64, "", "",
			     "\"coverage\": { \"guarded\": 1 },\n  ", 0));
	cr_expect_eq(r.status, 2);
	cr_expect(strstr(r.err, "no \"coverage.allocations\" member (expected a non-negative "
				"integer)\n"),
		  "%s", r.err);
	free_result(&r);
	remove_dir();
}

/* ---- gpuguard symbolize -------------------------------------------------- */

/* A call in this file whose return address is symbolized: the address is
 * that of the instruction after the call, on the next line, so only the
 * symbolization of offset - 1 names call_line. */
static void *return_address;
static volatile int after_the_call;

__attribute__((noinline)) static void callee(void)
{
	return_address = __builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

static int call_line; /* the line of callee()'s call, set by the call's own statement */

__attribute__((noinline)) static void caller(void)
{
	callee(), call_line = __LINE__;
	after_the_call++;
}

static bool on_path(const char *tool)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	while (path && *path) {
		size_t n = strcspn(path, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, tool);
		if (access(buf, X_OK) == 0)
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

static void need_a_symbolizer(void)
{
	if (!on_path("llvm-symbolizer") && !on_path("addr2line"))
		cr_skip_test("neither llvm-symbolizer nor addr2line is installed");
}

struct self {
	char exe[PATH_MAX], dir[PATH_MAX];
	const char *base;
	unsigned long offset; /* of the return address in this executable */
};

static void self_location(struct self *s)
{
	Dl_info info;
	ssize_t n = readlink("/proc/self/exe", s->exe, sizeof(s->exe) - 1);
	char *slash;

	cr_assert_gt(n, 0);
	s->exe[n] = '\0';
	caller();
	cr_assert_eq(after_the_call, 1);
	cr_assert(dladdr(return_address, &info));
	s->offset = (unsigned long)((char *)return_address - (char *)info.dli_fbase);
	snprintf(s->dir, sizeof(s->dir), "%s", s->exe);
	slash = strrchr(s->dir, '/');
	*slash = '\0';
	s->base = strrchr(s->exe, '/') + 1;
}

/* The first "test-cli-report.c:LINE" at or after @p names the call. */
static void expect_call_line(const char *p, const char *all)
{
	const char *file = "test-cli-report.c:";
	long line;

	cr_assert_not_null(p, "%s", all);
	p = strstr(p, file);
	cr_assert_not_null(p, "no %s in: %s", file, all);
	line = strtol(p + strlen(file), NULL, 10);
	cr_expect_eq(line, call_line, "line %ld, expected %d: %s", line, call_line, all);
}

Test(symbolize, adds_file_and_line_to_each_location_of_a_log)
{
	struct self s;
	struct result r;
	const char *log;
	char *p, line[PATH_MAX + 64];

	need_a_symbolizer();
	self_location(&s);
	make_dir();
	log = write_file("run.log",
			 "gpuguard[1] INFO:   REQUIRED  %s+0x%lx::k  1x\n"
			 "gpuguard[1] INFO:             1x CUDA_ERROR_NOT_FOUND at caller+0x9 "
			 "(%s+0x%lx)\n"
			 "gpuguard[1] ERROR: late miss after seal 1: m::f (E) at %s+0x%lx; aborting\n"
			 "gpuguard[1] INFO:             1x R at helper+0x9 (libcut.so+0x...\n"
			 "gpuguard[1] INFO:   #0 libnothere.so+0x10\n"
			 "gpuguard[1] INFO:   #1 libnothere.so+0x20\n",
			 s.base, s.offset, s.base, s.offset, s.base, s.offset);
	r = RUN(gg_cmd_symbolize, NULL, "symbolize", "-d", s.dir, log);
	cr_assert_eq(r.status, 0, "%s", r.err);
	/* A module name is no code location. */
	snprintf(line, sizeof(line), "gpuguard[1] INFO:   REQUIRED  %s+0x%lx::k  1x\n", s.base,
		 s.offset);
	cr_expect(!strncmp(r.out, line, strlen(line)), "%s", r.out);
	p = strstr(r.out, "1x CUDA_ERROR_NOT_FOUND at caller+0x9 (");
	cr_assert_not_null(p, "%s", r.out);
	p = strstr(p, ") at ");
	expect_call_line(p, r.out);
	cr_expect(strstr(r.out, "test-cli-report.c:"), "%s", r.out);
	p = strstr(r.out, "late miss after seal 1: m::f (E) at ");
	cr_assert_not_null(p, "%s", r.out);
	p = strstr(p, " at ");
	p = strstr(p + 4, " at ");
	expect_call_line(p, r.out);
	cr_expect(strstr(p, "; aborting\n"), "%s", r.out);
	/* What cannot be found is left alone, and said once; a site the log cut
	 * is no location. */
	cr_expect(strstr(r.out, "1x R at helper+0x9 (libcut.so+0x...\n"), "%s", r.out);
	cr_expect(strstr(r.out, "#0 libnothere.so+0x10\ngpuguard[1] INFO:   #1 libnothere.so+0x20\n"),
		  "%s", r.out);
	cr_expect_eq(count_of(r.err, "libnothere.so: not found"), 1, "%s", r.err);
	cr_expect_eq(count_of(r.err, "\n"), 1, "%s", r.err);
	free_result(&r);
	remove_dir();
}

Test(symbolize, leaves_a_symbolized_log_as_it_is)
{
	struct self s;
	struct result r1, r2;
	const char *log, *again;

	need_a_symbolizer();
	self_location(&s);
	make_dir();
	log = write_file("run.log", "gpuguard[1] ERROR: allocated at f+0x1 (%s+0x%lx)\n", s.base,
			 s.offset);
	r1 = RUN(gg_cmd_symbolize, NULL, "symbolize", "-d", s.dir, log);
	cr_assert_eq(r1.status, 0);
	again = write_file("again.log", "%s", r1.out);
	/* From standard input this time. */
	r2 = RUN(gg_cmd_symbolize, again, "symbolize", "-d", s.dir);
	cr_assert_eq(r2.status, 0);
	cr_expect_str_eq(r2.out, r1.out);
	cr_expect_eq(count_of(r2.out, " at "), 2, "%s", r2.out);
	free_result(&r1);
	free_result(&r2);
	remove_dir();
}

Test(symbolize, adds_a_line_member_to_each_site_of_a_json_summary)
{
	struct self s;
	struct result r;
	const char *path;
	struct gg_json *doc;
	struct gg_json_error err;
	const struct gg_json *site;
	char *at, *text;

	need_a_symbolizer();
	self_location(&s);
	make_dir();
	path = write_file("s.json",
			  "{ \"schema\": 1, \"unresolved\": [ { \"module\": \"m\", \"function\": "
			  "\"f\",\n  \"site\": { \"address\": \"0x55d0c0de1234\", \"object\": "
			  "\"%s\", \"offset\": \"0x%lx\", \"symbol\": \"main+0x56\" } },\n"
			  "  { \"site\": { \"address\": \"0x1\", \"object\": \"/no/such/lib.so\", "
			  "\"offset\": \"0x10\", \"symbol\": null } } ],\n  \"errors\": 1 }\n",
			  s.exe, s.offset);
	r = RUN(gg_cmd_symbolize, NULL, "symbolize", path);
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = gg_json_parse(r.out, strlen(r.out), &err);
	cr_assert_not_null(doc, "invalid JSON: line %u, column %u: %s\n%s", err.line, err.column,
			   err.message, r.out);
	site = gg_json_get(gg_json_at(gg_json_get(doc, "unresolved"), 0), "site");
	cr_assert(gg_json_is(gg_json_get(site, "line"), GG_JSON_STRING), "%s", r.out);
	expect_call_line(gg_json_string(gg_json_get(site, "line"), ""), r.out);
	cr_expect_str_eq(gg_json_string(gg_json_get(site, "symbol"), ""), "main+0x56");
	site = gg_json_get(gg_json_at(gg_json_get(doc, "unresolved"), 1), "site");
	cr_expect_null(gg_json_get(site, "line"), "%s", r.out);
	cr_expect(strstr(r.err, "/no/such/lib.so: not found"), "%s", r.err);
	gg_json_free(doc);
	/* Nothing else changed: take the member out and get the input back. */
	at = strstr(r.out, ", \"line\": \"");
	cr_assert_not_null(at);
	text = strdup(r.out);
	memmove(text + (at - r.out), strstr(at, "\" }") + 1, strlen(strstr(at, "\" }") + 1) + 1);
	{
		FILE *f = fopen(path, "r");
		char *in = read_all(f);

		fclose(f);
		cr_expect_str_eq(text, in);
		free(in);
	}
	free(text);
	free_result(&r);
	remove_dir();
}

/* The closed-binary recipe: a checked launch's call site gets its source line. */
Test(symbolize, names_the_source_line_of_the_launch_that_wrote_past_a_band)
{
	struct result r;
	struct gg_json *doc;
	struct gg_json_error err;
	const struct gg_json *kernel;
	const char *line;

	need_a_symbolizer();
	make_dir();
	run_app("checked.json", (const char *[]){ "--redzone", "16", "--check-launches", NULL },
		(const char *[]){ "alloc:64", "alloc:64", "two:0:1:8", NULL });
	r = RUN(gg_cmd_symbolize, NULL, "symbolize", in_tmp("checked.json"));
	cr_assert_eq(r.status, 0, "%s", r.err);
	doc = gg_json_parse(r.out, strlen(r.out), &err);
	cr_assert_not_null(doc, "%s", r.out);
	kernel = gg_json_get(gg_json_at(gg_json_get(doc, "violations"), 0), "kernel");
	line = gg_json_string(gg_json_get(gg_json_get(kernel, "site"), "line"), "");
	cr_expect(strstr(line, "tests/apps/app-redzone.c:"), "%s", r.out);
	cr_expect_str_eq(gg_json_string(gg_json_get(kernel, "name"), ""), "gg_overrun_second");
	gg_json_free(doc);
	free_result(&r);
	remove_dir();
}

Test(symbolize, falls_back_to_addr2line_without_llvm_symbolizer)
{
	struct self s;
	struct result r;
	char bin[PATH_MAX], link[PATH_MAX + 16];
	const char *log, *path = getenv("PATH");

	if (!on_path("addr2line"))
		cr_skip_test("addr2line is not installed");
	self_location(&s);
	make_dir();
	/* A PATH with addr2line alone. */
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	cr_assert_eq(mkdir(bin, 0755), 0);
	while (path && *path) {
		size_t n = strcspn(path, ":");
		char cand[PATH_MAX];

		snprintf(cand, sizeof(cand), "%.*s/addr2line", (int)n, path);
		if (access(cand, X_OK) == 0) {
			snprintf(link, sizeof(link), "%s/addr2line", bin);
			cr_assert_eq(symlink(cand, link), 0);
			break;
		}
		path += n + (path[n] == ':');
	}
	setenv("PATH", bin, 1);
	log = write_file("run.log", "at %s+0x%lx\n", s.base, s.offset);
	r = RUN(gg_cmd_symbolize, NULL, "symbolize", "-d", s.dir, log);
	cr_assert_eq(r.status, 0, "%s", r.err);
	expect_call_line(r.out, r.out);
	free_result(&r);
	remove_dir();
}

Test(symbolize, copies_the_input_unchanged_without_a_symbolizer)
{
	struct self s;
	struct result r;
	char want[PATH_MAX + 64];
	const char *log;

	self_location(&s);
	make_dir();
	setenv("PATH", dir, 1); /* holds neither tool */
	snprintf(want, sizeof(want), "gpuguard[1] ERROR: at f+0x1 (%s+0x%lx)\n", s.base, s.offset);
	log = write_file("run.log", "%s", want);
	r = RUN(gg_cmd_symbolize, NULL, "symbolize", "-d", s.dir, log);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.out, want);
	cr_expect(strstr(r.err, "gpuguard: symbolize: neither llvm-symbolizer nor addr2line is "
				"on PATH"),
		  "%s", r.err);
	free_result(&r);
	remove_dir();
}

/* The names symbolize prints on standard error, the input's and those of
 * the objects it names, are escaped: each message is one line. */
Test(symbolize, names_files_and_objects_escaped_on_one_line)
{
	const char *empty, *in;
	struct result r;

	make_dir();
	empty = write_file("e\nmpty\x1b.log", "%s", "");
	r = RUN(gg_cmd_symbolize, NULL, "symbolize", empty);
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_neq(strstr(r.err, "/e\\x0ampty\\x1b.log is empty"), NULL, "%s", r.err);
	cr_expect_eq(count_of(r.err, "\n"), 1, "%s", r.err);
	free_result(&r);

	in = write_file("s.json", "%s",
			"{ \"site\": { \"address\": \"0x1234\", \"object\": "
			"\"/no/such\\nobject\\u001b\", \"offset\": \"0x1234\" } }\n");
	r = RUN(gg_cmd_symbolize, NULL, "symbolize", in);
	cr_expect_neq(strstr(r.err, "/no/such\\x0aobject\\x1b: not found"), NULL, "%s", r.err);
	cr_expect_eq(count_of(r.err, "\n"), 1, "%s", r.err);
	free_result(&r);

	r = RUN(gg_cmd_symbolize, NULL, "symbolize", "--x\ny");
	cr_expect_eq(r.status, 2);
	cr_expect_neq(strstr(r.err, "unknown option '--x\\x0ay'"), NULL, "%s", r.err);
	free_result(&r);
	remove_dir();
}

/* A log that names many distinct objects: each is looked for once, and
 * named once where it is not found, in the order first seen; the log is
 * copied as it is. The objects are found by a hash of their names (a search
 * through those so far made such a log quadratic). */
Test(symbolize, looks_for_each_of_many_objects_once_in_order)
{
	enum {
		OBJECTS = 20000
	};
	const char *path = NULL;
	struct result r;
	char want[128];
	const char *at;
	FILE *f;

	need_a_symbolizer();
	make_dir();
	path = in_tmp("many.log");
	cr_assert_not_null(f = fopen(path, "w"));
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < OBJECTS; i++)
			fprintf(f, "frame %d: gg_no_such_object_%d.so+0x%x\n", i, i, 16 + round);
	cr_assert_eq(fclose(f), 0);
	r = RUN(gg_cmd_symbolize, NULL, "symbolize", path);
	cr_expect_eq(count_of(r.err, ": not found"), OBJECTS, "%.2000s", r.err);
	at = r.err;
	for (int i = 0; i < OBJECTS && at; i += 97) {
		snprintf(want, sizeof(want), "symbolize: gg_no_such_object_%d.so: not found", i);
		cr_expect_neq(at = strstr(at, want), NULL, "%s", want);
	}
	cr_expect_eq(count_of(r.out, "\n"), 2 * OBJECTS);
	cr_expect_neq(strstr(r.out, "frame 19999: gg_no_such_object_19999.so+0x11\n"), NULL);
	free_result(&r);
	remove_dir();
}

Test(symbolize, usage_errors_and_an_unreadable_input_exit_2)
{
	struct result r = RUN(gg_cmd_symbolize, NULL, "symbolize", "a.log", "b.log");

	cr_expect_eq(r.status, 2);
	cr_expect(strstr(r.err, "one FILE at most"), "%s", r.err);
	free_result(&r);
	r = RUN(gg_cmd_symbolize, NULL, "symbolize", "-d");
	cr_expect_eq(r.status, 2);
	cr_expect(strstr(r.err, "-d needs a directory"), "%s", r.err);
	free_result(&r);
	r = RUN(gg_cmd_symbolize, NULL, "symbolize", "-x");
	cr_expect_eq(r.status, 2);
	free_result(&r);
	r = RUN(gg_cmd_symbolize, NULL, "symbolize", "/no/such/file.log");
	cr_expect_eq(r.status, 2);
	cr_expect(strstr(r.err, "gpuguard: symbolize: /no/such/file.log: cannot read: "), "%s", r.err);
	cr_expect_str_eq(r.out, "");
	free_result(&r);
	r = RUN(gg_cmd_symbolize, NULL, "symbolize", "--help");
	cr_expect_eq(r.status, 0);
	cr_expect(!strncmp(r.out, "usage: gpuguard symbolize", 25), "%s", r.out);
	free_result(&r);
}

/* ---- launch errors: docs/how-it-works.md, "The kernel-lookup audit and the gate" ---- */

Test(report, shows_each_kernel_whose_launches_were_refused)
{
	const char *a;
	struct result r;

	make_dir();
	a = summary_full("a.json", 4711, "/path/app", 64, "", "",
			 "\"launch_errors\": [ { \"name\": \"gemm\\u0007\", \"module\": \"k.cubin\", "
			 "\"count\": 3, \"result\": \"CUDA_ERROR_NO_BINARY_FOR_GPU\" } ],\n  ",
			 0);
	assert_valid(a);
	r = RUN(gg_cmd_report, NULL, "report", a);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect(strstr(r.out, "\n  launch errors: gemm\\x07 (module k.cubin): 3 refused launches, "
				"last CUDA_ERROR_NO_BINARY_FOR_GPU\n"),
		  "%s", r.out);
	free_result(&r);
	/* None refused: no such line. */
	r = RUN(gg_cmd_report, NULL, "report", summary("b.json", 12, "", "", 0));
	cr_expect_null(strstr(r.out, "launch errors"), "%s", r.out);
	free_result(&r);
	/* A malformed item is refused, named. */
	expect_refused(summary_full("c.json", 1, "/path/app", 64, "", "",
				    "\"launch_errors\": [ { \"name\": \"k\", \"module\": \"m\", "
				    "\"count\": -1, \"result\": \"X\" } ],\n  ",
				    0),
		       "launch_errors",
		       "\"launch_errors[0].count\" is the number -1, expected a "
		       "non-negative integer");
	remove_dir();
}

/* ---- output files that are inputs (gpuguard(1), report) ---- */

/* --junit or --sarif naming a summary to read, or a file that holds one
 * (a --junit whose FILE was forgotten before a glob of summaries takes the
 * first), is refused before anything is read or written. */
Test(report, refuses_to_write_junit_or_sarif_over_a_summary_or_an_input)
{
	const char *a, *b, *clean, *link, *text;
	char *before, *after, want[PATH_MAX * 2 + 200];
	struct result r;

	job_files(&a, &b, &clean);
	/* in_tmp's buffers are reused: keep these. */
	a = strdup(a);
	b = strdup(b);
	clean = strdup(clean);
	cr_assert(a && b && clean);
	before = file_text(a);

	/* The first summary of a glob taken for --junit's FILE. */
	r = RUN(gg_cmd_report, NULL, "report", "--junit", a, b, clean);
	cr_expect_eq(r.status, 2);
	cr_expect_str_eq(r.out, "");
	snprintf(want, sizeof(want),
		 "gpuguard: report: --junit %s: holds a gpuguard summary; it is "
		 "not overwritten (--junit takes the file to write, as in --junit junit.xml)\n",
		 a);
	cr_expect_str_eq(r.err, want);
	free_result(&r);

	/* One of the inputs, by name, by another name (a link), and by name
	 * when it does not exist. */
	r = RUN(gg_cmd_report, NULL, "report", "--sarif", b, a, b);
	cr_expect_eq(r.status, 2);
	snprintf(want, sizeof(want),
		 "gpuguard: report: --sarif %s: is one of the summaries to read, "
		 "an input; it is not overwritten (--sarif takes the file to write, as in --sarif "
		 "gpuguard.sarif)\n",
		 b);
	cr_expect_str_eq(r.err, want);
	free_result(&r);
	link = in_tmp("link.json");
	cr_assert_eq(symlink(a, link), 0);
	r = RUN(gg_cmd_report, NULL, "report", "--junit=", "--junit", link, a);
	cr_expect_eq(r.status, 2, "an empty --junit= is refused first");
	free_result(&r);
	r = RUN(gg_cmd_report, NULL, "report", "--junit", link, a);
	cr_expect_eq(r.status, 2);
	cr_expect(strstr(r.err, "is one of the summaries to read, an input"), "%s", r.err);
	free_result(&r);
	r = RUN(gg_cmd_report, NULL, "report", "--sarif", in_tmp("./none.json"), in_tmp("none.json"));
	cr_expect_eq(r.status, 2);
	cr_expect(strstr(r.err, "is one of the summaries to read, an input"), "%s", r.err);
	cr_expect_eq(access(in_tmp("none.json"), F_OK), -1, "nothing written");
	free_result(&r);

	/* Standard input, when it is the file. */
	text = write_file("notes.txt", "not a summary\n");
	r = RUN(gg_cmd_report, text, "report", "--junit", text, "-");
	cr_expect_eq(r.status, 2);
	snprintf(want, sizeof(want),
		 "gpuguard: report: --junit %s: is standard input, an input; it "
		 "is not overwritten (--junit takes the file to write, as in --junit junit.xml)\n",
		 text);
	cr_expect_str_eq(r.err, want);
	free_result(&r);

	/* --junit and --sarif naming one file. */
	r = RUN(gg_cmd_report, NULL, "report", "--junit", in_tmp("ci.out"), "--sarif",
		in_tmp("./ci.out"), clean);
	cr_expect_eq(r.status, 2);
	snprintf(want, sizeof(want),
		 "gpuguard: report: --junit %s: --sarif names the same file; "
		 "give each a file of its own\n",
		 in_tmp("ci.out"));
	cr_expect_str_eq(r.err, want);
	free_result(&r);

	after = file_text(a);
	cr_expect_str_eq(after, before, "the summary was overwritten");
	free(after);
	after = file_text(text);
	cr_expect_str_eq(after, "not a summary\n");
	free(after);
	free(before);

	/* What is not a summary is written over as before: an earlier report's
	 * SARIF (JSON, but no "schema" and "pid"), an earlier JUnit file. */
	write_file("old.sarif", "{ \"version\": \"2.1.0\", \"runs\": [] }\n");
	write_file("old.xml", "<testsuites/>\n");
	r = RUN(gg_cmd_report, NULL, "report", "--sarif", in_tmp("old.sarif"), "--junit",
		in_tmp("old.xml"), clean);
	cr_expect_eq(r.status, 0, "%s", r.err);
	cr_expect_str_eq(r.err, "");
	after = file_text(in_tmp("old.xml"));
	cr_expect(strstr(after, "tests=\"1\""), "%s", after);
	free(after);
	free_result(&r);
	free((char *)a);
	free((char *)b);
	free((char *)clean);
	remove_dir();
}

/* ---- empty, truncated and malformed input ---- */

/* Inputs neither command can use as a summary, at DIR/NAME: NAME, and its
 * text (@len bytes; none holds a NUL). */
struct bad_input {
	const char *name;
	char *text;
	size_t len;
};

static void write_bytes(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	cr_assert_eq(fwrite(text, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
}

static size_t bad_inputs(struct bad_input *in)
{
	enum {
		DEEP = 100000,
		RANDOM = 4096
	};
	char *whole = file_text(summary_unchecked("whole.json", 1, MISSING_KERNEL, VIOLATION(7), 2));
	char *deep_array = malloc(DEEP + 1), *deep_object = malloc(DEEP + 1),
	     *noise = malloc(RANDOM + 1);
	char *digits = malloc(1000 + 64);
	uint32_t seed = 12345;
	size_t n = 0;

	cr_assert(deep_array && deep_object && noise && digits);
	memset(deep_array, '[', DEEP);
	for (size_t i = 0; i + 5 <= DEEP; i += 5)
		memcpy(deep_object + i, "{\"a\":", 5);
	deep_array[DEEP] = deep_object[DEEP] = '\0';
	/* Bytes of a fixed sequence, none a NUL; the first no JSON value's. */
	for (size_t i = 0; i < RANDOM; i++) {
		seed = seed * 1103515245u + 12345u;
		noise[i] = (char)((seed >> 16) % 255 + 1);
	}
	noise[0] = (char)0x9c;
	noise[RANDOM] = '\0';
	/* A pid of a thousand digits. */
	strcpy(digits, "{ \"schema\": 1, \"pid\": ");
	memset(digits + strlen(digits), '9', 1000);
	strcpy(digits + strlen("{ \"schema\": 1, \"pid\": ") + 1000, " }\n");
	in[n++] = (struct bad_input){ "empty.json", strdup(""), 0 };
	/* Cut before its first call site: what a full disk leaves of a file. */
	whole[strstr(whole, "\"unresolved\": [") - whole] = '\0';
	in[n++] = (struct bad_input){ "truncated.json", whole, strlen(whole) };
	in[n++] = (struct bad_input){ "random.bin", noise, RANDOM };
	in[n++] = (struct bad_input){ "deep-array.json", deep_array, DEEP };
	in[n++] = (struct bad_input){ "deep-object.json", deep_object, DEEP };
	in[n++] = (struct bad_input){ "huge-exponent.json",
				      strdup("{ \"schema\": 1e999999, \"pid\": 1e999999 }\n"), 0 };
	in[n++] = (struct bad_input){ "huge-integer.json", digits, 0 };
	in[n++] = (struct bad_input){ "invalid-utf8.json",
				      strdup("{ \"schema\": 1, \"exe\": \"/bin/\xff\xfe\x80\" }\n"),
				      0 };
	for (size_t i = 0; i < n; i++) {
		cr_assert_not_null(in[i].text);
		if (!in[i].len)
			in[i].len = strlen(in[i].text);
		write_bytes(in_tmp(in[i].name), in[i].text, in[i].len);
	}
	return n;
}

/* Exit 2, nothing on stdout, the file named with what is wrong with it; no
 * crash, and nothing a sanitizer says (its reports go to stderr too). */
Test(report, names_empty_truncated_and_malformed_files_and_exits_2)
{
	static const char *const why[] = {
		"line 1, column 1: empty document (expected a value)\n",
		"line 7, column 3: unexpected end of input (expected a string key)\n",
		"line 1, column 1: expected a value, found byte 0x9c\n",
		"line 1, column 513: nesting deeper than 512 levels\n",
		"line 1, column 2561: nesting deeper than 512 levels\n",
		"line 1, column 13: schema 1e999999 is not supported (this gpuguard reads schema 1)\n",
		("line 1, column 23: \"pid\" is the number "
		 "9999999999999999999999999999999999999999..., "
		 "expected a non-negative integer\n"),
		"line 1, column 29: invalid UTF-8 byte 0xff in string\n",
	};
	struct bad_input in[16];
	struct result r;
	char want[PATH_MAX + 300];
	size_t n;

	make_dir();
	n = bad_inputs(in);
	cr_assert_eq(n, sizeof(why) / sizeof(why[0]));
	for (size_t i = 0; i < n; i++) {
		r = RUN(gg_cmd_report, NULL, "report", in_tmp(in[i].name));
		cr_expect_eq(r.status, 2, "%s", in[i].name);
		cr_expect_str_eq(r.out, "", "%s", in[i].name);
		snprintf(want, sizeof(want), "gpuguard: report: %s: %s", in_tmp(in[i].name), why[i]);
		cr_expect_str_eq(r.err, want, "%s", in[i].name);
		free_result(&r);
	}
	r = RUN(gg_cmd_report, NULL, "report", "/dev/null");
	cr_expect_eq(r.status, 2);
	cr_expect_str_eq(r.err, "gpuguard: report: /dev/null: line 1, column 1: empty document "
				"(expected a value)\n");
	cr_expect_str_eq(r.out, "");
	free_result(&r);
	r = RUN(gg_cmd_report, "/dev/null", "report", "-");
	cr_expect_eq(r.status, 2);
	cr_expect_str_eq(r.err, "gpuguard: report: -: line 1, column 1: empty document (expected a "
				"value)\n");
	free_result(&r);
	/* With a good one: that is reported, the others named and skipped. */
	r = RUN(gg_cmd_report, NULL, "report", in_tmp(in[0].name), in_tmp(in[2].name),
		in_tmp(in[3].name), summary("good.json", 4711, "", "", 0));
	cr_expect_eq(r.status, 2);
	cr_expect(strstr(r.out, "\nskipped: 3 files that could not be read"), "%s", r.out);
	cr_expect_eq(count_of(r.err, "\n"), 3, "%s", r.err);
	free_result(&r);
	for (size_t i = 0; i < n; i++)
		free(in[i].text);
	remove_dir();
}

/* symbolize copies what it cannot read as a summary as a log, and says when
 * there was nothing to symbolize in it: exit 0, the input unchanged on
 * stdout. /dev/null once passed a NULL array to qsort (UBSan). */
Test(symbolize, copies_empty_truncated_and_malformed_input_and_says_so)
{
	struct bad_input in[16];
	struct result r;
	char want[PATH_MAX + 300];
	size_t n;

	make_dir();
	n = bad_inputs(in);
	for (size_t i = 0; i < n; i++) {
		const char *path = in_tmp(in[i].name);

		r = RUN(gg_cmd_symbolize, NULL, "symbolize", path);
		cr_expect_eq(r.status, 0, "%s: %s", in[i].name, r.err);
		cr_expect_str_eq(r.out, in[i].text, "%s", in[i].name);
		if (!in[i].len)
			snprintf(want, sizeof(want),
				 "gpuguard: symbolize: %s is empty: nothing to "
				 "symbolize\n",
				 path);
		else
			snprintf(want, sizeof(want),
				 "gpuguard: symbolize: %s: no code location in it "
				 "(OBJECT+0xOFFSET in a log, a \"site\" with \"object\" and \"offset\" "
				 "in a JSON summary); copied as it is\n",
				 path);
		cr_expect(strstr(r.err, want), "%s\n%s", want, r.err);
		cr_expect_null(strstr(r.err, "runtime error"), "%s", r.err);
		free_result(&r);
	}
	/* A summary that does not parse is said so, then read as a log. */
	r = RUN(gg_cmd_symbolize, NULL, "symbolize", in_tmp("truncated.json"));
	cr_expect(strstr(r.err, "truncated.json: line "), "%s", r.err);
	cr_expect(strstr(r.err, "unexpected end of input (expected a string key); read as a log "
				"instead\n"),
		  "%s", r.err);
	free_result(&r);
	r = RUN(gg_cmd_symbolize, NULL, "symbolize", in_tmp("deep-object.json"));
	cr_expect(strstr(r.err, "line 1, column 2561: nesting deeper than 512 levels; read as a log "
				"instead\n"),
		  "%s", r.err);
	free_result(&r);
	r = RUN(gg_cmd_symbolize, NULL, "symbolize", "/dev/null");
	cr_expect_eq(r.status, 0);
	cr_expect_str_eq(r.out, "");
	cr_expect_str_eq(r.err, "gpuguard: symbolize: /dev/null is empty: nothing to symbolize\n");
	free_result(&r);
	r = RUN(gg_cmd_symbolize, "/dev/null", "symbolize");
	cr_expect_eq(r.status, 0);
	cr_expect_str_eq(r.err, "gpuguard: symbolize: standard input is empty: nothing to "
				"symbolize\n");
	free_result(&r);
	for (size_t i = 0; i < n; i++)
		free(in[i].text);
	remove_dir();
}

/* A summary of findings, and the parts the report, its JUnit and its SARIF
 * must each hold (NULL-ended lists); the report exits 1 and says nothing on
 * stderr. */
struct every_format {
	const char *file;
	int pid;
	const char *violations;
	int errors;
	const char *out[4], *junit[3], *sarif[3];
};

static void expect_parts(const char *text, const char *const *parts, const char *what)
{
	for (; *parts; parts++)
		cr_expect(strstr(text, *parts), "%s lacks\n%s\nin\n%s", what, *parts, text);
}

static void expect_every_format(const struct every_format *row)
{
	const char *a;
	struct result r;
	char *junit, *sarif;

	make_dir();
	a = summary(row->file, row->pid, "", row->violations, row->errors);
	r = RUN(gg_cmd_report, NULL, "report", "--junit", in_tmp("j.xml"), "--sarif", in_tmp("s.sarif"),
		a);
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_expect_str_eq(r.err, "");
	expect_parts(r.out, row->out, "the report");
	junit = junit_of(in_tmp("j.xml"));
	expect_parts(junit, row->junit, "the JUnit");
	sarif = sarif_of(in_tmp("s.sarif"));
	expect_parts(sarif, row->sarif, "the SARIF");
	free(junit);
	free(sarif);
	free_result(&r);
	remove_dir();
}

/* A copy or set refused for reaching a band (kind "api_overrun"): the
 * report, JUnit and SARIF name the call, its range and the allocation, and
 * SARIF locates it at the call. */
#define API_OVERRUN                                                                            \
	"{ \"kind\": \"api_overrun\", \"api\": \"cuMemcpyHtoD_v2\", \"side\": \"dst\", "       \
	"\"address\": \"0x7f0000000000\", \"bytes\": 116, \"index\": 3, \"user_bytes\": 100, " \
	"\"ptr\": \"0x7f0000000000\", \"result\": \"CUDA_ERROR_INVALID_VALUE\",\n"             \
	"      \"site\": { \"address\": \"0x55d0c0de1300\", \"object\": \"/path/app\", "       \
	"\"offset\": \"0x1300\", \"symbol\": \"load_weights+0x56\" },\n"                       \
	"      \"call_site\": { \"address\": \"0x55d0c0de1400\", \"object\": \"/path/app\", "  \
	"\"offset\": \"0x1400\", \"symbol\": \"upload+0x12\" } }"

Test(report, names_the_call_range_and_allocation_of_a_refused_copy_in_every_format)
{
	static const struct every_format row = {
		"api.json",
		4720,
		API_OVERRUN ", " VIOLATION(7),
		2,
		.out = { "red zone violations: 2\n"
			 "  allocation #3 (100 bytes): cuMemcpyHtoD_v2 dst of 116 bytes at "
			 "0x7f0000000000 runs 16 bytes past\n"
			 "      its end (api_overrun)\n"
			 "      refused with CUDA_ERROR_INVALID_VALUE, called at upload+0x12 "
			 "(app+0x1400)\n"
			 "      allocated at load_weights+0x56 (app+0x1300)\n"
			 "  allocation #7 (1000 bytes, 64-byte band)" },
		.junit = { "app (pid 4720): api-overrun redzone-violation\n",
			   "  copy or set past the end: cuMemcpyHtoD_v2 dst of 116 bytes at "
			   "0x7f0000000000 reaches past allocation #3 (100 bytes), refused with "
			   "CUDA_ERROR_INVALID_VALUE\n"
			   "    called at upload+0x12 (app+0x1400)\n"
			   "    allocated at load_weights+0x56 (app+0x1300)\n" },
		.sarif = { "api-overrun file:///path/app - - app+0x1400 ",
			   "redzone-violation file:///path/app - - app+0x1300 " },
	};

	expect_every_format(&row);
}

/* A write below an allocation's start (kind "underflow"), found in the band
 * of the allocation below: the report, JUnit and SARIF name the allocation
 * written below (located where it was made) and the band that caught it;
 * an overrun up to a band's top names the allocation above it. */
#define UNDERFLOW                                                                                 \
	"{ \"kind\": \"underflow\", \"index\": 0, \"user_bytes\": 200, \"pad_bytes\": 64, "       \
	"\"first\": 308, \"last\": 311, \"changed\": 4, \"first_value\": 85, \"expected\": 238, " \
	"\"detected_by\": \"free\", \"slack_bytes\": 248,\n"                                      \
	"      \"site\": { \"address\": \"0x55d0c0de1300\", \"object\": \"/path/app\", "          \
	"\"offset\": \"0x1300\", \"symbol\": \"load_weights+0x56\" },\n"                          \
	"      \"upper\": { \"index\": 1, \"user_bytes\": 200, \"address\": \"0x7f0000000200\", " \
	"\"site\": { \"address\": \"0x55d0c0de1500\", \"object\": \"/path/app\", "                \
	"\"offset\": \"0x1500\", \"symbol\": \"load_bias+0x10\" } },\n"                           \
	"      \"suspects\": [ { \"name\": \"shift_left\", \"module\": \"app+0x2040\", "          \
	"\"launch\": 3 } ] }"
#define OVERRUN_TO_THE_TOP                                                                        \
	"{ \"kind\": \"overrun\", \"index\": 4, \"user_bytes\": 200, \"pad_bytes\": 64, "         \
	"\"first\": 0, \"last\": 311, \"changed\": 312, \"first_value\": 65, \"expected\": 238, " \
	"\"detected_by\": \"scan\", \"slack_bytes\": 248,\n"                                      \
	"      \"site\": { \"address\": \"0x55d0c0de1300\", \"object\": \"/path/app\", "          \
	"\"offset\": \"0x1300\", \"symbol\": \"load_weights+0x56\" },\n"                          \
	"      \"upper\": { \"index\": 5, \"user_bytes\": 100, \"address\": \"0x7f0000000600\", " \
	"\"site\": { \"address\": \"0x55d0c0de1500\", \"object\": \"/path/app\", "                \
	"\"offset\": \"0x1500\", \"symbol\": \"load_bias+0x10\" } },\n"                           \
	"      \"suspects\": [] }"

Test(report, names_the_allocation_written_below_its_start_in_every_format)
{
	static const struct every_format row = {
		"under.json",
		4721,
		UNDERFLOW ", " OVERRUN_TO_THE_TOP,
		2,
		.out = { "red zone violations: 2\n"
			 "  allocation #1 (200 bytes): underflow, 4 bytes changed\n"
			 "      1..4 bytes below its start, first 0x55 (expected 0xee), detected by "
			 "free\n"
			 "      allocated at load_bias+0x10 (app+0x1500)\n"
			 "      found in the band of allocation #0 (200 bytes, 64-byte band + 248 "
			 "bytes "
			 "to the next 256-byte\n"
			 "          boundary) directly below, allocated at load_weights+0x56 "
			 "(app+0x1300)\n"
			 "      suspects: shift_left (launch #3)\n",
			 "  allocation #4 (200 bytes, 64-byte band + 248 bytes to the next "
			 "256-byte boundary): 312 bytes\n",
			 "      its band's top is directly below allocation #5 (100 bytes), "
			 "allocated at\n"
			 "          load_bias+0x10 (app+0x1500)\n" },
		.junit = { "app (pid 4721): underflow redzone-violation\n",
			   "  underflow: 4 bytes before the start of allocation #1 (200 bytes) "
			   "changed, detected by free\n"
			   "    allocated at load_bias+0x10 (app+0x1500)\n"
			   "    found in the band of allocation #0 (200 bytes) directly below, "
			   "allocated at load_weights+0x56 (app+0x1300)\n"
			   "    suspects: shift_left (app+0x2040, launch 3)\n" },
		.sarif = { "underflow file:///path/app - - app+0x1500 ",
			   "redzone-violation file:///path/app - - app+0x1300 " },
	};

	expect_every_format(&row);
}

Test(report, refuses_an_underflow_without_the_allocation_written_below)
{
	struct result r;
	const char *a;

	make_dir();
	a = summary_unchecked("bad.json", 1, "",
			      "{ \"kind\": \"underflow\", \"index\": 0, \"user_bytes\": 4, "
			      "\"pad_bytes\": 16, \"first\": 0, \"last\": 0, \"changed\": 1, "
			      "\"first_value\": 1, \"expected\": 238, \"detected_by\": \"free\", "
			      "\"site\": null }",
			      1);
	r = RUN(gg_cmd_report, NULL, "report", a);
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_expect(strstr(r.err, "no \"violations[0].upper\" member (expected an object)"), "%s", r.err);
	free_result(&r);
	remove_dir();
}

Test(report, refuses_an_api_overrun_missing_a_member_it_reads)
{
	struct result r;
	const char *a;

	make_dir();
	a = summary_unchecked("bad.json", 1, "",
			      "{ \"kind\": \"api_overrun\", \"api\": \"cuMemsetD8_v2\", "
			      "\"side\": \"dst\", \"address\": \"0x10\", \"index\": 0, "
			      "\"user_bytes\": 4, \"result\": \"R\", \"site\": null }",
			      1);
	r = RUN(gg_cmd_report, NULL, "report", a);
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_expect(strstr(r.err, "no \"violations[0].bytes\" member (expected a non-negative "
				"integer)"),
		  "%s", r.err);
	free_result(&r);
	remove_dir();
}
