/* What users read: README.md and the pages of docs/ it links, gpuguard(1),
 * the summary's JSON Schema and the command's --help. Their examples run as written (a directory an example
 * writes into is made first), and they point at nothing a user cannot see
 * (the project's contract is not in the repository). */
#include <criterion/criterion.h>
#include <ctype.h>
#include <glob.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

#define README GG_SOURCE_ROOT "/README.md"
#define MANPAGE GG_SOURCE_ROOT "/docs/gpuguard.1"
#define SCHEMA GG_SOURCE_ROOT "/docs/summary.schema.json"
#define DOC_PAGES GG_SOURCE_ROOT "/docs/*.md"

/* README.md and every docs/ page, one after the other, each ended by a blank
 * line (what the README says in five minutes, and what its links lead to).
 * Free with free(). */
static char *user_docs(void)
{
	char *all = gg_read_file(README);
	size_t len = all ? strlen(all) : 0;
	glob_t g;

	cr_assert_not_null(all, "%s", README);
	cr_assert_eq(glob(DOC_PAGES, 0, NULL, &g), 0, "no %s", DOC_PAGES);
	cr_assert_geq(g.gl_pathc, 5, "the docs/ pages were not found");
	for (size_t i = 0; i < g.gl_pathc; i++) {
		char *page = gg_read_file(g.gl_pathv[i]);

		cr_assert_not_null(page, "%s", g.gl_pathv[i]);
		all = realloc(all, len + strlen(page) + 3);
		cr_assert_not_null(all);
		len += (size_t)sprintf(all + len, "\n\n%s", page);
		free(page);
	}
	globfree(&g);
	return all;
}

/* The options and variables whose value is a file the run writes. */
static const char *const writers[] = { "--json",       "--log",           "--metrics",
				       "--junit",      "--sarif",         "GPUGUARD_SUMMARY_JSON",
				       "GPUGUARD_LOG", "GPUGUARD_METRICS" };

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
	unsigned outputs;   /* files written into a relative directory */
	char bad[2048];     /* "line: directory" of each one never made */
	char made[16][128]; /* mkdir's operands in the example so far */
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
			snprintf(total->bad + strlen(total->bad),
				 sizeof(total->bad) - strlen(total->bad), "%s", c.bad);
		}
		p += len + (eol != NULL);
	}
}

Test(docs, the_readme_examples_make_the_directories_they_write_into)
{
	char *text = user_docs();
	struct example_check c;

	cr_assert_not_null(text);
	check_examples(text, false, &c);
	/* The CI jobs (2), the Python program, at least. */
	cr_assert_geq(c.outputs, 3, "the README's examples were not found");
	cr_assert_str_eq(c.bad, "", "README.md or docs/ writes into a directory it never made:\n%s",
			 c.bad);
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

		if (!word_before &&
		    !(after == '_' || (after >= 'A' && after <= 'Z') || (after >= 'a' && after <= 'z')))
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
	glob_t pages;
	const char *helps[][3] = { { "--help" },           { "report", "--help" },
				   { "scan", "--help" },   { "symbolize", "--help" },
				   { "bisect", "--help" }, { "prune-metrics", "--help" } };

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *text = gg_read_file(files[i]);

		cr_assert_not_null(text, "%s", files[i]);
		assert_no_contract(files[i], text);
		free(text);
	}
	cr_assert_eq(glob(DOC_PAGES, 0, NULL, &pages), 0, "no %s", DOC_PAGES);
	for (size_t i = 0; i < pages.gl_pathc; i++) {
		char *text = gg_read_file(pages.gl_pathv[i]);

		cr_assert_not_null(text, "%s", pages.gl_pathv[i]);
		assert_no_contract(pages.gl_pathv[i], text);
		free(text);
	}
	globfree(&pages);
	for (size_t i = 0; i < sizeof(helps) / sizeof(helps[0]); i++) {
		struct gg_run r;
		char what[64];

		gg_run(&r, 0, NULL, (const char *[]){ GG_CLI, helps[i][0], helps[i][1], NULL });
		snprintf(what, sizeof(what), "gpuguard %s %s", helps[i][0],
			 helps[i][1] ? helps[i][1] : "");
		cr_assert_gt(r.out_len + r.err_len, 0, "%s printed nothing", what);
		assert_no_contract(what, r.out);
		assert_no_contract(what, r.err);
		gg_run_free(&r);
	}
}

/* Every file of the repository the README and its docs/ pages name
 * (`docs/...`, `scripts/...`, `BENCHMARKS.md`) is there. */
