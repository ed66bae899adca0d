/* Image preflight (audit/image.c): what is read from real images nvcc made
 * (tests/images/meson.build, each checked against its -gencode list), where
 * each can run, and that no image, cut short or with bits flipped, read with
 * its size or with SIZE_MAX against an unmapped page, can crash the reader. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "audit/image.h"

#ifndef GG_IMAGE_DIR
#error "GG_IMAGE_DIR: where tests/images/meson.build put the images"
#endif

struct blob {
	unsigned char *data;
	size_t size;
};

static char *image_path(const char *name)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/%s", GG_IMAGE_DIR, name);
	return path;
}

static struct blob load(const char *name)
{
	struct blob b = { 0 };
	FILE *f = fopen(image_path(name), "rb");
	struct stat st;

	cr_assert(f, "%s: %s", image_path(name), strerror(errno));
	cr_assert_eq(fstat(fileno(f), &st), 0);
	b.size = (size_t)st.st_size;
	b.data = malloc(b.size + 1);
	cr_assert(b.data);
	cr_assert_eq(fread(b.data, 1, b.size, f), b.size);
	b.data[b.size] = '\0'; /* PTX read with SIZE_MAX ends at its NUL */
	fclose(f);
	return b;
}

/* A mapping whose last page is PROT_NONE: an image copied to end right at it
 * crashes a reader that reads one byte past its end. */
struct guarded {
	unsigned char *base, *guard;
	size_t span;
};

static struct guarded guarded_new(size_t max)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct guarded g;

	g.span = (max + page - 1) / page * page + 2 * page;
	g.base = mmap(NULL, g.span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert(g.base != MAP_FAILED);
	g.guard = g.base + g.span - page;
	cr_assert_eq(mprotect(g.guard, page, PROT_NONE), 0);
	return g;
}

static unsigned char *guarded_put(struct guarded *g, const void *data, size_t n)
{
	memcpy(g->guard - n, data, n);
	return g->guard - n;
}

static void guarded_free(struct guarded *g)
{
	munmap(g->base, g->span);
}

static const char *text_of(const struct gg_image_info *info)
{
	static char buf[512];

	gg_image_archs_text(info, buf, sizeof(buf));
	return buf;
}

/* Read @name from memory with its size, and check it reads the same from its
 * file and with SIZE_MAX at the end of a mapping. */
static struct gg_image_info read_image(const char *name)
{
	struct blob b = load(name);
	struct gg_image_info info, again;
	struct guarded g = guarded_new(b.size);
	char text[512];

	cr_assert_eq(gg_image_read(b.data, b.size, &info), 0, "%s", name);
	strcpy(text, text_of(&info));
	cr_assert_eq(gg_image_read_file(image_path(name), &again), 0, "%s", name);
	cr_expect_str_eq(text_of(&again), text, "%s from its file", name);
	cr_expect_eq(again.kind, info.kind);
	cr_assert_eq(gg_image_read(guarded_put(&g, b.data, b.size), SIZE_MAX, &again), 0, "%s", name);
	cr_expect_str_eq(text_of(&again), text, "%s with SIZE_MAX", name);
	guarded_free(&g);
	free(b.data);
	return info;
}

/* Where @info runs, of the devices 8.0, 8.6, 8.9, 9.0, 10.0, 12.0, as "yes"
 * or "no" each: "yes yes yes no no no". */
static const char *where(const struct gg_image_info *info)
{
	static const unsigned ccs[] = { 80, 86, 89, 90, 100, 120 };
	static char buf[64];
	size_t n = 0;

	for (size_t i = 0; i < sizeof(ccs) / sizeof(ccs[0]); i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", i ? " " : "",
				      gg_image_runs_on(info, ccs[i]) ? "yes" : "no");
	return buf;
}

/*                              80  86  89  90  100 120 */
Test(image, a_fatbin_with_only_sm_80_sass_does_not_run_on_sm_90)
{
	struct gg_image_info info = read_image("sm80.fatbin");

	cr_expect_eq(info.kind, GG_IMAGE_FATBIN);
	cr_expect_str_eq(text_of(&info), "sm_80");
	cr_expect_str_eq(where(&info), "yes yes yes no no no");
	cr_expect_not(gg_image_runs_on(&info, 75));
}

