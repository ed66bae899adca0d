/* Reading an ELF file's section headers and symbol tables: the executable's
 * own symbol table for call sites (callsite.c), and an unstripped copy's for
 * gpuguard symbolize. Plain pread(2) into bounded buffers, so a truncated or
 * hostile file is an error (-ENOEXEC), never a read out of bounds. Native
 * 64-bit ELF only: the objects a 64-bit process runs. Allocates; never for a
 * signal handler. Uses nothing of the shim but libc. */
#ifndef GG_SHIM_CALLSITE_ELFSYMS_H
#define GG_SHIM_CALLSITE_ELFSYMS_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

struct gg_elf {
	int fd;
	uint64_t size;  /* of the file */
	Elf64_Shdr *sh; /* every section header */
	unsigned nsh;
	char *names; /* the section names, NUL-terminated */
	size_t names_len;
};

/* Open @path and read its section headers. 0, or -errno (-ENOEXEC: not a
 * readable native 64-bit ELF). */
int gg_elf_open(struct gg_elf *e, const char *path);
void gg_elf_close(struct gg_elf *e);

/* The first section named @name, or of type @type (@name NULL); NULL if none. */
const Elf64_Shdr *gg_elf_section(const struct gg_elf *e, const char *name, uint32_t type);

/* Called for each defined function symbol: its name, value and size. A
 * nonzero return stops the walk and is returned by gg_elf_functions. */
typedef int gg_elf_symbol_fn(void *ctx, const char *name, uint64_t value, uint64_t size);

/* Walk the function symbols of @symtab (a SHT_SYMTAB or SHT_DYNSYM section of
 * @e). 0, what @fn returned, or -errno. */
int gg_elf_functions(const struct gg_elf *e, const Elf64_Shdr *symtab, gg_elf_symbol_fn *fn, void *ctx);

/* Whether the file bytes of section @s hold @needle: 1, 0, or -errno. */
int gg_elf_section_holds(const struct gg_elf *e, const Elf64_Shdr *s, const void *needle, size_t len);

#endif
