/* The options table (README, "Settings"), as the shim reads it and as the
 * gpuguard command, its --help and its man page use it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/gg.h"
#include "harness.h"
#include "options/config.h"
#include "options/listfile.h"

Test(config, numbers_accept_decimal_and_hex)
{
	uint64_t v = 0;

	cr_assert_eq(gg_config_parse_u64("42", &v), 0);
	cr_assert_eq(v, 42);
	cr_assert_eq(gg_config_parse_u64("0x2A", &v), 0);
	cr_assert_eq(v, 42);
	cr_assert_eq(gg_config_parse_u64("0xffffffffffffffff", &v), 0);
	cr_assert_eq(v, UINT64_MAX);
}

Test(config, malformed_numbers_are_refused)
{
	static const char *const bad[] = { "", "-1", " 1", "1 ", "12abc", "0x", "0x0x1", "+3", "1e3" };
	uint64_t v = 7;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(gg_config_parse_u64(bad[i], &v), -EINVAL, "\"%s\"", bad[i]);
		cr_assert_eq(v, 7, "\"%s\" wrote a value", bad[i]);
	}
	cr_assert_eq(gg_config_parse_u64("18446744073709551616", &v), -ERANGE);
	cr_assert_eq(gg_config_parse_u64("0x10000000000000000", &v), -ERANGE);
	cr_assert_eq(v, 7);
	/* Too big, but not a number at all: that is what is said. */
	cr_assert_eq(gg_config_parse_u64("99999999999999999999x", &v), -EINVAL);
	cr_assert_eq(gg_config_parse_u64("0xfffffffffffffffffg", &v), -EINVAL);
	cr_assert_eq(gg_config_parse_u64("18446744073709551615", &v), 0);
	cr_assert_eq(v, UINT64_MAX);
	cr_assert_eq(gg_config_parse_u64("0XfF", &v), 0);
	cr_assert_eq(v, 255);
}

/* Names and switches in any case, ASCII: sigusr1, None, TRUE, Off. */
Test(config, names_and_switches_are_read_in_any_case)
{
	struct gg_config c;
	int s = -1;

	cr_assert_eq(gg_config_parse_signal("sigusr1", &s, NULL), 0);
	cr_assert_eq(s, SIGUSR1);
	cr_assert_eq(gg_config_parse_signal("Usr2", &s, NULL), 0);
	cr_assert_eq(s, SIGUSR2);
	cr_assert_eq(gg_config_parse_signal("NONE", &s, NULL), 0);
	cr_assert_eq(s, 0);
	cr_assert_eq(gg_config_parse_signal("SIG", &s, NULL), -EINVAL);
	cr_assert_eq(gg_config_parse_signal("SIGUSR", &s, NULL), -EINVAL);
	cr_assert_eq(gg_config_parse_signal("USR12", &s, NULL), -EINVAL);
	setenv("GPUGUARD_CHECK_LAUNCHES", "TRUE", 1);
	setenv("GPUGUARD_CHECK_ON_FREE", "Off", 1);
	setenv("GPUGUARD_HALT_ON_ERROR", "yES", 1);
	setenv("GPUGUARD_ALLOW_UNRESOLVED", "onn", 1);
	gg_config_load(&c);
	cr_expect(c.check_launches && !c.check_on_free && c.halt_on_error && !c.allow_unresolved);
}

Test(config, signals_by_name_number_or_none)
{
	int s = -1;

	cr_assert_eq(gg_config_parse_signal("USR1", &s, NULL), 0);
	cr_assert_eq(s, SIGUSR1);
	cr_assert_eq(gg_config_parse_signal("SIGUSR2", &s, NULL), 0);
	cr_assert_eq(s, SIGUSR2);
	cr_assert_eq(gg_config_parse_signal("none", &s, NULL), 0);
	cr_assert_eq(s, 0);
	cr_assert_eq(gg_config_parse_signal("34", &s, NULL), 0);
	cr_assert_eq(s, 34);
	cr_assert_eq(gg_config_parse_signal("9", &s, NULL), -EINVAL, "SIGKILL cannot be caught");
	cr_assert_eq(gg_config_parse_signal("USR3", &s, NULL), -EINVAL);
	cr_assert_eq(gg_config_parse_signal("0", &s, NULL), -EINVAL);
	cr_assert_eq(gg_config_parse_signal("64", &s, NULL), 0);
	cr_assert_eq(s, 64);
	cr_assert_eq(gg_config_parse_signal("65", &s, NULL), -EINVAL);
}

