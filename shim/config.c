/* The options table: every GPUGUARD_* variable, its default and its parser.
 * Read once, by the shim's set-up (under its pthread_once); read-only after. */
#include "config.h"

#include "gg.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "report/report.h"

enum opt_kind { OPT_BOOL, OPT_U64, OPT_VERBOSITY, OPT_PATH, OPT_STR, OPT_EXITCODE,
		OPT_SIGNAL, OPT_REDZONE, OPT_BYTE, OPT_U64_SET, OPT_RANGE };

struct opt {
	const char *name;
	enum opt_kind kind;
	size_t off;      /* field in struct gg_config */
	size_t set_off;  /* its "was set" flag, for the kinds that have one */
	const char *def; /* default, parsed like a user value */
};

#define F(field) offsetof(struct gg_config, field)

extern char **environ;

static const struct opt opts[] = {
	{ "GPUGUARD_DISABLE", OPT_BOOL, F(disable), 0, "0" },
	{ "GPUGUARD_LOG", OPT_PATH, F(log), 0, "" },
	{ "GPUGUARD_VERBOSITY", OPT_VERBOSITY, F(verbosity), 0, "1" },
	{ "GPUGUARD_SUMMARY_JSON", OPT_PATH, F(summary_json), 0, "" },
	{ "GPUGUARD_METRICS", OPT_PATH, F(metrics), 0, "" },
	{ "GPUGUARD_EXITCODE", OPT_EXITCODE, F(exitcode), F(exitcode_set), NULL },
	{ "GPUGUARD_HALT_ON_ERROR", OPT_BOOL, F(halt_on_error), 0, "0" },
	{ "GPUGUARD_ALLOW_UNRESOLVED", OPT_BOOL, F(allow_unresolved), 0, "0" },
	{ "GPUGUARD_EXPECTED_ABSENT", OPT_PATH, F(expected_absent), 0, "" },
	{ "GPUGUARD_SKIP_OBJECTS", OPT_STR, F(skip_objects), 0,
	  "libcuda.so*,libcudart.so*,libgpuguard.so*" },
	{ "GPUGUARD_SKIP_SYMBOLS", OPT_STR, F(skip_symbols), 0, GG_SKIP_SYMBOLS_DEFAULT },
	{ "GPUGUARD_BOUNDARY", OPT_STR, F(boundary), 0, "" },
	{ "GPUGUARD_SIGNAL", OPT_SIGNAL, F(signal), 0, "none" },
	{ "GPUGUARD_REDZONE", OPT_REDZONE, F(redzone), 0, "0" },
	{ "GPUGUARD_REDZONE_MIN_IDX", OPT_U64, F(redzone_min_idx), 0, "0" },
	{ "GPUGUARD_REDZONE_TRACE_IDX", OPT_U64_SET, F(trace_idx), F(trace_idx_set), NULL },
	{ "GPUGUARD_REDZONE_FILL", OPT_BYTE, F(fill), 0, "0xEE" },
	{ "GPUGUARD_REDZONE_POISON", OPT_RANGE, F(poison_lo), F(poison_set), NULL },
	{ "GPUGUARD_CHECK_ON_FREE", OPT_BOOL, F(check_on_free), 0, "1" },
};

#undef F

/* Bad values seen by gg_config_load(), reported once the log is open. */
struct bad_value {
	const char *name;
	char value[96];
	const char *why;
};

#define MAX_UNKNOWN 8

static struct {
	struct gg_config cfg;           /* written by gg_config_load() only */
	struct bad_value bad[GG_ARRAY_SIZE(opts)];
	unsigned nbad;
	char unknown[MAX_UNKNOWN][64];  /* GPUGUARD_* names not in @opts */
	unsigned nunknown;
} config_state;

int gg_config_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	int base = 10;

	if (!s || !*s)
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	/* strtoull would accept a sign, spaces or a second "0x": only digits pass. */
	if (!*s || strspn(s, base == 16 ? "0123456789abcdefABCDEF" : "0123456789") != strlen(s))
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, base);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	*out = v;
	return 0;
}

int gg_config_parse_signal(const char *s, int *out)
{
	uint64_t n;

	if (!strcasecmp(s, "none")) {
		*out = 0;
		return 0;
	}
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	if (!strcasecmp(s, "USR1")) {
		*out = SIGUSR1;
		return 0;
	}
	if (!strcasecmp(s, "USR2")) {
		*out = SIGUSR2;
		return 0;
	}
	if (gg_config_parse_u64(s, &n) || n == 0 || n >= (uint64_t)NSIG)
		return -EINVAL;
	/* Signals the process cannot or must not catch are no boundary. */
	if (n == SIGKILL || n == SIGSTOP || n == SIGSEGV || n == SIGBUS || n == SIGFPE ||
	    n == SIGILL || n == SIGABRT)
		return -EINVAL;
	*out = (int)n;
	return 0;
}

