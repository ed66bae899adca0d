/* Start-up: nothing happens at load time beyond what the dynamic linker does.
 * The first hooked call sets the shim up (configuration, log, exit and fork
 * handlers), so a process that never calls the driver sees no trace of it. */
#include "shim.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "audit/audit.h"
#include "boundary.h"
#include "callsite.h"
#include "config.h"
#include "hooks/hooks.h"
#include "redzone/redzone.h"
#include "report/report.h"

static struct {
	pthread_once_t env_once;   /* reads GPUGUARD_DISABLE */
	bool disabled;             /* written once under @env_once */
	pthread_once_t setup_once; /* the rest of the set-up */
	atomic_bool ready;         /* set (release) when set-up is complete and enabled */
} shim_state = { .env_once = PTHREAD_ONCE_INIT, .setup_once = PTHREAD_ONCE_INIT };

static void read_disable(void)
{
	shim_state.disabled = gg_config_disabled_in_env();
}

bool gg_shim_disabled(void)
{
	pthread_once(&shim_state.env_once, read_disable);
	return shim_state.disabled;
}

/* Locks are held across fork() so the child's copies are consistent. */
static void atfork_prepare(void)
{
	gg_audit_atfork_prepare();
	gg_redzone_atfork_prepare();
}

static void atfork_parent(void)
{
	gg_redzone_atfork_parent();
	gg_audit_atfork_parent();
}

static void atfork_child(void)
{
	gg_hooks_atfork_child();
	gg_audit_atfork_child();
	gg_redzone_atfork_child();
	gg_boundary_atfork_child();
	gg_report_atfork_child();
}

static void setup(void)
{
	static struct gg_config cfg; /* too big for an application thread's stack */

	if (gg_shim_disabled())
		return;
	gg_config_load(&cfg);
	gg_report_open(&cfg);
	gg_config_report_warnings();
	gg_callsite_configure(cfg.skip_objects);
	gg_audit_configure(&cfg);
	gg_redzone_configure(&cfg);
	gg_boundary_configure(&cfg);
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	atomic_store_explicit(&shim_state.ready, true, memory_order_release);
}

bool gg_shim_active(void)
{
	if (GG_LIKELY(atomic_load_explicit(&shim_state.ready, memory_order_acquire)))
		return true;
	pthread_once(&shim_state.setup_once, setup);
	return atomic_load_explicit(&shim_state.ready, memory_order_acquire);
}

void gg_shim_fatal(void)
{
	gg_report_write_files();
	abort();
}

/* Runs on exit() and after main returns; silent unless a hook ran. */
__attribute__((destructor)) static void shim_fini(void)
{
	if (!atomic_load_explicit(&shim_state.ready, memory_order_acquire))
		return;
	gg_redzone_scan("exit");
	gg_hooks_report_calls();
	gg_report_write_files();
}
