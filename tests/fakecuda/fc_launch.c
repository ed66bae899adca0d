/*
 * Kernels with host implementations, and the launch entry points.
 *
 * The fake runs a kernel by its entry name, over the whole problem at once
 * (the grid only has to be valid), when the launch's stream runs.  Its
 * parameters are captured at the launch, from kernelParams or from the
 * `extra` buffer, at the places the image declares for them (fc_image.c:
 * what cuFuncGetParamInfo reports); a host implementation runs only for an
 * entry declared with its parameters (keep kernels.ptx in sync with the
 * table below).  Every device access goes through fc_dev_*: a byte outside
 * every live allocation's extent ends the kernel, and the context gets the
 * sticky CUDA_ERROR_ILLEGAL_ADDRESS that the next synchronising call
 * returns.
 */
#include "fc_internal.h"

#include <stdlib.h>
#include <string.h>

/* gg_fill(u8 *p, u8 value, u64 n): p[i] = value for i < n */
static bool k_fill(const uint64_t *a)
{
    return fc_dev_fill(a[0], (uint8_t)a[1], 1, (size_t)a[2]);
}

/* gg_overrun(u8 *p, u64 n, u64 extra): p[i] = 0x41 for i < n + extra */
static bool k_overrun(const uint64_t *a)
{
    uint64_t total = a[1] + a[2];
    if (total < a[1])
        total = UINT64_MAX; /* runs off the end of memory long before */
    return fc_dev_fill(a[0], 0x41, 1, (size_t)total);
}

/* gg_copy(u8 *dst, const u8 *src, u64 n): dst[i] = src[i] for i < n */
static bool k_copy(const uint64_t *a)
{
    return fc_dev_copy(a[0], a[1], (size_t)a[2]);
}

/* gg_sum(const u8 *src, u64 n, u64 *out): *out = sum of src[0..n) */
static bool k_sum(const uint64_t *a)
{
    unsigned char buf[16384];
    uint64_t sum = 0;
    for (uint64_t done = 0; done < a[1];) {
        size_t len = a[1] - done < sizeof buf ? (size_t)(a[1] - done) : sizeof buf;
        if (!fc_dev_read(a[0] + done, buf, len))
            return false;
        for (size_t i = 0; i < len; i++)
            sum += buf[i];
        done += len;
    }
    return fc_dev_write(a[2], &sum, sizeof sum);
}

/*
 * gg_overrun_second(u8 *a, u64 na, u8 *b, u64 nb, u64 extra): a[i] = 0x41
 * for i < na, then b[i] = 0x41 for i < nb + extra (only b is overrun)
 */
static bool k_overrun_second(const uint64_t *a)
{
    return fc_dev_fill(a[0], 0x41, 1, (size_t)a[1]) && k_overrun(a + 2);
}

/* gg_underrun(u8 *p, u64 n): p[-1 - i] = 0x55 for i < n, the n bytes below p */
static bool k_underrun(const uint64_t *a)
{
    if (a[1] > a[0])
        return false; /* below address 0: no allocation is there */
    return fc_dev_fill(a[0] - a[1], 0x55, 1, (size_t)a[1]);
}

static bool k_noop(const uint64_t *a)
{
    (void)a;
    return true;
}

/* As ptxas places them (the .param lists of kernels.ptx). */
static const fc_kparam p_ptr_u8_u64[] = { { 0, 8 }, { 8, 1 }, { 16, 8 } };
static const fc_kparam p_u64s[] = { { 0, 8 }, { 8, 8 }, { 16, 8 }, { 24, 8 }, { 32, 8 } };
#define U64S(n)           \
    {                     \
        p_u64s, (n), true \
    }

/* Registers: what `ptxas -arch=sm_90 -v kernels.ptx` reports for each entry. */
static const fc_kimpl kimpls[] = {
    { "gg_fill", { p_ptr_u8_u64, 3, true }, k_fill, 14 },
    { "gg_overrun", U64S(3), k_overrun, 12 },
    { "gg_copy", U64S(3), k_copy, 16 },
    { "gg_sum", U64S(3), k_sum, 18 },
    { "gg_overrun_second", U64S(5), k_overrun_second, 14 },
    { "gg_underrun", U64S(2), k_underrun, 12 },
};