Test(image, a_fatbin_with_sm_90_sass_runs_on_sm_90_only)
{
	struct gg_image_info info = read_image("sm90.fatbin");

	cr_expect_eq(info.kind, GG_IMAGE_FATBIN);
	cr_expect_str_eq(text_of(&info), "sm_90");
	cr_expect_str_eq(where(&info), "no no no yes no no");
}

Test(image, a_fatbin_with_compute_80_ptx_only_runs_on_every_device_from_sm_80)
{
	struct gg_image_info info = read_image("compute80.fatbin");

	cr_expect_eq(info.kind, GG_IMAGE_FATBIN);
	cr_expect_eq(info.narchs, 1);
	cr_expect(info.archs[0].ptx);
	cr_expect_str_eq(text_of(&info), "compute_80");
	cr_expect_str_eq(where(&info), "yes yes yes yes yes yes");
	cr_expect_not(gg_image_runs_on(&info, 75));
}

Test(image, a_fatbin_with_compute_120_ptx_runs_on_sm_120_but_not_on_older_devices)
{
	struct gg_image_info info = read_image("compute120.fatbin");

	cr_expect_str_eq(text_of(&info), "compute_120");
	cr_expect_str_eq(where(&info), "no no no no no yes");
	cr_expect(gg_image_runs_on(&info, 121));
}

Test(image, a_fatbin_of_several_gencodes_lists_sass_then_ptx_each_by_arch)
{
	struct gg_image_info info = read_image("multi.fatbin");

	cr_expect_str_eq(text_of(&info), "sm_80, sm_90, compute_90");
	cr_expect_str_eq(where(&info), "yes yes yes yes yes yes");
	cr_expect_not(gg_image_runs_on(&info, 75));
}

/* sm_90a and sm_100a run on exactly 9.0 and 10.0; compute_100f within 10.x. */
Test(image, a_fatbins_a_and_f_archs_run_only_where_they_are_meant_to)
{
	struct gg_image_info info = read_image("specific.fatbin");

	cr_expect_str_eq(text_of(&info), "sm_90a, sm_100a, compute_100f");
	cr_expect(info.archs[0].specific && !info.archs[0].ptx);
	cr_expect(info.archs[2].family && info.archs[2].ptx);
	cr_expect_str_eq(where(&info), "no no no yes yes no");
	cr_expect(gg_image_runs_on(&info, 103));
	cr_expect_not(gg_image_runs_on(&info, 110));
}

Test(image, compressed_fatbin_entries_read_the_same_as_plain_ones)
{
	struct gg_image_info info = read_image("compressed.fatbin");

	cr_expect_str_eq(text_of(&info), "sm_80, compute_80");
}

Test(image, an_sm_90_cubin_runs_on_sm_90_only)
{
	struct gg_image_info info = read_image("sm90.cubin");

	cr_expect_eq(info.kind, GG_IMAGE_CUBIN);
	cr_expect_str_eq(text_of(&info), "sm_90");
	cr_expect_str_eq(where(&info), "no no no yes no no");
}

Test(image, an_sm_80_cubin_runs_on_every_8_x_device)
{
	struct gg_image_info info = read_image("sm80.cubin");

	cr_expect_eq(info.kind, GG_IMAGE_CUBIN);
	cr_expect_str_eq(text_of(&info), "sm_80");
	cr_expect_str_eq(where(&info), "yes yes yes no no no");
}

/* ptxas 13 writes the e_flags of sm_90 for sm_90a: the 'a' is in .nv.compat. */
Test(image, an_sm_90a_cubin_is_read_as_specific)
{
	struct gg_image_info info = read_image("sm90a.cubin");

	cr_expect_str_eq(text_of(&info), "sm_90a");
	cr_expect_str_eq(where(&info), "no no no yes no no");
}

Test(image, an_sm_100a_cubin_does_not_run_on_sm_103)
{
	struct gg_image_info info = read_image("sm100a.cubin");

	cr_expect_str_eq(text_of(&info), "sm_100a");
	cr_expect(gg_image_runs_on(&info, 100));
	cr_expect_not(gg_image_runs_on(&info, 103));
}

Test(image, a_ptx_file_for_sm_86_runs_on_sm_86_and_newer)
{
	struct gg_image_info info = read_image("compute86.ptx");

	cr_expect_eq(info.kind, GG_IMAGE_PTX);
	cr_expect_str_eq(text_of(&info), "compute_86");
	cr_expect_str_eq(where(&info), "no yes yes yes yes yes");
}

