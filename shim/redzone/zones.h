/* The zone lifecycle (redzone.c) as the red zones' other files see it:
 * what a scan reads, where a zone's context and fill stand, and how what
 * they find is reported. Only shim/redzone/ includes this header. */
#ifndef GG_SHIM_REDZONE_ZONES_H
#define GG_SHIM_REDZONE_ZONES_H

#include <stdbool.h>
#include <stdint.h>

#include "redzone/redzone.h"
#include "redzone/registry.h"
#include "report/report.h"

/* A checked launch (docs/how-it-works.md, "Red zones": Which kernel did it): what a violation it finds names. */
struct gg_launch_check {
	int slot; /* the kernel's */
	uint64_t launch;
	uint32_t site; /* where it was launched: unwound at the first violation */
	bool site_found;
};

/* A scan of bands: of every zone, of one context's, or of those a
 * checked launch was given. */
struct gg_scan {
	const char *by;
	struct gg_launch_check *lc; /* a scan of a checked launch; NULL: none */
	int only_ctx;               /* -1: every context */
	bool forget;                /* the zones' memory died: drop them, count nothing */
	bool found;                 /* @v holds a violation to report */
	struct gg_violation v;
};

#define GG_LAUNCH_PTRS 32 /* addresses followed per launch */

/* The start of the allocation @ptr points into the middle of, as the
 * driver says (a per-thread cache of its answers, which may be stale), or 0. */
uint64_t gg_redzone_interior_base(uint64_t ptr);

/* The same, asked of the driver now: what a refusal or a report rests on. */
uint64_t gg_redzone_interior_base_now(uint64_t ptr);

/* The live slot of context @ctx, or -1 (lock-free). */
int gg_redzone_find_ctx(void *ctx);

/* The private stream of context slot @slot (NULL: none yet). */
void *gg_redzone_stream_of(uint16_t slot);

/* Check the band of @z, read through @stream: 1 and *@v set on a violation
 * (the band filled again when @refill), 0 when clean, -1 when it could not
 * be read (counted unchecked, never clean). */
int gg_redzone_check_zone(struct gg_zone *z, void *stream, const char *by, bool refill,
			  struct gg_violation *v);

/* A scan of every live band (of one context when @sc->only_ctx >= 0). */
void gg_redzone_scan_live(struct gg_scan *sc);

/* GPUGUARD_HALT_ON_ERROR: stop when violations were found since @before
 * (gg_findings_total()). */
void gg_redzone_halt_if_asked(uint64_t before);

/* Whether the zones of context slot @slot can be read: the context lives
 * and has its private stream (*@ctx, *@stream, when not NULL). */
bool gg_redzone_readable(uint16_t slot, void **ctx, void **stream);

/* Zones recorded in context slot @slot. */
uint64_t gg_redzone_zones_of(int slot);

/* Whether the stream-ordered fill of @z is done; clears its PENDING flag
 * once it is. Under @z's shard lock. */
bool gg_redzone_fill_done(struct gg_zone *z);

/* The length of the band of a zone of @user bytes with @flags: the red
 * zone, and for a rounded one the slack up to the driver's alignment. */
uint64_t gg_redzone_band_length(uint64_t user, uint8_t flags);

/* Fill @length bytes of band at @band, of a zone of context slot @slot,
 * with @expected again, so the next scan reports only new writes. */
void gg_redzone_refill(uint16_t slot, uint64_t band, uint8_t expected, uint64_t length);

/* @n bands were checked. */
void gg_redzone_checked(uint64_t n);

/* Report @v, found by a scan (@lc NULL) or right after @lc's launch (it
 * names the kernel and the launch's call site). No lock held. */
void gg_redzone_report_found(struct gg_violation *v, struct gg_launch_check *lc);

/* Bands are read (on) or no longer (off): one reader at a time (a batched
 * scan or a checked launch), and a free of a zone flagged SCANNING waits
 * for the reader's end. */
void gg_redzone_reading(bool on);

#endif
