/* Allocation bookkeeping. So far: indices, and a trace line per call at verbosity 2. */
#include "redzone/redzone.h"

#include <stdatomic.h>

#include "report/report.h"

static struct {
	atomic_uint_fast64_t next_index; /* lock-free; the next allocation index */
	atomic_uint_fast64_t failed;     /* lock-free; allocation calls that failed */
} redzone_state;

uint64_t gg_redzone_next_index(void)
{
	return atomic_fetch_add_explicit(&redzone_state.next_index, 1, memory_order_relaxed);
}

void gg_redzone_alloc(const char *api, uint64_t index, size_t bytes, uint64_t ptr, int rc,
		      const char *rc_name)
{
	if (rc != 0)
		atomic_fetch_add_explicit(&redzone_state.failed, 1, memory_order_relaxed);
	gg_report_alloc(api, index, bytes, rc == 0 ? ptr : 0, rc_name);
}

void gg_redzone_free(const char *api, uint64_t ptr, int rc, const char *rc_name)
{
	(void)rc;
	gg_report_free(api, ptr, rc_name);
}

void gg_redzone_stats(struct gg_redzone_stats *out)
{
	out->calls = atomic_load_explicit(&redzone_state.next_index, memory_order_relaxed);
	out->failed = atomic_load_explicit(&redzone_state.failed, memory_order_relaxed);
}
