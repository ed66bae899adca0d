/* Underflow (docs/how-it-works.md "Underflow"): a band reaches up to the next allocation.
 *
 * Every address the driver's allocation routines return is aligned to at
 * least 256 bytes, so the bytes from an allocation's end up to the next
 * multiple of 256 belong to no other allocation: a padded request rounded up
 * to there costs no memory, and its band then ends where the next allocation
 * the driver packed after it starts. A write that runs below the start of
 * that allocation lands in the band, and a changed byte at the band's top
 * names both zones. */
#ifndef GG_SHIM_REDZONE_ADJACENCY_H
#define GG_SHIM_REDZONE_ADJACENCY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redzone/redzone.h"

/* The alignment CUDA guarantees for every address its allocation routines
 * return (cuMemAlloc: "suitably aligned for any kind of variable"; the CUDA
 * C Programming Guide: at least 256 bytes). Not the VMM granularity of
 * cuMemGetAllocationGranularity, which is cuMemCreate's. */
#define GG_ADJACENCY_ALIGN 256u

/* The band to ask for after @bytes when the red zone is @pad (0: none): @pad
 * and the slack up to the next multiple of GG_ADJACENCY_ALIGN, or @pad alone
 * once a base the driver returned was seen not so aligned (the rounding might
 * then cost memory) or when rounding would overflow. */
size_t gg_adjacency_band(size_t bytes, size_t pad);

/* The slack a rounded zone of @user bytes with a red zone of @pad has past
 * the red zone (the zone keeps a flag, not the length). */
uint64_t gg_adjacency_slack(uint64_t user, uint64_t pad);

/* Learn from the base @ptr the driver returned for a padded request: one not
 * aligned as guaranteed turns the rounding off for later requests (one WARN). */
void gg_adjacency_base(uint64_t ptr);

/* Whether the changed bytes of band violation @v reach the top of its band. */
bool gg_adjacency_at_top(const struct gg_violation *v);

/* Name in @v the zone @u that starts where @v's band ends. */
void gg_adjacency_upper(struct gg_violation *v, const struct gg_zone *u);

/* A band violation @v whose changed bytes reach its top, where another zone
 * starts (@v->upper, or looked up in the registry when not set): it names
 * that zone, and is an underflow of it when only kernels given the upper
 * zone's pointer are suspects (the lower zone has none, the upper some).
 * No lock of this module held. */
void gg_adjacency_attribute(struct gg_violation *v);

#endif