/* Any other entry: its parameters are not read; it is given the register
 * count of a small kernel. */
static const fc_kimpl knoop = { "", { NULL, 0, true }, k_noop, 16 };

const fc_kimpl *fc_kimpl_find(const char *name, const fc_kparams *declared)
{
    for (size_t i = 0; i < sizeof kimpls / sizeof kimpls[0]; i++)
        if (strcmp(kimpls[i].name, name) == 0)
            return !declared->declared || fc_kparams_equal(declared, &kimpls[i].params) ? &kimpls[i]
                                                                                        : &knoop;
    return &knoop;
}

/*
 * A cubin without the entry's .nv.info section (not one ptxas wrote) does
 * not say: the fake kernel's parameters, or none.
 */
const fc_kparams *fc_kimpl_params(const fc_kimpl *impl, const fc_kparams *declared)
{
    return declared->declared ? declared : &impl->params;
}

/* ------------------------------------------------------------------------ */
/* Launches                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct launch {
    CUfunction f;
    unsigned int grid[3], block[3];
    unsigned int shmem;
    CUstream stream;
    void **params;
    void **extra;
    bool per_thread;
} launch;

/* Limits of a compute capability 9.0 device (see cuDeviceGetAttribute). */
static CUresult check_geometry(const launch *l)
{
    const unsigned int *g = l->grid, *b = l->block;
    if (!g[0] || !g[1] || !g[2] || !b[0] || !b[1] || !b[2])
        return CUDA_ERROR_INVALID_VALUE;
    if (g[0] > 0x7fffffffu || g[1] > 65535 || g[2] > 65535)
        return CUDA_ERROR_INVALID_VALUE;
    if (b[0] > 1024 || b[1] > 1024 || b[2] > 64 || (uint64_t)b[0] * b[1] * b[2] > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (l->shmem > 48 * 1024) /* more needs cuFuncSetAttribute, not provided */
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/*
 * The buffer of an `extra` list: *size 0 when it has no
 * CU_LAUNCH_PARAM_BUFFER_SIZE (then "BUFFER_POINTER will have no effect");
 * a non-zero size requires the pointer.
 */
static CUresult extra_buffer(void **extra, const unsigned char **buf, size_t *size)
{
    const size_t *sizep = NULL;
    bool have_size = false;
    *buf = NULL;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (i >= 64)
            return CUDA_ERROR_INVALID_VALUE; /* not terminated */
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
            *buf = extra[i + 1];
        } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
            sizep = extra[i + 1];
            have_size = true;
        } else {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    if (have_size && !sizep)
        return CUDA_ERROR_INVALID_VALUE;
    *size = sizep ? *sizep : 0;
    return *size && !*buf ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/*
 * The launch's parameters, laid out as `lay` (what cuFuncGetParamInfo
 * reports): one pointer per parameter in kernelParams, or one `extra`
 * buffer of exactly the parameter space, with no padding after the last
 * parameter.  A larger buffer is what NVIDIA's driver refuses with
 * CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES; the fake refuses a shorter one as
 * an invalid value.  The first parameters of a host implementation are
 * captured in args.
 */
static CUresult collect_args(const fc_kimpl *k, const fc_kparams *lay, void **params, void **extra,
                             uint64_t *args)
{
    const unsigned char *buf = NULL;
    size_t size = 0, need = fc_kparams_size(lay);
    if (params && extra)
        return CUDA_ERROR_INVALID_VALUE; /* documented */
    if (extra) {
        CUresult rc = extra_buffer(extra, &buf, &size);
        if (rc != CUDA_SUCCESS)
            return rc;
        if (size != need)
            return size > need ? CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES : CUDA_ERROR_INVALID_VALUE;
    } else if (lay->count && !params) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (unsigned int i = 0; i < lay->count; i++) {
        const void *src = extra ? buf + lay->v[i].offset : params[i];
        if (!src)
            return CUDA_ERROR_INVALID_VALUE;
        if (i < k->params.count && lay->v[i].size <= sizeof args[i])
            memcpy(&args[i], src, lay->v[i].size); /* little-endian */
    }
    return CUDA_SUCCESS;
}

static CUresult launch_kernel(const launch *l)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = NULL;
    const fc_kimpl *k = NULL;
    const fc_kparams *lay = NULL;
    uint64_t args[FC_MAX_KPARAMS] = { 0 };
    rc = fc_stream_for_work(l->stream, l->per_thread, &s);
    if (rc == CUDA_SUCCESS)
        rc = fc_function_resolve(l->f, s->ctx, &k, &lay);
    if (rc == CUDA_SUCCESS)
        rc = check_geometry(l);
    if (rc == CUDA_SUCCESS)
        rc = collect_args(k, lay, l->params, l->extra, args);
    /* The test knobs count the launches that got this far (fakecuda.h). */
    uint64_t nth = rc == CUDA_SUCCESS ? ++fc_st.launches : 0;
    if (rc == CUDA_SUCCESS && nth == fc_st.fail_launch.nth)
        rc = fc_st.fail_launch.code;
    if (rc == CUDA_SUCCESS) {
        fc_op *op = fc_op_new(FC_OP_KERNEL);
        if (!op) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            op->u.kernel.impl = k;
            memcpy(op->u.kernel.args, args, sizeof args);
            op->u.kernel.sticky = nth == fc_st.sticky_launch.nth ? fc_st.sticky_launch.code
                                                                 : CUDA_SUCCESS;
            if (!s->cap) {
                rc = fc_enqueue(s, op, NULL);
            } else {
                /* The node keeps its parameters (cuGraphKernelNodeGetParams). */
                fc_knode *kn = fc_knode_new(l->f, l->grid, l->block, l->shmem, lay, l->params,
                                            l->extra);
                if (kn)
                    rc = fc_capture_kernel(s, op, kn);
                else {
                    fc_op_free(op);
                    rc = CUDA_ERROR_OUT_OF_MEMORY;
                }
            }
        }
    }
    fc_unlock();
    return rc;
}

