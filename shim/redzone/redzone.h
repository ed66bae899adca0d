/* Device allocations: indices now, red zones (SPEC §4) to come. */
#ifndef GG_REDZONE_H
#define GG_REDZONE_H

#include <stddef.h>
#include <stdint.h>

/* Every call of an allocation hook takes the next index, failed calls included. */
uint64_t gg_redzone_next_index(void);

/* An allocation as the driver answered it (@rc 0: @ptr is valid). */
void gg_redzone_alloc(const char *api, uint64_t index, size_t bytes, uint64_t ptr, int rc,
		      const char *rc_name);
void gg_redzone_free(const char *api, uint64_t ptr, int rc, const char *rc_name);

struct gg_redzone_stats {
	uint64_t calls;  /* allocation calls, failed ones included */
	uint64_t failed;
};
void gg_redzone_stats(struct gg_redzone_stats *out);

#endif
