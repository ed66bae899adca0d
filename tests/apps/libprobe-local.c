/* dlopen()ed RTLD_LOCAL by app-rtld-local, linked with its own dependency
 * and the driver: glibc resolves its RTLD_DEFAULT and RTLD_NEXT lookups
 * relative to this object. */
#include <dlfcn.h>
#include <stdio.h>

#include "describe.h"

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

int gg_probe_local_dep_symbol(void);
void probe_local_run(const char *when);

void probe_local_run(const char *when)
{
	static const char *const names[] = { "gg_probe_local_dep_symbol",
					     "gg_probe_dep_symbol",
					     "gg_probe_next_symbol",
					     "cuMemAlloc_v2",
					     "cuModuleGetFunction",
					     "cuInit",
					     "cudnnCreate",
					     "cuDriverGetVersionFake",
					     "gnu_get_libc_version" };
	char who[64];
	int version = 0;

	/* Calls into both dependencies keep their DT_NEEDED entries. */
	printf("local lib %s dependency: %d, driver %d\n", when, gg_probe_local_dep_symbol(),
	       cuDriverGetVersion(&version) == CUDA_SUCCESS ? version : -1);
	snprintf(who, sizeof(who), "local lib %s", when);
	for (const char *const *n = names; n < names + sizeof(names) / sizeof(names[0]); n++)
		app_probe(who, *n);
}
