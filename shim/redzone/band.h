/* Comparing a band's bytes with the byte it must hold: what a check reports
 * of a band (its first and last changed byte, how many changed). */
#ifndef GG_SHIM_REDZONE_BAND_H
#define GG_SHIM_REDZONE_BAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Offsets into the band; @first_value is the byte found at @first. */
struct gg_band_check {
	uint64_t first, last, changed;
	uint8_t first_value;
};

/* Whether all @n bytes at @buf are @expected: 8 at a time, so a scan asks
 * it of a run of intact bands (end to end in its buffer, one byte) at once. */
bool gg_band_intact(const uint8_t *buf, size_t n, uint8_t expected);

/* Add to @c what the @n bytes at @buf, read at band offset @off, show
 * against @expected (a band read in pieces is compared piece by piece, from
 * a zeroed @c). */
void gg_band_compare(struct gg_band_check *c, const uint8_t *buf, size_t n, uint64_t off,
		     uint8_t expected);

#endif
