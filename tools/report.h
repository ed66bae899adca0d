/* gpuguard report: what the human report (cmd-report.c) and the files for CI
 * systems (report-ci.c) share: the summaries read, their findings grouped,
 * and the text of names and call sites. Internal to the command. */
#ifndef GG_TOOLS_REPORT_H
#define GG_TOOLS_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashindex.h"
#include "json.h"

/* ---- text ---- */

/* A growing string; oom is set (and the text left as it was) when memory
 * runs out, so the callers check once at the end. */
struct sb {
	char *s;
	size_t len, cap;
	bool oom;
};

void gg_sb_add(struct sb *b, const char *s, size_t n);
void gg_sb_printf(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Text from a summary, made safe for a terminal, as the command writes every
 * name (gg_cli_escape_char, tools/cli.h). */
void gg_sb_clean(struct sb *b, const char *s, size_t n);
/* A string member of a summary, cleaned; @def when it is not a string. */
void gg_sb_str(struct sb *b, const struct gg_json *v, const char *def);
/* A call site as the log writes it: "SYMBOL+0xOFF (OBJECT+0xOFF)" and so on. */
void gg_sb_site(struct sb *b, const struct gg_json *site);

/* A violation's kind (the summary's "kind"; absent in summaries older than
 * kinds: an overrun). */
#define GG_REPORT_OVERRUN "overrun"
#define GG_REPORT_DOUBLE_FREE "double_free"
#define GG_REPORT_INVALID_FREE "invalid_free"
#define GG_REPORT_API_OVERRUN "api_overrun"
#define GG_REPORT_UNDERFLOW "underflow"
#define GG_REPORT_WRITE_AFTER_FREE "write_after_free"
#define GG_REPORT_DANGLING_LAUNCH "dangling_launch"
/* The kind of violation @row. */
const char *gg_view_violation_kind(const struct gg_json *row);

/* The frames of a stack (a summary's "stack", "free_stack", ...) after the
 * first, each on a line of its own after @b's text: "\n#1 FRAME", ... (a
 * stack's first frame is the site the text names already). */
void gg_sb_stack_tail(struct sb *b, const struct gg_json *stack);

/* Keeps the words on either side together when lines are wrapped; a writer
 * of another format prints it as a space. */
#define GLUE "\x1f"

uint64_t gg_view_u64(const struct gg_json *obj, const char *key);
/* Whether a "violations" row is a refused copy or set ("kind": "api_overrun"). */
bool gg_view_is_api_overrun(const struct gg_json *row);
/* A "0x..." string member's value. */
bool gg_view_hex(const struct gg_json *v, uint64_t *out);

/* ---- the summaries and their findings ---- */

/* One file named on the command line. */
struct proc {
	const char *file;
	struct gg_json *root; /* NULL: it could not be read (why says why) */
	char *why;
	uint64_t pid, errors;
};

/* Each pid once, in the order first seen. */
struct pids {
	uint64_t *v;
	size_t len, cap;
	bool unsorted; /* not ascending: a new pid is looked for in all of v */
};

/* One call site of an unresolved pair, over every process. */
struct site_group {
	char *text;   /* the site as printed */
	char *result; /* cleaned */
	uint64_t count;
	struct pids pids;
	const struct gg_json *site; /* the first one seen */
};

/* One unresolved (module, function) pair, over every process. */
struct pair_group {
	const struct gg_json *module, *function;
	bool required;
	struct pids pids, required_pids, expected_pids;
	uint64_t count;
	struct site_group *sites;
	size_t nsites, cap;
	struct gg_hashindex site_index; /* sites by text and result */
};

/* Leaks of one allocation stack, over every process (the summaries written
 * at exit). */
struct leak_group {
	const struct gg_json *row; /* the first one seen */
	char *key;
	struct pids pids;
	uint64_t count, bytes;
	size_t seen; /* its place in the order first seen: ties keep it */
};

struct violation_group {
	const struct gg_json *row; /* the first one seen */
	char *key;
	struct pids pids;
	size_t rows; /* violations grouped here: each process's count once */
};

/* The findings of the processes in procs[0..nprocs), grouped. */
struct view {
	struct proc *procs;
	size_t nprocs;
	struct pair_group *pairs;
	size_t npairs, pairs_cap;
	struct violation_group *violations;
	size_t nviolations, violations_cap;
	/* The groups by what makes findings alike, so that grouping takes time
	 * linear in the findings. */
	struct gg_hashindex pair_index, violation_index, leak_index;
	struct leak_group *leaks; /* the most bytes first */
	size_t nleaks, leaks_cap;
	size_t leak_summaries; /* summaries that say what leaked (written at exit) */
	/* Findings compared with an entry while grouping: at most one for each
	 * finding, whatever the number of entries (tests/test-cli-report.c holds
	 * it so); a search through the entries made it quadratic. */
	size_t compared;
};

/* Group the findings of procs[0..nprocs). */
void gg_view_group(struct view *vw);
/* Free the groups (not the processes). */
void gg_view_free_groups(struct view *vw);

/* ---- the files for CI systems (report-ci.c) ---- */

/* What --require-coverage found: each process that guarded nothing has
 * blind[i] set and why[i] says so (NULL when out of memory); set[] names a
 * failure of the whole set (no summary, or none guarded anything), "" when
 * there is none. */
struct verdict {
	bool *blind;
	char **why;
	char set[128];
};

/* Write the findings of @procs (@nprocs, in report order; those that could
 * not be read included) as JUnit XML or SARIF 2.1.0 at @path. 0 or -errno. */
int gg_ci_junit(const char *path, const struct proc *procs, size_t nprocs, const struct verdict *v);
int gg_ci_sarif(const char *path, const struct proc *procs, size_t nprocs, const struct verdict *v);

#endif
