/* The gpuguard command: runs a program with the shim preloaded, and the
 * subcommands around it (scan, report, symbolize, bisect, prune-metrics). It
 * is the user's front end, so unlike the shim it prints to stdout. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "options/config.h"
#include "options/listfile.h"
#include "report/paths.h"

#ifndef GG_VERSION
#define GG_VERSION "0"
#endif
#ifndef GG_INSTALL_LIBDIR
#define GG_INSTALL_LIBDIR "/usr/local/lib"
#endif

static const char usage_head[] =
	"usage: " GG_USAGE_RUN "\n"
	"       " GG_USAGE_SCAN "\n"
	"       " GG_USAGE_REPORT "\n"
	"       " GG_USAGE_SYMBOLIZE "\n"
	"       " GG_USAGE_BISECT "\n"
	"       " GG_USAGE_PRUNE "\n"
	"\n"
	"Runs PROGRAM with libgpuguard.so preloaded: a kernel-lookup audit with a seal\n"
	"gate, and red zones of " GG_CLI_REDZONE_DEFAULT
	" bytes after every device allocation (unless\n"
	"--redzone or GPUGUARD_REDZONE says otherwise; --redzone 0 turns them off).\n"
	"See gpuguard(1).\n"
	"\n"
	"Options (each sets the GPUGUARD_ variable named):\n";

/* The options part of --help, from the shim's own table: each flag, its
 * line of help and its variable, wrapped at 80 columns. */
static void usage(FILE *f)
{
	enum {
		COL = 26,
		WIDTH = 80
	};
	size_t n;
	const struct gg_option *opts = gg_config_options(&n);

	fputs(usage_head, f);
	for (size_t i = 0; i < n; i++) {
		const struct gg_option *o = &opts[i];
		bool sets_0 = o->sets && !strcmp(o->sets, "0");
		char head[64], text[256], *word, *save = NULL;
		int col;

		if (!o->flag)
			continue;
		snprintf(head, sizeof(head), "  %s%s%s", o->flag, o->metavar ? " " : "",
			 o->metavar ? o->metavar : "");
		snprintf(text, sizeof(text), "%s (%s%s)", o->help, o->name + strlen("GPUGUARD_"),
			 sets_0 ? "=0" : "");
		col = fprintf(f, "%-*s", COL, head);
		if (col > COL)
			col = fprintf(f, "\n%*s", COL, "") - 1;
		for (word = strtok_r(text, " ", &save); word; word = strtok_r(NULL, " ", &save)) {
			int len = (int)strlen(word);

			if (col > COL && col + 1 + len > WIDTH)
				col = fprintf(f, "\n%*s", COL, "") - 1;
			col += fprintf(f, "%s%s", col > COL ? " " : "", word);
		}
		fputc('\n', f);
		if (o->alias) {
			snprintf(head, sizeof(head), "  %s%s%s", o->alias, o->metavar ? " " : "",
				 o->metavar ? o->metavar : "");
			if (fprintf(f, "%-*s", COL, head) > COL)
				fprintf(f, "\n%*s", COL, "");
			fprintf(f, "the same as %s\n", o->flag);
		}
	}
	fputs("  --per-tensor            PyTorch and JAX allocate each tensor from the driver,\n"
	      "                          so each gets its own red zone (their caching off)\n"
	      "  --shim PATH             the libgpuguard.so to preload\n"
	      "  --strict-options        every word before -- is an option or its value; the\n"
	      "                          program comes only after --\n"
	      "  --help, --version\n",
	      f);
}

/* ---- finding the library ---- */

static bool usable(const char *path)
{
	return access(path, R_OK) == 0;
}

