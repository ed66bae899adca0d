/* The options table (SPEC §2). */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>

#include "config.h"

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
}

Test(config, signals_by_name_number_or_none)
{
	int s = -1;

	cr_assert_eq(gg_config_parse_signal("USR1", &s), 0);
	cr_assert_eq(s, SIGUSR1);
	cr_assert_eq(gg_config_parse_signal("SIGUSR2", &s), 0);
	cr_assert_eq(s, SIGUSR2);
	cr_assert_eq(gg_config_parse_signal("none", &s), 0);
	cr_assert_eq(s, 0);
	cr_assert_eq(gg_config_parse_signal("34", &s), 0);
	cr_assert_eq(s, 34);
	cr_assert_eq(gg_config_parse_signal("9", &s), -EINVAL, "SIGKILL cannot be caught");
	cr_assert_eq(gg_config_parse_signal("USR3", &s), -EINVAL);
	cr_assert_eq(gg_config_parse_signal("0", &s), -EINVAL);
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

Test(config, disable_is_read_on_its_own)
{
	setenv("GPUGUARD_DISABLE", "1", 1);
	cr_assert_eq(gg_config_disabled_in_env(), true);
	setenv("GPUGUARD_DISABLE", "0", 1);
	cr_assert_eq(gg_config_disabled_in_env(), false);
}
