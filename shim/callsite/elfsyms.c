/* ELF section headers and symbol tables, read with pread(2) and bounded by
 * the file's size at every step. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include "callsite/elfsyms.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Larger tables than these are no file this code should trust with memory. */
#define MAX_SECTIONS (1u << 20)
#define MAX_NAMES (16u << 20)   /* section names */
#define MAX_STRTAB (256u << 20) /* symbol names */
#define SYM_CHUNK 512           /* symbols read at a time */
#define SCAN_CHUNK (64u << 10)  /* section bytes searched at a time */

/* Exactly @len bytes at @off: 0, -ENOEXEC when the file ends first, or -errno. */
static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENOEXEC;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* Whether [@off, @off + @len) lies inside the file. */
static bool in_file(const struct gg_elf *e, uint64_t off, uint64_t len)
{
	return off <= e->size && len <= e->size - off;
}

/* A NUL-terminated copy of the file bytes of string table @s. */
static int read_strings(const struct gg_elf *e, const Elf64_Shdr *s, size_t max, char **out,
			size_t *len)
{
	char *buf;
	int err;

	if (s->sh_type != SHT_STRTAB || !in_file(e, s->sh_offset, s->sh_size))
		return -ENOEXEC;
	if (s->sh_size > max)
		return -EFBIG;
	buf = malloc((size_t)s->sh_size + 1);
	if (!buf)
		return -ENOMEM;
	if ((err = read_at(e->fd, buf, (size_t)s->sh_size, s->sh_offset))) {
		free(buf);
		return err;
	}
	buf[s->sh_size] = '\0'; /* every name ends, the last one included */
	*out = buf;
	*len = (size_t)s->sh_size;
	return 0;
}

int gg_elf_open(struct gg_elf *e, const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Shdr first;
	struct stat st;
	unsigned strndx;
	int err;

	memset(e, 0, sizeof(*e));
	e->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (e->fd < 0)
		return -errno;
	err = -ENOEXEC;
	if (fstat(e->fd, &st) || !S_ISREG(st.st_mode))
		goto fail;
	e->size = (uint64_t)st.st_size;
	if (read_at(e->fd, &eh, sizeof(eh), 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] !=
		    (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB))
		goto fail;
	if (!eh.e_shoff) { /* no section headers: nothing to read, not an error */
		e->names = calloc(1, 1);
		return e->names ? 0 : (gg_elf_close(e), -ENOMEM);
	}
	if (eh.e_shentsize != sizeof(Elf64_Shdr) || !in_file(e, eh.e_shoff, sizeof(first)) ||
	    read_at(e->fd, &first, sizeof(first), eh.e_shoff))
		goto fail;
	/* More than 0xff00 sections, or a string table index past that: the real
	 * values are in the first header (ELF's extended numbering). */
	e->nsh = eh.e_shnum ? eh.e_shnum : (first.sh_size < MAX_SECTIONS ? (unsigned)first.sh_size : 0);
	strndx = eh.e_shstrndx == SHN_XINDEX ? first.sh_link : eh.e_shstrndx;
	if (!e->nsh || (e->size - eh.e_shoff) / sizeof(Elf64_Shdr) < e->nsh)
		goto fail;
	e->sh = malloc(e->nsh * sizeof(Elf64_Shdr));
	if (!e->sh) {
		err = -ENOMEM;
		goto fail;
	}
	if ((err = read_at(e->fd, e->sh, e->nsh * sizeof(Elf64_Shdr), eh.e_shoff)))
		goto fail;
	if (strndx == SHN_UNDEF || strndx >= e->nsh ||
	    read_strings(e, &e->sh[strndx], MAX_NAMES, &e->names, &e->names_len)) {
		/* Sections without names can still be found by type. */
		e->names = calloc(1, 1);
		e->names_len = 0;
		if (!e->names) {
			err = -ENOMEM;
			goto fail;
		}
	}
	return 0;
fail:
	gg_elf_close(e);
	return err;
}

void gg_elf_close(struct gg_elf *e)
{
	if (e->fd >= 0)
		close(e->fd);
	free(e->sh);
	free(e->names);
	memset(e, 0, sizeof(*e));
	e->fd = -1;
}

const Elf64_Shdr *gg_elf_section(const struct gg_elf *e, const char *name, uint32_t type)
{
	for (unsigned i = 1; i < e->nsh; i++) {
		const Elf64_Shdr *s = &e->sh[i];

		if (name ? s->sh_name < e->names_len && !strcmp(e->names + s->sh_name, name)
			 : s->sh_type == type)
			return s;
	}
	return NULL;
}

int gg_elf_functions(const struct gg_elf *e, const Elf64_Shdr *symtab, gg_elf_symbol_fn *fn, void *ctx)
{
	Elf64_Sym *syms = NULL;
	char *strs = NULL;
	size_t strs_len = 0;
	uint64_t count;
	int err;

	if ((symtab->sh_type != SHT_SYMTAB && symtab->sh_type != SHT_DYNSYM) ||
	    symtab->sh_entsize != sizeof(Elf64_Sym) ||
	    !in_file(e, symtab->sh_offset, symtab->sh_size) || symtab->sh_link >= e->nsh)
		return -ENOEXEC;
	if ((err = read_strings(e, &e->sh[symtab->sh_link], MAX_STRTAB, &strs, &strs_len)))
		return err;
	syms = malloc(SYM_CHUNK * sizeof(*syms));
	if (!syms) {
		free(strs);
		return -ENOMEM;
	}
	count = symtab->sh_size / sizeof(Elf64_Sym);
	for (uint64_t at = 0; at < count && !err;) {
		size_t n = count - at < SYM_CHUNK ? (size_t)(count - at) : SYM_CHUNK;

		err = read_at(e->fd, syms, n * sizeof(*syms), symtab->sh_offset + at * sizeof(*syms));
		for (size_t i = 0; i < n && !err; i++) {
			const Elf64_Sym *s = &syms[i];

			if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF ||
			    s->st_name >= strs_len)
				continue;
			err = fn(ctx, strs + s->st_name, s->st_value, s->st_size);
		}
		at += n;
	}
	free(syms);
	free(strs);
	return err;
}

int gg_elf_section_holds(const struct gg_elf *e, const Elf64_Shdr *s, const void *needle, size_t len)
{
	uint64_t off, end;
	size_t keep = 0;
	char *buf;
	int found = 0;

	if (!len || len > SCAN_CHUNK / 2)
		return -EINVAL;
	if (s->sh_type == SHT_NOBITS)
		return 0; /* nothing of it is in the file */
	if (!in_file(e, s->sh_offset, s->sh_size))
		return -ENOEXEC;
	buf = malloc(SCAN_CHUNK);
	if (!buf)
		return -ENOMEM;
	off = s->sh_offset;
	end = s->sh_offset + s->sh_size;
	/* Chunks overlap by len - 1 bytes, so a needle across a seam is found. */
	while (off < end && !found) {
		size_t n = end - off < SCAN_CHUNK - keep ? (size_t)(end - off) : SCAN_CHUNK - keep;
		int err = read_at(e->fd, buf + keep, n, off);

		if (err) {
			free(buf);
			return err;
		}
		off += n;
		n += keep;
		found = memmem(buf, n, needle, len) != NULL;
		keep = n < len - 1 ? n : len - 1;
		memmove(buf, buf + n - keep, keep);
	}
	free(buf);
	return found;
}
