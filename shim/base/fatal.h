/* Every abort of the shim goes through gg_fatal(): the last words start-up
 * registered (the report files), then abort(). A module that must abort
 * calls down to here, never up to start-up. */
#ifndef GG_SHIM_BASE_FATAL_H
#define GG_SHIM_BASE_FATAL_H

/* Set once by start-up, before any module can abort. */
void gg_fatal_last_words(void (*fn)(void));

__attribute__((noreturn)) void gg_fatal(void);

#endif
