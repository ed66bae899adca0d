/* An index from a hash to item numbers; see hashindex.h. Open addressing
 * with linear probing, kept at most half full. */
#include "hashindex.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#define FNV_PRIME 0x100000001b3ull

uint64_t gg_hashindex_hash(uint64_t h, const void *s, size_t n)
{
	const unsigned char *p = s;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * FNV_PRIME;
	return (h ^ 0xff) * FNV_PRIME; /* the end of the field */
}

/* Where @hash's probe starts: the hash's bits mixed, since FNV's low bits
 * alone cluster. */
static size_t home(uint64_t hash, size_t cap)
{
	hash ^= hash >> 29;
	hash *= 0xbf58476d1ce4e5b9ull;
	hash ^= hash >> 32;
	return (size_t)hash & (cap - 1);
}

size_t gg_hashindex_find(const struct gg_hashindex *ix, uint64_t hash,
			 bool (*alike)(const void *ctx, size_t item), const void *ctx)
{
	if (!ix->cap)
		return SIZE_MAX;
	for (size_t i = home(hash, ix->cap);; i = (i + 1) & (ix->cap - 1)) {
		const struct gg_hashindex_slot *s = &ix->slots[i];

		if (s->item == SIZE_MAX)
			return SIZE_MAX;
		if (s->hash == hash && alike(ctx, s->item))
			return s->item;
	}
}

static void put(struct gg_hashindex_slot *slots, size_t cap, uint64_t hash, size_t item)
{
	size_t i = home(hash, cap);

	while (slots[i].item != SIZE_MAX)
		i = (i + 1) & (cap - 1);
	slots[i].hash = hash;
	slots[i].item = item;
}

int gg_hashindex_add(struct gg_hashindex *ix, uint64_t hash, size_t item)
{
	if ((ix->len + 1) * 2 > ix->cap) {
		size_t cap = ix->cap ? ix->cap * 2 : 64;
		struct gg_hashindex_slot *slots;

		if (cap > SIZE_MAX / sizeof(*slots) || !(slots = malloc(cap * sizeof(*slots))))
			return -ENOMEM;
		for (size_t i = 0; i < cap; i++)
			slots[i].item = SIZE_MAX;
		for (size_t i = 0; i < ix->cap; i++)
			if (ix->slots[i].item != SIZE_MAX)
				put(slots, cap, ix->slots[i].hash, ix->slots[i].item);
		free(ix->slots);
		ix->slots = slots;
		ix->cap = cap;
	}
	put(ix->slots, ix->cap, hash, item);
	ix->len++;
	return 0;
}

void gg_hashindex_free(struct gg_hashindex *ix)
{
	free(ix->slots);
	ix->slots = NULL;
	ix->cap = ix->len = 0;
}
