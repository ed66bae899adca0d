/* gpuguard report: a human summary, for CI logs, of one or more JSON summaries
 * (docs/summary.schema.json, schema 1). Several files (one per process of a
 * job) are merged into one view: totals, then each finding once with the pids
 * it was seen in. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/text.h"
#include "cli.h"
#include "json.h"
#include "report.h"

#define WIDTH 100

static const char report_usage[] =
	"usage: " GG_USAGE_REPORT "\n"
	"\n"
	"Summarizes gpuguard JSON summaries (GPUGUARD_SUMMARY_JSON) for a CI log. Several\n"
	"files, one per process of a job (%p in the path), are merged into one view:\n"
	"totals, then each unresolved kernel lookup and red-zone violation once, with the\n"
	"pids it was seen in. FILE '-' is standard input.\n"
	"\n"
	"  --junit FILE         also write JUnit XML: a test case per process, a failure\n"
	"                       per finding (GitLab, Jenkins)\n"
	"  --sarif FILE         also write SARIF 2.1.0: a result per finding at its host\n"
	"                       call site, with fingerprints stable across runs\n"
	"  --require-coverage   fail when a process had red zones on and guarded no\n"
	"                       allocation, or when no summary was read at all\n"
	"\n"
	"Exit status: 0 when no file counts an error, 1 when any does (or coverage fell\n"
	"short under --require-coverage), 2 for a usage error, a file that cannot be\n"
	"read or is not a schema 1 summary (named and skipped: the others are still\n"
	"reported) or a --junit or --sarif file that cannot be written.\n";

/* ---- text ---------------------------------------------------------------- */

void gg_sb_add(struct sb *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 128;
		char *bigger;

		while (cap < b->len + n + 1)
			cap *= 2;
		bigger = realloc(b->s, cap);
		if (!bigger) {
			b->oom = true;
			return;
		}
		b->s = bigger;
		b->cap = cap;
	}
	if (n) /* @s may be NULL then (an empty sb's text) */
		memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void gg_sb_printf(struct sb *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(tmp)) {
		gg_sb_add(b, tmp, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);

	if (!big) {
		b->oom = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	gg_sb_add(b, big, (size_t)n);
	free(big);
}

/* Control characters (C0, DEL and C1, and the GLUE byte) are written as \xNN
 * or \u00NN. */
void gg_sb_clean(struct sb *b, const char *s, size_t n)
{
	for (size_t i = 0, taken; i < n; i += taken) {
		char one[GG_CLI_ESCAPE_MAX];

		gg_sb_add(b, one, gg_cli_escape_char(one, s + i, n - i, &taken));
	}
}

void gg_sb_str(struct sb *b, const struct gg_json *v, const char *def)
{
	if (gg_json_is(v, GG_JSON_STRING))
		gg_sb_clean(b, v->u.string.s, v->u.string.len);
	else
		gg_sb_add(b, def, strlen(def));
}

static size_t columns(const char *s, size_t n)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			c++;
	return c;
}

/* Print @text at @indent, wrapped at spaces to WIDTH columns, continuation
 * lines at @hang. Spaces are kept as they are, except where a line is broken.
 * A word longer than a line is printed whole. */
static void emit(unsigned indent, unsigned hang, const char *text)
{
	size_t col = indent;

	printf("%*s", (int)indent, "");
	while (*text) {
		size_t gap = strspn(text, " "), n = strcspn(text + gap, " ");
		size_t w = columns(text + gap, n);

		if (!n)
			break; /* trailing spaces */
		if (col > hang && col + gap + w > WIDTH) {
			printf("\n%*s", (int)hang, "");
			col = hang;
		} else {
			printf("%.*s", (int)gap, text);
			col += gap;
		}
		text += gap;
		for (size_t i = 0; i < n; i++)
			putchar(text[i] == GLUE[0] ? ' ' : text[i]);
		col += w;
		text += n;
	}
	putchar('\n');
}

static void emit_sb(unsigned indent, unsigned hang, struct sb *b)
{
	emit(indent, hang, b->s ? b->s : "");
	b->len = 0;
	if (b->s)
		b->s[0] = '\0';
}

/* ---- checking a summary -------------------------------------------------- */

/* Name @file and why it is skipped (at @line, @column when @line is not 0),
 * and keep the reason in *@why for the files written for CI. */
static void refuse(char **why, const char *file, unsigned line, unsigned column, const char *msg)
{
	char *text, name[GG_CLI_NAME_MAX];

	if (!line)
		text = strdup(msg);
	else if (asprintf(&text, "line %u, column %u: %s", line, column, msg) < 0)
		text = NULL;
	gg_cli_error("report: %s: %s", gg_cli_name(name, sizeof(name), file), text ? text : msg);
	free(*why);
	*why = text;
}

struct check {
	const char *file;
	bool bad;
	char **why;
};

__attribute__((format(printf, 3, 4))) static void complain(struct check *ck, const struct gg_json *at,
							   const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (ck->bad)
		return; /* the first problem is enough */
	ck->bad = true;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	refuse(ck->why, ck->file, at ? at->line : 0, at ? at->column : 0, msg);
}

/* The digits of a number a message shows; a longer one ends in "...". */
#define NUMBER_SHOWN 40

enum want {
	W_U64,
	W_BOOL,
	W_STRING,
	W_STRING_OR_NULL,
	W_OBJECT,
	W_OBJECT_OR_NULL,
	W_ARRAY
};

static const char *const want_text[] = {
	[W_U64] = "a non-negative integer",
	[W_BOOL] = "true or false",
	[W_STRING] = "a string",
	[W_STRING_OR_NULL] = "a string or null",
	[W_OBJECT] = "an object",
	[W_OBJECT_OR_NULL] = "an object or null",
	[W_ARRAY] = "an array",
};

static bool is_want(const struct gg_json *v, enum want w)
{
	switch (w) {
	case W_U64:
		return gg_json_is_u64(v);
	case W_BOOL:
		return gg_json_is(v, GG_JSON_BOOL);
	case W_STRING:
		return gg_json_is(v, GG_JSON_STRING);
	case W_STRING_OR_NULL:
		return gg_json_is(v, GG_JSON_STRING) || gg_json_is(v, GG_JSON_NULL);
	case W_OBJECT:
		return gg_json_is(v, GG_JSON_OBJECT);
	case W_OBJECT_OR_NULL:
		return gg_json_is(v, GG_JSON_OBJECT) || gg_json_is(v, GG_JSON_NULL);
	case W_ARRAY:
		return gg_json_is(v, GG_JSON_ARRAY);
	}
	return false;
}

/* The value @v of member @key (@where: the path of its object, "" or
 * "a.b[1].") must be what @w says. */
static void expect_value(struct check *ck, const struct gg_json *v, const char *where, const char *key,
			 enum want w)
{
	if (!is_want(v, w) && v->type == GG_JSON_NUMBER)
		complain(ck, v, "\"%s%s\" is the number %.*s%s, expected %s", where, key, NUMBER_SHOWN,
			 v->u.number.text, strlen(v->u.number.text) > NUMBER_SHOWN ? "..." : "",
			 want_text[w]);
	else if (!is_want(v, w))
		complain(ck, v, "\"%s%s\" is a %s, expected %s", where, key, gg_json_type_name(v->type),
			 want_text[w]);
}

/* Member @key of @obj (@where: the path of @obj, "" or "a.b[1].") must be
 * what @w says when present, and be present when @required. */
static void expect(struct check *ck, const struct gg_json *obj, const char *where, const char *key,
		   enum want w, bool required)
{
	const struct gg_json *v = gg_json_get(obj, key);

	if (!v) {
		if (required)
			complain(ck, obj, "no \"%s%s\" member (expected %s)", where, key, want_text[w]);
		return;
	}
	expect_value(ck, v, where, key, w);
}

/* The object @section of @root, required, with the counters @keys. */
static void check_counters(struct check *ck, const struct gg_json *root, const char *section,
			   const char *const *keys)
{
	const struct gg_json *obj = gg_json_get(root, section);
	char where[64];

	expect(ck, root, "", section, W_OBJECT, true);
	if (!gg_json_is(obj, GG_JSON_OBJECT))
		return;
	snprintf(where, sizeof(where), "%s.", section);
	for (; *keys; keys++)
		expect(ck, obj, where, *keys, W_U64, true);
}

/* Member @key of @row, a call site. */
static void check_site_named(struct check *ck, const struct gg_json *row, const char *where,
			     const char *key)
{
	const struct gg_json *site = gg_json_get(row, key);
	char w[128];

	expect(ck, row, where, key, W_OBJECT_OR_NULL, false);
	if (!gg_json_is(site, GG_JSON_OBJECT))
		return;
	snprintf(w, sizeof(w), "%s%s.", where, key);
	expect(ck, site, w, "address", W_STRING_OR_NULL, false);
	expect(ck, site, w, "object", W_STRING_OR_NULL, false);
	expect(ck, site, w, "offset", W_STRING_OR_NULL, false);
	expect(ck, site, w, "symbol", W_STRING_OR_NULL, false);
	expect(ck, site, w, "line", W_STRING_OR_NULL, false);
}

static void check_site(struct check *ck, const struct gg_json *row, const char *where)
{
	check_site_named(ck, row, where, "site");
}

static void check_rows(struct check *ck, const struct gg_json *root, const char *name,
		       void (*row)(struct check *, const struct gg_json *, const char *))
{
	const struct gg_json *arr = gg_json_get(root, name);
	char where[64];

	expect(ck, root, "", name, W_ARRAY, true);
	for (size_t i = 0; i < gg_json_length(arr) && !ck->bad; i++) {
		const struct gg_json *r = gg_json_at(arr, i);

		snprintf(where, sizeof(where), "%s[%zu].", name, i);
		if (!gg_json_is(r, GG_JSON_OBJECT)) {
			complain(ck, r, "\"%s[%zu]\" is a %s, expected an object", name, i,
				 gg_json_type_name(r->type));
			return;
		}
		row(ck, r, where);
		check_site(ck, r, where);
	}
}

static void check_unresolved_row(struct check *ck, const struct gg_json *r, const char *where)
{
	expect(ck, r, where, "module", W_STRING_OR_NULL, false);
	expect(ck, r, where, "function", W_STRING_OR_NULL, false);
	expect(ck, r, where, "expected_absent", W_BOOL, false);
	expect(ck, r, where, "count", W_U64, false);
	expect(ck, r, where, "result", W_STRING_OR_NULL, false);
}

bool gg_view_is_api_overrun(const struct gg_json *row)
{
	return !strcmp(gg_view_violation_kind(row), GG_REPORT_API_OVERRUN);
}

/* A refused copy or set: what the report prints of it. */
static void check_api_overrun_row(struct check *ck, const struct gg_json *r, const char *where)
{
	static const char *const strings[] = { "api", "side", "address", "result", NULL };
	static const char *const numbers[] = { "bytes", "index", "user_bytes", NULL };

	for (const char *const *k = strings; *k; k++)
		expect(ck, r, where, *k, W_STRING, true);
	for (const char *const *k = numbers; *k; k++)
		expect(ck, r, where, *k, W_U64, true);
	check_site_named(ck, r, where, "call_site");
}

