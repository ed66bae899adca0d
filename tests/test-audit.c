/* Kernel-lookup audit and seal gate (docs/how-it-works.md, "The kernel-lookup audit and
 * the gate"), and the launch:N and sync:N boundaries (docs/how-it-works.md, "Boundaries,
 * signals, exit"). Integration tests run app-audit under the shim. */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "audit/audit.h"
#include "boundary/boundary.h"
#include "callsite/callsite.h"
#include "harness.h"

#define APP(name) GG_APPS "/" name
#define AUDIT APP("app-audit")
#define PTX_FILE "file:" GG_PTX
#define GG_ARRAY_SIZE_T(a) (sizeof(a) / sizeof((a)[0]))

/* One run of app-audit with its JSON summary in a fresh directory. */

static void run_audit(struct gg_app_run *a, const char *const *env, const char *const *steps)
{
	gg_app_run(a, AUDIT, env, steps);
}

/* The JSON value of @expr as a string; the caller frees. */
static char *json(struct gg_app_run *a, const char *expr)
{
	return gg_json(a->json, expr);
}

static void assert_json(struct gg_app_run *a, const char *expr, const char *want)
{
	char *got = json(a, expr);

	cr_assert_str_eq(got, want, "%s\ngot:  %s\nwant: %s\nstderr:\n%s", expr, got, want, a->r.err);
	free(got);
}

/* The only unresolved row's field, e.g. unresolved_field(a, "['module']"). */
static char *only_row(struct gg_app_run *a, const char *field)
{
	char expr[128];

	assert_json(a, "len(j['unresolved'])", "1");
	snprintf(expr, sizeof(expr), "j['unresolved'][0]%s", field);
	return json(a, expr);
}

/* ---- every route records lookups against their call site ---- */

Test(audit, lookups_on_every_route_are_recorded_with_their_call_site)
{
	static const char *const apps[] = { APP("app-direct"), APP("app-dlsym"), APP("app-procaddr") };

	for (size_t i = 0; i < sizeof(apps) / sizeof(apps[0]); i++) {
		char dir[64], path[128], env[160];
		struct gg_run r;

		gg_test_dir(dir, sizeof(dir));
		snprintf(path, sizeof(path), "%s/s.json", dir);
		snprintf(env, sizeof(env), "GPUGUARD_SUMMARY_JSON=%s", path);
		gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE, (const char *[]){ env, NULL },
		       (const char *[]){ apps[i], GG_PTX, NULL });
		cr_assert_eq(gg_run_exit(&r), 0, "%s: %s", apps[i], r.err);
		char *row = gg_json(path,
				    "[(u['module'], u['function'], u['count'], u['result'], "
				    "u['site']['symbol'].split('+')[0]) for u in j['unresolved']]");

		cr_assert_str_eq(row,
				 "[('kernels.ptx', 'no_such_kernel', 1, 'CUDA_ERROR_NOT_FOUND', "
				 "'app_scenario')]",
				 "%s", apps[i]);
		free(row);
		char *totals = gg_json(path, "(j['lookups']['total'], j['lookups']['resolved'], "
					     "j['lookups']['calls'], j['lookups']['failed_calls'])");

		cr_assert_str_eq(totals, "(2, 1, 2, 1)", "%s", apps[i]);
		free(totals);
		gg_run_free(&r);
		gg_test_dir_remove(dir);
	}
}

