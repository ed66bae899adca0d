/* What users read: README.md, gpuguard(1), the summary's JSON Schema and the
 * command's --help. Their examples run as written (a directory an example
 * writes into is made first), and they point at nothing a user cannot see
 * (the project's contract is not in the repository). */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

#define README GG_SOURCE_ROOT "/README.md"
#define MANPAGE GG_SOURCE_ROOT "/docs/gpuguard.1"
#define SCHEMA GG_SOURCE_ROOT "/docs/summary.schema.json"

/* The options and variables whose value is a file the run writes. */
static const char *const writers[] = { "--json", "--log", "--metrics", "--junit", "--sarif",
				       "GPUGUARD_SUMMARY_JSON", "GPUGUARD_LOG",
				       "GPUGUARD_METRICS" };

/* The file @tok names when it is a writer's "--opt=FILE" or "VAR=FILE". */
static const char *joined_value(const char *tok)
{
	for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++) {
		size_t n = strlen(writers[i]);

		if (!strncmp(tok, writers[i], n) && tok[n] == '=')
			return tok + n + 1;
	}
	return NULL;
}

static bool is_writer(const char *tok)
{
	for (size_t i = 0; i < 5; i++) /* the options, given apart from their value */
		if (!strcmp(tok, writers[i]))
			return true;
	return false;
}

struct example_check {
	unsigned outputs;       /* files written into a relative directory */
	char bad[2048];         /* "line: directory" of each one never made */
	char made[16][128];     /* mkdir's operands in the example so far */
	unsigned nmade;
};

static void check_output(struct example_check *c, const char *line, const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[128];

	/* A bare name goes to the working directory; an absolute one (or one
	 * under $VAR) names a system directory, whose text says it must exist. */
	if (!slash || path[0] == '/' || path[0] == '$' || path[0] == '~')
		return;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	c->outputs++;
	/* mkdir -p out/runs makes out too */
	for (unsigned i = 0; i < c->nmade; i++)
		if (!strncmp(c->made[i], dir, strlen(dir)) &&
		    (c->made[i][strlen(dir)] == '\0' || c->made[i][strlen(dir)] == '/'))
			return;
	snprintf(c->bad + strlen(c->bad), sizeof(c->bad) - strlen(c->bad), "  %s (%s never made)\n",
		 line, dir);
}

/* One line of an example: note what mkdir makes, check what is written. */
static void check_line(struct example_check *c, const char *line)
{
	char buf[512], *save = NULL, *tok;
	bool in_mkdir = false, next_is_output = false;

	snprintf(buf, sizeof(buf), "%s", line);
	for (tok = strtok_r(buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		const char *v;

		if (!strcmp(tok, "&&") || !strcmp(tok, ";") || !strcmp(tok, "|") || !strcmp(tok, "&")) {
			in_mkdir = false;
			continue;
		}
		if (next_is_output) {
			check_output(c, line, tok);
			next_is_output = false;
		} else if (!strcmp(tok, "mkdir")) {
			in_mkdir = true;
		} else if (in_mkdir && tok[0] != '-' && c->nmade < 16) {
			snprintf(c->made[c->nmade++], sizeof(c->made[0]), "%s", tok);
		} else if (is_writer(tok)) {
			next_is_output = true;
		} else if ((v = joined_value(tok))) {
			check_output(c, line, v);
		}
	}
}

/* The examples of a README (indented code blocks) or a man page (.nf ...
 * .fi), each checked on its own: a directory is made in the example that
 * writes into it, before it does. */
static void check_examples(const char *text, bool man, struct example_check *total)
{
	struct example_check c = { 0 };
	bool in_example = false;

	memset(total, 0, sizeof(*total));
	for (const char *p = text; *p;) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		char line[512];
		bool code;

		snprintf(line, sizeof(line), "%.*s", (int)(len < 511 ? len : 511), p);
		if (man) {
			gg_replace_all(line, "\\-", "-");
			if (!strncmp(line, ".nf", 3) || !strncmp(line, ".fi", 3)) {
				in_example = line[1] == 'n';
				memset(&c, 0, sizeof(c));
				code = false;
			} else {
				code = in_example;
			}
		} else {
			code = !strncmp(line, "    ", 4) || line[0] == '\t';
			if (!code)
				memset(&c, 0, sizeof(c)); /* the example ended */
		}
		if (code) {
			c.bad[0] = '\0';
			check_line(&c, line);
			total->outputs += c.outputs;
			c.outputs = 0;
			snprintf(total->bad + strlen(total->bad), sizeof(total->bad) - strlen(total->bad),
				 "%s", c.bad);
		}
		p += len + (eol != NULL);
	}
}

Test(docs, the_readme_examples_make_the_directories_they_write_into)
{
	char *text = gg_read_file(README);
	struct example_check c;

	cr_assert_not_null(text);
	check_examples(text, false, &c);
	/* The CI jobs (2), the Python program, at least. */
	cr_assert_geq(c.outputs, 3, "the README's examples were not found");
	cr_assert_str_eq(c.bad, "", "README.md writes into a directory it never made:\n%s", c.bad);
	free(text);
}

Test(docs, the_man_page_examples_make_the_directories_they_write_into)
{
	char *text = gg_read_file(MANPAGE);
	struct example_check c;

	cr_assert_not_null(text);
	check_examples(text, true, &c);
	cr_assert_geq(c.outputs, 2, "gpuguard(1)'s examples were not found");
	cr_assert_str_eq(c.bad, "", "gpuguard(1) writes into a directory it never made:\n%s", c.bad);
	free(text);
}

