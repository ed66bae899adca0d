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
#include <ftw.h>
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
#include "json.h"

/* ---- helpers ------------------------------------------------------------- */

static char dir[256]; /* the temporary directory of a test */

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "%s/gg-cli-report-XXXXXX", P_tmpdir);
	cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void remove_dir(void)
{
	if (dir[0])
		nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
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

__attribute__((format(printf, 2, 3))) static const char *write_file(const char *name,
								    const char *fmt, ...)
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

	cr_assert_not_null(v, "%s: line %u, column %u: %s", text, err.line, err.column,
			   err.message);
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
		cr_expect_eq(err.column, docs[i].column, "%s: column %u", docs[i].text,
			     err.column);
		cr_expect(strstr(err.message, docs[i].message), "%s: \"%s\", expected \"%s\"",
			  docs[i].text, err.message, docs[i].message);
	}
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

/* The errors of the summary @path against docs/summary.schema.json (SPEC §6),
 * NULL when it validates. Free with free(). */
static char *schema_errors(const char *path)
{
	static const char script[] =
		"import json, sys, jsonschema\n"
		"schema = json.load(open(sys.argv[2]))\n"
		"v = jsonschema.Draft202012Validator(schema)\n"
		"errors = list(v.iter_errors(json.load(open(sys.argv[1]))))\n"
		"for e in errors: print('%s: %s' % (e.json_path, e.message))\n"
		"sys.exit(3 if errors else 0)\n";
	char cmd[PATH_MAX * 2 + sizeof(script) + 64];
	FILE *p;
	char *out;
	int status;

	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 -c \"$(cat <<'EOF'\n%sEOF\n)\" '%s' '%s' 2>&1",
		 script, path, GG_SOURCE_ROOT "/docs/summary.schema.json");
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	out = calloc(1, 65536);
	cr_assert_not_null(out);
	fread(out, 1, 65535, p); /* the first errors are enough */
	status = pclose(p);
	cr_assert(WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3),
		  "%s: %s", path, out);
	if (WEXITSTATUS(status) == 0) {
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

/* A summary as the shim writes it (SPEC §6). */
static const char *summary_unchecked(const char *name, int pid, const char *unresolved,
				     const char *violations, int errors)
{
	return write_file(name,
		"{ \"schema\": 1, \"pid\": %d, \"exe\": \"/path/app\", \"sealed\": true, "
		"\"seals\": 1,\n"
		"  \"config\": { \"redzone\": 64, \"fill\": 238, \"allow_unresolved\": false, "
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
		"  \"redzones\": { \"scans\": 2, \"checked\": 18, \"unchecked\": 0, \"registry_bytes\": 4096,\n"
		"      \"scan_driver_calls\": 2, \"batched\": true },\n"
		"  \"violations\": [%s],\n"
		"  \"errors\": %d }\n",
		pid, unresolved, violations, errors);
}

static const char *summary(const char *name, int pid, const char *unresolved,
			   const char *violations, int errors)
{
	const char *path = summary_unchecked(name, pid, unresolved, violations, errors);

	assert_valid(path);
	return path;
}

#define MISSING_KERNEL                                                                        \
	"{ \"module\": \"app+0x2040\", \"function\": \"missing_kernel\",\n"                    \
	"      \"expected_absent\": false, \"count\": 1, \"result\": \"CUDA_ERROR_NOT_FOUND\",\n" \
	"      \"site\": { \"address\": \"0x55d0c0de1234\", \"object\": \"/path/app\",\n"        \
	"                \"offset\": \"0x1234\", \"symbol\": \"main+0x56\" } }"
#define MISSING_KERNEL_ELSEWHERE                                                              \
	"{ \"module\": \"app+0x2040\", \"function\": \"missing_kernel\",\n"                    \
	"      \"expected_absent\": false, \"count\": 2, \"result\": \"CUDA_ERROR_NOT_FOUND\",\n" \
	"      \"site\": { \"address\": \"0x55d0c0de1260\", \"object\": \"/path/app\",\n"        \
	"                \"offset\": \"0x1260\", \"symbol\": \"main+0x80\" } }"
#define OPTIONAL_KERNEL                                                                       \
	"{ \"module\": \"app+0x2040\", \"function\": \"fast_path_sm100\",\n"                   \
	"      \"expected_absent\": true, \"count\": 3, \"result\": \"CUDA_ERROR_NOT_FOUND\",\n"  \
	"      \"site\": { \"address\": \"0x55d0c0de1258\", \"object\": \"/path/app\",\n"        \
	"                \"offset\": \"0x1258\", \"symbol\": null } }"
#define VIOLATION(index)                                                                      \
	"{ \"index\": " #index ", \"user_bytes\": 1000, \"pad_bytes\": 64,\n"                   \
	"      \"first\": 0, \"last\": 7, \"changed\": 8, \"first_value\": 65, "                 \
	"\"expected\": 238,\n"                                                                 \
	"      \"detected_by\": \"scan\", \"site\": { \"address\": \"0x55d0c0de1300\", "          \
	"\"object\": \"/path/app\", \"offset\": \"0x1300\", \"symbol\": \"load_weights+0x56\" } }"

/* Three processes of a job: 4711 misses a kernel (from two call sites) and
 * overflows allocation #7, 4712 misses the same kernel and overflows #9,
 * 4713 is clean. */
static void job_files(const char **a, const char **b, const char **clean)
{
	make_dir();
	*a = summary("run.4711.json", 4711,
		     MISSING_KERNEL ", " OPTIONAL_KERNEL ", " MISSING_KERNEL_ELSEWHERE,
		     VIOLATION(7), 2);
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
	cr_expect(strstr(r.out, "process 4711: /path/app, sealed (1 seal), 2 errors\n"), "%s",
		  r.out);
	cr_expect(strstr(r.out, "  lookups: 12 kernels, 10 resolved, 1 required unresolved, "
				"1 expected absent, 0 late misses\n"), "%s", r.out);
	cr_expect(strstr(r.out, "  allocations: 10 calls, 0 failed, 9 padded, 0 unpadded "
				"fallbacks, 2 live (2048 bytes)\n"), "%s", r.out);
	cr_expect(strstr(r.out, "  red zones: 2 scans, 18 bands checked, 0 unchecked\n"), "%s",
		  r.out);
	cr_expect(strstr(r.out, "unresolved kernel lookups: 2 (1 required, 1 expected absent)\n"
				"  REQUIRED  app+0x2040::missing_kernel  3x\n"
				"            1x CUDA_ERROR_NOT_FOUND at main+0x56 (app+0x1234)\n"
				"            2x CUDA_ERROR_NOT_FOUND at main+0x80 (app+0x1260)\n"
				"  expected  app+0x2040::fast_path_sm100  3x\n"
				"            3x CUDA_ERROR_NOT_FOUND at app+0x1258\n"), "%s", r.out);
	cr_expect(strstr(r.out, "red zone violations: 1\n"
				"  allocation #7 (1000 bytes, 64-byte band): 8 bytes changed\n"
				"      at offsets 0..7 past the end, first 0x41 (expected 0xee), "
				"detected by scan\n"
				"      allocated at load_weights+0x56 (app+0x1300)\n"), "%s", r.out);
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
	one = write_file("one.json",
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
		"  \"redzones\": { \"scans\": 1, \"checked\": 1, \"unchecked\": 0, \"registry_bytes\": 64,\n"
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
				"0 expected absent, 1 late miss\n"), "%s", r.out);
	cr_expect(strstr(r.out, "  allocations: 1 call, 0 failed, 1 padded, 1 unpadded "
				"fallback, 1 live (1 byte)\n"), "%s", r.out);
	cr_expect(strstr(r.out, "  red zones: 1 scan, 1 band checked, 0 unchecked\n"), "%s", r.out);
	cr_expect(strstr(r.out, "  allocation #0 (1 byte, 16-byte band): 1 byte changed\n"
				"      at offset 3 past the end, first 0x41 (expected 0xee), "
				"detected by free\n"), "%s", r.out);
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
				"4711\n"), "%s", r.out);
	cr_expect(strstr(r.out, "unresolved kernel lookups: 2 (1 required, 1 expected absent)\n"),
		  "%s", r.out);
	/* Totals over the three. */
	cr_expect(strstr(r.out, "totals:\n  lookups: 36 kernels, 30 resolved, 3 required "
				"unresolved, 3 expected absent, 0 late misses\n"), "%s", r.out);
	cr_expect(strstr(r.out, "  allocations: 30 calls, 0 failed, 27 padded, 0 unpadded "
				"fallbacks, 6 live (6144 bytes)\n"), "%s", r.out);
	cr_expect(strstr(r.out, "\nerrors: 3 in 2 of 3 processes (4711: 2, 4712: 1)\n"), "%s",
		  r.out);
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
				"  pid 4711: allocation #7 (1000 bytes, 64-byte band)"), "%s", r.out);
	cr_expect(strstr(r.out, "  pid 4712: allocation #9 (1000 bytes, 64-byte band)"), "%s",
		  r.out);
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
				"  pids 10, 11: allocation #7 "), "%s", r.out);
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
	/* Named and skipped: the readable one is still reported (SPEC §8). */
	snprintf(want, sizeof(want), "gpuguard report: %s\n", a);
	cr_expect_eq(strncmp(r.out, want, strlen(want)), 0, "%s", r.out);
	cr_expect(strstr(r.out, "\nskipped: 1 file that could not be read (named on standard "
				"error)\n"), "%s", r.out);
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
	snprintf(want, sizeof(want), "gpuguard: report: %s: line 2, column 26: unexpected end of "
		 "input (expected ',' or '}')\n", cut);
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
		{ "  \"lookups\"", "},\n", "line 1, column 1: no \"lookups\" member (expected an object)" },
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
		{ ",\n  \"errors\": 2", NULL, "no \"errors\" member (expected a non-negative integer)" },
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
	path = broken_summary("\"user_bytes\": 1000", NULL,
			      "\"user_bytes\": 18446744073709551615");
	assert_valid(path);
	r = RUN(gg_cmd_report, NULL, "report", path);
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_expect(strstr(r.out, "  allocation #7 (18446744073709551615 bytes, 64-byte band): "
				"8 bytes changed\n"), "%s", r.out);
	free_result(&r);
	remove_dir();
}