/* Cubins of CUDA 12 and before: the SM in e_flags' low byte, 0x800 for 'a'. */
Test(image, a_cubin_of_the_older_elf_abi_has_its_sm_in_the_low_byte)
{
	struct blob b = load("sm90.cubin");
	struct gg_image_info info;
	uint32_t flags = (90u << 16) | 0x800 | 0x400 | 90u; /* sm_90a as ptxas 12 wrote it */

	b.data[8] = 7; /* EI_ABIVERSION */
	memcpy(b.data + 48, &flags, sizeof(flags));
	cr_assert_eq(gg_image_read(b.data, b.size, &info), 0);
	cr_expect_str_eq(text_of(&info), "sm_90a");
	flags = (80u << 16) | 0x400 | 80u;
	memcpy(b.data + 48, &flags, sizeof(flags));
	cr_assert_eq(gg_image_read(b.data, b.size, &info), 0);
	cr_expect_str_eq(text_of(&info), "sm_80");
	free(b.data);
}

/* The runtime registers this wrapper with __cudaRegisterFatBinary; here it
 * is caught by the stand-ins below, which replace the runtime. */
static const void *registered_wrapper;

void **__cudaRegisterFatBinary(const void *wrapper);
void __cudaRegisterFatBinaryEnd(void **handle);
void __cudaUnregisterFatBinary(void **handle);
void __cudaRegisterFunction(void);
void __cudaInitModule(void);
void __cudaGetKernel(void);
void __cudaLaunchKernel(void);
void __cudaPopCallConfiguration(void);

void **__cudaRegisterFatBinary(const void *wrapper)
{
	static void *handle;

	registered_wrapper = wrapper;
	return &handle;
}

void __cudaRegisterFatBinaryEnd(void **handle)
{
	(void)handle;
}

void __cudaUnregisterFatBinary(void **handle)
{
	(void)handle;
}

/* Called only by the object's launch stubs, which nothing calls here. */
void __cudaRegisterFunction(void)
{
}

void __cudaInitModule(void)
{
}

void __cudaGetKernel(void)
{
}

void __cudaLaunchKernel(void)
{
}

void __cudaPopCallConfiguration(void)
{
}

Test(image, the_wrapper_nvcc_embeds_in_an_object_is_followed_to_its_fatbin)
{
	struct gg_image_info info;

	cr_assert(registered_wrapper, "the object's constructor registered no wrapper");
	cr_assert_eq(gg_image_read(registered_wrapper, SIZE_MAX, &info), 0);
	cr_expect_eq(info.kind, GG_IMAGE_FATBIN);
	cr_expect_str_eq(text_of(&info), "sm_80, compute_90");
	/* The wrapper's own size: its fatbin lies elsewhere, read safely. */
	cr_assert_eq(gg_image_read(registered_wrapper, 16, &info), 0);
	cr_expect_str_eq(text_of(&info), "sm_80, compute_90");
	cr_expect_eq(gg_image_read(registered_wrapper, 15, &info), -EINVAL);
}

Test(image, a_wrapper_whose_pointer_leads_to_an_unmapped_page_is_efault)
{
	struct guarded g = guarded_new(16);
	struct {
		uint32_t magic, version;
		const void *data, *other;
	} w = { 0x466243B1u, 1, g.guard, NULL };
	struct gg_image_info info;

	cr_expect_eq(gg_image_read(&w, sizeof(w), &info), -EFAULT);
	w.data = NULL;
	cr_expect_eq(gg_image_read(&w, sizeof(w), &info), -EINVAL);
	guarded_free(&g);
}

/* A fatbin's fat_size, an entry's payload_size and a cubin's section table
 * pointing past the end: each is -EINVAL, and nothing past the end is read
 * (the image ends at a PROT_NONE page). */