Test(audit, call_sites_are_kept_apart_and_counted)
{
	struct gg_app_run a;

	run_audit(&a, NULL,
		  (const char *[]){ PTX_FILE, "get:nope", "get:nope", "get2:nope", "get:other", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a,
		    "sorted((u['function'], u['site']['symbol'].split('+')[0], u['count']) "
		    "for u in j['unresolved'])",
		    "[('nope', 'lookup_a', 2), ('nope', 'lookup_b', 1), ('other', 'lookup_a', 1)]");
	/* Address, object and offset agree with each other. */
	assert_json(&a,
		    "all(u['site']['object'].endswith('/app-audit') and "
		    "int(u['site']['address'], 16) > int(u['site']['offset'], 16) > 0 "
		    "for u in j['unresolved'])",
		    "True");
	assert_json(&a, "j['lookups']['unresolved_required']", "2");
	gg_app_run_free(&a);
}

/* ---- module names ---- */

Test(audit, module_from_a_file_is_named_by_its_basename)
{
	struct gg_app_run a;

	run_audit(&a, NULL, (const char *[]){ PTX_FILE, "get:nope", NULL });
	char *m = only_row(&a, "['module']");

	cr_assert_str_eq(m, "kernels.ptx");
	free(m);
	gg_app_run_free(&a);
}

Test(audit, library_from_a_file_is_named_by_its_basename)
{
	struct gg_app_run a;

	run_audit(&a, NULL, (const char *[]){ "lib:" GG_PTX, "kernel:gg_fill", "kernel:nope", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	char *m = only_row(&a, "['module'] + '::' + j['unresolved'][0]['function']");

	cr_assert_str_eq(m, "kernels.ptx::nope");
	free(m);
	assert_json(&a, "j['lookups']['resolved']", "1");
	gg_app_run_free(&a);
}

Test(audit, image_inside_a_mapped_object_is_named_object_plus_offset)
{
	struct gg_app_run a;
	unsigned long off = 0;
	char want[64];

	run_audit(&a, NULL, (const char *[]){ "static", "get:static_only", "get:nope", NULL });
	const char *line = strstr(a.r.out, "static image at +0x");

	cr_assert_not_null(line, "%s", a.r.out);
	cr_assert_eq(sscanf(line, "static image at +0x%lx", &off), 1);
	snprintf(want, sizeof(want), "app-audit+0x%lx", off);
	char *m = only_row(&a, "['module']");

	cr_assert_str_eq(m, want);
	free(m);
	gg_app_run_free(&a);
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 14695981039346656037ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

Test(audit, image_on_the_heap_is_named_by_its_hash)
{
	struct gg_app_run a;
	char want[64];
	char *ptx = gg_read_file(GG_PTX);

	cr_assert_not_null(ptx);
	snprintf(want, sizeof(want), "image:%016" PRIx64, fnv1a(ptx));
	run_audit(&a, NULL, (const char *[]){ "data:" GG_PTX, "get:nope", NULL });
	char *m = only_row(&a, "['module']");

	cr_assert_str_eq(m, want);
	free(m);
	free(ptx);
	gg_app_run_free(&a);
}

static void assert_named_by_handle(const char *step, const char *printed)
{
	struct gg_app_run a;
	char want[64];
	void *handle = NULL;

	run_audit(&a, NULL, (const char *[]){ "lib:" GG_PTX, PTX_FILE, step, "get:nope", NULL });
	const char *line = strstr(a.r.out, printed);

	cr_assert_not_null(line, "%s", a.r.out);
	cr_assert_eq(sscanf(line + strlen(printed), "%p", &handle), 1);
	snprintf(want, sizeof(want), "module@%p", handle);
	char *m = only_row(&a, "['module']");

	cr_assert_str_eq(m, want);
	free(m);
	gg_app_run_free(&a);
}

/* cuLibraryGetModule: the library's module is looked up under its name. */
Test(audit, a_librarys_module_is_named_as_its_library)
{
	struct gg_app_run a;
	char *m;

	run_audit(&a, NULL, (const char *[]){ "lib:" GG_PTX, PTX_FILE, "libmodule", "get:nope", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	m = only_row(&a, "['module']");
	cr_expect_str_eq(m, "kernels.ptx");
	free(m);
	gg_app_run_free(&a);
}

Test(audit, unloading_forgets_the_handle)
{
	assert_named_by_handle("stale", "stale ");
}

static void name_of_row(void *ctx, const struct gg_report_row *r)
{
	snprintf(ctx, 64, "%s::%s", r->module, r->function);
}

Test(audit, handle_never_seen_loading_is_named_by_its_value)
{
	char name[64] = "", want[64];
	void *h = (void *)(uintptr_t)0xfeed0;

	gg_audit_lookup("cuModuleGetFunction", GG_AUDIT_MODULE, h, "k", 500, "CUDA_ERROR_NOT_FOUND",
			NULL);
	gg_audit_foreach_unresolved(name_of_row, name);
	snprintf(want, sizeof(want), "module@%p::k", h);
	cr_assert_str_eq(name, want);
}

Test(audit, reused_handle_gets_its_new_name)
{
	void *h = (void *)(uintptr_t)0x5eed0;
	char name[64] = "";

	gg_audit_load_file(GG_AUDIT_MODULE, "/first/a.ptx", 0, "CUDA_SUCCESS", h);
	gg_audit_unloaded(GG_AUDIT_MODULE, h);
	gg_audit_load_file(GG_AUDIT_MODULE, "/second/b.ptx", 0, "CUDA_SUCCESS", h);
	gg_audit_load_file(GG_AUDIT_LIBRARY, "/other/lib.ptx", 0, "CUDA_SUCCESS", h);
	gg_audit_lookup("cuModuleGetFunction", GG_AUDIT_MODULE, h, "k", 500, "CUDA_ERROR_NOT_FOUND",
			NULL);
	gg_audit_foreach_unresolved(name_of_row, name);
	cr_assert_str_eq(name, "b.ptx::k");
}

/* ---- image lengths and hashes (unit) ---- */

Test(audit, hash_is_64_bit_fnv1a)
{
	cr_assert_eq(gg_audit_hash("", 0), 0xcbf29ce484222325ull);
	cr_assert_eq(gg_audit_hash("a", 1), 0xaf63dc4c8601ec8cull);
}

/* A mapping of @size bytes whose next page is PROT_NONE, and where an image
 * of @n bytes starts to end right before it (memory of no object: named by
 * hash). */
struct guarded {
	unsigned char *base;
	size_t span;
};

static unsigned char *guarded_at(struct guarded *g, size_t size, size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	g->span = (size + page - 1) / page * page + page;
	g->base = mmap(NULL, g->span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert(g->base != MAP_FAILED);
	cr_assert_eq(mprotect(g->base + g->span - page, page, PROT_NONE), 0);
	memset(g->base, 0x5a, g->span - page);
	return g->base + g->span - page - n;
}

static void guarded_free(struct guarded *g)
{
	munmap(g->base, g->span);
}

static void put16(unsigned char *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static void put64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* A 64-bit ELF header: section headers at @shoff (@shnum of 64 bytes),
 * program headers at @phoff (@phnum of @phentsize bytes). */
static void elf_header(unsigned char *p, uint64_t shoff, unsigned shnum, uint64_t phoff, unsigned phnum,
		       unsigned phentsize)
{
	memset(p, 0, 64);
	memcpy(p,
	       "\x7f"
	       "ELF",
	       4);
	p[4] = 2;
	p[5] = 1;
	put64(p + 0x20, phoff);
	put64(p + 0x28, shoff);
	put16(p + 0x36, (uint16_t)phentsize);
	put16(p + 0x38, (uint16_t)phnum);
	put16(p + 0x3a, 64);
	put16(p + 0x3c, (uint16_t)shnum);
}

static void fatbin_header(unsigned char *p, uint16_t header_size, uint64_t fat_size)
{
	memcpy(p, (const unsigned char[]){ 0x50, 0xed, 0x55, 0xba, 1, 0 }, 6);
	put16(p + 6, header_size);
	put64(p + 8, fat_size);
}

static void expect_name(const void *image, const void *bytes, size_t n, const char *what)
{
	char name[GG_AUDIT_NAME_MAX], want[64];

	snprintf(want, sizeof(want), "image:%016" PRIx64, gg_audit_hash(bytes, n));
	gg_audit_name_image(image, true, name, sizeof(name));
	cr_expect_str_eq(name, want, "%s", what);
}

/* The bytes each format says it holds, no more: an ELF its header and its
 * tables (the last of them ends it), a fatbin its header's sizes, nvcc's
 * wrapper its fatbin's, PTX its text up to the NUL. */
Test(audit, an_image_is_named_by_the_hash_of_the_bytes_its_format_holds)
{
	struct guarded g;
	unsigned char *p = guarded_at(&g, 0x1000 + 7 * 64 + 64, 0x1000 + 7 * 64 + 64);
	struct {
		int magic, version;
		const void *data;
		void *filename;
	} *wrapper = malloc(sizeof(*wrapper));

	/* 7 section headers end at 0x11c0; program headers after them end it. */
	elf_header(p, 0x1000, 7, 0x1000 + 7 * 64, 1, 64);
	expect_name(p, p, 0x1000 + 7 * 64 + 64, "ELF");
	/* The same with the sections last. */
	elf_header(p, 0x1000 + 64, 7, 0x1000, 1, 64);
	expect_name(p, p, 0x1000 + 7 * 64 + 64, "ELF, sections last");
	/* A fatbin: 16 + 100 bytes, followed by more that are not its own. */
	fatbin_header(p, 16, 100);
	expect_name(p, p, 16 + 100, "fatbin");
	*wrapper = (typeof(*wrapper)){ 0x466243b1, 1, p, NULL };
	expect_name(wrapper, p, 16 + 100, "the wrapper's fatbin");
	memcpy(p, ".version 8.0\n", 14);
	expect_name(p, p, 13, "PTX");
	memcpy(p, "ab", 3);
	expect_name(p, p, 2, "short text");
	free(wrapper);
	guarded_free(&g);
}

/* The driver may take an image reading less than its headers claim (an
 * empty table's offset, tables it never reads): naming it reads as far as
 * the memory goes, through a fault-safe copy, and never faults. Each image
 * ends right before a PROT_NONE page. */
Test(audit, an_image_whose_headers_claim_more_than_is_mapped_is_named_without_a_fault)
{
	const uint64_t gib = UINT64_C(1) << 30;
	struct guarded g;
	unsigned char *p;
	size_t n = 64 + 2 * 64;

	/* An empty program header table far away claims nothing. */
	p = guarded_at(&g, n, n);
	elf_header(p, 64, 2, gib, 0, 56);
	expect_name(p, p, n, "e_phoff 1 GiB, no program headers");
	elf_header(p, 64, 2, UINT64_MAX - 8, 0, 56);
	expect_name(p, p, n, "e_phoff near the end of the address space, none");
	elf_header(p, 64, 2, 64, 0, 0xffff);
	expect_name(p, p, n, "e_phentsize 65535, none");
	elf_header(p, gib, 0, 64 + 64, 2, 32);
	expect_name(p, p, n, "e_shoff 1 GiB, no section headers");
	/* Tables that are not there: the hash ends where the memory does. */
	elf_header(p, 64, 2, gib, 3, 56);
	expect_name(p, p, n, "e_phoff 1 GiB, 3 program headers");
	elf_header(p, 64, 2, UINT64_MAX - 8, 3, 56);
	expect_name(p, p, n, "program headers past the end of the address space");
	elf_header(p, 64, 0xffff, 0, 0, 0);
	expect_name(p, p, n, "e_shnum 65535");
	elf_header(p, gib, 2, 0, 0, 0);
	expect_name(p, p, n, "e_shoff 1 GiB");
	guarded_free(&g);
	/* Fatbins claiming more than there is, and the largest sizes. */
	n = 16 + 64;
	p = guarded_at(&g, n, n);
	fatbin_header(p, 16, gib);
	expect_name(p, p, n, "fat_size 1 GiB");
	fatbin_header(p, 16, UINT64_MAX);
	expect_name(p, p, n, "fat_size 2^64 - 1");
	fatbin_header(p, 0xffff, 64);
	expect_name(p, p, n, "header_size 65535");
	guarded_free(&g);
	/* Text with no NUL before the unreadable page. */
	p = guarded_at(&g, 100, 100);
	memset(p, 'x', 100);
	expect_name(p, p, 100, "text without its NUL");
	guarded_free(&g);
	/* A header cut short by the page: what there is. */
	p = guarded_at(&g, 10, 10);
	memcpy(p,
	       "\x7f"
	       "ELF\x02",
	       5);
	expect_name(p, p, 0, "an ELF header of 10 bytes");
	guarded_free(&g);
}

/* Where process_vm_readv is refused (a seccomp filter, as Docker's default
 * profile has without CAP_SYS_PTRACE), the bytes are read through a pipe:
 * the same names, and still no fault. */
Test(audit, images_are_named_the_same_where_process_vm_readv_is_refused)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };
	const size_t n = 2 * 4096 + 64 + 7 * 64;
	struct guarded g;
	unsigned char *p = guarded_at(&g, n, n);
	char before[GG_AUDIT_NAME_MAX], after[GG_AUDIT_NAME_MAX];

	for (size_t i = 64; i < n; i++)
		p[i] = (unsigned char)(i * 7);
	elf_header(p, 2 * 4096 + 64, 7, UINT64_C(1) << 30, 2, 56);
	gg_audit_name_image(p, true, before, sizeof(before));
	cr_assert_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	cr_assert_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);
	errno = 0;
	gg_audit_name_image(p, true, after, sizeof(after));
	cr_expect_eq(errno, 0, "the host's errno is its own");
	cr_expect_str_eq(after, before);
	expect_name(p, p, n, "read through the pipe, up to the unreadable page");
	guarded_free(&g);
}

/* Images in memory whose headers claim more than there is, each ending
 * right before a PROT_NONE page (apps/app-images.c), loaded by
 * cuModuleLoadData, cuModuleLoadDataEx, cuLibraryLoadData and
 * cuModuleLoadFatBinary: the same result with the shim as without, and no
 * crash either way. The fake driver takes what it needs no more of than is
 * there (an empty header table far away claims nothing), and refuses an
 * image whose headers claim what the memory does not hold
 * (CUDA_ERROR_INVALID_IMAGE) rather than fault on it. */
Test(audit, images_whose_headers_claim_more_than_is_there_load_the_same_with_the_shim)
{
	static const char *const taken[] = { "cubin",
					     "fatbin-elf",
					     "wrapper",
					     "fatbin-ptx",
					     "ptx",
					     "cubin-phoff-1gib-none",
					     "cubin-phoff-max-none",
					     "cubin-phentsize-max-none" };
	static const char *const refused[] = { "cubin-phoff-1gib",      "cubin-shoff-1gib",
					       "cubin-shoff-1gib-none", "cubin-shnum-max",
					       "fatbin-ptx-1gib",       "wrapper-1gib",
					       "fatbin-size-2tib",      "fatbin-header-max",
					       "fatbin-entry-past-end" };
	static const char *const calls[] = { "cuModuleLoadData", "cuModuleLoadDataEx",
					     "cuLibraryLoadData", "cuModuleLoadFatBinary" };
	struct gg_run plain;
	struct gg_app_run a;
	char line[128], *out, *names;

	gg_run(&plain, GG_RUN_FAKE, NULL, (const char *[]){ APP("app-images"), NULL });
	cr_assert_eq(gg_run_exit(&plain), 0, "%s", plain.err);
	gg_app_run(&a, APP("app-images"), NULL, (const char *[]){ NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert_str_eq(a.r.out, plain.out);
	/* Each line found whole: the output with a newline before it. */
	out = malloc(strlen(plain.out) + 2);
	cr_assert(out);
	sprintf(out, "\n%s", plain.out);
	for (size_t c = 0; c < GG_ARRAY_SIZE_T(calls); c++) {
		for (size_t i = 0; i < GG_ARRAY_SIZE_T(taken); i++) {
			snprintf(line, sizeof(line), "\n%s %s: 0\n", taken[i], calls[c]);
			cr_expect_neq(strstr(out, line), NULL, "%s", line + 1);
		}
		for (size_t i = 0; i < GG_ARRAY_SIZE_T(refused); i++) {
			snprintf(line, sizeof(line), "\n%s %s: 200\n", refused[i], calls[c]);
			cr_expect_neq(strstr(out, line), NULL, "%s", line + 1);
		}
	}
	free(out);
	/* Loaded ones are named by hash, refused ones by address. */
	names = json(&a, "sorted(set(m['name'][:6] for m in j['modules']))");
	cr_expect_str_eq(names, "['image:', 'image@']");
	free(names);
	gg_run_free(&plain);
	gg_app_run_free(&a);
}

/* A successful lookup, or a load of an image that runs here, does not
 * unwind; a failed lookup does, and loads libunwind privately then. */
Test(audit, libunwind_is_loaded_privately_on_the_first_miss)
{
	struct gg_app_run a;

#ifndef GG_TEST_LIBUNWIND
	cr_skip_test("built with -Dlibunwind=disabled: glibc's backtrace() unwinds");
#endif
	run_audit(
		&a, NULL,
		(const char *[]){ PTX_FILE, "get:gg_fill", "unwinder", "get:nope", "unwinder", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert_neq(strstr(a.r.out, "get gg_fill: 0\nlibunwind mapped: no\n"), NULL, "%s", a.r.out);
	cr_assert_neq(strstr(a.r.out, "get nope: 500\nlibunwind mapped: yes\n"), NULL, "%s", a.r.out);
	/* ...and nothing of it joins the process's scope: _Unwind_* stay the process's own. */
	cr_assert_eq(gg_count_lines(a.r.out, "-> libunwind"), 0, "%s", a.r.out);
	cr_assert_eq(gg_count_lines(a.r.out, "_ULx86_64_init_local -> null"), 2, "%s", a.r.out);
	gg_app_run_free(&a);
}

Test(audit, only_failed_lookups_unwind)
{
	uint64_t before = gg_callsite_unwinds();

	for (int i = 0; i < 5; i++)
		gg_audit_lookup("cuModuleGetFunction", GG_AUDIT_MODULE, (void *)0x77, "found", 0,
				"CUDA_SUCCESS", (void *)0x99);
	cr_assert_eq(gg_callsite_unwinds(), before);
	for (int i = 0; i < 3; i++)
		gg_audit_lookup("cuModuleGetFunction", GG_AUDIT_MODULE, (void *)0x77, "lost", 500,
				"CUDA_ERROR_NOT_FOUND", NULL);
	cr_assert_eq(gg_callsite_unwinds(), before + 3);
}

/* ---- skip objects ---- */

Test(audit, skip_objects_move_the_call_site_out_of_a_library)
{
	struct gg_app_run a;
	char *sym;

	run_audit(&a, NULL, (const char *[]){ PTX_FILE, "helper:nope", NULL });
	sym = only_row(&a, "['site']['symbol'].split('+')[0]");
	cr_assert_str_eq(sym, "helper_lookup");
	free(sym);
	gg_app_run_free(&a);

	run_audit(&a, (const char *[]){ "GPUGUARD_SKIP_OBJECTS=libhelper.so*", NULL },
		  (const char *[]){ PTX_FILE, "helper:nope", NULL });
	free(only_row(&a, ""));
	sym = json(&a, "(j['unresolved'][0]['site']['symbol'].split('+')[0], "
		       "j['unresolved'][0]['site']['object'].split('/')[-1])");
	cr_assert_str_eq(sym, "('main', 'app-audit')");
	free(sym);
	gg_app_run_free(&a);
}

static void write_one_kernel_ptx(const char *path)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fprintf(f,
		".version 8.0\n.target sm_90\n.address_size 64\n\n"
		".visible .entry gg_fill(.param .u64 p, .param .u8 v, .param .u64 n)\n{\n\tret;\n}\n");
	fclose(f);
}

/* A lookup repeated with the same handle, name pointer and answer is counted
 * without the lock (a thread's memo). Another module loaded at the unloaded
 * one's handle, whose kernel gets the old kernel's handle, is another pair. */
Test(audit, a_lookup_after_its_module_was_reloaded_at_the_same_handle_is_the_new_modules)
{
	char dir[] = "/tmp/gg-memo-XXXXXX", a_ptx[64], b_ptx[64], file[80], reload[80];
	struct gg_app_run a;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(a_ptx, sizeof(a_ptx), "%s/a.ptx", dir);
	snprintf(b_ptx, sizeof(b_ptx), "%s/b.ptx", dir);
	write_one_kernel_ptx(a_ptx);
	write_one_kernel_ptx(b_ptx);
	snprintf(file, sizeof(file), "file:%s", a_ptx);
	snprintf(reload, sizeof(reload), "reload:%s", b_ptx);
	run_audit(&a, (const char *[]){ "FAKECUDA_REUSE_HANDLES=1", NULL },
		  (const char *[]){ file, "get:gg_fill", "get:gg_fill", reload, "get:gg_fill",
				    "get:gg_fill", "get:nope", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s\n%s", a.r.out, a.r.err);
	cr_assert(strstr(a.r.out, "reloaded: handle reused"), "%s", a.r.out);
	/* a.ptx::gg_fill, b.ptx::gg_fill, b.ptx::nope; five calls. */
	assert_json(&a, "(j['lookups']['total'], j['lookups']['resolved'], j['lookups']['calls'])",
		    "(3, 2, 5)");
	assert_json(&a, "[r['module'] for r in j['unresolved']]", "['b.ptx']");
	gg_app_run_free(&a);
	unlink(a_ptx);
	unlink(b_ptx);
	rmdir(dir);
}

/* An allocation's site follows the same rules (docs/python.md, "Call sites"): where the
 * hook's caller is a frame to skip, the stack is unwound past it. */
Test(audit, skip_objects_move_an_allocations_site_out_of_a_library)
{
	static const char *const site = "(j['violations'][0]['site']['symbol'].split('+')[0], "
					"j['violations'][0]['site']['object'].split('/')[-1])";
	struct gg_app_run a;

	run_audit(&a, (const char *[]){ "GPUGUARD_REDZONE=64", NULL },
		  (const char *[]){ PTX_FILE, "helper-overrun", NULL });
	cr_assert_eq(gg_count_lines(a.r.out, "helper overrun: 0"), 1, "%s", a.r.out);
	assert_json(&a, site, "('helper_alloc', 'libhelper.so')");
	gg_app_run_free(&a);

	run_audit(
		&a,
		(const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_SKIP_OBJECTS=libhelper.so*", NULL },
		(const char *[]){ PTX_FILE, "helper-overrun", NULL });
	assert_json(&a, site, "('main', 'app-audit')");
	gg_app_run_free(&a);
}

/* ---- the gate ---- */

static const char *const launch1[] = { "GPUGUARD_BOUNDARY=launch:1", NULL };

Test(audit, gate_with_a_required_miss_aborts_after_the_log_and_the_reports)
{
	struct gg_app_run a;

	run_audit(&a, launch1, (const char *[]){ PTX_FILE, "get:nope", "launch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), -SIGABRT, "%s", a.r.err);
	cr_assert_eq(strstr(a.r.out, "launched"), NULL, "the launch was not forwarded");
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: seal 1: 1 required kernel missing; "
					     "aborting"),
		     1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "REQUIRED  kernels.ptx::nope  1x"), 1, "%s", a.r.err);
	assert_json(&a,
		    "(j['sealed'], j['seals'], j['lookups']['unresolved_required'], "
		    "j['lookups']['unresolved'])",
		    "(True, 1, 1, 1)");
	gg_app_run_free(&a);
}

Test(audit, gate_warns_and_goes_on_when_allowed)
{
	struct gg_app_run a;

	run_audit(&a,
		  (const char *[]){ "GPUGUARD_BOUNDARY=launch:1", "GPUGUARD_ALLOW_UNRESOLVED=1", NULL },
		  (const char *[]){ PTX_FILE, "get:nope", "get:other", "launch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert_neq(strstr(a.r.out, "launched\ndone\n"), NULL, "%s", a.r.out);
	cr_assert_eq(gg_count_lines(a.r.err, "WARN: seal 1: 2 required kernels missing; "
					     "going on"),
		     1, "%s", a.r.err);
	/* Errors all the same: each named at exit, at every verbosity. */
	cr_assert_eq(gg_count_lines(a.r.err, "] ERROR: required kernel never resolved: "), 2, "%s",
		     a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "] ERROR: "), 2, "%s", a.r.err);
	assert_json(&a, "(j['lookups']['unresolved'], j['errors'])", "(2, 2)");
	gg_app_run_free(&a);
}

static void write_expected(struct gg_app_run *a, char *path, size_t cap, const char *text)
{
	FILE *f;

	snprintf(path, cap, "%s/expected-absent", a->dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

/* run_audit with an expected-absent file written first in the run's directory. */
static void run_with_expected(struct gg_app_run *a, const char *text, const char *const *env,
			      const char *const *steps)
{
	char dir[64], path[128], envvar[160];
	const char *envp[8];
	size_t k = 0;

	gg_test_dir(dir, sizeof(dir));
	struct gg_app_run tmp;

	strcpy(tmp.dir, dir);
	write_expected(&tmp, path, sizeof(path), text);
	snprintf(envvar, sizeof(envvar), "GPUGUARD_EXPECTED_ABSENT=%s", path);
	envp[k++] = envvar;
	for (; env && *env; env++)
		envp[k++] = *env;
	envp[k] = NULL;
	run_audit(a, envp, steps);
}

Test(audit, expected_absent_patterns_pass_the_gate_and_others_do_not)
{
	struct gg_app_run a;

	run_with_expected(&a, "# optional kernels\n\n   \n*::nope\n  kernels.ptx::maybe_*  \n", launch1,
			  (const char *[]){ PTX_FILE, "get:nope", "get:maybe_fast", "launch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "expected  kernels.ptx::nope"), 1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "expected  kernels.ptx::maybe_fast"), 1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "] ERROR: "), 0, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "] WARN: "), 0, "%s", a.r.err);
	assert_json(&a,
		    "(j['lookups']['unresolved_expected'], j['lookups']['unresolved'], "
		    "[u['expected_absent'] for u in j['unresolved']])",
		    "(2, 0, [True, True])");
	gg_app_run_free(&a);

	/* A name the patterns do not match is still required. */
	run_with_expected(&a, "*::nope\n", launch1,
			  (const char *[]){ PTX_FILE, "get:nope", "get:other", "launch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), -SIGABRT, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: seal 1: 1 required kernel missing"), 1, "%s",
		     a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "REQUIRED  kernels.ptx::other"), 1, "%s", a.r.err);
	gg_app_run_free(&a);
}

/* A line without "::" is that function in any module; a line that can match
 * nothing (one ':' for two, no function after "::") is named, at every
 * verbosity, and ignored. */
Test(audit, an_expected_absent_function_without_a_module_is_expected_in_any_module)
{
	struct gg_app_run a;

	run_with_expected(
		&a, "nope\nkernels.ptx:maybe_fast\nkernels.ptx::\n",
		(const char *[]){ "GPUGUARD_BOUNDARY=launch:1", "GPUGUARD_VERBOSITY=0", NULL },
		(const char *[]){ PTX_FILE, "get:nope", "launch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "(j['lookups']['unresolved_expected'], j['lookups']['unresolved'])", "(1, 0)");
	cr_expect_eq(gg_count_lines(a.r.err, "/expected-absent\": \"kernels.ptx:maybe_fast\" is not "
					     "valid (line 2: a kernel's name has no ':'"),
		     1, "%s", a.r.err);
	cr_expect_eq(gg_count_lines(a.r.err, "/expected-absent\": \"kernels.ptx::\" is not valid "
					     "(line 3: no function after '::'"),
		     1, "%s", a.r.err);
	cr_expect_eq(gg_count_lines(a.r.err, "] WARN: GPUGUARD_EXPECTED_ABSENT="), 2, "%s", a.r.err);
	gg_app_run_free(&a);
}

Test(audit, a_long_mangled_name_can_be_expected_absent)
{
	char name[700], step[720], text[760];
	struct gg_app_run a;

	memset(name, 'x', sizeof(name) - 1);
	memcpy(name, "_ZN7cutlass6KernelI", 19);
	name[sizeof(name) - 1] = '\0';
	snprintf(step, sizeof(step), "get:%s", name);
	snprintf(text, sizeof(text), "kernels.ptx::%s\n", name);
	run_with_expected(&a, text, launch1, (const char *[]){ PTX_FILE, step, "launch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "(j['lookups']['unresolved_expected'], len(j['unresolved'][0]['function']))",
		    "(1, 699)");
	/* The table cuts it to fit the terminal. */
	for (const char *line = a.r.err; *line;) {
		size_t len = strcspn(line, "\n");

		cr_assert_leq(len, 100, "too wide: %.*s", (int)len, line);
		line += len + (line[len] == '\n');
	}
	gg_app_run_free(&a);
}

Test(audit, unreadable_expected_absent_file_is_an_error_and_expects_nothing)
{
	struct gg_app_run a;

	run_audit(&a,
		  (const char *[]){ "GPUGUARD_EXPECTED_ABSENT=/nonexistent/gg-absent",
				    "GPUGUARD_BOUNDARY=launch:1", NULL },
		  (const char *[]){ PTX_FILE, "get:nope", "launch", NULL });
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: GPUGUARD_EXPECTED_ABSENT: cannot read "
					     "\"/nonexistent/gg-absent\": No such file or directory"),
		     1, "%s", a.r.err);
	cr_assert_eq(gg_run_exit(&a.r), -SIGABRT, "nothing is expected absent: %s", a.r.err);
	gg_app_run_free(&a);
}

/* A FIFO would block the first CUDA call for ever, /dev/zero would grow the
 * process without bound: only a regular file is read. */
Test(audit, an_expected_absent_list_that_is_a_fifo_is_refused_without_blocking, .timeout = 60)
{
	char dir[64], fifo[96], env[160], want[256];
	struct gg_app_run a;

	gg_test_dir(dir, sizeof(dir));
	snprintf(fifo, sizeof(fifo), "%s/list", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	snprintf(env, sizeof(env), "GPUGUARD_EXPECTED_ABSENT=%s", fifo);
	run_audit(&a, (const char *[]){ env, "GPUGUARD_BOUNDARY=launch:1", NULL },
		  (const char *[]){ PTX_FILE, "get:nope", "launch", NULL });
	snprintf(want, sizeof(want),
		 "ERROR: GPUGUARD_EXPECTED_ABSENT: cannot read \"%s\": it is a "
		 "FIFO, not a regular file; no lookup is expected absent",
		 fifo);
	cr_assert_eq(gg_count_lines(a.r.err, want), 1, "%s", a.r.err);
	cr_assert_eq(gg_run_exit(&a.r), -SIGABRT, "nothing is expected absent: %s", a.r.err);
	gg_app_run_free(&a);
}

Test(audit, an_expected_absent_list_on_a_device_is_refused_unread)
{
	struct gg_app_run a;

	run_audit(&a,
		  (const char *[]){ "GPUGUARD_EXPECTED_ABSENT=/dev/zero", "GPUGUARD_BOUNDARY=launch:1",
				    NULL },
		  (const char *[]){ PTX_FILE, "get:nope", "launch", NULL });
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: GPUGUARD_EXPECTED_ABSENT: cannot read "
					     "\"/dev/zero\": it is a character device, not a "
					     "regular file; no lookup is expected absent"),
		     1, "%s", a.r.err);
	cr_assert_eq(gg_run_exit(&a.r), -SIGABRT, "nothing is expected absent: %s", a.r.err);
	gg_app_run_free(&a);
}

/* A list past the bound is refused whole, never read in part. */
Test(audit, an_expected_absent_list_over_1_mib_is_refused_not_cut)
{
	static char text[(1 << 20) + 64];
	struct gg_app_run a;
	size_t n = (size_t)snprintf(text, sizeof(text), "*::nope\n");

	memset(text + n, '#', sizeof(text) - n - 1); /* one long comment line */
	text[sizeof(text) - 1] = '\0';
	run_with_expected(&a, text, launch1, (const char *[]){ PTX_FILE, "get:nope", "launch", NULL });
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: GPUGUARD_EXPECTED_ABSENT: cannot read "), 1, "%s",
		     a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "it is larger than 1048576 bytes (1 MiB), the most a list "
					     "may hold; no lookup is expected absent"),
		     1, "%s", a.r.err);
	cr_assert_eq(gg_run_exit(&a.r), -SIGABRT, "nothing is expected absent: %s", a.r.err);
	gg_app_run_free(&a);

	/* 1 MiB itself is read. */
	text[(1 << 20) - 1] = '\n';
	text[1 << 20] = '\0';
	run_with_expected(&a, text, launch1, (const char *[]){ PTX_FILE, "get:nope", "launch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "] ERROR: "), 0, "%s", a.r.err);
	gg_app_run_free(&a);
}

/* ---- late misses ---- */

Test(audit, late_miss_is_counted_then_aborts)
{
	struct gg_app_run a;

	run_audit(&a, launch1, (const char *[]){ PTX_FILE, "launch", "get:nope", "get:never", NULL });
	cr_assert_eq(gg_run_exit(&a.r), -SIGABRT, "%s", a.r.err);
	cr_assert_eq(strstr(a.r.out, "get nope"), NULL, "the lookup never returned: %s", a.r.out);
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: late miss after seal 1: kernels.ptx::nope "
					     "(CUDA_ERROR_NOT_FOUND) at lookup_a+0x"),
		     1, "%s", a.r.err);
	assert_json(&a, "(j['lookups']['late_misses'], j['lookups']['unresolved'])", "(1, 1)");
	gg_app_run_free(&a);
}

Test(audit, late_misses_warn_once_per_seal_and_add_to_the_gate_count)
{
	struct gg_app_run a;

	run_audit(&a,
		  (const char *[]){ "GPUGUARD_BOUNDARY=launch:1", "GPUGUARD_ALLOW_UNRESOLVED=1", NULL },
		  (const char *[]){ PTX_FILE, "get:before", "launch", "get:a", "get:b", "get:a",
				    "get2:c", "get:d", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "WARN: late miss after seal 1: kernels.ptx::a "), 1, "%s",
		     a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "late miss"), 1, "%s", a.r.err);
	/* The gate counted 1; five late misses follow. */
	assert_json(&a, "(j['lookups']['late_misses'], j['lookups']['unresolved'])", "(5, 6)");
	gg_app_run_free(&a);
}

Test(audit, each_seal_rearms_the_warning)
{
	struct gg_app_run a;

	run_audit(&a,
		  (const char *[]){ "GPUGUARD_BOUNDARY=launch:1,launch:2",
				    "GPUGUARD_ALLOW_UNRESOLVED=1", NULL },
		  (const char *[]){ PTX_FILE, "launch", "get:x", "get:y", "launch", "get:z", "get:x",
				    NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "WARN: late miss after seal 1: kernels.ptx::x "), 1, "%s",
		     a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "WARN: late miss after seal 2: kernels.ptx::z "), 1, "%s",
		     a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "late miss"), 2, "%s", a.r.err);
	/* Seal 2 counted x and y (2); z and x came after it. */
	assert_json(&a, "(j['seals'], j['lookups']['late_misses'], j['lookups']['unresolved'])",
		    "(2, 4, 4)");
	gg_app_run_free(&a);
}

Test(audit, expected_absent_late_miss_never_aborts)
{
	struct gg_app_run a;

	run_with_expected(&a, "kernels.ptx::optional*\n", launch1,
			  (const char *[]){ PTX_FILE, "launch", "get:optional_fast", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "late miss"), 0, "%s", a.r.err);
	assert_json(&a, "(j['lookups']['late_misses'], j['lookups']['unresolved'])", "(0, 0)");
	gg_app_run_free(&a);
}

/* ---- boundaries ---- */

Test(audit, sync_boundary_seals_after_the_nth_synchronize_returns)
{
	struct gg_app_run a;

	run_audit(&a, (const char *[]){ "GPUGUARD_BOUNDARY=sync:2", NULL },
		  (const char *[]){ PTX_FILE, "get:nope", "sync", "sync", NULL });
	cr_assert_eq(gg_run_exit(&a.r), -SIGABRT, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.out, "synced"), 1, "%s", a.r.out);
	cr_assert_eq(gg_count_lines(a.r.err, "seal 1 (sync:2)"), 1, "%s", a.r.err);
	gg_app_run_free(&a);
}

Test(audit, launch_boundary_fires_before_the_nth_launch_only)
{
	struct gg_app_run a;

	run_audit(&a,
		  (const char *[]){ "GPUGUARD_BOUNDARY=launch:2", "GPUGUARD_ALLOW_UNRESOLVED=1", NULL },
		  (const char *[]){ PTX_FILE, "launch", "get:nope", "launch", "launch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "seal 1 (launch:2)"), 1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "seal "), 2, "one seal: its table and its WARN");
	assert_json(&a, "j['seals']", "1");
	gg_app_run_free(&a);
}

/* The launch hook looks at the event list only for counts whose residue
 * modulo 64 is an event's: launch:100 and launch:165 fire at those launches
 * and nowhere else (36 and 101 share their residues). */
Test(audit, launch_boundaries_past_64_fire_at_their_own_launches_only)
{
	struct gg_app_run a;

	run_audit(&a, (const char *[]){ "GPUGUARD_BOUNDARY=launch:100,launch:165", NULL },
		  (const char *[]){ PTX_FILE, "launches:170", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "seal 1 (launch:100)"), 1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "seal 2 (launch:165)"), 1, "%s", a.r.err);
	assert_json(&a, "j['seals']", "2");
	gg_app_run_free(&a);
}

/* Each bad item, as bad_items() hears of it: "item: why; ". */
static void note_bad(void *arg, const char *item, const char *why)
{
	char *text = arg;
	size_t n = strlen(text);

	snprintf(text + n, 512 - n, "%s: %s; ", item, why);
}

Test(audit, boundary_lists_parse_and_bad_items_are_dropped)
{
	struct gg_boundary_events ev;
	char bad[512] = "";

	cr_assert_eq(gg_config_parse_boundary("launch:3,sync:2,after:0.5", &ev, note_bad, bad), 0);
	cr_assert_str_eq(bad, "");
	cr_assert(ev.nlaunch == 1 && ev.launch[0] == 3);
	cr_assert(ev.nsync == 1 && ev.sync[0] == 2);
	cr_assert(ev.nafter == 1 && ev.after[0] == 0.5);
	cr_assert_eq(gg_config_parse_boundary("launch:x,sync:0x10,launch:0", &ev, note_bad, bad),
		     -EINVAL);
	cr_assert_str_eq(bad, "launch:x: N must be a number, 1 or more; "
			      "launch:0: N must be a number, 1 or more; ");
	cr_assert(ev.nlaunch == 0 && ev.nsync == 1 && ev.sync[0] == 16);
	bad[0] = '\0';
	cr_assert_eq(gg_config_parse_boundary("seal", &ev, note_bad, bad), -EINVAL);
	cr_assert_str_eq(bad, "seal: not an event; ");
	cr_assert_eq(gg_config_parse_boundary("seal", &ev, NULL, NULL), -EINVAL);
}

/* after:SECONDS is a plain number of seconds: no nan, inf, sign, exponent
 * or spaces, nothing above 1e9 (the watcher's wait must stay an int of
 * milliseconds), whatever the locale's decimal point. */
Test(audit, after_takes_only_plain_seconds)
{
	static const char *const bad[] = { "after:nan",
					   "after:inf",
					   "after:-1",
					   "after:+1",
					   "after:1e3",
					   "after:1e999",
					   "after: 1",
					   "after:1 ",
					   "after:",
					   "after:.",
					   "after:1.2.3",
					   "after:1000000001",
					   "after:99999999999999999999",
					   "after:0x3B9ACA01",
					   "after:0x",
					   "after:NAN",
					   "after:Infinity" };
	static const struct {
		const char *text;
		double s;
	} good[] = { { "after:0", 0 },
		     { "after:0.5", 0.5 },
		     { "after:.25", 0.25 },
		     { "after:12.", 12 },
		     { "after:1000000000", 1e9 },
		     { "after:0x10", 16 },
		     { "after:0.000000001", 1e-9 },
		     { "after:1.0000000001", 1 } };
	struct gg_boundary_events ev;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(gg_config_parse_boundary(bad[i], &ev, NULL, NULL), -EINVAL, "%s", bad[i]);
		cr_expect_eq(ev.nafter, 0, "%s", bad[i]);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cr_expect_eq(gg_config_parse_boundary(good[i].text, &ev, NULL, NULL), 0, "%s",
			     good[i].text);
		cr_expect(ev.nafter == 1 && ev.after[0] == good[i].s, "%s: %g", good[i].text,
			  ev.after[0]);
	}
}

/* Issue "never harm the host" 17: only the first bad item was named;
 * after:nan, after it, was dropped without a word. */
Test(audit, every_bad_boundary_item_is_named)
{
	struct gg_app_run a;

	run_audit(&a,
		  (const char *[]){ "GPUGUARD_BOUNDARY=launch:0,after:nan,sync:1,after:-2",
				    "GPUGUARD_VERBOSITY=0", NULL },
		  (const char *[]){ PTX_FILE, "sync", NULL });
	cr_assert_eq(gg_count_lines(a.r.err, "WARN: GPUGUARD_BOUNDARY=\"launch:0,after:nan,sync:1,"
					     "after:-2\": \"launch:0\" is not valid (N must be a "
					     "number, 1 or more; expected"),
		     1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "\"after:nan\" is not valid (SECONDS must be a "
					     "number from 0 to 1000000000"),
		     1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "\"after:-2\" is not valid"), 1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "WARN: "), 3, "%s", a.r.err);
	assert_json(&a, "j['seals']", "1");
	gg_app_run_free(&a);
}

Test(audit, bad_boundary_item_is_named_once)
{
	struct gg_app_run a;

	run_audit(&a, (const char *[]){ "GPUGUARD_BOUNDARY=launch:0,sync:1", NULL },
		  (const char *[]){ PTX_FILE, "sync", NULL });
	cr_assert_eq(gg_count_lines(a.r.err, "WARN: GPUGUARD_BOUNDARY=\"launch:0,sync:1\": "
					     "\"launch:0\" is not valid"),
		     1, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "seal 1 (sync:1)"), 1, "the good item stays");
	gg_app_run_free(&a);
}

/* ---- threads, table, strings ---- */

Test(audit, lookups_from_16_threads_lose_no_count)
{
	struct gg_app_run a;

	run_audit(&a, NULL,
		  (const char *[]){ PTX_FILE, "threads:16:500:nope", "threads:16:100:gg_fill", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a,
		    "(j['unresolved'][0]['count'], j['lookups']['calls'], "
		    "j['lookups']['failed_calls'])",
		    "(8000, 9600, 8000)");
	gg_app_run_free(&a);
}

Test(audit, seal_table_fits_a_100_column_terminal)
{
	struct gg_app_run a;
	const char *line;

	run_audit(&a,
		  (const char *[]){ "GPUGUARD_BOUNDARY=launch:1", "GPUGUARD_ALLOW_UNRESOLVED=1", NULL },
		  (const char *[]){ PTX_FILE, "get:flash_attention_fwd_kernel_bf16", "helper:nope",
				    "static", "get:nope", "launch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "INFO: seal 1 (launch:1): 4 kernels: 1 resolved, "
					     "3 missing (0 expected absent)"),
		     1, "%s", a.r.err);
	for (line = a.r.err; *line;) {
		size_t len = strcspn(line, "\n");

		/* The table and the exit line; an ERROR names whole call sites. */
		if (!memmem(line, len, "] ERROR: ", 9))
			cr_assert_leq(len, 100, "too wide: %.*s", (int)len, line);
		line += len + (line[len] == '\n');
	}
	gg_app_run_free(&a);
}

Test(audit, any_bytes_in_a_name_keep_the_json_valid)
{
	struct gg_app_run a;

	run_audit(&a, NULL, (const char *[]){ PTX_FILE, "get:q\"uo\\te\x01\xff\xc3\xa9", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	char *f = only_row(&a, "['function'].encode('unicode_escape').decode()");

	cr_assert_str_eq(f, "q\"uo\\\\te\\x01\\xff\\xe9");
	free(f);
	gg_app_run_free(&a);
}

Test(audit, verbosity_zero_still_records_and_gates)
{
	struct gg_app_run a;

	run_audit(&a, (const char *[]){ "GPUGUARD_VERBOSITY=0", "GPUGUARD_BOUNDARY=launch:1", NULL },
		  (const char *[]){ PTX_FILE, "get:nope", "launch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), -SIGABRT, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "INFO"), 0, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "ERROR: seal 1"), 1, "%s", a.r.err);
	assert_json(&a, "j['lookups']['unresolved']", "1");
	gg_app_run_free(&a);
}

Test(audit, process_without_a_miss_prints_no_table)
{
	struct gg_app_run a;

	run_audit(&a, launch1, (const char *[]){ PTX_FILE, "get:gg_fill", "launch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "REQUIRED"), 0, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "] ERROR: "), 0, "%s", a.r.err);
	cr_assert_eq(gg_count_lines(a.r.err, "] WARN: "), 0, "%s", a.r.err);
	assert_json(&a, "(j['sealed'], j['unresolved'], j['lookups']['unresolved'])", "(True, [], 0)");
	gg_app_run_free(&a);
}

/* ---- launches: refused launches ---- */

#define RZ_APP GG_APPS "/app-redzone"

/* A refused launch: counted per kernel with its last result, WARNed once. */
Test(launches, a_refused_launch_is_counted_per_kernel_and_warned_about_once)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ_APP, (const char *[]){ "GG_TEST_PTX=" GG_PTX, NULL },
		   (const char *[]){ "launch", "badlaunch", "badlaunch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_expect(strstr(a.r.out, "badlaunch: 1\nbadlaunch: 1\n"), "%s", a.r.out);
	cr_expect_eq(gg_count_lines(a.r.err, "WARN: launch #2 of gg_fill (module kernels.ptx) "
					     "refused: CUDA_ERROR_INVALID_VALUE; later refusals"),
		     1, "%s", a.r.err);
	cr_expect(!strstr(a.r.err, "launch #3 of"), "%s", a.r.err);
	assert_json(&a, "j['launch_errors']",
		    "[{'name': 'gg_fill', 'module': 'kernels.ptx', 'count': 2, "
		    "'result': 'CUDA_ERROR_INVALID_VALUE'}]");
	gg_app_run_free(&a);
}

/* The promise holds per image and kernel name: the same kernel of the same
 * image, loaded again (a new handle, as when a program reloads its module in
 * a new context between tests), is not warned about again. */
Test(launches, a_kernel_reloaded_under_a_new_handle_is_warned_about_once)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ_APP, (const char *[]){ "GG_TEST_PTX=" GG_PTX, NULL },
		   (const char *[]){ "ctx", "badlaunch", "destroy", "badlaunch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_expect(strstr(a.r.out, "badlaunch: 1\ndestroy: 0\nbadlaunch: 1\n"), "%s", a.r.out);
	cr_expect_eq(gg_count_lines(a.r.err, "WARN: launch #"), 1, "%s", a.r.err);
	assert_json(&a, "j['launch_errors']",
		    "[{'name': 'gg_fill', 'module': 'kernels.ptx', 'count': 2, "
		    "'result': 'CUDA_ERROR_INVALID_VALUE'}]");
	gg_app_run_free(&a);
}

Test(launches, good_launches_leave_no_launch_error)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ_APP, (const char *[]){ "GG_TEST_PTX=" GG_PTX, NULL },
		   (const char *[]){ "launch", "launch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	assert_json(&a, "j['launch_errors']", "[]");
	cr_expect(!strstr(a.r.err, "refused"), "%s", a.r.err);
	cr_expect(!strstr(a.r.err, "context is lost"), "%s", a.r.err);
	gg_app_run_free(&a);
}

/* A kernel that crashes the context: the synchronize that says so is an
 * ERROR naming the kernels launched since the last good one. */
Test(launches, a_sticky_error_names_the_kernels_launched_since_the_last_good_synchronize)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ_APP, (const char *[]){ "GG_TEST_PTX=" GG_PTX, NULL },
		   (const char *[]){ "launch", "alloc:100", "overrun:0:1048576", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 2, "%s", a.r.err); /* the program's own CHECK */
	cr_expect_eq(gg_count_lines(a.r.err, "ERROR: cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS: the "
					     "context is lost; kernels launched since the last good "
					     "synchronize (1 in all), newest first: gg_overrun (module "
					     "kernels.ptx, launch #2)"),
		     1, "%s", a.r.err);
	gg_app_run_free(&a);
}

/* The fake's FAKECUDA_STICKY: the second launch runs, then the context fails
 * (CUDA_ERROR_LAUNCH_FAILED); the first launch was synchronized already. */
Test(launches, a_launch_failure_at_synchronize_names_only_the_launches_since_the_last_good_one)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ_APP, (const char *[]){ "GG_TEST_PTX=" GG_PTX, "FAKECUDA_STICKY=2:719", NULL },
		   (const char *[]){ "launch", "launch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 2, "%s", a.r.err);
	cr_expect_eq(gg_count_lines(a.r.err, "ERROR: cuCtxSynchronize: CUDA_ERROR_LAUNCH_FAILED: the "
					     "context is lost; kernels launched since the last good "
					     "synchronize (1 in all), newest first: gg_fill (module "
					     "kernels.ptx, launch #2)"),
		     1, "%s", a.r.err);
	gg_app_run_free(&a);
}

/* A refusal of the fake's own (2048 threads: CUDA_ERROR_INVALID_VALUE), then
 * one FAKECUDA_FAIL_LAUNCH makes: one kernel, two refusals, the last code. */
Test(launches, refusals_of_one_kernel_are_counted_together_with_the_last_code)
{
	struct gg_app_run a;

	gg_app_run(&a, RZ_APP,
		   (const char *[]){ "GG_TEST_PTX=" GG_PTX, "FAKECUDA_FAIL_LAUNCH=1:209", NULL },
		   (const char *[]){ "badlaunch", "launch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 2, "%s", a.r.err); /* the program's own CHECK */
	assert_json(&a, "[(e['name'], e['count'], e['result']) for e in j['launch_errors']]",
		    "[('gg_fill', 2, 'CUDA_ERROR_NO_BINARY_FOR_GPU')]");
	gg_app_run_free(&a);
}

/* The kernel is named however the program reached the driver. */
Test(launches, a_refused_launch_names_its_kernel_on_every_route)
{
	for (size_t i = 0; i < GG_ROUTES; i++) {
		struct gg_app_run a;

		/* Counted launches: on the runtime's routes the launch hooks
		 * are handed out only when something counts them (docs/how-it-works.md, "What
		 * the shim does"). */
		gg_route_run(&a, i,
			     (const char *[]){ "FAKECUDA_FAIL_LAUNCH=1:209",
					       "GPUGUARD_BOUNDARY=launch:1000000", NULL });
		assert_json(&a, "[(e['name'], e['module'], e['count']) for e in j['launch_errors']]",
			    "[('gg_fill', 'kernels.ptx', 1)]");
		gg_app_run_free(&a);
	}
}

/* ---- failed loads ---- */

#define MISSING_PTX "/nonexistent/gg/missing.ptx"

/* A load the driver refused is the required row MODULE::* at the gate, with
 * its call site and result; the module is listed, not loaded. */
Test(audit, a_failed_load_is_a_required_row_at_the_gate)
{
	struct gg_app_run a;
	char *site;

	run_audit(&a, launch1, (const char *[]){ PTX_FILE, "tryfile:" MISSING_PTX, "launch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), -SIGABRT, "%s", a.r.err);
	cr_expect(strstr(a.r.out, "load " MISSING_PTX ": 301\n"), "%s", a.r.out);
	cr_expect_eq(gg_count_lines(a.r.err, "REQUIRED  missing.ptx::*  1x"), 1, "%s", a.r.err);
	cr_expect_eq(gg_count_lines(a.r.err, "ERROR: seal 1: 1 required kernel missing; aborting"), 1,
		     "%s", a.r.err);
	assert_json(
		&a, "[(m['name'], m['loaded'], m.get('result')) for m in j['modules']]",
		"[('kernels.ptx', True, None), ('missing.ptx', False, 'CUDA_ERROR_FILE_NOT_FOUND')]");
	assert_json(&a,
		    "(j['unresolved'][0]['module'], j['unresolved'][0]['function'], "
		    "j['unresolved'][0]['result'])",
		    "('missing.ptx', '*', 'CUDA_ERROR_FILE_NOT_FOUND')");
	site = json(&a, "j['modules'][1]['site']['symbol'].split('+')[0]");
	cr_expect_str_eq(site, "main");
	free(site);
	gg_app_run_free(&a);
}

Test(audit, a_failed_load_matched_by_an_expected_absent_pattern_is_not_fatal)
{
	struct gg_app_run a;

	run_with_expected(&a, "missing.ptx::*\n", launch1,
			  (const char *[]){ PTX_FILE, "tryfile:" MISSING_PTX, "launch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_expect_eq(gg_count_lines(a.r.err, "expected  missing.ptx::*"), 1, "%s", a.r.err);
	cr_expect(!strstr(a.r.err, "] ERROR: "), "%s", a.r.err);
	gg_app_run_free(&a);
}

/* After the seal a failed load is a late miss: aborts unless allowed. */
Test(audit, a_load_failing_after_the_seal_is_a_late_miss)
{
	struct gg_app_run a;

	run_audit(&a, launch1, (const char *[]){ PTX_FILE, "launch", "tryfile:" MISSING_PTX, NULL });
	cr_assert_eq(gg_run_exit(&a.r), -SIGABRT, "%s", a.r.err);
	cr_expect_eq(gg_count_lines(a.r.err, "ERROR: late miss after seal 1: missing.ptx::* "), 1, "%s",
		     a.r.err);
	gg_app_run_free(&a);
}

Test(audit, failed_loads_are_counted_in_the_metrics)
{
	struct gg_app_run a;
	char env[192], *prom, path[160];

	gg_test_dir(path, sizeof(path));
	strcat(path, "/m.prom");
	snprintf(env, sizeof(env), "GPUGUARD_METRICS=%s", path);
	run_audit(&a, (const char *[]){ env, NULL },
		  (const char *[]){ PTX_FILE, "tryfile:" MISSING_PTX, "trylib:" MISSING_PTX, NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	prom = gg_read_metrics(path);
	cr_expect(strstr(prom, "\ngpuguard_module_loads_failed_total{exe=\"app-audit\",pid=\""), "%s",
		  prom);
	cr_expect(strstr(prom, "\"} 2\n# HELP gpuguard_errors"), "%s", prom);
	free(prom);
	assert_json(&a, "[(m['name'], m['library'], m['loaded']) for m in j['modules']]",
		    "[('kernels.ptx', False, True), ('missing.ptx', False, False), "
		    "('missing.ptx', True, False)]");
	gg_app_run_free(&a);
}

/* ---- lazy loading: failures where a kernel is first used ---- */

/* A launch of a known kernel refused with CUDA_ERROR_NO_BINARY_FOR_GPU (the
 * fake's FAKECUDA_FAIL_LAUNCH) after the seal: a late miss of that kernel. */
Test(audit, a_launch_failing_for_want_of_code_for_this_gpu_is_a_late_miss)
{
	struct gg_app_run a;

	run_audit(&a,
		  (const char *[]){ "GPUGUARD_BOUNDARY=sync:1", "FAKECUDA_FAIL_LAUNCH=1:209", NULL },
		  (const char *[]){ PTX_FILE, "sync", "launch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), -SIGABRT, "%s", a.r.err);
	cr_expect_eq(gg_count_lines(a.r.err, "ERROR: late miss after seal 1: kernels.ptx::gg_fill "), 1,
		     "%s", a.r.err);
	cr_expect(strstr(a.r.err, "CUDA_ERROR_NO_BINARY_FOR_GPU"), "%s", a.r.err);
	gg_app_run_free(&a);
}

/* Other refusals (a bad launch configuration) are launch errors only. */
Test(audit, a_launch_refused_for_its_configuration_is_no_late_miss)
{
	struct gg_app_run a;

	run_audit(&a, (const char *[]){ "GPUGUARD_BOUNDARY=sync:1", "FAKECUDA_FAIL_LAUNCH=1:1", NULL },
		  (const char *[]){ PTX_FILE, "sync", "launch", NULL });
	cr_expect(!strstr(a.r.err, "late miss"), "%s", a.r.err);
	cr_expect_neq(gg_run_exit(&a.r), -SIGABRT, "%s", a.r.err);
	gg_app_run_free(&a);
}

#ifdef GG_ARCH80_FATBIN
/* An image with code for sm_80 only, on the fake's sm_90: eagerly loaded, the
 * load fails (the library's row LIBRARY::*). */
Test(audit, a_library_with_no_code_for_this_gpu_fails_at_load_when_eager)
{
	struct gg_app_run a;

	run_audit(&a, NULL, (const char *[]){ PTX_FILE, "trylib:" GG_ARCH80_FATBIN, NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_expect(strstr(a.r.out, ": 209\n"), "%s", a.r.out);
	assert_json(&a, "[(r['module'], r['function'], r['result']) for r in j['unresolved']]",
		    "[('arch80.fatbin', '*', 'CUDA_ERROR_NO_BINARY_FOR_GPU')]");
	gg_app_run_free(&a);
}

/* A kernel never looked up by name (enumerated, named by the driver) that
 * fails lazily where it is used is recorded by its driver name and library. */
Test(audit, an_enumerated_kernel_that_fails_lazily_is_recorded_by_its_driver_name)
{
	struct gg_app_run a;

	run_audit(&a, (const char *[]){ "CUDA_MODULE_LOADING=LAZY", NULL },
		  (const char *[]){ "trylib:" GG_ARCH80_FATBIN, "enumfunc", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_expect(strstr(a.r.out, "enumerated gg_fill: function 209\n"), "%s", a.r.out);
	assert_json(
		&a,
		"sorted(set((r['module'], r['function'], r['result']) for r in j['unresolved']))[:1]",
		"[('arch80.fatbin', 'gg_fill', 'CUDA_ERROR_NO_BINARY_FOR_GPU')]");
	assert_json(&a, "j['errors'] >= 1", "True");
	cr_expect(strstr(a.r.err, "ERROR: required kernel never resolved: arch80.fatbin::gg_fill"),
		  "%s", a.r.err);
	gg_app_run_free(&a);
}

/* The same kernel never looked up, named or made a function: launched as
 * cuLibraryEnumerateKernels handed it out, its lazy failure at the launch is
 * recorded by its driver name and library. */
Test(audit, an_enumerated_kernel_launched_unnamed_that_fails_lazily_is_recorded_by_its_driver_name)
{
	struct gg_app_run a;

	run_audit(&a, (const char *[]){ "CUDA_MODULE_LOADING=LAZY", NULL },
		  (const char *[]){ "trylib:" GG_ARCH80_FATBIN, "enumlaunch", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_expect(strstr(a.r.out, "enumerated launch 0: 209\n"), "%s", a.r.out);
	assert_json(
		&a,
		"sorted(set((r['module'], r['function'], r['result']) for r in j['unresolved']))[:1]",
		"[('arch80.fatbin', 'gg_fill', 'CUDA_ERROR_NO_BINARY_FOR_GPU')]");
	assert_json(&a, "[(e['name'], e['module']) for e in j['launch_errors']][:1]",
		    "[('gg_fill', 'arch80.fatbin')]");
	cr_expect(strstr(a.r.err, "ERROR: required kernel never resolved: arch80.fatbin::gg_fill"),
		  "%s", a.r.err);
	gg_app_run_free(&a);
}

/* Lazily loaded (CUDA_MODULE_LOADING=LAZY), it loads, and fails where its
 * kernel is materialised: a failed lookup of that kernel, with its call site,
 * required at the gate; its module likewise. */
Test(audit, a_lazily_loaded_kernel_with_no_code_for_this_gpu_fails_where_it_is_used)
{
	struct gg_app_run a;
	char *sym;

	run_audit(&a, (const char *[]){ "CUDA_MODULE_LOADING=LAZY", "GPUGUARD_BOUNDARY=sync:1", NULL },
		  (const char *[]){ PTX_FILE, "trylib:" GG_ARCH80_FATBIN, "kfunc:gg_fill", "sync",
				    NULL });
	cr_assert_eq(gg_run_exit(&a.r), -SIGABRT, "%s", a.r.err);
	cr_expect(strstr(a.r.out, ": 0\nkernel gg_fill: 0, function: 209\n"), "%s", a.r.out);
	cr_expect_eq(gg_count_lines(a.r.err, "REQUIRED  arch80.fatbin::gg_fill  1x"), 1, "%s", a.r.err);
	assert_json(&a, "[(r['module'], r['function'], r['result']) for r in j['unresolved']]",
		    "[('arch80.fatbin', 'gg_fill', 'CUDA_ERROR_NO_BINARY_FOR_GPU')]");
	sym = json(&a, "j['unresolved'][0]['site']['symbol'].split('+')[0]");
	cr_expect_str_eq(sym, "main");
	free(sym);
	assert_json(&a, "[(m['name'], m['library'], m['loaded']) for m in j['modules']]",
		    "[('kernels.ptx', False, True), ('arch80.fatbin', True, True)]");
	gg_app_run_free(&a);
}

/* ---- image preflight ---- */

#define CANNOT_RUN                                                                      \
	"WARN: module arch80.fatbin carries sm_80; the device is sm_90: nothing in it " \
	"can run here"

/* Lazily loaded, the driver takes it: the preflight says so at the load, and
 * the seal table lists it, before any kernel of it is used. */
Test(audit, an_image_with_no_code_for_this_gpu_is_flagged_at_load_though_the_driver_took_it)
{
	struct gg_app_run a;

	run_audit(&a, (const char *[]){ "CUDA_MODULE_LOADING=LAZY", "GPUGUARD_BOUNDARY=sync:1", NULL },
		  (const char *[]){ PTX_FILE, "trylib:" GG_ARCH80_FATBIN, "sync", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_expect(strstr(a.r.out, "arch80.fatbin: 0\n"), "%s", a.r.out);
	cr_expect_eq(gg_count_lines(a.r.err, CANNOT_RUN), 1, "%s", a.r.err);
	cr_expect_eq(gg_count_lines(a.r.err, "INFO:   cannot run here (no code for this GPU):"), 1,
		     "%s", a.r.err);
	cr_expect_eq(gg_count_lines(a.r.err,
				    "INFO:     arch80.fatbin (sm_80; device sm_90), loaded at main+"),
		     1, "%s", a.r.err);
	assert_json(&a, "[(m['name'], m['archs'], m['runs_here'], m['loaded']) for m in j['modules']]",
		    "[('kernels.ptx', ['compute_90'], True, True), ('arch80.fatbin', ['sm_80'], False, "
		    "True)]");
	gg_app_run_free(&a);
}

/* What runs here is not flagged: PTX for this GPU, and sm_80 SASS with its
 * compute_80 PTX (the driver compiles the PTX). */
Test(audit, an_image_that_runs_here_is_not_flagged)
{
	struct gg_app_run a;

	run_audit(&a, NULL, (const char *[]){ PTX_FILE, "trydata:" GG_ARCH80_PTX_FATBIN, NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_expect(!strstr(a.r.err, "nothing in it can run here"), "%s", a.r.err);
	assert_json(&a, "[(m['archs'], m['runs_here']) for m in j['modules']]",
		    "[(['compute_90'], True), (['sm_80', 'compute_80'], True)]");
	gg_app_run_free(&a);
}

Test(audit, a_lazily_loaded_librarys_module_with_no_code_for_this_gpu_is_a_failed_lookup)
{
	struct gg_app_run a;

	run_audit(&a, (const char *[]){ "CUDA_MODULE_LOADING=LAZY", NULL },
		  (const char *[]){ "trylib:" GG_ARCH80_FATBIN, "trylibmodule", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_expect(strstr(a.r.out, "library module: 209\n"), "%s", a.r.out);
	assert_json(&a, "[(r['module'], r['function'], r['result']) for r in j['unresolved']]",
		    "[('arch80.fatbin', '*', 'CUDA_ERROR_NO_BINARY_FOR_GPU')]");
	gg_app_run_free(&a);
}
#endif

/* A refused image from memory may be no image at all: the shim neither reads
 * past its header's claims nor hashes it (named by its address), and the
 * program gets the driver's answer. */
Test(audit, a_refused_image_whose_header_lies_is_named_by_address_not_read)
{
	struct gg_app_run a;

	run_audit(&a, NULL, (const char *[]){ PTX_FILE, "badfatbin", NULL });
	cr_assert_eq(gg_run_exit(&a.r), 0, "%s", a.r.err);
	cr_expect(strstr(a.r.out, "bad fatbin: 201\n"), "%s", a.r.out);
	assert_json(&a, "[(m['name'][:8], m['loaded'], m.get('result')) for m in j['modules']][1:]",
		    "[('image@0x', False, 'CUDA_ERROR_INVALID_CONTEXT')]");
	gg_app_run_free(&a);
}
