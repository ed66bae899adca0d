/* What a module keeps for the report files (its first findings, an array
 * under a leaf lock), walked so that the walker's callback, which may call
 * dladdr() and write, runs with no lock held: copied out a few at a time
 * into the stack. findings.c and ranges.c walk theirs so. */
#ifndef GG_SHIM_BASE_KEPT_H
#define GG_SHIM_BASE_KEPT_H

#include <pthread.h>
#include <stddef.h>

#define GG_KEPT_COPY 4096 /* bytes copied out at a time; an element is at most this */

/* Call @each(@arg, element) for each of the *@n elements of @size bytes at
 * @kept, in order, *@n and the elements read under @lock, @each with no lock
 * held. Elements kept while it walks are walked too. */
void gg_kept_walk(pthread_mutex_t *lock, const void *kept, const unsigned *n, size_t size,
		  void (*each)(void *arg, const void *element), void *arg);

#endif