static void check_violation_row(struct check *ck, const struct gg_json *r, const char *where)
{
	static const char *const keys[] = { "index",   "user_bytes",  "pad_bytes", "first", "last",
					    "changed", "first_value", "expected",  NULL };

	const struct gg_json *kernel = gg_json_get(r, "kernel"), *suspects = gg_json_get(r, "suspects");
	char w[128];

	if (gg_view_is_api_overrun(r)) {
		check_api_overrun_row(ck, r, where);
		return;
	}

	for (const char *const *k = keys; *k; k++)
		expect(ck, r, where, *k, W_U64, false);
	expect(ck, r, where, "detected_by", W_STRING_OR_NULL, false);
	/* Newer still (kinds, stacks): optional, of their type when present. */
	expect(ck, r, where, "kind", W_STRING, false);
	expect(ck, r, where, "api", W_STRING, false);
	expect(ck, r, where, "address", W_STRING, false);
	expect(ck, r, where, "offset", W_U64, false);
	expect(ck, r, where, "stack", W_ARRAY, false);
	expect(ck, r, where, "free_stack", W_ARRAY, false);
	expect(ck, r, where, "first_free_stack", W_ARRAY, false);
	expect(ck, r, where, "slack_bytes", W_U64, false);
	/* An underflow names the allocation written below. */
	expect(ck, r, where, "upper", W_OBJECT,
	       !strcmp(gg_view_violation_kind(r), GG_REPORT_UNDERFLOW));
	/* Newer than schema 1's first writers: optional, whole when present. */
	expect(ck, r, where, "kernel", W_OBJECT, false);
	if (gg_json_is(kernel, GG_JSON_OBJECT)) {
		snprintf(w, sizeof(w), "%skernel.", where);
		expect(ck, kernel, w, "name", W_STRING, true);
		expect(ck, kernel, w, "module", W_STRING, true);
		expect(ck, kernel, w, "launch", W_U64, true);
		check_site(ck, kernel, w);
	}
	expect(ck, r, where, "suspects", W_ARRAY, false);
	for (size_t i = 0; i < gg_json_length(suspects) && !ck->bad; i++) {
		const struct gg_json *e = gg_json_at(suspects, i);

		snprintf(w, sizeof(w), "%ssuspects[%zu].", where, i);
		if (!gg_json_is(e, GG_JSON_OBJECT)) {
			complain(ck, e, "\"%ssuspects[%zu]\" is a %s, expected an object", where, i,
				 gg_json_type_name(e->type));
			return;
		}
		expect(ck, e, w, "name", W_STRING, true);
		expect(ck, e, w, "module", W_STRING, true);
		expect(ck, e, w, "launch", W_U64, true);
	}
}

/* "launch_errors" (docs/summary.schema.json), newer than schema 1's first
 * writers too: optional, each item whole when present. */
static void check_launch_errors(struct check *ck, const struct gg_json *root)
{
	const struct gg_json *arr = gg_json_get(root, "launch_errors");
	char where[64];

	if (!arr)
		return;
	expect(ck, root, "", "launch_errors", W_ARRAY, false);
	for (size_t i = 0; i < gg_json_length(arr) && !ck->bad; i++) {
		const struct gg_json *e = gg_json_at(arr, i);

		snprintf(where, sizeof(where), "launch_errors[%zu].", i);
		if (!gg_json_is(e, GG_JSON_OBJECT)) {
			complain(ck, e, "\"launch_errors[%zu]\" is a %s, expected an object", i,
				 gg_json_type_name(e->type));
			return;
		}
		expect(ck, e, where, "name", W_STRING, true);
		expect(ck, e, where, "module", W_STRING, true);
		expect(ck, e, where, "count", W_U64, true);
		expect(ck, e, where, "result", W_STRING, true);
	}
}

/* "modules" (docs/summary.schema.json), newer than schema 1's first writers:
 * optional, each item whole when present. */
static void check_modules(struct check *ck, const struct gg_json *root)
{
	const struct gg_json *arr = gg_json_get(root, "modules");
	char where[64];

	if (!arr)
		return;
	expect(ck, root, "", "modules", W_ARRAY, false);
	for (size_t i = 0; i < gg_json_length(arr) && !ck->bad; i++) {
		const struct gg_json *m = gg_json_at(arr, i);

		snprintf(where, sizeof(where), "modules[%zu].", i);
		if (!gg_json_is(m, GG_JSON_OBJECT)) {
			complain(ck, m, "\"modules[%zu]\" is a %s, expected an object", i,
				 gg_json_type_name(m->type));
			return;
		}
		expect(ck, m, where, "name", W_STRING, true);
		expect(ck, m, where, "loaded", W_BOOL, true);
		expect(ck, m, where, "result", W_STRING, false);
		expect(ck, m, where, "archs", W_ARRAY, false);
		expect(ck, m, where, "runs_here", W_BOOL, false);
	}
}

/* "leaks" (docs/summary.schema.json), written at exit only: optional, each item
 * whole when present. */
static void check_leaks(struct check *ck, const struct gg_json *root)
{
	const struct gg_json *arr = gg_json_get(root, "leaks");
	char where[64];

	if (!arr)
		return;
	expect(ck, root, "", "leaks", W_ARRAY, false);
	for (size_t i = 0; i < gg_json_length(arr) && !ck->bad; i++) {
		const struct gg_json *l = gg_json_at(arr, i);

		snprintf(where, sizeof(where), "leaks[%zu].", i);
		if (!gg_json_is(l, GG_JSON_OBJECT)) {
			complain(ck, l, "\"leaks[%zu]\" is a %s, expected an object", i,
				 gg_json_type_name(l->type));
			return;
		}
		expect(ck, l, where, "count", W_U64, true);
		expect(ck, l, where, "bytes", W_U64, true);
		expect(ck, l, where, "stack", W_ARRAY, false);
		check_site(ck, l, where);
	}
}

/* "labels" (labelled boundaries: the pytest plugin's one per test): optional,
 * each item whole when present. */
static void check_labels(struct check *ck, const struct gg_json *root)
{
	const struct gg_json *arr = gg_json_get(root, "labels");
	char where[64];

	if (gg_json_get(root, "labels_omitted"))
		expect(ck, root, "", "labels_omitted", W_U64, false);
	if (!arr)
		return;
	expect(ck, root, "", "labels", W_ARRAY, false);
	for (size_t i = 0; i < gg_json_length(arr) && !ck->bad; i++) {
		const struct gg_json *l = gg_json_at(arr, i), *lines;

		snprintf(where, sizeof(where), "labels[%zu].", i);
		if (!gg_json_is(l, GG_JSON_OBJECT)) {
			complain(ck, l, "\"labels[%zu]\" is a %s, expected an object", i,
				 gg_json_type_name(l->type));
			return;
		}
		expect(ck, l, where, "label", W_STRING, true);
		expect(ck, l, where, "errors", W_U64, true);
		expect(ck, l, where, "lines", W_ARRAY, true);
		lines = gg_json_get(l, "lines");
		for (size_t k = 0; k < gg_json_length(lines); k++)
			if (!gg_json_is(gg_json_at(lines, k), GG_JSON_STRING))
				complain(ck, gg_json_at(lines, k),
					 "\"labels[%zu].lines[%zu]\" is a %s, "
					 "expected a string",
					 i, k, gg_json_type_name(gg_json_at(lines, k)->type));
	}
}

/* "coverage" (docs/summary.schema.json) is newer than schema 1's first writers:
 * optional, but read as it is when present. */
static void check_coverage(struct check *ck, const struct gg_json *root)
{
	static const char *const counts[] = { "allocations", "guarded", NULL };
	static const char *const more[] = { "guarded_bytes", "unguarded_bytes", "vmm_bytes",
					    "procaddr_unmatched", NULL };
	const struct gg_json *cov = gg_json_get(root, "coverage"), *v;

	if (!cov)
		return;
	check_counters(ck, root, "coverage", counts);
	for (const char *const *k = more; *k; k++)
		expect(ck, cov, "coverage.", *k, W_U64, false);
	expect(ck, cov, "coverage.", "unguarded", W_OBJECT, false);
	v = gg_json_get(cov, "unguarded");
	/* Each member as it is, not looked up by its key: that search made a
	 * member of many reasons quadratic. */
	for (size_t i = 0; gg_json_is(v, GG_JSON_OBJECT) && i < gg_json_length(v); i++) {
		char key[256];

		if (is_want(v->u.object.members[i].value, W_U64))
			continue;
		/* The summary's key, escaped: a message names it on one line. */
		expect_value(ck, v->u.object.members[i].value, "coverage.unguarded.",
			     gg_cli_name(key, sizeof(key), v->u.object.members[i].key), W_U64);
	}
	expect(ck, cov, "coverage.", "caching_allocators", W_ARRAY, false);
	v = gg_json_get(cov, "caching_allocators");
	for (size_t i = 0; i < gg_json_length(v); i++)
		if (!gg_json_is(gg_json_at(v, i), GG_JSON_STRING))
			complain(ck, gg_json_at(v, i),
				 "\"coverage.caching_allocators[%zu]\" is a %s, "
				 "expected a string",
				 i, gg_json_type_name(gg_json_at(v, i)->type));
}

/* Whether @root is a schema 1 summary this report can read; says why not
 * (in *@why too). */
static bool check_summary(const char *file, const struct gg_json *root, char **why)
{
	static const char *const lookups[] = {
		"total",      "resolved", "unresolved_required", "unresolved_expected", "late_misses",
		"unresolved", NULL
	};
	static const char *const allocations[] = {
		"calls", "failed", "padded", "unpadded_fallbacks", "live", "live_bytes", NULL
	};
	static const char *const redzones[] = { "scans", "checked", "unchecked", NULL };
	struct check ck = { file, false, why };
	const struct gg_json *schema = gg_json_get(root, "schema");

	if (!gg_json_is(root, GG_JSON_OBJECT)) {
		complain(&ck, root, "not a gpuguard summary (a JSON %s, not an object)",
			 gg_json_type_name(root->type));
		return false;
	}
	if (!schema) {
		complain(&ck, NULL, "not a gpuguard summary (no \"schema\" member)");
		return false;
	}
	if (!gg_json_is(schema, GG_JSON_NUMBER) || gg_json_u64(schema, 0) != 1) {
		struct sb b = { 0 };

		if (gg_json_is(schema, GG_JSON_NUMBER)) {
			size_t n = strlen(schema->u.number.text);

			gg_sb_clean(&b, schema->u.number.text, n > NUMBER_SHOWN ? NUMBER_SHOWN : n);
			if (n > NUMBER_SHOWN)
				gg_sb_add(&b, "...", 3);
		} else
			gg_sb_printf(&b, "a %s", gg_json_type_name(schema->type));
		complain(&ck, schema, "schema %s is not supported (this gpuguard reads schema 1)",
			 b.s ? b.s : "?");
		free(b.s);
		return false;
	}
	expect(&ck, root, "", "pid", W_U64, true);
	expect(&ck, root, "", "exe", W_STRING_OR_NULL, false);
	expect(&ck, root, "", "sealed", W_BOOL, false);
	expect(&ck, root, "", "seals", W_U64, false);
	check_counters(&ck, root, "lookups", lookups);
	check_counters(&ck, root, "allocations", allocations);
	check_counters(&ck, root, "redzones", redzones);
	check_rows(&ck, root, "unresolved", check_unresolved_row);
	check_rows(&ck, root, "violations", check_violation_row);
	expect(&ck, root, "", "errors", W_U64, true);
	expect(&ck, root, "", "config", W_OBJECT, false);
	expect(&ck, gg_json_get(root, "config"), "config.", "redzone", W_U64, false);
	check_coverage(&ck, root);
	check_launch_errors(&ck, root);
	check_modules(&ck, root);
	check_leaks(&ck, root);
	check_labels(&ck, root);
	return !ck.bad;
}