Test(image, a_length_field_pointing_past_the_image_end_is_einval_not_a_read)
{
	struct blob fat = load("sm80.fatbin"), cubin = load("sm90.cubin");
	struct guarded g = guarded_new(fat.size > cubin.size ? fat.size : cubin.size);
	struct gg_image_info info;
	uint64_t v;
	uint32_t entry_size;

	v = fat.size; /* fat_size: a header of 16 bytes and this many more */
	memcpy(fat.data + 8, &v, sizeof(v));
	cr_expect_eq(gg_image_read(guarded_put(&g, fat.data, fat.size), fat.size, &info), -EINVAL);
	cr_expect_eq(info.kind, GG_IMAGE_UNKNOWN);
	cr_expect_eq(info.narchs, 0);
	/* With the extent unknown, the next entry's header lies in the page past the end. */
	v = fat.size * 2;
	memcpy(fat.data + 8, &v, sizeof(v));
	cr_expect_eq(gg_image_read(guarded_put(&g, fat.data, fat.size), SIZE_MAX, &info), -EFAULT);

	v = fat.size - 16; /* fat_size right again; the first entry's payload too long */
	memcpy(fat.data + 8, &v, sizeof(v));
	memcpy(&entry_size, fat.data + 16 + 4, sizeof(entry_size));
	v = fat.size - 16 - entry_size + 1;
	memcpy(fat.data + 16 + 8, &v, sizeof(v));
	cr_expect_eq(gg_image_read(guarded_put(&g, fat.data, fat.size), fat.size, &info), -EINVAL);
	cr_expect_eq(gg_image_read(guarded_put(&g, fat.data, fat.size), SIZE_MAX, &info), -EINVAL);

	v = cubin.size - 64 * 3; /* e_shoff: the section table runs past the end */
	memcpy(cubin.data + 0x28, &v, sizeof(v));
	cr_expect_eq(gg_image_read(guarded_put(&g, cubin.data, cubin.size), cubin.size, &info),
		     -EINVAL);

	guarded_free(&g);
	free(fat.data);
	free(cubin.data);
}

Test(image, a_file_whose_fatbin_claims_more_than_the_file_holds_or_holds_a_wrapper_is_einval)
{
	struct blob fat = load("sm80.fatbin");
	char path[] = "/tmp/gg-image-XXXXXX";
	int fd = mkstemp(path);
	struct gg_image_info info;
	uint64_t v = fat.size;

	cr_assert_geq(fd, 0);
	memcpy(fat.data + 8, &v, sizeof(v));
	cr_assert_eq(write(fd, fat.data, fat.size), (ssize_t)fat.size);
	close(fd);
	cr_expect_eq(gg_image_read_file(path, &info), -EINVAL);
	/* A wrapper's pointer means nothing in a file. */
	fd = open(path, O_WRONLY | O_TRUNC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "\xb1\x43\x62\x46\x01\0\0\0\x10\0\0\0\0\0\0\0", 16), 16);
	close(fd);
	cr_expect_eq(gg_image_read_file(path, &info), -EINVAL);
	unlink(path);
	free(fat.data);
}

