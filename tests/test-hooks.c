/* Interposition on all three routes (docs/how-it-works.md, "What the shim does"), through the
 * fake driver. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "hooks/hooks.h"
#include "start/start.h"

#define APP(name) GG_APPS "/" name

/* Verbose, with boundaries that give the launch and synchronize hooks work:
 * without them those are not handed out (docs/how-it-works.md, "What the shim does"; below).
 */
static const char *const trace_env[] = { "GPUGUARD_VERBOSITY=2",
					 "GPUGUARD_BOUNDARY=launch:1000000,sync:1000000", NULL };

/* The lines every route of the common scenario must produce at verbosity 2. */
static void assert_scenario_intercepted(const struct gg_run *r, const char *alloc_async,
					const char *launch)
{
	char want[128];

	cr_assert_eq(gg_run_exit(r), 0, "stderr: %s", r->err);
	cr_assert_eq(gg_count_lines(r->err, "\"gg_fill\") -> CUDA_SUCCESS"), 1, "%s", r->err);
	cr_assert_eq(gg_count_lines(r->err, "cuModuleGetFunction(module 0x"), 2, "%s", r->err);
	cr_assert_eq(gg_count_lines(r->err, "\"no_such_kernel\") -> CUDA_ERROR_NOT_FOUND"), 1, "%s",
		     r->err);
	cr_assert_eq(gg_count_lines(r->err, "cuMemAlloc_v2(1000 bytes) #0 -> CUDA_SUCCESS 0x"), 1, "%s",
		     r->err);
	cr_assert_eq(gg_count_lines(r->err, "cuMemFree_v2(0x"), 2, "%s", r->err);
	cr_assert_eq(gg_count_lines(r->err, ") -> CUDA_ERROR_INVALID_VALUE"), 1,
		     "the second free fails: %s", r->err);
	snprintf(want, sizeof(want), "%s(256 bytes) #1 -> CUDA_SUCCESS", alloc_async);
	cr_assert_eq(gg_count_lines(r->err, want), 1, "%s", r->err);
	snprintf(want, sizeof(want), "%s 1", launch);
	cr_assert_eq(gg_count_lines(r->err, "intercepted "), 1, "%s", r->err);
	cr_assert_neq(strstr(r->err, want), NULL, "%s", r->err);
	cr_assert_neq(strstr(r->err, "cuCtxSynchronize 1"), NULL, "%s", r->err);
	/* Besides the INFO lines, the one ERROR that names the kernel still
	 * missing at exit (every error is named, at every verbosity). */
	cr_assert_eq(gg_count_lines(r->err, "ERROR: required kernel never resolved: "
					    "kernels.ptx::no_such_kernel"),
		     1, "%s", r->err);
	cr_assert_eq(gg_count_lines(r->err, "gpuguard["), gg_count_lines(r->err, "INFO: ") + 1, "%s",
		     r->err);
}

Test(hooks, direct_link_route_is_intercepted)
{
	struct gg_run r;

	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE, trace_env,
	       (const char *[]){ APP("app-direct"), GG_PTX, NULL });
	assert_scenario_intercepted(&r, "cuMemAllocAsync", "cuLaunchKernel");
	cr_assert_neq(strstr(r.out, "direct: ok"), NULL);
	gg_run_free(&r);
}

Test(hooks, dlsym_route_is_intercepted)
{
	struct gg_run r;

	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE, trace_env,
	       (const char *[]){ APP("app-dlsym"), GG_PTX, NULL });
	assert_scenario_intercepted(&r, "cuMemAllocAsync", "cuLaunchKernel");
	cr_assert_neq(strstr(r.out, "dlsym: ok"), NULL);
	gg_run_free(&r);
}

Test(hooks, cuGetProcAddress_route_is_intercepted)
{
	struct gg_run r;

	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE, trace_env,
	       (const char *[]){ APP("app-procaddr"), GG_PTX, NULL });
	assert_scenario_intercepted(&r, "cuMemAllocAsync", "cuLaunchKernel");
	cr_assert_neq(strstr(r.err, "cuGetProcAddress_v2 "), NULL, "%s", r.err);
	gg_run_free(&r);
}

Test(hooks, cuGetProcAddress_route_hands_out_per_thread_stream_wrappers)
{
	struct gg_run r;

	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE, trace_env,
	       (const char *[]){ APP("app-procaddr"), "--ptsz", GG_PTX, NULL });
	assert_scenario_intercepted(&r, "cuMemAllocAsync_ptsz", "cuLaunchKernel_ptsz");
	cr_assert_eq(strstr(r.err, "cuLaunchKernel 1"), NULL, "legacy launch seen: %s", r.err);
	gg_run_free(&r);
}