/* The C library's own real-time signals (below SIGRTMIN: 32 and 33 in
 * glibc) are refused, as sigaction would refuse them; SIGRTMIN is taken. */
Test(config, the_c_librarys_own_signals_are_refused)
{
	const char *why = NULL;
	char text[16];
	int s = -1;

	for (int sig = 32; sig < SIGRTMIN; sig++) {
		snprintf(text, sizeof(text), "%d", sig);
		why = NULL;
		cr_expect_eq(gg_config_parse_signal(text, &s, &why), -EINVAL, "%d", sig);
		cr_expect_str_eq(why, "the C library keeps it for its own threads");
		cr_expect_neq(sigaction(sig, NULL, NULL), 0, "the C library lets %d be caught", sig);
	}
	snprintf(text, sizeof(text), "%d", SIGRTMIN);
	cr_expect_eq(gg_config_parse_signal(text, &s, NULL), 0);
	cr_expect_eq(s, SIGRTMIN);
	cr_expect_eq(SIGRTMIN, 34, "the accepted values (GG_CONFIG_SIGNALS) name 32 and 33");
}

Test(config, defaults_when_nothing_is_set)
{
	struct gg_config c;

	gg_config_load(&c);
	cr_assert_eq(c.disable, false);
	cr_assert_eq(c.verbosity, 1);
	cr_assert_eq(c.redzone, 0);
	cr_assert_eq(c.fill, 0xEE);
	cr_assert_eq(c.check_on_free, true);
	cr_assert_eq(c.signal, 0);
	cr_assert_eq(c.exitcode_set, false);
	cr_assert_eq(c.poison_set, false);
	cr_assert_str_eq(c.skip_objects, "libcuda.so*,libcudart.so*,libgpuguard.so*");
	cr_assert_str_eq(c.log, "");
}

/* config.def declares each default once; what a load with nothing set gives
 * must be that default parsed, field for field: a default the parser refused
 * would leave its field zeroed without a word. An option without a default
 * is unset, and says so in its "was set" flag. */
Test(config, each_field_holds_its_declared_default_when_nothing_is_set)
{
	static unsigned char unset[sizeof(struct gg_config)], given[sizeof(struct gg_config)];
	struct gg_config_problem problems[GG_CONFIG_MAX_OPTIONS];
	size_t n;
	const struct gg_option *opts = gg_config_options(&n);

	cr_assert_gt(n, 20);
	for (size_t i = 0; i < n; i++) {
		const struct gg_option *o = &opts[i];
		const char *why = NULL;

		unsetenv(o->name);
		if (!o->def) {
			cr_expect_neq(o->set_off, 0, "%s: no default, so a was-set flag", o->name);
			continue;
		}
		cr_expect_eq(gg_config_check(o, o->def, &why), 0, "%s: default \"%s\" refused (%s)",
			     o->name, o->def, why ? why : "");
	}
	memcpy(unset, gg_config_read(), sizeof(unset));
	for (size_t i = 0; i < n; i++) {
		const struct gg_option *o = &opts[i];

		if (!o->def) {
			cr_expect(!*(const bool *)(unset + o->set_off), "%s: unset", o->name);
			continue;
		}
		setenv(o->name, o->def, 1);
		memcpy(given, gg_config_read(), sizeof(given));
		unsetenv(o->name);
		cr_expect_eq(gg_config_problems(problems, GG_CONFIG_MAX_OPTIONS), 0, "%s", o->name);
		cr_expect(!memcmp(unset, given, GG_CONFIG_STRINGS_START),
			  "%s: the loaded default is not \"%s\"", o->name, o->def);
		/* The strings, each to its end (the first may begin a few bytes
		 * before GG_CONFIG_STRINGS_START, in the struct's tail padding). */
		for (size_t j = 0; j < n; j++)
			if (opts[j].off + _Alignof(struct gg_config) > GG_CONFIG_STRINGS_START)
				cr_expect_str_eq((const char *)unset + opts[j].off,
						 (const char *)given + opts[j].off, "%s", o->name);
	}
}