/* A FIFO would block open() without O_NONBLOCK: the timeout makes that a failure. */
Test(image, a_file_that_is_no_regular_file_or_is_missing_is_refused_and_errno_kept, .timeout = 10)
{
	struct gg_image_info info;
	char dir[] = "/tmp/gg-image-XXXXXX", fifo[64];

	cr_assert(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	errno = 1234;
	cr_expect_eq(gg_image_read_file(fifo, &info), -EINVAL); /* and does not wait for a writer */
	cr_expect_eq(gg_image_read_file(dir, &info), -EINVAL);
	cr_expect_eq(gg_image_read_file("/nonexistent/x.cubin", &info), -ENOENT);
	cr_expect_eq(errno, 1234);
	unlink(fifo);
	rmdir(dir);
}

Test(image, a_short_ptx_string_before_an_unmapped_page_is_read_up_to_its_nul)
{
	static const char ptx[] = "// hand-written\n.version 8.0\n.target sm_75, debug\n";
	static const char options[] = ".version 9.0 .target texmode_independent, /* x */ sm_100a";
	struct guarded g = guarded_new(sizeof(ptx));
	struct gg_image_info info;

	cr_assert_eq(gg_image_read(guarded_put(&g, ptx, sizeof(ptx)), SIZE_MAX, &info), 0);
	cr_expect_eq(info.kind, GG_IMAGE_PTX);
	cr_expect_str_eq(text_of(&info), "compute_75");
	/* Options before the SM, and a C comment between. */
	cr_assert_eq(gg_image_read(guarded_put(&g, options, sizeof(options)), SIZE_MAX, &info), 0);
	cr_expect_str_eq(text_of(&info), "compute_100a");
	cr_expect_eq(gg_image_read(guarded_put(&g, "", 1), SIZE_MAX, &info), -EINVAL);
	cr_expect_eq(
		gg_image_read(guarded_put(&g, "/* .version 9.0 .target sm_80", 30), SIZE_MAX, &info),
		-EINVAL);
	cr_expect_eq(gg_image_read(guarded_put(&g, "hello", 6), SIZE_MAX, &info), -EINVAL);
	cr_expect_eq(gg_image_read(guarded_put(&g, ".version 9.0\n.target sm_9", 25), SIZE_MAX, &info),
		     -EFAULT);
	cr_expect_eq(gg_image_read(guarded_put(&g, ".version 9.0\n.target sm_9", 25), 25, &info),
		     -EINVAL);
	cr_expect_eq(gg_image_read(NULL, 100, &info), -EINVAL);
	guarded_free(&g);
}

/* PTX reads the comments before .version a window (256 bytes) at a time:
 * each comment is read to its end wherever it falls, whatever part of a
 * window a comment's last bytes (a newline, the two of a C-style close) are
 * in, from memory and from a file alike; a NUL inside a comment ends the
 * text, and so does the scan's limit of 64 KiB. */
Test(image, ptx_comments_end_where_they_end_whatever_window_they_cross)
{
	static char ptx[70 * 1024];
	char path[] = "/tmp/gg-image-XXXXXX";
	struct gg_image_info info;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	for (size_t pad = 0; pad < 600; pad++) {
		size_t n = 0;

		n += (size_t)sprintf(ptx + n, "// %*s\n/*%*s* / **", (int)pad, "", (int)(pad / 3), "");
		memset(ptx + n, '*', pad % 5);
		n += pad % 5;
		n += (size_t)sprintf(ptx + n, "*/\n.version 8.0\n.target sm_86\n");
		cr_assert_eq(gg_image_read(ptx, n, &info), 0, "pad %zu: %s", pad, ptx);
		cr_expect_str_eq(text_of(&info), "compute_86", "pad %zu", pad);
		cr_assert_eq(ftruncate(fd, 0), 0);
		cr_assert_eq(pwrite(fd, ptx, n, 0), (ssize_t)n);
		cr_assert_eq(gg_image_read_file(path, &info), 0, "pad %zu from its file", pad);
		cr_expect_str_eq(text_of(&info), "compute_86", "pad %zu from its file", pad);
	}
	/* A NUL in a comment, past the first window: the text ends there. */
	memset(ptx, ' ', 400);
	memcpy(ptx, "//", 2);
	ptx[300] = '\0';
	strcpy(ptx + 400, "\n.version 8.0\n.target sm_86\n");
	cr_expect_eq(gg_image_read(ptx, 400 + strlen(ptx + 400), &info), -EINVAL);
	memcpy(ptx, "/*", 2);
	memcpy(ptx + 398, "*/", 2);
	cr_expect_eq(gg_image_read(ptx, 400 + strlen(ptx + 400), &info), -EINVAL);
	ptx[300] = ' ';
	cr_expect_eq(gg_image_read(ptx, 400 + strlen(ptx + 400), &info), 0);
	/* Comments past the scan's limit: not a module worth guessing at. */
	memset(ptx, '/', sizeof(ptx));
	strcpy(ptx + 66 * 1024, "\n.version 8.0\n.target sm_86\n");
	cr_expect_eq(gg_image_read(ptx, strlen(ptx), &info), -EINVAL);
	close(fd);
	unlink(path);
}

/* A fatbin of @n SASS entries of archs 10, 11, ... with empty payloads. */
static size_t synthetic_fatbin(unsigned char *buf, unsigned n)
{
	uint32_t magic = 0xBA55ED50u;
	uint16_t version = 1, header = 16, kind = 2;
	uint32_t entry = 64;
	uint64_t fat = (uint64_t)n * 64;

	memset(buf, 0, 16 + n * 64);
	memcpy(buf, &magic, 4);
	memcpy(buf + 4, &version, 2);
	memcpy(buf + 6, &header, 2);
	memcpy(buf + 8, &fat, 8);
	for (unsigned i = 0; i < n; i++) {
		unsigned char *e = buf + 16 + i * 64;
		uint32_t arch = 10 + i;

		memcpy(e, &kind, 2);
		memcpy(e + 4, &entry, 4);
		memcpy(e + 28, &arch, 4);
	}
	return 16 + n * 64;
}

Test(image, archs_that_do_not_fit_are_noted_and_then_runs_on_does_not_guess_no)
{
	static unsigned char buf[16 + 40 * 64];
	struct gg_image_info info;
	char text[64];

	cr_assert_eq(gg_image_read(buf, synthetic_fatbin(buf, 40), &info), 0);
	cr_expect_eq(info.narchs, GG_IMAGE_ARCHS);
	cr_expect(info.more);
	cr_expect_eq(info.archs[31].sm, 41);
	/* Listed: 1.0 to 4.1; 9.0 may be among those that did not fit. */
	cr_expect(gg_image_runs_on(&info, 90));
	info.more = false;
	cr_expect_not(gg_image_runs_on(&info, 90));
	info.more = true;
	cr_expect_eq(gg_image_archs_text(&info, text, sizeof(text)), strlen(text));
	cr_expect_str_eq(text, "sm_10, sm_11, sm_12, sm_13, sm_14, sm_15, sm_16, sm_17, ...");
	cr_expect(strstr(text_of(&info), "sm_41, ..."));
}

Test(image, a_fatbin_of_lto_ir_only_holds_nothing_the_driver_runs)
{
	unsigned char buf[16 + 64];
	struct gg_image_info info;
	uint16_t lto = 8;

	synthetic_fatbin(buf, 1);
	memcpy(buf + 16, &lto, sizeof(lto));
	cr_assert_eq(gg_image_read(buf, sizeof(buf), &info), 0);
	cr_expect_eq(info.kind, GG_IMAGE_FATBIN);
	cr_expect_eq(info.narchs, 0);
	cr_expect_str_eq(text_of(&info), "none");
	cr_expect_str_eq(where(&info), "no no no no no no");
}

Test(image, archs_text_is_cut_after_the_last_arch_that_fits_with_an_ellipsis)
{
	struct gg_image_info info = { .kind = GG_IMAGE_FATBIN,
				      .narchs = 3,
				      .archs = { { 80, false, false, false },
						 { 90, false, true, false },
						 { 90, true, false, false } } };
	char buf[32];

	cr_expect_eq(gg_image_archs_text(&info, buf, sizeof(buf)), 25);
	cr_expect_str_eq(buf, "sm_80, sm_90a, compute_90");
	cr_expect_eq(gg_image_archs_text(&info, buf, 25), 18);
	cr_expect_str_eq(buf, "sm_80, sm_90a, ...");
	cr_expect_str_eq((gg_image_archs_text(&info, buf, 11), buf), "sm_80, ...");
	cr_expect_str_eq((gg_image_archs_text(&info, buf, 10), buf), "...");
	cr_expect_str_eq((gg_image_archs_text(&info, buf, 3), buf), "..");
	buf[0] = 'x';
	cr_expect_eq(gg_image_archs_text(&info, buf, 0), 0);
	cr_expect_eq(buf[0], 'x');
	info.narchs = 0;
	cr_expect_str_eq((gg_image_archs_text(&info, buf, sizeof(buf)), buf), "none");
}

/* Where process_vm_readv is refused (a seccomp filter, as some containers
 * have), memory of unknown extent cannot be read safely: -EPERM. */
Test(image, size_max_reads_are_eperm_where_process_vm_readv_is_refused)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };
	struct blob b = load("sm80.fatbin");
	struct gg_image_info info;

	cr_assert_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	cr_assert_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);
	cr_expect_eq(gg_image_read(b.data, SIZE_MAX, &info), -EPERM);
	cr_expect_eq(gg_image_read(b.data, b.size, &info), 0, "a known size needs no safe read");
	free(b.data);
}