/* Lazy loading's lookups, cuKernelGetFunction and cuLibraryGetModule, are
 * seen on every route. */
Test(hooks, every_route_intercepts_where_a_librarys_kernel_is_materialised)
{
	static const char *const apps[] = { APP("app-direct"), APP("app-dlsym"), APP("app-procaddr") };

	for (size_t i = 0; i < sizeof(apps) / sizeof(apps[0]); i++) {
		struct gg_run r;

		gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE,
		       (const char *[]){ "GPUGUARD_VERBOSITY=2", "GG_SCENARIO_LIBRARY=" GG_PTX, NULL },
		       (const char *[]){ apps[i], GG_PTX, NULL });
		cr_assert_eq(gg_run_exit(&r), 0, "%s: %s", apps[i], r.err);
		cr_expect(strstr(r.out, "its function: CUDA_SUCCESS\nlibrary module: CUDA_SUCCESS\n"),
			  "%s: %s", apps[i], r.out);
		cr_expect(strstr(r.err, ", \"gg_fill\") -> CUDA_SUCCESS") &&
				  strstr(r.err, "INFO: cuKernelGetFunction(module 0x"),
			  "%s: %s", apps[i], r.err);
		cr_expect(strstr(r.err, "cuKernelGetFunction 1, cuLibraryGetModule 1"), "%s: %s",
			  apps[i], r.err);
		gg_run_free(&r);
	}
}

/* "name count" lines: @with has @without's, and more only of the queries
 * the shim makes of its own (at least as many of those). */
static void assert_same_calls_but_queries(const char *without, const char *with, const char *app)
{
	static const char *const queries[] = { "cuCtxGetCurrent", "cuCtxGetDevice",
					       "cuDeviceGetAttribute" };
	char name[128];
	unsigned long a, b;
	const char *line;

	for (int pass = 0; pass < 2; pass++) {
		for (line = pass ? with : without; sscanf(line, "%127s %lu", name, &a) == 2;
		     line = strchr(line, '\n') + 1) {
			bool query = false;
			char key[140];
			const char *other;

			for (size_t q = 0; q < sizeof(queries) / sizeof(queries[0]); q++)
				query |= !strcmp(name, queries[q]);
			snprintf(key, sizeof(key), "%s ", name);
			other = strstr(pass ? without : with, key);
			b = other ? strtoul(other + strlen(key), NULL, 10) : 0;
			if (query)
				cr_expect(pass ? a >= b : b >= a, "%s: %s %lu with, %lu without", app,
					  name, pass ? a : b, pass ? b : a);
			else
				cr_expect_eq(a, b, "%s: %s %lu vs %lu (with the shim: %s)", app, name,
					     a, b, pass ? "first" : "second");
			if (!strchr(line, '\n'))
				break;
		}
	}
}

/* Each application call reaches the driver exactly once, on every route. */
Test(hooks, driver_sees_each_call_once)
{
	static const char *const apps[][3] = {
		{ APP("app-direct"), GG_PTX, NULL },
		{ APP("app-dlsym"), GG_PTX, NULL },
		{ APP("app-procaddr"), GG_PTX, NULL },
	};

	for (size_t i = 0; i < sizeof(apps) / sizeof(apps[0]); i++) {
		char *counts[2];

		for (int with = 0; with < 2; with++) {
			char path[] = "/tmp/gg-calls-XXXXXX", env[64];
			int fd = mkstemp(path);
			struct gg_run r;

			cr_assert_geq(fd, 0);
			snprintf(env, sizeof(env), "FAKECUDA_CALLS_FILE=%s", path);
			gg_run(&r, GG_RUN_FAKE | (with ? GG_RUN_SHIM : 0),
			       (const char *[]){ env, "GPUGUARD_VERBOSITY=2", NULL }, apps[i]);
			cr_assert_eq(gg_run_exit(&r), 0, "%s: %s", apps[i][0], r.err);
			counts[with] = gg_read_file(path);
			cr_assert_not_null(counts[with]);
			unlink(path);
			gg_run_free(&r);
		}
		cr_assert_neq(strstr(counts[0], "cuMemAlloc_v2 1\n"), NULL, "%s", counts[0]);
		/* The shim's own calls at a load (the image preflight asks for the
		 * device's compute capability) are queries; nothing else is added. */
		assert_same_calls_but_queries(counts[0], counts[1], apps[i][0]);
		free(counts[0]);
		free(counts[1]);
	}
}