#define LAUNCH(f, gx, gy, gz, bx, by, bz, sh, st, kp, ex, pt) \
    launch_kernel(&(launch){ .f = (f),                        \
                             .grid = { (gx), (gy), (gz) },    \
                             .block = { (bx), (by), (bz) },   \
                             .shmem = (sh),                   \
                             .stream = (st),                  \
                             .params = (kp),                  \
                             .extra = (ex),                   \
                             .per_thread = (pt) })

FC_EXPORT(cuLaunchKernel,
          (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
           unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
           unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra),
          (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
           hStream, kernelParams, extra))
{
    return LAUNCH(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                  hStream, kernelParams, extra, false);
}

FC_EXPORT(cuLaunchKernel_ptsz,
          (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
           unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
           unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra),
          (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
           hStream, kernelParams, extra))
{
    return LAUNCH(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                  hStream, kernelParams, extra, true);
}

/* A cooperative launch has the same semantics here (one host pass). */
FC_EXPORT(cuLaunchCooperativeKernel,
          (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
           unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
           unsigned int sharedMemBytes, CUstream hStream, void **kernelParams),
          (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
           hStream, kernelParams))
{
    return LAUNCH(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                  hStream, kernelParams, NULL, false);
}

FC_EXPORT(cuLaunchCooperativeKernel_ptsz,
          (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
           unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
           unsigned int sharedMemBytes, CUstream hStream, void **kernelParams),
          (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
           hStream, kernelParams))
{
    return LAUNCH(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                  hStream, kernelParams, NULL, true);
}