/* libgpuguard.so next to the command, in the build tree, or in the install tree. */
static bool find_shim(char *out, size_t cap)
{
	char self[PATH_MAX], dir[PATH_MAX], candidate[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	static const char *const relative[] = {
		"libgpuguard.so",                        /* next to the command */
		"../shim/libgpuguard.so",                /* meson build tree: build/tools/gpuguard */
		GG_INSTALL_LIBDIR_REL "/libgpuguard.so", /* installed: bin/ -> lib/ */
	};

	if (n > 0) {
		self[n] = '\0';
		snprintf(dir, sizeof(dir), "%s", self);
		*strrchr(dir, '/') = '\0';
		for (size_t i = 0; i < sizeof(relative) / sizeof(relative[0]); i++) {
			snprintf(candidate, sizeof(candidate), "%s/%s", dir, relative[i]);
			if (usable(candidate) && realpath(candidate, out))
				return true;
		}
	}
	snprintf(candidate, sizeof(candidate), "%s/libgpuguard.so", GG_INSTALL_LIBDIR);
	if (usable(candidate) && realpath(candidate, out))
		return true;
	(void)cap;
	return false;
}

/* ---- gpuguard [options] -- PROGRAM ---- */

struct env_list {
	char *v[64];
	int n;
};

static void env_add(struct env_list *e, const char *name, const char *value)
{
	size_t len = strlen(name) + strlen(value) + 2;
	char *kv = malloc(len);

	if (!kv || e->n >= (int)(sizeof(e->v) / sizeof(e->v[0]))) {
		gg_cli_error("too many options");
		exit(2);
	}
	snprintf(kv, len, "%s=%s", name, value);
	e->v[e->n++] = kv;
}

/* Whether the program's shim will be able to write a report file at
 * @pattern, the log (@log) or a report file: its directory must exist and
 * take new files, or it is a device written in place; never a FIFO, which
 * could block the program, nor a block device or socket. The program runs as
 * this very process (exec), so %p is our pid and a relative path means the
 * same directory to both. */
static bool output_usable(const struct gg_option *o, const char *flag, const char *pattern, bool log)
{
	char path[PATH_MAX], culprit[PATH_MAX], why[256];
	char n1[GG_CLI_NAME_MAX], n2[GG_CLI_NAME_MAX]; /* the names said, escaped */
	int err;

	if (gg_report_expand_path(pattern, (int)getpid(), path, sizeof(path))) {
		gg_cli_error("%s: \"%s\" is too long a path", flag,
			     gg_cli_name(n1, sizeof(n1), pattern));
		return false;
	}
	if (!(err = gg_report_check_output(path, log, culprit, sizeof(culprit))))
		return true;
	if (err == -EISDIR)
		gg_cli_error("%s: \"%s\" is a directory; expected %s", flag,
			     gg_cli_name(n1, sizeof(n1), culprit), o->accepts);
	else if (err == -ENOENT)
		gg_cli_error("%s: cannot write \"%s\": the directory \"%s\" does not exist (create it "
			     "first)",
			     flag, gg_cli_name(n1, sizeof(n1), pattern),
			     gg_cli_name(n2, sizeof(n2), culprit));
	else if (err == -ENXIO || err == -ENOTSUP)
		gg_cli_error("%s: cannot write \"%s\": %s; expected a regular file or a character "
			     "device such as /dev/null",
			     flag, gg_cli_name(n1, sizeof(n1), pattern),
			     gg_report_output_why(path, err, log, why, sizeof(why)));
	else if (!strcmp(culprit, path))
		gg_cli_error("%s: cannot write \"%s\": %s", flag, gg_cli_name(n1, sizeof(n1), pattern),
			     strerror(-err));
	else
		gg_cli_error("%s: cannot write \"%s\": the directory \"%s\": %s", flag,
			     gg_cli_name(n1, sizeof(n1), pattern), gg_cli_name(n2, sizeof(n2), culprit),
			     strerror(-err));
	return false;
}

/* Whether the shim will read the list file @path whole: it reads only a
 * regular file of at most 1 MiB (options/listfile.h), and would otherwise
 * expect nothing absent. */
static bool list_usable(const char *flag, const char *path)
{
	char why[256], *text, n1[GG_CLI_NAME_MAX];
	size_t len;

	if (gg_config_read_list(path, &text, &len, why, sizeof(why))) {
		gg_cli_error("%s: cannot read \"%s\": %s (expected %s)", flag,
			     gg_cli_name(n1, sizeof(n1), path), why,
			     "a readable regular file of at most 1 MiB, one pattern a line");
		return false;
	}
	free(text);
	return true;
}

/* Whether @o names a file the shim writes. */
static bool writes_report(const struct gg_option *o)
{
	return !strcmp(o->name, "GPUGUARD_LOG") || !strcmp(o->name, "GPUGUARD_SUMMARY_JSON") ||
	       !strcmp(o->name, "GPUGUARD_METRICS");
}

/* The option whose flag (or alias) is the first @len bytes of @arg. */
static const struct gg_option *option_of(const char *arg, size_t len, const char **flag)
{
	size_t n;
	const struct gg_option *opts = gg_config_options(&n);

	for (size_t k = 0; k < n; k++) {
		const char *names[] = { opts[k].flag, opts[k].alias };

		for (size_t m = 0; m < 2; m++) {
			if (names[m] && strlen(names[m]) == len && !strncmp(names[m], arg, len)) {
				*flag = names[m];
				return &opts[k];
			}
		}
	}
	return NULL;
}

/* Each bad item of a --boundary list, named with what is wrong with it. */
struct bad_items {
	char text[2048];
	size_t len;
};

static void add_bad_item(void *arg, const char *item, const char *why)
{
	struct bad_items *b = arg;
	char n1[GG_CLI_NAME_MAX];
	int n;

	if (b->len >= sizeof(b->text) - 1)
		return;
	n = snprintf(b->text + b->len, sizeof(b->text) - b->len, "%s\"%s\": %s", b->len ? "; " : "",
		     gg_cli_name(n1, sizeof(n1), item), why);
	if (n > 0)
		b->len += (size_t)n < sizeof(b->text) - b->len ? (size_t)n
							       : sizeof(b->text) - b->len - 1;
}

/* Whether the shim takes @value for @o as it is; if not, say why and what it accepts. */
static bool value_taken(const struct gg_option *o, const char *flag, const char *value)
{
	const char *why = NULL;
	struct bad_items bad = { .len = 0 };
	struct gg_boundary_events ev;
	char n1[GG_CLI_NAME_MAX];

	/* An empty value says nothing the default does not: a slip, refused. */
	if (!*value) {
		gg_cli_error("%s: an empty value (expected %s)", flag, o->accepts);
		return false;
	}
	if (!gg_config_check(o, value, &why))
		return true;
	if (!strcmp(o->name, "GPUGUARD_BOUNDARY") &&
	    gg_config_parse_boundary(value, &ev, add_bad_item, &bad))
		gg_cli_error("%s: \"%s\" is not a valid value: %s (expected %s)", flag,
			     gg_cli_name(n1, sizeof(n1), value), bad.text, o->accepts);
	else if (why)
		gg_cli_error("%s: \"%s\" is not a valid value: %s (expected %s)", flag,
			     gg_cli_name(n1, sizeof(n1), value), why, o->accepts);
	else
		gg_cli_error("%s: \"%s\" is not a valid value (expected %s)", flag,
			     gg_cli_name(n1, sizeof(n1), value), o->accepts);
	return false;
}

/* The switches that make frameworks allocate each tensor from the driver, so
 * each gets a band of its own (docs/python.md, "Frameworks and caching allocators"). */
static const char *const per_tensor_env[][2] = {
	{ "PYTORCH_NO_CUDA_MEMORY_CACHING", "1" },
	{ "XLA_PYTHON_CLIENT_ALLOCATOR", "platform" },
	{ "XLA_PYTHON_CLIENT_PREALLOCATE", "false" },
};

static void per_tensor(struct env_list *e)
{
	for (size_t i = 0; i < sizeof(per_tensor_env) / sizeof(per_tensor_env[0]); i++)
		env_add(e, per_tensor_env[i][0], per_tensor_env[i][1]);
}

/* --per-tensor said at verbosity 1 and up, when the variables are set. */
static void say_per_tensor(const struct env_list *e)
{
	int verbosity = 1;
	bool set = false;

	for (int i = 0; i < e->n; i++) {
		if (!strncmp(e->v[i], "GPUGUARD_VERBOSITY=", 19))
			verbosity = atoi(e->v[i] + 19);
		set |= !strncmp(e->v[i], per_tensor_env[0][0], strlen(per_tensor_env[0][0]));
	}
	if (set && verbosity >= 1)
		fprintf(stderr,
			"gpuguard: --per-tensor: %s=%s %s=%s %s=%s: PyTorch and JAX allocate "
			"each tensor from the driver, so each gets its own red zone (their caching "
			"is off: slower, and more memory)\n",
			per_tensor_env[0][0], per_tensor_env[0][1], per_tensor_env[1][0],
			per_tensor_env[1][1], per_tensor_env[2][0], per_tensor_env[2][1]);
}

/* @value made absolute against this directory, into @out (PATH_MAX bytes):
 * the program, or a shell before it, may change directories (sh -c "cd /tmp
 * && app"), and the shim resolves a relative path against its own. NULL
 * when it cannot be (said why). */
static const char *absolute(const char *flag, const char *value, char *out)
{
	char cwd[PATH_MAX], n1[GG_CLI_NAME_MAX];

	if (value[0] == '/')
		return value;
	if (!getcwd(cwd, sizeof(cwd))) {
		gg_cli_error("%s: \"%s\" is relative, and the current directory cannot be known: %s",
			     flag, gg_cli_name(n1, sizeof(n1), value), strerror(errno));
		return NULL;
	}
	if (snprintf(out, PATH_MAX, "%s/%s", cwd, value) >= PATH_MAX) {
		gg_cli_error("%s: \"%s\" is too long a path once made absolute", flag,
			     gg_cli_name(n1, sizeof(n1), value));
		return NULL;
	}
	return out;
}

/* Whether @word is one of the command's own flags (--flag or --flag=...). */
static bool is_flag(const char *word)
{
	const char *flag, *eq = strchr(word, '=');
	size_t len = eq ? (size_t)(eq - word) : strlen(word);

	if (strncmp(word, "--", 2) || len == 2)
		return false;
	return option_of(word, len, &flag) || (len == 6 && !strncmp(word, "--shim", 6)) ||
	       !strcmp(word, "--per-tensor") || !strcmp(word, "--strict-options");
}

/* The value of an option that takes one: after '=', else the next word. A
 * next word that is "--" or one of the command's flags is no value but a
 * slip (--log --check-launches, or --json at the end of a wrapper's options
 * before its "--"): NULL, said why. "--log=--" says it on purpose. */
static const char *value_of(int argc, char **argv, int *i, const char *eq, const char *flag)
{
	const char *next;
	char n1[GG_CLI_NAME_MAX], n2[GG_CLI_NAME_MAX];

	if (eq)
		return eq + 1;
	if (*i + 1 >= argc) {
		gg_cli_error("%s needs a value", flag);
		return NULL;
	}
	next = argv[*i + 1];
	if (!strcmp(next, "--") || is_flag(next)) {
		gg_cli_error("%s needs a value, and \"%s\" is %s (write %s=%s if it is the value)",
			     flag, gg_cli_name(n1, sizeof(n1), next),
			     strcmp(next, "--") ? "one of gpuguard's options" : "the end of them", flag,
			     gg_cli_name(n2, sizeof(n2), next));
		return NULL;
	}
	return argv[++*i];
}

/* A switch given a value, --check-launches=VALUE: any boolean the shim
 * reads (1, true, yes, on; 0, false, no, off), which sets what the switch
 * sets or its opposite (--no-check-on-free=false checks on free). NULL when
 * @value is no boolean (said so). */
static const char *switch_value(const struct gg_option *o, const char *flag, const char *value)
{
	bool on;
	char n1[GG_CLI_NAME_MAX];

	if (gg_config_parse_bool(value, &on)) {
		gg_cli_error("%s: \"%s\" is not a valid value (expected no value, or %s)", flag,
			     gg_cli_name(n1, sizeof(n1), value), o->accepts);
		return NULL;
	}
	if (on)
		return o->sets;
	return !strcmp(o->sets, "1") ? "0" : "1";
}

/* compute-sanitizer's spellings of a switch's value, taken as its users type
 * them: --leak-check full|none (also with "="). NULL: @word is none. */
static const char *sanitizer_word(const struct gg_option *o, const char *word)
{
	static const struct {
		const char *flag, *word, *value;
	} words[] = {
		{ "--leak-check", "full", "1" },
		{ "--leak-check", "none", "0" },
	};

	for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++)
		if (!strcmp(o->flag, words[k].flag) && !strcmp(word, words[k].word))
			return words[k].value;
	return NULL;
}

