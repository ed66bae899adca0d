/* dlsym from the executable, from a library in the global scope and from a
 * library loaded RTLD_LOCAL, before and after the driver joins the global
 * scope. Every line must read the same with and without the shim, except
 * that hooked driver exports come from libgpuguard.so. */
#include <dlfcn.h>
#include <stdio.h>

#include "describe.h"

void probe_global_run(void);

static void probe_exe(const char *when)
{
	static const char *const names[] = { "cuMemAlloc_v2",
					     "cuInit",
					     "gg_probe_next_symbol",
					     "cudnnCreate",
					     "gg_probe_local_dep_symbol",
					     "gnu_get_libc_version" };
	char who[64];

	snprintf(who, sizeof(who), "exe %s", when);
	for (const char *const *n = names; n < names + sizeof(names) / sizeof(names[0]); n++)
		app_probe(who, *n);
}

int main(int argc, char **argv)
{
	void *lib, *driver;
	void (*run)(const char *);

	if (argc != 3) {
		fprintf(stderr, "usage: %s LIBPROBE-LOCAL.so LIBCUDA-LOADER.so\n", argv[0]);
		return 64;
	}
	probe_exe("start");
	probe_global_run();
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib || !(run = (void (*)(const char *))dlsym(lib, "probe_local_run"))) {
		fprintf(stderr, "rtld-local: %s\n", dlerror());
		return 3;
	}
	run("local-driver");
	probe_exe("local-driver");
	driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!driver) {
		fprintf(stderr, "rtld-local: %s\n", dlerror());
		return 3;
	}
	run("global-driver");
	probe_exe("global-driver");

	/* A driver object asking for the real driver's functions. */
	void *loader = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
	void *(*lookup)(const char *) = loader ? (void *(*)(const char *))dlsym(loader, "loader_lookup")
					       : NULL;
	char buf[256];

	if (!lookup) {
		fprintf(stderr, "rtld-local: %s\n", dlerror());
		return 3;
	}
	printf("driver loader cuMemAlloc_v2 -> %s\n",
	       app_describe(lookup("cuMemAlloc_v2"), buf, sizeof(buf)));
	return 0;
}
