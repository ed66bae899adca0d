/* The shim's mode (gg_start_mode), as macros: the assembly entry points
 * (hooks/entry-x86_64.S) read it too. */
#ifndef GG_SHIM_START_START_MODE_H
#define GG_SHIM_START_START_MODE_H

#define GG_MODE_UNSET 0
#define GG_MODE_ACTIVE 1
#define GG_MODE_DISABLED 2
#define GG_MODE_FORKED 3

#endif