/* The fuzzed images: every one of them, cut short and with bits flipped. */
static const char *const fuzzed[] = {
	"sm80.fatbin",  "sm90.fatbin",     "compute80.fatbin",  "compute120.fatbin",
	"multi.fatbin", "specific.fatbin", "compressed.fatbin", "sm80.cubin",
	"sm90.cubin",   "sm90a.cubin",     "sm100a.cubin",      "compute86.ptx",
};

static bool same_info(const struct gg_image_info *a, const struct gg_image_info *b)
{
	if (a->kind != b->kind || a->narchs != b->narchs || a->more != b->more)
		return false;
	for (unsigned i = 0; i < a->narchs; i++)
		if (a->archs[i].sm != b->archs[i].sm || a->archs[i].ptx != b->archs[i].ptx ||
		    a->archs[i].specific != b->archs[i].specific ||
		    a->archs[i].family != b->archs[i].family)
			return false;
	return true;
}

/* 0, -EINVAL or -EFAULT, and no archs left by a failure. Memory of a known
 * size cannot fault: a length that does not fit is -EINVAL there. */
static void expect_clean(int rc, const struct gg_image_info *info, const char *name, const char *how,
			 size_t at, bool size_known)
{
	cr_assert(rc == 0 || rc == -EINVAL || (rc == -EFAULT && !size_known), "%s %s %zu: %d", name,
		  how, at, rc);
	if (rc)
		cr_assert(info->kind == GG_IMAGE_UNKNOWN && info->narchs == 0,
			  "%s %s %zu: a failed read left archs", name, how, at);
	cr_assert_leq(info->narchs, GG_IMAGE_ARCHS);
}

