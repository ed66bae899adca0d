/* gpuguard report --junit and --sarif: the findings of the summaries in the
 * formats CI systems read (README, "Three ways to use it"). JUnit XML for
 * GitLab's and Jenkins' test reports: a test case per process, a failure per
 * finding. SARIF 2.1.0 for code scanning: a result per finding at the host call
 * site, with a fingerprint that leaves out what changes from run to run (pids,
 * addresses, times), so that the same finding of two runs is one alert. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/text.h"
#include "cli.h"
#include "json.h"
#include "report.h"

/* ---- characters ------------------------------------------------------------ */

#define REPLACEMENT 0xfffd

/* The character at @s (@n bytes left): its length, at least 1; *@cp is
 * REPLACEMENT for a byte that does not start a valid UTF-8 sequence. */
static size_t next_char(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len = gg_text_utf8_len((const char *)s, n, cp);

	if (!len) {
		*cp = REPLACEMENT;
		return 1;
	}
	return len;
}

/* Character @c, read from @p (@len bytes): an ASCII one as @c says (GLUE
 * is written as a space), another as it was read. */
static void put_char(FILE *f, const unsigned char *p, size_t len, uint32_t c)
{
	if (c == REPLACEMENT)
		fputs("\xef\xbf\xbd", f);
	else if (len == 1)
		fputc((int)c, f);
	else
		fwrite(p, 1, len, f);
}

/* @n bytes of @s as XML character data, or an attribute's value (@attr,
 * which keeps its line breaks as references). XML 1.0 has no way to write
 * the other C0 controls, U+FFFE or U+FFFF, nor bytes that are not UTF-8:
 * they become U+FFFD. The text of a summary comes cleaned (gg_sb_clean), so
 * that is seldom needed; GLUE is a space. */
static void put_xml(FILE *f, const char *s, size_t n, bool attr)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0, len; i < n; i += len) {
		uint32_t c;

		len = next_char(p + i, n - i, &c);
		if (c == (unsigned char)GLUE[0])
			c = ' ';
		else if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0xfffe ||
			 c == 0xffff)
			c = REPLACEMENT;
		if (c == '&')
			fputs("&amp;", f);
		else if (c == '<')
			fputs("&lt;", f);
		else if (c == '>')
			fputs("&gt;", f);
		else if (c == '"' && attr)
			fputs("&quot;", f);
		else if (c == '\r' || (c < 0x20 && attr))
			fprintf(f, "&#%u;", c);
		else
			put_char(f, p + i, len, c);
	}
}

static void put_xml_sb(FILE *f, const struct sb *b, bool attr)
{
	put_xml(f, b->s ? b->s : "", b->len, attr);
}

/* @n bytes of @s as a JSON string, quotes included; bytes that are not UTF-8
 * become U+FFFD, GLUE a space. */
static void put_json(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	for (size_t i = 0, len; i < n; i += len) {
		uint32_t c;

		len = next_char(p + i, n - i, &c);
		if (c == (unsigned char)GLUE[0])
			c = ' ';
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", (int)c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			put_char(f, p + i, len, c);
	}
	fputc('"', f);
}

static void put_json_str(FILE *f, const char *s)
{
	put_json(f, s, strlen(s));
}

static void put_json_sb(FILE *f, const struct sb *b)
{
	put_json(f, b->s ? b->s : "", b->len);
}

/* @scheme, @path as a URI reference (RFC 3986) and @tail, quoted for JSON:
 * the bytes a path segment may not hold %-encoded. */
static void put_uri(FILE *f, const char *scheme, const char *path, const char *tail)
{
	fputc('"', f);
	fputs(scheme, f);
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    strchr("-._~/!$&'()*+,;=:@", *p))
			fputc(*p, f);
		else
			fprintf(f, "%%%02X", *p);
	}
	fputs(tail, f);
	fputc('"', f);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The basename of the string @v (NULs and all): its first byte, its length
 * in *@n; "" when @v is no string. */
static const char *base_of(const struct gg_json *v, size_t *n)
{
	const char *s = gg_json_string(v, ""), *slash;

	*n = gg_json_is(v, GG_JSON_STRING) ? v->u.string.len : 0;
	slash = memrchr(s, '/', *n);
	if (slash) {
		*n -= (size_t)(slash + 1 - s);
		return slash + 1;
	}
	return s;
}

/* ---- findings ------------------------------------------------------------ */

/* A kind of finding: a JUnit failure type and a SARIF rule. */
struct rule {
	const char *id, *name, *short_text, *full_text;
};

enum {
	R_VIOLATION,
	R_UNRESOLVED,
	R_LATE,
	R_OTHER,
	R_DOUBLE_FREE,
	R_INVALID_FREE,
	R_LEAK,
	R_API_OVERRUN,
	R_UNDERFLOW,
	R_WRITE_AFTER_FREE,
	R_DANGLING_LAUNCH,
	R_COVERAGE
};

