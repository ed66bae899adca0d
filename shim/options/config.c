/* The options table: every GPUGUARD_* variable, its default, its parser and
 * what it accepts, with the gpuguard command's flag and help. Read once, by
 * the shim's set-up (under its pthread_once); read-only after. Nothing here
 * prints: start-up reports the problems, the command refuses the values. */
#include "options/config.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/gg.h"

enum opt_kind {
	OPT_BOOL,
	OPT_U64,
	OPT_VERBOSITY,
	OPT_PATH,
	OPT_STR,
	OPT_EXITCODE,
	OPT_SIGNAL,
	OPT_REDZONE,
	OPT_BYTE,
	OPT_U64_SET,
	OPT_RANGE,
	OPT_BOUNDARY,
	OPT_LOG,
	OPT_OUTPUT,
	OPT_DEPTH,
	OPT_SIZE
};

#define F(field) offsetof(struct gg_config, field)

#define A_BOOL "1, true, yes or on; 0, false, no or off"
#define A_NUMBER "a decimal or 0x hex number"
#define A_FILE "a file name; %p becomes the pid"
#define A_LOG A_FILE ", or - for stderr"
#define A_TEXT "a value shorter than 1024 bytes"

extern char **environ;

/* config.def's entries, in its order (that of --help and the docs). STORE
 * gives the field's offset and its "was set" flag's. */
#define GG_FIELD(type, field) F(field), 0
#define GG_FIELD_SET(type, field, set) F(field), F(set)
#define GG_RANGE_SET(type, lo, hi, set) F(lo), F(set)
#define GG_STRING(field, cap) F(field), 0
#define GG_OPTION(name, store, kind, def, flag, alias, metavar, sets, accepts, help, ...) \
	{ name, flag, alias, metavar, sets, def, accepts, help, kind, store },
static const struct gg_option opts[] = {
#include "options/config.def"
};
#undef GG_OPTION

/* load_into() zeroes the struct up to GG_CONFIG_STRINGS_START, never the
 * rest of its 19 k: every scalar field must end there, which holds while
 * config.h puts the strings last (the bytes zeroed after the scalars are the
 * first string's, which load_into() gives a value anyway). */
