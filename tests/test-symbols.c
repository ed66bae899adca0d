/* Symbol hygiene (docs/how-it-works.md, "What the shim does"): the shim adds nothing else to
 * the process. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MAX_NAMES 2048

struct names {
	char *v[MAX_NAMES];
	size_t n;
};

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void add(struct names *s, const char *name, size_t len)
{
	cr_assert_lt(s->n, MAX_NAMES);
	s->v[s->n++] = strndup(name, len);
}

/* One name per line of a command's output. */
static void from_command(struct names *s, const char *cmd)
{
	FILE *p = popen(cmd, "r");
	char line[512];

	cr_assert_not_null(p, "%s", cmd);
	while (fgets(line, sizeof(line), p))
		add(s, line, strcspn(line, "\n"));
	cr_assert_eq(pclose(p), 0, "%s failed", cmd);
	qsort(s->v, s->n, sizeof(s->v[0]), cmp);
}

static void assert_same(const struct names *a, const struct names *b, const char *what)
{
	for (size_t i = 0; i < a->n && i < b->n; i++)
		cr_assert_str_eq(a->v[i], b->v[i], "%s", what);
	cr_assert_eq(a->n, b->n, "%s: %zu vs %zu names", what, a->n, b->n);
}

/* The hooks carry the hidden version GPUGUARD_HOOK (libgpuguard.map, which
 * shim/driver/gen-map.py writes into the build): the names without it, and
 * no version node symbol (type A). */
static void exported(struct names *s)
{
	from_command(s, "nm -D --defined-only '" GG_SHIM "' | awk '$2 != \"A\" {print $3}'"
			" | sed 's/@GPUGUARD_HOOK$//'");
}

static void version_script(struct names *s)
{
	from_command(s, "sed -n '/global:/,/local:/p' '" GG_BUILD_ROOT "/shim/libgpuguard.map'"
			" | grep -oE '^ *[A-Za-z_0-9]+;' | tr -d ' ;'");
}

static void hook_table(struct names *s)
{
	from_command(s, "grep -oE '^GG_HOOK\\([A-Za-z_0-9]+' '" GG_SOURCE_ROOT
			"/shim/driver/hooks.def' | cut -d'(' -f2");
}

Test(symbols, exports_are_exactly_the_version_script_and_dlsym)
{
	struct names nm = { 0 }, map = { 0 };

	exported(&nm);
	version_script(&map);
	cr_assert_gt(map.n, 30);
	/* Exported unversioned, outside the map's version node: dlsym, _exit and
	 * _Exit, which a forked worker ends with and still reports (test-fork.c),
	 * and the control API (hooks/control.c), which dlsym and ctypes find. */
	add(&map, "dlsym", 5);
	add(&map, "_exit", 5);
	add(&map, "_Exit", 5);
	add(&map, "gpuguard_boundary", 17);
	add(&map, "gpuguard_version", 16);
	qsort(map.v, map.n, sizeof(map.v[0]), cmp);
	assert_same(&nm, &map, "nm -D vs libgpuguard.map and dlsym");
}

Test(symbols, version_script_is_the_hook_table)
{
	struct names map = { 0 }, hooks = { 0 };

	version_script(&map);
	hook_table(&hooks);
	assert_same(&map, &hooks, "libgpuguard.map vs hooks.def");
}

/* Hidden (one '@'): a direct link binds to them, dlsym() never finds them;
 * dlsym itself is unversioned, so callers of every glibc version reach it. */
Test(symbols, hooks_have_the_hidden_version_and_dlsym_none)
{
	struct names nm = { 0 };

	from_command(&nm, "nm -D --defined-only '" GG_SHIM "' | awk '$2 != \"A\" {print $3}'");
	cr_assert_gt(nm.n, 30);
	for (size_t i = 0; i < nm.n; i++) {
		const char *at = strchr(nm.v[i], '@');

		if (!strcmp(nm.v[i], "dlsym") || !strcmp(nm.v[i], "_exit") ||
		    !strcmp(nm.v[i], "_Exit") || !strncmp(nm.v[i], "gpuguard_", 9))
			continue;
		cr_assert(at && !strcmp(at, "@GPUGUARD_HOOK"), "%s", nm.v[i]);
	}
}