static const struct rule rules[] = {
	[R_VIOLATION] = { "redzone-violation", "RedZoneViolation",
			  "Bytes past the end of a device allocation changed",
			  "A red-zone band, the bytes gpuguard adds after a device allocation and "
			  "fills "
			  "with a known byte, changed: something wrote past the end of the allocation. "
			  "The location is where the allocation was made." },
	[R_UNRESOLVED] = { "unresolved-kernel", "UnresolvedKernel", "A required kernel was never found",
			   "Every lookup of a kernel that is not declared expected-absent failed (for "
			   "example CUDA_ERROR_NOT_FOUND, or no code for this GPU). The location is "
			   "the "
			   "call site of a failed lookup." },
	[R_LATE] = { "late-miss", "LateMiss", "A kernel lookup failed after the audit was sealed",
		     "After the seal, a lookup of a kernel that is not declared expected-absent "
		     "failed. The gpuguard log names each one with its call site." },
	[R_OTHER] = { "other-error", "OtherError",
		      "An error gpuguard counted that its summary does not itemize",
		      "The summary counts errors that are none of its listed findings (for example a "
		      "failed module load). The gpuguard log names each one." },
	[R_DOUBLE_FREE] = { "double-free", "DoubleFree", "A device allocation was freed twice",
			    "A free was given the address of a device allocation that had been freed "
			    "already. The location is the second free; the allocation's stack and both "
			    "frees' stacks follow." },
	[R_INVALID_FREE] = { "invalid-free", "InvalidFree",
			     "A pointer inside a device allocation was freed",
			     "A free was given an address inside a device allocation, not its start. "
			     "The "
			     "location is the free; the allocation's stack follows." },
	[R_LEAK] = { "leak", "Leak", "Device allocations were still live at exit",
		     "With GPUGUARD_LEAK_CHECK=1, the allocations made at one stack and never freed "
		     "(nor freed with their context) are one finding. The location is where they "
		     "were made." },
	[R_API_OVERRUN] = { "api-overrun", "ApiOverrun",
			    "A copy or set reached past the end of a device allocation",
			    "A driver copy or set (cuMemcpy*, cuMemset*) was given a device range that "
			    "runs "
			    "past the end of an allocation, into the red zone gpuguard adds after it. "
			    "gpuguard "
			    "refused it with the driver's own answer for that range, so it was never "
			    "performed. The location is the call." },
	[R_UNDERFLOW] = { "underflow", "Underflow",
			  "Bytes before the start of a device allocation changed",
			  "The red-zone band of the allocation directly below a device allocation "
			  "changed "
			  "at its top, right below that allocation's start, and only kernels given "
			  "that "
			  "allocation were launched since the band was last seen clean: something "
			  "wrote "
			  "before its start. The location is where the allocation was made." },
	[R_WRITE_AFTER_FREE] = { "write-after-free", "WriteAfterFree",
				 "A freed device allocation was written",
				 "With GPUGUARD_QUARANTINE, a freed allocation is held back from the "
				 "driver and "
				 "filled with a known byte; when it left the quarantine, that fill had "
				 "changed: "
				 "something wrote to it after its free. The location is the free; the "
				 "kernels "
				 "launched with it since (suspects) and both stacks follow." },
	[R_DANGLING_LAUNCH] = { "dangling-launch", "DanglingLaunch",
				"A kernel was launched with a pointer into freed memory",
				"With GPUGUARD_QUARANTINE, a launch was given, as a parameter, a "
				"pointer into "
				"an allocation the program had freed (and gpuguard held back). The "
				"location is "
				"the launch; the allocation and free stacks follow." },
	[R_COVERAGE] = { "no-coverage", "NoCoverage", "Red zones were on and guarded nothing", "" },
};

#define NRULES R_COVERAGE /* the rules of results; no-coverage is the invocation's */

#define FINDING_STACKS 3

struct finding {
	int rule;
	struct sb message;          /* one line */
	struct sb detail;           /* lines: the call sites and what else the summary says */
	const struct gg_json *site; /* where the host called, or NULL */
	uint64_t fingerprint;
	/* Its stacks (SARIF "stacks"), each with what it is. */
	const struct gg_json *stacks[FINDING_STACKS];
	const char *stack_titles[FINDING_STACKS];
	unsigned nstacks;
};

static void add_stack(struct finding *f, const char *title, const struct gg_json *stack)
{
	if (f->nstacks < FINDING_STACKS && gg_json_length(stack)) {
		f->stack_titles[f->nstacks] = title;
		f->stacks[f->nstacks++] = stack;
	}
}

/* "\nTITLE FRAME\n#1 FRAME..." into the detail. */
static void detail_stack(struct finding *f, const char *title, const struct gg_json *stack)
{
	if (!gg_json_length(stack))
		return;
	gg_sb_printf(&f->detail, "\n%s ", title);
	gg_sb_site(&f->detail, gg_json_at(stack, 0));
	gg_sb_stack_tail(&f->detail, stack);
}

/* FNV-1a, 64 bits, over fields each ended by a NUL (so "ab","c" is not
 * "a","bc"). */
#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * FNV_PRIME;
	return h * FNV_PRIME; /* the NUL that ends the field */
}

static uint64_t fnv_cstr(uint64_t h, const char *s)
{
	return fnv(h, s, strlen(s));
}

static uint64_t fnv_str(uint64_t h, const struct gg_json *v)
{
	return gg_json_is(v, GG_JSON_STRING) ? fnv(h, v->u.string.s, v->u.string.len) : fnv(h, "", 0);
}

/* The frame of the host program a site stands for: inside the CUDA runtime
 * linked into a stripped program, the application's frame where
 * gpuguard symbolize named it. */
static const struct gg_json *host_frame(const struct gg_json *site)
{
	const struct gg_json *app = gg_json_get(site, "application");

	if (gg_json_bool(gg_json_get(site, "in_static_runtime"), false) &&
	    gg_json_is(app, GG_JSON_OBJECT))
		return app;
	return site;
}

/* A call site, the same in every run of the same build: the object's
 * basename (its directory may differ between checkouts), the offset in it
 * and the symbol; never the address, which moves with ASLR. */
static uint64_t fnv_site(uint64_t h, const struct gg_json *site)
{
	const struct gg_json *frame = host_frame(site);
	size_t n;
	const char *object = base_of(gg_json_get(frame, "object"), &n);

	h = fnv(h, object, n);
	h = fnv_str(h, gg_json_get(frame, "offset"));
	return fnv_str(h, gg_json_get(frame, "symbol"));
}