#undef GG_FIELD
#undef GG_FIELD_SET
#undef GG_RANGE_SET
#undef GG_STRING
#define SCALAR(field)                                                                                \
	_Static_assert(F(field) + sizeof(((struct gg_config *)0)->field) <= GG_CONFIG_STRINGS_START, \
		       #field " must come before the strings (config.h)");
#define GG_FIELD(type, field) SCALAR(field)
#define GG_FIELD_SET(type, field, set) SCALAR(field) SCALAR(set)
#define GG_RANGE_SET(type, lo, hi, set) SCALAR(lo) SCALAR(hi) SCALAR(set)
#define GG_STRING(field, cap)
#define GG_OPTION(name, store, ...) store
#include "options/config.def"
#undef GG_OPTION
#undef GG_FIELD
#undef GG_FIELD_SET
#undef GG_RANGE_SET
#undef GG_STRING
#undef SCALAR
#undef F

/* Problems seen by gg_config_load(), handed to start-up once the log is open. */
struct bad_value {
	const struct gg_option *o;
	char value[96];
	const char *why;
};

_Static_assert(GG_ARRAY_SIZE(opts) <= GG_CONFIG_MAX_OPTIONS, "config.h: GG_CONFIG_MAX_OPTIONS");

static struct {
	struct gg_config cfg; /* written by gg_config_load() only */
	struct bad_value bad[GG_ARRAY_SIZE(opts)];
	unsigned nbad;
} config_state;

const struct gg_option *gg_config_options(size_t *n)
{
	*n = GG_ARRAY_SIZE(opts);
	return opts;
}

const struct gg_option *gg_config_option(const char *name)
{
	for (size_t i = 0; i < GG_ARRAY_SIZE(opts); i++)
		if (!strcmp(opts[i].name, name))
			return &opts[i];
	return NULL;
}

/* By hand, not strtoull: only digits pass (strtoull would take a sign,
 * spaces or a second "0x"), and set-up parses a dozen defaults with it,
 * where strtoull, strspn and errno are three more functions for the dynamic
 * linker to bind (about 750 instructions each, once). */
int gg_config_parse_u64(const char *s, uint64_t *out)
{
	unsigned base = 10;
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		if (!*s)
			return -EINVAL;
	}
	for (; *s; s++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			return -EINVAL;
		if (v > (UINT64_MAX - d) / base) {
			/* Too big; but a later byte that is no digit makes it -EINVAL, as before. */
			while (*++s)
				if (!((*s >= '0' && *s <= '9') ||
				      (base == 16 &&
				       ((*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F')))))
					return -EINVAL;
			return -ERANGE;
		}
		v = v * base + d;
	}
	*out = v;
	return 0;
}

/* Whether @s is @word in any case, ASCII only (strcasecmp would follow the
 * locale, and be two more functions for the dynamic linker to bind at
 * set-up). @n: compare only @word's first @n bytes (SIZE_MAX: all of both). */
static bool same_word(const char *s, const char *word, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char a = (unsigned char)s[i], b = (unsigned char)word[i];

		if (a >= 'A' && a <= 'Z')
			a = (unsigned char)(a - 'A' + 'a');
		if (b >= 'A' && b <= 'Z')
			b = (unsigned char)(b - 'A' + 'a');
		if (a != b)
			return false;
		if (!a)
			return true;
	}
	return true;
}

int gg_config_parse_signal(const char *s, int *out, const char **why)
{
	static const struct {
		int sig;
		const char *why;
	} refused[] = {
		{ SIGKILL, "SIGKILL cannot be caught" },
		{ SIGSTOP, "SIGSTOP cannot be caught" },
		{ SIGSEGV, "SIGSEGV reports a crash, it is no boundary" },
		{ SIGBUS, "SIGBUS reports a crash, it is no boundary" },
		{ SIGFPE, "SIGFPE reports a crash, it is no boundary" },
		{ SIGILL, "SIGILL reports a crash, it is no boundary" },
		{ SIGABRT, "SIGABRT is how the program aborts, it is no boundary" },
	};
	uint64_t n;

	if (same_word(s, "none", SIZE_MAX)) {
		*out = 0;
		return 0;
	}
	if (same_word(s, "SIG", 3))
		s += 3;
	if (same_word(s, "USR1", SIZE_MAX)) {
		*out = SIGUSR1;
		return 0;
	}
	if (same_word(s, "USR2", SIZE_MAX)) {
		*out = SIGUSR2;
		return 0;
	}
	if (gg_config_parse_u64(s, &n) || n == 0 || n >= (uint64_t)NSIG) {
		if (why && !gg_config_parse_u64(s, &n))
			*why = "no such signal";
		return -EINVAL;
	}
	/* The C library keeps the first real-time signals for its threads
	 * (glibc: 32 and 33); SIGRTMIN, a call, is the first it leaves to
	 * programs. sigaction refuses the others, so the shim could not listen. */
	if (n >= 32 && (int)n < SIGRTMIN) {
		if (why)
			*why = "the C library keeps it for its own threads";
		return -EINVAL;
	}
	/* Signals the process cannot or must not catch are no boundary. */
	for (size_t i = 0; i < GG_ARRAY_SIZE(refused); i++) {
		if ((int)n == refused[i].sig) {
			if (why)
				*why = refused[i].why;
			return -EINVAL;
		}
	}
	*out = (int)n;
	return 0;
}

int gg_config_parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "KMGT";
	char digits[32];
	size_t n = strlen(s);
	unsigned shift = 0;
	uint64_t v;
	const char *u;
	int err;

	/* A unit: K, M, G or T (powers of 1024), optionally followed by "iB" or
	 * "B"; a 0x hex number has none (its digits may be B). */
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return gg_config_parse_u64(s, out);
	if (n > 2 && same_word(s + n - 2, "iB", SIZE_MAX))
		n -= 2;
	else if (n > 1 && (s[n - 1] == 'B' || s[n - 1] == 'b'))
		n -= 1;
	if (n > 1 && (u = strchr(units, s[n - 1] & ~0x20)) && *u) {
		shift = 10 * (unsigned)(u - units + 1);
		n--;
	} else if (n != strlen(s)) {
		return -EINVAL; /* "12B" with no unit before the B: not a size */
	}
	if (n >= sizeof(digits))
		return -EINVAL;
	memcpy(digits, s, n);
	digits[n] = '\0';
	if ((err = gg_config_parse_u64(digits, &v)))
		return err;
	if (shift && v > UINT64_MAX >> shift)
		return -ERANGE;
	*out = v << shift;
	return 0;
}

int gg_config_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "true", "yes", "on" };
	static const char *const no[] = { "0", "false", "no", "off" };

	for (size_t i = 0; i < GG_ARRAY_SIZE(yes); i++) {
		if (same_word(s, yes[i], SIZE_MAX)) {
			*out = true;
			return 0;
		}
		if (same_word(s, no[i], SIZE_MAX)) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_str(const char *s, char *dst, size_t cap)
{
	size_t n = strlen(s);

	if (n >= cap)
		return -ENAMETOOLONG;
	memcpy(dst, s, n + 1);
	return 0;
}

static int parse_count(const char *s, uint64_t *out)
{
	return gg_config_parse_u64(s, out) == 0 && *out >= 1 ? 0 : -EINVAL;
}

/* after:SECONDS: digits with an optional fraction ("0.5", "12", ".25"), or a
 * 0x hex number, at most 1e9 (a poll timeout in milliseconds must stay an
 * int's worth, watcher.c). By hand: strtod would take "nan", "inf", "-1",
 * "1e999" and spaces, and reads the decimal point of the program's locale,
 * which it may have changed before the shim's set-up. */
static int parse_seconds(const char *s, double *out)
{
	static const double pow10[] = { 1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9 };
	uint64_t mantissa = 0, v;
	unsigned digits = 0, fraction = 0;
	double value;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		if (gg_config_parse_u64(s, &v) || v > 1000000000)
			return -EINVAL;
		*out = (double)v;
		return 0;
	}
	for (; *s >= '0' && *s <= '9'; s++, digits++) {
		mantissa = mantissa * 10 + (uint64_t)(*s - '0');
		if (mantissa > 1000000000)
			return -EINVAL;
	}
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++, digits++) {
			if (fraction < 9) { /* a nanosecond is fine enough */
				mantissa = mantissa * 10 + (uint64_t)(*s - '0');
				fraction++;
			}
		}
	}
	if (!digits || *s)
		return -EINVAL;
	/* One division by an exact power of ten: the value strtod would give. */
	value = (double)mantissa / pow10[fraction];
	if (value > 1e9)
		return -EINVAL;
	*out = value;
	return 0;
}

