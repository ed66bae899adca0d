/* Image preflight (docs/how-it-works.md, "The kernel-lookup audit and the gate"): which
 * architectures a CUDA module image carries, and whether any of it can run on
 * the current device, read from the image's headers alone, before the driver is
 * asked to load it. */
#ifndef GG_SHIM_AUDIT_IMAGE_H
#define GG_SHIM_AUDIT_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GG_IMAGE_ARCHS 32

enum gg_image_kind {
	GG_IMAGE_UNKNOWN,
	GG_IMAGE_FATBIN,
	GG_IMAGE_CUBIN,
	GG_IMAGE_PTX
};

/* One piece of code: sm 80 for sm_80 (SASS) or compute_80 (ptx). specific: an
 * 'a' arch (sm_90a), which runs only on exactly its own compute capability;
 * family: an 'f' arch (sm_100f), which runs within its major only. */
struct gg_image_arch {
	uint16_t sm;
	bool ptx;
	bool specific;
	bool family;
};

/* The distinct archs: SASS before PTX, each by arch (sm_80, sm_90,
 * compute_90); more: there were more than fit, which are not listed. */
struct gg_image_info {
	enum gg_image_kind kind;
	unsigned narchs;
	struct gg_image_arch archs[GG_IMAGE_ARCHS];
	bool more;
};

/* Read @image: at most @size bytes. SIZE_MAX means the extent is unknown (as
 * for cuModuleLoadData); every read is then made through process_vm_readv on
 * our own pid, so an unmapped byte is -EFAULT, never a crash, and -EPERM when
 * that call is not permitted. Accepts a fatbin (magic 0xBA55ED50), nvcc's
 * fatbin wrapper (0x466243B1, whose fatbin is read the same safe way), an ELF
 * cubin and PTX text. Returns 0; -EINVAL for an image it does not know or a
 * length that does not fit; -EFAULT; -EPERM. On an error *@out says
 * GG_IMAGE_UNKNOWN with no archs. Allocates nothing. */
int gg_image_read(const void *image, size_t size, struct gg_image_info *out);

/* Read the image in the file @path (cuModuleLoad's), bounded by the file's
 * size, with pread of the headers only. 0; -EINVAL as above, and for what is
 * no regular file or a fatbin wrapper (its pointer means nothing in a file);
 * -EIO when a read fails; open's -errno. */
int gg_image_read_file(const char *path, struct gg_image_info *out);

/* Hand @fn, in order and in pieces, the bytes that make up the image in
 * memory at @image, whose extent is unknown (a name's hash, names.c): nvcc's
 * wrapper is followed to its fatbin, which holds its header's header_size +
 * fat_size bytes; an ELF (64-bit) holds its header and its section and program
 * header tables, each if it has entries; anything else is text, up to its
 * NUL. Every byte is read through a fault-safe copy (process_vm_readv, or
 * where that is refused write(2) into a pipe), so bytes a header claims but
 * the address space does not hold end the walk at the first unreadable one,
 * never with a fault. 0 when every byte claimed was handed over, -EFAULT
 * when the walk ended early, -EINVAL for a wrapper that leads to no fatbin,
 * -EPERM when nothing can be read safely. Allocates nothing; opens a pipe
 * only where process_vm_readv is refused. */
int gg_image_bytes(const void *image, void (*fn)(void *ctx, const void *bytes, size_t n), void *ctx);

/* Whether anything in @info can run on compute capability @cc (major * 10 +
 * minor): SASS of the same major at a minor not above the device's (an 'a'
 * arch only on exactly its own cc); PTX not newer than the device (an 'a' one
 * only on its own cc, an 'f' one within its major). When @info->more, archs
 * that did not fit may run: true unless a listed one settles it. */
bool gg_image_runs_on(const struct gg_image_info *info, unsigned cc);

/* "sm_80, compute_80" into @buf (@cap bytes, NUL-terminated), "none" for no
 * archs, ", ..." after them when @info->more; cut after the last arch that
 * fits and "..." appended when the text does not fit. Returns its length. */
size_t gg_image_archs_text(const struct gg_image_info *info, char *buf, size_t cap);

#endif
