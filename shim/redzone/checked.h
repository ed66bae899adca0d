/* Checked launches (checked.c): a launch waited for, and the bands of the
 * zones it was given checked. */
#ifndef GG_SHIM_REDZONE_CHECKED_H
#define GG_SHIM_REDZONE_CHECKED_H

#include <stdint.h>

#include "redzone/redzone.h"

/* Wait for launch @l of kernel slot @slot and check the bands of the zones
 * at @ptrs (@n of them; n < 0: its parameters are unknown, every zone of its
 * context). Violations are reported now; GPUGUARD_HALT_ON_ERROR stops. */
void gg_checked_launch(const struct gg_redzone_launch *l, int slot, const uint64_t *ptrs, int n);

/* Launches checked so far. */
uint64_t gg_checked_count(void);

/* Fork: the child counts its own. */
void gg_checked_atfork_child(void);

#endif