/* Edit distance of @a and @b (insert, delete, replace one character), for
 * naming the known option nearest a mistyped one; both are short. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[64];

	if (la >= 63 || lb >= 63)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

/* The known option (or alias) nearest @arg's flag, if near enough to be
 * what was meant (a third of its letters, at least 2); NULL otherwise. */
static const char *nearest_option(const char *arg, size_t len, const char *const *allowed)
{
	static const char *const own[] = { "--shim", "--per-tensor", "--strict-options" };
	char flag[64];
	size_t n, best = SIZE_MAX, limit;
	const struct gg_option *opts = gg_config_options(&n);
	const char *name = NULL;

	if (len >= sizeof(flag))
		return NULL;
	memcpy(flag, arg, len);
	flag[len] = '\0';
	limit = len / 3 > 2 ? len / 3 : 2;
	for (size_t k = 0; k < n + sizeof(own) / sizeof(own[0]); k++) {
		const char *names[2] = { NULL, NULL };

		if (k < n) {
			bool ok = !allowed;

			for (const char *const *a = allowed; a && *a; a++)
				ok |= opts[k].flag && !strcmp(*a, opts[k].flag);
			if (!ok)
				continue;
			names[0] = opts[k].flag;
			names[1] = opts[k].alias;
		} else if (!allowed) {
			names[0] = own[k - n];
		}
		for (size_t m = 0; m < 2; m++) {
			size_t d = names[m] ? distance(flag, names[m]) : SIZE_MAX;

			if (d < best)
				best = d, name = names[m];
		}
	}
	return best <= limit ? name : NULL;
}

