/* GPUGUARD_* environment variables (SPEC §2): one table, read once. */
#ifndef GG_CONFIG_H
#define GG_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#define GG_CONFIG_STR_MAX 1024

/* GPUGUARD_SKIP_SYMBOLS's default: the names of the CUDA runtime's code when
 * it is linked into the program (nvcc's default), shared with the gpuguard
 * command, whose symbolize skips the same frames. In the order: the public
 * API (C names, and the C++ templates of cuda_runtime.h in the global
 * namespace, mangled "_Z<length>cuda..."); the implementation's own names,
 * reserved identifiers with "__cuda" ("__cudaLaunchKernel",
 * "__sti____cudaRegisterAll") or "__nv_" (the registration code nvcc writes
 * into each file, "__nv_cudaEntityRegisterCallback"); the launch stubs nvcc
 * writes for each kernel ("__device_stub__Z6kernelPf"); the runtime's
 * internal functions, "libcudart_static_<sha1>" in CUDA 13 and the cudart::
 * namespace before it. A program's own names are never reserved ones. */
#define GG_SKIP_SYMBOLS_DEFAULT                                                              \
	"cuda[A-Z]*,_Z[0-9]cuda[A-Z]*,_Z[0-9][0-9]cuda[A-Z]*,*__cuda*,*__nv_*,"             \
	"*__device_stub_*,libcudart_static_*,_ZN6cudart*"

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
	char skip_symbols[GG_CONFIG_STR_MAX];
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
