/* GPUGUARD_* environment variables (SPEC §2): one table, read once. */
#ifndef GG_CONFIG_H
#define GG_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GG_CONFIG_STR_MAX 1024

struct gg_config {
	bool disable;
	char log[PATH_MAX];                 /* "" = stderr */
	int verbosity;                      /* 0, 1 or 2 */
	char summary_json[PATH_MAX];        /* "" = none */
	char metrics[PATH_MAX];             /* "" = none */
	bool exitcode_set;
	int exitcode;
	bool halt_on_error;
	bool allow_unresolved;
	char expected_absent[PATH_MAX];     /* "" = none */
	char skip_objects[GG_CONFIG_STR_MAX];
	char boundary[GG_CONFIG_STR_MAX];   /* raw list; parsed by the boundary code */
	int signal;                         /* 0 = none */
	uint64_t redzone;                   /* bytes, a multiple of 16 */
	uint64_t redzone_min_idx;
	bool trace_idx_set;
	uint64_t trace_idx;
	uint8_t fill;
	bool poison_set;
	uint64_t poison_lo, poison_hi;      /* [lo, hi) */
	bool check_on_free;
};

/* Only GPUGUARD_DISABLE, without reading anything else: a disabled shim writes nothing. */
bool gg_config_disabled_in_env(void);

/* Whether the first @len bytes of @name are a GPUGUARD_* variable of the
 * table; the known name within three edits of @name, or NULL. */
bool gg_config_known(const char *name, size_t len);
const char *gg_config_nearest(const char *name);

/* Fill @cfg from the environment; unparsable values keep their default and are
 * remembered so gg_config_report_warnings() can name them once the log is open. */
void gg_config_load(struct gg_config *cfg);
void gg_config_report_warnings(void);

/* The process-wide configuration; valid after the shim's set-up. */
const struct gg_config *gg_config(void);

/* Parse helpers, shared with tests. Return 0 or -EINVAL / -ERANGE. */
int gg_config_parse_u64(const char *s, uint64_t *out);
int gg_config_parse_signal(const char *s, int *out);

#endif
