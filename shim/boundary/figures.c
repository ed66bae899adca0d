#include "boundary/figures.h"

#include "audit/audit.h"
#include "driver/real.h"
#include "redzone/ranges.h"
#include "redzone/redzone.h"

void gg_figures_gather(struct gg_report_figures *f)
{
	gg_audit_stats(&f->audit);
	gg_redzone_stats(&f->redzone);
	f->audit_errors = gg_audit_errors(&f->audit);
	/* Every violation is an error, and every audit error (SPEC §6). */
	f->errors = f->audit_errors + f->redzone.violations;
	f->rows = gg_audit_foreach_unresolved;
	f->violations = gg_redzone_foreach_violation;
	f->api_overruns = gg_ranges_foreach;
	f->launch_errors = gg_audit_foreach_launch_error;
	f->modules = gg_audit_foreach_module;
	f->launches_refused = gg_audit_launches_refused();
	f->redzone.coverage.procaddr_unmatched = gg_real_unmatched();
}

void gg_figures_write_files(void)
{
	struct gg_report_figures f;

	gg_figures_gather(&f);
	gg_report_write_files(&f);
}