/* ---- merging ------------------------------------------------------------- */

/* The summaries are merged in pid order, so a pid is most often the last
 * one's equal or after it: then no search is needed. */
static void pids_add(struct pids *p, uint64_t pid)
{
	if (p->len && p->v[p->len - 1] == pid)
		return;
	if (p->len && (p->unsorted || pid < p->v[p->len - 1])) {
		for (size_t i = 0; i < p->len; i++)
			if (p->v[i] == pid)
				return;
		p->unsorted = true;
	}
	if (p->len == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 4;
		uint64_t *bigger = realloc(p->v, cap * sizeof(*bigger));

		if (!bigger)
			return; /* the list is only shortened */
		p->v = bigger;
		p->cap = cap;
	}
	p->v[p->len++] = pid;
}

static void sb_pids(struct sb *b, const struct pids *p)
{
	for (size_t i = 0; i < p->len; i++)
		gg_sb_printf(b, "%s%" PRIu64, i ? ", " : "", p->v[i]);
}

static bool same_string(const struct gg_json *a, const struct gg_json *b)
{
	if (!gg_json_is(a, GG_JSON_STRING) || !gg_json_is(b, GG_JSON_STRING))
		return gg_json_is(a, GG_JSON_STRING) == gg_json_is(b, GG_JSON_STRING);
	return a->u.string.len == b->u.string.len &&
	       memcmp(a->u.string.s, b->u.string.s, a->u.string.len) == 0;
}

bool gg_view_hex(const struct gg_json *v, uint64_t *out)
{
	return gg_text_parse_0x(gg_json_string(v, NULL), out) == 0;
}

/* "SYMBOL+0xOFF (OBJECT+0xOFF)", "OBJECT+0xOFF", "0xADDRESS" or "an unknown
 * frame", as the log writes it, then " at FILE:LINE" when symbolized. */
void gg_sb_site(struct sb *b, const struct gg_json *site)
{
	const struct gg_json *object = gg_json_get(site, "object");
	const struct gg_json *symbol = gg_json_get(site, "symbol");
	const struct gg_json *line = gg_json_get(site, "line");
	const struct gg_json *inside = gg_json_get(site, "in_static_runtime");
	const char *path = gg_json_string(object, "");
	const char *base = strrchr(path, '/');
	uint64_t address = 0, offset = 0;

	base = base ? base + 1 : path;
	if (!gg_view_hex(gg_json_get(site, "address"), &address) || !address) {
		gg_sb_add(b, "an unknown frame", strlen("an unknown frame"));
		return;
	}
	if (!*base) {
		gg_sb_printf(b, "0x%" PRIx64, address);
	} else {
		gg_view_hex(gg_json_get(site, "offset"), &offset);
		if (gg_json_is(symbol, GG_JSON_STRING)) {
			gg_sb_str(b, symbol, "");
			gg_sb_add(b, GLUE "(", 2);
		}
		gg_sb_clean(b, base, strlen(base));
		gg_sb_printf(b, "+0x%" PRIx64 "%s", offset,
			     gg_json_is(symbol, GG_JSON_STRING) ? ")" : "");
	}
	if (gg_json_is(line, GG_JSON_STRING)) {
		gg_sb_add(b, " at ", 4);
		gg_sb_str(b, line, "");
	}
	/* A site inside a stripped program's runtime, and the application's frame
	 * gpuguard symbolize found for it with an unstripped copy. */
	if (gg_json_is(inside, GG_JSON_BOOL) && inside->u.boolean) {
		static const char mark[] = " [inside the statically linked CUDA runtime";
		static const char named[] = "; application frame: ";
		const struct gg_json *app = gg_json_get(site, "application");

		gg_sb_add(b, mark, sizeof(mark) - 1);
		/* One level only, whatever the input nests there. */
		if (gg_json_is(app, GG_JSON_OBJECT) && !gg_json_get(app, "in_static_runtime")) {
			gg_sb_add(b, named, sizeof(named) - 1);
			gg_sb_site(b, app);
		}
		gg_sb_add(b, "]", 1);
	}
}

/* A string member, or the lack of one, into a hash (as same_string tells them apart). */
static uint64_t hash_string(uint64_t h, const struct gg_json *v)
{
	if (!gg_json_is(v, GG_JSON_STRING))
		return gg_hashindex_hash(h, "", 0) ^ 1;
	return gg_hashindex_hash(h, v->u.string.s, v->u.string.len);
}

struct pair_key {
	struct view *vw;
	const struct gg_json *module, *function;
};

static bool pair_alike(const void *ctx, size_t item)
{
	const struct pair_key *k = ctx;
	const struct pair_group *g = &k->vw->pairs[item];

	k->vw->compared++;
	return same_string(g->module, k->module) && same_string(g->function, k->function);
}

struct site_key {
	struct view *vw;
	const struct pair_group *g;
	const char *text, *result;
};

static bool site_alike(const void *ctx, size_t item)
{
	const struct site_key *k = ctx;
	const struct site_group *s = &k->g->sites[item];

	k->vw->compared++;
	return !strcmp(s->text, k->text) && !strcmp(s->result, k->result);
}

const char *gg_view_violation_kind(const struct gg_json *row)
{
	return gg_json_string(gg_json_get(row, "kind"), GG_REPORT_OVERRUN);
}

void gg_sb_stack_tail(struct sb *b, const struct gg_json *stack)
{
	for (size_t i = 1; i < gg_json_length(stack); i++) {
		gg_sb_printf(b, "\n#%zu ", i);
		gg_sb_site(b, gg_json_at(stack, i));
	}
}

static void add_unresolved(struct view *vw, const struct proc *pr, const struct gg_json *row)
{
	const struct gg_json *module = gg_json_get(row, "module");
	const struct gg_json *function = gg_json_get(row, "function");
	bool expected = gg_json_bool(gg_json_get(row, "expected_absent"), false);
	uint64_t count = gg_json_u64(gg_json_get(row, "count"), 0);
	const struct gg_json *site = gg_json_get(row, "site");
	const struct pair_key pk = { vw, module, function };
	uint64_t hash = hash_string(hash_string(GG_HASHINDEX_SEED, module), function);
	size_t at = gg_hashindex_find(&vw->pair_index, hash, pair_alike, &pk);
	struct pair_group *g;
	struct sb text = { 0 }, result = { 0 };
	uint64_t address = 0;

	if (at == SIZE_MAX) {
		if (!gg_cli_grow((void **)&vw->pairs, &vw->pairs_cap, vw->npairs, sizeof(*g)))
			return;
		at = vw->npairs++;
		g = &vw->pairs[at];
		memset(g, 0, sizeof(*g));
		g->module = module;
		g->function = function;
		/* Out of memory, the next alike row only gets a group of its own. */
		(void)gg_hashindex_add(&vw->pair_index, hash, at);
	}
	g = &vw->pairs[at];
	pids_add(&g->pids, pr->pid);
	pids_add(expected ? &g->expected_pids : &g->required_pids, pr->pid);
	g->required |= !expected;
	g->count += count;
	/* A row without a call site or a failed call has no line of its own. */
	if (!count && (!gg_view_hex(gg_json_get(site, "address"), &address) || !address))
		return;
	gg_sb_site(&text, site);
	gg_sb_str(&result, gg_json_get(row, "result"), "?");
	if (text.oom || result.oom || !text.s || !result.s)
		goto out;
	const struct site_key sk = { vw, g, text.s, result.s };

	hash = gg_hashindex_hash(gg_hashindex_hash(GG_HASHINDEX_SEED, text.s, text.len), result.s,
				 result.len);
	at = gg_hashindex_find(&g->site_index, hash, site_alike, &sk);
	if (at != SIZE_MAX) {
		g->sites[at].count += count;
		pids_add(&g->sites[at].pids, pr->pid);
		goto out;
	}
	if (!gg_cli_grow((void **)&g->sites, &g->cap, g->nsites, sizeof(*g->sites)))
		goto out;
	g->sites[g->nsites] = (struct site_group){ text.s, result.s, count, { 0 }, site };
	pids_add(&g->sites[g->nsites].pids, pr->pid);
	(void)gg_hashindex_add(&g->site_index, hash, g->nsites);
	g->nsites++;
	return;
out:
	free(text.s);
	free(result.s);
}

uint64_t gg_view_u64(const struct gg_json *obj, const char *key)
{
	return gg_json_u64(gg_json_get(obj, key), 0);
}

struct violation_key {
	struct view *vw;
	const char *key;
};

static bool violation_alike(const void *ctx, size_t item)
{
	const struct violation_key *k = ctx;

	k->vw->compared++;
	return !strcmp(k->vw->violations[item].key, k->key);
}

static void add_violation(struct view *vw, const struct proc *pr, const struct gg_json *row)
{
	static const char *const keys[] = { "index",   "user_bytes",  "pad_bytes", "first", "last",
					    "changed", "first_value", "expected",  NULL };
	struct sb key = { 0 };
	struct violation_group *g;
	uint64_t hash;
	size_t at;

	gg_sb_str(&key, gg_json_get(row, "kind"), GG_REPORT_OVERRUN);
	gg_sb_add(&key, " ", 1);
	if (gg_view_is_api_overrun(row)) {
		/* Alike: the same call, range's length and allocation, from the same site. */
		gg_sb_str(&key, gg_json_get(row, "api"), "?");
		gg_sb_add(&key, " ", 1);
		gg_sb_str(&key, gg_json_get(row, "side"), "?");
		gg_sb_printf(&key, " %" PRIu64 " %" PRIu64 " %" PRIu64 " ", gg_view_u64(row, "bytes"),
			     gg_view_u64(row, "index"), gg_view_u64(row, "user_bytes"));
		gg_sb_site(&key, gg_json_get(row, "call_site"));
	} else {
		for (const char *const *k = keys; *k; k++)
			gg_sb_printf(&key, "%" PRIu64 " ", gg_view_u64(row, *k));
		gg_sb_printf(&key, "%d ", gg_json_is(gg_json_get(row, "expected"), GG_JSON_NUMBER));
		gg_sb_str(&key, gg_json_get(row, "detected_by"), "?");
	}
	gg_sb_add(&key, " ", 1);
	gg_sb_site(&key, gg_json_get(row, "site"));
	/* A free's finding: where it freed too. */
	gg_sb_add(&key, " ", 1);
	gg_sb_site(&key, gg_json_at(gg_json_get(row, "free_stack"), 0));
	if (key.oom || !key.s) {
		free(key.s);
		return;
	}
	hash = gg_hashindex_hash(GG_HASHINDEX_SEED, key.s, key.len);
	at = gg_hashindex_find(&vw->violation_index, hash, violation_alike,
			       &(struct violation_key){ vw, key.s });
	if (at != SIZE_MAX) {
		pids_add(&vw->violations[at].pids, pr->pid);
		vw->violations[at].rows++;
		free(key.s);
		return;
	}
	if (!gg_cli_grow((void **)&vw->violations, &vw->violations_cap, vw->nviolations, sizeof(*g))) {
		free(key.s);
		return;
	}
	g = &vw->violations[vw->nviolations];
	*g = (struct violation_group){ row, key.s, { 0 }, 1 };
	pids_add(&g->pids, pr->pid);
	(void)gg_hashindex_add(&vw->violation_index, hash, vw->nviolations);
	vw->nviolations++;
}

