/* Module and library names (SPEC §3): the file's basename, OBJECT+0xOFFSET
 * for an image inside a mapped object, image:HASH otherwise. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "audit/audit.h"

#define FATBIN_WRAPPER_MAGIC 0x466243b1u /* __fatBinC_Wrapper_t */
#define FATBIN_MAGIC 0xBA55ED50u

/* Compare byte by byte so a short PTX string is never read past its end. */
static int has_magic(const unsigned char *p, uint32_t magic)
{
	for (int i = 0; i < 4; i++)
		if (p[i] != (unsigned char)(magic >> (8 * i)))
			return 0;
	return 1;
}

static uint64_t ld64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

size_t gg_audit_image_length(const void *image, const void **start)
{
	const unsigned char *p = image;

	*start = image;
	if (has_magic(p, FATBIN_WRAPPER_MAGIC)) {
		/* { int magic; int version; const void *data; void *filename_or_fatbins; } */
		const void *data;

		memcpy(&data, p + 8, sizeof(data));
		if (!data)
			return 0;
		p = data;
		*start = data;
	}
	if (has_magic(p, FATBIN_MAGIC)) {
		/* { u32 magic; u16 version; u16 header_size; u64 fat_size; } then fat_size bytes */
		uint16_t header_size;

		memcpy(&header_size, p + 6, sizeof(header_size));
		return (size_t)header_size + (size_t)ld64(p + 8);
	}
	if (has_magic(p, 0x464c457fu) && p[4] == 2 /* ELFCLASS64 */) {
		/* The section and program header tables bound the file (nvcc places the former last). */
		uint64_t phoff = ld64(p + 0x20), shoff = ld64(p + 0x28);
		uint16_t phentsize, phnum, shentsize, shnum;

		memcpy(&phentsize, p + 0x36, 2);
		memcpy(&phnum, p + 0x38, 2);
		memcpy(&shentsize, p + 0x3a, 2);
		memcpy(&shnum, p + 0x3c, 2);
		uint64_t end_sh = shoff + (uint64_t)shentsize * shnum;
		uint64_t end_ph = phoff + (uint64_t)phentsize * phnum;

		return (size_t)(end_sh > end_ph ? end_sh : end_ph);
	}
	return strlen((const char *)p); /* PTX text */
}

uint64_t gg_audit_hash(const void *data, size_t len)
{
	/* FNV-1a, 64-bit: stable across runs and builds, so names can be compared. */
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

void gg_audit_name_file(const char *path, char *out, size_t cap)
{
	const char *base = path ? strrchr(path, '/') : NULL;

	snprintf(out, cap, "%s", base ? base + 1 : (path ? path : "(null)"));
}

void gg_audit_name_image(const void *image, bool loaded, char *out, size_t cap)
{
	Dl_info info;
	const void *start;
	size_t len;

	if (!image) {
		snprintf(out, cap, "image:null");
		return;
	}
	if (dladdr(image, &info) && info.dli_fname && info.dli_fbase) {
		const char *base = strrchr(info.dli_fname, '/');

		snprintf(out, cap, "%s+0x%llx", base ? base + 1 : info.dli_fname,
			 (unsigned long long)((uintptr_t)image - (uintptr_t)info.dli_fbase));
		return;
	}
	/* A refused image may be no image at all (its header's lengths untrue,
	 * never read by the driver): it is named by its address, not hashed. */
	if (!loaded) {
		snprintf(out, cap, "image@%p", image);
		return;
	}
	len = gg_audit_image_length(image, &start);
	snprintf(out, cap, "image:%016llx", (unsigned long long)gg_audit_hash(start, len));
}