int gg_config_parse_boundary(const char *list, struct gg_boundary_events *ev,
			     gg_config_bad_item_fn *bad, void *arg)
{
	char buf[GG_CONFIG_STR_MAX];
	char *save = NULL, *tok;
	int err = 0;

	memset(ev, 0, sizeof(*ev));
	if (!*list)
		return 0; /* the default: set-up and the boundaries both ask */
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *arg_text = strchr(tok, ':');
		unsigned *used = NULL; /* the list the event goes to, once it parsed */
		const char *why = "not an event";
		int ok = -EINVAL;

		while (*tok == ' ')
			tok++;
		if (arg_text) {
			*arg_text = '\0';
			if (!strcmp(tok, "launch") || !strcmp(tok, "sync")) {
				bool launch = tok[0] == 'l';
				unsigned *n = launch ? &ev->nlaunch : &ev->nsync;
				uint64_t *to = launch ? ev->launch : ev->sync;

				why = "N must be a number, 1 or more";
				if (*n >= GG_ARRAY_SIZE(ev->launch))
					why = "more than 16 events of one kind";
				else if ((ok = parse_count(arg_text + 1, &to[*n])) == 0)
					used = n;
			} else if (!strcmp(tok, "after")) {
				why = "SECONDS must be a number from 0 to 1000000000, a decimal "
				      "fraction allowed";
				if (ev->nafter >= GG_ARRAY_SIZE(ev->after))
					why = "more than 16 events of one kind";
				else if ((ok = parse_seconds(arg_text + 1, &ev->after[ev->nafter])) ==
					 0)
					used = &ev->nafter;
			}
			*arg_text = ':';
		}
		if (ok == 0) {
			++*used;
			continue;
		}
		/* The bad item is dropped; the good ones still count. Every bad
		 * one is told, not only the first. */
		if (bad)
			bad(arg, tok, why);
		err = -EINVAL;
	}
	return err;
}

/* A report file's path, made absolute against the working directory of now,
 * the set-up's: the program may chdir later, or run under a shell that did
 * (sh -c "cd /tmp && app"), and its files must still land where they were
 * asked for. A working directory that cannot be known leaves @s as it is. */
static int parse_output(const char *s, char *dst, const char **why)
{
	char cwd[PATH_MAX];
	size_t n = strlen(s), c;

	if (n >= PATH_MAX) {
		*why = "too long a path";
		return -ENAMETOOLONG;
	}
	if (s[0] == '/' || !n || !getcwd(cwd, sizeof(cwd)))
		return parse_str(s, dst, PATH_MAX);
	c = strlen(cwd);
	if (c + 1 + n >= PATH_MAX) {
		*why = "too long a path once made absolute";
		return -ENAMETOOLONG;
	}
	memcpy(dst, cwd, c);
	dst[c] = '/';
	memcpy(dst + c + 1, s, n + 1);
	return 0;
}