Test(docs, the_files_the_readme_names_are_in_the_repository)
{
	static const char *const roots[] = { "docs/",  "scripts/",  "shim/",  "tests/",
					     "tools/", "examples/", "bench/", "gpucheck/" };
	char *text = user_docs();
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
			snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), " %s",
				 tok);
	}
	cr_assert_geq(named, 10, "the README's file names were not found");
	cr_assert_str_eq(missing, "", "README.md or docs/ names files the repository lacks:%s",
			 missing);
	free(text);
}

/* gpuguard(1) as man shows it: groff, every warning on, says nothing (a
 * line it cannot break or adjust is one a reader sees ragged or cut). */
Test(docs, the_man_page_formats_without_a_warning)
{
	static const char *const widths[] = { "-rLL=65n", "-rLL=78n", "-rLL=80n", "-rLL=120n" };
	struct gg_run r;

	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
		gg_run(&r, 0, NULL,
		       (const char *[]){ "/bin/sh", "-c",
					 "command -v groff >/dev/null || { echo 'groff not found: "
					 "install groff-base (scripts/deps.sh)' >&2; exit 1; }; "
					 "exec groff -ww -z -man -Tutf8 \"$1\" \"$0\"",
					 MANPAGE, widths[i], NULL });
		cr_expect_eq(gg_run_exit(&r), 0, "%s", r.err);
		cr_expect_str_eq(r.err, "", "groff %s: %s", widths[i], r.err);
		gg_run_free(&r);
	}
}

static int by_text(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* The options ("-d", "--wait") @text names as words, sorted, each once, separated
 * by spaces, into @out. */
static void flags_of(const char *text, char *out, size_t cap)
{
	char flags[128][64];
	size_t n = 0;

	for (const char *p = text; *p && n < 128; p++) {
		size_t dashes = 0, len;

		/* An option starts a word: "[--wait", " -d"; not "(-g)" or "a-b". */
		if (*p != '-' || (p > text && !strchr(" \t\n[|,", p[-1])))
			continue;
		while (p[dashes] == '-')
			dashes++;
		if (dashes > 2 || !islower((unsigned char)p[dashes]))
			continue;
		len = strspn(p, "-abcdefghijklmnopqrstuvwxyz0123456789");
		while (len && p[len - 1] == '-')
			len--;
		snprintf(flags[n++], sizeof(flags[0]), "%.*s", (int)len, p);
		p += len - 1;
	}
	qsort(flags, n, sizeof(flags[0]), by_text);
	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!i || strcmp(flags[i], flags[i - 1]))
			snprintf(out + strlen(out), cap - strlen(out), "%s%s", out[0] ? " " : "",
				 flags[i]);
}

