/* API ranges (ranges.h): a copy or set the driver would refuse on an
 * allocation of the user's size never reaches its band.
 *
 * A range is judged by the allocation its first byte lies in: the zone that
 * starts there, else the padded allocation the driver says holds it
 * (redzone.c follows interior pointers with cuMemGetAddressRange, cached per
 * thread; a refusal asks the driver again, the cache may be stale). A range
 * that ends past that zone's user bytes, or starts in its band (one byte
 * before the next allocation, say), is one the driver would have refused
 * without the padding. Everything else goes to the driver as
 * asked, which judges it as it always does.
 *
 * Lock order: the leaf @lock only, held to copy a finding in or out. */
#include "redzone/ranges.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "base/gg.h"
#include "base/kept.h"
#include "callsite/callsite.h"
#include "callsite/depot.h"
#include "redzone/redzone.h"
#include "redzone/registry.h"

#define MAX_FINDINGS 256 /* kept for the reports; all are counted */

/* A finding as kept: its sites interned, described when reported. */
struct finding {
	const char *api, *side, *result; /* static strings: the hooks' names, result names */
	uint64_t address, bytes;
	uint64_t index, user, ptr;
	uint32_t stack, call_site; /* the allocation's stack (depot), the call's site */
};

static struct {
	pthread_mutex_t lock; /* leaf: guards @kept, @nkept */
	struct finding kept[MAX_FINDINGS];
	unsigned nkept;
} ranges_state = { .lock = PTHREAD_MUTEX_INITIALIZER };

bool gg_ranges_on(void)
{
	return gg_redzone_pad() != 0;
}

/* @f described into @out, its allocation stack into @stack. */
static void report_of(const struct finding *f, struct gg_report_api_overrun *out,
		      struct gg_report_stack *stack)
{
	*out = (struct gg_report_api_overrun){
		.api = f->api,
		.side = f->side,
		.result = f->result,
		.address = f->address,
		.bytes = f->bytes,
		.index = f->index,
		.user = f->user,
		.ptr = f->ptr,
		.stack = stack,
	};
	gg_depot_report(f->stack, &out->site, stack);
	gg_callsite_report_id(f->call_site, &out->call_site);
}

bool gg_ranges_allowed(const char *api, const struct gg_range *r, uintptr_t caller, const char *result)
{
	struct gg_report_api_overrun o;
	struct gg_report_stack stack;
	struct gg_callsite cs;
	struct finding f;
	struct gg_zone z;

	/* Nothing touched, or nothing of ours: the driver decides as ever. An
	 * end past the address space is the driver's to refuse too. */
	if (!r->bytes || r->ptr + r->bytes < r->ptr || gg_redzone_zone_of(r->ptr, &z))
		return true;
	if (r->ptr + r->bytes <= z.ptr + z.user)
		return true;
	/* A refusal rests on current truth, never on the thread's cache of
	 * interior pointers (memory freed and handed out again since). */
	if (z.ptr != r->ptr &&
	    (gg_redzone_zone_of_now(r->ptr, &z) || r->ptr + r->bytes <= z.ptr + z.user))
		return true;
	gg_callsite_find_from(caller, &cs);
	f = (struct finding){
		.api = api,
		.side = r->side,
		.result = result,
		.address = r->ptr,
		.bytes = r->bytes,
		.index = z.index,
		.user = z.user,
		.ptr = z.ptr,
		.stack = z.site,
		.call_site = gg_callsite_intern(&cs),
	};
	pthread_mutex_lock(&ranges_state.lock);
	if (ranges_state.nkept < MAX_FINDINGS)
		ranges_state.kept[ranges_state.nkept++] = f;
	pthread_mutex_unlock(&ranges_state.lock);
	report_of(&f, &o, &stack);
	gg_report_api_overrun(&o);
	gg_redzone_finding(); /* counted, and the halt, after it is kept and said */
	return false;
}

struct walk {
	void (*fn)(void *ctx, const struct gg_report_api_overrun *o);
	void *ctx;
};

static void walked(void *arg, const void *element)
{
	const struct walk *w = arg;
	struct gg_report_api_overrun o;
	struct gg_report_stack stack;

	report_of(element, &o, &stack);
	w->fn(w->ctx, &o);
}

_Static_assert(sizeof(struct finding) <= GG_KEPT_COPY, "a kept finding is copied out whole");

void gg_ranges_foreach(void (*fn)(void *ctx, const struct gg_report_api_overrun *o), void *ctx)
{
	gg_kept_walk(&ranges_state.lock, ranges_state.kept, &ranges_state.nkept,
		     sizeof(ranges_state.kept[0]), walked, &(struct walk){ fn, ctx });
}

void gg_ranges_atfork_prepare(void)
{
	pthread_mutex_lock(&ranges_state.lock);
}

void gg_ranges_atfork_parent(void)
{
	pthread_mutex_unlock(&ranges_state.lock);
}

void gg_ranges_atfork_child(void)
{
	pthread_mutex_init(&ranges_state.lock, NULL);
	ranges_state.nkept = 0; /* the parent's findings are the parent's */
}