/* Parse @s for @o into @cfg; on failure @cfg is untouched, and *why may say
 * more than @o->accepts. */
static int parse_one(const struct gg_option *o, const char *s, struct gg_config *cfg, const char **why)
{
	char *base = (char *)cfg;
	void *field = base + o->off;
	bool *set = o->set_off ? (bool *)(base + o->set_off) : NULL;
	uint64_t v, w;
	int err;

	*why = NULL;
	switch ((enum opt_kind)o->kind) {
	case OPT_BOOL:
		return gg_config_parse_bool(s, field);
	case OPT_U64:
		return gg_config_parse_u64(s, field);
	case OPT_U64_SET:
		if ((err = gg_config_parse_u64(s, field)))
			return err;
		*set = true;
		return 0;
	case OPT_VERBOSITY:
		if ((err = gg_config_parse_u64(s, &v)) || v > 2)
			return err ? err : -ERANGE;
		*(int *)field = (int)v;
		return 0;
	case OPT_EXITCODE:
		if ((err = gg_config_parse_u64(s, &v)) || v > 255)
			return err ? err : -ERANGE;
		*(int *)field = (int)v;
		*set = true;
		return 0;
	case OPT_BYTE:
		if ((err = gg_config_parse_u64(s, &v)) || v > 255)
			return err ? err : -ERANGE;
		*(uint8_t *)field = (uint8_t)v;
		return 0;
	case OPT_DEPTH:
		if ((err = gg_config_parse_u64(s, &v)) || v < 1 || v > 64)
			return err ? err : -ERANGE;
		*(unsigned *)field = (unsigned)v;
		return 0;
	case OPT_REDZONE:
		if ((err = gg_config_parse_u64(s, &v)) || v > (1u << 30))
			return err ? err : -ERANGE;
		*(uint64_t *)field = (v + 15) & ~(uint64_t)15;
		return 0;
	case OPT_SIZE:
		return gg_config_parse_size(s, field);
	case OPT_SIGNAL:
		return gg_config_parse_signal(s, field, why);
	case OPT_RANGE: {
		const char *colon = strchr(s, ':');
		char lo[32];

		if (!colon || (size_t)(colon - s) >= sizeof(lo))
			return -EINVAL;
		memcpy(lo, s, (size_t)(colon - s));
		lo[colon - s] = '\0';
		/* LO == HI is an empty range: every band gets 0x00. */
		if (gg_config_parse_u64(lo, &v) || gg_config_parse_u64(colon + 1, &w))
			return -EINVAL;
		if (v > w) {
			*why = "LO is above HI";
			return -EINVAL;
		}
		cfg->poison_lo = v;
		cfg->poison_hi = w;
		*set = true;
		return 0;
	}
	case OPT_LOG:
		if (!strcmp(s, "-")) { /* stderr, the default: no file named "-" */
			*(char *)field = '\0';
			return 0;
		}
		return parse_output(s, field, why);
	case OPT_OUTPUT:
		if (!strcmp(s, "-")) {
			*why = "\"-\" would be the program's stdout, where gpuguard never writes";
			return -EINVAL;
		}
		return parse_output(s, field, why);
	case OPT_PATH:
		if (strlen(s) >= PATH_MAX)
			*why = "too long a path";
		return parse_str(s, field, PATH_MAX);
	case OPT_STR:
	case OPT_BOUNDARY: /* the items are the boundary module's to take or drop */
		if (strlen(s) >= GG_CONFIG_STR_MAX)
			*why = "too long";
		return parse_str(s, field, GG_CONFIG_STR_MAX);
	}
	return -EINVAL;
}

int gg_config_check(const struct gg_option *o, const char *value, const char **why)
{
	static struct gg_config scratch; /* the command's, single-threaded */
	struct gg_boundary_events ev;
	int err = parse_one(o, value, &scratch, why);

	if (err)
		return err;
	/* A list with a bad item: the shim drops the item with a WARN. */
	if (o->kind == OPT_BOUNDARY && gg_config_parse_boundary(value, &ev, NULL, NULL)) {
		*why = "an item is not an event";
		return -EINVAL;
	}
	return 0;
}

bool gg_config_disabled_in_env(void)
{
	const char *s = getenv("GPUGUARD_DISABLE");
	bool v = false;

	return s && gg_config_parse_bool(s, &v) == 0 && v;
}

