/* "object:symbol" for a function pointer, or "null": what the dlsym and
 * cuGetProcAddress tests compare with and without the shim. */
#ifndef GG_TESTS_APPS_DESCRIBE_H
#define GG_TESTS_APPS_DESCRIBE_H

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static inline const char *app_describe(const void *p, char *buf, size_t cap)
{
	Dl_info info;
	const char *obj;

	if (!p)
		return "null";
	if (!dladdr(p, &info) || !info.dli_fname)
		return "unknown";
	obj = strrchr(info.dli_fname, '/');
	obj = obj ? obj + 1 : info.dli_fname;
	snprintf(buf, cap, "%s:%s", obj, info.dli_sname ? info.dli_sname : "?");
	return buf;
}

/* "WHO RTLD_DEFAULT NAME -> ..." and "WHO RTLD_NEXT NAME -> ...". An inline
 * function, so the lookups are made from the object that includes this. */
static inline void app_probe(const char *who, const char *name)
{
	char buf[256];
	void *p;

	/* A NULL answer must come with a pending dlerror(), as documented. */
	(void)dlerror();
	p = dlsym(RTLD_DEFAULT, name);
	printf("%s RTLD_DEFAULT %s -> %s%s\n", who, name, app_describe(p, buf, sizeof(buf)),
	       !p && !dlerror() ? " without dlerror" : "");
	(void)dlerror();
	p = dlsym(RTLD_NEXT, name);
	printf("%s RTLD_NEXT %s -> %s%s\n", who, name, app_describe(p, buf, sizeof(buf)),
	       !p && !dlerror() ? " without dlerror" : "");
}

#endif