static void assert_same_modulo_redirect(struct gg_run *with, struct gg_run *without)
{
	cr_assert_eq(gg_run_exit(with), 0, "%s", with->err);
	cr_assert_eq(gg_run_exit(without), 0, "%s", without->err);
	char *norm = strdup(with->out);

	/* A redirected export is our wrapper of the same name. */
	gg_replace_all(norm, "libgpuguard.so:", "libcuda.so.1:");
	cr_assert_str_eq(norm, without->out, "\n-- with shim --\n%s\n-- without --\n%s", with->out,
			 without->out);
	free(norm);
}

Test(hooks, cuGetProcAddress_traps_resolve_as_the_driver_does)
{
	struct gg_run with, without;
	const char *const argv[] = { APP("app-procaddr-traps"), NULL };

	gg_run(&with, GG_RUN_SHIM | GG_RUN_FAKE, trace_env, argv);
	gg_run(&without, GG_RUN_FAKE, NULL, argv);
	assert_same_modulo_redirect(&with, &without);

	static const char *const expect[] = {
		/* Asked for itself, at both versions, before cuInit. */
		"4-arg cuGetProcAddress@11030: rc 0 -> libgpuguard.so:cuGetProcAddress\n",
		"4-arg cuGetProcAddress@12000: rc 0 -> libgpuguard.so:cuGetProcAddress_v2\n",
		("cuGetProcAddress@12000/0 (NULL status): rc 0 status -1 -> "
		 "libgpuguard.so:cuGetProcAddress_v2\n"),
		/* An old version gets the old, unhooked export, never the _v2 wrapper. */
		"cuMemAlloc@2000/0: rc 0 status 0 -> libcuda.so.1:cuMemAlloc\n",
		"cuMemAlloc@3020/0: rc 0 status 0 -> libgpuguard.so:cuMemAlloc_v2\n",
		"cuCtxSynchronize@12000/0: rc 0 status 0 -> libgpuguard.so:cuCtxSynchronize\n",
		"cuCtxSynchronize@13000/0: rc 0 status 0 -> libgpuguard.so:cuCtxSynchronize_v2\n",
		"cuLaunchKernel@12000/2: rc 0 status 0 -> libgpuguard.so:cuLaunchKernel_ptsz\n",
		"cuMemAllocAsync@12000/2: rc 0 status 0 -> libgpuguard.so:cuMemAllocAsync_ptsz\n",
		/* Not hooked: the driver's own. */
		"cuDriverGetVersion@12000/0: rc 0 status 0 -> libcuda.so.1:cuDriverGetVersion\n",
		"cuGetExportTable@12000/0: rc 0 status 0 -> libcuda.so.1:cuGetExportTable\n",
		"cuNoSuchFunction@12000/0: rc 500 status 1 -> null\n",
	};
	for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++)
		cr_assert_neq(strstr(with.out, expect[i]), NULL, "missing: %s\nin:\n%s", expect[i],
			      with.out);
	gg_run_free(&with);
	gg_run_free(&without);
}

/* A hook is handed out only where it has work (docs/how-it-works.md, "What the shim does"):
 * the answer for the driver's own function costs nothing. */
