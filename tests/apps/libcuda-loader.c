/* Built as libcuda.so.0: a driver object that looks up the real driver's
 * functions itself, as a loader shim does. Its own lookups must never get the
 * shim's wrappers back (they would call into it again). */
#include <dlfcn.h>
#include <stddef.h>

void *loader_lookup(const char *name);

void *loader_lookup(const char *name)
{
	void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	void *fn = driver ? dlsym(driver, name) : NULL;

	__asm__ volatile("" ::: "memory"); /* not a tail call: dlsym's caller is here */
	return fn;
}
