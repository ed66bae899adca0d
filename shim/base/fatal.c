#include "base/fatal.h"

#include <stdatomic.h>
#include <stdlib.h>

static struct {
	_Atomic(void (*)(void)) last_words; /* written once by start-up's set-up */
} fatal_state;

void gg_fatal_last_words(void (*fn)(void))
{
	atomic_store_explicit(&fatal_state.last_words, fn, memory_order_release);
}

void gg_fatal(void)
{
	void (*fn)(void) = atomic_load_explicit(&fatal_state.last_words, memory_order_acquire);

	if (fn)
		fn();
	abort();
}
