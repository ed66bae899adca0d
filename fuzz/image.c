/* Fuzz target: the image preflight (shim/audit/image.c) on hostile module
 * images: of a known size, of unknown extent (cuModuleLoadData's) ending
 * right before an unmapped page, the bytes hashed for a name, and the file
 * cuModuleLoad reads. nvcc's wrapper points at its fatbin: in the copy here
 * its pointer is made to point just past itself, so the fatbin that follows
 * in the input is what is read. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "audit/image.h"
#include "fuzz.h"

/* The most of an input placed before the unmapped page; libFuzzer's inputs
 * are far smaller unless told otherwise. */
#define ROOM (1u << 20)

static struct {
	unsigned char *area; /* ROOM bytes, then a page that is never mapped */
	size_t page;
} image_fuzz;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	image_fuzz.page = (size_t)sysconf(_SC_PAGESIZE);
	image_fuzz.area = mmap(NULL, ROOM + image_fuzz.page, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (image_fuzz.area == MAP_FAILED ||
	    mprotect(image_fuzz.area + ROOM, image_fuzz.page, PROT_NONE))
		abort();
	return 0;
}

static void count_bytes(void *ctx, const void *bytes, size_t n)
{
	size_t *total = ctx;

	/* Every byte handed over must be readable. */
	for (size_t i = 0; i < n; i++)
		*total += ((const unsigned char *)bytes)[i] != 0;
	*total += n;
}

/* What a read said must hold together, whatever the input. */
static void check(int rc, const struct gg_image_info *info)
{
	char text[GG_IMAGE_ARCHS * 16];

	if (rc != 0 && rc != -EINVAL && rc != -EFAULT && rc != -EPERM && rc != -EIO)
		abort();
	if (info->narchs > GG_IMAGE_ARCHS || (rc && (info->narchs || info->kind)))
		abort();
	for (unsigned cc = 10; cc <= 130; cc += 5)
		(void)gg_image_runs_on(info, cc);
	for (size_t cap = 0; cap <= sizeof(text); cap += cap < 24 ? 1 : 37) {
		size_t len = gg_image_archs_text(info, text, cap);

		if (cap && (len >= cap || strlen(text) != len))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gg_image_info info;
	unsigned char *copy;
	size_t total = 0;
	uint32_t magic = 0;

	if (!image_fuzz.area)
		LLVMFuzzerInitialize(NULL, NULL);
	/* The file cuModuleLoad names. */
	gg_fuzz_write(gg_fuzz_path("image"), data, size);
	check(gg_image_read_file(gg_fuzz_path("image"), &info), &info);
	if (size > ROOM)
		return 0;
	copy = image_fuzz.area + ROOM - size;
	memcpy(copy, data, size);
	if (size >= 16)
		memcpy(&magic, copy, sizeof(magic));
	if (magic == 0x466243B1u) {
		uintptr_t fatbin = (uintptr_t)(copy + 16);

		memcpy(copy + 8, &fatbin, sizeof(fatbin));
	}
	check(gg_image_read(copy, size, &info), &info);
	/* Unknown extent: every read stops at the unmapped page, never past it. */
	check(gg_image_read(copy, SIZE_MAX, &info), &info);
	(void)gg_image_bytes(copy, count_bytes, &total);
	return 0;
}
