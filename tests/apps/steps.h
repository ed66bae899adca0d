/* The test apps' steps (app-audit, app-redzone): each app lists its step
 * verbs once, as a table of rows (name, the shape of its arguments, or NULL
 * for none); app_find_step() finds a command-line step's row. */
#ifndef GG_TESTS_APPS_STEPS_H
#define GG_TESTS_APPS_STEPS_H

#include <stdio.h>
#include <string.h>

/* A step: a function of its own, inlined into main, so the stacks the tests
 * read show main as before. */
#define APP_STEP static inline __attribute__((always_inline)) int

/* The rows of an app's STEPS(X) list (X(name, shape, function)). */
#define APP_STEP_ROW(name, shape, fn) { name, shape },

/* In main: the function of step @row run with @args into @rc (64 for no
 * row), an if-else chain over STEPS, so each step is inlined there. */
#define APP_STEP_CALL(name, shape, fn) \
	if (row == n_++)               \
		rc = fn(&args);        \
	else
#define APP_RUN_STEP(STEPS)                   \
	do {                                  \
		int n_ = 0;                   \
		STEPS(APP_STEP_CALL) rc = 64; \
	} while (0)

struct app_step_row {
	const char *name;
	const char *shape; /* "N:K", "PATH"...; NULL: the step takes no argument */
};

/* The row of @arg ("name" or "name:arguments") among the @n @rows, *@text set
 * to its arguments (the empty string for none); -1, said on stderr as @app's,
 * when it names no step or is not written as its row's shape says. */
static inline int app_find_step(const char *app, const struct app_step_row *rows, size_t n, char *arg,
				char **text)
{
	char *colon = strchr(arg, ':');
	size_t len = colon ? (size_t)(colon - arg) : strlen(arg);

	*text = colon ? colon + 1 : arg + len;
	for (size_t i = 0; i < n; i++) {
		const struct app_step_row *s = &rows[i];

		if (strlen(s->name) != len || strncmp(arg, s->name, len))
			continue;
		if (!s->shape == !colon)
			return (int)i;
		fprintf(stderr, "%s: step '%s' is written %s%s%s\n", app, arg, s->name,
			s->shape ? ":" : "", s->shape ? s->shape : "");
		return -1;
	}
	fprintf(stderr, "%s: unknown step '%s'\n", app, arg);
	return -1;
}

#endif
