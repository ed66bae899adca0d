/* The human log (docs/how-it-works.md, "What the shim does"). One descriptor, one write(2)
 * per line. */
#include "report/report.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "options/config.h"
#include "report/errlines.h"
#include "report/sink.h"

#define LINE_MAX_BYTES 2048
/* A site's text, with the outer frames of one inside a stripped runtime. */
#define SITE_TEXT_MAX LINE_MAX_BYTES

/* LEVEL_SETTING: a WARN about the configuration, printed at every verbosity
 * because it changes what is checked (README, "Settings"). */
enum level {
	LEVEL_ERROR,
	LEVEL_WARN,
	LEVEL_INFO,
	LEVEL_TRACE,
	LEVEL_SETTING
};

/* "1 kernel", "2 kernels": the word that goes with @n. */
static const char *plural(unsigned long long n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* Written by gg_report_open() under the set-up's pthread_once, and by the
 * fork child handler while the child is single-threaded; read-only otherwise. */
static struct {
	/* The log's descriptor. Until set-up, fd 2; set-up decides it once
	 * (docs/gpuguard.1, "ENVIRONMENT": GPUGUARD_LOG): a duplicate of fd 2
	 * or the log file, close-on-exec and moved up to LOG_FD_MIN, away from
	 * the low numbers a program closes and reuses; -1 when there is nowhere
	 * to log (fd 2 was closed at set-up). */
	int fd;
	bool decided; /* set-up decided @fd: check it before each write */
	dev_t dev;    /* what @fd was when decided: a descriptor the */
	ino_t ino;    /* program closed and reused is never written */
	int verbosity;
	char pattern[PATH_MAX]; /* GPUGUARD_LOG as given, for reopening after fork */
	/* What fd 2 was when the shim was loaded, before the program ran
	 * (gg_report_note_stderr): written then, read by set-up. */
	bool stderr_open;
	dev_t stderr_dev;
	ino_t stderr_ino;
	/* Lines that had nowhere to go (never silently blind: the JSON says how
	 * many, and why): relaxed; @lost_why a static text, set by set-up or by
	 * the first line lost to a descriptor the program closed. */
	atomic_uint_least64_t lines_lost;
	const char *_Atomic lost_why;
} report_state = { .fd = 2, .verbosity = 1 };

void gg_report_note_stderr(void)
{
	struct stat st;

	report_state.stderr_open = fstat(STDERR_FILENO, &st) == 0;
	if (report_state.stderr_open) {
		report_state.stderr_dev = st.st_dev;
		report_state.stderr_ino = st.st_ino;
	}
}

/* Only a look at fd 2, at load time: no descriptor is added, nothing is
 * written, in a process that never calls a hook. */
__attribute__((constructor)) static void note_stderr_at_load(void)
{
	gg_report_note_stderr();
}

/* fd 2 now, if it is still what it was at load time; else -1: a program
 * that closed it (or was started without it) and opened a file of its own
 * there before its first hooked call never gets gpuguard's lines in it. */
static int stderr_as_loaded(void)
{
	struct stat st;

	if (!report_state.stderr_open || fstat(STDERR_FILENO, &st) ||
	    st.st_dev != report_state.stderr_dev || st.st_ino != report_state.stderr_ino)
		return -1;
	return STDERR_FILENO;
}

/* Where the log's descriptor is moved to: above what programs use by number. */
#define LOG_FD_MIN 100

#define LOG_IS_STDOUT 1 /* open_log()'s *err for a file that is the program's stdout */

/* A close-on-exec duplicate of @fd at LOG_FD_MIN or above (lower when the
 * descriptor limit is lower), or -1. */
static int high_dup(int fd)
{
	int high = fcntl(fd, F_DUPFD_CLOEXEC, LOG_FD_MIN);

	return high >= 0 || errno != EINVAL ? high : fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

/* Whether @fd is the file stderr goes to as well: the default log is there,
 * so a log file that is stdout's (2>&1, a terminal) is refused only when it
 * is not also stderr's. */
static bool is_stderr(int fd)
{
	struct stat a, e;

	return fstat(fd, &a) == 0 && fstat(STDERR_FILENO, &e) == 0 && e.st_dev == a.st_dev &&
	       e.st_ino == a.st_ino;
}

/* The log file of @pattern, moved high (high_dup); never the program's stdout
 * (docs/gpuguard.1, "ENVIRONMENT": GPUGUARD_LOG). Opening it never blocks: a
 * FIFO with no reader fails. */
static int open_log(const char *pattern, int *err)
{
	char path[PATH_MAX];
	int fd, high;

	*err = gg_report_expand_path(pattern, (int)getpid(), path, sizeof(path));
	if (*err)
		return -1;
	fd = gg_report_open_output(path, O_CREAT | O_APPEND, true);
	if (fd < 0) {
		*err = fd;
		return -1;
	}
	/* Opened at the lowest free number, perhaps 2 itself: moved up and that
	 * number given back to the program. */
	high = high_dup(fd);
	*err = high < 0 ? -errno : 0;
	close(fd);
	if (high >= 0 && gg_report_is_stdout(high) && !is_stderr(high)) {
		close(high);
		*err = LOG_IS_STDOUT;
		return -1;
	}
	return high;
}

/* Make @fd (-1: none) the log's descriptor, and remember what it is. */
static void adopt(int fd)
{
	struct stat st;
	int old = report_state.fd;

	if (fd >= 0 && fstat(fd, &st)) {
		close(fd);
		fd = -1;
	}
	report_state.fd = fd;
	if (fd >= 0) {
		report_state.dev = st.st_dev;
		report_state.ino = st.st_ino;
	}
	if (report_state.decided && old >= 0 && old != fd)
		close(old);
	report_state.decided = true;
}

/* The log's descriptor if it is still the one decided at set-up, else -1. */
static int log_fd(void)
{
	struct stat st;
	int fd = report_state.fd;

	if (fd < 0 || !report_state.decided)
		return fd;
	if (fstat(fd, &st) || st.st_dev != report_state.dev || st.st_ino != report_state.ino)
		return -1; /* closed by the program, perhaps reused: nowhere to say it */
	return fd;
}

static void write_all(const char *buf, size_t len)
{
	int fd = log_fd();
	const char *none = NULL;

	if (fd >= 0) {
		(void)gg_report_write_all(fd, buf, len);
		return;
	}
	atomic_fetch_add_explicit(&report_state.lines_lost, 1, memory_order_relaxed);
	atomic_compare_exchange_strong(&report_state.lost_why, &none,
				       "the log's descriptor was closed, or made another file, by "
				       "the program");
}

uint64_t gg_report_log_lost(const char **why)
{
	*why = atomic_load(&report_state.lost_why);
	return atomic_load_explicit(&report_state.lines_lost, memory_order_relaxed);
}

GG_PRINTF(2, 0) static void vlog(enum level lvl, const char *fmt, va_list ap)
{
	static const char *const names[] = { "ERROR", "WARN", "INFO", "INFO", "WARN" };
	char line[LINE_MAX_BYTES];
	int saved_errno = errno;
	int n, m;

	if ((lvl == LEVEL_WARN || lvl == LEVEL_INFO) && report_state.verbosity < 1)
		return;
	if (lvl == LEVEL_TRACE && report_state.verbosity < 2)
		return;
	n = snprintf(line, sizeof(line), "gpuguard[%d] %s: ", (int)getpid(), names[lvl]);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	if (m < 0)
		m = 0;
	if ((size_t)(n + m) >= sizeof(line) - 1) {
		/* Truncated: say so rather than cut silently. */
		n = (int)sizeof(line) - 5;
		memcpy(line + n, "...", 3);
		n += 3;
	} else {
		n += m;
	}
	line[n++] = '\n';
	write_all(line, (size_t)n);
	if (lvl == LEVEL_ERROR) /* for the next labelled boundary (errlines.h) */
		gg_report_errlines_add(line, (size_t)n);
	errno = saved_errno;
}

#define DEFINE_LOG(fn, lvl)           \
	void fn(const char *fmt, ...) \
	{                             \
		va_list ap;           \
		va_start(ap, fmt);    \
		vlog(lvl, fmt, ap);   \
		va_end(ap);           \
	}

DEFINE_LOG(gg_report_error, LEVEL_ERROR)
DEFINE_LOG(gg_report_warn, LEVEL_WARN)
DEFINE_LOG(gg_report_setting, LEVEL_SETTING)
DEFINE_LOG(gg_report_info, LEVEL_INFO)
DEFINE_LOG(gg_report_trace, LEVEL_TRACE)

int gg_report_tracing(void)
{
	return report_state.verbosity >= 2;
}

/* Copy @s into @out as a printable, quoted-safe string: bytes outside
 * printable ASCII, quotes and backslashes become \xHH. */
static const char *printable(const char *s, char *out, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (!s)
		return "(null)";
	for (; *s && o + 5 < cap; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			out[o++] = (char)c;
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	if (*s && o + 4 <= cap) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
	return out;
}

/* Why no output can be written at @pattern (%p = this pid), the log (@log)
 * or a report file: "the directory "out" does not exist", say; NULL when one
 * can. Into @out. */
static const char *unusable(const char *pattern, bool log, char *out, size_t cap)
{
	char path[PATH_MAX], culprit[PATH_MAX], shown[256], why[256];
	int err;

	if (gg_report_expand_path(pattern, (int)getpid(), path, sizeof(path))) {
		snprintf(out, cap, "the path is longer than %d bytes", PATH_MAX - 1);
		return out;
	}
	if (!(err = gg_report_check_output(path, log, culprit, sizeof(culprit))))
		return NULL;
	printable(culprit, shown, sizeof(shown));
	if (err == -ENOENT)
		snprintf(out, cap, "the directory \"%s\" does not exist", shown);
	else if (err == -EISDIR)
		snprintf(out, cap, "\"%s\" is a directory", shown);
	else if (err == -ENXIO || err == -ENOTSUP || err == -ELOOP)
		snprintf(out, cap, "%s", gg_report_output_why(path, err, log, why, sizeof(why)));
	else if (!strcmp(culprit, path)) /* a device, written in place */
		snprintf(out, cap, "\"%s\" cannot be written: %s", shown, strerror(-err));
	else
		snprintf(out, cap, "no file can be created in \"%s\": %s", shown, strerror(-err));
	return out;
}

void gg_report_open(const struct gg_config *cfg)
{
	char why[512], shown[256], path[PATH_MAX];
	int err = 0, fd;

	report_state.verbosity = cfg->verbosity;
	if (cfg->log[0]) {
		snprintf(report_state.pattern, sizeof(report_state.pattern), "%s", cfg->log);
		if ((fd = open_log(cfg->log, &err)) >= 0) {
			adopt(fd);
			return;
		}
	}
	/* stderr as it was when the shim was loaded, whatever the program makes
	 * of fd 2 later; nowhere when it was closed or has since become another
	 * file (the program's own, or a freopen of stderr), rather than into it. */
	if (stderr_as_loaded() < 0) {
		adopt(-1);
		atomic_store(&report_state.lost_why,
			     "fd 2 was closed, or was another file, at the first hooked call than when "
			     "the program started; GPUGUARD_LOG names a file for the log");
	} else {
		adopt(high_dup(STDERR_FILENO));
	}
	if (!err)
		return;
	if (err == LOG_IS_STDOUT)
		snprintf(why, sizeof(why), "it is the program's stdout, where gpuguard never writes");
	else if (!unusable(cfg->log, true, why, sizeof(why)))
		snprintf(why, sizeof(why), "%s",
			 gg_report_expand_path(cfg->log, (int)getpid(), path, sizeof(path))
				 ? strerror(-err)
				 : gg_report_output_why(path, err, true, shown, sizeof(shown)));
	gg_report_error("GPUGUARD_LOG=\"%s\": %s; logging to stderr",
			printable(cfg->log, shown, sizeof(shown)), why);
}

void gg_report_check_files(const struct gg_config *cfg)
{
	static const struct {
		const char *var;
		size_t off;
		const char *what;
	} files[] = {
		{ "GPUGUARD_SUMMARY_JSON", offsetof(struct gg_config, summary_json), "JSON summary" },
		{ "GPUGUARD_METRICS", offsetof(struct gg_config, metrics), "metrics" },
	};
	char why[512], shown[256];

	for (size_t i = 0; i < GG_ARRAY_SIZE(files); i++) {
		const char *pattern = (const char *)cfg + files[i].off;

		if (pattern[0] && unusable(pattern, false, why, sizeof(why)))
			gg_report_error("%s=\"%s\": %s; the %s cannot be written there until that "
					"changes",
					files[i].var, printable(pattern, shown, sizeof(shown)), why,
					files[i].what);
	}
}

void gg_report_atfork_child(void)
{
	int err, fd;

	atomic_store_explicit(&report_state.lines_lost, 0, memory_order_relaxed); /* the parent's */
	if (!strstr(report_state.pattern, "%p"))
		return;
	fd = open_log(report_state.pattern, &err);
	if (fd < 0)
		return; /* keep the parent's log rather than lose the child's lines */
	adopt(fd);
}

void gg_report_lookup(const char *api, const void *module, const char *name, const char *rc_name)
{
	char buf[256];

	if (report_state.verbosity < 2)
		return;
	gg_report_trace("%s(module %p, \"%s\") -> %s", api, module, printable(name, buf, sizeof(buf)),
			rc_name);
}

void gg_report_alloc(const char *api, uint64_t index, size_t bytes, size_t pad, size_t slack,
		     uint64_t ptr, const char *rc_name)
{
	if (report_state.verbosity < 2) /* before the variadic call's set-up */
		return;
	if (pad && slack)
		gg_report_trace("%s(%zu %s) #%llu -> %s 0x%llx, red zone of %zu bytes and %zu to the "
				"next 256-byte boundary",
				api, bytes, plural(bytes, "byte", "bytes"), (unsigned long long)index,
				rc_name, (unsigned long long)ptr, pad, slack);
	else if (pad)
		gg_report_trace("%s(%zu %s) #%llu -> %s 0x%llx, red zone of %zu bytes", api, bytes,
				plural(bytes, "byte", "bytes"), (unsigned long long)index, rc_name,
				(unsigned long long)ptr, pad);
	else
		gg_report_trace("%s(%zu %s) #%llu -> %s 0x%llx", api, bytes,
				plural(bytes, "byte", "bytes"), (unsigned long long)index, rc_name,
				(unsigned long long)ptr);
}

void gg_report_free(const char *api, uint64_t ptr, const char *rc_name)
{
	if (report_state.verbosity < 2)
		return;
	gg_report_trace("%s(0x%llx) -> %s", api, (unsigned long long)ptr, rc_name);
}

void gg_report_calls(const char *const *names, const unsigned long *counts, unsigned n)
{
	char line[LINE_MAX_BYTES - 64];
	size_t o = 0;
	unsigned long total = 0;

	if (report_state.verbosity < 2)
		return;
	line[0] = '\0';
	for (unsigned i = 0; i < n; i++) {
		if (!counts[i])
			continue;
		total += counts[i];
		int w = snprintf(line + o, sizeof(line) - o, "%s%s %lu", o ? ", " : "", names[i],
				 counts[i]);
		if (w < 0 || (size_t)w >= sizeof(line) - o)
			break;
		o += (size_t)w;
	}
	gg_report_trace("intercepted %lu %s: %s", total, plural(total, "call", "calls"), line);
}

void gg_report_bad_value(const char *var, const char *value, const char *why, const char *accepts)
{
	char buf[128];

	gg_report_setting("%s=\"%s\" is not valid (%s%sexpected %s); using the default", var,
			  printable(value, buf, sizeof(buf)), why ? why : "", why ? "; " : "", accepts);
}

const char *gg_report_reason_name(enum gg_report_reason r)
{
	static const char *const names[] = {
#define GG_REASON_NAME(name) #name,
		GG_REPORT_REASONS(GG_REASON_NAME)
#undef GG_REASON_NAME
	};

	return (unsigned)r < GG_REASON_COUNT ? names[r] : "?";
}

const char *gg_report_unchecked_name(enum gg_report_unchecked u)
{
	static const char *const names[] = {
#define GG_UNCHECKED_NAME(name) #name,
		GG_REPORT_UNCHECKED(GG_UNCHECKED_NAME)
#undef GG_UNCHECKED_NAME
	};

	return (unsigned)u < GG_UNCHECKED_COUNT ? names[u] : "?";
}

/* "SYMBOL+0xOFF (OBJECT+0xOFF)", "OBJECT+0xOFF" or "an unknown frame". */
static const char *site_text(uintptr_t address, const char *object, uintptr_t offset,
			     const char *symbol, uintptr_t symbol_offset, char *out, size_t cap)
{
	const char *base = object ? strrchr(object, '/') : NULL;

	base = base ? base + 1 : object;
	if (!address)
		snprintf(out, cap, "an unknown frame");
	else if (!base || !*base)
		snprintf(out, cap, "0x%llx", (unsigned long long)address);
	else if (symbol)
		snprintf(out, cap, "%s+0x%llx (%s+0x%llx)", symbol, (unsigned long long)symbol_offset,
			 base, (unsigned long long)offset);
	else
		snprintf(out, cap, "%s+0x%llx", base, (unsigned long long)offset);
	return out;
}

/* After the text of a site inside a stripped executable's statically linked
 * runtime, what says so and the frames outward of it, from which gpuguard
 * symbolize and an unstripped copy name the application's frame. Whole
 * frames only, and the bracket always closed: a cut list names nothing. */
static void append_outer(const struct gg_report_site *rs, char *out, size_t cap)
{
	static const char head[] = " [inside the statically linked CUDA runtime";
	size_t len = strlen(out);

	if (!rs->in_static_runtime || len + sizeof(head) + 1 > cap)
		return;
	memcpy(out + len, head, sizeof(head));
	len += sizeof(head) - 1;
	for (unsigned i = 0; i < rs->nouter && i < GG_REPORT_OUTER; i++) {
		const char *sep = i ? " < " : "; called from ";
		const struct gg_site *s = &rs->outer[i];
		char one[320];
		size_t n;

		site_text(s->address, s->object, s->offset, s->symbol, s->symbol_offset, one,
			  sizeof(one));
		n = strlen(sep) + strlen(one);
		if (len + n + 2 > cap)
			break;
		snprintf(out + len, cap - len, "%s%s", sep, one);
		len += n;
	}
	memcpy(out + len, "]", 2);
}

/* The text of a whole site: its frame, and its outer frames when it lies
 * inside a stripped runtime. */
static const char *whole_site_text(const struct gg_report_site *rs, char *out, size_t cap)
{
	const struct gg_site *at = &rs->at;

	site_text(at->address, at->object, at->offset, at->symbol, at->symbol_offset, out, cap);
	append_outer(rs, out, cap);
	return out;
}

void gg_report_expected_unreadable(const char *path, const char *reason)
{
	char buf[256];

	gg_report_error("GPUGUARD_EXPECTED_ABSENT: cannot read \"%s\": %s; no lookup is expected "
			"absent",
			printable(path, buf, sizeof(buf)), reason);
}

void gg_report_unknown_variable(const char *var, const char *nearest)
{
	char v[96], n[96];

	if (nearest)
		gg_report_setting("%s is not a gpuguard variable; it is ignored (did you mean %s? the "
				  "variables are listed in gpuguard(1), ENVIRONMENT)",
				  printable(var, v, sizeof(v)), printable(nearest, n, sizeof(n)));
	else
		gg_report_setting("%s is not a gpuguard variable; it is ignored (the variables are "
				  "listed in gpuguard(1), ENVIRONMENT)",
				  printable(var, v, sizeof(v)));
}

void gg_report_bad_item(const char *var, const char *value, const char *item, const char *why)
{
	char v[128], i[64];

	gg_report_setting("%s=\"%s\": \"%s\" is not valid (%s); it is ignored", var,
			  printable(value, v, sizeof(v)), printable(item, i, sizeof(i)), why);
}

/* Seal table rows: "  REQUIRED  MODULE::FUNCTION  Nx", then one "Nx RESULT at
 * SITE" line per call site. Every line fits 100 columns whatever the pid
 * (7 digits): names and sites are cut with "..."; the JSON has them whole. */
#define TABLE_WIDTH (100 - (int)sizeof("gpuguard[4194304] INFO: ") + 1)

static void cut(char *s, size_t width)
{
	if (strlen(s) > width && width > 3)
		memcpy(s + width - 3, "...", 4);
}

static void seal_row(void *ctx, const struct gg_report_row *r)
{
	char name[2 * 128 + 3], m[128], f[128], head[64], site[SITE_TEXT_MAX];

	(void)ctx;
	if (r->site_index == 0) {
		int count = snprintf(head, sizeof(head), "  %llux", (unsigned long long)r->pair_failed);

		snprintf(name, sizeof(name), "%s::%s", printable(r->module, m, sizeof(m)),
			 printable(r->function, f, sizeof(f)));
		cut(name, (size_t)(TABLE_WIDTH - 12 - count));
		gg_report_info("  %-8s  %s%s", r->expected_absent ? "expected" : "REQUIRED", name,
			       head);
	}
	if (!r->site.at.address && !r->count)
		return;
	int lead = snprintf(head, sizeof(head), "            %llux %s at ",
			    (unsigned long long)r->count, r->result ? r->result : "?");

	/* A site inside a stripped runtime keeps its outer frames whole, past the
	 * table's width: cut, they could not name the application's frame. */
	whole_site_text(&r->site, site, sizeof(site));
	if (!r->site.in_static_runtime)
		cut(site, lead < TABLE_WIDTH - 16 ? (size_t)(TABLE_WIDTH - lead) : 16);
	gg_report_info("%s%s", head, site);
}

static void unresolved_at_exit_row(void *ctx, const struct gg_report_row *r)
{
	char m[128], f[128], site[SITE_TEXT_MAX];
	unsigned *named = ctx;
	const struct gg_site *at = &r->site.at;

	if (r->expected_absent || r->site_index != 0)
		return;
	site_text(at->address, at->object, at->offset, at->symbol, at->symbol_offset, site,
		  sizeof(site));
	/* MODULE::* is the module itself: its load failed
	 * (docs/how-it-works.md, "The kernel-lookup audit and the gate"). */
	if (!strcmp(r->function, "*"))
		gg_report_error("required module never loaded: %s (%llu failed %s, %s) at %s",
				printable(r->module, m, sizeof(m)), (unsigned long long)r->pair_failed,
				plural(r->pair_failed, "load", "loads"), r->result ? r->result : "?",
				site);
	else
		gg_report_error(
			"required kernel never resolved: %s::%s (%llu failed %s, %s) at %s",
			printable(r->module, m, sizeof(m)), printable(r->function, f, sizeof(f)),
			(unsigned long long)r->pair_failed, plural(r->pair_failed, "lookup", "lookups"),
			r->result ? r->result : "?", site);
	(*named)++;
}

void gg_report_unresolved_at_exit(const struct gg_report_figures *f)
{
	uint64_t errors = f->audit_errors;
	unsigned named = 0;

	/* Errors of the audit left at exit were never an ERROR line before: none
	 * was sealed, or the gate and late misses only warned (ALLOW_UNRESOLVED);
	 * without it they aborted. */
	if (!errors)
		return;
	f->rows(unresolved_at_exit_row, &named);
	if (!named)
		gg_report_error("%llu kernel lookup %s allowed by GPUGUARD_ALLOW_UNRESOLVED (gate "
				"failures and late misses, resolved since; see the seal tables)",
				(unsigned long long)errors, plural(errors, "error", "errors"));
}

/* The seal table's "cannot run here" section: a module whose image carries
 * nothing the device runs (image preflight). */
static void cannot_run_row(void *ctx, const struct gg_report_module *m)
{
	char name[128], archs[160] = "", site[SITE_TEXT_MAX];
	size_t o = 0;
	unsigned *n = ctx;

	if (m->runs_here != 0)
		return;
	if (!(*n)++)
		gg_report_info("  cannot run here (no code for this GPU):");
	for (unsigned i = 0; i < m->narchs && o < sizeof(archs); i++)
		o += (size_t)snprintf(archs + o, sizeof(archs) - o, "%s%s", i ? ", " : "", m->archs[i]);
	printable(m->name, name, sizeof(name));
	gg_report_info("    %s (%s; device sm_%u), %s at %s", name, archs, m->cc,
		       m->loaded   ? "loaded"
		       : m->result ? m->result
				   : "not loaded",
		       whole_site_text(&m->site, site, sizeof(site)));
}

void gg_report_seal_table(uint64_t seal, const char *why, const struct gg_report_audit *s,
			  gg_report_rows_fn *rows, gg_report_modules_fn *modules)
{
	unsigned cannot_run = 0;

	if (report_state.verbosity < 1)
		return;
	/* Every line of the table fits 100 columns, whatever the pid. */
	gg_report_info("seal %llu (%s): %llu %s: %llu resolved, %llu missing (%llu expected "
		       "absent)",
		       (unsigned long long)seal, why, (unsigned long long)s->pairs,
		       plural(s->pairs, "kernel", "kernels"), (unsigned long long)s->resolved,
		       (unsigned long long)(s->unresolved_required + s->unresolved_expected),
		       (unsigned long long)s->unresolved_expected);
	rows(seal_row, NULL);
	modules(cannot_run_row, &cannot_run);
}

void gg_report_cannot_run(const char *module, const char *archs, unsigned cc)
{
	char m[128];

	gg_report_warn("module %s carries %s; the device is sm_%u: nothing in it can run here, "
		       "its kernels will fail at their first use",
		       printable(module, m, sizeof(m)), archs, cc);
}

void gg_report_halting(void)
{
	gg_report_error("halting at the first error (GPUGUARD_HALT_ON_ERROR=1): aborting");
}

void gg_report_gate(uint64_t seal, uint64_t required, bool allowed)
{
	const char *kernels = plural(required, "kernel", "kernels");

	if (allowed)
		gg_report_warn("seal %llu: %llu required %s missing; going on "
			       "(GPUGUARD_ALLOW_UNRESOLVED=1)",
			       (unsigned long long)seal, (unsigned long long)required, kernels);
	else
		gg_report_error("seal %llu: %llu required %s missing; aborting (see "
				"GPUGUARD_EXPECTED_ABSENT)",
				(unsigned long long)seal, (unsigned long long)required, kernels);
}

void gg_report_late_miss(bool fatal, uint64_t seal, const char *module, const char *function,
			 const char *result, const struct gg_report_site *where)
{
	char m[128], f[128], site[SITE_TEXT_MAX];

	whole_site_text(where, site, sizeof(site));
	printable(module, m, sizeof(m));
	printable(function, f, sizeof(f));
	if (fatal)
		gg_report_error("late miss after seal %llu: %s::%s (%s) at %s; aborting",
				(unsigned long long)seal, m, f, result, site);
	else
		gg_report_warn("late miss after seal %llu: %s::%s (%s) at %s; more late misses until "
			       "the next seal are counted, not logged",
			       (unsigned long long)seal, m, f, result, site);
}

void gg_report_launch_refused(const struct gg_report_kernel *k, uint64_t launch, const char *result)
{
	char n[128], m[128];

	gg_report_warn("launch #%llu of %s (module %s) refused: %s; later refusals of this kernel "
		       "are counted (launch_errors), not logged",
		       (unsigned long long)launch, printable(k->name, n, sizeof(n)),
		       printable(k->module, m, sizeof(m)), result);
}

void gg_report_sticky_error(const char *api, const char *result, const struct gg_report_kernel *k,
			    const uint64_t *launch, unsigned n, uint64_t launched)
{
	char list[LINE_MAX_BYTES - 256], name[96], mod[96];
	size_t o = 0;

	list[0] = '\0';
	for (unsigned i = 0; i < n; i++) {
		int w = snprintf(list + o, sizeof(list) - o, "%s%s (module %s, launch #%llu)",
				 i ? ", " : "", printable(k[i].name, name, sizeof(name)),
				 printable(k[i].module, mod, sizeof(mod)),
				 (unsigned long long)launch[i]);

		if (w < 0 || (size_t)w >= sizeof(list) - o)
			break;
		o += (size_t)w;
	}
	if (n)
		gg_report_error("%s: %s: the context is lost; kernels launched since the last good "
				"synchronize (%llu in all), newest first: %s",
				api, result, (unsigned long long)launched, list);
	else
		gg_report_error("%s: %s: the context is lost; no kernel launch was seen since the "
				"last good synchronize",
				api, result);
}

/* "; written by K (module M, launch #N) launched at SITE" for a violation a
 * checked launch found; else its suspects, or that it has none. */
static void culprit_text(const struct gg_report_violation *v, char *out, size_t cap)
{
	char site[SITE_TEXT_MAX];
	size_t o;

	if (v->by_launch) {
		snprintf(out, cap, "; written by %s (module %s, launch #%llu) launched at %s",
			 v->kernel.kernel.name, v->kernel.kernel.module,
			 (unsigned long long)v->kernel.launch,
			 whole_site_text(&v->kernel_site, site, sizeof(site)));
		return;
	}
	if (!v->nsuspects) {
		snprintf(out, cap,
			 "; suspects: none (no kernel was seen launched with its address "
			 "since its band was last seen clean)");
		return;
	}
	o = (size_t)snprintf(out, cap, "; suspects, newest first:");
	for (unsigned i = 0; i < v->nsuspects && o < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "%s %s (module %s, launch #%llu)", i ? "," : "",
				      v->suspects[i].kernel.name, v->suspects[i].kernel.module,
				      (unsigned long long)v->suspects[i].launch);
}

/* A stack's lines under the ERROR line of its finding, "  TITLE:" then
 * "    #I FRAME" each: only when it has more frames than its call site, which
 * that line names already. ERROR lines too, so they come at every verbosity
 * with the finding they belong to. */
static void stack_lines(const char *title, const struct gg_report_stack *st)
{
	char frame[320];

	if (!st || st->n < 2)
		return;
	gg_report_error("  %s:", title);
	for (unsigned i = 0; i < st->n && i < GG_REPORT_STACK_MAX; i++) {
		const struct gg_site *f = &st->frame[i];

		gg_report_error("    #%u %s", i,
				site_text(f->address, f->object, f->offset, f->symbol, f->symbol_offset,
					  frame, sizeof(frame)));
	}
}

/* The first frame of @st, as a site's text ("an unknown frame" when none). */
static const char *first_frame_text(const struct gg_report_stack *st, char *out, size_t cap)
{
	const struct gg_site *f = st && st->n ? &st->frame[0] : NULL;

	if (!f)
		return site_text(0, NULL, 0, NULL, 0, out, cap);
	return site_text(f->address, f->object, f->offset, f->symbol, f->symbol_offset, out, cap);
}

/* A free of what is no allocation's start
 * (docs/how-it-works.md, "Stacks, frees and leaks"). */
static void free_violation(const struct gg_report_violation *v)
{
	char site[SITE_TEXT_MAX], at[320], first[320];
	bool twice = !strcmp(v->kind, GG_KIND_DOUBLE_FREE);

	whole_site_text(&v->site, site, sizeof(site));
	first_frame_text(v->free_stack, at, sizeof(at));
	if (twice)
		gg_report_error("double free: %s(0x%llx): allocation #%llu of %llu %s was freed "
				"already; allocated at %s, first freed at %s, freed again at %s",
				v->api ? v->api : "free", (unsigned long long)v->address,
				(unsigned long long)v->index, (unsigned long long)v->user,
				plural(v->user, "byte", "bytes"), site,
				first_frame_text(v->first_free_stack, first, sizeof(first)), at);
	else
		gg_report_error("invalid free: %s(0x%llx) is 0x%llx + %llu, %s allocation #%llu of "
				"%llu %s, not its start; allocated at %s, freed at %s",
				v->api ? v->api : "free", (unsigned long long)v->address,
				(unsigned long long)v->ptr, (unsigned long long)(v->address - v->ptr),
				v->address - v->ptr < v->user ? "inside" : "in the red zone of",
				(unsigned long long)v->index, (unsigned long long)v->user,
				plural(v->user, "byte", "bytes"), site, at);
	stack_lines("allocation stack", v->stack);
	if (twice)
		stack_lines("first free stack", v->first_free_stack);
	stack_lines(twice ? "second free stack" : "free stack", v->free_stack);
}

/* The band's length as the ERROR line says it: the red zone, and the slack
 * after it up to the driver's alignment when the changed bytes reach it. */
static const char *band_text(const struct gg_report_violation *v, char *out, size_t cap)
{
	if (v->slack && v->last >= v->pad)
		snprintf(out, cap, "%llu-byte band (and %llu bytes up to the next 256-byte boundary)",
			 (unsigned long long)v->pad, (unsigned long long)v->slack);
	else
		snprintf(out, cap, "%llu-byte band", (unsigned long long)v->pad);
	return out;
}

/* A write below the start of the allocation directly above a band
 * (docs/how-it-works.md, "Red zones": Underflow): the upper one named first, then the band it
 * reached. */
static void underflow_violation(const struct gg_report_violation *v, const char *culprit)
{
	char site[SITE_TEXT_MAX], upper[SITE_TEXT_MAX], band[96];
	uint64_t end = v->pad + v->slack;

	gg_report_error("underflow (%s): allocation #%llu of %llu %s at 0x%llx: %llu %s changed "
			"%llu..%llu bytes below its start, first 0x%02x (expected 0x%02x), in the %s "
			"of allocation #%llu of %llu %s at 0x%llx directly below; allocated at %s, the "
			"one below at %s%s",
			v->detected_by, (unsigned long long)v->upper_index,
			(unsigned long long)v->upper_user, plural(v->upper_user, "byte", "bytes"),
			(unsigned long long)v->upper_ptr, (unsigned long long)v->changed,
			plural(v->changed, "byte", "bytes"), (unsigned long long)(end - v->last),
			(unsigned long long)(end - v->first), v->first_value, v->expected,
			band_text(v, band, sizeof(band)), (unsigned long long)v->index,
			(unsigned long long)v->user, plural(v->user, "byte", "bytes"),
			(unsigned long long)v->ptr,
			whole_site_text(&v->upper_site, upper, sizeof(upper)),
			whole_site_text(&v->site, site, sizeof(site)), culprit);
	stack_lines("allocation stack of the one below", v->stack);
}

/* A quarantined allocation written after its free, found when it left the
 * quarantine (docs/how-it-works.md, "Quarantine"). */
static void write_after_free(const struct gg_report_violation *v)
{
	char site[SITE_TEXT_MAX], at[320], where[64], culprit[SITE_TEXT_MAX + 512];

	if (v->first == v->last)
		snprintf(where, sizeof(where), "offset %llu", (unsigned long long)v->first);
	else
		snprintf(where, sizeof(where), "offsets %llu..%llu", (unsigned long long)v->first,
			 (unsigned long long)v->last);
	if (v->nsuspects)
		culprit_text(v, culprit, sizeof(culprit));
	else
		snprintf(culprit, sizeof(culprit),
			 "; suspects: none (no kernel was seen launched "
			 "with its address since its free)");
	gg_report_error("write after free (%s): allocation #%llu of %llu %s at 0x%llx, freed by %s: "
			"%llu %s changed at %s, first 0x%02x (expected the free fill 0x%02x); "
			"allocated at %s, freed at %s%s",
			v->detected_by, (unsigned long long)v->index, (unsigned long long)v->user,
			plural(v->user, "byte", "bytes"), (unsigned long long)v->ptr,
			v->api ? v->api : "?", (unsigned long long)v->changed,
			plural(v->changed, "byte", "bytes"), where, v->first_value, v->expected,
			whole_site_text(&v->site, site, sizeof(site)),
			first_frame_text(v->free_stack, at, sizeof(at)), culprit);
	stack_lines("allocation stack", v->stack);
	stack_lines("free stack", v->free_stack);
}

/* A launch given a pointer into a quarantined allocation, reported before it
 * is forwarded (docs/how-it-works.md, "Quarantine"). */
static void dangling_launch(const struct gg_report_violation *v)
{
	char site[SITE_TEXT_MAX], launched[SITE_TEXT_MAX], at[320], inside[64] = "", node[48] = "";

	if (v->address != v->ptr)
		snprintf(inside, sizeof(inside), " + %llu", (unsigned long long)(v->address - v->ptr));
	if (v->node) /* a kernel node of a graph's replay, not forwarded yet */
		snprintf(node, sizeof(node), ", graph node 0x%llx", (unsigned long long)v->node);
	gg_report_error("dangling launch: %s (module %s, launch #%llu%s) parameter %d is 0x%llx, "
			"allocation #%llu (%llu %s at 0x%llx%s), freed already by %s; launched at "
			"%s; allocated at %s, freed at %s",
			v->kernel.kernel.name, v->kernel.kernel.module,
			(unsigned long long)v->kernel.launch, node, v->param,
			(unsigned long long)v->address, (unsigned long long)v->index,
			(unsigned long long)v->user, plural(v->user, "byte", "bytes"),
			(unsigned long long)v->ptr, inside, v->api ? v->api : "?",
			whole_site_text(&v->kernel_site, launched, sizeof(launched)),
			whole_site_text(&v->site, site, sizeof(site)),
			first_frame_text(v->free_stack, at, sizeof(at)));
	stack_lines("allocation stack", v->stack);
	stack_lines("free stack", v->free_stack);
}

void gg_report_violation(const struct gg_report_violation *v)
{
	char site[SITE_TEXT_MAX], where[64], culprit[SITE_TEXT_MAX + 512], band[96];
	char upper[SITE_TEXT_MAX + 160] = "";

	if (v->kind && !strcmp(v->kind, GG_KIND_UNDERFLOW)) {
		culprit_text(v, culprit, sizeof(culprit));
		underflow_violation(v, culprit);
		return;
	}
	if (v->kind && !strcmp(v->kind, GG_KIND_WRITE_AFTER_FREE)) {
		write_after_free(v);
		return;
	}
	if (v->kind && !strcmp(v->kind, GG_KIND_DANGLING_LAUNCH)) {
		dangling_launch(v);
		return;
	}
	if (v->kind && strcmp(v->kind, GG_KIND_OVERRUN)) {
		free_violation(v);
		return;
	}
	if (v->upper_ptr) {
		char s[SITE_TEXT_MAX];

		snprintf(upper, sizeof(upper),
			 "; its top is directly below allocation #%llu of %llu "
			 "%s at 0x%llx (allocated at %s), which a write below its start reaches too",
			 (unsigned long long)v->upper_index, (unsigned long long)v->upper_user,
			 plural(v->upper_user, "byte", "bytes"), (unsigned long long)v->upper_ptr,
			 whole_site_text(&v->upper_site, s, sizeof(s)));
	}
	if (v->first == v->last)
		snprintf(where, sizeof(where), "offset %llu", (unsigned long long)v->first);
	else
		snprintf(where, sizeof(where), "offsets %llu..%llu", (unsigned long long)v->first,
			 (unsigned long long)v->last);
	culprit_text(v, culprit, sizeof(culprit));
	gg_report_error("red zone violation (%s): allocation #%llu of %llu %s at 0x%llx, %s: "
			"%llu %s changed at %s past the end, first 0x%02x (expected 0x%02x); "
			"allocated at %s%s%s",
			v->detected_by, (unsigned long long)v->index, (unsigned long long)v->user,
			plural(v->user, "byte", "bytes"), (unsigned long long)v->ptr,
			band_text(v, band, sizeof(band)), (unsigned long long)v->changed,
			plural(v->changed, "byte", "bytes"), where, v->first_value, v->expected,
			whole_site_text(&v->site, site, sizeof(site)), upper, culprit);
	stack_lines("allocation stack", v->stack);
}

void gg_report_api_overrun(const struct gg_report_api_overrun *o)
{
	char site[SITE_TEXT_MAX], call[SITE_TEXT_MAX];
	uint64_t end = o->ptr + o->user, past;
	bool starts = o->address >= end;

	/* How far past the end it starts, or how far past the end it runs. */
	past = starts ? o->address - end : o->address + o->bytes - end;
	gg_report_error("api_overrun: %s %s 0x%llx, %llu %s: %s %llu %s past the end of allocation "
			"#%llu (%llu %s at 0x%llx), into its red zone; refused with %s, the "
			"driver's answer without the red zone; called at %s; allocated at %s",
			o->api, o->side, (unsigned long long)o->address, (unsigned long long)o->bytes,
			plural(o->bytes, "byte", "bytes"), starts ? "starts" : "runs",
			(unsigned long long)past, plural(past, "byte", "bytes"),
			(unsigned long long)o->index, (unsigned long long)o->user,
			plural(o->user, "byte", "bytes"), (unsigned long long)o->ptr, o->result,
			whole_site_text(&o->call_site, call, sizeof(call)),
			whole_site_text(&o->site, site, sizeof(site)));
	stack_lines("allocation stack", o->stack);
}

void gg_report_alloc_stack(uint64_t index, size_t bytes, const struct gg_site *frames, int n)
{
	char site[320];

	gg_report_info("allocation #%llu (%zu %s) was made at:", (unsigned long long)index, bytes,
		       plural(bytes, "byte", "bytes"));
	for (int i = 0; i < n; i++) {
		const struct gg_site *s = &frames[i];

		gg_report_info("  #%d %s", i,
			       site_text(s->address, s->object, s->offset, s->symbol, s->symbol_offset,
					 site, sizeof(site)));
	}
}

/* With GPUGUARD_LEAK_CHECK: an ERROR for each of the first ten stacks. */
#define LEAKS_NAMED 10

struct leak_lines {
	unsigned n;
};

static void leak_line(void *ctx, const struct gg_report_leak *l)
{
	struct leak_lines *ll = ctx;
	char site[SITE_TEXT_MAX];

	if (ll->n++ >= LEAKS_NAMED)
		return;
	gg_report_error("leak: %llu %s (%llu %s) still live at exit, allocated at %s",
			(unsigned long long)l->count, plural(l->count, "allocation", "allocations"),
			(unsigned long long)l->bytes, plural(l->bytes, "byte", "bytes"),
			whole_site_text(&l->site, site, sizeof(site)));
	stack_lines("allocation stack", l->stack);
}

void gg_report_leaks(const struct gg_report_figures *f)
{
	const struct gg_report_leaks *k = &f->leaks;
	struct leak_lines ll = { 0 };

	if (!k->known || !k->check || !k->stacks)
		return;
	k->each(leak_line, &ll);
	if (k->stacks > LEAKS_NAMED)
		gg_report_error("leak: %llu more %s (the JSON summary's \"leaks\" lists them all)",
				(unsigned long long)(k->stacks - LEAKS_NAMED),
				plural(k->stacks - LEAKS_NAMED, "stack", "stacks"));
}

/* "; 9 guarded, 1 not (min_idx 1)" when red zones were asked for and an
 * allocation went without (docs/how-it-works.md, "Red zones": Coverage); "" otherwise. */
static void unguarded_text(const struct gg_report_coverage *c, char *out, size_t cap)
{
	uint64_t not_guarded = c->allocations - c->guarded;
	char list[200] = "";
	size_t o = 0;

	out[0] = '\0';
	/* Red zones off: nothing was asked for, so nothing is missing. */
	if (!not_guarded || not_guarded == c->unguarded[GG_REASON_off])
		return;
	for (int r = 0; r < GG_REASON_COUNT; r++) {
		if (!c->unguarded[r])
			continue;
		int w = snprintf(list + o, sizeof(list) - o, "%s%s %llu", o ? ", " : "",
				 gg_report_reason_name(r), (unsigned long long)c->unguarded[r]);
		if (w < 0 || (size_t)w >= sizeof(list) - o)
			break;
		o += (size_t)w;
	}
	snprintf(out, cap, "; %llu guarded, %llu not (%s)", (unsigned long long)c->guarded,
		 (unsigned long long)not_guarded, list);
}

void gg_report_exit_summary(const struct gg_report_figures *f)
{
	const struct gg_report_audit *a = &f->audit;
	const struct gg_report_redzone *z = &f->redzone;
	char why[256];

	/* Only when anything was recorded
	 * (docs/how-it-works.md, "Boundaries, signals, exit"): a CUDA runtime that never
	 * started leaves no line behind. */
	if (!a->calls && !a->seals && !a->loads_failed && !z->calls && !z->violations && !f->errors)
		return;
	/* One line, short enough for a 100-column terminal; the JSON has the rest. */
	unguarded_text(&z->coverage, why, sizeof(why));
	gg_report_info("exit: %llu %s, %llu missing, %llu late; %llu %s, %llu padded; %llu %s%s",
		       (unsigned long long)a->pairs, plural(a->pairs, "kernel", "kernels"),
		       (unsigned long long)(a->unresolved_required + a->unresolved_expected),
		       (unsigned long long)a->late_misses, (unsigned long long)z->calls,
		       plural(z->calls, "allocation", "allocations"), (unsigned long long)z->padded,
		       (unsigned long long)z->violations,
		       plural(z->violations, "violation", "violations"), why);
	/* Only when something leaked: a program that freed everything hears
	 * nothing more. */
	if (f->leaks.known && f->leaks.stacks)
		gg_report_info(
			"leaks at exit: %llu %s (%llu %s) still live, from %llu %s%s",
			(unsigned long long)f->leaks.allocations,
			plural(f->leaks.allocations, "allocation", "allocations"),
			(unsigned long long)f->leaks.bytes, plural(f->leaks.bytes, "byte", "bytes"),
			(unsigned long long)f->leaks.stacks, plural(f->leaks.stacks, "stack", "stacks"),
			f->leaks.check ? ""
				       : " (JSON \"leaks\"; GPUGUARD_LEAK_CHECK=1 makes "
					 "them errors)");
}

void gg_report_handler_replaced(int sig)
{
	gg_report_warn("the application replaced gpuguard's handler of signal %d; GPUGUARD_SIGNAL "
		       "no longer triggers a boundary",
		       sig);
}