/* Edit distance of two short names, capped at 64 characters each. */
static unsigned distance(const char *a, const char *b)
{
	unsigned row[65], n = (unsigned)strnlen(b, 64), m = (unsigned)strnlen(a, 64);

	for (unsigned j = 0; j <= n; j++)
		row[j] = j;
	for (unsigned i = 1; i <= m; i++) {
		unsigned diag = row[0];

		row[0] = i;
		for (unsigned j = 1; j <= n; j++) {
			unsigned up = row[j];
			unsigned best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[n];
}

/* The known name within three edits of @name, or NULL. */
static const char *nearest_known(const char *name)
{
	const char *best = NULL;
	unsigned best_d = 4; /* farther than 3 edits is no misspelling */

	for (size_t i = 0; i < GG_ARRAY_SIZE(opts); i++) {
		unsigned d = distance(name, opts[i].name);

		if (d < best_d)
			best = opts[i].name, best_d = d;
	}
	return best;
}

/* The option whose name is the first @len bytes of @name, or -1. */
static int option_index(const char *name, size_t len)
{
	for (size_t i = 0; i < GG_ARRAY_SIZE(opts); i++)
		if (!strncmp(opts[i].name, name, len) && !opts[i].name[len])
			return (int)i;
	return -1;
}

/* One pass over the environment (a getenv per option walked it twenty
 * times): @value[i] becomes opts[i]'s value, the first definition as getenv
 * finds it. The names the table lacks are gg_config_next_unknown()'s. */
static void read_environ(const char *value[])
{
	for (char **e = environ; e && *e; e++) {
		size_t len;
		int i;

		if (strncmp(*e, "GPUGUARD_", 9))
			continue;
		len = strcspn(*e, "=");
		if ((i = option_index(*e, len)) >= 0 && !value[i] && (*e)[len] == '=')
			value[i] = *e + len + 1;
	}
}

/* The walk is the environment's own: no copy of the names is kept, so there
 * is no cap on how many are told (a table of 8 once hid a typo that came
 * ninth), and start-up tells each one as it comes. */
bool gg_config_next_unknown(struct gg_config_unknown *u)
{
	if (u->done)
		return false;
	for (char **e = u->next ? u->next : environ; e && *e; e++) {
		size_t len;

		if (strncmp(*e, "GPUGUARD_", 9))
			continue;
		len = strcspn(*e, "=");
		if (option_index(*e, len) >= 0)
			continue;
		if (len >= sizeof(u->name))
			len = sizeof(u->name) - 1;
		memcpy(u->name, *e, len);
		u->name[len] = '\0';
		u->nearest = nearest_known(u->name);
		u->next = e + 1;
		return true;
	}
	u->done = true;
	return false;
}

/* Whether option @o's field is one of the strings, which come last. */
static bool is_string(const struct gg_option *o)
{
	return o->kind == OPT_PATH || o->kind == OPT_STR || o->kind == OPT_BOUNDARY ||
	       o->kind == OPT_LOG || o->kind == OPT_OUTPUT;
}

/* Into @cfg, whose fields before the strings are zeroed and whose strings
 * are each given their value or default (every string option has one): a
 * memset of the whole struct, 19 k, would be paid at every process's
 * set-up. */
static void load_into(struct gg_config *cfg)
{
	const char *value[GG_ARRAY_SIZE(opts)] = { NULL };

	memset(cfg, 0, GG_CONFIG_STRINGS_START);
	config_state.nbad = 0;
	read_environ(value);
	for (size_t i = 0; i < GG_ARRAY_SIZE(opts); i++) {
		const struct gg_option *o = &opts[i];
		const char *why = NULL;
		const char *s = value[i];

		if (is_string(o))
			((char *)cfg + o->off)[0] = '\0';
		if (o->def)
			(void)parse_one(o, o->def, cfg, &why);
		if (!s)
			continue;
		/* Every parser writes only on success, so a bad value leaves the default. */
		if (parse_one(o, s, cfg, &why) != 0) {
			struct bad_value *b = &config_state.bad[config_state.nbad++];

			b->o = o;
			snprintf(b->value, sizeof(b->value), "%s", s);
			b->why = why;
		}
	}
}

const struct gg_config *gg_config_read(void)
{
	load_into(&config_state.cfg);
	return &config_state.cfg;
}

void gg_config_load(struct gg_config *cfg)
{
	*cfg = *gg_config_read();
}

unsigned gg_config_problems(struct gg_config_problem *out, unsigned cap)
{
	unsigned n = 0;

	for (unsigned i = 0; i < config_state.nbad && n < cap; i++) {
		const struct bad_value *b = &config_state.bad[i];

		out[n++] = (struct gg_config_problem){
			.name = b->o->name, .value = b->value, .why = b->why, .accepts = b->o->accepts
		};
	}
	return n;
}

const struct gg_config *gg_config(void)
{
	return &config_state.cfg;
}
