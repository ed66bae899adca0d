/* The exported entry points: gg_hook_NAME for each name of driver/hooks.def,
 * exported as NAME, and the routes (dlsym, cuGetProcAddress) that hand them
 * out instead of the driver's functions. */
#ifndef GG_SHIM_HOOKS_HOOKS_H
#define GG_SHIM_HOOKS_HOOKS_H

#include "driver/real.h"

#define GG_HOOK(name, pfn, params, args) CUresult gg_hook_##name params;
#include "driver/hooks.def"
#undef GG_HOOK

/* Our wrapper of hooked export @id. */
void *gg_hooks_wrapper(enum gg_hook_id id);

/* For cuGetProcAddress: @fn as returned by the real @gpa for @symbol; our
 * wrapper when @fn is the address of a hooked export of the driver that holds
 * @gpa, else @fn. */
void *gg_hooks_swap_proc(void *gpa, const char *symbol, void *fn);

#endif
