#include "boundary/figures.h"

#include "audit/audit.h"
#include "boundary/labels.h"
#include "callsite/depot.h"
#include "handles/graphs.h"
#include "driver/real.h"
#include "redzone/findings.h"
#include "redzone/leaks.h"
#include "redzone/ranges.h"
#include "redzone/redzone.h"

void gg_figures_gather(struct gg_report_figures *f)
{
	gg_audit_stats(&f->audit);
	gg_redzone_stats(&f->redzone);
	f->audit_errors = gg_audit_errors(&f->audit);
	gg_leaks_figures(&f->leaks);
	gg_depot_stats(&f->stacks, &f->stack_bytes);
	/* Every violation is an error (a double or invalid free too), every
	 * audit error, and with GPUGUARD_LEAK_CHECK each stack that leaked
	 * (docs/how-it-works.md, "Boundaries, signals, exit"). */
	f->errors = f->audit_errors + f->redzone.violations +
		    (f->leaks.known && f->leaks.check ? f->leaks.stacks : 0);
	f->rows = gg_audit_foreach_unresolved;
	f->violations = gg_findings_foreach;
	f->api_overruns = gg_ranges_foreach;
	f->launch_errors = gg_audit_foreach_launch_error;
	f->modules = gg_audit_foreach_module;
	f->labels = gg_labels_foreach;
	f->labels_omitted = gg_labels_omitted();
	f->launches_refused = gg_audit_launches_refused();
	f->redzone.coverage.procaddr_unmatched = gg_real_unmatched();
	gg_graphs_unfollowed(f->redzone.coverage.graph_nodes_unfollowed,
			     &f->redzone.coverage.graph_replays_unfollowed);
	f->final = false;
}

void gg_figures_write_files(void)
{
	struct gg_report_figures f;

	gg_figures_gather(&f);
	gg_report_write_files(&f);
}

void gg_figures_write_final(void)
{
	struct gg_report_figures f;

	gg_figures_gather(&f);
	f.final = true;
	gg_report_write_files(&f);
}