/* A module's name without what changes between runs: a handle the shim
 * never saw loaded is "module@0xHANDLE"
 * (docs/how-it-works.md, "The kernel-lookup audit and the gate"). */
static uint64_t fnv_module(uint64_t h, const struct gg_json *module)
{
	if (!strncmp(gg_json_string(module, ""), "module@0x", strlen("module@0x")))
		return fnv_cstr(h, "module@");
	return fnv_str(h, module);
}

/* The kind and the program: findings without a call site of their own. */
static uint64_t fnv_kind_exe(int rule, const struct proc *pr)
{
	size_t n;
	const char *exe = base_of(gg_json_get(pr->root, "exe"), &n);

	return fnv(fnv_cstr(FNV_OFFSET, rules[rule].id), exe, n);
}

/* "name (module, launch N)" of a kernel or a suspect. */
static void sb_kernel(struct sb *b, const struct gg_json *k)
{
	gg_sb_str(b, gg_json_get(k, "name"), "?");
	gg_sb_add(b, " (", 2);
	gg_sb_str(b, gg_json_get(k, "module"), "?");
	gg_sb_printf(b, ", launch %" PRIu64 ")", gg_view_u64(k, "launch"));
}

/* A double or invalid free: located at the free. */
static void free_finding(struct finding *f, const struct violation_group *g)
{
	const struct gg_json *r = g->row, *free_stack = gg_json_get(r, "free_stack");
	bool twice = !strcmp(gg_view_violation_kind(r), GG_REPORT_DOUBLE_FREE);
	uint64_t user = gg_view_u64(r, "user_bytes");
	char size[24];

	f->rule = twice ? R_DOUBLE_FREE : R_INVALID_FREE;
	f->site = gg_json_at(free_stack, 0);
	gg_sb_printf(&f->message, "%s of allocation #%" PRIu64 " (%" PRIu64 " %s): ",
		     twice ? "double free" : "invalid free", gg_view_u64(r, "index"), user,
		     gg_cli_plural(user, "byte", "bytes"));
	gg_sb_str(&f->message, gg_json_get(r, "api"), "free");
	gg_sb_add(&f->message, "(", 1);
	gg_sb_str(&f->message, gg_json_get(r, "address"), "?");
	gg_sb_add(&f->message, ")", 1);
	if (!twice)
		gg_sb_printf(&f->message, ", %" PRIu64 " bytes inside it", gg_view_u64(r, "offset"));
	gg_sb_add(&f->detail, "allocated at ", strlen("allocated at "));
	gg_sb_site(&f->detail, gg_json_get(r, "site"));
	gg_sb_stack_tail(&f->detail, gg_json_get(r, "stack"));
	if (twice)
		detail_stack(f, "first freed at", gg_json_get(r, "first_free_stack"));
	detail_stack(f, twice ? "freed again at" : "freed at", free_stack);
	add_stack(f, "allocation stack", gg_json_get(r, "stack"));
	if (twice)
		add_stack(f, "first free stack", gg_json_get(r, "first_free_stack"));
	add_stack(f, twice ? "second free stack" : "free stack", free_stack);
	/* Where it was freed and where it was made, and its size. */
	f->fingerprint = fnv_site(fnv_cstr(FNV_OFFSET, rules[f->rule].id), f->site);
	f->fingerprint = fnv_site(f->fingerprint, gg_json_get(r, "site"));
	f->fingerprint = fnv(f->fingerprint, size,
			     (size_t)snprintf(size, sizeof(size), "%" PRIu64, user));
}

/* The allocations of one stack live at exit, with GPUGUARD_LEAK_CHECK. */
static void leak_finding(struct finding *f, const struct leak_group *g)
{
	const struct gg_json *stack = gg_json_get(g->row, "stack");

	f->rule = R_LEAK;
	f->site = gg_json_get(g->row, "site");
	gg_sb_printf(&f->message, "leak: %" PRIu64 " %s (%" PRIu64 " %s) still live at exit", g->count,
		     gg_cli_plural(g->count, "allocation", "allocations"), g->bytes,
		     gg_cli_plural(g->bytes, "byte", "bytes"));
	gg_sb_add(&f->detail, "allocated at ", strlen("allocated at "));
	gg_sb_site(&f->detail, f->site);
	gg_sb_stack_tail(&f->detail, stack);
	add_stack(f, "allocation stack", stack);
	/* The stack, not how much leaked, which moves with the run. */
	f->fingerprint = fnv_site(fnv_cstr(FNV_OFFSET, rules[f->rule].id), f->site);
	for (size_t i = 1; i < gg_json_length(stack); i++)
		f->fingerprint = fnv_site(f->fingerprint, gg_json_at(stack, i));
}

/* The kernels a finding names: the one whose checked launch found it, then its
 * suspects. @named, the kernel the message already names (a dangling
 * launch's), is not said again. */
static void detail_kernels(struct finding *f, const struct gg_json *r, const struct gg_json *named)
{
	const struct gg_json *kernel = gg_json_get(r, "kernel"), *suspects = gg_json_get(r, "suspects");

	if (gg_json_is(kernel, GG_JSON_OBJECT) && kernel != named) {
		gg_sb_add(&f->detail, "\nfound after kernel ", strlen("\nfound after kernel "));
		sb_kernel(&f->detail, kernel);
		gg_sb_add(&f->detail, ", launched at ", strlen(", launched at "));
		gg_sb_site(&f->detail, gg_json_get(kernel, "site"));
	}
	for (size_t i = 0; i < gg_json_length(suspects); i++) {
		gg_sb_add(&f->detail, i ? ", " : "\nsuspects: ", i ? 2 : strlen("\nsuspects: "));
		sb_kernel(&f->detail, gg_json_at(suspects, i));
	}
}