Test(config, values_are_read_from_the_environment)
{
	struct gg_config c;

	setenv("GPUGUARD_REDZONE", "17", 1);
	setenv("GPUGUARD_REDZONE_FILL", "0x41", 1);
	setenv("GPUGUARD_REDZONE_POISON", "3:0x10", 1);
	setenv("GPUGUARD_EXITCODE", "23", 1);
	setenv("GPUGUARD_SIGNAL", "USR2", 1);
	setenv("GPUGUARD_CHECK_ON_FREE", "0", 1);
	setenv("GPUGUARD_VERBOSITY", "2", 1);
	gg_config_load(&c);
	cr_assert_eq(c.redzone, 32, "rounded up to a multiple of 16");
	cr_assert_eq(c.fill, 0x41);
	cr_assert(c.poison_set && c.poison_lo == 3 && c.poison_hi == 16);
	cr_assert(c.exitcode_set && c.exitcode == 23);
	cr_assert_eq(c.signal, SIGUSR2);
	cr_assert_eq(c.check_on_free, false);
	cr_assert_eq(c.verbosity, 2);
	cr_assert_eq(gg_config()->redzone, 32, "the process-wide copy is the loaded one");
}

Test(config, an_empty_poison_range_is_valid)
{
	struct gg_config c;

	setenv("GPUGUARD_REDZONE_POISON", "5:5", 1);
	gg_config_load(&c);
	cr_assert(c.poison_set && c.poison_lo == 5 && c.poison_hi == 5);
}

Test(config, redzone_rounds_up_to_sixteen)
{
	static const struct {
		const char *in;
		uint64_t out;
	} cases[] = { { "0", 0 }, { "1", 16 }, { "16", 16 }, { "17", 32 }, { "0x40", 64 } };
	struct gg_config c;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setenv("GPUGUARD_REDZONE", cases[i].in, 1);
		gg_config_load(&c);
		cr_assert_eq(c.redzone, cases[i].out, "%s", cases[i].in);
	}
}

Test(config, bad_values_keep_the_default)
{
	struct gg_config c;

	setenv("GPUGUARD_VERBOSITY", "3", 1);
	setenv("GPUGUARD_REDZONE_FILL", "256", 1);
	setenv("GPUGUARD_REDZONE_POISON", "6:5", 1);
	setenv("GPUGUARD_EXITCODE", "-1", 1);
	setenv("GPUGUARD_DISABLE", "maybe", 1);
	setenv("GPUGUARD_REDZONE", "lots", 1);
	gg_config_load(&c);
	cr_assert_eq(c.verbosity, 1);
	cr_assert_eq(c.fill, 0xEE);
	cr_assert_eq(c.poison_set, false);
	cr_assert_eq(c.exitcode_set, false);
	cr_assert_eq(c.disable, false);
	cr_assert_eq(c.redzone, 0);
	cr_assert_eq(gg_config_disabled_in_env(), false);
}

/* The environment is read in one pass, as getenv would read each variable:
 * the first definition counts, and an entry with no '=' is no value. */
Test(config, the_first_definition_counts_and_a_bare_name_is_no_value)
{
	extern char **environ;
	char *env[] = { "PATH=/bin",          "GPUGUARD_REDZONE=32", "GPUGUARD_REDZONE=64",
			"GPUGUARD_VERBOSITY", "GPUGUARD_REDZNE=16",  NULL };
	struct gg_config_problem p[8];
	struct gg_config_unknown u = { .next = NULL };
	struct gg_config c;

	environ = env;
	gg_config_load(&c);
	cr_expect_eq(c.redzone, 32);
	cr_expect_eq(c.verbosity, 1);
	cr_assert_eq(gg_config_problems(p, 8), 0);
	cr_assert(gg_config_next_unknown(&u));
	cr_expect_str_eq(u.name, "GPUGUARD_REDZNE");
	cr_expect_str_eq(u.nearest, "GPUGUARD_REDZONE");
	cr_assert(!gg_config_next_unknown(&u));
	cr_assert(!gg_config_next_unknown(&u), "and it stays done");
}

/* Issue "never harm the host" 16: a table of 8 unknown names once hid the
 * ninth, a real typo. Every one is named, each once, whatever comes before. */
