/* Underflow: bands rounded up to the driver's allocation alignment, and a
 * violation at the top of a band attributed to the zone directly above it
 * (adjacency.h). */
#include "redzone/adjacency.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "redzone/registry.h"
#include "report/report.h"

static struct {
	/* Set once a base the driver returned was not aligned to
	 * GG_ADJACENCY_ALIGN: no request is rounded after it. Lock-free. */
	atomic_bool unaligned;
} adjacency_state;

size_t gg_adjacency_band(size_t bytes, size_t pad)
{
	size_t end;

	if (!pad || bytes > SIZE_MAX - pad - GG_ADJACENCY_ALIGN ||
	    atomic_load_explicit(&adjacency_state.unaligned, memory_order_relaxed))
		return pad;
	end = (bytes + pad + GG_ADJACENCY_ALIGN - 1) / GG_ADJACENCY_ALIGN * GG_ADJACENCY_ALIGN;
	return end - bytes;
}

uint64_t gg_adjacency_slack(uint64_t user, uint64_t pad)
{
	uint64_t end = user + pad;

	return (GG_ADJACENCY_ALIGN - end % GG_ADJACENCY_ALIGN) % GG_ADJACENCY_ALIGN;
}

void gg_adjacency_base(uint64_t ptr)
{
	if (!(ptr % GG_ADJACENCY_ALIGN) ||
	    atomic_exchange_explicit(&adjacency_state.unaligned, true, memory_order_relaxed))
		return;
	gg_report_warn("the driver returned 0x%llx, not aligned to %u bytes as CUDA guarantees: "
		       "bands are no longer extended to the next allocation, so underflows are not "
		       "found",
		       (unsigned long long)ptr, GG_ADJACENCY_ALIGN);
}

bool gg_adjacency_at_top(const struct gg_violation *v)
{
	return v->kind == GG_VIOLATION_OVERRUN && v->changed && v->last + 1 == v->pad + v->slack;
}

void gg_adjacency_upper(struct gg_violation *v, const struct gg_zone *u)
{
	v->upper.ptr = u->ptr;
	v->upper.user = u->user;
	v->upper.index = u->index;
	v->upper.site = u->site;
	memcpy(v->upper.suspects, u->suspects, sizeof(v->upper.suspects));
}

void gg_adjacency_attribute(struct gg_violation *v)
{
	struct gg_zone u;

	if (!gg_adjacency_at_top(v))
		return;
	if (!v->upper.ptr) {
		if (gg_registry_find(v->ptr + v->user + v->pad + v->slack, &u))
			return; /* no zone starts there: an overrun of this one */
		gg_adjacency_upper(v, &u);
	}
	/* A kernel given the lower zone may have run past its end; only when
	 * none was, and one given the upper zone was, is it the upper's. */
	if (!v->suspects[0] && v->upper.suspects[0])
		v->kind = GG_VIOLATION_UNDERFLOW;
}
