/* Kernel-lookup audit. So far: every lookup is traced at verbosity 2. */
#include "audit/audit.h"

#include "report/report.h"

void gg_audit_lookup(const char *api, const void *module, const char *name, int rc,
		     const char *rc_name)
{
	(void)rc;
	gg_report_lookup(api, module, name, rc_name);
}
