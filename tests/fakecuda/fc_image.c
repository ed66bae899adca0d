/*
 * Module images for the fake driver: find the kernel entries, and where each
 * one's parameters lie, in a PTX text, an ELF cubin or a fatbin container.
 *
 * The fake runs host implementations of kernels chosen by entry name, so all
 * it needs from an image is the list of `.entry` names and their parameter
 * layouts (cuFuncGetParamInfo, a launch's `extra` buffer).  It still rejects
 * what the real driver would reject (wrong magic, truncated containers, PTX
 * newer than the toolkit, code for another GPU) so that a test written
 * against the fake fails the same way it would on a real GPU.
 *
 * Fatbin layout (reverse-engineered, confirmed against `fatbinary` output of
 * CUDA 13): a 16-byte header {u32 magic 0xBA55ED50, u16 version 1, u16
 * header_size, u64 fat_size} followed by fat_size bytes of entries.  Each
 * entry header: u16 kind (1 PTX, 2 ELF) @0, u16 version @2, u32 header_size
 * @4, u64 payload_size @8, u32 compressed_size @16, u32 @20, u16 minor @24,
 * u16 major @26, u32 arch (e.g. 90) @28, u32 name_offset @32, u32 name_len
 * @36, u64 flags @40 (0x2000 LZ4 / 0x8000 zstd compressed payload), u64 @48,
 * u64 uncompressed_size @56; the payload follows at entry + header_size.
 * nvcc's __fatBinC_Wrapper_t {int magic 0x466243b1; int version; const
 * unsigned long long *data; void *filename_or_fatbins;} points to such a
 * container.
 *
 * An image in memory comes with no size (cuModuleLoadData and its kin): its
 * own headers say how far it reaches, and a driver that reads what they say
 * would fault on bytes that are not there. The fake asks the kernel first
 * whether they can be read, and answers CUDA_ERROR_INVALID_IMAGE for an image
 * that claims what the address space does not hold (a header table with no
 * entries claims nothing).
 *
 * Which code runs on the device (compute capability 9.0, FC_SM_VERSION 90):
 * SASS (an ELF cubin, or a fatbin's ELF entry) built for the same major
 * version and a minor version no higher than the device's (sm_90 only, here);
 * PTX for an architecture no newer than the device (.target sm_XY or a
 * fatbin PTX entry's arch, XY <= 90) whose ISA version this driver's JIT
 * reads (.version up to 9.x).  A cubin names its architecture in e_flags: in
 * the low byte under CUDA ELF ABI version 7, in bits 8-15 from version 8 (as
 * LLVM's ELFObjectFileBase::getNVPTXCPUName reads it; ptxas of CUDA 13 writes
 * version 8: sm_80 0x6005004, sm_90 0x6005a04).  An image with none of these
 * is CUDA_ERROR_NO_BINARY_FOR_GPU, at load (fc_image_parse), or, for a lazily
 * loaded library, when a context needs its code (fc_image_parse_deferred).
 *
 * Parameter layouts.  PTX declares them in the .entry's list: each .param is
 * placed at the next multiple of its alignment (its `.align`, else the size
 * of its type), and the buffer ends with the last one, unpadded; ptxas lays
 * them out so.  A cubin holds ptxas's layout in the entry's `.nv.info.<name>`
 * section: records of {u8 format, u8 attribute, ...}, 4 bytes for formats 1
 * to 3, {u16 size; value} for format 4.  Attribute 0x17 (EIATTR_KPARAM_INFO,
 * format 4, 12 bytes) is one parameter: u32 index @0, u16 ordinal @4, u16
 * offset @6, u32 flags @8 whose bits 18-31 are its size.  When the
 * parameters take more than 4352 bytes ptxas writes attribute 0x45 instead,
 * the same but for a plain u32 size @8 (both confirmed against ptxas of
 * CUDA 13).
 */
#include "fc_internal.h"

#include <elf.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef EM_CUDA
#define EM_CUDA 190
#endif

#define FATBIN_MAGIC 0xBA55ED50u
#define FATBIN_WRAPPER_MAGIC 0x466243b1u
#define FATBIN_KIND_PTX 1
#define FATBIN_KIND_ELF 2
#define FATBIN_FLAG_COMPRESS_LZ4 0x2000u
#define FATBIN_FLAG_COMPRESS_ZSTD 0x8000u
#define FATBIN_ENTRY_MIN 64u

/* Little-endian loads from possibly unaligned bytes. */
static uint16_t ld16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint32_t ld32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint64_t ld64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/*
 * Compare the image's first bytes with `magic` one byte at a time, stopping
 * at the first mismatch: the image may be a short NUL-terminated PTX string
 * that must not be read past its end.
 */
static bool starts_with(const unsigned char *p, size_t size, const unsigned char *magic, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (size && i >= size)
            return false;
        if (p[i] != magic[i])
            return false;
    }
    return true;
}

/*
 * Whether the @n bytes at @p can all be read, asked of the kernel: one byte
 * of each page through process_vm_readv, which reports an unmapped or
 * PROT_NONE page instead of faulting on it. Where the call is refused (a
 * seccomp filter) the bytes are taken as there.
 */