/* Leaks of one stack in several processes are one entry: keyed by the
 * stack's frames as printed, found through their hash (a search through the
 * entries made a report of many stacks quadratic). */
struct leak_key {
	struct view *vw;
	const char *key;
};

static bool leak_alike(const void *ctx, size_t item)
{
	const struct leak_key *k = ctx;

	k->vw->compared++;
	return !strcmp(k->vw->leaks[item].key, k->key);
}

static void add_leak(struct view *vw, const struct proc *pr, const struct gg_json *row)
{
	const struct gg_json *stack = gg_json_get(row, "stack");
	struct sb key = { 0 };
	struct leak_group *g;
	uint64_t hash;
	size_t at;

	gg_sb_site(&key, gg_json_get(row, "site"));
	gg_sb_stack_tail(&key, stack);
	if (key.oom || !key.s) {
		free(key.s);
		return;
	}
	hash = gg_hashindex_hash(GG_HASHINDEX_SEED, key.s, key.len);
	at = gg_hashindex_find(&vw->leak_index, hash, leak_alike, &(struct leak_key){ vw, key.s });
	if (at != SIZE_MAX) {
		g = &vw->leaks[at];
		pids_add(&g->pids, pr->pid);
		g->count += gg_view_u64(row, "count");
		g->bytes += gg_view_u64(row, "bytes");
		free(key.s);
		return;
	}
	if (!gg_cli_grow((void **)&vw->leaks, &vw->leaks_cap, vw->nleaks, sizeof(*g))) {
		free(key.s);
		return;
	}
	g = &vw->leaks[vw->nleaks];
	*g = (struct leak_group){
		row, key.s, { 0 }, gg_view_u64(row, "count"), gg_view_u64(row, "bytes"), vw->nleaks
	};
	pids_add(&g->pids, pr->pid);
	/* Out of memory, the next alike row only gets an entry of its own. */
	(void)gg_hashindex_add(&vw->leak_index, hash, vw->nleaks);
	vw->nleaks++;
}

/* The most bytes first, then the most allocations, then in the order first
 * seen: the same summaries give the same order, whatever qsort does with
 * ties. */
static int by_leaked_bytes(const void *a, const void *b)
{
	const struct leak_group *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return (x->seen > y->seen) - (x->seen < y->seen);
}

void gg_view_group(struct view *vw)
{
	for (size_t i = 0; i < vw->nprocs; i++) {
		const struct proc *pr = &vw->procs[i];
		const struct gg_json *rows = gg_json_get(pr->root, "unresolved");

		for (size_t j = 0; j < gg_json_length(rows); j++)
			add_unresolved(vw, pr, gg_json_at(rows, j));
		rows = gg_json_get(pr->root, "violations");
		for (size_t j = 0; j < gg_json_length(rows); j++)
			add_violation(vw, pr, gg_json_at(rows, j));
		rows = gg_json_get(pr->root, "leaks");
		vw->leak_summaries += gg_json_is(rows, GG_JSON_ARRAY);
		for (size_t j = 0; j < gg_json_length(rows); j++)
			add_leak(vw, pr, gg_json_at(rows, j));
	}
	if (vw->nleaks > 1)
		qsort(vw->leaks, vw->nleaks, sizeof(*vw->leaks), by_leaked_bytes);
}

void gg_view_free_groups(struct view *vw)
{
	for (size_t i = 0; i < vw->npairs; i++) {
		struct pair_group *g = &vw->pairs[i];

		for (size_t j = 0; j < g->nsites; j++) {
			free(g->sites[j].text);
			free(g->sites[j].result);
			free(g->sites[j].pids.v);
		}
		free(g->sites);
		gg_hashindex_free(&g->site_index);
		free(g->pids.v);
		free(g->required_pids.v);
		free(g->expected_pids.v);
	}
	free(vw->pairs);
	for (size_t i = 0; i < vw->nviolations; i++) {
		free(vw->violations[i].key);
		free(vw->violations[i].pids.v);
	}
	free(vw->violations);
	gg_hashindex_free(&vw->pair_index);
	gg_hashindex_free(&vw->violation_index);
	gg_hashindex_free(&vw->leak_index);
	for (size_t i = 0; i < vw->nleaks; i++) {
		free(vw->leaks[i].key);
		free(vw->leaks[i].pids.v);
	}
	free(vw->leaks);
	vw->pairs = NULL;
	vw->violations = NULL;
	vw->leaks = NULL;
	vw->npairs = vw->pairs_cap = vw->nviolations = vw->violations_cap = 0;
	vw->nleaks = vw->leaks_cap = vw->leak_summaries = vw->compared = 0;
}

/* ---- coverage ------------------------------------------------------------ */

/* What a process's red zones guarded (docs/how-it-works.md, "Red zones": Coverage); from
 * allocations.calls and .padded when the summary predates the member. */
struct coverage {
	bool member; /* the summary has a "coverage" member */
	bool redzones_on;
	uint64_t allocations, guarded, procaddr_unmatched;
	const struct gg_json *unguarded;  /* reason -> count, or NULL */
	const struct gg_json *allocators; /* names, or NULL */
};

static void coverage_of(const struct proc *pr, struct coverage *c)
{
	const struct gg_json *cov = gg_json_get(pr->root, "coverage");
	const struct gg_json *allocs = gg_json_get(pr->root, "allocations");
	const struct gg_json *redzone = gg_json_get(gg_json_get(pr->root, "config"), "redzone");

	memset(c, 0, sizeof(*c));
	/* A summary that does not say is taken to have had them on: under
	 * --require-coverage, not knowing must not pass. */
	c->redzones_on = gg_json_u64(redzone, 1) > 0;
	if (!gg_json_is(cov, GG_JSON_OBJECT)) {
		c->allocations = gg_view_u64(allocs, "calls");
		c->guarded = gg_view_u64(allocs, "padded");
		return;
	}
	c->member = true;
	c->allocations = gg_view_u64(cov, "allocations");
	c->guarded = gg_view_u64(cov, "guarded");
	c->procaddr_unmatched = gg_view_u64(cov, "procaddr_unmatched");
	c->unguarded = gg_json_get(cov, "unguarded");
	c->allocators = gg_json_get(cov, "caching_allocators");
}

/* Counts by name (reasons an allocation was not guarded, caching
 * allocators), over one process or several, in the order first seen; a name
 * is found through its hash, so that many names stay linear. */
struct tally {
	struct tally_row {
		const char *name;
		size_t len;
		uint64_t n;
	} * v;
	size_t len, cap;
	struct gg_hashindex index; /* rows by name */
};

struct tally_key {
	const struct tally *t;
	const char *name;
	size_t len;
};

static bool tally_alike(const void *ctx, size_t item)
{
	const struct tally_key *k = ctx;
	const struct tally_row *r = &k->t->v[item];

	return r->len == k->len && !memcmp(r->name, k->name, k->len);
}

static void tally_add(struct tally *t, const char *name, size_t len, uint64_t n)
{
	uint64_t hash = gg_hashindex_hash(GG_HASHINDEX_SEED, name, len);
	size_t at = gg_hashindex_find(&t->index, hash, tally_alike,
				      &(struct tally_key){ t, name, len });

	if (at != SIZE_MAX) {
		t->v[at].n += n;
		return;
	}
	if (!gg_cli_grow((void **)&t->v, &t->cap, t->len, sizeof(*t->v)))
		return;
	t->v[t->len] = (struct tally_row){ name, len, n };
	/* Out of memory, the name's next count only gets a row of its own. */
	(void)gg_hashindex_add(&t->index, hash, t->len);
	t->len++;
}

static void tally_free(struct tally *t)
{
	free(t->v);
	gg_hashindex_free(&t->index);
}

static void tally_coverage(struct tally *reasons, struct tally *allocators, const struct coverage *c)
{
	for (size_t i = 0; i < gg_json_length(c->unguarded); i++) {
		const struct gg_json_member *m = &c->unguarded->u.object.members[i];

		tally_add(reasons, m->key, m->key_len, gg_json_u64(m->value, 0));
	}
	for (size_t i = 0; i < gg_json_length(c->allocators); i++) {
		const struct gg_json *name = gg_json_at(c->allocators, i);

		tally_add(allocators, name->u.string.s, name->u.string.len, 1);
	}
}

/* "min_idx 1, zero_size 2", or the names alone. */
static void sb_tally(struct sb *b, const struct tally *t, bool counts)
{
	for (size_t i = 0; i < t->len; i++) {
		if (i)
			gg_sb_add(b, ", ", 2);
		gg_sb_clean(b, t->v[i].name, t->v[i].len);
		if (counts)
			gg_sb_printf(b, " %" PRIu64, t->v[i].n);
	}
}

/* "9 of 10 allocations guarded; 1 not (min_idx 1)", then what else the
 * shim could not see. */
static void sb_coverage(struct sb *b, const struct coverage *c, const struct tally *reasons,
			const struct tally *allocators)
{
	uint64_t not = c->allocations - (c->guarded < c->allocations ? c->guarded : c->allocations);

	gg_sb_printf(b, "%" PRIu64 " of %" PRIu64 " %s guarded", c->guarded, c->allocations,
		     gg_cli_plural(c->allocations, "allocation", "allocations"));
	if (not ) {
		gg_sb_printf(b, "; %" PRIu64 " not", not );
		if (reasons->len) {
			gg_sb_add(b, GLUE "(", 2);
			sb_tally(b, reasons, true);
			gg_sb_add(b, ")", 1);
		}
	}
	if (c->procaddr_unmatched)
		gg_sb_printf(b,
			     "; %" PRIu64 " cuGetProcAddress %s matched no driver function (calls "
			     "through %s are not seen)",
			     c->procaddr_unmatched,
			     gg_cli_plural(c->procaddr_unmatched, "answer", "answers"),
			     gg_cli_plural(c->procaddr_unmatched, "it", "them"));
	if (allocators->len) {
		gg_sb_printf(
			b, "; caching %s: ", gg_cli_plural(allocators->len, "allocator", "allocators"));
		sb_tally(b, allocators, false);
		gg_sb_printf(b, " (the bands guard %s segments, not each tensor)",
			     gg_cli_plural(allocators->len, "its", "their"));
	}
}

/* ---- printing ------------------------------------------------------------ */

static uint64_t total(const struct view *vw, const char *section, const char *key)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < vw->nprocs; i++)
		sum += gg_view_u64(gg_json_get(vw->procs[i].root, section), key);
	return sum;
}

/* " (2 check_on_free_off, 1 unreadable)": why bands went unchecked, the
 * processes' "redzones"."unchecked_reasons" added up; nothing when none. */