static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "true", "yes", "on" };
	static const char *const no[] = { "0", "false", "no", "off" };

	for (size_t i = 0; i < GG_ARRAY_SIZE(yes); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
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

/* Parse @s for @o into @cfg; on failure @cfg is untouched and *why says what was wrong. */
static int parse_one(const struct opt *o, const char *s, struct gg_config *cfg, const char **why)
{
	char *base = (char *)cfg;
	void *field = base + o->off;
	bool *set = o->set_off ? (bool *)(base + o->set_off) : NULL;
	uint64_t v, w;
	int err;

	switch (o->kind) {
	case OPT_BOOL:
		*why = "expected 0 or 1";
		return parse_bool(s, field);
	case OPT_U64:
		*why = "expected a decimal or 0x hex number";
		return gg_config_parse_u64(s, field);
	case OPT_U64_SET:
		*why = "expected a decimal or 0x hex number";
		if ((err = gg_config_parse_u64(s, field)))
			return err;
		*set = true;
		return 0;
	case OPT_VERBOSITY:
		*why = "expected 0, 1 or 2";
		if ((err = gg_config_parse_u64(s, &v)) || v > 2)
			return err ? err : -ERANGE;
		*(int *)field = (int)v;
		return 0;
	case OPT_EXITCODE:
		*why = "expected an exit status from 0 to 255";
		if ((err = gg_config_parse_u64(s, &v)) || v > 255)
			return err ? err : -ERANGE;
		*(int *)field = (int)v;
		*set = true;
		return 0;
	case OPT_BYTE:
		*why = "expected a byte value from 0 to 255 (0x00 to 0xff)";
		if ((err = gg_config_parse_u64(s, &v)) || v > 255)
			return err ? err : -ERANGE;
		*(uint8_t *)field = (uint8_t)v;
		return 0;
	case OPT_REDZONE:
		*why = "expected a number of bytes (at most 1 GiB)";
		if ((err = gg_config_parse_u64(s, &v)) || v > (1u << 30))
			return err ? err : -ERANGE;
		*(uint64_t *)field = (v + 15) & ~(uint64_t)15;
		return 0;
	case OPT_SIGNAL:
		*why = "expected USR1, USR2, a catchable signal number, or none";
		return gg_config_parse_signal(s, field);
	case OPT_RANGE: {
		*why = "expected LO:HI with LO <= HI";
		const char *colon = strchr(s, ':');
		char lo[32];

		if (!colon || (size_t)(colon - s) >= sizeof(lo))
			return -EINVAL;
		memcpy(lo, s, (size_t)(colon - s));
		lo[colon - s] = '\0';
		/* LO == HI is an empty range: every band gets 0x00. */
		if (gg_config_parse_u64(lo, &v) || gg_config_parse_u64(colon + 1, &w) || v > w)
			return -EINVAL;
		cfg->poison_lo = v;
		cfg->poison_hi = w;
		*set = true;
		return 0;
	}
	case OPT_PATH:
		*why = "path too long";
		return parse_str(s, field, PATH_MAX);
	case OPT_STR:
		*why = "value too long";
		return parse_str(s, field, GG_CONFIG_STR_MAX);
	}
	return -EINVAL;
}

bool gg_config_disabled_in_env(void)
{
	const char *s = getenv("GPUGUARD_DISABLE");
	bool v = false;

	return s && parse_bool(s, &v) == 0 && v;
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

/* Whether the first @len bytes of @name are a variable of the table. */
static bool known(const char *name, size_t len)
{
	for (size_t i = 0; i < GG_ARRAY_SIZE(opts); i++)
		if (strlen(opts[i].name) == len && !strncmp(opts[i].name, name, len))
			return true;
	return false;
}

/* A misspelt GPUGUARD_REDZNE=64 must not silently turn the red zones off. */
static void note_unknown(void)
{
	config_state.nunknown = 0;
	for (char **e = environ; e && *e && config_state.nunknown < MAX_UNKNOWN; e++) {
		size_t len = strcspn(*e, "=");

		if (strncmp(*e, "GPUGUARD_", 9) || known(*e, len))
			continue;
		snprintf(config_state.unknown[config_state.nunknown++], sizeof(config_state.unknown[0]),
			 "%.*s", (int)(len < 63 ? len : 63), *e);
	}
}

void gg_config_load(struct gg_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	config_state.nbad = 0;
	for (size_t i = 0; i < GG_ARRAY_SIZE(opts); i++) {
		const struct opt *o = &opts[i];
		const char *why = NULL;
		const char *s = getenv(o->name);

		if (o->def)
			(void)parse_one(o, o->def, cfg, &why);
		if (!s)
			continue;
		/* Every parser writes only on success, so a bad value leaves the default. */
		if (parse_one(o, s, cfg, &why) != 0) {
			struct bad_value *b = &config_state.bad[config_state.nbad++];

			b->name = o->name;
			snprintf(b->value, sizeof(b->value), "%s", s);
			b->why = why;
		}
	}
	note_unknown();
	config_state.cfg = *cfg;
}

void gg_config_report_warnings(void)
{
	for (unsigned i = 0; i < config_state.nbad; i++) {
		const struct bad_value *b = &config_state.bad[i];

		gg_report_bad_value(b->name, b->value, b->why);
	}
	for (unsigned i = 0; i < config_state.nunknown; i++)
		gg_report_unknown_variable(config_state.unknown[i],
					   nearest_known(config_state.unknown[i]));
}

const struct gg_config *gg_config(void)
{
	return &config_state.cfg;
}
