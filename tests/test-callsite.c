/* Call sites through a CUDA runtime linked into the program (docs/python.md, "Call
 * sites"): nvcc links libcudart_static.a by default, so the runtime's frames
 * are the executable's and GPUGUARD_SKIP_OBJECTS cannot skip them. app-static-rt
 * is such a program, built on a stand-in of the runtime named as the real one
 * (tests/apps/fake-cudart), unstripped and stripped; the unit tests read the
 * same files with the shim's ELF reader. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "options/config.h"
#include "callsite/elfsyms.h"
#include "harness.h"
#include "callsite/runtime-syms.h"

#define STATIC_RT GG_APPS "/app-static-rt"

static void assert_json(const char *path, const char *expr, const char *want, const char *err)
{
	char *got = gg_json(path, expr);

	cr_assert_str_eq(got, want, "%s\ngot:  %s\nwant: %s\nstderr:\n%s", expr, got, want, err);
	free(got);
}

/* app-static-rt's whole run: two overrun allocations, two launches of a kernel
 * the module lacks, a synchronize, the frees. The copies past the end are
 * refused without red zones, whose bands are the memory they write. */
static const char app_output[] = "alloc a 1000: 0\nalloc b 2000: 0\noverrun 1000 by 8: 0\n"
				 "overrun 2000 by 8: 0\nlaunch no_such_kernel: 98\n"
				 "launch no_such_kernel: 98\nsync: 0\nfree a: 0\nfree b: 0\n";

static void run_static_rt(struct gg_app_run *a, const char *app, const char *const *env)
{
	gg_app_run(a, app, env, (const char *[]){ NULL });
	cr_assert_eq(gg_run_exit(&a->r), 0, "%s", a->r.err);
	cr_assert_str_eq(a->r.out, app_output, "%s", a->r.err);
}

/* ---- an unstripped program: the runtime's frames are skipped by name ---- */

Test(static_runtime, allocation_sites_are_the_applications_functions)
{
	struct gg_app_run a;

	run_static_rt(&a, STATIC_RT, (const char *[]){ "GPUGUARD_REDZONE=64", NULL });
	/* Not cudaMalloc, nor the runtime's code under it: each its own caller. */
	assert_json(a.json,
		    "[(v['index'], v['site']['symbol'].split('+')[0], "
		    "'in_static_runtime' in v['site']) for v in j['violations']]",
		    "[(0, 'app_alloc_a', False), (1, 'app_alloc_b', False)]", a.r.err);
	cr_expect(strstr(a.r.err, "allocated at app_alloc_a+0x"), "%s", a.r.err);
	cr_expect(strstr(a.r.err, "allocated at app_alloc_b+0x"), "%s", a.r.err);
	cr_expect(!strstr(a.r.err, "statically linked"), "%s", a.r.err);
	gg_app_run_free(&a);
}

Test(static_runtime, lookup_sites_are_the_applications_functions)
{
	struct gg_app_run a;

	run_static_rt(&a, STATIC_RT, (const char *[]){ "GPUGUARD_REDZONE=64", NULL });
	/* The lookup is the runtime's lazy loading at the launch, under
	 * cudaLaunchKernel, the kernel's launch stub and its host function
	 * (nvcc's, named as the kernel): the site is who launched it. */
	assert_json(a.json,
		    "sorted((u['function'], u['site']['symbol'].split('+')[0], u['count'], "
		    "'in_static_runtime' in u['site']) for u in j['unresolved'])",
		    "[('no_such_kernel', 'app_launch_a', 1, False), "
		    "('no_such_kernel', 'app_launch_b', 1, False)]",
		    a.r.err);
	/* The patterns a run used are in its summary, for gpuguard symbolize. */
	assert_json(a.json, "j['config']['skip_symbols']", GG_SKIP_SYMBOLS_DEFAULT, a.r.err);
	gg_app_run_free(&a);
}

