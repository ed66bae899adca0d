/* Module images in memory whose headers claim more than is there, for the
 * audit tests: each is built here (an sm_90 cubin, fatbins, nvcc's wrapper,
 * PTX), placed so that its last byte is the last before a PROT_NONE page,
 * and loaded by cuModuleLoadData, cuModuleLoadDataEx, cuLibraryLoadData and
 * cuModuleLoadFatBinary (what loaded is unloaded again). Prints one line per
 * image and call, "NAME CALL: RESULT", and exits 0; a crash is the failure.
 * With an argument, only the images whose names start with it. */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define GIB (UINT64_C(1) << 30)
#define MAX_IMAGE 4096

struct image {
	unsigned char bytes[MAX_IMAGE];
	size_t n;
};

static void put16(unsigned char *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
			  ".visible .entry gg_images()\n{\n\tret;\n}\n";

/* As ptxas lays an sm_90 cubin out: the header, the section names, the
 * section headers (null, .shstrtab, an empty .text.gg_images), and the
 * program headers last. */
static void cubin(struct image *im)
{
	static const char names[] = "\0.shstrtab\0.text.gg_images";
	unsigned char *p = im->bytes;
	size_t shoff = (64 + sizeof(names) + 7) / 8 * 8, phoff = shoff + 3 * 64;

	memset(im, 0, sizeof(*im));
	memcpy(p,
	       "\x7f"
	       "ELF",
	       4);
	p[4] = 2;           /* ELFCLASS64 */
	p[5] = 1;           /* little-endian */
	p[6] = 1;           /* EV_CURRENT */
	p[7] = 0x41;        /* ELFOSABI_CUDA */
	p[8] = 8;           /* ABI version 8: the SM in bits 8-15 */
	put16(p + 16, 2);   /* ET_EXEC */
	put16(p + 18, 190); /* EM_CUDA */
	put32(p + 20, 1);
	put64(p + 0x20, phoff);
	put64(p + 0x28, shoff);
	put32(p + 0x30, 0x6005a04); /* sm_90 */
	put16(p + 0x34, 64);
	put16(p + 0x36, 56);
	put16(p + 0x38, 2);
	put16(p + 0x3a, 64);
	put16(p + 0x3c, 3);
	put16(p + 0x3e, 1); /* e_shstrndx */
	memcpy(p + 64, names, sizeof(names));
	/* [1] .shstrtab */
	put32(p + shoff + 64, 1);
	put32(p + shoff + 64 + 4, 3); /* SHT_STRTAB */
	put64(p + shoff + 64 + 0x18, 64);
	put64(p + shoff + 64 + 0x20, sizeof(names));
	/* [2] .text.gg_images: empty, the fake runs kernels on the host */
	put32(p + shoff + 128, 11);
	put32(p + shoff + 128 + 4, 1); /* SHT_PROGBITS */
	put64(p + shoff + 128 + 8, 6); /* SHF_ALLOC | SHF_EXECINSTR */
	put64(p + shoff + 128 + 0x18, shoff);
	/* PT_PHDR and an empty PT_LOAD */
	put32(p + phoff, 6);
	put64(p + phoff + 8, phoff);
	put64(p + phoff + 32, 2 * 56);
	put64(p + phoff + 40, 2 * 56);
	put32(p + phoff + 56, 1);
	im->n = phoff + 2 * 56;
}

/* A fatbin of one entry: @kind 1 (PTX) or 2 (ELF) for sm_90, holding @payload. */
static void fatbin(struct image *im, unsigned kind, const void *payload, size_t n)
{
	unsigned char *p = im->bytes;
	size_t padded = (n + 7) / 8 * 8;

	memset(im, 0, sizeof(*im));
	put32(p, 0xBA55ED50u);
	put16(p + 4, 1);
	put16(p + 6, 16);
	put64(p + 8, 64 + padded);
	put16(p + 16, (uint16_t)kind);
	put16(p + 18, 0x101);
	put32(p + 20, 64);
	put64(p + 24, padded);
	put32(p + 16 + 28, 90);
	memcpy(p + 16 + 64, payload, n);
	im->n = 16 + 64 + padded;
}

/* A fresh mapping with @im's bytes ending right before its PROT_NONE page. */
static unsigned char *place(const struct image *im, size_t *span, unsigned char **base)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	*span = (im->n + page - 1) / page * page + page;
	*base = mmap(NULL, *span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (*base == MAP_FAILED || mprotect(*base + *span - page, page, PROT_NONE)) {
		perror("app-images: mmap");
		exit(2);
	}
	memcpy(*base + *span - page - im->n, im->bytes, im->n);
	return *base + *span - page - im->n;
}

static void load_all(const char *name, const void *image)
{
	CUmodule mod;
	CUlibrary lib;
	CUresult rc;

	rc = cuModuleLoadData(&mod, image);
	printf("%s cuModuleLoadData: %d\n", name, (int)rc);
	if (rc == CUDA_SUCCESS)
		cuModuleUnload(mod);
	rc = cuModuleLoadDataEx(&mod, image, 0, NULL, NULL);
	printf("%s cuModuleLoadDataEx: %d\n", name, (int)rc);
	if (rc == CUDA_SUCCESS)
		cuModuleUnload(mod);
	rc = cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0);
	printf("%s cuLibraryLoadData: %d\n", name, (int)rc);
	if (rc == CUDA_SUCCESS)
		cuLibraryUnload(lib);
	rc = cuModuleLoadFatBinary(&mod, image);
	printf("%s cuModuleLoadFatBinary: %d\n", name, (int)rc);
	if (rc == CUDA_SUCCESS)
		cuModuleUnload(mod);
	fflush(stdout);
}