/* Parse options up to "--" into @e; the index of PROGRAM, or -1 (message
 * given). Without "--" the first word that is no option is the program
 * (gpuguard PROGRAM), but not a boolean right after a switch: gpuguard
 * --check-launches true would run /usr/bin/true for a user who meant
 * --check-launches=true. --strict-options (a wrapper's, the pytest
 * plugin's) makes every word before "--" an option or its value, so no
 * option's value can ever become the program. */
static int parse_options(int argc, char **argv, int first, struct env_list *e, char *shim,
			 size_t shim_cap, const char *const *allowed)
{
	char path[PATH_MAX], n1[GG_CLI_NAME_MAX];
	const char *last_switch = NULL; /* the word before, when it was a switch */
	bool strict = false;

	for (int i = first; i < argc; i++) {
		const char *arg = argv[i], *eq = strchr(arg, '='), *value = NULL;
		size_t flag_len = eq ? (size_t)(eq - arg) : strlen(arg);
		const struct gg_option *o = NULL;
		const char *flag = NULL, *after_switch = last_switch;
		bool word_is_bool;

		last_switch = NULL;
		if (!strcmp(arg, "--"))
			return i + 1 < argc ? i + 1 : (gg_cli_error("no program to run after --"), -1);
		if (arg[0] != '-') { /* gpuguard PROGRAM without "--" works too */
			bool b;

			word_is_bool = !gg_config_parse_bool(arg, &b);
			if (after_switch && (word_is_bool || strict)) {
				gg_cli_error(
					"%s takes no value, and \"%s\" %s: write %s=%s, or put the "
					"program after --",
					after_switch, arg,
					strict ? "is no option (--strict-options)"
					       : "would be run as the program",
					after_switch, arg);
				return -1;
			}
			if (strict) {
				gg_cli_error("\"%s\" is no option, and with --strict-options the "
					     "program comes only after --",
					     gg_cli_name(n1, sizeof(n1), arg));
				return -1;
			}
			return i;
		}
		if (!strcmp(arg, "--per-tensor") && !allowed) {
			per_tensor(e);
			continue;
		}
		if (!strcmp(arg, "--strict-options") && !allowed) {
			strict = true;
			continue;
		}
		if (!strncmp(arg, "--shim", flag_len) && flag_len == 6) {
			if (!(value = value_of(argc, argv, &i, eq, "--shim")))
				return -1;
			if (!realpath(value, shim)) {
				gg_cli_error("--shim: cannot use \"%s\": %s",
					     gg_cli_name(n1, sizeof(n1), value), strerror(errno));
				return -1;
			}
			(void)shim_cap;
			continue;
		}
		o = option_of(arg, flag_len, &flag);
		if (o && allowed) {
			bool ok = false;

			for (const char *const *a = allowed; *a; a++)
				ok |= !strcmp(*a, o->flag);
			if (!ok)
				o = NULL;
		}
		if (!o) {
			const char *near = nearest_option(arg, flag_len, allowed);

			if (near)
				gg_cli_error("unknown option '%s': did you mean %s? (see gpuguard "
					     "--help)",
					     gg_cli_name(n1, sizeof(n1), arg), near);
			else
				gg_cli_error("unknown option '%s' (see gpuguard --help)",
					     gg_cli_name(n1, sizeof(n1), arg));
			return -1;
		}
		if (o->sets) {
			const char *set = eq ? sanitizer_word(o, eq + 1) : NULL;

			if (!set && !eq && i + 1 < argc && (set = sanitizer_word(o, argv[i + 1])))
				i++; /* --leak-check full: the word is the switch's */
			if (!set)
				set = eq ? switch_value(o, flag, eq + 1) : o->sets;

			if (!set)
				return -1;
			env_add(e, o->name, set);
			last_switch = eq ? NULL : flag;
			continue;
		}
		if (!(value = value_of(argc, argv, &i, eq, flag)))
			return -1;
		if (!value_taken(o, flag, value))
			return -1;
		/* A report file the shim could not write, or a list it would not read,
		 * is refused before the program runs; "--log -" is stderr, the default. */
		if (writes_report(o) && strcmp(value, "-")) {
			if (!output_usable(o, flag, value, !strcmp(o->name, "GPUGUARD_LOG")) ||
			    !(value = absolute(flag, value, path)))
				return -1;
		}
		if (!strcmp(o->name, "GPUGUARD_EXPECTED_ABSENT") && !list_usable(flag, value))
			return -1;
		env_add(e, o->name, value);
	}
	gg_cli_error("no program to run (usage: " GG_USAGE_RUN ")");
	return -1;
}