Test(config, every_unknown_variable_is_named_however_many_come_first)
{
	extern char **environ;
	char names[40][40], *env[44];
	struct gg_config_unknown u = { .next = NULL };
	struct gg_config c;
	unsigned k = 0, seen = 0;

	env[k++] = "PATH=/bin";
	for (unsigned i = 0; i < 40; i++) {
		snprintf(names[i], sizeof(names[i]), "GPUGUARD_UNKNOWN_NUMBER_%u=1", i);
		env[k++] = names[i];
	}
	env[k++] = "GPUGUARD_REDZNE=64";
	env[k++] = "GPUGUARD_NAME";
	env[k] = NULL;
	environ = env;
	gg_config_load(&c);
	while (gg_config_next_unknown(&u)) {
		char want[40];

		if (seen < 40) {
			snprintf(want, sizeof(want), "GPUGUARD_UNKNOWN_NUMBER_%u", seen);
			cr_expect_str_eq(u.name, want);
		}
		seen++;
	}
	cr_assert_eq(seen, 42);
	cr_expect_str_eq(u.name, "GPUGUARD_NAME", "a name with no value is one too");
	cr_expect_eq(c.redzone, 0);
}

/* The same from outside, at verbosity 0: the shim WARNs for each. */
Test(config, the_shim_warns_for_every_unknown_variable_at_every_verbosity)
{
	const char *env[24];
	char names[16][48];
	unsigned k = 0;
	struct gg_run r;

	env[k++] = "GG_TEST_PTX=" GG_PTX;
	env[k++] = "GPUGUARD_VERBOSITY=0";
	for (unsigned i = 0; i < 16; i++) {
		snprintf(names[i], sizeof(names[i]), "GPUGUARD_NOT_A_VARIABLE_%u=1", i);
		env[k++] = names[i];
	}
	env[k++] = "GPUGUARD_REDZNE=64";
	env[k] = NULL;
	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE, env,
	       (const char *[]){ GG_APPS "/app-redzone", "alloc:64", NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_expect_eq(gg_count_lines(r.err, "WARN: GPUGUARD_REDZNE is not a gpuguard variable; it is "
					   "ignored (did you mean GPUGUARD_REDZONE?"),
		     1, "%s", r.err);
	cr_expect_eq(gg_count_lines(r.err, "is not a gpuguard variable"), 17, "%s", r.err);
	gg_run_free(&r);
}

/* Each load starts from the defaults: nothing of an earlier one stays. */
Test(config, a_second_load_keeps_nothing_of_the_first)
{
	struct gg_config c;

	setenv("GPUGUARD_EXITCODE", "3", 1);
	setenv("GPUGUARD_REDZONE_TRACE_IDX", "7", 1);
	setenv("GPUGUARD_LOG", "/tmp/x.log", 1);
	setenv("GPUGUARD_BOUNDARY", "sync:1", 1);
	gg_config_load(&c);
	cr_assert(c.exitcode_set && c.trace_idx_set && c.log[0] && c.boundary[0]);
	unsetenv("GPUGUARD_EXITCODE");
	unsetenv("GPUGUARD_REDZONE_TRACE_IDX");
	unsetenv("GPUGUARD_LOG");
	unsetenv("GPUGUARD_BOUNDARY");
	gg_config_load(&c);
	cr_expect(!c.exitcode_set && c.exitcode == 0 && !c.trace_idx_set && c.trace_idx == 0);
	cr_expect_str_eq(c.log, "");
	cr_expect_str_eq(c.boundary, "");
	cr_expect_eq(gg_config_read(), gg_config(), "the shim's set-up reads the process-wide copy");
	cr_expect_str_eq(gg_config()->log, "");
}

Test(config, disable_is_read_on_its_own)
{
	setenv("GPUGUARD_DISABLE", "1", 1);
	cr_assert_eq(gg_config_disabled_in_env(), true);
	setenv("GPUGUARD_DISABLE", "0", 1);
	cr_assert_eq(gg_config_disabled_in_env(), false);
}

/* ---- the one table, as the shim and the command read it ---- */

/* Values of every shape the table's parsers meet, good and bad. */
static const char *const candidates[] = {
	"0",
	"1",
	"2",
	"16",
	"255",
	"256",
	"0x10",
	"0xEE",
	"-1",
	"abc",
	"yes",
	"off",
	"USR2",
	"SIGUSR1",
	"9",
	"11",
	"64",
	"none",
	"1:2",
	"2:1",
	"0x10:0x20",
	"launch:3",
	"sync:0",
	"launch:3,foo",
	"after:0.5,sync:2",
	"1073741824",
	"1073741825",
	"18446744073709551616",
};

/* Whether the shim, reading @value for @o, says it is not valid: a WARN for
 * the value, or for one of its items (GPUGUARD_BOUNDARY). */
static bool shim_rejects(const struct gg_option *o, const char *value)
{
	struct gg_config c;
	struct gg_config_problem p[8];
	struct gg_boundary_events ev;
	unsigned n;
	bool rejected = false;

	setenv(o->name, value, 1);
	gg_config_load(&c);
	unsetenv(o->name);
	n = gg_config_problems(p, 8);
	for (unsigned i = 0; i < n; i++)
		rejected |= p[i].value && !strcmp(p[i].name, o->name);
	if (!rejected && !strcmp(o->name, "GPUGUARD_BOUNDARY"))
		rejected = gg_config_parse_boundary(c.boundary, &ev, NULL, NULL) != 0;
	return rejected;
}

/* gpuguard FLAG VALUE -- env: refused (2) with a message naming the flag, the
 * value and what is accepted exactly when the shim would reject the value;
 * otherwise the program gets the variable as given (a report file's path
 * made absolute against the command's directory). */
static void command_agrees(const struct gg_option *o, const char *value)
{
	struct gg_run r;
	char want[5200];
	bool rejects = shim_rejects(o, value);

	gg_run(&r, 0, NULL, (const char *[]){ GG_CLI, o->flag, value, "--", "/usr/bin/env", NULL });
	if (rejects) {
		cr_expect_eq(gg_run_exit(&r), 2, "%s %s: the shim rejects it, the command ran: %s",
			     o->flag, value, r.out);
		snprintf(want, sizeof(want), "gpuguard: %s: \"%s\" is not a valid value", o->flag,
			 value);
		cr_expect(strstr(r.err, want), "%s %s: %s", o->flag, value, r.err);
		cr_expect(strstr(r.err, o->accepts), "%s %s: %s", o->flag, value, r.err);
		cr_expect_str_eq(r.out, "");
	} else if (!strcmp(o->name, "GPUGUARD_EXPECTED_ABSENT") && gg_run_exit(&r) == 2) {
		/* A value the parser takes, but no list the shim could read (none of
		 * the candidates is a file): refused too, saying so. */
		snprintf(want, sizeof(want),
			 "gpuguard: %s: cannot read \"%s\": No such file or "
			 "directory",
			 o->flag, value);
		cr_expect(strstr(r.err, want), "%s %s: %s", o->flag, value, r.err);
		cr_expect_str_eq(r.out, "");
	} else {
		cr_expect_eq(gg_run_exit(&r), 0, "%s %s: the shim takes it, the command refused: %s",
			     o->flag, value, r.err);
		char cwd[4096];
		bool report_file = !strcmp(o->flag, "--log") || !strcmp(o->flag, "--json") ||
				   !strcmp(o->flag, "--metrics");

		cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
		if (report_file && value[0] != '/')
			snprintf(want, sizeof(want), "\n%s=%s/%s\n", o->name, cwd, value);
		else
			snprintf(want, sizeof(want), "\n%s=%s\n", o->name, value);
		cr_expect(strstr(r.out, want) || !strncmp(r.out, want + 1, strlen(want + 1)),
			  "%s %s: not in the program's environment", o->flag, value);
	}
	gg_run_free(&r);
}

Test(config, the_command_refuses_every_value_the_shim_rejects, .timeout = 300)
{
	size_t n, walked = 0;
	const struct gg_option *opts = gg_config_options(&n);
	char *huge = malloc(5001);

	cr_assert_not_null(huge);
	memset(huge, 'x', 5000);
	huge[5000] = '\0';
	for (size_t i = 0; i < n; i++) {
		const struct gg_option *o = &opts[i];
		struct gg_run r;

		cr_assert_not_null(o->flag, "%s has no flag", o->name);
		if (o->sets) {
			/* A switch sets its value; a value after '=' only when the
			 * shim reads it as a boolean (tests/test-cli.c has the rest). */
			char with[96];

			gg_run(&r, 0, NULL,
			       (const char *[]){ GG_CLI, o->flag, "--", "/usr/bin/env", NULL });
			snprintf(with, sizeof(with), "%s=%s\n", o->name, o->sets);
			cr_expect(gg_run_exit(&r) == 0 && strstr(r.out, with), "%s: %s", o->flag,
				  r.err);
			gg_run_free(&r);
			snprintf(with, sizeof(with), "%s=maybe", o->flag);
			gg_run(&r, 0, NULL,
			       (const char *[]){ GG_CLI, with, "--", "/usr/bin/env", NULL });
			cr_expect_eq(gg_run_exit(&r), 2, "%s", with);
			gg_run_free(&r);
			cr_expect(shim_rejects(o, "maybe") && !shim_rejects(o, o->sets), "%s", o->name);
			walked++;
			continue;
		}
		for (size_t k = 0; k < GG_ARRAY_SIZE(candidates); k++)
			command_agrees(o, candidates[k]);
		command_agrees(o, huge);
		/* Its default is a value it takes. */
		if (o->def && *o->def)
			cr_expect(!shim_rejects(o, o->def), "%s=%s", o->name, o->def);
		walked++;
	}
	cr_assert_eq(walked, n);
	free(huge);
}

/* Each candidate's verdict is not the same for every option: the walk above
 * would pass for a command that refused nothing only if no value were bad. */
Test(config, the_candidates_tell_the_parsers_apart)
{
	size_t n, rejected = 0, taken = 0;
	const struct gg_option *opts = gg_config_options(&n);

	for (size_t i = 0; i < n; i++) {
		if (opts[i].sets)
			continue;
		for (size_t k = 0; k < GG_ARRAY_SIZE(candidates); k++)
			shim_rejects(&opts[i], candidates[k]) ? rejected++ : taken++;
	}
	cr_assert_gt(rejected, 50);
	cr_assert_gt(taken, 50);
	cr_assert(shim_rejects(gg_config_option("GPUGUARD_SIGNAL"), "9"));
	cr_assert(shim_rejects(gg_config_option("GPUGUARD_BOUNDARY"), "launch:3,foo"));
	cr_assert(!shim_rejects(gg_config_option("GPUGUARD_BOUNDARY"), "launch:3"));
}

/* gpuguard --help lists every flag of the table with its line of help. */
Test(config, help_lists_every_option_of_the_table)
{
	size_t n;
	const struct gg_option *opts = gg_config_options(&n);
	struct gg_run r;

	gg_run(&r, 0, NULL, (const char *[]){ GG_CLI, "--help", NULL });
	cr_assert_eq(gg_run_exit(&r), 0);
	/* One line of help per option, wrapped: compare with the spaces squeezed. */
	for (char *s = r.out, *o = r.out;; s++) {
		if (isspace((unsigned char)*s)) {
			if (o == r.out || o[-1] != ' ')
				*o++ = ' ';
			continue;
		}
		*o++ = *s;
		if (!*s)
			break;
	}
	for (size_t i = 0; i < n; i++) {
		char line[512];

		snprintf(line, sizeof(line), " %s%s%s %s (%s", opts[i].flag, opts[i].metavar ? " " : "",
			 opts[i].metavar ? opts[i].metavar : "", opts[i].help,
			 opts[i].name + strlen("GPUGUARD_"));
		cr_expect(strstr(r.out, line), "--help lacks \"%s\":\n%s", line, r.out);
		if (opts[i].alias)
			cr_expect(strstr(r.out, opts[i].alias), "%s", opts[i].alias);
	}
	gg_run_free(&r);
}

/* The man page's text between @from and the next ".SH", "\-" read as "-". */
static char *man_section(const char *from)
{
	char path[512], *text, *start, *end, *o;

	snprintf(path, sizeof(path), "%s/docs/gpuguard.1", GG_SOURCE_ROOT);
	text = gg_read_file(path);
	cr_assert_not_null(text);
	start = strstr(text, from);
	cr_assert_not_null(start, "no %s in %s", from, path);
	end = strstr(start + 1, "\n.SH ");
	if (end)
		end[1] = '\0';
	o = text;
	for (const char *s = start; *s; s++) {
		/* "\-" is "-"; "\%" and "\:" (no hyphen, a break point) print nothing. */
		if (s[0] == '\\' && (s[1] == '-' || s[1] == '%' || s[1] == ':')) {
			s += s[1] != '-';
			continue;
		}
		*o++ = *s;
	}
	*o = '\0';
	return text;
}

/* gpuguard(1) documents each variable of the table under ENVIRONMENT, with
 * its default, and each flag under OPTIONS; and no variable the table lacks. */
Test(config, the_man_page_documents_the_table)
{
	size_t n;
	const struct gg_option *opts = gg_config_options(&n);
	char *env = man_section(".SH ENVIRONMENT"), *options = man_section(".SH OPTIONS");

	for (size_t i = 0; i < n; i++) {
		char head[96], *entry, *next;

		snprintf(head, sizeof(head), "\n.B %s\n", opts[i].name);
		entry = strstr(env, head);
		cr_expect(entry, "ENVIRONMENT has no entry %s", opts[i].name);
		if (!entry)
			continue;
		next = strstr(entry + 1, "\n.TP");
		if (next)
			*next = '\0';
		cr_expect(strstr(entry, "Default"), "%s: no default said:%s", opts[i].name, entry);
		if (opts[i].def && *opts[i].def)
			cr_expect(strstr(entry, opts[i].def), "%s: default %s not said:%s",
				  opts[i].name, opts[i].def, entry);
		if (next)
			*next = '\n';
		cr_expect(strstr(options, opts[i].flag), "OPTIONS lacks %s", opts[i].flag);
	}
	/* Every documented GPUGUARD_ variable is one of the table's. */
	for (char *s = env; (s = strstr(s, "\n.B GPUGUARD_")); s++) {
		char name[64];

		sscanf(s + 4, "%63s", name);
		cr_expect(!strcmp(name, "GPUGUARD_*") || gg_config_option(name),
			  "ENVIRONMENT documents %s, which the table lacks", name);
	}
	free(env);
	free(options);
}

/* The expected-absent list's items, as the audit reads them (fuzz/regressions/
 * expected-absent/ holds the input the fuzzer found). */
static int expected_item(const char *text, size_t size, char **pattern, const char **why)
{
	char *copy = malloc(size + 1), *at = copy, *line;
	size_t lineno = 0, len;
	int err = -ENOENT;

	cr_assert(copy);
	memcpy(copy, text, size);
	copy[size] = '\0';
	if ((line = gg_config_list_next(&at, copy + size, &lineno, &len)))
		err = gg_config_expected_pattern(line, len, pattern, why);
	free(copy);
	return err;
}

Test(config, an_expected_absent_line_with_a_nul_byte_is_refused_not_cut_at_it)
{
	/* A NUL first, in the module, in the function, last: each would have
	 * been a shorter pattern ("*::" matches every empty function name). */
	static const struct {
		const char *text;
		size_t size;
	} lines[] = {
#define LINE(s) { s, sizeof(s) - 1 }
		LINE("\0\0## optional kernels\n"),
		LINE("kernels.ptx\0::maybe_fast\n"),
		LINE("kernels.ptx::maybe\0_fast"),
		LINE("maybe_fast\0"),
#undef LINE
	};

	for (size_t i = 0; i < GG_ARRAY_SIZE(lines); i++) {
		char *pattern = NULL;
		const char *why = NULL;

		cr_expect_eq(expected_item(lines[i].text, lines[i].size, &pattern, &why), -EINVAL,
			     "line %zu", i);
		cr_expect_null(pattern, "line %zu: %s", i, pattern);
		cr_expect(why && strstr(why, "NUL byte"), "line %zu: %s", i, why ? why : "(none)");
	}
}

Test(config, expected_absent_items_are_lines_without_blanks_and_comments)
{
	static const char text[] = "# optional\n\n \t \r\n  kernels.ptx::maybe_*  \r\nmore";
	char copy[sizeof(text)], *at = copy, *line, *pattern;
	size_t lineno = 0, len;
	const char *why = NULL;

	memcpy(copy, text, sizeof(text));
	line = gg_config_list_next(&at, copy + sizeof(text) - 1, &lineno, &len);
	cr_assert_str_eq(line, "kernels.ptx::maybe_*");
	cr_expect_eq(len, strlen(line));
	cr_expect_eq(lineno, 4);
	cr_assert_eq(gg_config_expected_pattern(line, len, &pattern, &why), 0);
	cr_expect_str_eq(pattern, "kernels.ptx::maybe_*");
	free(pattern);
	line = gg_config_list_next(&at, copy + sizeof(text) - 1, &lineno, &len);
	cr_assert_str_eq(line, "more");
	cr_assert_eq(gg_config_expected_pattern(line, len, &pattern, &why), 0);
	cr_expect_str_eq(pattern, "*::more", "a bare function is any module's");
	free(pattern);
	cr_expect_null(gg_config_list_next(&at, copy + sizeof(text) - 1, &lineno, &len));
	cr_expect_eq(lineno, 5);
}
