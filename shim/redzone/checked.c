/* Checked launches (GPUGUARD_CHECK_LAUNCHES; docs/how-it-works.md, "Red zones": Which
 * kernel did it): after a launch is forwarded the shim waits for it on its
 * stream, then checks the bands of the zones it was given (and of the zone
 * directly below each, for an underflow), or every zone of its context when
 * its parameters cannot be known. What it finds names the kernel and the
 * launch's call site, and is reported before the launch returns.
 *
 * Lock order: the zones' reading locks (gg_redzone_reading), then a
 * registry shard lock to hold a zone; reports run with no lock held. */
#include "redzone/checked.h"

#include <errno.h>
#include <stdatomic.h>

#include "driver/device.h"
#include "redzone/findings.h"
#include "redzone/registry.h"
#include "redzone/suspects.h"
#include "redzone/zones.h"

static struct {
	atomic_uint_fast64_t launches; /* checked (lock-free) */
} checked_state;

/* The zone holding @ptr (the one it starts, else the allocation the driver
 * says holds it), held for reading: flagged so its free waits (docs/how-it-works.md, "Red zones": no
 * band is read after its memory died). */
static int zone_holding(uint64_t ptr, struct gg_zone *z)
{
	uint64_t base;
	size_t size;

	if (!gg_registry_hold(ptr, z))
		return 0;
	if (gg_device_range(ptr, &base, &size) || gg_registry_hold(base, z))
		return -ENOENT;
	return 0;
}

/* The zone directly below @z (the driver's allocation that ends where @z
 * starts: its band reaches @z, adjacency.c), held as zone_holding() holds
 * one. 0 or -ENOENT. */
static int zone_below(const struct gg_zone *z, struct gg_zone *below)
{
	uint64_t base;
	size_t size;

	if (gg_device_range(z->ptr - 1, &base, &size) || base + size != z->ptr)
		return -ENOENT;
	return gg_registry_hold(base, below);
}

/* With the launch's reads under way: check the band of the zone directly
 * below @z, a zone the launch was given, unless it was checked already as
 * one given (@done, @ndone), while @z's suspects still name the launch: a
 * write below @z's start is an underflow of @z, found at the launch that
 * made it. One given later is checked again, as given (its suspects are
 * then cleared). */
static void check_below(const struct gg_zone *z, struct gg_launch_check *lc, const uint64_t *done,
			unsigned ndone)
{
	struct gg_violation v;
	struct gg_zone below;
	unsigned k;
	int r;

	if (zone_below(z, &below))
		return;
	for (k = 0; k < ndone && done[k] != below.ptr; k++)
		;
	if (k < ndone) {
		(void)gg_registry_clear_flags(below.ptr, GG_ZONE_SCANNING);
		return;
	}
	r = gg_redzone_check_zone(&below, gg_redzone_stream_of(below.ctx), "launch", true, &v);
	(void)gg_registry_clear_flags(
		below.ptr, GG_ZONE_SCANNING | (below.flags & GG_ZONE_PENDING ? 0 : GG_ZONE_PENDING));
	if (r > 0)
		gg_redzone_report_found(&v, lc);
}

/* Wait for launch @l and check the bands of the zones it was given (every
 * zone of its context when they cannot be known). Its violations are
 * reported now, before the launch returns to the application. */
void gg_checked_launch(const struct gg_redzone_launch *l, int slot, const uint64_t *ptrs, int n)
{
	uint64_t before = gg_findings_total(), done[GG_LAUNCH_PTRS];
	struct gg_launch_check lc = { .slot = slot, .launch = l->index };
	bool capturing = false;
	unsigned ndone = 0;
	void *ctx;
	int dev;

	if (gg_device_current(&ctx, &dev))
		return;
	/* Captured into a graph, it did not run; its stream cannot be waited for. */
	if (gg_device_capturing(l->stream, &capturing) || capturing)
		return;
	if (gg_device_stream_wait(l->stream)) {
		gg_redzone_unchecked(GG_UNCHECKED_unreadable);
		return;
	}
	atomic_fetch_add_explicit(&checked_state.launches, 1, memory_order_relaxed);
	if (n < 0) {
		struct gg_scan sc = { .by = "launch", .lc = &lc, .only_ctx = gg_redzone_find_ctx(ctx) };

		if (sc.only_ctx >= 0)
			gg_redzone_scan_live(&sc);
		return;
	}
	gg_redzone_reading(true);
	for (int i = 0; i < n; i++) {
		struct gg_violation v;
		struct gg_zone z;
		unsigned k;
		int r;

		if (zone_holding(ptrs[i], &z))
			continue;
		for (k = 0; k < ndone && done[k] != z.ptr; k++)
			;
		if (k < ndone || (z.flags & GG_ZONE_QUARANTINED)) {
			/* Given twice: checked once; quarantined: a dangling launch. */
			(void)gg_registry_clear_flags(z.ptr, GG_ZONE_SCANNING);
			continue;
		}
		done[ndone++] = z.ptr;
		r = gg_redzone_check_zone(&z, gg_redzone_stream_of(z.ctx), "launch", true, &v);
		check_below(&z, &lc, done, ndone);
		/* The copy's fill was seen done: so is the registry's zone. */
		(void)gg_registry_clear_flags(
			z.ptr, GG_ZONE_SCANNING | (z.flags & GG_ZONE_PENDING ? 0 : GG_ZONE_PENDING));
		if (r >= 0) {
			(void)gg_registry_clear_suspects(z.ptr, l->index);
			gg_suspects_stale();
		}
		if (r > 0)
			gg_redzone_report_found(&v, &lc);
	}
	gg_redzone_reading(false);
	gg_redzone_halt_if_asked(before);
}

uint64_t gg_checked_count(void)
{
	return atomic_load(&checked_state.launches);
}

void gg_checked_atfork_child(void)
{
	atomic_store(&checked_state.launches, 0);
}
