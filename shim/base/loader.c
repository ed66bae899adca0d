/* glibc takes the loader's list lock (dl_load_write_lock) in dl_iterate_phdr,
 * in a dlopen that adds an object and in a dlclose that removes one, and does
 * not reinitialise it in a forked child (2.36 does not; it resets only the
 * main lock and the TLS lock). A thread that held it when another thread
 * forked does not exist in the child, so the child would wait for it
 * forever. No fork handler can keep it free across fork(): it is held by
 * whichever thread is walking the list, and taking it in a prepare handler
 * would make the parent wait for callbacks that may wait for the forking
 * thread. So each fork notes whether other threads ran, and a child of such
 * a fork never asks for that lock.
 *
 * The handlers are registered when the shim is loaded, not at set-up: a
 * parent that never calls the driver forks children that may. They only
 * read and write a flag. */
#include "base/loader.h"

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>

#if defined(__has_include)
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define GG_HAVE_SINGLE_THREADED 1
#endif
#endif

static struct {
	/* Written by prepare in the forking thread, read by the child handler
	 * in the same thread (on the other side of fork); concurrent forks
	 * write the same value: they all run with another thread. */
	atomic_bool threaded_at_fork;
	atomic_bool may_hang; /* set by the child handler, never cleared */
} loader_state;

static void note_prepare(void)
{
#ifdef GG_HAVE_SINGLE_THREADED
	/* glibc sets it false at the first pthread_create and never back:
	 * "other threads may run". */
	atomic_store_explicit(&loader_state.threaded_at_fork, !__libc_single_threaded,
			      memory_order_relaxed);
#else
	atomic_store_explicit(&loader_state.threaded_at_fork, true, memory_order_relaxed);
#endif
}

static void note_child(void)
{
	if (atomic_load_explicit(&loader_state.threaded_at_fork, memory_order_relaxed))
		atomic_store_explicit(&loader_state.may_hang, true, memory_order_relaxed);
}

__attribute__((constructor)) static void note_forks(void)
{
	(void)pthread_atfork(note_prepare, NULL, note_child);
}

bool gg_loader_list_may_hang(void)
{
	return atomic_load_explicit(&loader_state.may_hang, memory_order_relaxed);
}

bool gg_loader_may_open(void)
{
	/* The thread that made the change did not come through fork(): in this
	 * process no one will finish it. */
	return !gg_loader_list_may_hang() || _r_debug.r_state == RT_CONSISTENT;
}
