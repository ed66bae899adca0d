/* Image preflight (docs/how-it-works.md, "The kernel-lookup audit and the gate"; tests in
 * test-image.c): the architectures a module image carries, read from its
 * headers alone, so that code this GPU cannot run is named when the
 * module is loaded, not when its first kernel is asked for.
 *
 * The layouts, none of them documented by NVIDIA, as nvcc, ptxas and
 * fatbinary of CUDA 13.0 write them (all little-endian):
 *
 * Fatbin: a 16-byte header {u32 magic 0xBA55ED50, u16 version 1, u16
 * header_size, u64 fat_size}, then fat_size bytes of entries, back to back.
 * Each entry: u16 kind (1 PTX, 2 ELF, 8 LTO IR) @0, u32 header_size @4, u64
 * payload_size @8, u32 arch @28 (80 for sm_80 and for compute_80), u64 flags
 * @40, the payload after the header. Flag 0x100000 marks an 'a' arch
 * (sm_90a), 0x200000 an 'f' one (compute_100f); 0x2000 and 0x8000 a
 * compressed payload, which changes nothing here: only headers are read.
 *
 * nvcc's wrapper (__fatBinC_Wrapper_t): {u32 magic 0x466243B1, u32 version,
 * const void *data, void *filename_or_fatbins}; data points at a fatbin.
 *
 * ELF cubin: ELFCLASS64, e_machine EM_CUDA (190). The SM is in e_flags,
 * where it moved with the ELF ABI version (e_ident[EI_ABIVERSION]): up to 7
 * (CUDA 12 and before) in bits 0-7 with 0x800 for an 'a' arch; from 8 (every
 * cubin of CUDA 13, and Blackwell's before it) in bits 8-15, sm_90 being
 * 0x06005a04 and sm_120 0x06007802. LLVM reads bit 0x8 as the 'a' of version
 * 8, but ptxas 13.0 writes e_flags of sm_90a, sm_100a and sm_120a equal to
 * those of sm_90, sm_100 and sm_120: what tells them apart is the
 * .nv.compat section (type 0x70000086), whose records, {u8 format, u8
 * attribute, u16 value} for format 2, hold attribute 9 = 1 for an 'a' arch.
 * An 'f' arch leaves no trace in a cubin (sm_100f's is sm_100's).
 *
 * PTX: text whose first directive, after comments, is .version, followed by
 * .target with a list that holds sm_XY (sm_90a, sm_100f).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "audit/image.h"

#define FATBIN_MAGIC 0xBA55ED50u
#define FATBIN_WRAPPER_MAGIC 0x466243B1u
#define FATBIN_HEADER 16u
/* The entry header bytes read (through flags @40); nvcc's smallest is 64. */
#define FATBIN_ENTRY 64u
#define FATBIN_KIND_PTX 1u
#define FATBIN_KIND_ELF 2u
#define FATBIN_FLAG_SPECIFIC 0x100000u
#define FATBIN_FLAG_FAMILY 0x200000u

#define ELF_HEADER 64u
#define ELF_SHDR 64u /* sizeof(Elf64_Shdr) */
#define EM_CUDA_MACHINE 190u
#define CUDA_ABI_SM_HIGH 8u /* EI_ABIVERSION from which the SM is in bits 8-15 */
#define SHT_CUDA_COMPAT 0x70000086u
#define COMPAT_ATTR_SPECIFIC 9u

/* PTX puts .version and .target first; only comments come before them, and
 * more than this many bytes of them is not a module worth guessing at. */
#define PTX_SCAN_MAX (64u * 1024)
/* Reads of memory of unknown extent stay within one page: the kernel may not
 * split a transfer at the first unreadable page. 4 KiB divides every Linux
 * page size. */
#define SAFE_PAGE 4096u