/* The check itself: an example that writes into a directory it did not make
 * is caught, one that makes it (or writes where it is) is not. */
Test(docs, an_example_writing_into_a_directory_it_did_not_make_is_caught)
{
	struct example_check c;

	check_examples("text\n\n    gpuguard --json out/%p.json -- ./a\n", false, &c);
	cr_assert_neq(strstr(c.bad, "(out never made)"), NULL, "%s", c.bad);
	check_examples("\n    GPUGUARD_LOG=logs/a.log ./a\n", false, &c);
	cr_assert_neq(strstr(c.bad, "(logs never made)"), NULL, "%s", c.bad);
	check_examples(".nf\ngpuguard \\-\\-metrics=m/a.prom \\-\\- ./a\n.fi\n", true, &c);
	cr_assert_neq(strstr(c.bad, "(m never made)"), NULL, "%s", c.bad);
	/* made in an earlier example only: not made in this one */
	check_examples("    mkdir -p out\n\n    gpuguard --json out/a.json -- ./a\n", false, &c);
	cr_assert_neq(strstr(c.bad, "(out never made)"), NULL, "%s", c.bad);

	check_examples("    mkdir -p out\n    gpuguard --json out/%p.json -- ./a\n", false, &c);
	cr_assert_str_eq(c.bad, "");
	cr_assert_eq(c.outputs, 1);
	check_examples("    mkdir -p out/runs\n    gpuguard --log out/runs/a.log -- ./a\n", false, &c);
	cr_assert_str_eq(c.bad, "");
	check_examples("    gpuguard --json /tmp/a.json --log a.log -- ./a\n", false, &c);
	cr_assert_str_eq(c.bad, "");
	cr_assert_eq(c.outputs, 0);
}

/* Text that sends a reader to the project's contract, a file they do not
 * have: "SPEC", "SPEC section 6", "SPEC §6". NULL when there is none. */
static const char *names_the_contract(const char *text)
{
	for (const char *p = text; (p = strstr(p, "SPEC")); p++) {
		bool word_before = p > text && (p[-1] == '_' || (p[-1] >= 'A' && p[-1] <= 'Z') ||
						(p[-1] >= 'a' && p[-1] <= 'z'));
		char after = p[4];

		if (!word_before && !(after == '_' || (after >= 'A' && after <= 'Z') ||
				      (after >= 'a' && after <= 'z')))
			return p;
	}
	return strstr(text, "§");
}

static void assert_no_contract(const char *what, const char *text)
{
	const char *at = names_the_contract(text);

	cr_assert_null(at, "%s points at a file users do not have: \"%.60s\"", what, at);
}

Test(docs, user_facing_text_names_no_file_outside_the_repository)
{
	const char *files[] = { README, MANPAGE, SCHEMA };
	const char *helps[][3] = { { "--help" }, { "report", "--help" }, { "scan", "--help" },
				   { "symbolize", "--help" }, { "bisect", "--help" } };

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *text = gg_read_file(files[i]);

		cr_assert_not_null(text, "%s", files[i]);
		assert_no_contract(files[i], text);
		free(text);
	}
	for (size_t i = 0; i < sizeof(helps) / sizeof(helps[0]); i++) {
		struct gg_run r;
		char what[64];

		gg_run(&r, 0, NULL,
		       (const char *[]){ GG_CLI, helps[i][0], helps[i][1], NULL });
		snprintf(what, sizeof(what), "gpuguard %s %s", helps[i][0], helps[i][1] ? helps[i][1] : "");
		cr_assert_gt(r.out_len + r.err_len, 0, "%s printed nothing", what);
		assert_no_contract(what, r.out);
		assert_no_contract(what, r.err);
		gg_run_free(&r);
	}
}

/* Every file of the repository the README names (`docs/...`, `scripts/...`,
 * `BENCHMARKS.md`) is there. */
Test(docs, the_files_the_readme_names_are_in_the_repository)
{
	static const char *const roots[] = { "docs/", "scripts/", "shim/", "tests/", "tools/",
					     "examples/", "bench/", "gpucheck/" };
	char *text = gg_read_file(README);
	unsigned named = 0;
	char missing[1024] = "";

	cr_assert_not_null(text);
	for (const char *p = strchr(text, '`'); p; p = strchr(p + 1, '`')) {
		const char *end = strchr(p + 1, '`');
		char tok[256], path[512];
		struct stat st;
		bool repo = false;

		if (!end)
			break;
		snprintf(tok, sizeof(tok), "%.*s", (int)(end - p - 1 < 255 ? end - p - 1 : 255), p + 1);
		p = end;
		tok[strcspn(tok, " ")] = '\0'; /* `scripts/test --clang`: the file */
		for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
			repo |= !strncmp(tok, roots[i], strlen(roots[i]));
		if (!strchr(tok, '/') && strlen(tok) > 3 && !strcmp(tok + strlen(tok) - 3, ".md"))
			repo = true;
		if (!repo)
			continue;
		named++;
		snprintf(path, sizeof(path), "%s/%s", GG_SOURCE_ROOT, tok);
		if (stat(path, &st))
			snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), " %s", tok);
	}
	cr_assert_geq(named, 10, "the README's file names were not found");
	cr_assert_str_eq(missing, "", "README.md names files the repository lacks:%s", missing);
	free(text);
}
