#include "harness.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static bool inherited(const char *kv)
{
	static const char *const drop[] = { "LD_PRELOAD=", "LD_LIBRARY_PATH=", "GPUGUARD_", "FAKECUDA_",
					    "ASAN_OPTIONS=" };

	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		if (!strncmp(kv, drop[i], strlen(drop[i])))
			return false;
	return true;
}

/* The latest buffers handed to a test: a failed assertion ends the test
 * before it frees them, and LeakSanitizer must not add a leak report to the
 * failure. A ring: an entry may point at memory long freed, which is harmless. */
static struct {
	void *p[64];
	unsigned next;
} handed_out;

static void *keep(void *buf)
{
	handed_out.p[handed_out.next++ % (sizeof(handed_out.p) / sizeof(handed_out.p[0]))] = buf;
	return buf;
}

char *gg_read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return NULL;
	do {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 8192;
			buf = realloc(buf, cap + 1);
			cr_assert_not_null(buf);
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	buf[len] = '\0';
	return keep(buf);
}

char *gg_read_metrics(const char *path)
{
	struct gg_run r;
	char *text;

	gg_run(&r, 0, NULL,
	       (const char *[]){ "/bin/sh", "-c",
				 "command -v promtool >/dev/null || { echo 'promtool not found: "
				 "install prometheus (scripts/deps.sh)' >&2; exit 127; }; "
				 "exec promtool check metrics <\"$0\"",
				 path, NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "promtool check metrics %s: %s%s\n%s", path, r.out, r.err,
		     (text = gg_read_file(path)) ? text : "(unreadable)");
	gg_run_free(&r);
	text = gg_read_file(path);
	cr_assert_not_null(text, "%s", path);
	return text;
}

static char *slurp_fd(int fd, size_t *len)
{
	struct stat st;
	char *buf;

	cr_assert_eq(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	cr_assert_not_null(buf);
	keep(buf);
	cr_assert_eq(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
	buf[st.st_size] = '\0';
	*len = (size_t)st.st_size;
	close(fd);
	return buf;
}

static int temp_fd(void)
{
	char path[] = "/tmp/gg-test-XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0, "mkstemp: %s", strerror(errno));
	unlink(path);
	return fd;
}

/* The child's environment: ours, less what the tests set themselves. */
static char **child_env(unsigned flags, const char *const *env)
{
	size_t n = 0, k = 0;
	char **envp;

	while (environ[n])
		n++;
	for (const char *const *e = env; e && *e; e++)
		n++;
	envp = calloc(n + 4, sizeof(*envp));
	cr_assert_not_null(envp);
	for (char **e = environ; *e; e++)
		if (inherited(*e))
			envp[k++] = *e;
	/* A sanitized shim needs the sanitizer runtime first in the process;
	 * leak reports from programs that are not ours would change their stderr. */
	if (flags & GG_RUN_SHIM)
		envp[k++] = "LD_PRELOAD=" GG_PRELOAD_PREFIX GG_SHIM;
	if (GG_PRELOAD_PREFIX[0])
		envp[k++] = "ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0";
	if (flags & GG_RUN_FAKE)
		envp[k++] = "LD_LIBRARY_PATH=" GG_FAKE_DIR;
	for (const char *const *e = env; e && *e; e++)
		envp[k++] = (char *)*e;
	envp[k] = NULL;
	return envp;
}

void gg_spawn(struct gg_spawn *s, unsigned flags, const char *const *env, const char *const *argv)
{
	char **envp = child_env(flags, env);

	s->out_fd = temp_fd();
	s->err_fd = temp_fd();
	fflush(NULL);
	s->pid = fork();
	cr_assert_geq(s->pid, 0);
	if (s->pid == 0) {
		int in = open("/dev/null", O_RDONLY);

		dup2(in, 0);
		dup2(s->out_fd, 1);
		dup2(s->err_fd, 2);
		execve(argv[0], (char *const *)argv, envp);
		dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	free(envp);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

bool gg_spawn_wait_output(struct gg_spawn *s, const char *text, double seconds)
{
	for (int waited = 0; waited < seconds * 1000; waited += 10) {
		struct stat st;
		char buf[65536];
		ssize_t n;

		if (fstat(s->out_fd, &st) == 0 && st.st_size > 0) {
			n = pread(s->out_fd, buf, sizeof(buf) - 1, 0);
			if (n > 0) {
				buf[n] = '\0';
				if (strstr(buf, text))
					return true;
			}
		}
		sleep_ms(10);
	}
	return false;
}

bool gg_wait_file(const char *path, double seconds)
{
	for (int waited = 0; waited < seconds * 1000; waited += 10) {
		if (access(path, F_OK) == 0)
			return true;
		sleep_ms(10);
	}
	return false;
}

void gg_spawn_finish(struct gg_spawn *s, struct gg_run *r)
{
	cr_assert_eq(waitpid(s->pid, &r->status, 0), s->pid);
	r->out = slurp_fd(s->out_fd, &r->out_len);
	r->err = slurp_fd(s->err_fd, &r->err_len);
}

void gg_run(struct gg_run *r, unsigned flags, const char *const *env, const char *const *argv)
{
	struct gg_spawn s;

	gg_spawn(&s, flags, env, argv);
	gg_spawn_finish(&s, r);
}

void gg_run_free(struct gg_run *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

int gg_run_exit(const struct gg_run *r)
{
	if (WIFSIGNALED(r->status))
		return -WTERMSIG(r->status);
	return WEXITSTATUS(r->status);
}

size_t gg_count_errors(const char *text)
{
	return gg_count_lines(text, "] ERROR: ") - gg_count_lines(text, "] ERROR:   ");
}

size_t gg_count_lines(const char *text, const char *needle)
{
	size_t count = 0;

	while (text && *text) {
		const char *eol = strchr(text, '\n');
		size_t len = eol ? (size_t)(eol - text) : strlen(text);
		const char *hit = memmem(text, len, needle, strlen(needle));

		count += hit != NULL;
		text += len + (eol != NULL);
	}
	return count;
}

void gg_replace_all(char *s, const char *from, const char *to)
{
	size_t lf = strlen(from), lt = strlen(to);
	char *hit;

	cr_assert_leq(lt, lf);
	while ((hit = strstr(s, from))) {
		memcpy(hit, to, lt);
		memmove(hit + lt, hit + lf, strlen(hit + lf) + 1);
		s = hit + lt;
	}
}

/* The script behind gg_json and gg_json_file: argv[1] the file, argv[2] the
 * expression, argv[3] the JSON Schema to validate the file against ("" for
 * none). A file that does not validate exits 3, with each error on stderr
 * ("  PATH: MESSAGE"). */
static const char json_script[] =
	"import json, sys\n"
	"j = json.load(open(sys.argv[1], encoding='utf-8'))\n"
	"if sys.argv[3]:\n"
	"    import jsonschema\n"
	"    schema = json.load(open(sys.argv[3], encoding='utf-8'))\n"
	"    jsonschema.Draft202012Validator.check_schema(schema)\n"
	"    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(j),\n"
	"                    key=jsonschema.exceptions.relevance)\n"
	"    if errors:\n"
	"        print('%s does not follow %s:' % (sys.argv[1], sys.argv[3]), file=sys.stderr)\n"
	"        for e in errors:\n"
	"            print('  %s: %s' % (e.json_path, e.message), file=sys.stderr)\n"
	"        sys.exit(3)\n"
	"print(eval(sys.argv[2]))\n";

static char *json_eval(const char *path, const char *expr, const char *schema)
{
	struct gg_run r;
	char *out;

	gg_run(&r, 0, NULL,
	       (const char *[]){ "/usr/bin/python3", "-c", json_script, path, expr, schema, NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s: %s", path, r.err);
	out = keep(strdup(r.out));
	out[strcspn(out, "\n")] = '\0';
	gg_run_free(&r);
	return out;
}

char *gg_json(const char *path, const char *expr)
{
	return json_eval(path, expr, GG_SUMMARY_SCHEMA);
}

char *gg_json_file(const char *path, const char *expr)
{
	return json_eval(path, expr, "");
}

char *gg_summary_invalid(const char *path)
{
	struct gg_run r;
	char *why = NULL;

	gg_run(&r, 0, NULL,
	       (const char *[]){ "/usr/bin/python3", "-c", json_script, path, "''", GG_SUMMARY_SCHEMA,
				 NULL });
	if (gg_run_exit(&r) == 3)
		why = strdup(r.err);
	else
		cr_assert_eq(gg_run_exit(&r), 0, "%s: %s", path, r.err);
	gg_run_free(&r);
	return why;
}

void gg_tmpdir(char *dir, size_t cap)
{
	cr_assert_geq(cap, sizeof("/tmp/gg-test-XXXXXX"));
	strcpy(dir, "/tmp/gg-test-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

/* The directories gg_test_dir made in this process, removed at its exit. */
static struct {
	pid_t owner; /* the process that made them: its children's exit keeps them */
	int n;
	char dirs[64][64];
} test_dirs;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path); /* what cannot be removed is left: the rest still goes */
	return 0;
}

static void remove_tree(const char *dir)
{
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void remove_test_dirs(void)
{
	if (getpid() != test_dirs.owner)
		return;
	for (int i = 0; i < test_dirs.n; i++)
		remove_tree(test_dirs.dirs[i]);
	test_dirs.n = 0;
}

void gg_test_dir(char *dir, size_t cap)
{
	static bool registered;

	if (test_dirs.owner != getpid()) { /* a child's own test dirs start afresh */
		test_dirs.owner = getpid();
		test_dirs.n = 0;
	}
	if (!registered) {
		cr_assert_eq(atexit(remove_test_dirs), 0);
		registered = true;
	}
	cr_assert_lt(test_dirs.n, (int)(sizeof(test_dirs.dirs) / sizeof(test_dirs.dirs[0])),
		     "more test directories than the fixture holds");
	gg_tmpdir(dir, cap);
	snprintf(test_dirs.dirs[test_dirs.n++], sizeof(test_dirs.dirs[0]), "%s", dir);
}

void gg_test_dir_remove(const char *dir)
{
	remove_tree(dir);
	for (int i = 0; i < test_dirs.n; i++) {
		if (!strcmp(test_dirs.dirs[i], dir)) {
			memmove(test_dirs.dirs[i], test_dirs.dirs[--test_dirs.n],
				sizeof(test_dirs.dirs[0]));
			break;
		}
	}
}

int gg_dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d, "%s", dir);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

void gg_app_run(struct gg_app_run *a, const char *app, const char *const *env, const char *const *steps)
{
	const char *argv[32] = { app };
	const char *envp[24];
	char json_env[160];
	size_t n = 1, k = 0;
	unsigned flags = GG_RUN_SHIM | GG_RUN_FAKE;

	gg_test_dir(a->dir, sizeof(a->dir));
	snprintf(a->json, sizeof(a->json), "%s/summary.json", a->dir);
	snprintf(json_env, sizeof(json_env), "GPUGUARD_SUMMARY_JSON=%s", a->json);
	envp[k++] = json_env;
	envp[k++] = "GG_TEST_PTX=" GG_PTX;
	for (; env && *env && k < 23; env++) {
		if (!strncmp(*env, "LD_LIBRARY_PATH=", 16))
			flags &= ~GG_RUN_FAKE; /* another driver than the fake's default */
		envp[k++] = *env;
	}
	envp[k] = NULL;
	for (; *steps && n < 31; steps++)
		argv[n++] = *steps;
	argv[n] = NULL;
	gg_run(&a->r, flags, envp, argv);
}

const char *const gg_route_apps[GG_ROUTES] = { "app-direct", "app-dlsym", "app-procaddr" };

void gg_route_run(struct gg_app_run *a, size_t i, const char *const *env)
{
	char app[256];

	snprintf(app, sizeof(app), "%s/%s", GG_APPS, gg_route_apps[i]);
	gg_app_run(a, app, env, (const char *[]){ GG_PTX, NULL });
}

void gg_app_run_free(struct gg_app_run *a)
{
	gg_test_dir_remove(a->dir);
	gg_run_free(&a->r);
}

char *gg_without_gpuguard_lines(const char *text)
{
	char *out = malloc(strlen(text) + 1), *o = out;

	cr_assert_not_null(out);
	while (*text) {
		const char *eol = strchr(text, '\n');
		size_t len = eol ? (size_t)(eol - text) + 1 : strlen(text);

		if (strncmp(text, "gpuguard[", strlen("gpuguard[")) != 0) {
			memcpy(o, text, len);
			o += len;
		}
		text += len;
	}
	*o = '\0';
	return keep(out);
}
