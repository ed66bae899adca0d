/* Shared macros of the shim. Everything is hidden unless GG_EXPORT says so. */
#ifndef GG_SHIM_BASE_GG_H
#define GG_SHIM_BASE_GG_H

#include <stddef.h>

#define GG_EXPORT __attribute__((visibility("default")))
#define GG_LIKELY(x) __builtin_expect(!!(x), 1)
#define GG_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define GG_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define GG_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* Store 0 into every counter of @counts, a struct of atomic_uint_fast64_t
 * members and arrays only (a module's counters that a forked child starts
 * afresh): one list, the struct's own, so a counter added there is reset too. */
#define GG_ZERO_COUNTERS(counts)                                                      \
	do {                                                                          \
		_Static_assert(sizeof(*(counts)) % sizeof(atomic_uint_fast64_t) == 0, \
			       "only atomic_uint_fast64_t counters");                 \
		atomic_uint_fast64_t *c_ = (atomic_uint_fast64_t *)(void *)(counts);  \
		for (size_t i_ = 0; i_ < sizeof(*(counts)) / sizeof(*c_); i_++)       \
			atomic_store_explicit(&c_[i_], 0, memory_order_relaxed);      \
	} while (0)

#endif