static void sb_unchecked_reasons(struct sb *b, const struct view *vw)
{
	static const char *const reasons[] = { "check_on_free_off", "capturing", "unreadable",
					       "no_memory" };
	bool any = false;

	for (size_t r = 0; r < sizeof(reasons) / sizeof(reasons[0]); r++) {
		uint64_t sum = 0;

		for (size_t i = 0; i < vw->nprocs; i++)
			sum += gg_view_u64(gg_json_get(gg_json_get(vw->procs[i].root, "redzones"),
						       "unchecked_reasons"),
					   reasons[r]);
		if (!sum)
			continue;
		gg_sb_printf(b, "%s%" PRIu64 " %s", any ? ", " : " (", sum, reasons[r]);
		any = true;
	}
	if (any)
		gg_sb_printf(b, ")");
}

/* The processes' "coverage" members added up; nothing when none has one. */
static void print_coverage(const struct view *vw, unsigned indent)
{
	struct coverage sum = { 0 }, c;
	struct tally reasons = { 0 }, allocators = { 0 };
	struct sb b = { 0 };

	for (size_t i = 0; i < vw->nprocs; i++) {
		coverage_of(&vw->procs[i], &c);
		if (!c.member)
			continue;
		sum.member = true;
		sum.allocations += c.allocations;
		sum.guarded += c.guarded;
		sum.procaddr_unmatched += c.procaddr_unmatched;
		tally_coverage(&reasons, &allocators, &c);
	}
	if (sum.member) {
		gg_sb_add(&b, "coverage: ", strlen("coverage: "));
		sb_coverage(&b, &sum, &reasons, &allocators);
		emit_sb(indent, indent + 4, &b);
	}
	free(b.s);
	tally_free(&reasons);
	tally_free(&allocators);
}

/* Each process's refused launches, a kernel a line: "launch errors: K (module
 * M): 2 refused, last CUDA_ERROR_..."
 * (docs/how-it-works.md, "The kernel-lookup audit and the gate"). */
static void print_launch_errors(const struct view *vw, unsigned indent)
{
	struct sb b = { 0 };

	for (size_t i = 0; i < vw->nprocs; i++) {
		const struct gg_json *arr = gg_json_get(vw->procs[i].root, "launch_errors");

		for (size_t k = 0; k < gg_json_length(arr); k++) {
			const struct gg_json *e = gg_json_at(arr, k);
			uint64_t n = gg_view_u64(e, "count");

			gg_sb_printf(&b, "launch errors: ");
			gg_sb_str(&b, gg_json_get(e, "name"), "?");
			gg_sb_printf(&b, " (module ");
			gg_sb_str(&b, gg_json_get(e, "module"), "?");
			gg_sb_printf(&b, "): %" PRIu64 " %s, last ", n,
				     gg_cli_plural(n, "refused launch", "refused launches"));
			gg_sb_str(&b, gg_json_get(e, "result"), "?");
			emit_sb(indent, indent + 4, &b);
		}
	}
	free(b.s);
}

/* Each process's modules that cannot run on its GPU (image preflight):
 * "cannot run here: M (sm_80; not loaded: CUDA_ERROR_NO_BINARY_FOR_GPU)". */
static void print_cannot_run(const struct view *vw, unsigned indent)
{
	struct sb b = { 0 };

	for (size_t i = 0; i < vw->nprocs; i++) {
		const struct gg_json *arr = gg_json_get(vw->procs[i].root, "modules");

		for (size_t k = 0; k < gg_json_length(arr); k++) {
			const struct gg_json *m = gg_json_at(arr, k), *archs = gg_json_get(m, "archs");
			const struct gg_json *runs = gg_json_get(m, "runs_here");

			if (!gg_json_is(runs, GG_JSON_BOOL) || runs->u.boolean)
				continue;
			gg_sb_printf(&b, "cannot run here: ");
			gg_sb_str(&b, gg_json_get(m, "name"), "?");
			gg_sb_printf(&b, " (");
			for (size_t a = 0; a < gg_json_length(archs); a++) {
				gg_sb_printf(&b, a ? ", " : "");
				gg_sb_str(&b, gg_json_at(archs, a), "?");
			}
			if (gg_json_is(gg_json_get(m, "result"), GG_JSON_STRING)) {
				gg_sb_printf(&b, "; not loaded: ");
				gg_sb_str(&b, gg_json_get(m, "result"), "?");
			} else {
				gg_sb_printf(&b, "; loaded, its kernels fail at first use");
			}
			gg_sb_printf(&b, ")");
			emit_sb(indent, indent + 4, &b);
		}
	}
	free(b.s);
}

static void print_counters(const struct view *vw, unsigned indent)
{
	struct sb b = { 0 };
	uint64_t n;

	n = total(vw, "lookups", "total");
	gg_sb_printf(&b,
		     "lookups: %" PRIu64 " %s, %" PRIu64 " resolved, %" PRIu64
		     " required unresolved, %" PRIu64 " expected absent, %" PRIu64 " late %s",
		     n, gg_cli_plural(n, "kernel", "kernels"), total(vw, "lookups", "resolved"),
		     total(vw, "lookups", "unresolved_required"),
		     total(vw, "lookups", "unresolved_expected"), total(vw, "lookups", "late_misses"),
		     gg_cli_plural(total(vw, "lookups", "late_misses"), "miss", "misses"));
	emit_sb(indent, indent + 4, &b);
	n = total(vw, "allocations", "calls");
	gg_sb_printf(
		&b,
		"allocations: %" PRIu64 " %s, %" PRIu64 " failed, %" PRIu64 " padded, %" PRIu64
		" unpadded %s, %" PRIu64 " live (%" PRIu64 " %s)",
		n, gg_cli_plural(n, "call", "calls"), total(vw, "allocations", "failed"),
		total(vw, "allocations", "padded"), total(vw, "allocations", "unpadded_fallbacks"),
		gg_cli_plural(total(vw, "allocations", "unpadded_fallbacks"), "fallback", "fallbacks"),
		total(vw, "allocations", "live"), total(vw, "allocations", "live_bytes"),
		gg_cli_plural(total(vw, "allocations", "live_bytes"), "byte", "bytes"));
	emit_sb(indent, indent + 4, &b);
	n = total(vw, "redzones", "scans");
	gg_sb_printf(&b, "red zones: %" PRIu64 " %s, %" PRIu64 " %s checked, %" PRIu64 " unchecked", n,
		     gg_cli_plural(n, "scan", "scans"), total(vw, "redzones", "checked"),
		     gg_cli_plural(total(vw, "redzones", "checked"), "band", "bands"),
		     total(vw, "redzones", "unchecked"));
	sb_unchecked_reasons(&b, vw);
	emit_sb(indent, indent + 4, &b);
	free(b.s);
	print_coverage(vw, indent);
	print_launch_errors(vw, indent);
	print_cannot_run(vw, indent);
}

static void print_process(const struct proc *pr, bool several)
{
	struct sb b = { 0 };
	uint64_t seals = gg_view_u64(pr->root, "seals");

	gg_sb_printf(&b, "process %" PRIu64 ": ", pr->pid);
	gg_sb_str(&b, gg_json_get(pr->root, "exe"), "(unknown program)");
	if (gg_json_bool(gg_json_get(pr->root, "sealed"), false))
		gg_sb_printf(&b, ", sealed (%" PRIu64 " %s)", seals,
			     gg_cli_plural(seals, "seal", "seals"));
	else
		gg_sb_printf(&b, ", not sealed");
	gg_sb_printf(&b, ", %" PRIu64 " %s", pr->errors, gg_cli_plural(pr->errors, "error", "errors"));
	if (several) {
		gg_sb_add(&b, " [", 2);
		gg_sb_clean(&b, pr->file, strlen(pr->file));
		gg_sb_add(&b, "]", 1);
	}
	emit_sb(several ? 2 : 0, several ? 6 : 4, &b);
	free(b.s);
}

static void print_unresolved(const struct view *vw, bool several)
{
	struct sb b = { 0 };
	size_t required = 0;

	for (size_t i = 0; i < vw->npairs; i++)
		required += vw->pairs[i].required;
	printf("\n");
	if (!vw->npairs) {
		printf("unresolved kernel lookups: none\n");
		return;
	}
	printf("unresolved kernel lookups: %zu (%zu required, %zu expected absent)\n", vw->npairs,
	       required, vw->npairs - required);
	for (size_t i = 0; i < vw->npairs; i++) {
		const struct pair_group *g = &vw->pairs[i];

		gg_sb_printf(&b, "%-8s  ", g->required ? "REQUIRED" : "expected");
		gg_sb_str(&b, g->module, "?");
		gg_sb_add(&b, "::", 2);
		gg_sb_str(&b, g->function, "?");
		gg_sb_printf(&b, "  %" PRIu64 "x", g->count);
		if (several) {
			gg_sb_printf(&b, " in %zu %s: ", g->pids.len,
				     gg_cli_plural(g->pids.len, "process", "processes"));
			sb_pids(&b, &g->pids);
		}
		if (g->required && g->expected_pids.len) {
			gg_sb_printf(&b, " (expected absent in %s ",
				     gg_cli_plural(g->expected_pids.len, "pid", "pids"));
			sb_pids(&b, &g->expected_pids);
			gg_sb_add(&b, ")", 1);
		}
		emit_sb(2, 12, &b);
		for (size_t j = 0; j < g->nsites; j++) {
			const struct site_group *s = &g->sites[j];

			gg_sb_printf(&b, "%" PRIu64 "x %s at %s", s->count, s->result, s->text);
			if (several && s->pids.len < g->pids.len) {
				gg_sb_printf(&b, " (%s ", gg_cli_plural(s->pids.len, "pid", "pids"));
				sb_pids(&b, &s->pids);
				gg_sb_add(&b, ")", 1);
			}
			emit_sb(12, 16, &b);
		}
	}
	free(b.s);
}

/* "TITLE:" and a stack's frames, one a line, when it has more than its
 * first frame (which the entry names already). */
static void print_stack(struct sb *b, const char *title, const struct gg_json *stack)
{
	if (gg_json_length(stack) < 2)
		return;
	gg_sb_printf(b, "%s:", title);
	emit_sb(6, 10, b);
	for (size_t i = 0; i < gg_json_length(stack); i++) {
		gg_sb_printf(b, "#%zu ", i);
		gg_sb_site(b, gg_json_at(stack, i));
		emit_sb(8, 12, b);
	}
}

