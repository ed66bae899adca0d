/* Caching allocators loaded in the process (docs/python.md,
 * "Frameworks and caching allocators"). */
#ifndef GG_SHIM_REDZONE_CACHING_H
#define GG_SHIM_REDZONE_CACHING_H

/* Look for caching allocators loaded since the last look: one WARN for each
 * whose per-allocation switch is off. No lock of the caller's may be held
 * (it walks the dynamic linker's list). */
void gg_redzone_caching_check(void);

/* The names ("pytorch") of those found with their switch off, up to @cap. */
unsigned gg_redzone_caching(const char **names, unsigned cap);

void gg_redzone_caching_atfork_child(void);

#endif