/* A write below an allocation's start: located where that allocation was
 * made (the row's "upper"), the band that caught it named after. */
static void underflow_finding(struct finding *f, const struct violation_group *g)
{
	const struct gg_json *r = g->row, *u = gg_json_get(r, "upper");
	uint64_t user = gg_view_u64(u, "user_bytes"), changed = gg_view_u64(r, "changed");
	uint64_t below = gg_view_u64(r, "user_bytes");
	char size[24];

	f->rule = R_UNDERFLOW;
	f->site = gg_json_get(u, "site");
	gg_sb_printf(&f->message,
		     "underflow: %" PRIu64 " %s before the start of allocation #%" PRIu64 " (%" PRIu64
		     " %s) changed, detected by ",
		     changed, gg_cli_plural(changed, "byte", "bytes"), gg_view_u64(u, "index"), user,
		     gg_cli_plural(user, "byte", "bytes"));
	gg_sb_str(&f->message, gg_json_get(r, "detected_by"), "?");
	gg_sb_add(&f->detail, "allocated at ", strlen("allocated at "));
	gg_sb_site(&f->detail, f->site);
	gg_sb_printf(&f->detail,
		     "\nfound in the band of allocation #%" PRIu64 " (%" PRIu64 " %s) "
		     "directly below, allocated at ",
		     gg_view_u64(r, "index"), below, gg_cli_plural(below, "byte", "bytes"));
	gg_sb_site(&f->detail, gg_json_get(r, "site"));
	gg_sb_stack_tail(&f->detail, gg_json_get(r, "stack"));
	add_stack(f, "allocation stack of the one below", gg_json_get(r, "stack"));
	detail_kernels(f, r, NULL);
	/* The allocation and its size, as an overrun's. */
	f->fingerprint = fnv_site(fnv_cstr(FNV_OFFSET, rules[f->rule].id), f->site);
	f->fingerprint = fnv(f->fingerprint, size,
			     (size_t)snprintf(size, sizeof(size), "%" PRIu64, user));
}

/* A write after free (located at the free) or a dangling launch (at the launch). */
static void quarantine_finding(struct finding *f, const struct violation_group *g)
{
	const struct gg_json *r = g->row, *free_stack = gg_json_get(r, "free_stack");
	const struct gg_json *kernel = gg_json_get(r, "kernel");
	bool launch = !strcmp(gg_view_violation_kind(r), GG_REPORT_DANGLING_LAUNCH);
	uint64_t user = gg_view_u64(r, "user_bytes"), changed = gg_view_u64(r, "changed");
	char size[24];

	f->rule = launch ? R_DANGLING_LAUNCH : R_WRITE_AFTER_FREE;
	f->site = launch ? gg_json_get(kernel, "site") : gg_json_at(free_stack, 0);
	if (launch) {
		gg_sb_add(&f->message, "dangling launch: ", strlen("dangling launch: "));
		sb_kernel(&f->message, kernel);
		gg_sb_printf(&f->message,
			     " parameter %" PRIu64 " points into allocation #%" PRIu64 " (%" PRIu64
			     " %s), freed already",
			     gg_view_u64(r, "parameter"), gg_view_u64(r, "index"), user,
			     gg_cli_plural(user, "byte", "bytes"));
	} else {
		gg_sb_printf(&f->message,
			     "write after free: %" PRIu64 " %s of allocation #%" PRIu64 " (%" PRIu64
			     " %s) changed after its free, detected by ",
			     changed, gg_cli_plural(changed, "byte", "bytes"), gg_view_u64(r, "index"),
			     user, gg_cli_plural(user, "byte", "bytes"));
		gg_sb_str(&f->message, gg_json_get(r, "detected_by"), "?");
	}
	gg_sb_add(&f->detail, "allocated at ", strlen("allocated at "));
	gg_sb_site(&f->detail, gg_json_get(r, "site"));
	gg_sb_stack_tail(&f->detail, gg_json_get(r, "stack"));
	detail_stack(f, "freed at", free_stack);
	detail_kernels(f, r, kernel);
	add_stack(f, "allocation stack", gg_json_get(r, "stack"));
	add_stack(f, "free stack", free_stack);
	/* Where it was freed (or launched) and where it was made, and its size. */
	f->fingerprint = fnv_site(fnv_cstr(FNV_OFFSET, rules[f->rule].id), f->site);
	f->fingerprint = fnv_site(f->fingerprint, gg_json_get(r, "site"));
	f->fingerprint = fnv(f->fingerprint, size,
			     (size_t)snprintf(size, sizeof(size), "%" PRIu64, user));
}

static void violation_finding(struct finding *f, const struct violation_group *g)
{
	const struct gg_json *r = g->row;
	uint64_t user = gg_view_u64(r, "user_bytes"), changed = gg_view_u64(r, "changed");
	char size[24];

	if (!strcmp(gg_view_violation_kind(r), GG_REPORT_UNDERFLOW)) {
		underflow_finding(f, g);
		return;
	}
	if (!strcmp(gg_view_violation_kind(r), GG_REPORT_WRITE_AFTER_FREE) ||
	    !strcmp(gg_view_violation_kind(r), GG_REPORT_DANGLING_LAUNCH)) {
		quarantine_finding(f, g);
		return;
	}
	if (strcmp(gg_view_violation_kind(r), GG_REPORT_OVERRUN)) {
		free_finding(f, g);
		return;
	}
	f->rule = R_VIOLATION;
	f->site = gg_json_get(r, "site");
	gg_sb_printf(&f->message,
		     "red-zone violation: %" PRIu64 " %s past the end of allocation #%" PRIu64
		     " (%" PRIu64 " %s) changed, detected by ",
		     changed, gg_cli_plural(changed, "byte", "bytes"), gg_view_u64(r, "index"), user,
		     gg_cli_plural(user, "byte", "bytes"));
	gg_sb_str(&f->message, gg_json_get(r, "detected_by"), "?");
	gg_sb_add(&f->detail, "allocated at ", strlen("allocated at "));
	gg_sb_site(&f->detail, f->site);
	gg_sb_stack_tail(&f->detail, gg_json_get(r, "stack"));
	add_stack(f, "allocation stack", gg_json_get(r, "stack"));
	detail_kernels(f, r, NULL);
	/* The allocation and its size; not its index, the band's size or how the
	 * change was found, which move with threads, settings and timing. */
	f->fingerprint = fnv_site(fnv_cstr(FNV_OFFSET, rules[f->rule].id), f->site);
	f->fingerprint = fnv(f->fingerprint, size,
			     (size_t)snprintf(size, sizeof(size), "%" PRIu64, user));
}