/* A double or invalid free (docs/how-it-works.md, "Stacks, frees and leaks"). */
static void print_free_violation(struct sb *b, const struct gg_json *r)
{
	bool twice = !strcmp(gg_view_violation_kind(r), GG_REPORT_DOUBLE_FREE);
	uint64_t user = gg_view_u64(r, "user_bytes"), offset = gg_view_u64(r, "offset");
	const struct gg_json *free_stack = gg_json_get(r, "free_stack");

	gg_sb_printf(b, "allocation #%" PRIu64 " (%" PRIu64 " %s): %s, ", gg_view_u64(r, "index"), user,
		     gg_cli_plural(user, "byte", "bytes"), twice ? "double free" : "invalid free");
	gg_sb_str(b, gg_json_get(r, "api"), "free");
	gg_sb_add(b, "(", 1);
	gg_sb_str(b, gg_json_get(r, "address"), "?");
	gg_sb_add(b, ")", 1);
	if (twice)
		gg_sb_add(b, " of an allocation freed already",
			  strlen(" of an allocation freed already"));
	else
		gg_sb_printf(b, " %" PRIu64 " %s inside it", offset,
			     gg_cli_plural(offset, "byte", "bytes"));
	emit_sb(2, 6, b);
	gg_sb_add(b, "allocated at ", strlen("allocated at "));
	gg_sb_site(b, gg_json_get(r, "site"));
	emit_sb(6, 10, b);
	if (twice) {
		gg_sb_add(b, "first freed at ", strlen("first freed at "));
		gg_sb_site(b, gg_json_at(gg_json_get(r, "first_free_stack"), 0));
		emit_sb(6, 10, b);
	}
	gg_sb_printf(b, "%s at ", twice ? "freed again" : "freed");
	gg_sb_site(b, gg_json_at(free_stack, 0));
	emit_sb(6, 10, b);
	print_stack(b, "allocation stack", gg_json_get(r, "stack"));
	if (twice)
		print_stack(b, "first free stack", gg_json_get(r, "first_free_stack"));
	print_stack(b, twice ? "second free stack" : "free stack", free_stack);
}

/* A write after free or a dangling launch (docs/how-it-works.md, "Quarantine"). */
static void print_quarantine_violation(struct sb *b, const struct gg_json *r)
{
	bool launch = !strcmp(gg_view_violation_kind(r), GG_REPORT_DANGLING_LAUNCH);
	uint64_t user = gg_view_u64(r, "user_bytes"), changed = gg_view_u64(r, "changed");
	const struct gg_json *free_stack = gg_json_get(r, "free_stack"),
			     *kernel = gg_json_get(r, "kernel");
	const struct gg_json *suspects = gg_json_get(r, "suspects");

	gg_sb_printf(b, "allocation #%" PRIu64 " (%" PRIu64 " %s): %s", gg_view_u64(r, "index"), user,
		     gg_cli_plural(user, "byte", "bytes"),
		     launch ? "dangling launch" : "write after free");
	if (launch) {
		gg_sb_add(b, ", ", 2);
		gg_sb_str(b, gg_json_get(kernel, "name"), "?");
		gg_sb_printf(b, " (launch #%" PRIu64 ") parameter %" PRIu64 " is ",
			     gg_view_u64(kernel, "launch"), gg_view_u64(r, "parameter"));
		gg_sb_str(b, gg_json_get(r, "address"), "?");
	} else {
		gg_sb_printf(b, ", %" PRIu64 " %s changed, first 0x%02" PRIx64 ", detected by ",
			     changed, gg_cli_plural(changed, "byte", "bytes"),
			     gg_view_u64(r, "first_value"));
		gg_sb_str(b, gg_json_get(r, "detected_by"), "?");
	}
	emit_sb(2, 6, b);
	gg_sb_add(b, "allocated at ", strlen("allocated at "));
	gg_sb_site(b, gg_json_get(r, "site"));
	emit_sb(6, 10, b);
	gg_sb_add(b, "freed by ", strlen("freed by "));
	gg_sb_str(b, gg_json_get(r, "api"), "?");
	gg_sb_add(b, " at ", 4);
	gg_sb_site(b, gg_json_at(free_stack, 0));
	emit_sb(6, 10, b);
	if (launch) {
		gg_sb_add(b, "launched at ", strlen("launched at "));
		gg_sb_site(b, gg_json_get(kernel, "site"));
		emit_sb(6, 10, b);
	}
	for (size_t i = 0; i < gg_json_length(suspects); i++) {
		const struct gg_json *k = gg_json_at(suspects, i);

		gg_sb_add(b, i ? ", " : "suspects: ", i ? 2 : strlen("suspects: "));
		gg_sb_str(b, gg_json_get(k, "name"), "?");
		gg_sb_printf(b, " (launch #%" PRIu64 ")", gg_view_u64(k, "launch"));
	}
	if (gg_json_length(suspects))
		emit_sb(6, 10, b);
	print_stack(b, "allocation stack", gg_json_get(r, "stack"));
	print_stack(b, "free stack", free_stack);
}

/* "written by K (launch #N at SITE)" for a violation a checked launch found,
 * else "suspects: K (launch #N), ..." when it has any. */
static void print_culprit(struct sb *b, const struct gg_json *r)
{
	const struct gg_json *kernel = gg_json_get(r, "kernel"), *suspects = gg_json_get(r, "suspects");

	if (gg_json_is(kernel, GG_JSON_OBJECT)) {
		gg_sb_add(b, "written by ", strlen("written by "));
		gg_sb_str(b, gg_json_get(kernel, "name"), "?");
		gg_sb_add(b, " (module ", strlen(" (module "));
		gg_sb_str(b, gg_json_get(kernel, "module"), "?");
		gg_sb_printf(b, ", launch #%" PRIu64 " at ", gg_view_u64(kernel, "launch"));
		gg_sb_site(b, gg_json_get(kernel, "site"));
		gg_sb_add(b, ")", 1);
		emit_sb(6, 10, b);
		return;
	}
	if (!gg_json_length(suspects))
		return;
	gg_sb_add(b, "suspects:", strlen("suspects:"));
	for (size_t i = 0; i < gg_json_length(suspects); i++) {
		const struct gg_json *e = gg_json_at(suspects, i);

		gg_sb_add(b, i ? ", " : " ", i ? 2 : 1);
		gg_sb_str(b, gg_json_get(e, "name"), "?");
		gg_sb_printf(b, " (launch #%" PRIu64 ")", gg_view_u64(e, "launch"));
	}
	emit_sb(6, 10, b);
}

/* "allocation #0 (100 bytes): cuMemcpyHtoD_v2 dst of 116 bytes at 0x...
 * runs 16 bytes past its end", then how it was refused, where it was
 * called, and where the allocation was made. */
static void print_api_overrun(struct sb *b, const struct gg_json *r)
{
	uint64_t user = gg_view_u64(r, "user_bytes"), bytes = gg_view_u64(r, "bytes");
	uint64_t address = 0, ptr = 0, past;
	bool starts;

	(void)gg_view_hex(gg_json_get(r, "address"), &address);
	(void)gg_view_hex(gg_json_get(r, "ptr"), &ptr);
	starts = address >= ptr + user;
	past = starts ? address - (ptr + user) : address + bytes - (ptr + user);
	gg_sb_printf(b, "allocation #%" PRIu64 " (%" PRIu64 " %s): ", gg_view_u64(r, "index"), user,
		     gg_cli_plural(user, "byte", "bytes"));
	gg_sb_str(b, gg_json_get(r, "api"), "?");
	gg_sb_add(b, " ", 1);
	gg_sb_str(b, gg_json_get(r, "side"), "?");
	gg_sb_printf(b, " of %" PRIu64 " %s at ", bytes, gg_cli_plural(bytes, "byte", "bytes"));
	gg_sb_str(b, gg_json_get(r, "address"), "?");
	gg_sb_printf(b, " %s %" PRIu64 " %s past its end (api_overrun)", starts ? "starts" : "runs",
		     past, gg_cli_plural(past, "byte", "bytes"));
	emit_sb(2, 6, b);
	gg_sb_add(b, "refused with ", strlen("refused with "));
	gg_sb_str(b, gg_json_get(r, "result"), "?");
	gg_sb_add(b, ", called at ", strlen(", called at "));
	gg_sb_site(b, gg_json_get(r, "call_site"));
	emit_sb(6, 10, b);
	gg_sb_add(b, "allocated at ", strlen("allocated at "));
	gg_sb_site(b, gg_json_get(r, "site"));
	emit_sb(6, 10, b);
	print_stack(b, "allocation stack", gg_json_get(r, "stack"));
}

/* "64-byte band", and the slack after it when the changed bytes reach it. */
static void sb_band(struct sb *b, const struct gg_json *r)
{
	uint64_t pad = gg_view_u64(r, "pad_bytes"), slack = gg_view_u64(r, "slack_bytes");

	gg_sb_printf(b, "%" PRIu64 "-byte band", pad);
	if (slack && gg_view_u64(r, "last") >= pad)
		gg_sb_printf(b, " + %" PRIu64 " %s to the next 256-byte boundary", slack,
			     gg_cli_plural(slack, "byte", "bytes"));
}

/* "its band's top is directly below allocation #N (B bytes) allocated at
 * SITE", for a band changed up to its top under another allocation. */
static void print_upper(struct sb *b, const struct gg_json *r)
{
	const struct gg_json *u = gg_json_get(r, "upper");
	uint64_t user = gg_view_u64(u, "user_bytes");

	if (!gg_json_is(u, GG_JSON_OBJECT))
		return;
	gg_sb_printf(b,
		     "its band's top is directly below allocation #%" PRIu64 " (%" PRIu64 " %s), "
		     "allocated at ",
		     gg_view_u64(u, "index"), user, gg_cli_plural(user, "byte", "bytes"));
	gg_sb_site(b, gg_json_get(u, "site"));
	emit_sb(6, 10, b);
}

/* "allocation #U (N bytes): underflow, K bytes changed A..B bytes below its
 * start", the band of the allocation below where it was found, both sites. */
static void print_underflow(struct sb *b, const struct gg_json *r)
{
	const struct gg_json *u = gg_json_get(r, "upper"), *expected = gg_json_get(r, "expected");
	uint64_t user = gg_view_u64(u, "user_bytes"), below = gg_view_u64(r, "user_bytes");
	uint64_t changed = gg_view_u64(r, "changed");
	uint64_t end = gg_view_u64(r, "pad_bytes") + gg_view_u64(r, "slack_bytes");
	uint64_t first = gg_view_u64(r, "first"), last = gg_view_u64(r, "last");

	gg_sb_printf(b, "allocation #%" PRIu64 " (%" PRIu64 " %s): underflow, %" PRIu64 " %s changed",
		     gg_view_u64(u, "index"), user, gg_cli_plural(user, "byte", "bytes"), changed,
		     gg_cli_plural(changed, "byte", "bytes"));
	emit_sb(2, 6, b);
	if (last < end && first <= last)
		gg_sb_printf(b, "%" PRIu64 "..%" PRIu64 " bytes below its start", end - last,
			     end - first);
	gg_sb_printf(b, ", first 0x%02" PRIx64, gg_view_u64(r, "first_value"));
	if (expected)
		gg_sb_printf(b, GLUE "(expected" GLUE "0x%02" PRIx64 ")", gg_json_u64(expected, 0));
	gg_sb_add(b, ", detected by ", strlen(", detected by "));
	gg_sb_str(b, gg_json_get(r, "detected_by"), "?");
	emit_sb(6, 10, b);
	gg_sb_add(b, "allocated at ", strlen("allocated at "));
	gg_sb_site(b, gg_json_get(u, "site"));
	emit_sb(6, 10, b);
	gg_sb_printf(b, "found in the band of allocation #%" PRIu64 " (%" PRIu64 " %s, ",
		     gg_view_u64(r, "index"), below, gg_cli_plural(below, "byte", "bytes"));
	sb_band(b, r);
	gg_sb_add(b, ") directly below, allocated at ", strlen(") directly below, allocated at "));
	gg_sb_site(b, gg_json_get(r, "site"));
	emit_sb(6, 10, b);
	print_stack(b, "allocation stack of the one below", gg_json_get(r, "stack"));
	print_culprit(b, r);
}