/* Launch attributes are accepted and have no effect on a host pass. */
static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                          void **extra, bool per_thread)
{
    if (!atomic_load(&fc_st.initialized))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!config || (config->numAttrs && !config->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    return LAUNCH(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                  config->blockDimY, config->blockDimZ, config->sharedMemBytes, config->hStream,
                  kernelParams, extra, per_thread);
}

FC_EXPORT(cuLaunchKernelEx,
          (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra),
          (config, f, kernelParams, extra))
{
    return launch_ex(config, f, kernelParams, extra, false);
}

FC_EXPORT(cuLaunchKernelEx_ptsz,
          (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra),
          (config, f, kernelParams, extra))
{
    return launch_ex(config, f, kernelParams, extra, true);
}

/* ------------------------------------------------------------------------ */
/* Kernel nodes of graphs                                                    */
/* ------------------------------------------------------------------------ */

void fc_knode_free(fc_knode *kn)
{
    if (!kn)
        return;
    free(kn->buf);
    free(kn->ptrs);
    free(kn);
}

/* Point kernelParams and extra at the node's own copy of the values. */
static void knode_point(fc_knode *kn, const fc_kparams *lay)
{
    for (unsigned int i = 0; i < kn->count; i++)
        kn->ptrs[i] = kn->buf + lay->v[i].offset;
    kn->extra_size = kn->size;
    kn->extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
    kn->extra[1] = kn->buf;
    kn->extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
    kn->extra[3] = &kn->extra_size;
    kn->extra[4] = CU_LAUNCH_PARAM_END;
}

fc_knode *fc_knode_new(CUfunction f, const unsigned int grid[3], const unsigned int block[3],
                       unsigned int shmem, const fc_kparams *lay, void **params, void **extra)
{
    fc_knode *kn = calloc(1, sizeof *kn);
    const unsigned char *xbuf = NULL;
    size_t xsize = 0;
    if (!kn)
        return NULL;
    kn->func = f;
    memcpy(kn->grid, grid, sizeof kn->grid);
    memcpy(kn->block, block, sizeof kn->block);
    kn->shmem = shmem;
    kn->size = fc_kparams_size(lay);
    kn->count = lay->count;
    kn->by_extra = extra != NULL;
    kn->buf = calloc(kn->size ? kn->size : 1, 1);
    kn->ptrs = calloc(kn->count ? kn->count : 1, sizeof *kn->ptrs);
    if (!kn->buf || !kn->ptrs) {
        fc_knode_free(kn);
        return NULL;
    }
    if (extra && extra_buffer(extra, &xbuf, &xsize) == CUDA_SUCCESS && xbuf)
        memcpy(kn->buf, xbuf, xsize < kn->size ? xsize : kn->size);
    for (unsigned int i = 0; !extra && params && i < lay->count; i++)
        memcpy(kn->buf + lay->v[i].offset, params[i], lay->v[i].size);
    knode_point(kn, lay);
    return kn;
}

fc_knode *fc_knode_dup(const fc_knode *kn)
{
    fc_knode *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    *c = *kn;
    c->buf = malloc(kn->size ? kn->size : 1);
    c->ptrs = malloc((kn->count ? kn->count : 1) * sizeof *c->ptrs);
    if (!c->buf || !c->ptrs) {
        free(c->buf);
        free(c->ptrs);
        free(c);
        return NULL;
    }
    memcpy(c->buf, kn->buf, kn->size);
    for (unsigned int i = 0; i < kn->count; i++)
        c->ptrs[i] = c->buf + ((unsigned char *)kn->ptrs[i] - kn->buf);
    c->extra[1] = c->buf;
    c->extra[3] = &c->extra_size;
    return c;
}

/*
 * A node's kernel is what a launch in its context would run: func, else
 * kern (a CUkernel runs as the function of the node's context, ctx or the
 * current one).  The node holds what a launch would accept; the graph
 * functions document CUDA_ERROR_INVALID_VALUE for anything else.
 */
CUresult fc_kernel_node(const CUDA_KERNEL_NODE_PARAMS_v2 *p, fc_ctx *c, fc_op **op, fc_knode **kn)
{
    const fc_kimpl *k = NULL;
    const fc_kparams *lay = NULL;
    uint64_t args[FC_MAX_KPARAMS] = { 0 };
    CUfunction f = p ? (p->func ? p->func : (CUfunction)p->kern) : NULL;
    *op = NULL;
    *kn = NULL;
    if (!p || !f)
        return CUDA_ERROR_INVALID_VALUE;
    if (!p->func && p->ctx) {
        c = fc_handle_get(p->ctx, FC_K_CTX);
        if (!c)
            return CUDA_ERROR_INVALID_VALUE;
    }
    launch l = { .f = f,
                 .grid = { p->gridDimX, p->gridDimY, p->gridDimZ },
                 .block = { p->blockDimX, p->blockDimY, p->blockDimZ },
                 .shmem = p->sharedMemBytes,
                 .params = p->kernelParams,
                 .extra = p->extra };
    if (fc_function_resolve(f, c, &k, &lay) != CUDA_SUCCESS || check_geometry(&l) != CUDA_SUCCESS ||
        collect_args(k, lay, l.params, l.extra, args) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    *op = fc_op_new(FC_OP_KERNEL);
    *kn = fc_knode_new(f, l.grid, l.block, l.shmem, lay, l.params, l.extra);
    if (!*op || !*kn) {
        if (*op)
            fc_op_free(*op);
        fc_knode_free(*kn);
        *op = NULL;
        *kn = NULL;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    (*kn)->func = p->func;
    (*kn)->kern = p->func ? NULL : p->kern;
    (*kn)->ctx = p->func ? NULL : p->ctx;
    (*op)->u.kernel.impl = k;
    memcpy((*op)->u.kernel.args, args, sizeof args);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Function limits and occupancy                                             */
/* ------------------------------------------------------------------------ */

/*
 * The compute capability 9.0 resources, as cuda_occupancy.h (the toolkit's
 * occupancy calculator) describes them and the fake's device attributes
 * report them.  No kernel of the fake uses static shared memory.
 */
#define SM_THREADS 2048        /* MAX_THREADS_PER_MULTIPROCESSOR */
#define SM_BLOCKS 32           /* MAX_BLOCKS_PER_MULTIPROCESSOR */
#define SM_REGS 65536          /* MAX_REGISTERS_PER_MULTIPROCESSOR */
#define SM_SUBPARTITIONS 4     /* each holds a quarter of the registers */
#define SM_SMEM (228 * 1024)   /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
#define BLOCK_THREADS 1024     /* MAX_THREADS_PER_BLOCK */
#define BLOCK_REGS 65536       /* MAX_REGISTERS_PER_BLOCK */
#define BLOCK_SMEM (48 * 1024) /* MAX_SHARED_MEMORY_PER_BLOCK (without opt-in) */
#define RESERVED_SMEM 1024     /* RESERVED_SHARED_MEMORY_PER_BLOCK */
#define WARP 32
#define REG_GRANULE 256  /* registers are allocated per warp in these */
#define SMEM_GRANULE 128 /* shared memory is allocated per block in these */

static int round_up_int(int n, int to)
{
    return (n + to - 1) / to * to;
}

/* Registers a block of `warps` warps takes, as the hardware counts them. */
static int block_regs(const fc_kimpl *k, int warps)
{
    int per_warp = round_up_int((int)k->nregs * WARP, REG_GRANULE);
    return per_warp * round_up_int(warps, SM_SUBPARTITIONS);
}

int fc_kimpl_max_threads(const fc_kimpl *k)
{
    for (int threads = BLOCK_THREADS; threads > 0; threads -= WARP)
        if (block_regs(k, threads / WARP) <= BLOCK_REGS)
            return threads;
    return 0;
}

int fc_kimpl_max_dynamic_smem(const fc_kimpl *k)
{
    (void)k; /* no static shared memory */
    return BLOCK_SMEM;
}

/* Blocks of `threads` threads and `smem` dynamic shared bytes one SM holds. */
static int active_blocks(const fc_kimpl *k, int threads, size_t smem)
{
    if (threads > fc_kimpl_max_threads(k) || smem > (size_t)fc_kimpl_max_dynamic_smem(k))
        return 0;
    int warps = (threads + WARP - 1) / WARP;
    int by_warps = SM_THREADS / WARP / warps;
    int per_warp = round_up_int((int)k->nregs * WARP, REG_GRANULE);
    int by_regs = per_warp ? (SM_REGS / SM_SUBPARTITIONS / per_warp) * SM_SUBPARTITIONS / warps
                           : SM_BLOCKS;
    int block_smem = round_up_int((int)smem + RESERVED_SMEM, SMEM_GRANULE);
    int by_smem = SM_SMEM / block_smem;
    int n = SM_BLOCKS;
    if (by_warps < n)
        n = by_warps;
    if (by_regs < n)
        n = by_regs;
    if (by_smem < n)
        n = by_smem;
    return n;
}

/*
 * The function (or a CUkernel passed as one) in the current context, for the
 * occupancy calculator.  Lock held.
 */
static CUresult occupancy_function(CUfunction f, const fc_kimpl **k)
{
    fc_ctx *c;
    CUresult rc = fc_ctx_current(&c);
    if (rc != CUDA_SUCCESS)
        return rc;
    /* The documented results have CUDA_ERROR_INVALID_VALUE, not _INVALID_HANDLE. */
    return fc_function_resolve(f, c, k, NULL) == CUDA_SUCCESS ? CUDA_SUCCESS
                                                              : CUDA_ERROR_INVALID_VALUE;
}

static CUresult max_active_blocks(int *numBlocks, CUfunction func, int blockSize, size_t smem,
                                  unsigned int flags)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    const fc_kimpl *k = NULL;
    rc = occupancy_function(func, &k);
    if (rc == CUDA_SUCCESS && (!numBlocks || blockSize <= 0 ||
                               (flags & ~(unsigned int)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        *numBlocks = active_blocks(k, blockSize, smem);
    fc_unlock();
    return rc;
}

FC_EXPORT(cuOccupancyMaxActiveBlocksPerMultiprocessor,
          (int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize),
          (numBlocks, func, blockSize, dynamicSMemSize))
{
    return max_active_blocks(numBlocks, func, blockSize, dynamicSMemSize, CU_OCCUPANCY_DEFAULT);
}

/* Global caching does not partition an sm_90 SM: both flags give the same. */
FC_EXPORT(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
          (int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize,
           unsigned int flags),
          (numBlocks, func, blockSize, dynamicSMemSize, flags))
{
    return max_active_blocks(numBlocks, func, blockSize, dynamicSMemSize, flags);
}

/*
 * The search of cudaOccupancyMaxPotentialBlockSizeVariableSMemWithFlags
 * (cuda_runtime.h): from the largest allowed block size down in warps, keep
 * the first size that reaches the most resident threads.  The size-to-shared
 * memory callback is called with the driver lock released, so it may do
 * anything a host function may.
 */
static CUresult potential_block_size(int *minGridSize, int *blockSize, CUfunction func,
                                     CUoccupancyB2DSize b2d, size_t smem, int limit,
                                     unsigned int flags)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    const fc_kimpl *k = NULL;
    rc = occupancy_function(func, &k);
    if (rc == CUDA_SUCCESS && (!minGridSize || !blockSize || limit < 0 ||
                               (flags & ~(unsigned int)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)))
        rc = CUDA_ERROR_INVALID_VALUE;
    fc_unlock();
    if (rc != CUDA_SUCCESS)
        return rc;

    int max_threads = fc_kimpl_max_threads(
        k); /* kernel implementations are static: no lock needed */
    if (limit == 0 || limit > BLOCK_THREADS)
        limit = BLOCK_THREADS;
    if (limit > max_threads)
        limit = max_threads;
    int best_size = 0, best_blocks = 0, best_threads = 0;
    for (int aligned = round_up_int(limit, WARP); aligned > 0; aligned -= WARP) {
        int size = aligned < limit ? aligned : limit;
        int blocks = active_blocks(k, size, b2d ? b2d(size) : smem);
        if (size * blocks > best_threads) {
            best_size = size;
            best_blocks = blocks;
            best_threads = size * blocks;
        }
        if (best_threads == SM_THREADS)
            break;
    }
    *minGridSize = best_blocks * FC_SM_COUNT;
    *blockSize = best_size;
    return CUDA_SUCCESS;
}

FC_EXPORT(cuOccupancyMaxPotentialBlockSize,
          (int *minGridSize, int *blockSize, CUfunction func,
           CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
           int blockSizeLimit),
          (minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize,
           blockSizeLimit))
{
    return potential_block_size(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
                                dynamicSMemSize, blockSizeLimit, CU_OCCUPANCY_DEFAULT);
}

FC_EXPORT(cuOccupancyMaxPotentialBlockSizeWithFlags,
          (int *minGridSize, int *blockSize, CUfunction func,
           CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
           int blockSizeLimit, unsigned int flags),
          (minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize,
           blockSizeLimit, flags))
{
    return potential_block_size(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
                                dynamicSMemSize, blockSizeLimit, flags);
}