static void assert_answers(const char *const *env, const char *const *want)
{
	struct gg_run r;

	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE, env, (const char *[]){ APP("app-procaddr-traps"), NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	for (; *want; want++)
		cr_expect(strstr(r.out, *want), "missing: %s\nin:\n%s", *want, r.out);
	gg_run_free(&r);
}

Test(hooks, launch_and_synchronize_hooks_are_handed_out_only_where_they_have_work)
{
	/* Nothing counts launches or synchronizes: the driver's own. */
	assert_answers(
		NULL,
		(const char *[]){
			"cuMemAlloc@3020/0: rc 0 status 0 -> libgpuguard.so:cuMemAlloc_v2\n",
			"cuCtxSynchronize@12000/0: rc 0 status 0 -> libcuda.so.1:cuCtxSynchronize\n",
			"cuCtxSynchronize@13000/0: rc 0 status 0 -> libcuda.so.1:cuCtxSynchronize_v2\n",
			"cuLaunchKernel@12000/2: rc 0 status 0 -> libcuda.so.1:cuLaunchKernel_ptsz\n",
			"cuMemcpyHtoD@12000/0: rc 0 status 0 -> libcuda.so.1:cuMemcpyHtoD_v2\n",
			"cuMemsetD8Async@12000/2: rc 0 status 0 -> libcuda.so.1:cuMemsetD8Async_ptsz\n",
			/* Graphs: what a replay launches is followed only where launches are. */
			"cuGraphLaunch@12000/2: rc 0 status 0 -> libcuda.so.1:cuGraphLaunch_ptsz\n",
			"cuGraphInstantiateWithFlags@12000/0: rc 0 status 0 -> "
			"libcuda.so.1:cuGraphInstantiateWithFlags\n",
			"cuGraphExecUpdate@12000/0: rc 0 status 0 -> "
			"libcuda.so.1:cuGraphExecUpdate_v2\n",
			"cuStreamBeginCapture@12000/0: rc 0 status 0 -> "
			"libcuda.so.1:cuStreamBeginCapture_v2\n",
			NULL });
	/* Red zones name their suspects at each launch, and check copies and sets. */
	assert_answers(
		(const char *[]){ "GPUGUARD_REDZONE=64", NULL },
		(const char *[]){
			"cuLaunchKernel@12000/2: rc 0 status 0 -> libgpuguard.so:cuLaunchKernel_ptsz\n",
			"cuCtxSynchronize@12000/0: rc 0 status 0 -> libcuda.so.1:cuCtxSynchronize\n",
			"cuMemcpyHtoD@12000/0: rc 0 status 0 -> libgpuguard.so:cuMemcpyHtoD_v2\n",
			"cuMemsetD8Async@12000/2: rc 0 status 0 -> "
			"libgpuguard.so:cuMemsetD8Async_ptsz\n",
			"cuMemcpyBatchAsync@13000/0: rc 0 status 0 -> "
			"libgpuguard.so:cuMemcpyBatchAsync_v2\n",
			/* The 32-bit legacy form is not hooked: the driver's own. */
			"cuMemcpyHtoD@2000/0: rc 0 status 0 -> libcuda.so.1:cuMemcpyHtoD\n",
			"cuGraphLaunch@12000/2: rc 0 status 0 -> libgpuguard.so:cuGraphLaunch_ptsz\n",
			"cuGraphInstantiateWithFlags@12000/0: rc 0 status 0 -> "
			"libgpuguard.so:cuGraphInstantiateWithFlags\n",
			"cuGraphInstantiate@11000/0: rc 0 status 0 -> "
			"libgpuguard.so:cuGraphInstantiate_v2\n",
			"cuGraphExecUpdate@12000/0: rc 0 status 0 -> "
			"libgpuguard.so:cuGraphExecUpdate_v2\n",
			"cuGraphExecKernelNodeSetParams@12000/0: rc 0 status 0 -> "
			"libgpuguard.so:cuGraphExecKernelNodeSetParams_v2\n",
			"cuStreamBeginCapture@12000/2: rc 0 status 0 -> "
			"libgpuguard.so:cuStreamBeginCapture_v2_ptsz\n",
			"cuStreamEndCapture@12000/0: rc 0 status 0 -> "
			"libgpuguard.so:cuStreamEndCapture\n",
			NULL });
	assert_answers(
		(const char *[]){ "GPUGUARD_BOUNDARY=sync:3", NULL },
		(const char *[]){
			"cuCtxSynchronize@13000/0: rc 0 status 0 -> "
			"libgpuguard.so:cuCtxSynchronize_v2\n",
			"cuLaunchKernel@12000/2: rc 0 status 0 -> libcuda.so.1:cuLaunchKernel_ptsz\n",
			"cuGraphLaunch@12000/0: rc 0 status 0 -> libcuda.so.1:cuGraphLaunch\n", NULL });
	assert_answers((const char *[]){ "GPUGUARD_BOUNDARY=launch:3", NULL },
		       (const char *[]){
			       "cuGraphLaunch@12000/0: rc 0 status 0 -> libgpuguard.so:cuGraphLaunch\n",
			       NULL });
	/* The calls hooked only to drain the quarantine when they run out of
	 * memory (redzone/quarantine.c, gg_quarantine_drains): with red zones
	 * but no quarantine, the driver's own; with one, the wrappers. */
	assert_answers(
		(const char *[]){ "GPUGUARD_REDZONE=64", NULL },
		(const char *[]){
			"cuArrayCreate@12000/0: rc 0 status 0 -> libcuda.so.1:cuArrayCreate_v2\n",
			"cuArray3DCreate@12000/0: rc 0 status 0 -> libcuda.so.1:cuArray3DCreate_v2\n",
			"cuCtxCreate@12000/0: rc 0 status 0 -> libcuda.so.1:cuCtxCreate_v3\n",
			"cuDevicePrimaryCtxRetain@12000/0: rc 0 status 0 -> "
			"libcuda.so.1:cuDevicePrimaryCtxRetain\n",
			"cuMemCreate@12000/0: rc 0 status 0 -> libgpuguard.so:cuMemCreate\n",
			"cuGraphUpload@12000/2: rc 0 status 0 -> libcuda.so.1:cuGraphUpload_ptsz\n",
			"cuGraphAddMemAllocNode@12000/0: rc 0 status 0 -> "
			"libcuda.so.1:cuGraphAddMemAllocNode\n",
			NULL });
	assert_answers(
		(const char *[]){ "GPUGUARD_REDZONE=64", "GPUGUARD_QUARANTINE=1M", NULL },
		(const char *[]){
			"cuArrayCreate@12000/0: rc 0 status 0 -> libgpuguard.so:cuArrayCreate_v2\n",
			"cuArray3DCreate@12000/0: rc 0 status 0 -> "
			"libgpuguard.so:cuArray3DCreate_v2\n",
			"cuCtxCreate@12000/0: rc 0 status 0 -> libgpuguard.so:cuCtxCreate_v3\n",
			"cuDevicePrimaryCtxRetain@12000/0: rc 0 status 0 -> "
			"libgpuguard.so:cuDevicePrimaryCtxRetain\n",
			"cuGraphUpload@12000/2: rc 0 status 0 -> libgpuguard.so:cuGraphUpload_ptsz\n",
			"cuGraphAddMemAllocNode@12000/0: rc 0 status 0 -> "
			"libgpuguard.so:cuGraphAddMemAllocNode\n",
			NULL });
	/* Disabled: every answer is the driver's own. */
	assert_answers(
		(const char *[]){ "GPUGUARD_DISABLE=1", NULL },
		(const char *[]){ "cuMemAlloc@3020/0: rc 0 status 0 -> libcuda.so.1:cuMemAlloc_v2\n",
				  "cuGetProcAddress@12000/0 (NULL status): rc 0 status -1 -> "
				  "libcuda.so.1:cuGetProcAddress_v2\n",
				  NULL });
}

Test(hooks, dlsym_resolves_relative_to_the_caller_as_without_shim)
{
	struct gg_run with, without;
	const char *const argv[] = { APP("app-rtld-local"), GG_PROBE_LIB, GG_LOADER_LIB, NULL };

	gg_run(&with, GG_RUN_SHIM | GG_RUN_FAKE, trace_env, argv);
	gg_run(&without, GG_RUN_FAKE, NULL, argv);
	assert_same_modulo_redirect(&with, &without);

	static const char *const expect[] = {
		/* An interposer in the global scope asks for the next definition: not its own. */
		"global lib RTLD_NEXT gg_probe_next_symbol -> libprobe-dep.so:gg_probe_next_symbol\n",
		/* A library loaded RTLD_LOCAL sees its own group... */
		("local lib local-driver RTLD_DEFAULT gg_probe_local_dep_symbol -> "
		 "libprobe-local-dep.so:gg_probe_local_dep_symbol\n"),
		/* ...where the driver is: still redirected. */
		"local lib local-driver RTLD_DEFAULT cuMemAlloc_v2 -> libgpuguard.so:cuMemAlloc_v2\n",
		"local lib local-driver RTLD_DEFAULT cuInit -> libcuda.so.1:cuInit\n",
		/* Names the shim does not hook are never redirected, wherever they are. */
		"local lib local-driver RTLD_NEXT cudnnCreate -> libprobe-local-dep.so:cudnnCreate\n",
		("local lib local-driver RTLD_DEFAULT cuDriverGetVersionFake -> "
		 "libprobe-local-dep.so:cuDriverGetVersionFake\n"),
		"exe start RTLD_DEFAULT cudnnCreate -> libprobe-dep.so:cudnnCreate\n",
		/* A library after the shim asking for the next definition gets the
		 * driver's own (docs/limits.md, "Limits"). */
		"local lib local-driver RTLD_NEXT cuMemAlloc_v2 -> libcuda.so.1:cuMemAlloc_v2\n",
		/* No driver in the executable's scope: the shim's exports must not show. */
		"exe start RTLD_DEFAULT cuMemAlloc_v2 -> null\n",
		"exe start RTLD_NEXT cuMemAlloc_v2 -> null\n",
		"exe local-driver RTLD_DEFAULT cuMemAlloc_v2 -> null\n",
		/* Once the driver is global, the executable's lookups are redirected. */
		"exe global-driver RTLD_DEFAULT cuMemAlloc_v2 -> libgpuguard.so:cuMemAlloc_v2\n",
		"exe global-driver RTLD_NEXT cuMemAlloc_v2 -> libgpuguard.so:cuMemAlloc_v2\n",
		"exe start RTLD_NEXT gnu_get_libc_version -> libc.so.6:gnu_get_libc_version\n",
		/* A driver object's own lookups are the driver's, never our wrappers. */
		"driver loader cuMemAlloc_v2 -> libcuda.so.1:cuMemAlloc_v2\n",
	};
	for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++)
		cr_assert_neq(strstr(with.out, expect[i]), NULL, "missing: %s\nin:\n%s", expect[i],
			      with.out);
	gg_run_free(&with);
	gg_run_free(&without);
}

