/* Fuzz target: reading hostile ELF files as the call sites and `gpuguard
 * symbolize` read them (shim/callsite/elfsyms.c, shim/callsite/runtime-syms.c,
 * and the symbolizer's load bias, tools/cmd-symbolize.c): the section
 * headers, the symbol tables, the runtime's ranges, a section's bytes. */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "callsite/elfsyms.h"
#include "callsite/runtime-syms.h"
#include "options/config.h"
#include "cli.h"
#include "fuzz.h"

static int count_function(void *ctx, const char *name, uint64_t value, uint64_t size)
{
	unsigned *n = ctx;

	(void)value;
	(void)size;
	(void)strlen(name); /* NUL-terminated within what was read */
	return ++*n > 100000 ? 1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gg_globs skip; /* 1 k: parsed once */
	const char *path = gg_fuzz_path("object");
	const Elf64_Shdr *s;
	struct gg_ranges ranges = { 0 };
	struct gg_elf e;
	unsigned n = 0;

	if (!skip.n)
		gg_globs_parse(&skip, GG_SKIP_SYMBOLS_DEFAULT);
	gg_fuzz_write(path, data, size);
	(void)gg_symbolize_load_bias(path);
	if (gg_elf_open(&e, path))
		return 0;
	(void)gg_elf_section(&e, ".rodata", 0);
	(void)gg_elf_section(&e, ".nonexistent", 0);
	if ((s = gg_elf_section(&e, NULL, SHT_SYMTAB)))
		(void)gg_elf_functions(&e, s, count_function, &n);
	if ((s = gg_elf_section(&e, NULL, SHT_DYNSYM)))
		(void)gg_elf_functions(&e, s, count_function, &n);
	if ((s = gg_elf_section(&e, ".rodata", 0)))
		(void)gg_elf_section_holds(&e, s, "cudaLaunchKernel", 16);
	(void)gg_runtime_linked(&e);
	if (gg_runtime_ranges(&e, &skip, &ranges) == 0) {
		for (size_t i = 0; i < ranges.n; i++) {
			if (ranges.range[i][0] >= ranges.range[i][1] ||
			    (i && ranges.range[i - 1][1] > ranges.range[i][0]))
				abort(); /* sorted and disjoint, as runtime-syms.h says */
			if (!gg_ranges_hold(&ranges, ranges.range[i][0]))
				abort();
		}
		gg_ranges_free(&ranges);
	}
	gg_elf_close(&e);
	return 0;
}
