/* Integration-test helpers: run a program with LD_PRELOAD set in that child
 * only, capture its stdout, stderr and exit status. */
#ifndef GG_TESTS_HARNESS_H
#define GG_TESTS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>

enum {
	GG_RUN_SHIM = 1 << 0, /* LD_PRELOAD=libgpuguard.so */
	GG_RUN_FAKE = 1 << 1, /* LD_LIBRARY_PATH holds the fake libcuda.so.1 */
};

struct gg_run {
	int status; /* as from waitpid() */
	char *out;  /* stdout, NUL-terminated */
	size_t out_len;
	char *err; /* stderr, NUL-terminated */
	size_t err_len;
};

/* Run @argv (argv[0] a path) with the test's environment, minus any
 * LD_PRELOAD, LD_LIBRARY_PATH, GPUGUARD_* and FAKECUDA_*, plus @env
 * ("NAME=value", NULL-terminated, may be NULL). Aborts the test on failure
 * to start it. */
void gg_run(struct gg_run *r, unsigned flags, const char *const *env, const char *const *argv);
void gg_run_free(struct gg_run *r);

/* The same, in the background: start it, then wait for its stdout to hold
 * @text (gg_spawn_wait_output), then gg_spawn_finish() collects it. */
struct gg_spawn {
	int pid;
	int out_fd, err_fd;
};
void gg_spawn(struct gg_spawn *s, unsigned flags, const char *const *env, const char *const *argv);
/* True once the child's stdout holds @text; false after @seconds. */
bool gg_spawn_wait_output(struct gg_spawn *s, const char *text, double seconds);
void gg_spawn_finish(struct gg_spawn *s, struct gg_run *r);

/* True once @path exists; false after @seconds. */
bool gg_wait_file(const char *path, double seconds);

/* Exit code, or -signal when the child died of a signal. */
int gg_run_exit(const struct gg_run *r);

/* Lines of @text that contain @needle. */
size_t gg_count_lines(const char *text, const char *needle);

/* The findings a gpuguard log names: its "] ERROR: " lines, less the lines
 * of their stacks, indented under them ("] ERROR:   "). */
size_t gg_count_errors(const char *text);

/* A file's contents, NUL-terminated (NULL if unreadable). Free with free(). */
char *gg_read_file(const char *path);

/* A metrics file's contents, as gg_read_file(), once `promtool check
 * metrics` (Debian's prometheus package) has accepted it: the test fails
 * when promtool complains about it, cannot read it, or is missing. */
char *gg_read_metrics(const char *path);

/* The JSON Schema of the summary (docs/summary.schema.json). */
#define GG_SUMMARY_SCHEMA GG_SOURCE_ROOT "/docs/summary.schema.json"

/* Evaluate the Python expression @expr over the JSON summary @path (bound to
 * `j`) and return what it prints, without the newline. Fails the test when
 * the file is missing, is not valid JSON or does not validate against
 * GG_SUMMARY_SCHEMA (the message names each error). Free with free(). */
char *gg_json(const char *path, const char *expr);

/* gg_json for a JSON file that is not a summary: no schema. */
char *gg_json_file(const char *path, const char *expr);

/* Why the summary @path does not validate against GG_SUMMARY_SCHEMA, NULL
 * when it does. Fails the test when it is not JSON. Free with free(). */
char *gg_summary_invalid(const char *path);

/* One run of a test app under the shim and the fake driver, with its JSON
 * summary in a fresh directory (@json), the kernels' PTX in GG_TEST_PTX, and
 * @env (may be NULL) and @steps (NULL-terminated) added. An LD_LIBRARY_PATH
 * in @env names another driver (GG_FAKE_12_3_DIR). */
struct gg_app_run {
	struct gg_run r;
	char dir[64];
	char json[128];
};
void gg_app_run(struct gg_app_run *a, const char *app, const char *const *env,
		const char *const *steps);

/* The test apps of the three routes to the driver (direct link, dlsym,
 * cuGetProcAddress), each running tests/apps/scenario.c's steps. */
#define GG_ROUTES 3
extern const char *const gg_route_apps[GG_ROUTES];

/* gg_app_run() of route @i's app, given @env and the kernels' PTX. */
void gg_route_run(struct gg_app_run *a, size_t i, const char *const *env);
/* Free the run and remove its directory. */
void gg_app_run_free(struct gg_app_run *a);

/* A fresh temporary directory, and a path inside it; the caller removes it
 * (gg_test_dir removes its own). */
void gg_tmpdir(char *dir, size_t cap);

/* The tests' temporary-directory fixture: a fresh directory under /tmp in
 * @dir, removed with all it holds when the test's process ends, whether the
 * test passed or an assertion failed (Criterion ends a failed test through
 * exit, which runs the removal); only a crashed test leaves it behind. A
 * process the test forked removes nothing. */
void gg_test_dir(char *dir, size_t cap);
/* Removes @dir, made by gg_test_dir, now rather than at the end. */
void gg_test_dir_remove(const char *dir);

/* How many entries @dir holds, "." and ".." aside. */
int gg_dir_entries(const char *dir);

/* @text without its lines that start with "gpuguard[": what a program
 * printed itself (malloc'd). */
char *gg_without_gpuguard_lines(const char *text);

/* Replace every occurrence of @from in @s (in place; @to no longer than @from). */
void gg_replace_all(char *s, const char *from, const char *to);

#endif
