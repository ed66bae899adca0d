/* The zone registry: every padded allocation, by pointer. O(1) expected per
 * insert, remove and lookup; sharded so threads rarely share a lock. */
#ifndef GG_SHIM_REDZONE_REGISTRY_H
#define GG_SHIM_REDZONE_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GG_SUSPECTS 4 /* kernels a zone remembers (docs/how-it-works.md, "Red zones") */

/* A suspect: a kernel's slot (handles/kernels.h) + 1 in the top 16 bits, the
 * launch's index in the rest; 0 is none. */
#define GG_SUSPECT_LAUNCH_MASK ((UINT64_C(1) << 48) - 1)
#define GG_SUSPECT(slot, launch) \
	(((uint64_t)((slot) + 1) << 48) | ((uint64_t)(launch)&GG_SUSPECT_LAUNCH_MASK))
#define GG_SUSPECT_SLOT(s) ((int)((s) >> 48) - 1)
#define GG_SUSPECT_LAUNCH(s) ((s)&GG_SUSPECT_LAUNCH_MASK)

/* One padded allocation: 64 bytes. Its band's length is not kept: every
 * band is the configured red zone's (redzone.c), with GG_ZONE_ROUNDED the
 * slack up to the driver's alignment after it (adjacency.c), and a 4-byte
 * field would make the zone 72 bytes with alignment. */
struct gg_zone {
	uint64_t ptr;     /* what the application got */
	uint64_t user;    /* bytes it asked for; the band starts at ptr + user */
	uint64_t index;   /* allocation index */
	uint32_t site;    /* its allocation stack's id (callsite/depot.c) */
	uint16_t ctx;     /* the context's slot in the redzone module's table */
	uint8_t expected; /* the byte the band must hold */
	uint8_t flags;    /* GG_ZONE_* */
	/* The latest kernels launched with its address since its band was last
	 * seen clean, newest first, one entry per kernel. */
	uint64_t suspects[GG_SUSPECTS];
};

#define GG_ZONE_ASYNC 0x1    /* from a stream-ordered allocator */
#define GG_ZONE_UNFILLED 0x2 /* the fill failed: hidden, never checked */
#define GG_ZONE_PENDING 0x4  /* the fill was queued on the application's stream */
#define GG_ZONE_SCANNING 0x8 /* in a batched scan: its free waits for the batch */
#define GG_ZONE_ROUNDED 0x80 /* its band reaches the next multiple of 256 (adjacency.h) */
/* Freed by the application and held back from the driver (quarantine.c):
 * its memory lives on, filled with the free byte, and a launch given it is a
 * dangling launch. */
#define GG_ZONE_QUARANTINED 0x10

/* Whether an insert is sure to succeed (every shard has a free slot); a
 * shard that could not grow ahead is tried again. */
bool gg_registry_room(void);

/* 0, -EEXIST, or -ENOMEM (only when gg_registry_room() was false). */
int gg_registry_insert(const struct gg_zone *z);

/* Remove the zone at @ptr into @out. 0 or -ENOENT. */
int gg_registry_remove(uint64_t ptr, struct gg_zone *out);

/* The same, unless the zone is GG_ZONE_QUARANTINED: then it stays, copied
 * into @out, and -EBUSY (a free of what the application freed already). */
int gg_registry_take(uint64_t ptr, struct gg_zone *out);

/* Clear @flags of the zone at @ptr. 0 or -ENOENT. */
int gg_registry_clear_flags(uint64_t ptr, uint8_t flags);

/* @entry (GG_SUSPECT) is the newest suspect of the zone at @ptr; a full
 * list loses the entry whose launch, as @launch_of says (NULL: as stored), is
 * oldest. 0, 1 when the zone is GG_ZONE_QUARANTINED (a dangling launch), or
 * -ENOENT. */
int gg_registry_suspect(uint64_t ptr, uint64_t entry, uint64_t (*launch_of)(uint64_t));

/* The zone at @ptr's suspect @old, when it has it, becomes @now. 0 or -ENOENT. */
int gg_registry_renew_suspect(uint64_t ptr, uint64_t old, uint64_t now);

/* Forget the suspects of the zone at @ptr launched up to @launch (its band
 * was seen clean after them). 0 or -ENOENT. */
int gg_registry_clear_suspects(uint64_t ptr, uint64_t launch);

/* A copy of the zone at @ptr, flagged GG_ZONE_SCANNING (its free waits
 * for the reader: see redzone.c). 0 or -ENOENT. */
int gg_registry_hold(uint64_t ptr, struct gg_zone *out);

/* A copy of the zone at @ptr. 0 or -ENOENT. */
int gg_registry_find(uint64_t ptr, struct gg_zone *out);

/* Call @fn for each zone, holding only that zone's shard lock, so no
 * allocation or free waits longer than one call; then, with no lock held,
 * @after (when not NULL), for what must not run under a registry lock
 * (reports, dladdr). @fn may update the zone, or ask for its removal by
 * returning true. */
void gg_registry_foreach(bool (*fn)(void *ctx, struct gg_zone *z), void (*after)(void *ctx), void *ctx);

/* Call @fn for runs of zones, up to a few dozen at a time, each run under
 * its shard's lock: in a run, a free slot has ptr 0. @fn may update the
 * zones, and must not remove or add one. A walk of every zone with one call
 * per run, not one per zone (a full scan's). */
void gg_registry_foreach_run(void (*fn)(void *ctx, struct gg_zone *zones, size_t n), void *ctx);

/* Clear @flags of every zone: one walk, where gg_registry_clear_flags() of
 * each would look every zone up. */
void gg_registry_clear_flags_all(uint8_t flags);

/* Live zones and their user bytes. */
void gg_registry_totals(uint64_t *live, uint64_t *user_bytes);

/* Bytes the registry holds, for the per-zone cost. */
size_t gg_registry_footprint(void);

/* Fork: every shard lock is held across fork() (taken after the redzone
 * module's locks), then released in the parent and re-made in the child,
 * whose registry starts empty. */
void gg_registry_atfork_prepare(void);
void gg_registry_atfork_parent(void);
void gg_registry_atfork_child(void);

#endif