Test(symbols, process_owned_symbols_are_not_exported)
{
	struct names nm = { 0 };

	exported(&nm);
	for (size_t i = 0; i < nm.n; i++) {
		cr_assert_neq(strncmp(nm.v[i], "_Unwind_", 8), 0, "%s", nm.v[i]);
		cr_assert_eq(strstr(nm.v[i], "backtrace"), NULL, "%s", nm.v[i]);
		cr_assert_eq(strstr(nm.v[i], "alloc") && strncmp(nm.v[i], "cu", 2), 0, "%s", nm.v[i]);
		cr_assert(!strcmp(nm.v[i], "dlsym") || !strcmp(nm.v[i], "_exit") ||
				  !strcmp(nm.v[i], "_Exit") || !strcmp(nm.v[i], "gpuguard_boundary") ||
				  !strcmp(nm.v[i], "gpuguard_version") || !strncmp(nm.v[i], "cu", 2),
			  "%s", nm.v[i]);
	}
}

Test(symbols, no_libunwind_or_libcuda_dependency)
{
	struct names needed = { 0 };

	from_command(&needed, "readelf -d '" GG_SHIM "' | grep NEEDED | grep -oE '\\[.*\\]'");
	cr_assert_gt(needed.n, 0);
	for (size_t i = 0; i < needed.n; i++) {
		cr_assert_eq(strstr(needed.v[i], "unwind"), NULL, "%s", needed.v[i]);
		cr_assert_eq(strstr(needed.v[i], "libcuda"), NULL, "%s", needed.v[i]);
		cr_assert_eq(strstr(needed.v[i], "libgcc_s"), NULL, "%s", needed.v[i]);
	}
}

Test(symbols, every_hook_is_a_real_driver_export)
{
	struct names hooks = { 0 }, stub = { 0 };

	hook_table(&hooks);
	from_command(&stub, "nm -D --defined-only '" GG_STUB_LIBCUDA "' | awk '{print $3}'");
	cr_assert_gt(stub.n, 300, "the toolkit's stub libcuda.so lists every export");
	for (size_t i = 0; i < hooks.n; i++)
		cr_assert_not_null(bsearch(&hooks.v[i], stub.v, stub.n, sizeof(stub.v[0]), cmp),
				   "%s is not exported by the driver", hooks.v[i]);
}

/* The version script is generated from hooks.def (shim/driver/gen-map.py): a
 * hook named twice there is refused with its name, never a map that lists it
 * twice (ld would take it, and the tests above would not see it). */
Test(symbols, map_generator_refuses_a_hook_named_twice)
{
	char cmd[1024];
	FILE *p;
	char out[512] = "";
	size_t n;
	int st;

	snprintf(cmd, sizeof(cmd),
		 "d=$(mktemp -d) && printf 'GG_HOOK(cuA, P, (), ())\\nGG_HOOK(cuB, P, (), ())\\n"
		 "GG_HOOK(cuA, P, (), ())\\n' >\"$d/h.def\" && python3 '%s/shim/driver/gen-map.py' "
		 "\"$d/h.def\" \"$d/out.map\" 2>&1; s=$?; test ! -e \"$d/out.map\"; t=$?; rm -rf "
		 "\"$d\"; "
		 "echo \"status $s absent $t\"",
		 GG_SOURCE_ROOT);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	st = pclose(p);
	cr_assert_eq(st, 0, "%s", out);
	cr_assert(strstr(out, "names these hooks twice: cuA"), "%s", out);
	cr_assert(strstr(out, "status 1 absent 0"), "%s", out);
}
