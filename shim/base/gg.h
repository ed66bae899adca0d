/* Shared macros of the shim. Everything is hidden unless GG_EXPORT says so. */
#ifndef GG_SHIM_BASE_GG_H
#define GG_SHIM_BASE_GG_H

#include <stddef.h>

#define GG_EXPORT __attribute__((visibility("default")))
#define GG_LIKELY(x) __builtin_expect(!!(x), 1)
#define GG_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define GG_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define GG_PRINTF(f, a) __attribute__((format(printf, f, a)))

#endif
