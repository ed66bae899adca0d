/* The CUDA runtime's functions in a program that links it statically (nvcc's
 * default), by their names (GPUGUARD_SKIP_SYMBOLS): which address ranges of an
 * ELF file's symbol table are the runtime's, and whether a stripped file
 * carries the runtime at all. Shared by the shim's call sites and gpuguard
 * symbolize, so both skip the same frames. Uses nothing of the shim but the
 * ELF reader; allocates; never for a signal handler. */
#ifndef GG_SHIM_CALLSITE_RUNTIME_SYMS_H
#define GG_SHIM_CALLSITE_RUNTIME_SYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "callsite/elfsyms.h"

/* A comma list of fnmatch globs, parsed once: the items point into @buf. */
#define GG_GLOBS_MAX 32
struct gg_globs {
	char buf[1024];
	const char *item[GG_GLOBS_MAX];
	size_t prefix[GG_GLOBS_MAX]; /* how many literal characters each starts with */
	int n;
};
void gg_globs_parse(struct gg_globs *g, const char *list);
bool gg_globs_match(const struct gg_globs *g, const char *s);

/* Sorted, disjoint [start, end) ranges of symbol values. */
struct gg_ranges {
	uint64_t (*range)[2];
	size_t n;
};
bool gg_ranges_hold(const struct gg_ranges *r, uint64_t value);
void gg_ranges_free(struct gg_ranges *r);

/* The functions of @e's symbol table whose names @skip matches, and the host
 * functions of the kernels whose launch stubs it matches (nvcc's <<<...>>>
 * calls a function named as the kernel, which calls the stub). 0, -ENOENT
 * when @e has no symbol table (stripped), or -errno. */
int gg_runtime_ranges(const struct gg_elf *e, const struct gg_globs *skip, struct gg_ranges *out);

/* Whether a file (stripped or not) carries the runtime: its .rodata holds the
 * runtime's names of its own entry points, which it gives the tools'
 * callback API (CUPTI's functionName). 1, 0, or -errno. */
int gg_runtime_linked(const struct gg_elf *e);

/* Kernel launch stubs (exposed for tests): nvcc names a kernel's launch stub
 * after the kernel ("_Z33__device_stub__Z11write_bytesPhyhPhyh" launches
 * "_Z11write_bytesPhyh", "_Z21__device_stub__Z2ckPiPi" the extern "C" "ck").
 * gg_runtime_stub_keys writes into @keys the keys of the functions @stub may
 * launch, the C++ reading first, and returns how many (0, 1 or 2);
 * gg_runtime_symbol_key writes @name's key (false: too long). Equal keys,
 * same function. */
#define GG_RUNTIME_KEY_MAX 512
int gg_runtime_stub_keys(const char *stub, char keys[2][GG_RUNTIME_KEY_MAX]);
bool gg_runtime_symbol_key(const char *name, char *key);

#endif
