/* The report files (docs/ci.md, "Report formats"): the JSON summary (schema 1) and
 * the Prometheus text file, each rewritten atomically (a temporary file in the
 * same directory, then rename(2)). Formatted through a stack buffer and written
 * with write(2); nothing is allocated.
 *
 * Never harmful (see replace_file): the temporary file is created, never
 * opened through what is already there (a link another user planted); a
 * target that is not a regular file (/dev/null) is written in place, never
 * renamed over; a FIFO, block device or socket is refused; a failed write
 * keeps the previous file and says why (ENOSPC for a full disk). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/text.h"
#include "options/config.h"
#include "report/process.h"
#include "report/report.h"
#include "report/sink.h"

#ifndef GG_VERSION /* meson gives the project's (shim/meson.build) */
#define GG_VERSION "0"
#endif

struct jw {
	int fd;
	int err; /* the first write's -errno; 0 while all went well */
	size_t len;
	char buf[4096];
};

static void jw_flush(struct jw *w)
{
	if (w->len && !w->err)
		w->err = gg_report_write_all(w->fd, w->buf, w->len);
	w->len = 0;
}

static void jw_raw(struct jw *w, const char *s, size_t n)
{
	while (n) {
		size_t room = sizeof(w->buf) - w->len, k = n < room ? n : room;

		memcpy(w->buf + w->len, s, k);
		w->len += k;
		s += k;
		n -= k;
		if (w->len == sizeof(w->buf))
			jw_flush(w);
	}
}

static void jw_puts(struct jw *w, const char *s)
{
	jw_raw(w, s, strlen(s));
}