static void print_violations(const struct view *vw, bool several)
{
	struct sb b = { 0 };

	printf("\n");
	if (!vw->nviolations) {
		printf("red zone violations: none\n");
		return;
	}
	size_t total = 0;

	for (size_t i = 0; i < vw->nviolations; i++)
		total += vw->violations[i].rows;
	/* Alike violations of several processes (same allocation, band and site)
	 * share an entry; each still counts. */
	if (total == vw->nviolations)
		printf("red zone violations: %zu\n", total);
	else
		printf("red zone violations: %zu, in %zu %s (alike ones grouped)\n", total,
		       vw->nviolations, gg_cli_plural(vw->nviolations, "entry", "entries"));
	for (size_t i = 0; i < vw->nviolations; i++) {
		const struct violation_group *g = &vw->violations[i];
		const struct gg_json *r = g->row, *expected = gg_json_get(r, "expected");
		uint64_t changed = gg_view_u64(r, "changed");

		if (several) {
			gg_sb_printf(&b, "%s ", gg_cli_plural(g->pids.len, "pid", "pids"));
			sb_pids(&b, &g->pids);
			gg_sb_add(&b, ": ", 2);
		}
		if (gg_view_is_api_overrun(r)) {
			print_api_overrun(&b, r);
			continue;
		}
		if (!strcmp(gg_view_violation_kind(r), GG_REPORT_UNDERFLOW)) {
			print_underflow(&b, r);
			continue;
		}
		if (!strcmp(gg_view_violation_kind(r), GG_REPORT_WRITE_AFTER_FREE) ||
		    !strcmp(gg_view_violation_kind(r), GG_REPORT_DANGLING_LAUNCH)) {
			print_quarantine_violation(&b, r);
			continue;
		}
		if (strcmp(gg_view_violation_kind(r), GG_REPORT_OVERRUN)) {
			print_free_violation(&b, r);
			continue;
		}
		uint64_t user = gg_view_u64(r, "user_bytes"), first = gg_view_u64(r, "first"),
			 last = gg_view_u64(r, "last");

		gg_sb_printf(&b, "allocation #%" PRIu64 " (%" PRIu64 " %s, ", gg_view_u64(r, "index"),
			     user, gg_cli_plural(user, "byte", "bytes"));
		sb_band(&b, r);
		gg_sb_printf(&b, "): %" PRIu64 " %s changed", changed,
			     gg_cli_plural(changed, "byte", "bytes"));
		emit_sb(2, 6, &b);
		if (first == last)
			gg_sb_printf(&b, "at offset %" PRIu64, first);
		else
			gg_sb_printf(&b, "at offsets %" PRIu64 "..%" PRIu64, first, last);
		gg_sb_printf(&b, " past the end, first 0x%02" PRIx64, gg_view_u64(r, "first_value"));
		if (expected)
			gg_sb_printf(&b, GLUE "(expected" GLUE "0x%02" PRIx64 ")",
				     gg_json_u64(expected, 0));
		gg_sb_add(&b, ", detected by ", strlen(", detected by "));
		gg_sb_str(&b, gg_json_get(r, "detected_by"), "?");
		emit_sb(6, 10, &b);
		gg_sb_add(&b, "allocated at ", strlen("allocated at "));
		gg_sb_site(&b, gg_json_get(r, "site"));
		emit_sb(6, 10, &b);
		print_upper(&b, r);
		print_stack(&b, "allocation stack", gg_json_get(r, "stack"));
		print_culprit(&b, r);
	}
	free(b.s);
}

/* A leaked stack, the most bytes first: the first ten entries. */
#define LEAKS_SHOWN 10

/* What leaked (docs/how-it-works.md, "Stacks, frees and leaks"): said only of summaries
 * written at exit. */
static void print_leaks(const struct view *vw, bool several)
{
	struct sb b = { 0 };
	uint64_t count = 0, bytes = 0;

	if (!vw->leak_summaries)
		return;
	printf("\n");
	if (!vw->nleaks) {
		printf("leaks: none\n");
		return;
	}
	for (size_t i = 0; i < vw->nleaks; i++)
		count += vw->leaks[i].count, bytes += vw->leaks[i].bytes;
	gg_sb_printf(&b, "leaks: %" PRIu64 " %s (%" PRIu64 " %s) live at exit, from %zu %s", count,
		     gg_cli_plural(count, "allocation", "allocations"), bytes,
		     gg_cli_plural(bytes, "byte", "bytes"), vw->nleaks,
		     gg_cli_plural(vw->nleaks, "stack", "stacks"));
	emit_sb(0, 4, &b);
	for (size_t i = 0; i < vw->nleaks && i < LEAKS_SHOWN; i++) {
		const struct leak_group *g = &vw->leaks[i];

		if (several) {
			gg_sb_printf(&b, "%s ", gg_cli_plural(g->pids.len, "pid", "pids"));
			sb_pids(&b, &g->pids);
			gg_sb_add(&b, ": ", 2);
		}
		gg_sb_printf(&b, "%" PRIu64 " %s (%" PRIu64 " %s) allocated at ", g->count,
			     gg_cli_plural(g->count, "allocation", "allocations"), g->bytes,
			     gg_cli_plural(g->bytes, "byte", "bytes"));
		gg_sb_site(&b, gg_json_get(g->row, "site"));
		emit_sb(2, 6, &b);
		print_stack(&b, "allocation stack", gg_json_get(g->row, "stack"));
	}
	if (vw->nleaks > LEAKS_SHOWN)
		printf("  and %zu more %s\n", vw->nleaks - LEAKS_SHOWN,
		       gg_cli_plural(vw->nleaks - LEAKS_SHOWN, "stack", "stacks"));
	free(b.s);
}

/* The findings by test: each labelled boundary that found something (the
 * pytest plugin labels one per test with its node id), with the first line
 * of each finding its ERROR lines name; the stacks are in the sections above. */
static void print_tests(const struct view *vw, bool several)
{
	struct sb b = { 0 };
	size_t n = 0;
	uint64_t omitted = 0;

	for (size_t i = 0; i < vw->nprocs; i++) {
		n += gg_json_length(gg_json_get(vw->procs[i].root, "labels"));
		omitted += gg_json_u64(gg_json_get(vw->procs[i].root, "labels_omitted"), 0);
	}
	if (!n && !omitted)
		return;
	printf("\nfindings by test: %zu %s\n", n, gg_cli_plural(n, "test", "tests"));
	/* A summary keeps so many labels: the tests past them found something
	 * that cannot be told here, never nothing. */
	if (omitted)
		printf("  %" PRIu64 " more %s found something that could not be attributed: the "
		       "summary left %s out (labels_omitted); the ERROR lines are in the log\n",
		       omitted, gg_cli_plural(omitted, "test", "tests"),
		       gg_cli_plural(omitted, "its label", "their labels"));
	for (size_t i = 0; i < vw->nprocs; i++) {
		const struct gg_json *labels = gg_json_get(vw->procs[i].root, "labels");

		for (size_t k = 0; k < gg_json_length(labels); k++) {
			const struct gg_json *l = gg_json_at(labels, k);
			const struct gg_json *lines = gg_json_get(l, "lines");
			uint64_t errors = gg_json_u64(gg_json_get(l, "errors"), 0);

			gg_sb_str(&b, gg_json_get(l, "label"), "?");
			gg_sb_printf(&b, ": %" PRIu64 " %s", errors,
				     gg_cli_plural(errors, "error", "errors"));
			if (several)
				gg_sb_printf(&b, " (pid %" PRIu64 ")", vw->procs[i].pid);
			emit_sb(2, 6, &b);
			for (size_t j = 0; j < gg_json_length(lines); j++) {
				const char *line = gg_json_string(gg_json_at(lines, j), "");
				const char *text = strstr(line, " ERROR: ");

				text = text ? text + 8 : line;
				if (*text == ' ') /* a stack's line, under its finding */
					continue;
				gg_sb_clean(&b, text, strlen(text));
				emit_sb(6, 8, &b);
			}
		}
	}
	free(b.s);
}

static void print_errors(const struct view *vw, bool several)
{
	struct sb b = { 0 };
	uint64_t sum = 0;
	size_t with = 0;

	for (size_t i = 0; i < vw->nprocs; i++) {
		sum += vw->procs[i].errors;
		with += vw->procs[i].errors != 0;
	}
	printf("\n");
	gg_sb_printf(&b, "errors: %" PRIu64, sum);
	if (several && sum) {
		gg_sb_printf(&b, " in %zu of %zu processes (", with, vw->nprocs);
		for (size_t i = 0, n = 0; i < vw->nprocs; i++)
			if (vw->procs[i].errors)
				gg_sb_printf(&b, "%s%" PRIu64 ": %" PRIu64, n++ ? ", " : "",
					     vw->procs[i].pid, vw->procs[i].errors);
		gg_sb_add(&b, ")", 1);
	}
	emit_sb(0, 4, &b);
	free(b.s);
}

/* ---- --require-coverage ---------------------------------------------------- */

/* Whether @pr is a process whose red zones never looked: they were on and
 * guarded nothing while it allocated, or while cuGetProcAddress answers it
 * could not match may have hidden its allocations. *@why says so
 * (malloc'ed; NULL when out of memory). */
static bool blind(const struct proc *pr, char **why)
{
	struct tally reasons = { 0 }, allocators = { 0 };
	struct coverage c;
	struct sb b = { 0 };

	coverage_of(pr, &c);
	if (!c.redzones_on || c.guarded || (!c.allocations && !c.procaddr_unmatched))
		return false;
	tally_coverage(&reasons, &allocators, &c);
	gg_sb_printf(&b, "pid %" PRIu64 " (", pr->pid);
	gg_sb_str(&b, gg_json_get(pr->root, "exe"), "unknown program");
	gg_sb_add(&b, "): red zones were on and ", strlen("): red zones were on and "));
	if (c.allocations) {
		gg_sb_printf(&b, "none of its %" PRIu64 " %s was guarded", c.allocations,
			     gg_cli_plural(c.allocations, "allocation", "allocations"));
		if (reasons.len) {
			gg_sb_add(&b, " (", 2);
			sb_tally(&b, &reasons, true);
			gg_sb_add(&b, ")", 1);
		}
	} else {
		gg_sb_printf(&b,
			     "no allocation was seen, while %" PRIu64 " cuGetProcAddress %s matched "
			     "no driver function (calls through %s are not seen)",
			     c.procaddr_unmatched,
			     gg_cli_plural(c.procaddr_unmatched, "answer", "answers"),
			     gg_cli_plural(c.procaddr_unmatched, "it", "them"));
	}
	tally_free(&reasons);
	tally_free(&allocators);
	if (b.oom) {
		free(b.s);
		b.s = NULL;
	}
	*why = b.s;
	return true;
}

/* Fill @v for the @nfiles files of @procs, the @nread readable ones first,
 * and name each failure. Whether coverage fell short. */