/* A refused copy or set, located at its call. */
static void api_overrun_finding(struct finding *f, const struct violation_group *g)
{
	const struct gg_json *r = g->row;
	uint64_t user = gg_view_u64(r, "user_bytes"), bytes = gg_view_u64(r, "bytes");
	char size[48];

	f->rule = R_API_OVERRUN;
	f->site = gg_json_get(r, "call_site");
	gg_sb_add(&f->message, "copy or set past the end: ", strlen("copy or set past the end: "));
	gg_sb_str(&f->message, gg_json_get(r, "api"), "?");
	gg_sb_add(&f->message, " ", 1);
	gg_sb_str(&f->message, gg_json_get(r, "side"), "?");
	gg_sb_printf(&f->message, " of %" PRIu64 " %s at ", bytes,
		     gg_cli_plural(bytes, "byte", "bytes"));
	gg_sb_str(&f->message, gg_json_get(r, "address"), "?");
	gg_sb_printf(&f->message,
		     " reaches past allocation #%" PRIu64 " (%" PRIu64 " %s), refused with ",
		     gg_view_u64(r, "index"), user, gg_cli_plural(user, "byte", "bytes"));
	gg_sb_str(&f->message, gg_json_get(r, "result"), "?");
	gg_sb_add(&f->detail, "called at ", strlen("called at "));
	gg_sb_site(&f->detail, f->site);
	gg_sb_add(&f->detail, "\nallocated at ", strlen("\nallocated at "));
	gg_sb_site(&f->detail, gg_json_get(r, "site"));
	gg_sb_stack_tail(&f->detail, gg_json_get(r, "stack"));
	add_stack(f, "allocation stack", gg_json_get(r, "stack"));
	/* The call, the function and the sizes; not the addresses or the index. */
	f->fingerprint = fnv_site(fnv_cstr(FNV_OFFSET, rules[f->rule].id), f->site);
	f->fingerprint = fnv_str(f->fingerprint, gg_json_get(r, "api"));
	f->fingerprint = fnv(f->fingerprint, size,
			     (size_t)snprintf(size, sizeof(size), "%" PRIu64 " %" PRIu64, bytes, user));
}

static void unresolved_finding(struct finding *f, const struct proc *pr, const struct pair_group *g)
{
	f->rule = R_UNRESOLVED;
	f->site = g->nsites ? g->sites[0].site : NULL;
	gg_sb_add(&f->message, "required kernel ", strlen("required kernel "));
	gg_sb_str(&f->message, g->module, "?");
	gg_sb_add(&f->message, "::", 2);
	gg_sb_str(&f->message, g->function, "?");
	gg_sb_printf(&f->message, " never resolved (%" PRIu64 " failed %s)", g->count,
		     gg_cli_plural(g->count, "lookup", "lookups"));
	for (size_t i = 0; i < g->nsites; i++)
		gg_sb_printf(&f->detail, "%s%" PRIu64 "x %s at %s", i ? "\n" : "", g->sites[i].count,
			     g->sites[i].result, g->sites[i].text);
	if (!g->nsites)
		gg_sb_add(&f->detail, "no call site recorded", strlen("no call site recorded"));
	/* The program and the kernel: the call sites of one missing kernel
	 * are one finding. */
	f->fingerprint = fnv_module(fnv_kind_exe(f->rule, pr), g->module);
	f->fingerprint = fnv_str(f->fingerprint, g->function);
}

static void late_finding(struct finding *f, const struct proc *pr, uint64_t late)
{
	static const char see[] = "the gpuguard log names each one (module::function and call site)";

	f->rule = R_LATE;
	gg_sb_printf(&f->message, "%" PRIu64 " kernel %s failed after the seal (late %s)", late,
		     gg_cli_plural(late, "lookup", "lookups"), gg_cli_plural(late, "miss", "misses"));
	gg_sb_add(&f->detail, see, strlen(see));
	f->fingerprint = fnv_kind_exe(f->rule, pr);
}

static void other_finding(struct finding *f, const struct proc *pr)
{
	static const char see[] = "the gpuguard log names each one on an ERROR line";

	f->rule = R_OTHER;
	gg_sb_printf(&f->message, "%" PRIu64 " %s counted that the summary does not itemize",
		     pr->errors, gg_cli_plural(pr->errors, "error", "errors"));
	gg_sb_add(&f->detail, see, strlen(see));
	f->fingerprint = fnv_kind_exe(f->rule, pr);
}

typedef int (*finding_fn)(void *ctx, const struct proc *pr, const struct finding *f);

/* Hand @f to @fn, then empty it. */
static int deliver(struct finding *f, const struct proc *pr, finding_fn fn, void *ctx, size_t *n)
{
	int err = f->message.oom || f->detail.oom ? -ENOMEM : fn(ctx, pr, f);

	free(f->message.s);
	free(f->detail.s);
	memset(f, 0, sizeof(*f));
	++*n;
	return err;
}