/* docs/limits.md, "Limits", on dlsym: every handle kind x the driver not loaded, loaded
 * RTLD_LOCAL, loaded RTLD_GLOBAL x a hooked name, an unhooked driver name and
 * names nobody defines. NULL or not, the object, and the dlerror() text left
 * behind are the same with and without the shim. */
Test(hooks, dlsym_answers_and_dlerror_are_the_same_as_without_the_shim)
{
	static const char *const states[] = { "none", "local", "global" };

	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		const char *const argv[] = { APP("app-dlsym-parity"), states[i], NULL };
		struct gg_run with, without;

		gg_run(&with, GG_RUN_SHIM | GG_RUN_FAKE, NULL, argv);
		gg_run(&without, GG_RUN_FAKE, NULL, argv);
		cr_assert_eq(gg_run_exit(&without), 0, "%s", without.err);
		cr_assert_eq(gg_run_exit(&with), 0, "%s", with.err);
		cr_assert_geq(gg_count_lines(without.out, "dlerror: "), 24, "%s", without.out);
		/* A failed lookup always leaves an error naming the symbol. */
		cr_assert_eq(gg_count_lines(without.out, ": NULL; dlerror: none"), 0, "%s",
			     without.out);
		cr_assert_str_eq(with.out, without.out, "driver %s", states[i]);
		cr_assert_str_eq(with.err, "",
				 "a process that found no driver function writes nothing");
		gg_run_free(&with);
		gg_run_free(&without);
	}
}

