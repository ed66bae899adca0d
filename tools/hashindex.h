/* An index from a hash to the numbers of the items that have it, for finding
 * an item alike to a new one in constant time: gpuguard report groups the
 * findings of many summaries (a violation seen in several processes is one
 * entry), and a search through every group made it quadratic. The items live
 * in the caller's array; the index holds their numbers only, and the caller
 * says what "alike" means. Internal to the command. */
#ifndef GG_TOOLS_HASHINDEX_H
#define GG_TOOLS_HASHINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gg_hashindex {
	struct gg_hashindex_slot {
		uint64_t hash;
		size_t item; /* SIZE_MAX: empty */
	} * slots;
	size_t cap, len; /* cap: a power of two, or 0 */
};

/* Hash @n bytes of @s into @h (start from GG_HASHINDEX_SEED); the field's end
 * counts too, so "ab","c" and "a","bc" differ. */
#define GG_HASHINDEX_SEED 0xcbf29ce484222325ull
uint64_t gg_hashindex_hash(uint64_t h, const void *s, size_t n);

/* An item added with @hash that @alike(@ctx, item) takes, or SIZE_MAX. */
size_t gg_hashindex_find(const struct gg_hashindex *ix, uint64_t hash,
			 bool (*alike)(const void *ctx, size_t item), const void *ctx);

/* Add @item under @hash. 0, or -ENOMEM (the index is left as it was). */
int gg_hashindex_add(struct gg_hashindex *ix, uint64_t hash, size_t item);

void gg_hashindex_free(struct gg_hashindex *ix);

#endif