Test(report, names_an_unreadable_file)
{
	struct result r;

	make_dir();
	r = RUN(gg_cmd_report, NULL, "report", in_tmp("absent.json"));
	cr_assert_eq(r.status, 2);
	cr_expect(strstr(r.err, "absent.json: cannot read: No such file or directory\n"), "%s",
		  r.err);
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
	cr_expect(!strncmp(r.out, "usage: gpuguard report [--help] FILE.json...\n", 45), "%s",
		  r.out);
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
		"\"object\": \"\", \"offset\": \"0x1\", \"symbol\": null } }", "", 1);
	r = RUN(gg_cmd_report, NULL, "report", in_tmp("e.json"));
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_expect(strstr(r.out, "  REQUIRED  m\\x1b[2J::f\\x0a\\u009b  1x\n"), "%s", r.out);
	cr_expect_null(strchr(r.out, '\x1b'));
	cr_expect_null(strstr(r.out, "\xc2\x9b"));
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
				"100000, 100001,"), "%s", r.out);
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
		"\"offset\": \"0x34\", \"symbol\": \"g+0x4\", \"line\": \"/src/g.c:12\" } }", "", 1);
	r = RUN(gg_cmd_report, NULL, "report", in_tmp("l.json"));
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_expect(strstr(r.out, "            2x R at g+0x4 (lib.so+0x34) at /src/g.c:12\n"), "%s",
		  r.out);
	free_result(&r);
	remove_dir();
}

/* ---- gpuguard symbolize -------------------------------------------------- */

/* A call in this file whose return address is symbolized: the address is
 * that of the instruction after the call, on the next line, so only the
 * symbolization of offset - 1 names CALL_LINE. */
static void *return_address;
static volatile int after_the_call;

__attribute__((noinline)) static void callee(void)
{
	return_address = __builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

enum { CALL_LINE = __LINE__ + 3 };
__attribute__((noinline)) static void caller(void)
{
	callee();
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
	cr_expect_eq(line, CALL_LINE, "line %ld, expected %d: %s", line, CALL_LINE, all);
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
				"on PATH"), "%s", r.err);
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
	cr_expect(strstr(r.err, "gpuguard: symbolize: /no/such/file.log: cannot read: "),
		  "%s", r.err);
	cr_expect_str_eq(r.out, "");
	free_result(&r);
	r = RUN(gg_cmd_symbolize, NULL, "symbolize", "--help");
	cr_expect_eq(r.status, 0);
	cr_expect(!strncmp(r.out, "usage: gpuguard symbolize", 25), "%s", r.out);
	free_result(&r);
}