/* Set LD_PRELOAD with @shim first, then the variables of @e. */
static void apply_env(const char *shim, const struct env_list *e)
{
	const char *old = getenv("LD_PRELOAD");
	size_t len = strlen(shim) + (old ? strlen(old) : 0) + 2;
	char *preload = malloc(len);

	if (!preload) {
		gg_cli_error("out of memory");
		exit(2);
	}
	if (old && *old)
		snprintf(preload, len, "%s:%s", shim, old);
	else
		snprintf(preload, len, "%s", shim);
	setenv("LD_PRELOAD", preload, 1);
	free(preload);
	for (int i = 0; i < e->n; i++)
		putenv(e->v[i]);
}

static bool shim_or_complain(char *shim, size_t cap)
{
	if (shim[0] || find_shim(shim, cap))
		return true;
	gg_cli_error("libgpuguard.so not found next to this command, in its build tree, or in "
		     "%s; pass --shim PATH",
		     GG_INSTALL_LIBDIR);
	return false;
}

/* Red zones on unless --redzone or the environment's GPUGUARD_REDZONE (kept
 * as it is, even a value the shim will warn about) says otherwise. */
static void default_redzone(struct env_list *e)
{
	for (int i = 0; i < e->n; i++)
		if (!strncmp(e->v[i], "GPUGUARD_REDZONE=", 17))
			return;
	if (!getenv("GPUGUARD_REDZONE"))
		env_add(e, "GPUGUARD_REDZONE", GG_CLI_REDZONE_DEFAULT);
}

int gg_cmd_run(int argc, char **argv)
{
	struct env_list e = { .n = 0 };
	char shim[PATH_MAX] = "", n1[GG_CLI_NAME_MAX];
	int prog = parse_options(argc, argv, 1, &e, shim, sizeof(shim), NULL);

	if (prog < 0)
		return 2;
	if (!shim_or_complain(shim, sizeof(shim)))
		return 2;
	default_redzone(&e);
	say_per_tensor(&e);
	apply_env(shim, &e);
	execvp(argv[prog], argv + prog);
	/* As a shell says it: 127 not found, 126 found but not runnable. */
	gg_cli_error("cannot run %s: %s", gg_cli_name(n1, sizeof(n1), argv[prog]), strerror(errno));
	return errno == ENOENT ? 127 : 126;
}

/* ---- gpuguard bisect ---- */

/* How long one run may take unless --timeout says otherwise. */
#define BISECT_TIMEOUT_DEFAULT 60

/* What a signal that ends gpuguard bisect must undo: the run in progress
 * (its process group) and the temporary directory. Written before the
 * handlers are installed or with the signals blocked; read by the handler. */
static struct {
	char dir[PATH_MAX];          /* "" when there is none */
	volatile sig_atomic_t group; /* the running program's process group, 0 when none */
} bisect_state;

static const int bisect_signals[] = { SIGINT, SIGTERM, SIGHUP };
#define NSIGNALS (sizeof(bisect_signals) / sizeof(bisect_signals[0]))

/* What gpuguard had for each of them: the program gets it back, and one
 * that was ignored (nohup, a shell's background job) stays ignored. */
static struct sigaction bisect_saved[NSIGNALS];

/* A directory entry as getdents64(2) returns it. */
struct dirent64_raw {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

/* Empty and remove @dir: the files the runs leave there (the summary, the
 * shim's temporary file of a run stopped while writing it, the captured
 * output). Async-signal-safe: open, getdents64, unlinkat and rmdir only. */
static void remove_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	char buf[4096] __attribute__((aligned(8)));
	long n;

	if (fd < 0)
		return;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			const struct dirent64_raw *d = (const void *)(buf + off);

			const char *name = d->name;

			/* Not strcmp: this runs in a signal handler too. */
			if (name[0] != '.' || (name[1] && (name[1] != '.' || name[2])))
				unlinkat(fd, name, 0);
			off += d->reclen;
		}
	}
	close(fd);
	rmdir(dir);
}

/* SIGINT, SIGTERM, SIGHUP: stop the run, remove the directory, then die of
 * the same signal (the handler is reset, the signal stays pending). */
static void bisect_on_signal(int sig)
{
	int saved = errno;

	if (bisect_state.group > 0)
		kill(-bisect_state.group, SIGKILL);
	if (bisect_state.dir[0])
		remove_dir(bisect_state.dir);
	signal(sig, SIG_DFL);
	raise(sig);
	errno = saved;
}

static void bisect_signals_mask(sigset_t *set, bool with_chld)
{
	sigemptyset(set);
	for (size_t i = 0; i < NSIGNALS; i++)
		sigaddset(set, bisect_signals[i]);
	if (with_chld)
		sigaddset(set, SIGCHLD);
}

struct outcome {
	int status; /* as from waitpid */
	char *out;  /* stdout */
	size_t len;
	char *err; /* stderr */
};

static char *slurp(int fd, size_t *len)
{
	struct stat st;
	char *buf;

	if (fstat(fd, &st) || !(buf = malloc((size_t)st.st_size + 1)))
		return NULL;
	if (pread(fd, buf, (size_t)st.st_size, 0) != st.st_size) {
		free(buf);
		return NULL;
	}
	buf[st.st_size] = '\0';
	*len = (size_t)st.st_size;
	return buf;
}

