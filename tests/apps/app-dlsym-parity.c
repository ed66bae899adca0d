/* dlsym parity matrix (docs/how-it-works.md, "What the shim does" and Limits): every handle
 * kind x the driver's state x a hooked name, an unhooked driver name and a
 * name nobody defines. One line each: whether the answer was NULL, which
 * object it lies in (hooked names aside: with the shim they are its wrappers),
 * and the dlerror() text left behind. Run with and without the shim, the lines
 * must be the same.
 *   app-dlsym-parity none|local|global
 * The driver is libcuda.so.1 from the library path, loaded (or not) first. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

void *parity_lookup(const char *kind, const char *name);

static void *driver;

static void *lookup(const char *kind, const char *name)
{
	if (!strcmp(kind, "program-null-handle"))
		return dlsym(dlopen(NULL, RTLD_NOW), name);
	if (!strcmp(kind, "program-default"))
		return dlsym(RTLD_DEFAULT, name);
	if (!strcmp(kind, "program-next"))
		return dlsym(RTLD_NEXT, name);
	if (!strcmp(kind, "library-default"))
		return parity_lookup("default", name);
	if (!strcmp(kind, "library-next"))
		return parity_lookup("next", name);
	if (!strcmp(kind, "library-own-handle"))
		return parity_lookup("own", name);
	return dlsym(driver, name); /* driver-handle */
}

int main(int argc, char **argv)
{
	static const char *const kinds[] = { "program-null-handle", "program-default",
					     "program-next",        "library-default",
					     "library-next",        "library-own-handle",
					     "driver-handle" };
	static const char *const names[] = { "cuMemAlloc_v2", "cuMemcpyDtoH_v2",
					     "cuGgNobodyDefinesThis", "gg_nobody_defines_this" };
	const char *state = argc > 1 ? argv[1] : "none";

	if (!strcmp(state, "local") || !strcmp(state, "global")) {
		driver = dlopen("libcuda.so.1",
				RTLD_NOW | (state[0] == 'l' ? RTLD_LOCAL : RTLD_GLOBAL));
		if (!driver) {
			fprintf(stderr, "app-dlsym-parity: %s\n", dlerror());
			return 2;
		}
	}
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		if (!driver && !strcmp(kinds[k], "driver-handle"))
			continue;
		for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
			const char *hooked = n == 0 ? " (hooked)" : "";
			Dl_info info;
			void *fn;
			const char *err;

			(void)dlerror();
			fn = lookup(kinds[k], names[n]);
			err = dlerror();
			if (!fn)
				printf("%s %s: NULL", kinds[k], names[n]);
			else if (*hooked)
				printf("%s %s: found%s", kinds[k], names[n], hooked);
			else
				printf("%s %s: found in %s", kinds[k], names[n],
				       dladdr(fn, &info) && info.dli_fname
					       ? (strrchr(info.dli_fname, '/')
							  ? strrchr(info.dli_fname, '/') + 1
							  : info.dli_fname)
					       : "?");
			printf("; dlerror: %s\n", err ? err : "none");
		}
	}
	return 0;
}
