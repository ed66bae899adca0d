/* glibc's own dlsym. Built without sanitizers, with hooks/dlsym.c: the
 * sanitizer runtimes call dlsym while they start, before instrumented code
 * can run. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include "base/gg.h"
#include "driver/real.h"

typedef void *(*dlsym_fn)(void *, const char *);

static struct {
	pthread_once_t once;
	dlsym_fn real; /* glibc's dlsym; written once under @once */
} libc_state = { .once = PTHREAD_ONCE_INIT };

static void find_real_dlsym(void)
{
	/* glibc 2.34 moved dlsym into libc with a new version; before it, each
	 * architecture has its own base version. */
	static const char *const versions[] = { "GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17",
						"GLIBC_2.0" };

	for (size_t i = 0; i < GG_ARRAY_SIZE(versions) && !libc_state.real; i++)
		libc_state.real = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
}

void *gg_real_dlsym(void)
{
	pthread_once(&libc_state.once, find_real_dlsym);
	return (void *)libc_state.real;
}