static bool readable(const void *p, uint64_t n)
{
    const uintptr_t page = 4096;
    uintptr_t from = (uintptr_t)p, last;
    unsigned char sink[256];
    struct iovec local = { sink, 0 }, remote[256];

    if (!n)
        return true;
    if (n - 1 > UINTPTR_MAX - from)
        return false;
    last = from + (uintptr_t)(n - 1);
    for (uintptr_t at = from; at <= last;) {
        size_t k = 0;
        for (; k < 256; k++) {
            remote[k] = (struct iovec){ (void *)at, 1 };
            uintptr_t next = (at & ~(page - 1)) + page;
            if (next == 0 || next > last) {
                k++;
                at = last + 1;
                break;
            }
            at = next;
        }
        local.iov_len = k;
        ssize_t got = process_vm_readv(getpid(), &local, 1, remote, k, 0);
        if (got < 0 && (errno == EPERM || errno == ENOSYS))
            return true;
        if (got != (ssize_t)k)
            return false;
        if (at == 0) /* the last page of the address space was read */
            break;
    }
    return true;
}

size_t fc_kparams_size(const fc_kparams *p)
{
    return p->count ? (size_t)p->v[p->count - 1].offset + p->v[p->count - 1].size : 0;
}

bool fc_kparams_equal(const fc_kparams *a, const fc_kparams *b)
{
    return a->count == b->count &&
           (a->count == 0 || memcmp(a->v, b->v, a->count * sizeof *a->v) == 0);
}

/* Whether SASS for sm_<sm> runs on the device: same major, minor no higher. */
static bool sass_runs(unsigned int sm)
{
    return sm / 10 == FC_SM_VERSION / 10 && sm % 10 <= FC_SM_VERSION % 10;
}

static void kparams_free(fc_kparams *p)
{
    free((void *)p->v);
    p->v = NULL;
    p->count = 0;
}

/* The index of entry `name` (len bytes), or img->count. */
static size_t find_entry(const fc_image *img, const char *name, size_t len)
{
    size_t i = 0;
    while (i < img->count &&
           !(strlen(img->names[i]) == len && memcmp(img->names[i], name, len) == 0))
        i++;
    return i;
}

