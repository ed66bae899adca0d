/* Control from the process: gpuguard_boundary(label) and gpuguard_version(),
 * exported unversioned beside the hooks (libgpuguard.map) so that dlsym and
 * ctypes find them, for a test runner that runs a boundary after each test. */
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/gg.h"
#include "boundary/boundary.h"
#include "driver/real.h"
#include "hooks/control.h"
#include "start/start.h"

/* A boundary now, labelled @label: the errors found since the labelled
 * boundary before it, or -1 when the shim is disabled or not set up in this
 * process (no hooked call yet: nothing to check, and a forked child's
 * findings before its own first call are its parent's). Any thread; from
 * inside the shim's own work on this thread it is -1 at once, never waited
 * on: a stream callback inside a driver call, or a signal handler that
 * interrupted a hook, a boundary, the exit report or a fork (driver/real.h,
 * gg_real_inside) may be holding the very locks the boundary takes. Two
 * loads, no lock: a disabled shim's mode is never ACTIVE. */
GG_EXPORT int gpuguard_boundary(const char *label)
{
	uint64_t found;

	if (atomic_load_explicit(&gg_start_mode, memory_order_acquire) != GG_MODE_ACTIVE ||
	    gg_real_inside)
		return -1;
	gg_real_enter();
	found = gg_boundary_label(label ? label : "");
	gg_real_leave();
	return found > INT_MAX ? INT_MAX : (int)found;
}

/* The shim's version, "0.1.0": a static string. */
GG_EXPORT const char *gpuguard_version(void)
{
	return GG_VERSION;
}