Test(static_runtime, the_runtimes_names_are_GPUGUARD_SKIP_SYMBOLS)
{
	struct gg_app_run a;

	/* Without the internal names, every allocation's site is the runtime's
	 * own code under cudaMalloc: one site for both, with no name. */
	run_static_rt(
		&a, STATIC_RT,
		(const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_SKIP_SYMBOLS=cuda[A-Z]*", NULL });
	assert_json(a.json,
		    "len(set(v['site']['address'] for v in j['violations'])), "
		    "[v['site']['symbol'] for v in j['violations']], j['config']['skip_symbols']",
		    "(1, [None, None], 'cuda[A-Z]*')", a.r.err);
	gg_app_run_free(&a);
}

Test(static_runtime, gpuguard_skip_symbols_sets_the_variable)
{
	char dir[64], json[128];
	struct gg_run r;

	gg_test_dir(dir, sizeof(dir));
	snprintf(json, sizeof(json), "%s/s.json", dir);
	gg_run(&r, GG_RUN_FAKE, (const char *[]){ "GG_TEST_PTX=" GG_PTX, NULL },
	       (const char *[]){ GG_CLI, "--redzone", "64", "--skip-symbols", "cuda[A-Z]*", "--json",
				 json, "--", STATIC_RT, NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	assert_json(json, "j['config']['skip_symbols']", "cuda[A-Z]*", r.err);
	gg_run_free(&r);
	/* Refused before the program runs, as every option with no value. */
	gg_run(&r, GG_RUN_FAKE, NULL,
	       (const char *[]){ GG_CLI, "--skip-symbols", "", "--", STATIC_RT, NULL });
	cr_expect_eq(gg_run_exit(&r), 2, "%s", r.err);
	cr_expect(strstr(r.err, "--skip-symbols"), "%s", r.err);
	cr_expect_str_eq(r.out, "");
	gg_run_free(&r);
}

/* ---- a stripped program: the site says so and keeps its outer frames ---- */

struct stripped {
	char dir[64], exe[128], log[160];
	struct gg_app_run a;
};

/* The stripped copy, under the same name as the unstripped one (as a
 * deployed program and its debug build are), run with red zones, a sync:1
 * boundary (for the seal table) and a log file. */
static void run_stripped(struct stripped *s)
{
	char cmd[512], log_env[192];

	gg_test_dir(s->dir, sizeof(s->dir));
	snprintf(s->exe, sizeof(s->exe), "%s/app-static-rt", s->dir);
	snprintf(s->log, sizeof(s->log), "%s/gpuguard.log", s->dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", GG_STATIC_RT_STRIPPED, s->exe);
	cr_assert_eq(system(cmd), 0);
	snprintf(log_env, sizeof(log_env), "GPUGUARD_LOG=%s", s->log);
	run_static_rt(&s->a, s->exe,
		      (const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_BOUNDARY=sync:1",
					"GPUGUARD_ALLOW_UNRESOLVED=1", log_env, NULL });
}

static void stripped_free(struct stripped *s)
{
	gg_app_run_free(&s->a);
}

/* gpuguard symbolize FILE with @dir as -d (NULL: none); its stdout in @r. */
static void symbolize(struct gg_run *r, const char *dir, const char *file)
{
	if (dir)
		gg_run(r, 0, NULL, (const char *[]){ GG_CLI, "symbolize", "-d", dir, file, NULL });
	else
		gg_run(r, 0, NULL, (const char *[]){ GG_CLI, "symbolize", file, NULL });
	cr_assert_eq(gg_run_exit(r), 0, "%s", r->err);
}

/* Every run of white space in @s made one space. */
static void squeeze(char *s)
{
	char *o = s;

	for (const char *i = s; *i; i++)
		if (!strchr(" \n\t", *i) || (o > s && o[-1] != ' '))
			*o++ = strchr(" \n\t", *i) ? ' ' : *i;
	*o = '\0';
}

static void write_out(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	cr_assert_eq(fputs(text, f) >= 0 && fclose(f) == 0, true);
}

Test(static_runtime, a_stripped_program_says_its_sites_are_inside_the_runtime)
{
	struct stripped s;
	char *log;

	run_stripped(&s);
	/* Every site is marked and comes with the frames outward of it. */
	assert_json(s.a.json,
		    "all(x['site'].get('in_static_runtime') is True and "
		    "4 <= len(x['site']['frames']) <= 8 and "
		    "all(set(f) == {'address', 'object', 'offset', 'symbol'} "
		    "for f in x['site']['frames']) "
		    "for x in j['violations'] + j['unresolved'])",
		    "True", s.a.r.err);
	/* The two allocations share the runtime's frame; their callers differ. */
	assert_json(s.a.json,
		    "len(j['violations']), len(set(v['site']['address'] for v in "
		    "j['violations'])), len(set(str(v['site']['frames']) for v in "
		    "j['violations']))",
		    "(2, 1, 2)", s.a.r.err);
	/* ...and so do the two lookups: two sites, not one counted twice. */
	assert_json(s.a.json, "[u['count'] for u in j['unresolved']]", "[1, 1]", s.a.r.err);
	log = gg_read_file(s.log);
	cr_assert_not_null(log);
	cr_expect_eq(gg_count_lines(log, "[inside the statically linked CUDA runtime; called from "), 4,
		     "%s", log);
	cr_expect_eq(gg_count_lines(log, "ERROR: red zone violation"), 2, "%s", log);
	free(log);
	stripped_free(&s);
}

Test(static_runtime, symbolize_names_the_application_frame_from_an_unstripped_copy)
{
	struct stripped s;
	struct gg_run r;
	char path[192];

	run_stripped(&s);
	/* The JSON: -d's unstripped copy wins over the summary's path. */
	symbolize(&r, GG_APPS, s.a.json);
	snprintf(path, sizeof(path), "%s/symbolized.json", s.dir);
	write_out(path, r.out);
	gg_run_free(&r);
	assert_json(path,
		    "[v['site']['application']['symbol'].split('+')[0] for v in "
		    "j['violations']] + sorted(u['site']['application']['symbol'].split('+')[0] "
		    "for u in j['unresolved'])",
		    "['app_alloc_a', 'app_alloc_b', 'app_launch_a', 'app_launch_b']", s.a.r.err);
	/* The application's frame is one of the site's frames, whole. */
	assert_json(path,
		    "all(any(f['offset'] == x['site']['application']['offset'] and "
		    "f['address'] == x['site']['application']['address'] for f in "
		    "x['site']['frames']) and x['site']['application']['object'] == "
		    "x['site']['object'] for x in j['violations'] + j['unresolved'])",
		    "True", s.a.r.err);
	/* gpuguard report shows it (its lines wrapped at 100 columns). */
	gg_run(&r, 0, NULL, (const char *[]){ GG_CLI, "report", path, NULL });
	squeeze(r.out);
	cr_expect(strstr(r.out, "allocated at app-static-rt+0x"), "%s", r.out);
	cr_expect(strstr(r.out, "[inside the statically linked CUDA runtime; application frame: "
				"app_alloc_a+0x"),
		  "%s", r.out);
	cr_expect(strstr(r.out, "[inside the statically linked CUDA runtime; application frame: "
				"app_launch_b+0x"),
		  "%s", r.out);
	gg_run_free(&r);

	/* The log: after each list, named; a second run changes nothing more. */
	symbolize(&r, GG_APPS, s.log);
	cr_expect_eq(gg_count_lines(r.out, "(application frame: app_alloc_a+0x"), 1, "%s", r.out);
	cr_expect_eq(gg_count_lines(r.out, "(application frame: app_alloc_b+0x"), 1, "%s", r.out);
	cr_expect_eq(gg_count_lines(r.out, "(application frame: app_launch_a+0x"), 1, "%s", r.out);
	cr_expect_eq(gg_count_lines(r.out, "(application frame: app_launch_b+0x"), 1, "%s", r.out);
	snprintf(path, sizeof(path), "%s/symbolized.log", s.dir);
	write_out(path, r.out);
	{
		struct gg_run again;

		symbolize(&again, GG_APPS, path);
		cr_expect_str_eq(again.out, r.out);
		gg_run_free(&again);
	}
	gg_run_free(&r);
	stripped_free(&s);
}

Test(static_runtime, symbolize_without_an_unstripped_copy_says_why)
{
	struct stripped s;
	struct gg_run r;

	run_stripped(&s);
	symbolize(&r, NULL, s.a.json);
	cr_expect(!strstr(r.out, "\"application\""), "%s", r.out);
	cr_expect(strstr(r.err, "/app-static-rt: no symbol table (stripped): the application's "
				"frame of a site inside the statically linked CUDA runtime cannot be "
				"named; give an unstripped copy with -d DIR"),
		  "%s", r.err);
	cr_expect_eq(gg_count_lines(r.err, "no symbol table"), 1, "%s", r.err);
	gg_run_free(&r);
	stripped_free(&s);
}

/* ---- the runtime's names (unit) ---- */

Test(runtime_syms, the_default_patterns_are_the_runtimes_names_not_the_programs)
{
	static const char *const runtime[] = {
		"cudaMalloc",
		"cudaLaunchKernel",
		"cudaGetDriverEntryPointByVersion",
		"_Z10cudaMallocIhE9cudaErrorPPT_m", /* cuda_runtime.h template */
		"__cudaLaunchKernel",
		"__cudaPushCallConfiguration",
		"__cudaRegisterFatBinary",
		"_ZL24__sti____cudaRegisterAllv",
		"_ZL26__cudaUnregisterBinaryUtilv",
		"_ZL25__cudaLaunchKernel_helperP9CUkern_st4dim3S1_PPvmP11CUstream_st",
		"_ZL31__nv_cudaEntityRegisterCallbackPPv", /* nvcc's registration */
		"_ZL32__nv_init_managed_rt_with_modulePPv",
		"_Z33__device_stub__Z11write_bytesPhyhPhyh", /* nvcc's launch stubs */
		"_Z33__device_stub__Z11write_bytesPhyhPhyh.cold",
		"_ZN2nsL25__wrapper__device_stub_tkIfEEvRPT_",
		"libcudart_static_0053c1d33059ebe986009dc8a76c61eb6412a2c3", /* CUDA 13 */
		"_ZN6cudart12globalStateC1Ev",                               /* before it */
	};
	static const char *const program[] = {
		"main",
		"app_alloc_a",
		"_Z11write_bytesPhyh",
		"_Z3fooP9cudaError",
		"_ZN3app10cudaHelperEv",
		"cuda_helper",
		"mycudaMalloc",
		"cudart_helper",
	};
	struct gg_globs g;

	gg_globs_parse(&g, GG_SKIP_SYMBOLS_DEFAULT);
	for (size_t i = 0; i < sizeof(runtime) / sizeof(runtime[0]); i++)
		cr_expect(gg_globs_match(&g, runtime[i]), "%s", runtime[i]);
	for (size_t i = 0; i < sizeof(program) / sizeof(program[0]); i++)
		cr_expect(!gg_globs_match(&g, program[i]), "%s", program[i]);
}

Test(runtime_syms, a_launch_stub_names_its_kernels_host_function)
{
	char keys[2][GG_RUNTIME_KEY_MAX], key[GG_RUNTIME_KEY_MAX];

	/* Names nvcc 13 gave: a C++ kernel, an extern "C" one, a template. */
	cr_assert_eq(gg_runtime_stub_keys("_Z33__device_stub__Z11write_bytesPhyhPhyh", keys), 2);
	cr_expect_str_eq(keys[0], "_Z11write_bytesPhyh");
	cr_expect_str_eq(keys[1], "write_bytes");
	cr_assert_eq(gg_runtime_stub_keys("_Z21__device_stub__Z2ckPiPi", keys), 2);
	cr_expect_str_eq(keys[1], "ck");
	cr_assert_eq(gg_runtime_stub_keys("_ZL31__device_stub__ZN2ns2tkIfEEvPT_Pf", keys), 1);
	cr_assert(gg_runtime_symbol_key("_ZN2nsL2tkIfEEvPT_", key));
	cr_expect_str_eq(keys[0], key);
	/* Nothing else is a stub, and a length past the name is refused. */
	cr_expect_eq(gg_runtime_stub_keys("cudaMalloc", keys), 0);
	cr_expect_eq(gg_runtime_stub_keys("_Z3fooi", keys), 0);
	cr_expect_eq(gg_runtime_stub_keys("_Z99__device_stub__Z3fooi", keys), 0);
	cr_expect_eq(gg_runtime_stub_keys("_Z15__device_stub__", keys), 0);
	cr_expect_eq(gg_runtime_stub_keys("__device_stub__Z3fooi", keys), 0);
}

/* For each function of app-static-rt: whether the ranges hold it. */
struct expect_ranges {
	const struct gg_ranges *r;
	const struct gg_globs *g;
	unsigned checked;
};

static int check_function(void *ctx, const char *name, uint64_t value, uint64_t size)
{
	struct expect_ranges *x = ctx;
	/* The runtime's names, and the host function of the kernel whose stub
	 * they name. */
	bool runtime = gg_globs_match(x->g, name) || !strcmp(name, "_Z14no_such_kernelv");

	if (!size)
		return 0;
	cr_expect_eq(gg_ranges_hold(x->r, value), runtime, "%s", name);
	cr_expect_eq(gg_ranges_hold(x->r, value + size - 1), runtime, "%s", name);
	x->checked++;
	return 0;
}

Test(runtime_syms, the_ranges_are_the_runtimes_functions_of_the_program)
{
	struct gg_globs g;
	struct gg_ranges r;
	struct gg_elf e;
	struct expect_ranges x = { &r, &g, 0 };

	gg_globs_parse(&g, GG_SKIP_SYMBOLS_DEFAULT);
	cr_assert_eq(gg_elf_open(&e, STATIC_RT), 0);
	cr_assert_eq(gg_runtime_ranges(&e, &g, &r), 0);
	cr_assert_eq(gg_elf_functions(&e, gg_elf_section(&e, NULL, SHT_SYMTAB), check_function, &x), 0);
	cr_expect_gt(x.checked, 20);
	cr_expect_eq(gg_runtime_linked(&e), 1);
	gg_ranges_free(&r);
	gg_elf_close(&e);

	/* Stripped: no names, but the runtime is still seen to be there. */
	cr_assert_eq(gg_elf_open(&e, GG_STATIC_RT_STRIPPED), 0);
	cr_expect_eq(gg_runtime_ranges(&e, &g, &r), -ENOENT);
	cr_expect_eq(gg_runtime_linked(&e), 1);
	gg_elf_close(&e);

	/* A program without it. */
	cr_assert_eq(gg_elf_open(&e, GG_APPS "/app-audit"), 0);
	cr_expect_eq(gg_runtime_linked(&e), 0);
	gg_elf_close(&e);
}

/* ---- the ELF reader (unit) ---- */

static char *read_whole(const char *path, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf;

	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size);
	cr_assert_not_null(buf);
	cr_assert_eq(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/* Everything the shim does with an executable, on @path: it must not crash
 * whatever the file holds, and answer 0 or an error. */
static void read_everything(const char *path)
{
	struct gg_globs g;
	struct gg_ranges r;
	struct gg_elf e;
	int err;

	gg_globs_parse(&g, GG_SKIP_SYMBOLS_DEFAULT);
	err = gg_elf_open(&e, path);
	if (err) {
		cr_expect(err == -ENOEXEC || err == -ENOMEM, "%d", err);
		return;
	}
	err = gg_runtime_ranges(&e, &g, &r);
	cr_expect(err == 0 || err == -ENOENT || err == -ENOEXEC || err == -EFBIG || err == -ENOMEM,
		  "%d", err);
	if (!err)
		gg_ranges_free(&r);
	err = gg_runtime_linked(&e);
	cr_expect(err == 0 || err == 1 || err == -ENOEXEC, "%d", err);
	gg_elf_close(&e);
}

Test(elf, a_truncated_or_damaged_file_is_an_error_never_a_crash)
{
	char dir[64], path[128];
	size_t len;
	char *good = read_whole(STATIC_RT, &len), *bad = malloc(len);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)good;
	uint64_t seed = 0x9e3779b97f4a7c15ull;

	cr_assert_not_null(bad);
	gg_test_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/damaged", dir);
	/* Cut anywhere: in the header, the sections, the section headers. */
	for (size_t cut = 0; cut < len; cut += cut < 128 ? 7 : len / 61 + 1) {
		FILE *f = fopen(path, "w");

		cr_assert_eq(fwrite(good, 1, cut, f), cut);
		fclose(f);
		read_everything(path);
	}
	/* Damaged: random bytes written over the ELF header and the section
	 * header table, where every offset and size the reader trusts lies. */
	for (int round = 0; round < 400; round++) {
		FILE *f;

		memcpy(bad, good, len);
		for (int k = 0; k < 1 + round % 8; k++) {
			size_t at;

			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			at = k % 2 || eh->e_shoff >= len ? seed % sizeof(Elf64_Ehdr)
							 : eh->e_shoff + seed % (len - eh->e_shoff);
			bad[at] = (char)(seed >> 32);
			/* Or a whole word of ones: the largest offsets and sizes. */
			if ((seed & 0x100) && at - at % 8 + 8 <= len)
				memset(bad + at - at % 8, 0xff, 8);
		}
		f = fopen(path, "w");
		cr_assert_eq(fwrite(bad, 1, len, f), len);
		fclose(f);
		read_everything(path);
	}
	free(good);
	free(bad);
}