/* Where an image's bytes come from. */
struct src {
	const unsigned char *mem; /* the image in memory; NULL: in the file @fd */
	int fd;
	bool safe;     /* memory of unknown extent: copied by process_vm_readv */
	pid_t pid;     /* ours, when safe: asked once per image, not per read */
	uint64_t size; /* bytes that may be read from the start: the bound known so far */
};

static uint16_t ld16(const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t ld32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t ld64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Copy memory that may not be mapped: the kernel reports an unmapped page as
 * EFAULT where a load would be SIGSEGV in the host process. An address, not
 * a pointer: it may lie anywhere, which pointer arithmetic may not. */
static ssize_t safe_copy(pid_t pid, uintptr_t from, void *to, size_t n)
{
	struct iovec local = { .iov_base = to, .iov_len = n };
	struct iovec remote = { .iov_base = (void *)from, .iov_len = n };
	ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (got >= 0)
		return got;
	/* A seccomp filter or a kernel without the call: no safe way to read. */
	if (errno == ENOSYS || errno == EPERM)
		return -EPERM;
	return -EFAULT;
}

/* Up to @n bytes at @off: the count copied, short only at the end of what
 * may be read (0 at or past it), or -EFAULT, -EPERM, -EIO. */
static ssize_t src_read_some(const struct src *s, uint64_t off, void *buf, size_t n)
{
	if (off >= s->size)
		return 0;
	if (n > s->size - off)
		n = (size_t)(s->size - off);
	if (s->mem && !s->safe) {
		memcpy(buf, s->mem + off, n);
		return (ssize_t)n;
	}
	if (s->mem)
		return safe_copy(s->pid, (uintptr_t)s->mem + (uintptr_t)off, buf, n);
	size_t done = 0;
	while (done < n) {
		ssize_t got = pread(s->fd, (unsigned char *)buf + done, n - done, (off_t)(off + done));

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -EIO;
		if (got == 0)
			break; /* the file is shorter than it was */
		done += (size_t)got;
	}
	return (ssize_t)done;
}

/* All @n bytes at @off; -EINVAL when they lie past the end of the image (a
 * length the image does not hold), -EFAULT when they cannot be read. */
static int src_read(const struct src *s, uint64_t off, void *buf, size_t n)
{
	ssize_t got;

	if (n > s->size || off > s->size - n)
		return -EINVAL;
	got = src_read_some(s, off, buf, n);
	if (got < 0)
		return (int)got;
	if ((size_t)got < n)
		return s->mem ? -EFAULT : -EINVAL; /* a file cut short since fstat */
	return 0;
}

/* A window on the image as text: PTX is read up to its NUL and no further,
 * so a short string in memory of unknown extent is never read past its end
 * (but for the rest of the window's page, which is mapped). */
struct text {
	const struct src *s;
	uint64_t off; /* of buf[0] */
	size_t len;
	int err; /* why the text ended early: -EFAULT, -EPERM, -EIO; 0 if not */
	unsigned char buf[256];
};

/* The byte at @off, or -1 past the end of the text (its NUL, its size, the
 * scan limit) or where it cannot be read (then t->err says why). */
static int text_at(struct text *t, uint64_t off)
{
	if (off >= PTX_SCAN_MAX)
		return -1;
	if (off < t->off || off - t->off >= t->len) {
		size_t n = sizeof(t->buf);
		ssize_t got;

		if (t->s->safe) {
			uint64_t room = SAFE_PAGE - (((uintptr_t)t->s->mem + off) % SAFE_PAGE);

			if (room < n)
				n = (size_t)room;
		}
		got = src_read_some(t->s, off, t->buf, n);
		t->off = off;
		t->len = got > 0 ? (size_t)got : 0;
		if (got < 0)
			t->err = (int)got;
		if (got <= 0)
			return -1;
	}
	return t->buf[off - t->off] ? t->buf[off - t->off] : -1;
}

static bool text_is(struct text *t, uint64_t off, const char *word)
{
	for (size_t i = 0; word[i]; i++)
		if (text_at(t, off + i) != (unsigned char)word[i])
			return false;
	return true;
}

static bool is_blank(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static bool is_ident(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The offset of the first byte from @off that is @c, or where the text ends
 * (its NUL, its size, the scan limit): a window at a time with memchr. The
 * comments before .target are most of what a load reads (the fake driver's
 * kernels.ptx has 1 120 bytes of them), and byte by byte through text_at()
 * they cost about 30 instructions a byte. */
static uint64_t text_find(struct text *t, uint64_t off, int c)
{
	for (;;) {
		const unsigned char *from, *end, *hit, *nul;

		if (text_at(t, off) < 0)
			return off;
		from = t->buf + (off - t->off);
		end = t->buf + (t->len < PTX_SCAN_MAX - t->off ? t->len : PTX_SCAN_MAX - t->off);
		hit = memchr(from, c, (size_t)(end - from));
		nul = memchr(from, 0, (size_t)((hit ? hit : end) - from));
		if (nul || hit)
			return t->off + (uint64_t)((nul ? nul : hit) - t->buf);
		off = t->off + (uint64_t)(end - t->buf);
	}
}

/* The offset of the first byte from @off that is neither blank nor inside
 * a comment (// to the line's end, or C-style). */
static uint64_t text_skip(struct text *t, uint64_t off)
{
	for (;;) {
		int c = text_at(t, off);

		if (is_blank(c)) {
			off++;
		} else if (c == '/' && text_at(t, off + 1) == '/') {
			off = text_find(t, off + 2, '\n');
		} else if (c == '/' && text_at(t, off + 1) == '*') {
			for (off += 2;; off++) {
				off = text_find(t, off, '*');
				if (text_at(t, off) < 0)
					return off;
				if (text_at(t, off + 1) == '/')
					break;
			}
			off += 2;
		} else {
			return off;
		}
	}
}

/* The 4-byte magic at the start, read as text: the bytes of each magic are
 * all non-zero, so a PTX string shorter than 4 bytes is not read past. */
static bool text_magic(struct text *t, uint32_t magic)
{
	for (unsigned i = 0; i < 4; i++)
		if (text_at(t, i) != (int)((magic >> (8 * i)) & 0xff))
			return false;
	return true;
}

/* The order archs are listed in: SASS before PTX, each by arch, plain before
 * 'a' before 'f'; the same whatever order the image has them in. */
static int arch_order(const struct gg_image_arch *a, const struct gg_image_arch *b)
{
	if (a->ptx != b->ptx)
		return a->ptx ? 1 : -1;
	if (a->sm != b->sm)
		return a->sm < b->sm ? -1 : 1;
	if (a->specific != b->specific)
		return a->specific ? 1 : -1;
	if (a->family != b->family)
		return a->family ? 1 : -1;
	return 0;
}

/* Keep one arch, once, in order; one that does not fit is noted as more. */
static void add_arch(struct gg_image_info *out, unsigned sm, bool ptx, bool specific, bool family)
{
	struct gg_image_arch a = {
		.sm = (uint16_t)sm, .ptx = ptx, .specific = specific, .family = family
	};
	unsigned at = 0;
	int cmp = 1;

	while (at < out->narchs && (cmp = arch_order(&out->archs[at], &a)) < 0)
		at++;
	if (at < out->narchs && cmp == 0)
		return;
	if (out->narchs == GG_IMAGE_ARCHS) {
		out->more = true;
		return;
	}
	memmove(&out->archs[at + 1], &out->archs[at], (out->narchs - at) * sizeof(a));
	out->archs[at] = a;
	out->narchs++;
}

/* Archs are written sm_XY: anything outside two or three digits is not one. */
static bool sm_plausible(uint64_t sm)
{
	return sm >= 10 && sm <= 999;
}

static int read_fatbin(struct src *s, struct gg_image_info *out)
{
	unsigned char h[FATBIN_HEADER];
	uint64_t header_size, fat_size, end;
	int rc = src_read(s, 0, h, sizeof(h));

	if (rc)
		return rc;
	if (ld32(h) != FATBIN_MAGIC || ld16(h + 4) != 1)
		return -EINVAL;
	header_size = ld16(h + 6);
	fat_size = ld64(h + 8);
	if (header_size < FATBIN_HEADER || header_size > s->size || fat_size > s->size - header_size)
		return -EINVAL;
	end = header_size + fat_size;
	/* From here on the container bounds every read, also when the image's
	 * extent was unknown. */
	s->size = end;
	out->kind = GG_IMAGE_FATBIN;
	for (uint64_t off = header_size; off < end;) {
		unsigned char e[FATBIN_ENTRY];
		uint64_t entry_size, payload_size, flags;
		unsigned kind;
		uint32_t arch;

		rc = src_read(s, off, e, sizeof(e));
		if (rc)
			return rc;
		kind = ld16(e);
		entry_size = ld32(e + 4);
		payload_size = ld64(e + 8);
		arch = ld32(e + 28);
		flags = ld64(e + 40);
		if (entry_size < FATBIN_ENTRY || entry_size > end - off ||
		    payload_size > end - off - entry_size)
			return -EINVAL;
		/* Other kinds (LTO IR) are nothing the driver runs as it stands. */
		if (kind == FATBIN_KIND_PTX || kind == FATBIN_KIND_ELF) {
			if (!sm_plausible(arch))
				return -EINVAL;
			add_arch(out, arch, kind == FATBIN_KIND_PTX, flags & FATBIN_FLAG_SPECIFIC,
				 flags & FATBIN_FLAG_FAMILY);
		}
		off += entry_size + payload_size;
	}
	return 0;
}

static int read_wrapper(const struct src *s, struct gg_image_info *out)
{
	unsigned char w[8 + sizeof(void *)];
	uintptr_t data;
	struct src fat;
	int rc;

	/* A pointer in a file points nowhere. */
	if (!s->mem)
		return -EINVAL;
	rc = src_read(s, 0, w, sizeof(w));
	if (rc)
		return rc;
	memcpy(&data, w + 8, sizeof(data));
	if (!data)
		return -EINVAL;
	/* The fatbin's extent is its own header's to say: read it safely. */
	fat = (struct src){ .mem = (const unsigned char *)data,
			    .safe = true,
			    .pid = getpid(),
			    .size = (uint64_t)(UINTPTR_MAX - data) + 1 };
	return read_fatbin(&fat, out);
}

/* Whether the .nv.compat section marks the cubin's arch as an 'a' one. */
static int compat_specific(const struct src *s, const unsigned char *h, bool *specific)
{
	unsigned char sh[16 * ELF_SHDR];
	uint64_t shoff = ld64(h + 0x28);
	unsigned shentsize = ld16(h + 0x3a), shnum = ld16(h + 0x3c);

	/* shnum 0 with sections is the form for 65280 and more: such a cubin
	 * is read as having no .nv.compat. */
	if (shnum == 0)
		return 0;
	if (shentsize != ELF_SHDR || shoff > s->size || (uint64_t)shnum * ELF_SHDR > s->size - shoff)
		return -EINVAL;
	/* The section headers in batches: few reads even for cubins of
	 * thousands of kernels' sections. */
	for (unsigned i = 0; i < shnum;) {
		unsigned batch = shnum - i < 16 ? shnum - i : 16;
		int rc = src_read(s, shoff + (uint64_t)i * ELF_SHDR, sh, (size_t)batch * ELF_SHDR);

		if (rc)
			return rc;
		for (unsigned j = 0; j < batch; j++) {
			const unsigned char *p = sh + (size_t)j * ELF_SHDR;
			uint64_t off = ld64(p + 0x18), size = ld64(p + 0x20);
			unsigned char rec[64];
			size_t n;

			if (ld32(p + 4) != SHT_CUDA_COMPAT)
				continue;
			if (off > s->size || size > s->size - off)
				return -EINVAL;
			/* ptxas writes the attribute first: a short prefix will do. */
			n = size < sizeof(rec) ? (size_t)size : sizeof(rec);
			rc = src_read(s, off, rec, n);
			if (rc)
				return rc;
			for (size_t r = 0; r + 4 <= n;) {
				unsigned format = rec[r], attr = rec[r + 1];

				if (format == 2 && attr == COMPAT_ATTR_SPECIFIC) {
					*specific = ld16(rec + r + 2) != 0;
					return 0;
				}
				if (format >= 1 && format <= 3)
					r += 4;
				else if (format == 4)
					r += 4 + (size_t)ld16(rec + r + 2);
				else
					break;
			}
			return 0;
		}
		i += batch;
	}
	return 0;
}

static int read_cubin(const struct src *s, struct gg_image_info *out)
{
	unsigned char h[ELF_HEADER];
	unsigned abi, sm;
	uint32_t flags;
	bool specific;
	int rc = src_read(s, 0, h, sizeof(h));

	if (rc)
		return rc;
	/* CUDA has written 64-bit little-endian cubins only since CUDA 12. */
	if (h[4] != 2 /* ELFCLASS64 */ || h[5] != 1 /* ELFDATA2LSB */ ||
	    ld16(h + 18) != EM_CUDA_MACHINE)
		return -EINVAL;
	abi = h[8];
	flags = ld32(h + 48);
	if (abi >= CUDA_ABI_SM_HIGH) {
		sm = (flags >> 8) & 0xff;
		specific = flags & 0x8;
	} else {
		sm = flags & 0xff;
		specific = flags & 0x800;
	}
	if (!sm_plausible(sm))
		return -EINVAL;
	if (abi >= CUDA_ABI_SM_HIGH && !specific) {
		rc = compat_specific(s, h, &specific);
		if (rc)
			return rc;
	}
	out->kind = GG_IMAGE_CUBIN;
	add_arch(out, sm, false, specific, false);
	return 0;
}

/* sm_XY, sm_XYa or sm_XYf, the whole of @name. */
static bool parse_target(const char *name, unsigned *sm, bool *specific, bool *family)
{
	unsigned v = 0, digits = 0;
	const char *p = name + 3;

	if (strncmp(name, "sm_", 3) != 0)
		return false;
	for (; *p >= '0' && *p <= '9' && digits < 4; p++, digits++)
		v = v * 10 + (unsigned)(*p - '0');
	*specific = *p == 'a';
	*family = *p == 'f';
	if (*specific || *family)
		p++;
	*sm = v;
	return *p == '\0' && sm_plausible(v);
}

static int read_ptx(struct text *t, struct gg_image_info *out)
{
	uint64_t off = text_skip(t, 0);

	if (!text_is(t, off, ".version") || !is_blank(text_at(t, off + 8)))
		return t->err ? t->err : -EINVAL;
	off = text_skip(t, off + 8);
	while (text_at(t, off) >= '0' && text_at(t, off) <= '9')
		off++;
	if (text_at(t, off) == '.')
		off++;
	while (text_at(t, off) >= '0' && text_at(t, off) <= '9')
		off++;
	off = text_skip(t, off);
	if (!text_is(t, off, ".target") || !is_blank(text_at(t, off + 7)))
		return t->err ? t->err : -EINVAL;
	off += 7;
	/* A comma-separated list: the SM, and options (debug, texmode_unified). */
	for (;;) {
		char name[16];
		size_t n = 0;
		unsigned sm;
		bool specific, family;
		int c;

		off = text_skip(t, off);
		while (is_ident(c = text_at(t, off))) {
			if (n + 1 < sizeof(name))
				name[n] = (char)c;
			n++;
			off++;
		}
		if (n < sizeof(name)) {
			name[n] = '\0';
			if (parse_target(name, &sm, &specific, &family)) {
				out->kind = GG_IMAGE_PTX;
				add_arch(out, sm, true, specific, family);
				return 0;
			}
		}
		off = text_skip(t, off);
		if (n == 0 || text_at(t, off) != ',')
			return t->err ? t->err : -EINVAL;
		off++;
	}
}

static int read_image(struct src *s, struct gg_image_info *out)
{
	struct text t = { .s = s };

	if (text_magic(&t, FATBIN_MAGIC))
		return read_fatbin(s, out);
	if (text_magic(&t, FATBIN_WRAPPER_MAGIC))
		return read_wrapper(s, out);
	if (text_magic(&t, 0x464c457fu)) /* "\x7fELF" */
		return read_cubin(s, out);
	if (t.err)
		return t.err;
	return read_ptx(&t, out);
}

static int finish(int rc, struct gg_image_info *out, int saved_errno)
{
	if (rc)
		memset(out, 0, sizeof(*out));
	/* The host's errno is its own: a hook must not change it. */
	errno = saved_errno;
	return rc;
}

int gg_image_read(const void *image, size_t size, struct gg_image_info *out)
{
	int saved_errno = errno;
	struct src s = { .mem = image, .fd = -1, .safe = size == SIZE_MAX, .size = size };

	memset(out, 0, sizeof(*out));
	if (!image)
		return finish(-EINVAL, out, saved_errno);
	/* Unknown extent: as far as the address space goes, every byte read safely. */
	if (s.safe) {
		s.size = (uint64_t)(UINTPTR_MAX - (uintptr_t)image) + 1;
		s.pid = getpid();
	}
	return finish(read_image(&s, out), out, saved_errno);
}

int gg_image_read_file(const char *path, struct gg_image_info *out)
{
	int saved_errno = errno;
	struct src s = { .fd = -1 };
	struct stat st;
	int rc;

	memset(out, 0, sizeof(*out));
	/* O_NONBLOCK: a FIFO must not hang the load; only regular files are read. */
	s.fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (s.fd < 0)
		return finish(-errno, out, saved_errno);
	if (fstat(s.fd, &st) != 0)
		rc = -errno;
	else if (!S_ISREG(st.st_mode))
		rc = -EINVAL;
	else {
		s.size = (uint64_t)st.st_size;
		rc = read_image(&s, out);
	}
	close(s.fd);
	return finish(rc, out, saved_errno);
}

/* ---- the bytes of an image in memory, for its name ---- */

/* Bytes copied at a time for a name's hash: a few pages per system call
 * (one a page would cost half as much again as the hash itself). */
#define WALK_CHUNK (4 * SAFE_PAGE)

/* Where process_vm_readv is refused (Docker's default seccomp profile
 * without CAP_SYS_PTRACE), the kernel still copies what write(2) is given,
 * and an unreadable page is EFAULT there too: a page at a time into an empty
 * non-blocking pipe (a write of up to a page fits whole, or fails whole),
 * then back out. */
struct walker {
	pid_t pid;
	int fds[2]; /* the pipe, once process_vm_readv was refused; -1 before */
	void (*fn)(void *ctx, const void *bytes, size_t n);
	void *ctx;
};

static ssize_t pipe_copy(struct walker *w, uintptr_t from, void *to, size_t n)
{
	ssize_t put = write(w->fds[1], (const void *)from, n), got;

	if (put <= 0)
		return put < 0 && errno != EFAULT ? -EPERM : -EFAULT;
	got = read(w->fds[0], to, (size_t)put);
	return got == put ? got : -EPERM;
}

/* Up to @n bytes at @from: how many, fewer where an unreadable page starts;
 * -EFAULT when the first cannot be read, -EPERM when none can be safely. */
static ssize_t walker_copy(struct walker *w, uintptr_t from, void *to, size_t n)
{
	size_t done = 0;
	ssize_t got = -EFAULT;

	while (done < n) {
		uintptr_t at = from + done;
		size_t want = n - done, room = SAFE_PAGE - (size_t)(at % SAFE_PAGE);

		if (at < from) /* past the end of the address space */
			break;
		if (w->fds[0] < 0) {
			got = safe_copy(w->pid, at, (unsigned char *)to + done, want);
			/* The kernel may fail a copy that starts well, at an unreadable
			 * page further on: then the rest of this page alone. */
			if (got == -EFAULT && want > room)
				got = safe_copy(w->pid, at, (unsigned char *)to + done, room);
			if (got == -EPERM && !pipe2(w->fds, O_CLOEXEC | O_NONBLOCK))
				continue;
		} else {
			got = pipe_copy(w, at, (unsigned char *)to + done, want < room ? want : room);
		}
		if (got <= 0)
			break;
		done += (size_t)got;
	}
	return done ? (ssize_t)done : got < 0 ? got : -EFAULT;
}

/* Hand over the @len bytes at @from (@text: up to the first NUL, which is
 * not handed over). 0, -EFAULT, -EPERM. */
static int walk(struct walker *w, uintptr_t from, uint64_t len, bool text)
{
	unsigned char buf[WALK_CHUNK];

	while (len) {
		size_t n = len < sizeof(buf) ? (size_t)len : sizeof(buf);
		ssize_t got = walker_copy(w, from, buf, n);
		const unsigned char *nul;

		if (got < 0)
			return (int)got;
		if (text && (nul = memchr(buf, 0, (size_t)got))) {
			w->fn(w->ctx, buf, (size_t)(nul - buf));
			return 0;
		}
		w->fn(w->ctx, buf, (size_t)got);
		if ((size_t)got < n) /* the memory ends before the image does */
			return -EFAULT;
		from += (uintptr_t)got;
		if (!text)
			len -= (uint64_t)got;
	}
	return 0;
}

/* @a + @b, or UINT64_MAX where that overflows: as far as anything reaches. */
static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* What an ELF image holds, from its 64-byte header: a table counts only if
 * it has entries (an empty one's offset points at nothing that is read). */
static uint64_t elf_extent(const unsigned char *h)
{
	uint64_t end = ELF_HEADER;
	uint64_t phoff = ld64(h + 0x20), shoff = ld64(h + 0x28);
	unsigned phentsize = ld16(h + 0x36), phnum = ld16(h + 0x38);
	unsigned shentsize = ld16(h + 0x3a), shnum = ld16(h + 0x3c);
	uint64_t ph_end = add_sat(phoff, (uint64_t)phentsize * phnum);
	uint64_t sh_end = add_sat(shoff, (uint64_t)shentsize * shnum);

	if (phnum && phentsize && ph_end > end)
		end = ph_end;
	if (shnum && shentsize && sh_end > end)
		end = sh_end;
	return end;
}

static int walk_image(struct walker *w, uintptr_t at)
{
	unsigned char h[ELF_HEADER];
	/* The headers at once: as many of their bytes as there are. */
	ssize_t got = walker_copy(w, at, h, sizeof(h));
	uint32_t magic = 0;

	if (got < 0)
		return (int)got;
	/* A text shorter than a magic ends at its NUL. */
	if (got >= 4 && memchr(h, 0, 4) == NULL)
		magic = ld32(h);
	if (magic == FATBIN_WRAPPER_MAGIC) {
		uintptr_t data;

		if (got < 8 + (ssize_t)sizeof(data))
			return -EFAULT;
		memcpy(&data, h + 8, sizeof(data));
		at = data;
		got = walker_copy(w, at, h, FATBIN_HEADER);
		if (got < 0)
			return (int)got;
		magic = got >= 4 ? ld32(h) : 0;
		if (magic != FATBIN_MAGIC)
			return -EINVAL; /* the driver takes no such wrapper */
	}
	if (magic == FATBIN_MAGIC)
		return got < FATBIN_HEADER ? -EFAULT
					   : walk(w, at, add_sat(ld16(h + 6), ld64(h + 8)), false);
	/* An ELF of 64 bits, its header whole; else text (a 32-bit ELF too:
	 * the driver takes none). */
	if (magic == 0x464c457fu && got > 4 && h[4] == 2)
		return got < ELF_HEADER ? -EFAULT : walk(w, at, elf_extent(h), false);
	return walk(w, at, UINT64_MAX, true);
}

int gg_image_bytes(const void *image, void (*fn)(void *ctx, const void *bytes, size_t n), void *ctx)
{
	int saved_errno = errno;
	struct walker w = { .pid = getpid(), .fds = { -1, -1 }, .fn = fn, .ctx = ctx };
	int rc = image ? walk_image(&w, (uintptr_t)image) : -EFAULT;

	if (w.fds[0] >= 0) {
		close(w.fds[0]);
		close(w.fds[1]);
	}
	errno = saved_errno; /* the host's errno is its own */
	return rc;
}

static bool arch_runs_on(const struct gg_image_arch *a, unsigned cc)
{
	/* 'a' code, SASS or PTX, uses features of exactly its own GPU. */
	if (a->specific)
		return a->sm == cc;
	/* SASS, and 'f' PTX, run within their major at a minor not above the device's. */
	if (!a->ptx || a->family)
		return a->sm / 10 == cc / 10 && a->sm % 10 <= cc % 10;
	/* PTX is compiled by the driver for any device not older than it. */
	return a->sm <= cc;
}

bool gg_image_runs_on(const struct gg_image_info *info, unsigned cc)
{
	for (unsigned i = 0; i < info->narchs && i < GG_IMAGE_ARCHS; i++)
		if (arch_runs_on(&info->archs[i], cc))
			return true;
	/* What did not fit may run: a WARN must not be a guess. */
	return info->more;
}

size_t gg_image_archs_text(const struct gg_image_info *info, char *buf, size_t cap)
{
	/* Each name is at most "compute_999f" (12) plus ", ": the whole text fits. */
	char all[GG_IMAGE_ARCHS * 14 + sizeof("none, ...")];
	size_t ends[GG_IMAGE_ARCHS]; /* where each arch's name ends in @all */
	size_t len = 0, n = 0, keep;

	if (!cap)
		return 0;
	for (; n < info->narchs && n < GG_IMAGE_ARCHS; n++) {
		const struct gg_image_arch *a = &info->archs[n];
		int w = snprintf(all + len, sizeof(all) - len, "%s%s_%u%s", n ? ", " : "",
				 a->ptx ? "compute" : "sm", (unsigned)a->sm,
				 a->specific ? "a"
				 : a->family ? "f"
					     : "");

		if (w < 0 || (size_t)w >= sizeof(all) - len)
			break;
		len += (size_t)w;
		ends[n] = len;
	}
	if (n == 0)
		len = (size_t)snprintf(all, sizeof(all), "none");
	if (info->more)
		len += (size_t)snprintf(all + len, sizeof(all) - len, ", ...");
	if (len < cap) {
		memcpy(buf, all, len + 1);
		return len;
	}
	/* Too long: the archs that fit with ", ..." after them, or what fits of "...". */
	keep = n;
	while (keep > 0 && ends[keep - 1] + sizeof(", ...") > cap)
		keep--;
	if (keep > 0) {
		len = ends[keep - 1];
		memcpy(buf, all, len);
		memcpy(buf + len, ", ...", sizeof(", ..."));
		return len + sizeof(", ...") - 1;
	}
	len = cap - 1 < 3 ? cap - 1 : 3;
	memcpy(buf, "...", len);
	buf[len] = '\0';
	return len;
}