/* Add an entry taking `params` (its array is freed when the name is already there). */
static CUresult add_entry(fc_image *img, const char *name, size_t len, fc_kparams params)
{
    if (find_entry(img, name, len) < img->count) {
        kparams_free(&params);
        return CUDA_SUCCESS;
    }
    char **names = realloc(img->names, (img->count + 1) * sizeof *names);
    if (names)
        img->names = names;
    fc_kparams *ps = names ? realloc(img->params, (img->count + 1) * sizeof *ps) : NULL;
    if (ps)
        img->params = ps;
    char *copy = ps ? strndup(name, len) : NULL;
    if (!copy) {
        kparams_free(&params);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    img->names[img->count] = copy;
    img->params[img->count++] = params;
    return CUDA_SUCCESS;
}

CUresult fc_image_merge(fc_image *dst, const fc_image *src)
{
    for (size_t i = 0; i < src->count; i++) {
        fc_kparams p = src->params[i];
        if (p.count) {
            fc_kparam *v = malloc(p.count * sizeof *v);
            if (!v)
                return CUDA_ERROR_OUT_OF_MEMORY;
            memcpy(v, p.v, p.count * sizeof *v);
            p.v = v;
        }
        CUresult rc = add_entry(dst, src->names[i], strlen(src->names[i]), p);
        if (rc != CUDA_SUCCESS)
            return rc;
    }
    if (src->ptx_version > dst->ptx_version)
        dst->ptx_version = src->ptx_version;
    return CUDA_SUCCESS;
}

void fc_image_free(fc_image *img)
{
    for (size_t i = 0; i < img->count; i++) {
        free(img->names[i]);
        kparams_free(&img->params[i]);
    }
    free(img->names);
    free(img->params);
    img->names = NULL;
    img->params = NULL;
    img->count = 0;
}

/* Append {offset, size} to p (its array grown by doubling; cap: its capacity). */
static CUresult kparams_push(fc_kparams *p, unsigned int *cap, uint32_t offset, uint32_t size)
{
    if (p->count == *cap) {
        unsigned int n = *cap ? 2 * *cap : 8;
        fc_kparam *v = realloc((void *)p->v, n * sizeof *v);
        if (!v)
            return CUDA_ERROR_OUT_OF_MEMORY;
        p->v = v;
        *cap = n;
    }
    ((fc_kparam *)p->v)[p->count++] = (fc_kparam){ offset, size };
    return CUDA_SUCCESS;
}

/*
 * Texture, sampler and surface reference parameters (`.texref` and the
 * like, long deprecated) are bound resources outside the parameter buffer;
 * the fake does not model them.  A limit of the fake: it tells so.
 */
static CUresult unsupported_reference_param(void)
{
    static atomic_bool warned;
    if (!atomic_exchange(&warned, true))
        fputs("fakecuda: kernels with .texref/.samplerref/.surfref parameters are not supported\n",
              stderr);
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* ------------------------------------------------------------------------ */
/* PTX                                                                       */
/* ------------------------------------------------------------------------ */

static bool ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '%';
}

static bool ident_char(char c)
{
    return ident_start(c) || (c >= '0' && c <= '9');
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static size_t skip_space(const char *t, size_t len, size_t i)
{
    while (i < len && is_space(t[i]))
        i++;
    return i;
}

static unsigned long read_uint(const char *t, size_t len, size_t *i, bool *ok)
{
    unsigned long v = 0;
    size_t start = *i;
    while (*i < len && t[*i] >= '0' && t[*i] <= '9' && v < 100000)
        v = v * 10 + (unsigned long)(t[(*i)++] - '0');
    *ok = *i > start;
    return v;
}

/* Past the comment at t[i] (i itself when none starts there); *bad when it
 * is an unterminated block comment. */
static size_t skip_comment(const char *t, size_t len, size_t i, bool *bad)
{
    *bad = false;
    if (i + 1 >= len || t[i] != '/')
        return i;
    if (t[i + 1] == '/') {
        while (i < len && t[i] != '\n')
            i++;
    } else if (t[i + 1] == '*') {
        i += 2;
        while (i + 1 < len && !(t[i] == '*' && t[i + 1] == '/'))
            i++;
        if (i + 1 >= len) {
            *bad = true;
            return len;
        }
        i += 2;
    }
    return i;
}

/* Past white space and comments. */
static size_t skip_blank(const char *t, size_t len, size_t i, bool *bad)
{
    for (;;) {
        size_t j = skip_comment(t, len, skip_space(t, len, i), bad);
        if (*bad || j == i)
            return j;
        i = j;
    }
}

/* The size of a type a kernel parameter may have (`u64` for `.u64`), else 0. */
static unsigned int param_type_size(const char *w, size_t n)
{
    static const struct {
        const char *name;
        unsigned int size;
    } types[] = {
        { "b8", 1 },  { "u8", 1 },  { "s8", 1 },  { "b16", 2 },   { "u16", 2 }, { "s16", 2 },
        { "f16", 2 }, { "b32", 4 }, { "u32", 4 }, { "s32", 4 },   { "f32", 4 }, { "b64", 8 },
        { "u64", 8 }, { "s64", 8 }, { "f64", 8 }, { "b128", 16 },
    };
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
        if (strlen(types[k].name) == n && memcmp(types[k].name, w, n) == 0)
            return types[k].size;
    return 0;
}

static bool is_word(const char *w, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(w, word, n) == 0;
}

/*
 * One `.param` of an entry's list, t[*i] just past `.param`: its directives
 * (`.align N`, the type, `.ptr` with the pointee's state space and
 * alignment), its name and an optional `[N]`; placed after *end.
 */
static CUresult parse_param(const char *t, size_t len, size_t *i, uint64_t *end, fc_kparams *out,
                            unsigned int *cap)
{
    uint64_t align = 0, elem = 0, count = 1;
    bool after_ptr = false, bad, ok;
    for (;;) {
        *i = skip_blank(t, len, *i, &bad);
        if (bad || *i >= len)
            return CUDA_ERROR_INVALID_PTX;
        if (t[*i] != '.')
            break;
        size_t w = *i + 1, n = w;
        while (n < len && ident_char(t[n]))
            n++;
        *i = n;
        if (is_word(t + w, n - w, "align")) {
            *i = skip_blank(t, len, *i, &bad);
            unsigned long a = read_uint(t, len, i, &ok);
            if (bad || !ok || a == 0 || (a & (a - 1)))
                return CUDA_ERROR_INVALID_PTX;
            if (!after_ptr) /* `.ptr ... .align N` is the pointee's */
                align = a;
        } else if (is_word(t + w, n - w, "ptr")) {
            after_ptr = true;
        } else if (after_ptr &&
                   (is_word(t + w, n - w, "global") || is_word(t + w, n - w, "const") ||
                    is_word(t + w, n - w, "local") || is_word(t + w, n - w, "shared"))) {
            continue;
        } else if (is_word(t + w, n - w, "texref") || is_word(t + w, n - w, "samplerref") ||
                   is_word(t + w, n - w, "surfref")) {
            return unsupported_reference_param();
        } else if (!elem && (elem = param_type_size(t + w, n - w)) != 0) {
            continue;
        } else {
            return CUDA_ERROR_INVALID_PTX;
        }
    }
    if (!elem || !ident_start(t[*i]))
        return CUDA_ERROR_INVALID_PTX;
    while (*i < len && ident_char(t[*i]))
        (*i)++;
    *i = skip_blank(t, len, *i, &bad);
    if (!bad && *i < len && t[*i] == '[') { /* one dimension: ptxas takes no more */
        *i = skip_blank(t, len, *i + 1, &bad);
        count = read_uint(t, len, i, &ok);
        if (bad || !ok || count == 0) /* "cannot be an incomplete array" */
            return CUDA_ERROR_INVALID_PTX;
        *i = skip_blank(t, len, *i, &bad);
        if (bad || *i >= len || t[*i] != ']')
            return CUDA_ERROR_INVALID_PTX;
        (*i)++;
    }
    if (!align)
        align = elem;
    uint64_t offset = (*end + align - 1) / align * align;
    *end = offset + elem * count;
    if (*end > UINT32_MAX)
        return CUDA_ERROR_INVALID_PTX;
    return kparams_push(out, cap, (uint32_t)offset, (uint32_t)(elem * count));
}

/*
 * The parameter list of an entry, t[*i] just past its name: none when no
 * `(` follows.  The parameter space is 4352 bytes below PTX ISA 8.1 and
 * 32764 from it (what ptxas allows an sm_90 entry); more does not compile.
 */
static CUresult parse_params(const char *t, size_t len, size_t *i, unsigned int ptx_version,
                             fc_kparams *out)
{
    unsigned int cap = 0;
    uint64_t end = 0;
    bool bad;
    CUresult rc = CUDA_SUCCESS;
    *out = (fc_kparams){ NULL, 0, true };
    size_t j = skip_blank(t, len, *i, &bad);
    if (bad)
        return CUDA_ERROR_INVALID_PTX;
    if (j >= len || t[j] != '(')
        return CUDA_SUCCESS;
    *i = j + 1;
    for (;;) {
        *i = skip_blank(t, len, *i, &bad);
        if (bad || *i >= len) {
            rc = CUDA_ERROR_INVALID_PTX;
            break;
        }
        if (t[*i] == ')' && out->count == 0) {
            (*i)++;
            break;
        }
        if (len - *i < 6 || memcmp(t + *i, ".param", 6) != 0 ||
            (*i + 6 < len && ident_char(t[*i + 6]))) {
            rc = CUDA_ERROR_INVALID_PTX;
            break;
        }
        *i += 6;
        rc = parse_param(t, len, i, &end, out, &cap);
        if (rc != CUDA_SUCCESS)
            break;
        *i = skip_blank(t, len, *i, &bad);
        if (bad || *i >= len || (t[*i] != ',' && t[*i] != ')')) {
            rc = CUDA_ERROR_INVALID_PTX;
            break;
        }
        if (t[(*i)++] == ')')
            break;
    }
    if (rc == CUDA_SUCCESS && end > (ptx_version >= 81 ? 32764u : 4352u))
        rc = CUDA_ERROR_INVALID_PTX; /* "uses too much parameter space" */
    if (rc != CUDA_SUCCESS)
        kparams_free(out);
    return rc;
}

/*
 * A PTX module: find `.version`, `.target` and every `.entry NAME` outside
 * comments and strings.  The fake cannot JIT, so it checks only what makes
 * the real JIT fail for reasons a test could hit: no `.version`/`.target`
 * (not PTX at all), an ISA newer than the toolkit, or (check_target) a
 * target newer than the device.
 */
static CUresult parse_ptx(const char *t, size_t len, fc_image *img, bool check_target)
{
    bool have_version = false, have_target = false;
    size_t i = 0;

    if (len == 0)
        return CUDA_ERROR_INVALID_IMAGE;
    for (size_t k = 0; k < len; k++) {
        unsigned char c = (unsigned char)t[k];
        if (c < 0x20 && !is_space((char)c))
            return CUDA_ERROR_INVALID_IMAGE; /* binary data, not text */
    }

    while (i < len) {
        char c = t[i];
        bool bad;
        size_t past = skip_comment(t, len, i, &bad);
        if (bad)
            return CUDA_ERROR_INVALID_PTX; /* unterminated comment */
        if (past != i) {
            i = past;
        } else if (c == '"') {
            i++;
            while (i < len && t[i] != '"' && t[i] != '\n')
                i++;
            i++;
        } else if (c == '.' && i + 1 < len && ident_start(t[i + 1]) &&
                   (i == 0 || !ident_char(t[i - 1]))) {
            size_t w = i + 1;
            while (w < len && ident_char(t[w]))
                w++;
            size_t wlen = w - i;
            const char *word = t + i;
            i = w;
            if (wlen == 8 && memcmp(word, ".version", 8) == 0) {
                bool ok;
                i = skip_space(t, len, i);
                unsigned long major = read_uint(t, len, &i, &ok), minor = 0;
                if (!ok)
                    return CUDA_ERROR_INVALID_PTX;
                if (major > FC_PTX_ISA_MAJOR_MAX)
                    return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
                if (i < len && t[i] == '.') {
                    i++;
                    minor = read_uint(t, len, &i, &ok);
                    if (!ok || minor > 9)
                        return CUDA_ERROR_INVALID_PTX;
                }
                img->ptx_version = (unsigned int)(major * 10 + minor);
                have_version = true;
            } else if (wlen == 7 && memcmp(word, ".target", 7) == 0) {
                bool ok;
                i = skip_space(t, len, i);
                if (i + 3 <= len && memcmp(t + i, "sm_", 3) == 0)
                    i += 3;
                else if (i + 8 <= len && memcmp(t + i, "compute_", 8) == 0)
                    i += 8;
                else
                    return CUDA_ERROR_INVALID_PTX;
                unsigned long sm = read_uint(t, len, &i, &ok);
                if (!ok)
                    return CUDA_ERROR_INVALID_PTX;
                if (check_target && sm > FC_SM_VERSION)
                    return CUDA_ERROR_INVALID_PTX; /* JIT cannot target a newer GPU */
                have_target = true;
            } else if (wlen == 6 && memcmp(word, ".entry", 6) == 0) {
                i = skip_space(t, len, i);
                size_t n = i;
                if (n >= len || !ident_start(t[n]))
                    return CUDA_ERROR_INVALID_PTX;
                while (n < len && ident_char(t[n]))
                    n++;
                size_t name = i;
                fc_kparams params;
                i = n;
                CUresult rc = parse_params(t, len, &i, img->ptx_version, &params);
                if (rc == CUDA_SUCCESS)
                    rc = add_entry(img, t + name, n - name, params);
                if (rc != CUDA_SUCCESS)
                    return rc;
            }
        } else {
            i++;
        }
    }
    if (!have_version || !have_target)
        return CUDA_ERROR_INVALID_PTX;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* ELF cubin                                                                 */
/* ------------------------------------------------------------------------ */

/*
 * The extent of an ELF image whose size the caller does not know: the end of
 * the section or program header table, whichever is later (ptxas puts the
 * program headers last), each only if it has entries; UINT64_MAX when that
 * passes the end of the address space.
 */
static uint64_t elf_extent(const unsigned char *p)
{
    Elf64_Ehdr eh;
    memcpy(&eh, p, sizeof eh);
    uint64_t end = sizeof eh;
    uint64_t sh_size = (uint64_t)eh.e_shnum * eh.e_shentsize;
    uint64_t ph_size = (uint64_t)eh.e_phnum * eh.e_phentsize;
    if (sh_size && (eh.e_shoff > UINT64_MAX - sh_size || eh.e_shoff + sh_size > end))
        end = eh.e_shoff > UINT64_MAX - sh_size ? UINT64_MAX : eh.e_shoff + sh_size;
    if (ph_size && (eh.e_phoff > UINT64_MAX - ph_size || eh.e_phoff + ph_size > end))
        end = eh.e_phoff > UINT64_MAX - ph_size ? UINT64_MAX : eh.e_phoff + ph_size;
    return end;
}

#define NVINFO_KPARAM_INFO 0x17
#define NVINFO_KPARAM_INFO_LARGE 0x45
#define NVINFO_KPARAM_LARGE_ABOVE 4352 /* parameter bytes */
#define NVINFO_FORMAT_SIZED 4
#define NVINFO_KPARAM_RECORD 16 /* bytes, its 4-byte header included */

/*
 * The parameters an entry's .nv.info section records (see the top of this
 * file): declared when there is a record for every ordinal up to the
 * highest one (none: no parameters); left undeclared when the records are
 * not what ptxas writes.  A record of size 0 is a texture or surface
 * reference.
 */
static CUresult parse_nvinfo(const unsigned char *b, size_t n, fc_kparams *out)
{
    fc_kparam *v = NULL;
    unsigned int count = 0;
    size_t at = 0;
    while (at + 4 <= n) {
        unsigned int format = b[at], attr = b[at + 1];
        size_t rec = 4;
        if (format == NVINFO_FORMAT_SIZED)
            rec += ld16(b + at + 2);
        else if (format < 1 || format > 3)
            break;
        if (rec > n - at)
            break;
        if (format == NVINFO_FORMAT_SIZED &&
            (attr == NVINFO_KPARAM_INFO || attr == NVINFO_KPARAM_INFO_LARGE) &&
            rec == NVINFO_KPARAM_RECORD) {
            unsigned int ordinal = ld16(b + at + 8);
            uint32_t word = ld32(b + at + 12);
            fc_kparam p = { ld16(b + at + 10), attr == NVINFO_KPARAM_INFO ? word >> 18 : word };
            if (p.size == 0) {
                free(v);
                return unsupported_reference_param();
            }
            if (ordinal >= count) {
                fc_kparam *grown = realloc(v, (ordinal + 1) * sizeof *grown);
                if (!grown) {
                    free(v);
                    return CUDA_ERROR_OUT_OF_MEMORY;
                }
                memset(grown + count, 0, (ordinal + 1 - count) * sizeof *grown);
                v = grown;
                count = ordinal + 1;
            }
            v[ordinal] = p;
        }
        at += rec;
    }
    bool complete = at == n;
    for (unsigned int k = 0; k < count && complete; k++)
        complete = v[k].size != 0;
    if (!complete) {
        free(v);
        return CUDA_SUCCESS; /* left undeclared */
    }
    *out = (fc_kparams){ v, count, true };
    return CUDA_SUCCESS;
}

#define ELFABIVERSION_CUDA_V1 7 /* the architecture in e_flags' low byte; later, bits 8-15 */

/* The sm version a cubin was built for (see the top of this file). */
static unsigned int elf_sm(const Elf64_Ehdr *eh)
{
    return eh->e_ident[EI_ABIVERSION] == ELFABIVERSION_CUDA_V1 ? eh->e_flags & 0xff
                                                               : (eh->e_flags >> 8) & 0xff;
}

/*
 * A cubin: each kernel lives in a section named ".text.<kernel>", and its
 * parameters are recorded in ".nv.info.<kernel>".  One built for another
 * GPU is CUDA_ERROR_NO_BINARY_FOR_GPU, unless `defer`: then its entries are
 * read all the same and the image is marked no_binary.
 */
static CUresult parse_elf(const unsigned char *p, size_t size, fc_image *img, bool defer)
{
    Elf64_Ehdr eh;

    if (size < sizeof eh)
        return CUDA_ERROR_INVALID_IMAGE;
    memcpy(&eh, p, sizeof eh);
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
        eh.e_machine != EM_CUDA)
        return CUDA_ERROR_INVALID_IMAGE;
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shstrndx >= eh.e_shnum)
        return CUDA_ERROR_INVALID_IMAGE;
    if (eh.e_shoff > size || (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) > size - eh.e_shoff)
        return CUDA_ERROR_INVALID_IMAGE;
    if (!sass_runs(elf_sm(&eh))) {
        if (!defer)
            return CUDA_ERROR_NO_BINARY_FOR_GPU;
        img->no_binary = true;
    }

    Elf64_Shdr strsec;
    memcpy(&strsec, p + eh.e_shoff + (size_t)eh.e_shstrndx * sizeof(Elf64_Shdr), sizeof strsec);
    if (strsec.sh_offset > size || strsec.sh_size > size - strsec.sh_offset)
        return CUDA_ERROR_INVALID_IMAGE;
    const char *strtab = (const char *)p + strsec.sh_offset;

    for (size_t s = 0; s < eh.e_shnum; s++) {
        Elf64_Shdr sh;
        memcpy(&sh, p + eh.e_shoff + s * sizeof(Elf64_Shdr), sizeof sh);
        if (sh.sh_name >= strsec.sh_size)
            return CUDA_ERROR_INVALID_IMAGE;
        const char *name = strtab + sh.sh_name;
        size_t maxlen = strsec.sh_size - sh.sh_name;
        size_t nlen = strnlen(name, maxlen);
        if (nlen == maxlen)
            return CUDA_ERROR_INVALID_IMAGE; /* unterminated name */
        if (nlen > 6 && memcmp(name, ".text.", 6) == 0) {
            CUresult rc = add_entry(img, name + 6, nlen - 6, (fc_kparams){ NULL, 0, false });
            if (rc != CUDA_SUCCESS)
                return rc;
        }
    }
    /* Section names were all checked above. */
    for (size_t s = 0; s < eh.e_shnum; s++) {
        Elf64_Shdr sh;
        memcpy(&sh, p + eh.e_shoff + s * sizeof(Elf64_Shdr), sizeof sh);
        const char *name = strtab + sh.sh_name;
        size_t nlen = strlen(name);
        if (nlen <= 9 || memcmp(name, ".nv.info.", 9) != 0)
            continue;
        size_t e = find_entry(img, name + 9, nlen - 9);
        if (e == img->count || img->params[e].declared)
            continue;
        if (sh.sh_type == SHT_NOBITS || sh.sh_offset > size || sh.sh_size > size - sh.sh_offset)
            return CUDA_ERROR_INVALID_IMAGE;
        CUresult rc = parse_nvinfo(p + sh.sh_offset, (size_t)sh.sh_size, &img->params[e]);
        if (rc != CUDA_SUCCESS)
            return rc;
    }
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* fatbin                                                                    */
/* ------------------------------------------------------------------------ */

/*
 * A fatbin: the code the device runs (sass_runs ELF first, else the newest
 * PTX for an architecture no newer than the device's).  With none, `defer`
 * reads the entries of the first other code it holds and marks the image
 * no_binary.
 */
static CUresult parse_fatbin(const unsigned char *p, size_t size, fc_image *img, bool defer)
{
    static atomic_bool warned_compressed, warned_deferred;

    if ((size && size < 16) || (!size && !readable(p, 16)))
        return CUDA_ERROR_INVALID_IMAGE;
    uint16_t version = ld16(p + 4);
    uint16_t hdr = ld16(p + 6);
    uint64_t fat = ld64(p + 8);
    if (version != 1 || hdr < 16 || fat > ((uint64_t)1 << 40))
        return CUDA_ERROR_INVALID_IMAGE;
    uint64_t total = hdr + fat;
    if ((size && total > size) || (!size && !readable(p, total)))
        return CUDA_ERROR_INVALID_IMAGE;

    const unsigned char *best_elf = NULL, *best_ptx = NULL, *other = NULL;
    uint64_t best_elf_len = 0, best_ptx_len = 0, other_len = 0;
    uint32_t best_ptx_arch = 0;
    uint16_t other_kind = 0;
    bool skipped_compressed = false, other_compressed = false;

    for (uint64_t off = hdr; off < total;) {
        if (total - off < FATBIN_ENTRY_MIN)
            return CUDA_ERROR_INVALID_IMAGE;
        const unsigned char *e = p + off;
        uint16_t kind = ld16(e);
        uint32_t ehdr = ld32(e + 4);
        uint64_t payload = ld64(e + 8);
        uint32_t arch = ld32(e + 28);
        uint64_t flags = ld64(e + 40);
        if (ehdr < FATBIN_ENTRY_MIN || ehdr > total - off || payload > total - off - ehdr)
            return CUDA_ERROR_INVALID_IMAGE;
        const unsigned char *data = e + ehdr;
        bool compressed = (flags & (FATBIN_FLAG_COMPRESS_LZ4 | FATBIN_FLAG_COMPRESS_ZSTD)) != 0;

        if (kind == FATBIN_KIND_ELF && sass_runs(arch)) {
            if (compressed)
                skipped_compressed = true;
            else if (!best_elf) {
                best_elf = data;
                best_elf_len = payload;
            }
        } else if (kind == FATBIN_KIND_PTX && arch <= FC_SM_VERSION) {
            /* PTX is JIT-compiled for any newer GPU; prefer the newest. */
            if (compressed)
                skipped_compressed = true;
            else if (!best_ptx || arch > best_ptx_arch) {
                best_ptx = data;
                best_ptx_len = payload;
                best_ptx_arch = arch;
            }
        } else if (kind == FATBIN_KIND_ELF || kind == FATBIN_KIND_PTX) {
            /* Code for another GPU. */
            if (compressed)
                other_compressed = true;
            else if (!other) {
                other = data;
                other_len = payload;
                other_kind = kind;
            }
        }
        off += ehdr + payload;
    }

    if (best_elf)
        return parse_elf(best_elf, (size_t)best_elf_len, img, false);
    if (best_ptx)
        return parse_ptx((const char *)best_ptx,
                         strnlen((const char *)best_ptx, (size_t)best_ptx_len), img, true);
    if (skipped_compressed) {
        /* A limitation of the fake, not a property of the image. */
        if (!atomic_exchange(&warned_compressed, true)) {
            fprintf(stderr,
                    "fakecuda: fatbin holds only compressed images for sm_%d; "
                    "build it with `fatbinary --compress=false` or load the PTX\n",
                    FC_SM_VERSION);
        }
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (defer && other) {
        img->no_binary = true;
        return other_kind == FATBIN_KIND_ELF
                   ? parse_elf(other, (size_t)other_len, img, true)
                   : parse_ptx((const char *)other, strnlen((const char *)other, (size_t)other_len),
                               img, false);
    }
    if (defer && other_compressed) {
        /* Again the fake's limit: it cannot read the kernels' names. */
        if (!atomic_exchange(&warned_deferred, true)) {
            fprintf(stderr,
                    "fakecuda: fatbin holds no code for sm_%d and only compressed images for "
                    "other GPUs; build it with `fatbinary --compress=false`\n",
                    FC_SM_VERSION);
        }
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
}

/* ------------------------------------------------------------------------ */

static CUresult parse_image(const void *image, size_t size, fc_image *out, bool defer)
{
    static const unsigned char elf_magic[4] = { 0x7f, 'E', 'L', 'F' };
    static const unsigned char fatbin_magic[4] = { 0x50, 0xED, 0x55, 0xBA };
    static const unsigned char wrapper_magic[4] = { 0xb1, 0x43, 0x62, 0x46 };
    const unsigned char *p = image;
    CUresult rc;

    out->names = NULL;
    out->params = NULL;
    out->count = 0;
    out->ptx_version = 0;
    out->no_binary = false;

    if (starts_with(p, size, elf_magic, 4)) {
        if (!size) {
            uint64_t extent = readable(p, sizeof(Elf64_Ehdr)) ? elf_extent(p) : 0;
            size = extent && extent <= SIZE_MAX && readable(p, extent) ? (size_t)extent : 0;
        }
        rc = size ? parse_elf(p, size, out, defer) : CUDA_ERROR_INVALID_IMAGE;
    } else if (starts_with(p, size, fatbin_magic, 4)) {
        rc = parse_fatbin(p, size, out, defer);
    } else if (starts_with(p, size, wrapper_magic, 4)) {
        /* __fatBinC_Wrapper_t: {int magic; int version; data; filename_or_fatbins} */
        const unsigned char *data;
        if ((size && size < 16) || (!size && !readable(p, 16)))
            rc = CUDA_ERROR_INVALID_IMAGE;
        else {
            memcpy(&data, p + 8, sizeof data);
            if (!data || !readable(data, 4) || !starts_with(data, 0, fatbin_magic, 4))
                rc = CUDA_ERROR_INVALID_IMAGE;
            else
                rc = parse_fatbin(data, 0, out, defer);
        }
    } else {
        size_t len = size ? strnlen((const char *)p, size) : strlen((const char *)p);
        rc = parse_ptx((const char *)p, len, out, true);
    }
    if (rc != CUDA_SUCCESS)
        fc_image_free(out);
    return rc;
}

CUresult fc_image_parse(const void *image, size_t size, fc_image *out)
{
    return parse_image(image, size, out, false);
}

CUresult fc_image_parse_deferred(const void *image, size_t size, fc_image *out)
{
    return parse_image(image, size, out, true);
}

/* ------------------------------------------------------------------------ */
/* Writing a cubin (the JIT linker's output)                                 */
/* ------------------------------------------------------------------------ */

/*
 * An sm_90 ELF cubin whose sections are `.text.<entry>` for every entry of
 * img, and `.nv.info.<entry>` for those whose parameters are declared: what
 * parse_elf (and so cuModuleLoadData) reads back as the same kernels.  The header is the one `ptxas -arch=sm_90` of CUDA 13.0 writes
 * (OS/ABI 0x41, ABI version 8, e_flags 0x6005a04); the code sections are
 * empty, as the fake runs kernels on the host.
 */
CUresult fc_image_write_cubin(const fc_image *img, unsigned char **out, size_t *size)
{
    size_t nsec = 2, strsz = 1 + sizeof ".shstrtab", infosz = 0; /* null, .shstrtab */
    for (size_t i = 0; i < img->count; i++) {
        nsec++;
        strsz += sizeof ".text." - 1 + strlen(img->names[i]) + 1;
        if (img->params[i].declared) {
            nsec++;
            strsz += sizeof ".nv.info." - 1 + strlen(img->names[i]) + 1;
            infosz += (size_t)img->params[i].count * NVINFO_KPARAM_RECORD;
        }
    }
    size_t infooff = (sizeof(Elf64_Ehdr) + strsz + 3) / 4 * 4;
    size_t shoff = (infooff + infosz + 7) / 8 * 8;
    size_t total = shoff + nsec * sizeof(Elf64_Shdr);
    unsigned char *p = calloc(1, total);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;

    Elf64_Ehdr eh = { 0 };
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_ident[EI_OSABI] = 0x41;
    eh.e_ident[EI_ABIVERSION] = 8;
    eh.e_type = ET_EXEC;
    eh.e_machine = EM_CUDA;
    eh.e_version = EV_CURRENT;
    eh.e_flags = 0x6005a04;
    eh.e_ehsize = sizeof eh;
    eh.e_shoff = shoff;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = (Elf64_Half)nsec;
    eh.e_shstrndx = 1;
    memcpy(p, &eh, sizeof eh);

    char *str = (char *)p + sizeof eh;
    size_t at = 1; /* offset 0: the empty name */
    Elf64_Shdr sh = { 0 };
    memcpy(p + shoff, &sh, sizeof sh);
    sh.sh_name = (Elf64_Word)at;
    sh.sh_type = SHT_STRTAB;
    sh.sh_offset = sizeof eh;
    sh.sh_size = strsz;
    sh.sh_addralign = 1;
    memcpy(p + shoff + sizeof sh, &sh, sizeof sh);
    memcpy(str + at, ".shstrtab", sizeof ".shstrtab");
    at += sizeof ".shstrtab";
    size_t sec = 2, info = infooff;
    for (size_t i = 0; i < img->count; i++) {
        size_t text_index = sec;
        Elf64_Shdr text = { 0 };
        text.sh_name = (Elf64_Word)at;
        text.sh_type = SHT_PROGBITS;
        text.sh_flags = SHF_ALLOC | SHF_EXECINSTR;
        text.sh_offset = shoff; /* empty */
        text.sh_addralign = 128;
        memcpy(p + shoff + sec++ * sizeof text, &text, sizeof text);
        at += (size_t)sprintf(str + at, ".text.%s", img->names[i]) + 1;
        const fc_kparams *kp = &img->params[i];
        if (!kp->declared)
            continue;
        /* As ptxas writes them: an info section per entry, linked to its
         * code, the parameters' records last one first. */
        Elf64_Shdr nvinfo = { 0 };
        nvinfo.sh_name = (Elf64_Word)at;
        nvinfo.sh_type = SHT_LOPROC;
        nvinfo.sh_flags = SHF_INFO_LINK;
        nvinfo.sh_offset = info;
        nvinfo.sh_size = (Elf64_Xword)kp->count * NVINFO_KPARAM_RECORD;
        nvinfo.sh_info = (Elf64_Word)text_index;
        nvinfo.sh_addralign = 4;
        memcpy(p + shoff + sec++ * sizeof nvinfo, &nvinfo, sizeof nvinfo);
        at += (size_t)sprintf(str + at, ".nv.info.%s", img->names[i]) + 1;
        bool large = fc_kparams_size(kp) > NVINFO_KPARAM_LARGE_ABOVE;
        for (unsigned int k = kp->count; k-- > 0;) {
            unsigned char *r = p + info;
            uint16_t len = NVINFO_KPARAM_RECORD - 4, ordinal = (uint16_t)k,
                     offset = (uint16_t)kp->v[k].offset;
            /* 0x1f000: what ptxas sets besides the size */
            uint32_t flags = large ? kp->v[k].size : kp->v[k].size << 18 | 0x1f000;
            r[0] = NVINFO_FORMAT_SIZED;
            r[1] = large ? NVINFO_KPARAM_INFO_LARGE : NVINFO_KPARAM_INFO;
            memcpy(r + 2, &len, 2);
            memcpy(r + 8, &ordinal, 2); /* after the u32 index 0 */
            memcpy(r + 10, &offset, 2);
            memcpy(r + 12, &flags, 4);
            info += NVINFO_KPARAM_RECORD;
        }
    }
    *out = p;
    *size = total;
    return CUDA_SUCCESS;
}
