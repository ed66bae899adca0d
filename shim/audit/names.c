/* Module and library names (docs/how-it-works.md, "The kernel-lookup audit and the gate"):
 * the file's basename, OBJECT+0xOFFSET for an image inside a mapped object,
 * image:HASH otherwise. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "audit/audit.h"
#include "audit/image.h"

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

/* FNV-1a, 64-bit: stable across runs and builds, so names can be compared. */
static uint64_t hash_more(uint64_t h, const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= FNV_PRIME;
	}
	return h;
}

uint64_t gg_audit_hash(const void *data, size_t len)
{
	return hash_more(FNV_OFFSET, data, len);
}

static void hash_piece(void *ctx, const void *bytes, size_t n)
{
	uint64_t *h = ctx;

	*h = hash_more(*h, bytes, n);
}

void gg_audit_name_file(const char *path, char *out, size_t cap)
{
	const char *base = path ? strrchr(path, '/') : NULL;

	snprintf(out, cap, "%s", base ? base + 1 : (path ? path : "(null)"));
}

void gg_audit_name_image(const void *image, bool loaded, char *out, size_t cap)
{
	Dl_info info;
	uint64_t h = FNV_OFFSET;

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
	/* The driver took it, but may have read less than its headers claim:
	 * every byte is read safely, and the hash ends where the memory does. */
	if (gg_image_bytes(image, hash_piece, &h) == -EPERM && h == FNV_OFFSET) {
		snprintf(out, cap, "image@%p", image);
		return;
	}
	snprintf(out, cap, "image:%016llx", (unsigned long long)h);
}
