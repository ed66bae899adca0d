/* Band comparison. Almost every band a scan reads is intact, so the question
 * asked of each is first "is every byte the expected one?", answered eight
 * bytes at a time; only a band that is not is walked byte by byte, and that
 * walk alone says what the report prints. */
#include "redzone/band.h"

#include <stdbool.h>
#include <string.h>

/* 16 bytes as two words: GCC's and clang's vector types, which compile to
 * one SSE2 (or NEON) operation each, and to word pairs elsewhere. */
typedef uint64_t pair __attribute__((vector_size(16)));

static inline uint64_t word_at(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w)); /* one unaligned load */
	return w;
}

static inline pair pair_at(const uint8_t *p)
{
	pair v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Loads go through memcpy (bands lie end to end in a batch's buffer, at any
 * alignment); a tail shorter than a word is read as the band's last word,
 * which overlaps bytes already seen and never reaches past the band. */
bool gg_band_intact(const uint8_t *p, size_t n, uint8_t byte)
{
	const uint64_t pattern = UINT64_C(0x0101010101010101) * byte;
	const pair patterns = { pattern, pattern };
	uint64_t diff = 0;
	size_t i = 0;

	if (n < 8) {
		for (; i < n; i++)
			diff |= (uint64_t)(p[i] ^ byte);
		return !diff;
	}
	/* 64 bytes a step, stopping at the first step that differs. */
	for (; i + 64 <= n; i += 64) {
		pair d = (pair_at(p + i) ^ patterns) | (pair_at(p + i + 16) ^ patterns) |
			 (pair_at(p + i + 32) ^ patterns) | (pair_at(p + i + 48) ^ patterns);

		if (d[0] | d[1])
			return false;
	}
	for (; i + 8 <= n; i += 8)
		diff |= word_at(p + i) ^ pattern;
	if (i < n)
		diff |= word_at(p + n - 8) ^ pattern;
	return !diff;
}

void gg_band_compare(struct gg_band_check *c, const uint8_t *buf, size_t n, uint64_t off,
		     uint8_t expected)
{
	if (gg_band_intact(buf, n, expected))
		return;
	for (size_t i = 0; i < n; i++) {
		if (buf[i] == expected)
			continue;
		if (!c->changed++) {
			c->first = off + i;
			c->first_value = buf[i];
		}
		c->last = off + i;
	}
}