/* @im placed at the end of its mapping and loaded every way; @wrapped: by
 * way of nvcc's wrapper on the heap, pointing at it. */
static void try_image(const char *only, const char *name, const struct image *im, bool wrapped)
{
	struct {
		int magic, version;
		const void *data;
		void *filename;
	} wrapper = { 0x466243b1, 1, NULL, NULL };
	unsigned char *base, *at;
	size_t span;

	if (only && strncmp(name, only, strlen(only)))
		return;
	at = place(im, &span, &base);
	wrapper.data = at;
	load_all(name, wrapped ? (const void *)&wrapper : at);
	munmap(base, span);
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	struct image c, im;
	CUdevice dev;
	CUcontext ctx;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx)) {
		fprintf(stderr, "app-images: no device\n");
		return 2;
	}
	cubin(&c);

	/* Images as the toolchain makes them. */
	try_image(only, "cubin", &c, false);
	fatbin(&im, 2, c.bytes, c.n);
	try_image(only, "fatbin-elf", &im, false);
	try_image(only, "wrapper", &im, true);
	fatbin(&im, 1, ptx, sizeof(ptx));
	try_image(only, "fatbin-ptx", &im, false);
	memset(&im, 0, sizeof(im));
	memcpy(im.bytes, ptx, sizeof(ptx));
	im.n = sizeof(ptx);
	try_image(only, "ptx", &im, false);

	/* An empty program header table, far away: nothing there is read. */
	im = c;
	put64(im.bytes + 0x20, GIB);
	put16(im.bytes + 0x38, 0);
	try_image(only, "cubin-phoff-1gib-none", &im, false);
	put64(im.bytes + 0x20, UINT64_MAX - 7);
	try_image(only, "cubin-phoff-max-none", &im, false);
	im = c;
	put16(im.bytes + 0x36, 0xffff);
	put16(im.bytes + 0x38, 0);
	try_image(only, "cubin-phentsize-max-none", &im, false);

	/* Tables claimed where the memory is not. */
	im = c;
	put64(im.bytes + 0x20, GIB);
	try_image(only, "cubin-phoff-1gib", &im, false);
	im = c;
	put64(im.bytes + 0x28, GIB);
	try_image(only, "cubin-shoff-1gib", &im, false);
	put16(im.bytes + 0x3c, 0);
	try_image(only, "cubin-shoff-1gib-none", &im, false);
	im = c;
	put16(im.bytes + 0x3c, 0xffff);
	try_image(only, "cubin-shnum-max", &im, false);

	/* Fatbins claiming more than they hold. */
	fatbin(&im, 1, ptx, sizeof(ptx));
	put64(im.bytes + 8, GIB);
	put64(im.bytes + 24, GIB - 64);
	try_image(only, "fatbin-ptx-1gib", &im, false);
	try_image(only, "wrapper-1gib", &im, true);
	fatbin(&im, 2, c.bytes, c.n);
	put64(im.bytes + 8, (UINT64_C(1) << 41));
	try_image(only, "fatbin-size-2tib", &im, false);
	fatbin(&im, 2, c.bytes, c.n);
	put16(im.bytes + 6, 0xffff);
	try_image(only, "fatbin-header-max", &im, false);
	fatbin(&im, 2, c.bytes, c.n);
	put64(im.bytes + 8, im.n - 16 + 64);
	try_image(only, "fatbin-entry-past-end", &im, false);
	return 0;
}