GG_PRINTF(2, 3) static void jw_printf(struct jw *w, const char *fmt, ...)
{
	char tmp[1024]; /* every format here fits, with every number at 20 digits */
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		jw_raw(w, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* A JSON string: any byte that is not valid UTF-8 is written as \u00XX, so
 * the file stays valid whatever bytes a module or symbol name holds
 * (gg_text_json_escape). */
static void jw_str(struct jw *w, const char *s)
{
	size_t n, taken;

	if (!s) {
		jw_puts(w, "null");
		return;
	}
	jw_raw(w, "\"", 1);
	for (n = strlen(s); n; s += taken, n -= taken) {
		if (sizeof(w->buf) - w->len < GG_TEXT_JSON_CHAR_MAX)
			jw_flush(w);
		w->len += gg_text_json_escape(w->buf + w->len, sizeof(w->buf) - w->len, s, n, &taken);
	}
	jw_raw(w, "\"", 1);
}

/* A label: its bytes exactly, a byte that is no UTF-8 as \udcXX
 * (gg_text_json_escape_bytes). */
static void jw_bytes(struct jw *w, const char *s)
{
	size_t n, taken;

	jw_raw(w, "\"", 1);
	for (n = strlen(s); n; s += taken, n -= taken) {
		if (sizeof(w->buf) - w->len < GG_TEXT_JSON_CHAR_MAX)
			jw_flush(w);
		w->len += gg_text_json_escape_bytes(w->buf + w->len, sizeof(w->buf) - w->len, s, n,
						    &taken);
	}
	jw_raw(w, "\"", 1);
}

static void jw_hex(struct jw *w, uintptr_t v)
{
	jw_printf(w, "\"0x%" PRIxPTR "\"", v);
}

static void jw_bool(struct jw *w, bool v)
{
	jw_puts(w, v ? "true" : "false");
}

static void jw_frame(struct jw *w, const struct gg_site *s)
{
	char sym[512];

	jw_puts(w, "{ \"address\": ");
	jw_hex(w, s->address);
	jw_puts(w, ", \"object\": ");
	jw_str(w, s->object);
	jw_puts(w, ", \"offset\": ");
	jw_hex(w, s->offset);
	jw_puts(w, ", \"symbol\": ");
	if (s->symbol) {
		snprintf(sym, sizeof(sym), "%s+0x%" PRIxPTR, s->symbol, s->symbol_offset);
		jw_str(w, sym);
	} else {
		jw_puts(w, "null");
	}
}

static void jw_site(struct jw *w, const struct gg_report_site *rs)
{
	jw_frame(w, &rs->at);
	/* Inside a stripped executable's runtime: say so, and give the frames
	 * outward, each a site of its own, for gpuguard symbolize. */
	if (rs->in_static_runtime) {
		jw_puts(w, ", \"in_static_runtime\": true,\n        \"frames\": [");
		for (unsigned i = 0; i < rs->nouter && i < GG_REPORT_OUTER; i++) {
			jw_puts(w, i ? ",\n          " : "\n          ");
			jw_frame(w, &rs->outer[i]);
			jw_puts(w, " }");
		}
		jw_puts(w, rs->nouter ? " ]" : "]");
	}
	jw_puts(w, " }");
}

/* A stack: its frames, each a site of its own, for gpuguard symbolize. */
static void jw_stack(struct jw *w, const struct gg_report_stack *st)
{
	jw_puts(w, "[");
	for (unsigned i = 0; st && i < st->n && i < GG_REPORT_STACK_MAX; i++) {
		jw_puts(w, i ? ",\n        " : "\n        ");
		jw_frame(w, &st->frame[i]);
		jw_puts(w, " }");
	}
	jw_puts(w, st && st->n ? " ]" : "]");
}

struct rows {
	struct jw *w;
	unsigned n;
};

static void unresolved_row(void *ctx, const struct gg_report_row *r)
{
	struct rows *rows = ctx;
	struct jw *w = rows->w;
	jw_puts(w, rows->n++ ? ",\n    { \"module\": " : "\n    { \"module\": ");
	jw_str(w, r->module);
	jw_puts(w, ", \"function\": ");
	jw_str(w, r->function);
	jw_puts(w, ", \"expected_absent\": ");
	jw_bool(w, r->expected_absent);
	jw_printf(w, ", \"count\": %" PRIu64 ", \"result\": ", r->count);
	jw_str(w, r->result);
	jw_puts(w, ",\n      \"site\": ");
	jw_site(w, &r->site);
	jw_puts(w, " }");
}

/* The "kernel" member: the launch a finding was made at (its checked
 * launch, or a dangling launch). */
static void kernel_member(struct jw *w, const struct gg_report_violation *v)
{
	jw_puts(w, ",\n      \"kernel\": { \"name\": ");
	jw_str(w, v->kernel.kernel.name);
	jw_puts(w, ", \"module\": ");
	jw_str(w, v->kernel.kernel.module);
	jw_printf(w, ", \"launch\": %" PRIu64 ", \"site\": ", v->kernel.launch);
	jw_site(w, &v->kernel_site);
	jw_puts(w, " }");
}

/* A free's finding (docs/how-it-works.md, "Stacks, frees and leaks"): no band figures; the
 * pointer freed, and the free stacks. */
static void free_violation_row(struct jw *w, const struct gg_report_violation *v)
{
	bool twice = !strcmp(v->kind, GG_KIND_DOUBLE_FREE);

	jw_printf(w, ", \"index\": %" PRIu64 ", \"user_bytes\": %" PRIu64 ", \"api\": ", v->index,
		  v->user);
	jw_str(w, v->api ? v->api : "?");
	jw_puts(w, ", \"address\": ");
	jw_hex(w, (uintptr_t)v->address);
	if (!twice)
		jw_printf(w, ", \"offset\": %" PRIu64, v->address - v->ptr);
	jw_puts(w, ", \"detected_by\": ");
	jw_str(w, v->detected_by);
	jw_puts(w, ",\n      \"site\": ");
	jw_site(w, &v->site);
	jw_puts(w, ",\n      \"stack\": ");
	jw_stack(w, v->stack);
	if (twice) {
		jw_puts(w, ",\n      \"first_free_stack\": ");
		jw_stack(w, v->first_free_stack);
	}
	jw_puts(w, ",\n      \"free_stack\": ");
	jw_stack(w, v->free_stack);
	jw_puts(w, " }");
}

static void suspects_list(struct jw *w, const struct gg_report_violation *v)
{
	jw_puts(w, ",\n      \"suspects\": [");
	for (unsigned i = 0; i < v->nsuspects; i++) {
		jw_puts(w, i ? ", { \"name\": " : " { \"name\": ");
		jw_str(w, v->suspects[i].kernel.name);
		jw_puts(w, ", \"module\": ");
		jw_str(w, v->suspects[i].kernel.module);
		jw_printf(w, ", \"launch\": %" PRIu64 " }", v->suspects[i].launch);
	}
	jw_puts(w, v->nsuspects ? " ]" : "]");
}

/* The quarantine's findings (docs/how-it-works.md, "Quarantine"): a write after free, with
 * its figures (offsets into the allocation) and suspects; a dangling launch,
 * with its kernel and parameter. Both name the free (api, free_stack). */
static void quarantine_row(struct jw *w, const struct gg_report_violation *v)
{
	bool launch = !strcmp(v->kind, GG_KIND_DANGLING_LAUNCH);

	jw_printf(w, ", \"index\": %" PRIu64 ", \"user_bytes\": %" PRIu64 ", \"ptr\": ", v->index,
		  v->user);
	jw_hex(w, (uintptr_t)v->ptr);
	if (launch) {
		jw_puts(w, ", \"address\": ");
		jw_hex(w, (uintptr_t)v->address);
		jw_printf(w, ", \"offset\": %" PRIu64 ", \"parameter\": %d", v->address - v->ptr,
			  v->param);
		if (v->node) { /* a kernel node of a graph's replay */
			jw_puts(w, ", \"node\": ");
			jw_hex(w, (uintptr_t)v->node);
		}
	} else {
		jw_printf(w,
			  ", \"first\": %" PRIu64 ", \"last\": %" PRIu64 ", \"changed\": %" PRIu64
			  ", \"first_value\": %u, \"expected\": %u",
			  v->first, v->last, v->changed, v->first_value, v->expected);
	}
	jw_puts(w, ", \"api\": ");
	jw_str(w, v->api ? v->api : "?");
	jw_puts(w, ", \"detected_by\": ");
	jw_str(w, v->detected_by);
	jw_puts(w, ",\n      \"site\": ");
	jw_site(w, &v->site);
	jw_puts(w, ",\n      \"stack\": ");
	jw_stack(w, v->stack);
	jw_puts(w, ",\n      \"free_stack\": ");
	jw_stack(w, v->free_stack);
	if (launch)
		kernel_member(w, v);
	else
		suspects_list(w, v);
	jw_puts(w, " }");
}

static void violation_row(void *ctx, const struct gg_report_violation *v)
{
	struct rows *rows = ctx;
	struct jw *w = rows->w;
	const char *kind = v->kind ? v->kind : GG_KIND_OVERRUN;

	jw_puts(w, rows->n++ ? ",\n    { \"kind\": " : "\n    { \"kind\": ");
	jw_str(w, kind);
	if (!strcmp(kind, GG_KIND_WRITE_AFTER_FREE) || !strcmp(kind, GG_KIND_DANGLING_LAUNCH)) {
		quarantine_row(w, v);
		return;
	}
	if (strcmp(kind, GG_KIND_OVERRUN) && strcmp(kind, GG_KIND_UNDERFLOW)) {
		free_violation_row(w, v);
		return;
	}
	jw_printf(w,
		  ", \"index\": %" PRIu64 ", \"user_bytes\": %" PRIu64 ", \"pad_bytes\": %" PRIu64
		  ", \"first\": %" PRIu64 ", \"last\": %" PRIu64 ", \"changed\": %" PRIu64
		  ", \"first_value\": %u, \"expected\": %u, \"detected_by\": ",
		  v->index, v->user, v->pad, v->first, v->last, v->changed, v->first_value,
		  v->expected);
	jw_str(w, v->detected_by);
	if (v->slack)
		jw_printf(w, ", \"slack_bytes\": %" PRIu64, v->slack);
	jw_puts(w, ",\n      \"site\": ");
	jw_site(w, &v->site);
	jw_puts(w, ",\n      \"stack\": ");
	jw_stack(w, v->stack);
	if (v->upper_ptr) {
		jw_printf(w,
			  ",\n      \"upper\": { \"index\": %" PRIu64 ", \"user_bytes\": %" PRIu64
			  ", \"address\": ",
			  v->upper_index, v->upper_user);
		jw_hex(w, (uintptr_t)v->upper_ptr);
		jw_puts(w, ", \"site\": ");
		jw_site(w, &v->upper_site);
		jw_puts(w, " }");
	}
	if (v->by_launch)
		kernel_member(w, v);
	suspects_list(w, v);
	jw_puts(w, " }");
}

static void leak_row(void *ctx, const struct gg_report_leak *l)
{
	struct rows *rows = ctx;
	struct jw *w = rows->w;

	jw_printf(w, "%s{ \"count\": %" PRIu64 ", \"bytes\": %" PRIu64 ",\n      \"site\": ",
		  rows->n++ ? ",\n    " : "\n    ", l->count, l->bytes);
	jw_site(w, &l->site);
	jw_puts(w, ",\n      \"stack\": ");
	jw_stack(w, l->stack);
	jw_puts(w, " }");
}

/* A refused copy or set, among the violations (kind "api_overrun"). */
static void api_overrun_row(void *ctx, const struct gg_report_api_overrun *o)
{
	struct rows *rows = ctx;
	struct jw *w = rows->w;

	jw_puts(w, rows->n++ ? ",\n    { \"kind\": \"api_overrun\", \"api\": "
			     : "\n    { \"kind\": \"api_overrun\", \"api\": ");
	jw_str(w, o->api);
	jw_puts(w, ", \"side\": ");
	jw_str(w, o->side);
	jw_puts(w, ", \"address\": ");
	jw_hex(w, o->address);
	jw_printf(w,
		  ", \"bytes\": %" PRIu64 ", \"index\": %" PRIu64 ", \"user_bytes\": %" PRIu64
		  ", \"ptr\": ",
		  o->bytes, o->index, o->user);
	jw_hex(w, o->ptr);
	jw_puts(w, ", \"result\": ");
	jw_str(w, o->result);
	jw_puts(w, ",\n      \"site\": ");
	jw_site(w, &o->site);
	jw_puts(w, ",\n      \"call_site\": ");
	jw_site(w, &o->call_site);
	jw_puts(w, ",\n      \"stack\": ");
	jw_stack(w, o->stack);
	jw_puts(w, " }");
}

static void launch_error_row(void *ctx, const struct gg_report_launch_error *e)
{
	struct rows *rows = ctx;
	struct jw *w = rows->w;

	jw_puts(w, rows->n++ ? ",\n    { \"name\": " : "\n    { \"name\": ");
	jw_str(w, e->kernel.name);
	jw_puts(w, ", \"module\": ");
	jw_str(w, e->kernel.module);
	jw_printf(w, ", \"count\": %" PRIu64 ", \"result\": ", e->count);
	jw_str(w, e->result);
	jw_puts(w, " }");
}

static void module_row(void *ctx, const struct gg_report_module *m)
{
	struct rows *rows = ctx;
	struct jw *w = rows->w;

	jw_puts(w, rows->n++ ? ",\n    { \"name\": " : "\n    { \"name\": ");
	jw_str(w, m->name);
	jw_printf(w, ", \"library\": %s, \"loaded\": %s", m->library ? "true" : "false",
		  m->loaded ? "true" : "false");
	if (m->result) {
		jw_puts(w, ", \"result\": ");
		jw_str(w, m->result);
	}
	if (m->narchs) { /* its image was read */
		jw_puts(w, ", \"archs\": [");
		for (unsigned i = 0; i < m->narchs; i++) {
			jw_puts(w, i ? ", " : "");
			jw_str(w, m->archs[i]);
		}
		jw_puts(w, "]");
	}
	if (m->runs_here >= 0)
		jw_printf(w, ", \"runs_here\": %s", m->runs_here ? "true" : "false");
	if (m->has_site) {
		jw_puts(w, ",\n      \"site\": ");
		jw_site(w, &m->site);
	}
	jw_puts(w, " }");
}

static const char *const graph_reasons[] = {
#define GG_GRAPH_REASON_NAME(name) #name,
	GG_REPORT_GRAPH_UNFOLLOWED(GG_GRAPH_REASON_NAME)
#undef GG_GRAPH_REASON_NAME
};

/* A labelled boundary's row: the lines one string each, without '\n'. */
static void label_row(void *ctx, const struct gg_report_label *l)
{
	struct rows *rows = ctx;
	struct jw *w = rows->w;
	char line[2048];
	unsigned n = 0;

	jw_puts(w, rows->n++ ? ",\n    { \"label\": " : "\n    { \"label\": ");
	jw_bytes(w, l->label);
	jw_printf(w,
		  ", \"boundary\": %" PRIu64 ", \"errors\": %" PRIu64 ", \"lines_dropped\": %" PRIu64
		  ",\n      \"lines\": [",
		  l->boundary, l->errors, l->lines_dropped);
	for (const char *p = l->lines; p && *p;) {
		size_t len = strcspn(p, "\n");

		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		jw_puts(w, n++ ? ",\n        " : "\n        ");
		jw_str(w, line);
		p += len + (p[len] == '\n');
	}
	jw_puts(w, n ? " ] }" : "] }");
}

static void write_labels(struct jw *w, const struct gg_report_figures *f)
{
	struct rows rows = { w, 0 };

	jw_puts(w, "  \"labels\": [");
	if (f->labels)
		f->labels(label_row, &rows);
	jw_puts(w, rows.n ? "\n  ],\n" : "],\n");
	jw_printf(w, "  \"labels_omitted\": %" PRIu64 ",\n", f->labels_omitted);
}

/* Only when a log line was lost: what the log could not say, and why. */
static void write_log_lost(struct jw *w)
{
	const char *why;
	uint64_t lost = gg_report_log_lost(&why);

	if (!lost)
		return;
	jw_printf(w, "  \"log\": { \"lines_lost\": %" PRIu64 ", \"why\": ", lost);
	jw_str(w, why ? why : "");
	jw_puts(w, " },\n");
}

static void write_coverage(struct jw *w, const struct gg_report_coverage *c)
{
	bool any = false;

	jw_printf(w,
		  "  \"coverage\": { \"allocations\": %" PRIu64 ", \"guarded\": %" PRIu64
		  ", \"guarded_bytes\": %" PRIu64 ",\n    \"unguarded\": {",
		  c->allocations, c->guarded, c->guarded_bytes);
	for (int r = 0; r < GG_REASON_COUNT; r++) {
		if (!c->unguarded[r])
			continue;
		jw_printf(w, "%s\"%s\": %" PRIu64, any ? ", " : " ", gg_report_reason_name(r),
			  c->unguarded[r]);
		any = true;
	}
	jw_printf(w,
		  "%s}, \"unguarded_bytes\": %" PRIu64 ", \"vmm_bytes\": %" PRIu64
		  ", \"procaddr_unmatched\": %" PRIu64 ",\n    \"graph_nodes_unfollowed\": {",
		  any ? " " : "", c->unguarded_bytes, c->vmm_bytes, c->procaddr_unmatched);
	any = false;
	for (int r = 0; r < GG_GRAPH_UNFOLLOWED_COUNT; r++) {
		if (!c->graph_nodes_unfollowed[r])
			continue;
		jw_printf(w, "%s\"%s\": %" PRIu64, any ? ", " : " ", graph_reasons[r],
			  c->graph_nodes_unfollowed[r]);
		any = true;
	}
	jw_printf(w, "%s}, \"graph_replays_unfollowed\": %" PRIu64 ",\n    \"caching_allocators\": [",
		  any ? " " : "", c->graph_replays_unfollowed);
	for (unsigned i = 0; i < c->ncaching && i < GG_REPORT_CACHING_MAX; i++) {
		jw_puts(w, i ? ", " : " ");
		jw_str(w, c->caching[i]);
	}
	jw_puts(w, c->ncaching ? " ] }" : "] }");
}

/* ---- times: UTC, ISO 8601, by arithmetic (the summary is also written on
 * the way out of an abort, where gmtime's locks and allocation are no
 * place to be) ---- */

static int64_t ms_of(clockid_t clock)
{
	struct timespec ts;

	if (clock_gettime(clock, &ts))
		return -1;
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "2026-03-04T12:34:56.789Z" for @ms since the epoch (days to a civil date
 * as in H. Hinnant's "chrono-Compatible Low-Level Date Algorithms"). */
static void jw_time(struct jw *w, int64_t ms)
{
	int64_t secs = ms / 1000, days = secs / 86400, rem = secs % 86400;
	int64_t z = days + 719468, era = z / 146097; /* z >= 0 from 1970 on */
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;
	unsigned day = doy - (153 * mp + 2) / 5 + 1, month = mp < 10 ? mp + 3 : mp - 9;
	int64_t year = (int64_t)yoe + era * 400 + (month <= 2);

	if (ms < 0) {
		jw_puts(w, "null");
		return;
	}
	jw_printf(w, "\"%04lld-%02u-%02uT%02u:%02u:%02u.%03uZ\"", (long long)year, month, day,
		  (unsigned)(rem / 3600), (unsigned)(rem / 60 % 60), (unsigned)(rem % 60),
		  (unsigned)(ms % 1000));
}

/* When this process started, in ms since the epoch, -1 when unknown: its
 * exec, or its fork for a forked child, from /proc/self/stat's start time
 * (clock ticks since boot) moved to the wall clock by the distance between
 * the two clocks now. */
static int64_t process_started_ms(void)
{
	int64_t real = ms_of(CLOCK_REALTIME), boot = ms_of(CLOCK_BOOTTIME);
	long hz = sysconf(_SC_CLK_TCK);
	unsigned long long ticks;

	if (gg_report_start_ticks(0, &ticks) || real < 0 || boot < 0 || hz <= 0)
		return -1;
	return real - boot + (int64_t)(ticks * 1000 / (unsigned long long)hz);
}

static void write_summary(struct jw *w, const struct gg_report_figures *f)
{
	const struct gg_config *cfg = gg_config();
	const struct gg_report_audit a = f->audit;
	const struct gg_report_redzone z = f->redzone;
	struct rows rows = { w, 0 };
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	exe[n > 0 ? n : 0] = '\0';
	jw_printf(w, "{ \"schema\": 1, \"version\": \"%s\", \"pid\": %d, \"exe\": ", GG_VERSION,
		  (int)getpid());
	jw_str(w, exe);
	jw_puts(w, ",\n  \"started\": ");
	jw_time(w, process_started_ms());
	jw_puts(w, ", \"ended\": ");
	jw_time(w, f->final ? ms_of(CLOCK_REALTIME) : -1);
	jw_puts(w, ", \"sealed\": ");
	jw_bool(w, a.sealed);
	jw_printf(w,
		  ", \"seals\": %" PRIu64 ",\n  \"config\": { \"redzone\": %" PRIu64
		  ", \"fill\": %u, \"allow_unresolved\": ",
		  a.seals, cfg->redzone, cfg->fill);
	jw_bool(w, cfg->allow_unresolved);
	jw_printf(w, ", \"verbosity\": %d, \"boundary\": ", cfg->verbosity);
	jw_str(w, cfg->boundary);
	jw_printf(w, ", \"signal\": %d, \"redzone_min_idx\": %" PRIu64 ", \"check_on_free\": ",
		  cfg->signal, cfg->redzone_min_idx);
	jw_bool(w, cfg->check_on_free);
	jw_puts(w, ", \"check_launches\": ");
	jw_bool(w, cfg->check_launches);
	jw_puts(w, ", \"halt_on_error\": ");
	jw_bool(w, cfg->halt_on_error);
	jw_printf(w, ", \"stack_depth\": %u, \"leak_check\": ", cfg->stack_depth);
	jw_bool(w, cfg->leak_check);
	jw_printf(w, ", \"quarantine\": %" PRIu64 ", \"free_fill\": %u", cfg->quarantine,
		  cfg->free_fill);
	jw_puts(w, ", \"skip_symbols\": ");
	jw_str(w, cfg->skip_symbols);
	jw_puts(w, ", \"expected_absent\": ");
	if (cfg->expected_absent[0])
		jw_str(w, cfg->expected_absent);
	else
		jw_puts(w, "null");
	jw_printf(w,
		  " },\n  \"lookups\": { \"total\": %" PRIu64 ", \"resolved\": %" PRIu64
		  ", \"unresolved_required\": %" PRIu64 ", \"unresolved_expected\": %" PRIu64
		  ",\n    \"late_misses\": %" PRIu64 ", \"unresolved\": %" PRIu64
		  ", \"calls\": %" PRIu64 ", \"failed_calls\": %" PRIu64 " },\n  \"unresolved\": [",
		  a.pairs, a.resolved, a.unresolved_required, a.unresolved_expected, a.late_misses,
		  a.unresolved, a.calls, a.failed_calls);
	f->rows(unresolved_row, &rows);
	jw_printf(w,
		  "%s],\n  \"allocations\": { \"calls\": %" PRIu64 ", \"failed\": %" PRIu64
		  ", \"padded\": %" PRIu64 ", \"unpadded_fallbacks\": %" PRIu64 ", \"live\": %" PRIu64
		  ", \"live_bytes\": %" PRIu64 " },\n  \"redzones\": { \"scans\": %" PRIu64
		  ", \"checked\": %" PRIu64 ", \"unchecked\": %" PRIu64 ", \"registry_bytes\": %" PRIu64
		  ", \"scan_driver_calls\": %" PRIu64
		  ", \"batched\": %s,\n    \"launches_checked\": %" PRIu64
		  ", \"launches_unfollowed\": %" PRIu64 ", \"stacks\": %" PRIu64
		  ", \"stack_bytes\": %" PRIu64,
		  rows.n ? "\n  " : "", z.calls, z.failed, z.padded, z.fallbacks, z.live, z.live_bytes,
		  z.scans, z.checked, z.unchecked, z.registry_bytes, z.scan_calls,
		  z.batched ? "true" : "false", z.launches_checked, z.launches_unfollowed, f->stacks,
		  f->stack_bytes);
	jw_puts(w, ",\n    \"unchecked_reasons\": {");
	/* The quarantine's reason only with a quarantine: without one, the
	 * summary is as it was before there was one. */
	for (int u = 0; u < GG_UNCHECKED_COUNT; u++)
		if (u != GG_UNCHECKED_quarantine_middle || z.quarantine)
			jw_printf(w, "%s\"%s\": %" PRIu64, u ? ", " : " ", gg_report_unchecked_name(u),
				  z.unchecked_why[u]);
	jw_puts(w, " }");
	if (z.quarantine)
		jw_printf(w,
			  ",\n    \"quarantine\": { \"bytes\": %" PRIu64 ", \"held\": %" PRIu64
			  ", \"held_bytes\": %" PRIu64 ", \"entered\": %" PRIu64
			  ", \"released\": %" PRIu64 ", \"checked_bytes\": %" PRIu64
			  ", \"unchecked_bytes\": %" PRIu64 ", \"oom_releases\": %" PRIu64 " }",
			  z.quarantine, z.quarantine_held, z.quarantine_held_bytes,
			  z.quarantine_entered, z.quarantine_released, z.quarantine_checked_bytes,
			  z.quarantine_unchecked_bytes, z.quarantine_oom_releases);
	rows.n = 0;
	jw_puts(w, " },\n  \"violations\": [");
	f->violations(violation_row, &rows);
	if (f->api_overruns)
		f->api_overruns(api_overrun_row, &rows);
	jw_puts(w, rows.n ? "\n  ]," : "],");
	/* Only at exit: a boundary's live allocations are no leaks. */
	if (f->leaks.known) {
		rows.n = 0;
		jw_puts(w, "\n  \"leaks\": [");
		f->leaks.each(leak_row, &rows);
		jw_puts(w, rows.n ? "\n  ]," : "],");
	}
	jw_puts(w, "\n  \"launch_errors\": [");
	rows.n = 0;
	f->launch_errors(launch_error_row, &rows);
	jw_puts(w, rows.n ? "\n  ],\n  \"modules\": [" : "],\n  \"modules\": [");
	rows.n = 0;
	f->modules(module_row, &rows);
	jw_puts(w, rows.n ? "\n  ],\n" : "],\n");
	write_labels(w, f);
	write_log_lost(w);
	write_coverage(w, &z.coverage);
	jw_printf(w, ",\n  \"errors\": %" PRIu64 " }\n", f->errors);
}

static struct {
	atomic_uint serial;   /* makes temporary names unique between threads */
	pthread_mutex_t lock; /* held across one rewrite of both files */
	bool final_begun;     /* under @lock: the final rewrite began; none follows it */
} files_state = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Tries at a temporary name before giving up: a name taken (by a file or a
 * link another user planted) is never opened, the next one is tried. */
#define TEMP_TRIES 64

/* Create a new temporary file for @path in its directory, its name in @tmp:
 * O_EXCL|O_NOFOLLOW, so nothing already there is written through. A
 * descriptor, or -errno. */
static int create_temp(const char *path, char *tmp, size_t cap)
{
	for (int i = 0; i < TEMP_TRIES; i++) {
		int fd, n = snprintf(tmp, cap, "%s.tmp.%d.%u", path, (int)getpid(),
				     atomic_fetch_add(&files_state.serial, 1));

		if (n < 0 || (size_t)n >= cap)
			return -ENAMETOOLONG;
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0644);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EEXIST;
}

/* Write @fill to @fd; 0 or the first -errno. */
static int fill_fd(int fd, void (*fill)(struct jw *w, const struct gg_report_figures *f),
		   const struct gg_report_figures *f)
{
	struct jw w = { .fd = fd };

	fill(&w, f);
	jw_flush(&w);
	return w.err;
}

#define IS_STDOUT 1 /* replace_file()'s answer for a device that is the program's stdout */

/* Write a file at @pattern (%p = pid) with @fill. 0, IS_STDOUT or -errno;
 * on failure, *@kept tells whether a previous file was there and is left as
 * it was. */
static int replace_file(const char *pattern,
			void (*fill)(struct jw *w, const struct gg_report_figures *f),
			const struct gg_report_figures *f, char *path, size_t path_cap, bool *kept)
{
	char tmp[PATH_MAX + 32];
	struct stat st;
	int fd, err;
	bool there;

	*kept = false;
	if (gg_report_expand_path(pattern, (int)getpid(), path, path_cap))
		return -ENAMETOOLONG;
	/* Another user's link is never followed, nor replaced (paths.h). */
	if ((err = gg_report_link_refused(path)))
		return err;
	there = stat(path, &st) == 0;
	if (there && !S_ISREG(st.st_mode)) {
		/* /dev/null and other character devices: written in place, never
		 * replaced; the rest refused (gg_report_open_output). */
		if ((fd = gg_report_open_output(path, 0, false)) < 0)
			return fd;
		if (gg_report_is_stdout(fd)) { /* /dev/stdout on a terminal */
			close(fd);
			return IS_STDOUT;
		}
		err = fill_fd(fd, fill, f);
		if (close(fd) && !err && errno != EINTR)
			err = -errno;
		return err;
	}
	/* Whatever fails from here on, a previous file is left as it was. */
	*kept = there;
	if ((fd = create_temp(path, tmp, sizeof(tmp))) < 0)
		return fd;
	/* 0644 whatever the umask: node-exporter reads the metrics as another user. */
	(void)fchmod(fd, 0644);
	err = fill_fd(fd, fill, f);
	if (close(fd) && !err && errno != EINTR)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/* The JSON summary or the metrics; an ERROR naming the file and why, when it
 * cannot be written. */
static void write_file(const char *var, const char *pattern,
		       void (*fill)(struct jw *w, const struct gg_report_figures *f),
		       const struct gg_report_figures *f)
{
	char path[PATH_MAX], why[256];
	bool kept;
	int err = replace_file(pattern, fill, f, path, sizeof(path), &kept);

	if (!err)
		return;
	if (err == -ENAMETOOLONG)
		snprintf(path, sizeof(path), "%s", pattern);
	if (err == IS_STDOUT)
		snprintf(why, sizeof(why), "it is the program's stdout, where gpuguard never writes");
	else
		gg_report_output_why(path, err, false, why, sizeof(why));
	gg_report_error("cannot write %s \"%s\": %s%s", var, path, why,
			kept ? "; the previous file is kept" : "");
}

void gg_report_write_json(const char *pattern, const struct gg_report_figures *f)
{
	write_file("GPUGUARD_SUMMARY_JSON", pattern, write_summary, f);
}

/* Every series is labelled with the program's name and the pid, so the files
 * of several processes sit side by side in one textfile collector's directory
 * and an alert can say which program it is about. */
struct labels {
	char text[GG_EXE_LABEL_MAX + 48]; /* exe="NAME",pid="PID" */
};

/* A family's HELP and TYPE. */
static void family(struct jw *w, const char *name, const char *type, const char *help)
{
	jw_printf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One series of @name: the process's labels, then @label="@value" when
 * @label is not NULL. */
static void series(struct jw *w, const struct labels *l, const char *name, const char *label,
		   const char *value, uint64_t n)
{
	jw_puts(w, name);
	jw_raw(w, "{", 1);
	jw_puts(w, l->text);
	if (label)
		jw_printf(w, ",%s=\"%s\"", label, value);
	jw_printf(w, "} %" PRIu64 "\n", n);
}

/* One metric: its HELP, TYPE and value. */
static void metric(struct jw *w, const struct labels *l, const char *name, const char *type,
		   const char *help, uint64_t value)
{
	family(w, name, type, help);
	series(w, l, name, NULL, NULL, value);
}

/* One labelled series per reason, every reason always present (0 included),
 * so a rate() over it never starts from nothing. */
static void unguarded_metric(struct jw *w, const struct labels *l, const struct gg_report_coverage *c)
{
	static const char name[] = "gpuguard_allocations_unguarded_total";

	family(w, name, "counter", "Device allocations given no red zone, by reason.");
	for (int r = 0; r < GG_REASON_COUNT; r++)
		series(w, l, name, "reason", gg_report_reason_name(r), c->unguarded[r]);
}

/* The violations by kind, every kind always present. */
static void kind_metric(struct jw *w, const struct labels *l, const struct gg_report_redzone *z)
{
	static const char name[] = "gpuguard_violations_total";
	const struct {
		const char *kind;
		uint64_t n;
	} kinds[] = {
		{ GG_KIND_OVERRUN, z->violations - z->double_frees - z->invalid_frees -
					   z->api_overruns - z->underflows - z->write_after_frees -
					   z->dangling_launches },
		{ GG_KIND_API_OVERRUN, z->api_overruns },
		{ GG_KIND_UNDERFLOW, z->underflows },
		{ GG_KIND_DOUBLE_FREE, z->double_frees },
		{ GG_KIND_INVALID_FREE, z->invalid_frees },
		{ GG_KIND_WRITE_AFTER_FREE, z->write_after_frees },
		{ GG_KIND_DANGLING_LAUNCH, z->dangling_launches },
	};

	family(w, name, "counter", "Violations found, by kind.");
	for (size_t i = 0; i < GG_ARRAY_SIZE(kinds); i++)
		series(w, l, name, "kind", kinds[i].kind, kinds[i].n);
}

/* The comment that opens the file (report/process.h): which process wrote
 * it, so gpuguard prune-metrics can tell it from a later one with its pid. */
static void process_line(struct jw *w)
{
	unsigned long long ticks, ns;
	char boot[64];

	jw_printf(w, GG_PROCESS_LINE " pid=%d", (int)getpid());
	if (!gg_report_start_ticks(0, &ticks))
		jw_printf(w, " starttime=%llu", ticks);
	if (!gg_report_boot_id(boot, sizeof(boot)))
		jw_printf(w, " boot_id=%s", boot);
	/* The pid means a process of this namespace only: prune-metrics run in
	 * another cannot see it, which is no sign that it is gone. */
	if (!gg_report_pid_ns(&ns))
		jw_printf(w, " pidns=%llu", ns);
	jw_raw(w, "\n", 1);
}

static void write_metrics(struct jw *w, const struct gg_report_figures *f)
{
	const struct gg_report_audit a = f->audit;
	const struct gg_report_redzone z = f->redzone;
	struct labels l;
	char exe[GG_EXE_LABEL_MAX];

	if (gg_report_exe_label(0, exe, sizeof(exe)))
		snprintf(exe, sizeof(exe), "unknown");
	snprintf(l.text, sizeof(l.text), "exe=\"%s\",pid=\"%d\"", exe, (int)getpid());
	process_line(w);
	metric(w, &l, "gpuguard_kernel_lookups_total", "counter", "Kernel lookups intercepted.",
	       a.calls);
	metric(w, &l, "gpuguard_kernel_lookups_failed_total", "counter",
	       "Kernel lookups the driver failed.", a.failed_calls);
	metric(w, &l, "gpuguard_kernel_lookups_unresolved", "gauge",
	       "Required kernels unresolved at the last seal, plus late misses since (before any seal: "
	       "unresolved now).",
	       a.unresolved);
	metric(w, &l, "gpuguard_kernel_lookups_unresolved_required", "gauge",
	       "Required (module, function) pairs never resolved so far, expected-absent ones aside.",
	       a.unresolved_required);
	metric(w, &l, "gpuguard_kernel_lookups_late_misses_total", "counter",
	       "Required kernel lookups that failed after a seal (late misses).", a.late_misses);
	metric(w, &l, "gpuguard_seals_total", "counter", "Seals of the kernel-lookup audit.", a.seals);
	metric(w, &l, "gpuguard_allocations_total", "counter",
	       "Device allocation calls intercepted, failed ones included.", z.calls);
	metric(w, &l, "gpuguard_allocations_guarded_total", "counter",
	       "Device allocations given a red zone.", z.coverage.guarded);
	metric(w, &l, "gpuguard_allocations_live", "gauge", "Padded allocations not yet freed.",
	       z.live);
	metric(w, &l, "gpuguard_allocation_bytes_live", "gauge",
	       "Bytes the application asked for in padded allocations not yet freed.", z.live_bytes);
	metric(w, &l, "gpuguard_redzone_bytes", "gauge",
	       "Guard-band bytes after each allocation (GPUGUARD_REDZONE); 0: red zones off.",
	       gg_config()->redzone);
	metric(w, &l, "gpuguard_redzone_scans_total", "counter", "Scans of every red zone.", z.scans);
	metric(w, &l, "gpuguard_redzone_violations_total", "counter",
	       "Findings: red zones changed, copies and sets refused, double and invalid frees.",
	       z.violations);
	kind_metric(w, &l, &z);
	unguarded_metric(w, &l, &z.coverage);
	metric(w, &l, "gpuguard_launch_errors_total", "counter", "Kernel launches the driver refused.",
	       f->launches_refused);
	metric(w, &l, "gpuguard_module_loads_failed_total", "counter",
	       "Module and library loads the driver refused.", a.loads_failed);
	metric(w, &l, "gpuguard_errors", "gauge",
	       "Findings that make GPUGUARD_EXITCODE apply (as the JSON's errors).", f->errors);
}

void gg_report_write_metrics(const char *pattern, const struct gg_report_figures *f)
{
	write_file("GPUGUARD_METRICS", pattern, write_metrics, f);
}

void gg_report_write_files(const struct gg_report_figures *f)
{
	const struct gg_config *cfg = gg_config();

	pthread_mutex_lock(&files_state.lock);
	/* A boundary in flight when the exit began either finished before it
	 * (the lock) or is dropped here: the exit's files are the last word. */
	if (!files_state.final_begun) {
		files_state.final_begun = f->final;
		if (cfg->summary_json[0])
			gg_report_write_json(cfg->summary_json, f);
		if (cfg->metrics[0])
			gg_report_write_metrics(cfg->metrics, f);
	}
	pthread_mutex_unlock(&files_state.lock);
}

void gg_report_files_atfork_prepare(void)
{
	pthread_mutex_lock(&files_state.lock);
}

void gg_report_files_atfork_parent(void)
{
	pthread_mutex_unlock(&files_state.lock);
}

void gg_report_files_atfork_child(void)
{
	pthread_mutex_init(&files_state.lock, NULL);
	files_state.final_begun = false;
}
