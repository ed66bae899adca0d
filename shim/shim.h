/* Start-up of the shim: the one-time set-up on first real use, exit and fork. */
#ifndef GG_SHIM_H
#define GG_SHIM_H

#include <stdbool.h>

/* GPUGUARD_DISABLE=1, read once; reads nothing else and sets nothing up. */
bool gg_shim_disabled(void);

/* Called by every hook: on the first call of the process, reads the
 * configuration and opens the log. False when the shim is disabled. */
bool gg_shim_active(void);

/* Write the reports (JSON, metrics), then abort(): every abort of the shim. */
__attribute__((noreturn)) void gg_shim_fatal(void);

#endif