/* gpuguard SUBCOMMAND --help (NULL: the run's, gpuguard --help). Free with free(). */
static char *help_of(const char *sub)
{
	struct gg_run r;
	char *text;

	if (sub)
		gg_run(&r, 0, NULL, (const char *[]){ GG_CLI, sub, "--help", NULL });
	else
		gg_run(&r, 0, NULL, (const char *[]){ GG_CLI, "--help", NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s --help: %s", sub ? sub : "", r.err);
	text = strdup(r.out);
	gg_run_free(&r);
	return text;
}

/* The subcommand a synopsis line is of: "gpuguard scan ..." is scan's, and
 * "gpuguard [OPTIONS] -- PROGRAM" the run's (""). */
static const char *subcommand_of(const char *after_gpuguard)
{
	static const char *const subs[] = { "scan", "report", "symbolize", "bisect", "prune-metrics" };

	while (*after_gpuguard == ' ')
		after_gpuguard++;
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
		if (!strncmp(after_gpuguard, subs[i], strlen(subs[i])) &&
		    !isalnum((unsigned char)after_gpuguard[strlen(subs[i])]))
			return subs[i];
	return "";
}

/* Each form of the command is said once (tools/cli.h) and the same
 * everywhere: its own --help, gpuguard --help, gpuguard(1)'s SYNOPSIS and
 * the README's list name the same options. */
Test(docs, each_usage_line_is_the_same_in_help_man_page_and_readme)
{
	static const char *const subs[] = {
		"", "scan", "report", "symbolize", "bisect", "prune-metrics"
	};
	char *top = help_of(NULL), *man = gg_read_file(MANPAGE), *readme = gg_read_file(README);
	char *syn, *end, *block;

	cr_assert(top && man && readme);
	gg_replace_all(man, "\\-", "-");
	syn = strstr(man, ".SH SYNOPSIS\n");
	end = syn ? strstr(syn, "\n.SH ") : NULL;
	cr_assert(syn && end, "gpuguard(1) has no SYNOPSIS");
	*end = '\0';
	block = strstr(readme, "\n## The gpuguard command\n");
	cr_assert_not_null(block, "the README's \"The gpuguard command\" was not found");
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		char *own = subs[i][0] ? help_of(subs[i]) : strdup(top), line[256], want[1024];
		char in_man[1024] = "", in_readme[1024] = "", got[1024];
		const char *p;
		bool man_has = false, readme_has = false;

		cr_assert(!strncmp(own, "usage: gpuguard", 15), "%s --help: %s", subs[i], own);
		snprintf(line, sizeof(line), "%.*s", (int)strcspn(own + 7, "\n"), own + 7);
		cr_expect(strstr(top, line), "gpuguard --help lacks \"%s\"", line);
		flags_of(line, want, sizeof(want));
		/* gpuguard(1): ".B gpuguard SUB" up to the next ".br". */
		for (p = syn; (p = strstr(p, "\n.B gpuguard")); p++) {
			const char *stop = strstr(p + 1, "\n.br");
			size_t len = stop ? (size_t)(stop - p) : strlen(p);
			char chunk[1024];

			if (strcmp(subcommand_of(p + 12), subs[i]))
				continue;
			snprintf(chunk, sizeof(chunk), "%.*s", (int)len, p);
			flags_of(chunk, in_man, sizeof(in_man));
			man_has = true;
		}
		/* README: the indented lines "    gpuguard SUB ..." of its list. */
		for (p = block; (p = strstr(p, "\n    gpuguard ")) && p < block + 1500; p++) {
			char chunk[512];

			if (strcmp(subcommand_of(p + 13), subs[i]))
				continue;
			snprintf(chunk, sizeof(chunk), "%.*s", (int)strcspn(p + 1, "\n"), p + 1);
			flags_of(chunk, got, sizeof(got));
			snprintf(in_readme, sizeof(in_readme), "%s", got);
			readme_has = true;
			break;
		}
		cr_expect(man_has, "gpuguard(1)'s SYNOPSIS lacks gpuguard %s", subs[i]);
		cr_expect_str_eq(in_man, want, "gpuguard %s: gpuguard(1) names \"%s\", --help \"%s\"",
				 subs[i], in_man, want);
		cr_expect(readme_has, "the README's list lacks gpuguard %s", subs[i]);
		cr_expect_str_eq(in_readme, want, "gpuguard %s: README.md names \"%s\", --help \"%s\"",
				 subs[i], in_readme, want);
		free(own);
	}
	free(top);
	free(man);
	free(readme);
}

/* Every option --help offers, the command's and each subcommand's, is in
 * gpuguard(1) and in the README or the docs/ pages it links. */
Test(docs, every_option_of_the_help_is_in_the_man_page_and_the_readme)
{
	static const char *const subs[] = { NULL,        "scan",   "report",
					    "symbolize", "bisect", "prune-metrics" };
	char *man = gg_read_file(MANPAGE), *readme = user_docs();
	char missing[2048] = "";

	cr_assert(man && readme);
	gg_replace_all(man, "\\-", "-");
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		char *help = help_of(subs[i]), flags[4096], *save = NULL;

		flags_of(help, flags, sizeof(flags));
		for (char *f = strtok_r(flags, " ", &save); f; f = strtok_r(NULL, " ", &save)) {
			char word[80];
			bool in_man, in_readme;

			/* As a word: "--wait" is not in "--wait-for". */
			snprintf(word, sizeof(word), "%s", f);
			in_man = false;
			in_readme = false;
			for (const char *p = man; (p = strstr(p, word)); p++)
				in_man |= !(isalnum((unsigned char)p[strlen(word)]) ||
					    p[strlen(word)] == '-');
			for (const char *p = readme; (p = strstr(p, word)); p++)
				in_readme |= !(isalnum((unsigned char)p[strlen(word)]) ||
					       p[strlen(word)] == '-');
			if (!in_man || !in_readme)
				snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
					 " %s%s%s (not in%s%s)", subs[i] ? subs[i] : "",
					 subs[i] ? " " : "", f, in_man ? "" : " gpuguard(1)",
					 in_readme ? "" : " README.md or docs/");
		}
		free(help);
	}
	cr_expect_str_eq(missing, "", "options --help offers that the documents lack:%s", missing);
	free(man);
	free(readme);
}