static bool judge_coverage(struct verdict *v, const struct proc *procs, size_t nfiles, size_t nread)
{
	bool any_on = false, any_guarded = false, short_of = false;

	for (size_t i = 0; i < nread; i++) {
		struct coverage c;

		coverage_of(&procs[i], &c);
		any_on |= c.redzones_on;
		any_guarded |= c.guarded > 0;
		if (blind(&procs[i], &v->why[i])) {
			v->blind[i] = short_of = true;
			gg_cli_error("report: --require-coverage: %s",
				     v->why[i] ? v->why[i] : "a process guarded nothing");
		}
	}
	if (!nread && nfiles)
		snprintf(v->set, sizeof(v->set),
			 "no summary was read (%zu %s given, none could be "
			 "read)",
			 nfiles, gg_cli_plural(nfiles, "file", "files"));
	else if (!nread)
		snprintf(v->set, sizeof(v->set), "no summary was read (no file given)");
	else if (any_on && !any_guarded && !short_of)
		snprintf(v->set, sizeof(v->set),
			 "no process guarded any allocation while red "
			 "zones were on");
	if (v->set[0])
		gg_cli_error("report: --require-coverage: %s", v->set);
	return short_of || v->set[0];
}

/* ---- the command --------------------------------------------------------- */

/* The readable summaries by pid, then the others in argv order. */
static int by_pid(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;

	if (!x->root != !y->root)
		return x->root ? -1 : 1;
	if (x->root && x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->file < y->file ? -1 : x->file > y->file; /* argv order */
}

static struct gg_json *load(const char *file, char **why)
{
	struct gg_json_error err;
	struct gg_json *root;

	if (!strcmp(file, "-")) {
		size_t len;
		char *text = gg_json_read_fd(STDIN_FILENO, &len);

		if (!text) {
			refuse(why, "standard input", 0, 0, strerror(errno));
			return NULL;
		}
		root = gg_json_parse(text, len, &err);
		free(text);
	} else {
		root = gg_json_parse_file(file, &err);
	}
	if (!root) {
		char msg[sizeof(err.message) + 16];

		snprintf(msg, sizeof(msg), "%s%s", err.line ? "" : "cannot read: ", err.message);
		refuse(why, file, err.line, err.column, msg);
		return NULL;
	}
	if (!check_summary(file, root, why)) {
		gg_json_free(root);
		return NULL;
	}
	return root;
}

struct options {
	const char *junit, *sarif;
	bool require_coverage;
	char **files;
	size_t nfiles;
};

/* Where the value of @arg goes when it is "--junit" or "--sarif" (*@n: the
 * option's length, "=VALUE" may follow), else NULL. */
static const char **file_option(struct options *o, const char *arg, size_t *n)
{
	static const char *const names[] = { "--junit", "--sarif" };
	const char **slots[] = { &o->junit, &o->sarif };

	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		*n = strlen(names[k]);
		if (!strncmp(arg, names[k], *n) && (!arg[*n] || arg[*n] == '='))
			return slots[k];
	}
	return NULL;
}

/* 0, 1 for --help, or 2 for a usage error (named). */
static int parse_options(int argc, char **argv, struct options *o)
{
	bool options = true, stdin_used = false;

	o->files = calloc((size_t)argc, sizeof(*o->files));
	if (!o->files) {
		gg_cli_error("report: out of memory");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], **slot;
		size_t n;

		if (!options || arg[0] != '-' || !arg[1]) {
			if (!strcmp(arg, "-")) {
				if (stdin_used) {
					gg_cli_error("report: standard input ('-') given twice");
					return 2;
				}
				stdin_used = true;
			}
			o->files[o->nfiles++] = argv[i];
		} else if (!strcmp(arg, "--")) {
			options = false;
		} else if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			return 1;
		} else if (!strcmp(arg, "--require-coverage")) {
			o->require_coverage = true;
		} else if ((slot = file_option(o, arg, &n))) {
			*slot = arg[n] ? arg + n + 1 : i + 1 < argc ? argv[++i] : NULL;
			if (!*slot || !**slot) {
				gg_cli_error("report: %.*s needs a FILE", (int)n, arg);
				return 2;
			}
		} else {
			char name[GG_CLI_NAME_MAX];

			gg_cli_error("report: unknown option '%s' (see gpuguard report --help)",
				     gg_cli_name(name, sizeof(name), arg));
			return 2;
		}
	}
	/* With --require-coverage an empty set is the failure it names, reported
	 * in the files for CI too, not a usage error. */
	if (!o->nfiles && !o->require_coverage) {
		gg_cli_error("report: no FILE.json given (usage: " GG_USAGE_REPORT ")");
		return 2;
	}
	return 0;
}

/* Whether the regular file @path parses as a gpuguard summary (an object with
 * "schema" and "pid"), whatever its schema. */
static bool holds_summary(const char *path)
{
	struct gg_json *root = gg_json_parse_file(path, NULL);
	bool is = gg_json_get(root, "schema") && gg_json_get(root, "pid");

	gg_json_free(root);
	return is;
}

/* @path with its directory resolved (links, "." and ".."), in @out
 * (PATH_MAX bytes): names a file that need not exist. */
static bool canonical(const char *path, char *out)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX], real[PATH_MAX];

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	if (!realpath(dir, real))
		return false;
	return (size_t)snprintf(out, PATH_MAX, "%s/%s", real, slash ? slash + 1 : path) < PATH_MAX;
}

/* Whether the names @a and @b are one file: the same name, the same device
 * and inode where both exist, or the same name once their directories are
 * resolved where one does not. */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	char ca[PATH_MAX], cb[PATH_MAX];
	bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;

	if (!strcmp(a, b))
		return true;
	if (ea && eb)
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	return !ea && !eb && canonical(a, ca) && canonical(b, cb) && !strcmp(ca, cb);
}

/* Whether the file @path that @flag would write is one of the inputs, holds
 * a gpuguard summary already, or is @other_flag's file too: then it is not
 * written, and the message says why. (A --junit that lost its FILE to a glob
 * of summaries takes the first one for the file to write.) */
static bool output_refused(const struct options *o, const char *flag, const char *path,
			   const char *other_flag, const char *other)
{
	static const char hint[] = "it is not overwritten (%s takes the file to write, as in %s %s)";
	const char *example = !strcmp(flag, "--junit") ? "junit.xml" : "gpuguard.sarif";
	struct stat out, in;
	bool exists = stat(path, &out) == 0;
	char why[256], name[GG_CLI_NAME_MAX];

	snprintf(why, sizeof(why), hint, flag, flag, example);
	for (size_t i = 0; i < o->nfiles; i++) {
		const char *f = o->files[i];
		bool stdin_file = !strcmp(f, "-");

		if (stdin_file ? exists && fstat(STDIN_FILENO, &in) == 0 && in.st_dev == out.st_dev &&
					 in.st_ino == out.st_ino
			       : same_file(f, path)) {
			gg_cli_error("report: %s %s: is %s, an input; %s", flag,
				     gg_cli_name(name, sizeof(name), path),
				     stdin_file ? "standard input" : "one of the summaries to read",
				     why);
			return true;
		}
	}
	if (exists && S_ISREG(out.st_mode) && holds_summary(path)) {
		gg_cli_error("report: %s %s: holds a gpuguard summary; %s", flag,
			     gg_cli_name(name, sizeof(name), path), why);
		return true;
	}
	if (other && same_file(path, other)) {
		gg_cli_error("report: %s %s: %s names the same file; give each a file of its own", flag,
			     gg_cli_name(name, sizeof(name), path), other_flag);
		return true;
	}
	return false;
}

static void print_report(struct view *vw, size_t skipped)
{
	bool several = vw->nprocs > 1;

	if (several) {
		printf("gpuguard report: %zu processes\n", vw->nprocs);
		for (size_t i = 0; i < vw->nprocs; i++)
			print_process(&vw->procs[i], true);
		printf("totals:\n");
	} else {
		struct sb b = { 0 };

		gg_sb_add(&b, "gpuguard report: ", strlen("gpuguard report: "));
		gg_sb_clean(&b, vw->procs[0].file, strlen(vw->procs[0].file));
		emit_sb(0, 4, &b);
		free(b.s);
		print_process(&vw->procs[0], false);
	}
	print_counters(vw, 2);
	print_unresolved(vw, several);
	print_violations(vw, several);
	print_leaks(vw, several);
	print_tests(vw, several);
	print_errors(vw, several);
	if (skipped)
		printf("\nskipped: %zu %s that could not be read (named on standard error)\n", skipped,
		       gg_cli_plural(skipped, "file", "files"));
}

int gg_cmd_report(int argc, char **argv)
{
	struct options o = { 0 };
	struct verdict v = { 0 };
	struct proc *procs;
	struct view vw = { 0 };
	size_t nread = 0;
	int err, status = parse_options(argc, argv, &o);
	char name[GG_CLI_NAME_MAX];

	if (status) {
		free(o.files);
		if (status == 1) {
			fputs(report_usage, stdout);
			return fflush(stdout) ? 2 : 0;
		}
		return status;
	}
	if ((o.junit && output_refused(&o, "--junit", o.junit, "--sarif", o.sarif)) ||
	    (o.sarif && output_refused(&o, "--sarif", o.sarif, NULL, NULL))) {
		free(o.files);
		return 2;
	}
	procs = calloc(o.nfiles + 1, sizeof(*procs));
	v.blind = calloc(o.nfiles + 1, sizeof(*v.blind));
	v.why = calloc(o.nfiles + 1, sizeof(*v.why));
	if (!procs || !v.blind || !v.why) {
		gg_cli_error("report: out of memory");
		status = 2;
		goto out;
	}
	for (size_t i = 0; i < o.nfiles; i++) {
		struct proc *pr = &procs[i];

		pr->file = o.files[i];
		/* Named by load(); the others are still reported
		 * (tests/test-cli-report.c, Test(report,
		 * names_empty_truncated_and_malformed_files_and_exits_2)). */
		pr->root = load(pr->file, &pr->why);
		pr->pid = gg_view_u64(pr->root, "pid");
		pr->errors = gg_view_u64(pr->root, "errors");
		nread += pr->root != NULL;
		if (pr->errors)
			status = 1;
	}
	qsort(procs, o.nfiles, sizeof(*procs), by_pid);
	vw.procs = procs;
	vw.nprocs = nread;
	if (nread) {
		gg_view_group(&vw);
		print_report(&vw, o.nfiles - nread);
		gg_view_free_groups(&vw);
	}
	if (o.require_coverage && judge_coverage(&v, procs, o.nfiles, nread) && !status)
		status = 1;
	if (nread < o.nfiles)
		status = 2;
	if (o.junit && (err = gg_ci_junit(o.junit, procs, o.nfiles, &v))) {
		gg_cli_error("report: --junit %s: %s", gg_cli_name(name, sizeof(name), o.junit),
			     strerror(-err));
		status = 2;
	}
	if (o.sarif && (err = gg_ci_sarif(o.sarif, procs, o.nfiles, &v))) {
		gg_cli_error("report: --sarif %s: %s", gg_cli_name(name, sizeof(name), o.sarif),
			     strerror(-err));
		status = 2;
	}
	if (fflush(stdout) || ferror(stdout)) {
		gg_cli_error("report: cannot write the report: %s", strerror(errno));
		status = 2;
	}
out:
	for (size_t i = 0; procs && i < o.nfiles; i++) {
		gg_json_free(procs[i].root);
		free(procs[i].why);
		if (v.why)
			free(v.why[i]);
	}
	free(procs);
	free(v.blind);
	free(v.why);
	free(o.files);
	return status;
}