/* Call @fn for each finding of @pr: each required kernel never resolved,
 * each red-zone violation, its late misses, and, when it counts errors that
 * are none of these, one that says so: a process that failed never passes.
 * 0, or the first error @fn returned. */
static int each_finding(const struct proc *pr, finding_fn fn, void *ctx)
{
	struct proc one = *pr;
	struct view vw = { .procs = &one, .nprocs = 1 };
	uint64_t late = gg_view_u64(gg_json_get(pr->root, "lookups"), "late_misses");
	bool leak_check = gg_json_bool(gg_json_get(gg_json_get(pr->root, "config"), "leak_check"),
				       false);
	struct finding f = { 0 };
	size_t n = 0;
	int err = 0;

	gg_view_group(&vw);
	for (size_t i = 0; i < vw.npairs && !err; i++) {
		if (!vw.pairs[i].required)
			continue;
		unresolved_finding(&f, pr, &vw.pairs[i]);
		err = deliver(&f, pr, fn, ctx, &n);
	}
	for (size_t i = 0; i < vw.nviolations && !err; i++) {
		if (gg_view_is_api_overrun(vw.violations[i].row))
			api_overrun_finding(&f, &vw.violations[i]);
		else
			violation_finding(&f, &vw.violations[i]);
		err = deliver(&f, pr, fn, ctx, &n);
	}
	/* Leaks are findings only where the run made them errors. */
	for (size_t i = 0; leak_check && i < vw.nleaks && !err; i++) {
		leak_finding(&f, &vw.leaks[i]);
		err = deliver(&f, pr, fn, ctx, &n);
	}
	if (late && !err) {
		late_finding(&f, pr, late);
		err = deliver(&f, pr, fn, ctx, &n);
	}
	if (pr->errors && !n && !err) {
		other_finding(&f, pr);
		err = deliver(&f, pr, fn, ctx, &n);
	}
	gg_view_free_groups(&vw);
	return err;
}

static int count_finding(void *ctx, const struct proc *pr, const struct finding *f)
{
	(void)pr;
	(void)f;
	++*(size_t *)ctx;
	return 0;
}

