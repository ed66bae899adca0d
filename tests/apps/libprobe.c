/* Linked by app-rtld-local, so in the global scope after the shim. Defines
 * gg_probe_next_symbol itself and asks for the next one, as an interposer
 * does: a dlsym that makes the shim the caller answers with libprobe's own. */
#include <dlfcn.h>
#include <stdio.h>

#include "describe.h"

int gg_probe_next_symbol(void);
int gg_probe_dep_symbol(void);
void probe_global_run(void);

int gg_probe_next_symbol(void)
{
	return 3;
}

void probe_global_run(void)
{
	static const char *const names[] = { "gg_probe_next_symbol", "gg_probe_dep_symbol",
					     "cuMemAlloc_v2", "gnu_get_libc_version" };

	printf("global lib dependency: %d\n", gg_probe_dep_symbol()); /* keeps the DT_NEEDED */
	for (const char *const *n = names; n < names + sizeof(names) / sizeof(names[0]); n++)
		app_probe("global lib", *n);
}