/* A cut image reads as the whole (PTX cut after its .target, a cubin after
 * its section table) or fails: it never reads as something else. */
Test(image, every_truncation_of_each_image_reads_as_the_whole_or_fails_cleanly)
{
	for (size_t k = 0; k < sizeof(fuzzed) / sizeof(fuzzed[0]); k++) {
		struct blob b = load(fuzzed[k]);
		struct guarded g = guarded_new(b.size);
		struct gg_image_info whole, info;
		/* A dense sample of big images: every length of the first 4 KiB. */
		size_t step = b.size > 16384 ? 7 : 1;

		cr_assert_eq(gg_image_read(b.data, b.size, &whole), 0);
		for (size_t len = 0; len < b.size; len += len < 4096 ? 1 : step) {
			int rc = gg_image_read(guarded_put(&g, b.data, len), len, &info);

			expect_clean(rc, &info, fuzzed[k], "cut at", len, true);
			cr_assert(rc != 0 || same_info(&info, &whole), "%s cut at %zu misread",
				  fuzzed[k], len);
			rc = gg_image_read(guarded_put(&g, b.data, len), SIZE_MAX, &info);
			expect_clean(rc, &info, fuzzed[k], "cut (SIZE_MAX) at", len, false);
			cr_assert(rc != 0 || same_info(&info, &whole),
				  "%s cut at %zu misread (SIZE_MAX)", fuzzed[k], len);
		}
		guarded_free(&g);
		free(b.data);
	}
}

/* xorshift64: the same flips on every run, so a failure can be replayed. */
static uint64_t next_random(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

Test(image, thousands_of_bit_flips_in_each_image_never_crash_a_read)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull;

	for (size_t k = 0; k < sizeof(fuzzed) / sizeof(fuzzed[0]); k++) {
		struct blob b = load(fuzzed[k]);
		struct guarded g = guarded_new(b.size);
		unsigned char *copy = malloc(b.size);

		for (int round = 0; round < 3000; round++) {
			struct gg_image_info info;
			int flips = 1 + (int)(next_random(&seed) % 3);
			int rc;

			memcpy(copy, b.data, b.size);
			for (int f = 0; f < flips; f++) {
				/* Half of them in the first 256 bytes, where the headers are. */
				size_t span = (next_random(&seed) & 1) && b.size > 256 ? 256 : b.size;
				size_t at = (size_t)(next_random(&seed) % span);

				copy[at] ^= (unsigned char)(1u << (next_random(&seed) % 8));
			}
			rc = gg_image_read(guarded_put(&g, copy, b.size), b.size, &info);
			expect_clean(rc, &info, fuzzed[k], "flip round", (size_t)round, true);
			rc = gg_image_read(guarded_put(&g, copy, b.size), SIZE_MAX, &info);
			expect_clean(rc, &info, fuzzed[k], "flip round (SIZE_MAX)", (size_t)round,
				     false);
		}
		free(copy);
		guarded_free(&g);
		free(b.data);
	}
}