/* A file in the temporary directory, already unlinked. */
static int temp_fd(void)
{
	char path[PATH_MAX + 16];
	int fd;

	snprintf(path, sizeof(path), "%s/out-XXXXXX", bisect_state.dir);
	fd = mkstemp(path);
	if (fd >= 0)
		unlink(path);
	return fd;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wait for @pid, at most @limit seconds, with SIGCHLD blocked. 0, or
 * -ETIMEDOUT after its process group was killed and it was reaped. */
static int wait_run(pid_t pid, double limit, int *status)
{
	double deadline = now_s() + limit;
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	for (;;) {
		pid_t got = waitpid(pid, status, WNOHANG);
		double left = deadline - now_s();

		if (got == pid)
			return 0;
		if (got < 0 && errno != EINTR)
			return -errno;
		if (left <= 0) {
			/* The program may have forked: its whole group goes. */
			kill(-pid, SIGKILL);
			while (waitpid(pid, status, 0) < 0 && errno == EINTR)
				;
			return -ETIMEDOUT;
		}
		if (left > 1)
			left = 1; /* a SIGCHLD missed is made up for within a second */
		struct timespec ts = { (time_t)left, (long)((left - (double)(time_t)left) * 1e9) };

		sigtimedwait(&chld, NULL, &ts);
	}
}

/* Run PROGRAM under the shim with the variables of @e plus @extra, in a
 * process group of its own, for @limit seconds at most. 0, -ETIMEDOUT, or
 * another -errno when it could not be run. */
static int run_once(char **prog, const char *shim, const struct env_list *e, const char *const *extra,
		    double limit, struct outcome *o)
{
	int out = temp_fd(), err = temp_fd(), rc;
	sigset_t block, old;
	pid_t pid;

	memset(o, 0, sizeof(*o));
	if (out < 0 || err < 0) {
		rc = -errno;
		goto out;
	}
	fflush(NULL);
	bisect_signals_mask(&block, true);
	sigprocmask(SIG_BLOCK, &block, &old);
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		sigprocmask(SIG_SETMASK, &old, NULL);
		goto out;
	}
	if (pid == 0) {
		struct env_list all = *e;

		/* The program starts with the dispositions and the mask gpuguard had. */
		for (size_t i = 0; i < NSIGNALS; i++)
			sigaction(bisect_signals[i], &bisect_saved[i], NULL);
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* gpuguard killed outright: so is the run */
		sigprocmask(SIG_SETMASK, &old, NULL);
		for (const char *const *x = extra; *x; x++)
			all.v[all.n++] = (char *)*x;
		apply_env(shim, &all);
		dup2(out, 1);
		dup2(err, 2);
		execvp(prog[0], prog);
		dprintf(2, "gpuguard: cannot run %s: %s\n", prog[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid); /* as the child does: whichever comes first */
	bisect_state.group = pid;
	/* SIGINT, SIGTERM and SIGHUP may come now; SIGCHLD stays blocked for wait_run. */
	bisect_signals_mask(&block, false);
	sigprocmask(SIG_UNBLOCK, &block, NULL);
	rc = wait_run(pid, limit, &o->status);
	sigprocmask(SIG_BLOCK, &block, NULL);
	bisect_state.group = 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (rc)
		goto out;
	size_t ignored;

	o->out = slurp(out, &o->len);
	o->err = slurp(err, &ignored);
	rc = o->out && o->err ? 0 : -ENOMEM;
out:
	if (out >= 0)
		close(out);
	if (err >= 0)
		close(err);
	return rc;
}

static void outcome_free(struct outcome *o)
{
	free(o->out);
	free(o->err);
	o->out = o->err = NULL;
}

/* Say why @what of @prog could not be used: it did not end in time, or it
 * could not be run. */
static void run_failed(int rc, const char *what, const char *prog, double limit)
{
	char n1[GG_CLI_NAME_MAX];

	prog = gg_cli_name(n1, sizeof(n1), prog);
	if (rc == -ETIMEDOUT)
		gg_cli_error("bisect: %s of %s did not end within %g s: stopped it (SIGKILL to its "
			     "process group); give --timeout SECONDS if it needs longer",
			     what, prog, limit);
	else
		gg_cli_error("bisect: cannot run %s (%s): %s", prog, what, strerror(-rc));
}

static bool same(const struct outcome *a, const struct outcome *b)
{
	return a->status == b->status && a->len == b->len && !memcmp(a->out, b->out, a->len);
}

/* The allocation count of a run, from its JSON summary. */
static bool allocations_of(const char *json_path, uint64_t *calls)
{
	struct gg_json_error err;
	struct gg_json *doc = gg_json_parse_file(json_path, &err);
	const struct gg_json *a;

	if (!doc)
		return false;
	a = gg_json_get(gg_json_get(doc, "allocations"), "calls");
	*calls = gg_json_u64(a, 0);
	gg_json_free(doc);
	return a != NULL;
}

/* Whether filling the bands of allocations [lo, hi) changes the output:
 * 1, 0, or -1 when the program could not be run or did not end in time. */
static int poisoned_changes(char **prog, const char *shim, const struct env_list *e,
			    const struct outcome *base, uint64_t lo, uint64_t hi, double limit,
			    int *runs)
{
	char poison[80], what[128];
	const char *const env_poison[] = { poison, NULL };
	struct outcome probe;
	bool changed;
	int rc;

	snprintf(poison, sizeof(poison), "GPUGUARD_REDZONE_POISON=%llu:%llu", (unsigned long long)lo,
		 (unsigned long long)hi);
	if ((rc = run_once(prog, shim, e, env_poison, limit, &probe))) {
		if (hi - lo == 1)
			snprintf(what, sizeof(what), "run %d (the band of allocation %llu filled)",
				 *runs + 1, (unsigned long long)lo);
		else
			snprintf(what, sizeof(what),
				 "run %d (the bands of allocations %llu..%llu "
				 "filled)",
				 *runs + 1, (unsigned long long)lo, (unsigned long long)hi - 1);
		run_failed(rc, what, prog[0], limit);
		return -1;
	}
	++*runs;
	changed = !same(base, &probe);
	outcome_free(&probe);
	if (hi - lo == 1)
		printf("bisect: band of allocation %llu filled: output %s\n", (unsigned long long)lo,
		       changed ? "changed" : "the same");
	else
		printf("bisect: bands of allocations %llu..%llu filled: output %s\n",
		       (unsigned long long)lo, (unsigned long long)hi - 1,
		       changed ? "changed" : "the same");
	return changed;
}

static const char bisect_usage[] =
	"usage: " GG_USAGE_BISECT "\n\n"
	"Finds which allocation PROGRAM reads past the end of: runs it with every guard\n"
	"band zeroed and with every band filled, and if its output differs, halves the\n"
	"filled range of allocation indices until one remains, then shows where that\n"
	"allocation was made. PROGRAM's output (stdout and exit status) must be the\n"
	"same from run to run. It takes --redzone (default " GG_CLI_REDZONE_DEFAULT "), --fill,\n"
	"--min-idx, --skip-objects, --skip-symbols, --expected-absent and\n"
	"--allow-unresolved, as gpuguard does, and:\n\n"
	"  --timeout SECONDS  stop a run that takes longer (SIGKILL to its process\n"
	"                     group, as the program may fork) and give up (default 60)\n\n"
	"Its temporary files are in $TMPDIR (else /tmp), removed when it ends, also by\n"
	"SIGINT, SIGTERM or SIGHUP. Exit status: 1 when it found one, 0 when the output\n"
	"does not depend on any band, 2 when it could not tell (a run that did not end\n"
	"in time included).\n";

/* Whether the option @arg (a word without "=VALUE") takes the next word as
 * its value. */
static bool option_takes_value(const char *arg)
{
	const char *flag;
	const struct gg_option *o = option_of(arg, strlen(arg), &flag);

	return !strcmp(arg, "--shim") || (o && !o->sets);
}

/* --timeout SECONDS (or --timeout=SECONDS) at argv[i]: taken out of argv
 * (its words shifted down). 1 when it was there, 0 when not, -1 when its
 * value is bad (said). */
static int take_timeout(int *argc, char **argv, int i, double *limit)
{
	const char *value;
	char *end, n1[GG_CLI_NAME_MAX];
	int words;

	if (!strcmp(argv[i], "--timeout")) {
		value = i + 1 < *argc ? argv[i + 1] : NULL;
		words = 2;
	} else if (!strncmp(argv[i], "--timeout=", 10)) {
		value = argv[i] + 10;
		words = 1;
	} else {
		return 0;
	}
	if (!value) {
		gg_cli_error("bisect: --timeout needs a value (seconds, more than 0 and at most "
			     "86400)");
		return -1;
	}
	errno = 0;
	*limit = strtod(value, &end);
	if (!*value || *end || errno || !(*limit > 0) || *limit > 86400) {
		gg_cli_error("bisect: --timeout: \"%s\" is not a valid value (expected seconds, more "
			     "than 0 and at most 86400)",
			     gg_cli_name(n1, sizeof(n1), value));
		return -1;
	}
	memmove(argv + i, argv + i + words, (size_t)(*argc - i - words + 1) * sizeof(*argv));
	*argc -= words;
	return 1;
}

int gg_cmd_bisect(int argc, char **argv)
{
	static const char *const allowed[] = { "--redzone",
					       "--fill",
					       "--min-idx",
					       "--skip-objects",
					       "--skip-symbols",
					       "--expected-absent",
					       "--allow-unresolved",
					       "--dangerously-allow-unresolved-kernel-lookups",
					       NULL };
	struct env_list e = { .n = 0 };
	char shim[PATH_MAX] = "", json_env[PATH_MAX + 64], json_path[PATH_MAX + 16];
	char n1[GG_CLI_NAME_MAX];
	const char *tmpdir = getenv("TMPDIR");
	struct outcome base, again, probe;
	struct sigaction sa = { .sa_handler = bisect_on_signal };
	double limit = BISECT_TIMEOUT_DEFAULT;
	uint64_t calls = 0, lo = 0, hi;
	int prog, rc = 2, runs = 0, err;
	bool has_redzone = false;

	if (argc > 1 && !strcmp(argv[1], "--help")) {
		fputs(bisect_usage, stdout);
		return 0;
	}
	/* gpuguard's own option, before "--" (the others are the shim's). */
	for (int i = 1; i < argc && strcmp(argv[i], "--") && argv[i][0] == '-';) {
		int took = take_timeout(&argc, argv, i, &limit);

		if (took < 0)
			return 2;
		if (!took)
			i += strchr(argv[i], '=') || !option_takes_value(argv[i]) ? 1 : 2;
	}
	if ((prog = parse_options(argc, argv, 1, &e, shim, sizeof(shim), allowed)) < 0)
		return 2;
	if (!shim_or_complain(shim, sizeof(shim)))
		return 2;
	for (int i = 0; i < e.n; i++)
		has_redzone |= !strncmp(e.v[i], "GPUGUARD_REDZONE=", 17);
	if (!has_redzone)
		env_add(&e, "GPUGUARD_REDZONE", GG_CLI_REDZONE_DEFAULT);
	env_add(&e, "GPUGUARD_VERBOSITY", "0");
	if (!tmpdir || tmpdir[0] != '/')
		tmpdir = "/tmp";
	if ((size_t)snprintf(bisect_state.dir, sizeof(bisect_state.dir), "%s/gpuguard-bisect-XXXXXX",
			     tmpdir) >= sizeof(bisect_state.dir) - 32) {
		gg_cli_error("bisect: TMPDIR \"%s\" is too long a path",
			     gg_cli_name(n1, sizeof(n1), tmpdir));
		bisect_state.dir[0] = '\0';
		return 2;
	}
	/* The handlers go in before the directory exists: a signal between the
	 * two finds a name mkdtemp has not filled in, which is no directory. */
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < NSIGNALS; i++) {
		sigaction(bisect_signals[i], NULL, &bisect_saved[i]);
		if (bisect_saved[i].sa_handler != SIG_IGN)
			sigaction(bisect_signals[i], &sa, NULL);
	}
	if (!mkdtemp(bisect_state.dir)) {
		gg_cli_error("bisect: cannot make a temporary directory in %s: %s",
			     gg_cli_name(n1, sizeof(n1), tmpdir), strerror(errno));
		bisect_state.dir[0] = '\0';
		return 2;
	}
	snprintf(json_path, sizeof(json_path), "%s/summary.json", bisect_state.dir);
	snprintf(json_env, sizeof(json_env), "GPUGUARD_SUMMARY_JSON=%s", json_path);

	/* Twice with every band zeroed: the reference, and whether it is one. */
	const char *const zeroed[] = { "GPUGUARD_REDZONE_POISON=0:0", json_env, NULL };

	if ((err = run_once(argv + prog, shim, &e, zeroed, limit, &base))) {
		run_failed(err, "run 1 (the reference: every band zeroed)", argv[prog], limit);
		goto out;
	}
	if ((err = run_once(argv + prog, shim, &e, zeroed, limit, &again))) {
		run_failed(err, "run 2 (the reference again: every band zeroed)", argv[prog], limit);
		goto out_base;
	}
	runs = 2;
	if (!same(&base, &again)) {
		gg_cli_error("bisect: two identical runs of %s gave different output; bisect needs a "
			     "program whose output (stdout and exit status) is the same every time",
			     argv[prog]);
		outcome_free(&again);
		goto out_base;
	}
	outcome_free(&again);
	if (!allocations_of(json_path, &calls) || !calls) {
		gg_cli_error("bisect: %s made no device allocation gpuguard saw", argv[prog]);
		goto out_base;
	}
	printf("bisect: %s makes %llu %s; reference output: %zu %s, status %d\n", argv[prog],
	       (unsigned long long)calls, gg_cli_plural(calls, "allocation", "allocations"), base.len,
	       gg_cli_plural(base.len, "byte", "bytes"),
	       WIFEXITED(base.status) ? WEXITSTATUS(base.status) : -1);

	/* Invariant: filling the bands of [lo, hi) changes the output. First,
	 * does filling all of them? Then halve until one allocation remains. */
	hi = calls;
	int changed = poisoned_changes(argv + prog, shim, &e, &base, lo, hi, limit, &runs);

	if (changed < 0)
		goto out_base;
	if (!changed) {
		printf("bisect: the output depends on no guard band: no read past the end of an "
		       "allocation was seen (%d runs)\n",
		       runs);
		rc = 0;
		goto out_base;
	}
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if ((changed = poisoned_changes(argv + prog, shim, &e, &base, lo, mid, limit, &runs)) <
		    0)
			goto out_base;
		if (changed)
			hi = mid;
		else
			lo = mid; /* not in the first half: in the second */
	}

	/* One allocation: where was it made? */
	char trace[64];
	const char *const env_trace[] = { "GPUGUARD_REDZONE_POISON=0:0", trace, "GPUGUARD_VERBOSITY=1",
					  NULL };

	snprintf(trace, sizeof(trace), "GPUGUARD_REDZONE_TRACE_IDX=%llu", (unsigned long long)lo);
	printf("bisect: allocation #%llu is read past its end (%d runs)\n", (unsigned long long)lo,
	       runs + 1);
	if ((err = run_once(argv + prog, shim, &e, env_trace, limit, &probe)) == 0) {
		char needle[64];
		bool found = false;

		/* The trace: "allocation #N (...) was made at:", then "  #K frame" lines. */
		snprintf(needle, sizeof(needle), "allocation #%llu (", (unsigned long long)lo);
		for (char *line = probe.err; line && *line;) {
			char *eol = strchr(line, '\n');
			char *msg = strstr(line, "INFO: ");

			if (eol)
				*eol = '\0';
			if (msg) {
				msg += 6;
				if (!found && !strncmp(msg, needle, strlen(needle)))
					found = true;
				else if (found && strncmp(msg, "  #", 3))
					break;
				if (found)
					printf("bisect: %s\n", msg);
			}
			line = eol ? eol + 1 : NULL;
		}
		outcome_free(&probe);
	} else {
		/* Found all the same; only where it was made is missing. */
		run_failed(err, "the run that traces where the allocation was made", argv[prog], limit);
	}
	rc = 1;
out_base:
	outcome_free(&base);
out:
	/* Blocked while the directory goes, so that a signal now does not remove it twice. */
	{
		sigset_t block, old;

		bisect_signals_mask(&block, false);
		sigprocmask(SIG_BLOCK, &block, &old);
		remove_dir(bisect_state.dir);
		bisect_state.dir[0] = '\0';
		sigprocmask(SIG_SETMASK, &old, NULL);
	}
	return rc;
}

/* ---- main ---- */

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} subcommands[] = {
		{ "scan", gg_cmd_scan },           { "report", gg_cmd_report },
		{ "symbolize", gg_cmd_symbolize }, { "bisect", gg_cmd_bisect },
		{ "prune-metrics", gg_cmd_prune },
	};

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("gpuguard %s\n", GG_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		if (!strcmp(argv[1], subcommands[i].name))
			return subcommands[i].fn(argc - 1, argv + 1);
	return gg_cmd_run(argc, argv);
}
