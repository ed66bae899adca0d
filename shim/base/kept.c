/* Walking what a module keeps (base/kept.h). */
#include "base/kept.h"

#include <stdalign.h>
#include <string.h>

void gg_kept_walk(pthread_mutex_t *lock, const void *kept, const unsigned *n, size_t size,
		  void (*each)(void *arg, const void *element), void *arg)
{
	alignas(max_align_t) unsigned char copy[GG_KEPT_COPY];
	size_t per = size && size <= sizeof(copy) ? sizeof(copy) / size : 0;

	for (unsigned i = 0; per;) {
		size_t got = 0;

		pthread_mutex_lock(lock);
		for (; got < per && i < *n; got++, i++)
			memcpy(copy + got * size, (const unsigned char *)kept + (size_t)i * size, size);
		pthread_mutex_unlock(lock);
		if (!got)
			return;
		for (size_t k = 0; k < got; k++)
			each(arg, copy + k * size);
	}
}
