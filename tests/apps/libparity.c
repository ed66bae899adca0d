/* dlsym from inside a library, for the parity matrix (app-dlsym-parity). */
#include <dlfcn.h>
#include <string.h>

void *parity_lookup(const char *kind, const char *name);

/* @kind: "default", "next" or "own" (this library's own handle). Never a
 * tail call: dlsym's caller must be this library, not the program. */
__attribute__((noinline)) void *parity_lookup(const char *kind, const char *name)
{
	void *self = NULL, *fn;

	if (!strcmp(kind, "own") && !(self = dlopen("libparity.so", RTLD_NOW | RTLD_NOLOAD)))
		return NULL;
	fn = dlsym(!strcmp(kind, "default") ? RTLD_DEFAULT
		   : !strcmp(kind, "next")  ? RTLD_NEXT
					    : self,
		   name);
	/* No dlclose(): it would clear the pending error the caller is about to read. */
	__asm__ volatile("" : "+r"(fn)::"memory");
	return fn;
}
