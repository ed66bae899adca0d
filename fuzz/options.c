/* Fuzz target: the options and environment parsers (shim/options/config.c).
 * Each line of the input is an environment entry, NAME=VALUE; each entry's
 * value goes through every option's parser (so every parser kind of
 * config.def sees every value), and the entries as a whole are the
 * environment that the shim's set-up reads. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "options/config.h"
#include "fuzz.h"

#define ENTRIES 64

extern char **environ;

static void bad_item(void *arg, const char *item, const char *why)
{
	unsigned *n = arg;

	if (!item || !why || !*why)
		abort();
	(void)strlen(item);
	++*n;
}

static void check_value(const char *value)
{
	size_t nopts;
	const struct gg_option *opts = gg_config_options(&nopts);
	struct gg_boundary_events ev;
	unsigned nbad = 0;
	uint64_t v;
	int sig;
	const char *why = NULL;

	for (size_t i = 0; i < nopts; i++) {
		int err = gg_config_check(&opts[i], value, &why);

		if (err && err != -EINVAL && err != -ERANGE && err != -ENAMETOOLONG)
			abort();
		if (why)
			(void)strlen(why);
	}
	(void)gg_config_parse_u64(value, &v);
	(void)gg_config_parse_size(value, &v);
	if (gg_config_parse_signal(value, &sig, &why) == 0 && (sig < 0 || sig >= NSIG))
		abort();
	if (gg_config_parse_boundary(value, &ev, bad_item, &nbad) == 0 && nbad)
		abort();
	if (ev.nlaunch > 16 || ev.nsync > 16 || ev.nafter > 16)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gg_config cfg;
	struct gg_config_problem problems[GG_CONFIG_MAX_OPTIONS];
	struct gg_config_unknown u = { 0 };
	char *text = malloc(size + 1), *env[ENTRIES + 1], **saved = environ;
	size_t n = 0;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (char *line = text, *end; n < ENTRIES && line < text + size; line = end + 1) {
		end = memchr(line, '\n', (size_t)(text + size - line));
		if (!end)
			end = text + size;
		*end = '\0';
		env[n++] = line;
		check_value(strchr(line, '=') ? strchr(line, '=') + 1 : line);
	}
	env[n] = NULL;
	environ = env;
	(void)gg_config_disabled_in_env();
	gg_config_load(&cfg);
	unsigned np = gg_config_problems(problems, GG_CONFIG_MAX_OPTIONS);
	for (unsigned i = 0; i < np; i++)
		if (!problems[i].name || !problems[i].value || !problems[i].accepts)
			abort();
	while (gg_config_next_unknown(&u))
		if (strlen(u.name) >= sizeof(u.name))
			abort();
	environ = saved;
	free(text);
	return 0;
}