/* Write @path with @body. 0 or -errno. */
static int write_file(const char *path, int (*body)(FILE *f, const void *arg), const void *arg)
{
	FILE *f = fopen(path, "w");
	int err;

	if (!f)
		return -errno;
	err = body(f, arg);
	if (ferror(f) && !err)
		err = errno ? -errno : -EIO;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

struct ci {
	const struct proc *procs;
	size_t nprocs;
	const struct verdict *v;
};

/* ---- JUnit XML -------------------------------------------------------------- */

/* "app (pid 4711)": the program's basename and the pid, or the file's name
 * for one that could not be read. */
static void sb_case_name(struct sb *b, const struct proc *pr)
{
	size_t n;
	const char *exe = base_of(gg_json_get(pr->root, "exe"), &n);

	if (!pr->root) {
		gg_sb_clean(b, pr->file, strlen(pr->file));
		return;
	}
	if (n) {
		gg_sb_clean(b, exe, n);
		gg_sb_add(b, " ", 1);
	}
	gg_sb_printf(b, "(pid %" PRIu64 ")", pr->pid);
}

/* A JUnit test case's name: the program's basename, the same from run to
 * run so a CI system follows the test (the pid is a property of the case);
 * the file's name for one that could not be read, "(pid N)" when the
 * summary has no program. */
static void sb_junit_name(struct sb *b, const struct proc *pr)
{
	size_t n;
	const char *exe = base_of(gg_json_get(pr->root, "exe"), &n);

	if (pr->root && n)
		gg_sb_clean(b, exe, n);
	else
		sb_case_name(b, pr);
}

static void junit_element(FILE *f, const char *element, const char *type, const struct sb *message,
			  const struct sb *text)
{
	fprintf(f, "      <%s type=\"%s\" message=\"", element, type);
	put_xml_sb(f, message, true);
	if (!text) {
		fputs("\"/>\n", f);
		return;
	}
	fputs("\">", f);
	put_xml_sb(f, text, false);
	fprintf(f, "</%s>\n", element);
}

static int junit_failure(void *ctx, const struct proc *pr, const struct finding *fd)
{
	(void)pr;
	junit_element(ctx, "failure", rules[fd->rule].id, &fd->message, &fd->detail);
	return 0;
}

/* A message of the command's own (a reason a file was skipped, a coverage
 * verdict), cleaned like the text of a summary. */
static void sb_note(struct sb *b, const char *s)
{
	s = s ? s : "out of memory";
	b->len = 0;
	gg_sb_clean(b, s, strlen(s));
}

static int junit_body(FILE *f, const void *arg)
{
	const struct ci *ci = arg;
	const struct verdict *v = ci->v;
	size_t tests = ci->nprocs + (v->set[0] != 0), failures = v->set[0] != 0, errors = 0;
	struct sb b = { 0 };
	int err = 0;

	for (size_t i = 0; i < ci->nprocs && !err; i++) {
		size_t n = v->blind && v->blind[i];

		if (!ci->procs[i].root)
			errors++;
		else if (!(err = each_finding(&ci->procs[i], count_finding, &n)) && n)
			failures++;
	}
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
	fprintf(f, "<testsuites name=\"gpuguard\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\">\n",
		tests, failures, errors);
	fprintf(f,
		"  <testsuite name=\"gpuguard\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" "
		"skipped=\"0\">\n",
		tests, failures, errors);
	for (size_t i = 0; i < ci->nprocs && !err; i++) {
		const struct proc *pr = &ci->procs[i];

		sb_junit_name(&b, pr);
		fputs("    <testcase name=\"", f);
		put_xml_sb(f, &b, true);
		fputs("\" classname=\"gpuguard\">\n", f);
		if (pr->root)
			fprintf(f,
				"      <properties><property name=\"pid\" value=\"%" PRIu64
				"\"/></properties>\n",
				pr->pid);
		if (!pr->root) {
			sb_note(&b, pr->why);
			junit_element(f, "error", "unreadable-summary", &b, NULL);
		} else {
			err = each_finding(pr, junit_failure, f);
		}
		if (v->blind && v->blind[i]) {
			sb_note(&b, v->why[i]);
			junit_element(f, "failure", rules[R_COVERAGE].id, &b, NULL);
		}
		fputs("    </testcase>\n", f);
		b.len = 0;
	}
	if (v->set[0]) {
		fputs("    <testcase name=\"coverage\" classname=\"gpuguard\">\n", f);
		sb_note(&b, v->set);
		junit_element(f, "failure", rules[R_COVERAGE].id, &b, NULL);
		fputs("    </testcase>\n", f);
	}
	fputs("  </testsuite>\n</testsuites>\n", f);
	if (b.oom && !err)
		err = -ENOMEM;
	free(b.s);
	return err;
}

int gg_ci_junit(const char *path, const struct proc *procs, size_t nprocs, const struct verdict *v)
{
	const struct ci ci = { procs, nprocs, v };

	return write_file(path, junit_body, &ci);
}

/* ---- SARIF 2.1.0 ------------------------------------------------------------ */

#define SRCROOT "%SRCROOT%"

struct sarif {
	FILE *f;
	const char *cwd; /* below it, paths are relative to SRCROOT; NULL: none */
	size_t results;
};

/* An artifactLocation's members for @path: relative to SRCROOT (the
 * directory gpuguard report runs in, as a CI job's checkout) when it lies
 * below it or is relative already, else a file: URI. */
static void put_artifact(const struct sarif *s, const char *path)
{
	size_t n = s->cwd ? strlen(s->cwd) : 0;

	fputs("\"artifactLocation\": { \"uri\": ", s->f);
	if (path[0] != '/') {
		put_uri(s->f, "", path, "");
	} else if (n && !strncmp(path, s->cwd, n) && path[n] == '/' && path[n + 1]) {
		put_uri(s->f, "", path + n + 1, "");
	} else {
		put_uri(s->f, "file://", path, "");
		fputs(" }", s->f);
		return;
	}
	fputs(", \"uriBaseId\": \"" SRCROOT "\" }", s->f);
}

/* The host call site of @site as a SARIF location: the source line where
 * gpuguard symbolize found one, else the object and the offset in it (SARIF
 * §3.32.11 writes that "object+0xOFFSET"); the program when the site is
 * unknown. An empty location when even that is. */
static void put_location(const struct sarif *s, const struct proc *pr, const struct gg_json *site);

/* A result's "locations": @site's, none when nothing of it is known. */
static void put_locations(const struct sarif *s, const struct proc *pr, const struct gg_json *site)
{
	const struct gg_json *frame = host_frame(site);
	const char *line = gg_json_string(gg_json_get(frame, "line"), NULL);
	const char *object = gg_json_string(gg_json_get(frame, "object"), "");
	const char *exe = gg_json_string(gg_json_get(pr->root, "exe"), "");

	if (!(line && strrchr(line, ':') && strtoul(strrchr(line, ':') + 1, NULL, 10)) && !*object &&
	    !*exe)
		return;
	fputs(",\n      \"locations\": [ ", s->f);
	put_location(s, pr, site);
	fputs(" ]", s->f);
}

/* A stack (SARIF §3.44) of the frames of @stack, said to be @title. */
static void put_stack(const struct sarif *s, const struct proc *pr, const char *title,
		      const struct gg_json *stack)
{
	fputs("{ \"message\": { \"text\": ", s->f);
	put_json_str(s->f, title);
	fputs(" },\n          \"frames\": [", s->f);
	for (size_t i = 0; i < gg_json_length(stack); i++) {
		fputs(i ? ",\n            { \"location\": " : "\n            { \"location\": ", s->f);
		put_location(s, pr, gg_json_at(stack, i));
		fputs(" }", s->f);
	}
	fputs(" ] }", s->f);
}

static void put_location(const struct sarif *s, const struct proc *pr, const struct gg_json *site)
{
	const struct gg_json *frame = host_frame(site);
	const char *line = gg_json_string(gg_json_get(frame, "line"), NULL);
	const char *object = gg_json_string(gg_json_get(frame, "object"), "");
	const char *symbol = gg_json_string(gg_json_get(frame, "symbol"), NULL);
	const char *exe = gg_json_string(gg_json_get(pr->root, "exe"), "");
	const char *colon = line ? strrchr(line, ':') : NULL;
	unsigned long number = colon ? strtoul(colon + 1, NULL, 10) : 0;
	uint64_t offset = 0;

	if (!number && !*object && !*exe) {
		fputs("{ }", s->f);
		return;
	}
	fputs("{ \"physicalLocation\": { ", s->f);
	if (number && colon > line) {
		char *file = strndup(line, (size_t)(colon - line));

		put_artifact(s, file ? file : "");
		free(file);
		fprintf(s->f, ", \"region\": { \"startLine\": %lu }", number);
	} else if (*object && gg_view_hex(gg_json_get(frame, "offset"), &offset)) {
		char name[PATH_MAX + 32];

		put_artifact(s, object);
		snprintf(name, sizeof(name), "%s+0x%" PRIx64, base_name(object), offset);
		fputs(", \"address\": { \"kind\": \"instruction\", \"fullyQualifiedName\": ", s->f);
		put_json_str(s->f, name);
		if (symbol) {
			fputs(", \"name\": ", s->f);
			put_json_str(s->f, symbol);
		}
		fputs(" }", s->f);
	} else {
		put_artifact(s, exe);
	}
	fputs(" }", s->f);
	/* The function, by the symbol without its offset. */
	if (symbol && strstr(symbol, "+0x")) {
		fputs(",\n        \"logicalLocations\": [ { \"name\": ", s->f);
		put_json(s->f, symbol, (size_t)(strrchr(symbol, '+') - symbol));
		fputs(", \"kind\": \"function\" } ]", s->f);
	}
	fputs(" }", s->f);
}

static int sarif_result(void *ctx, const struct proc *pr, const struct finding *fd)
{
	struct sarif *s = ctx;
	FILE *f = s->f;
	struct sb text = { 0 };

	gg_sb_add(&text, fd->message.s, fd->message.len);
	gg_sb_add(&text, " in ", 4);
	sb_case_name(&text, pr);
	gg_sb_add(&text, ".\n", 2);
	gg_sb_add(&text, fd->detail.s, fd->detail.len);
	fprintf(f,
		"%s    { \"ruleId\": \"%s\", \"ruleIndex\": %d, \"level\": \"error\",\n"
		"      \"message\": { \"text\": ",
		s->results++ ? ",\n" : "", rules[fd->rule].id, fd->rule);
	put_json_sb(f, &text);
	fputs(" }", f);
	put_locations(s, pr, fd->site);
	if (fd->nstacks) {
		fputs(",\n      \"stacks\": [ ", f);
		for (unsigned i = 0; i < fd->nstacks; i++) {
			fputs(i ? ",\n        " : "", f);
			put_stack(s, pr, fd->stack_titles[i], fd->stacks[i]);
		}
		fputs(" ]", f);
	}
	fprintf(f,
		",\n      \"partialFingerprints\": { \"gpuguardFinding/v1\": \"%016" PRIx64
		"\" },\n      \"properties\": { \"pid\": %" PRIu64 ", \"summary\": ",
		fd->fingerprint, pr->pid);
	put_json_str(f, pr->file);
	fputs(" } }", f);
	free(text.s);
	return text.oom ? -ENOMEM : 0;
}

static void sarif_notification(FILE *f, bool *first, const char *what, const char *why)
{
	struct sb b = { 0 };

	gg_sb_printf(&b, "%s: %s", what, why ? why : "out of memory");
	fprintf(f, "%s        { \"level\": \"error\", \"message\": { \"text\": ", *first ? "" : ",\n");
	put_json_sb(f, &b);
	fputs(" } }", f);
	*first = false;
	free(b.s);
}

static void sarif_invocation(FILE *f, const struct ci *ci)
{
	const struct verdict *v = ci->v;
	bool first = true;

	fputs("      \"invocations\": [ { \"executionSuccessful\": ", f);
	for (size_t i = 0; i < ci->nprocs && first; i++)
		first = ci->procs[i].root && !(v->blind && v->blind[i]);
	fputs(first && !v->set[0] ? "true" : "false", f);
	if (!first || v->set[0]) {
		first = true;
		fputs(",\n        \"toolExecutionNotifications\": [\n", f);
		for (size_t i = 0; i < ci->nprocs; i++) {
			if (!ci->procs[i].root)
				sarif_notification(f, &first, ci->procs[i].file, ci->procs[i].why);
			else if (v->blind && v->blind[i])
				sarif_notification(f, &first, "--require-coverage", v->why[i]);
		}
		if (v->set[0])
			sarif_notification(f, &first, "--require-coverage", v->set);
		fputs(" ]", f);
	}
	fputs(" } ],\n", f);
}

static void sarif_rules(FILE *f)
{
	for (int i = 0; i < NRULES; i++) {
		fprintf(f,
			"%s          { \"id\": \"%s\", \"name\": \"%s\",\n"
			"            \"shortDescription\": { \"text\": ",
			i ? ",\n" : "", rules[i].id, rules[i].name);
		put_json_str(f, rules[i].short_text);
		fputs(" },\n            \"fullDescription\": { \"text\": ", f);
		put_json_str(f, rules[i].full_text);
		fputs(" },\n            \"defaultConfiguration\": { \"level\": \"error\" } }", f);
	}
}

static int sarif_body(FILE *f, const void *arg)
{
	const struct ci *ci = arg;
	char cwd[PATH_MAX];
	struct sarif s = { f, getcwd(cwd, sizeof(cwd)), 0 };
	int err = 0;

	if (s.cwd && !strcmp(s.cwd, "/"))
		s.cwd = NULL;
	fputs("{\n  \"$schema\": \"https://json.schemastore.org/sarif-2.1.0.json\",\n"
	      "  \"version\": \"2.1.0\",\n  \"runs\": [\n    {\n"
	      "      \"tool\": { \"driver\": { \"name\": \"gpuguard\",\n"
	      "        \"rules\": [\n",
	      f);
	sarif_rules(f);
	fputs(" ] } },\n", f);
	if (s.cwd) {
		fputs("      \"originalUriBaseIds\": { \"" SRCROOT "\": { \"uri\": ", f);
		/* A directory's URI ends with a slash (SARIF §3.14.14). */
		put_uri(f, "file://", s.cwd, "/");
		fputs(" } },\n", f);
	}
	sarif_invocation(f, ci);
	fputs("      \"results\": [\n", f);
	for (size_t i = 0; i < ci->nprocs && !err; i++)
		if (ci->procs[i].root)
			err = each_finding(&ci->procs[i], sarif_result, &s);
	fputs(" ]\n    }\n  ]\n}\n", f);
	return err;
}

int gg_ci_sarif(const char *path, const struct proc *procs, size_t nprocs, const struct verdict *v)
{
	const struct ci ci = { procs, nprocs, v };

	return write_file(path, sarif_body, &ci);
}