/* The reproduction that found the missing dlerror(): ctypes builds its
 * AttributeError from the message, and crashed on NULL. */
Test(hooks, python_ctypes_asks_for_a_driver_function_that_is_not_there)
{
	const char *const argv[] = { "/usr/bin/python3", "-c",
				     "import ctypes\n"
				     "print(hasattr(ctypes.CDLL(None), 'cuLaunchKernel'))\n"
				     "try:\n    ctypes.CDLL(None).cuMemAlloc_v2\n"
				     "except AttributeError as e:\n    print(e)\n",
				     NULL };
	struct gg_run with, without;

	gg_run(&with, GG_RUN_SHIM, NULL, argv);
	gg_run(&without, 0, NULL, argv);
	cr_assert_eq(gg_run_exit(&with), 0, "%s", with.err);
	cr_assert_str_eq(with.out, "False\n/usr/bin/python3: undefined symbol: cuMemAlloc_v2\n");
	cr_assert_str_eq(with.out, without.out);
	gg_run_free(&with);
	gg_run_free(&without);
}

Test(hooks, missing_real_function_returns_not_supported)
{
	struct gg_run r;

	gg_run(&r, 0, trace_env, (const char *[]){ APP("app-no-driver"), GG_SHIM, NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_assert_str_eq(r.out, "cuMemAlloc_v2 -> 801\n"
				"cuModuleGetFunction -> 801\n"
				"cuCtxSynchronize -> 801\n"
				"cuGetProcAddress_v2 -> 801\n");
	gg_run_free(&r);
}

Test(hooks, bad_configuration_value_is_named_once)
{
	struct gg_run r;

	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE,
	       (const char *[]){ "GPUGUARD_REDZONE=lots", "GPUGUARD_VERBOSITY=1", NULL },
	       (const char *[]){ APP("app-direct"), GG_PTX, NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_assert_eq(gg_count_lines(r.err, "WARN: GPUGUARD_REDZONE=\"lots\" is not valid"), 1, "%s",
		     r.err);
	cr_assert_eq(gg_count_lines(r.err, "] WARN: "), 1, "%s", r.err);
	cr_assert_eq(gg_count_lines(r.err, "gpuguard["), 3,
		     "the WARN, the ERROR naming the missing kernel and the exit line: %s", r.err);
	gg_run_free(&r);
}

Test(hooks, log_goes_to_the_file_named_with_pid)
{
	char dir[] = "/tmp/gg-log-XXXXXX", env[128], path[512];
	struct gg_run r;
	struct dirent *de;
	char *log = NULL;
	DIR *d;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(env, sizeof(env), "GPUGUARD_LOG=%s/log.%%p", dir);
	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE, (const char *[]){ env, "GPUGUARD_VERBOSITY=2", NULL },
	       (const char *[]){ APP("app-direct"), GG_PTX, NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_assert_eq(gg_count_lines(r.err, "gpuguard["), 0, "stderr: %s", r.err);
	cr_assert_not_null(d = opendir(dir));
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		cr_assert_null(log, "more than one log file");
		/* log.PID, with the child's pid in its lines too. */
		cr_assert_eq(strncmp(de->d_name, "log.", 4), 0, "%s", de->d_name);
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		log = gg_read_file(path);
		cr_assert_not_null(log);
		snprintf(env, sizeof(env), "gpuguard[%s] INFO: ", de->d_name + 4);
		cr_assert_neq(strstr(log, env), NULL, "%s", log);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
	cr_assert_not_null(log, "no log file written");
	cr_assert_eq(gg_count_lines(log, "\"no_such_kernel\") -> CUDA_ERROR_NOT_FOUND"), 1, "%s", log);
	free(log);
	gg_run_free(&r);
}

/* A log named as the program's own stdout would mix gpuguard's lines into it
 * (docs/how-it-works.md, "What the shim does": never there): they go to stderr, with why.
 * /dev/null, where nothing lands, is still a log. (/proc/self/fd/1, not
 * /dev/stdout: a machine without that link would get a file of that name
 * created.) */
Test(hooks, a_log_that_is_the_programs_stdout_goes_to_stderr)
{
	static const char *const logs[] = { "GPUGUARD_LOG=/proc/self/fd/1" };
	struct gg_run r, plain;

	gg_run(&plain, GG_RUN_FAKE, NULL, (const char *[]){ APP("app-direct"), GG_PTX, NULL });
	for (size_t i = 0; i < sizeof(logs) / sizeof(logs[0]); i++) {
		gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE,
		       (const char *[]){ logs[i], "GPUGUARD_VERBOSITY=2", NULL },
		       (const char *[]){ APP("app-direct"), GG_PTX, NULL });
		cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
		cr_assert_str_eq(r.out, plain.out, "%s: stdout changed", logs[i]);
		cr_assert_eq(gg_count_lines(r.err, "it is the program's stdout, where gpuguard never "
						   "writes; logging to stderr"),
			     1, "%s", r.err);
		cr_assert_eq(gg_count_lines(r.err, "\"no_such_kernel\") -> CUDA_ERROR_NOT_FOUND"), 1,
			     "%s", r.err);
		gg_run_free(&r);
	}
	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE, (const char *[]){ "GPUGUARD_LOG=/dev/null", NULL },
	       (const char *[]){ APP("app-direct"), GG_PTX, NULL });
	cr_assert_eq(gg_count_lines(r.err, "gpuguard["), 0, "%s", r.err);
	gg_run_free(&r);
	gg_run_free(&plain);
}

/* A cuGetProcAddress answer for a hooked name that is no driver export: the
 * calls through it are not seen, which is counted and said once (docs/how-it-works.md, "Red
 * zones": procaddr_unmatched). */
Test(hooks, an_unexported_cuGetProcAddress_answer_is_counted_and_warned_about_once)
{
	char dir[64], json[128], env_json[160];
	struct gg_run r;
	char *v;

	gg_test_dir(dir, sizeof(dir));
	snprintf(json, sizeof(json), "%s/s.json", dir);
	snprintf(env_json, sizeof(env_json), "GPUGUARD_SUMMARY_JSON=%s", json);
	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE,
	       (const char *[]){ "FAKECUDA_PROCADDR_UNEXPORTED=cuMemAlloc", "GPUGUARD_REDZONE=16",
				 env_json, NULL },
	       (const char *[]){ APP("app-procaddr"), GG_PTX, NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_expect_eq(gg_count_lines(r.err, "WARN: cuGetProcAddress(\"cuMemAlloc\") returned 0x"), 1,
		     "%s", r.err);
	cr_expect(strstr(r.err, "which is no function the driver exports: calls through it are "
				"not seen"),
		  "%s", r.err);
	v = gg_json(json, "j['coverage']['procaddr_unmatched'] >= 1");
	cr_expect_str_eq(v, "True");
	free(v);
	gg_run_free(&r);
	/* The driver's own answers: nothing of the kind. */
	gg_run(&r, GG_RUN_SHIM | GG_RUN_FAKE, (const char *[]){ "GPUGUARD_REDZONE=16", env_json, NULL },
	       (const char *[]){ APP("app-procaddr"), GG_PTX, NULL });
	cr_assert_eq(gg_run_exit(&r), 0, "%s", r.err);
	cr_expect(!strstr(r.err, "no function the driver exports"), "%s", r.err);
	v = gg_json(json, "j['coverage']['procaddr_unmatched']");
	cr_expect_str_eq(v, "0");
	free(v);
	gg_run_free(&r);
}

/* Each entry point's pass-through (disabled, or re-entered from the driver)
 * reaches the driver function of its own id, with the arguments untouched and
 * its answer handed back: on x86-64 the entries are assembly, whose ids are
 * counted, not named (hooks/entry-x86_64.S). Every driver parameter is a
 * scalar, so eleven integer arguments reach each probe as its own. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
static int probed = -1;
static long probed_first;
#define GG_HOOK(name, pfn, params, args)                \
	static CUresult probe_##name params             \
	{                                               \
		__asm__ volatile("" ::: "memory");      \
		probed = GG_ID_##name;                  \
		note_first args;                        \
		return (CUresult)(1000 + GG_ID_##name); \
	}
#define first_of(first, ...) (first)
#define note_first(...) __VA_OPT__(probed_first = (long)(uintptr_t)first_of(__VA_ARGS__, 0))
#include "driver/hooks.def"
#undef GG_HOOK
#pragma GCC diagnostic pop

static void *const probes[GG_HOOK_COUNT] = {
#define GG_HOOK(name, pfn, params, args) [GG_ID_##name] = (void *)probe_##name,
#include "driver/hooks.def"
#undef GG_HOOK
};

typedef CUresult (*any_entry)(long, long, long, long, long, long, long, long, long, long, long);

static void assert_each_entry_passes_to_its_own(const char *how)
{
	for (int id = 0; id < GG_HOOK_COUNT; id++) {
		any_entry entry = (any_entry)gg_hooks_wrapper((enum gg_hook_id)id);
		CUresult rc;

		probed = -1;
		probed_first = 0;
		rc = entry(0x5151 + id, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
		cr_assert_eq(probed, id, "%s: %s reached %s", how, gg_real_name((enum gg_hook_id)id),
			     probed < 0 ? "nothing" : gg_real_name((enum gg_hook_id)probed));
		cr_assert_eq((int)rc, 1000 + id, "%s: %s's answer was not handed back", how,
			     gg_real_name((enum gg_hook_id)id));
		if (id != GG_ID_cuCtxSynchronize) /* the one without arguments */
			cr_assert_eq(probed_first, 0x5151 + id, "%s: %s's first argument moved", how,
				     gg_real_name((enum gg_hook_id)id));
	}
}

Test(hooks, every_entry_point_passes_through_to_its_own_driver_function)
{
	for (int id = 0; id < GG_HOOK_COUNT; id++)
		atomic_store(&gg_real_fns[id], probes[id]);
	atomic_store(&gg_start_mode, GG_MODE_DISABLED);
	assert_each_entry_passes_to_its_own("disabled");
	atomic_store(&gg_start_mode, GG_MODE_ACTIVE);
	gg_real_inside = 1;
	assert_each_entry_passes_to_its_own("re-entered");
	gg_real_inside = 0;
	/* Set up, and idle on every route (a copy with red zones off): straight
	 * to the driver, never through the hook's work, which would count it. */
	memset(gg_start_pass, 1, GG_HOOK_COUNT);
	gg_real_counting = true;
	assert_each_entry_passes_to_its_own("idle");
	for (int id = 0; id < GG_HOOK_COUNT; id++)
		cr_assert_eq(atomic_load(&gg_real_calls[id]), 0, "idle: %s went through its work",
			     gg_real_name((enum gg_hook_id)id));
	gg_real_counting = false;
	memset(gg_start_pass, 0, GG_HOOK_COUNT);
}
