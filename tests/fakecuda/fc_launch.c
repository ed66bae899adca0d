/*
 * Kernels with host implementations, and the launch entry points.
 *
 * The fake runs a kernel by its entry name, over the whole problem at once
 * (the grid only has to be valid), when the launch's stream runs.  Its
 * parameters are captured at the launch, from kernelParams or from the
 * `extra` buffer packed with natural alignment, exactly as the kernel's PTX
 * declares them (keep kernels.ptx in sync with the table below).  Every
 * device access goes through fc_dev_*: a byte outside every live
 * allocation's extent ends the kernel, and the context gets the sticky
 * CUDA_ERROR_ILLEGAL_ADDRESS that the next synchronising call returns.
 */
#include "fc_internal.h"

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

static bool k_noop(const uint64_t *a)
{
    (void)a;
    return true;
}

static const fc_kimpl kimpls[] = {
    {"gg_fill", 3, {8, 1, 8}, k_fill},
    {"gg_overrun", 3, {8, 8, 8}, k_overrun},
    {"gg_copy", 3, {8, 8, 8}, k_copy},
    {"gg_sum", 3, {8, 8, 8}, k_sum},
};

/* Any other entry: its parameters are unknown to the fake, so not read. */
static const fc_kimpl knoop = {"", 0, {0}, k_noop};

const fc_kimpl *fc_kimpl_find(const char *name)
{
    for (size_t i = 0; i < sizeof kimpls / sizeof kimpls[0]; i++)
        if (strcmp(kimpls[i].name, name) == 0)
            return &kimpls[i];
    return &knoop;
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

static size_t align_up(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

/* Parameters from an `extra` list: one buffer packed with natural alignment. */
static CUresult args_from_extra(const fc_kimpl *k, void **extra, uint64_t *args)
{
    const unsigned char *buf = NULL;
    const size_t *size = NULL;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (i >= 64)
            return CUDA_ERROR_INVALID_VALUE; /* not terminated */
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buf = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
            size = extra[i + 1];
        else
            return CUDA_ERROR_INVALID_VALUE;
    }
    if (k->nparams == 0)
        return CUDA_SUCCESS;
    if (!buf || !size)
        return CUDA_ERROR_INVALID_VALUE;

    size_t off[FC_MAX_KPARAMS], end = 0, maxalign = 1;
    for (unsigned int i = 0; i < k->nparams; i++) {
        off[i] = align_up(end, k->psize[i]);
        end = off[i] + k->psize[i];
        if (k->psize[i] > maxalign)
            maxalign = k->psize[i];
    }
    /* The buffer must be exactly the kernel's parameter space. */
    if (*size != align_up(end, maxalign))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned int i = 0; i < k->nparams; i++)
        memcpy(&args[i], buf + off[i], k->psize[i]); /* little-endian */
    return CUDA_SUCCESS;
}

static CUresult collect_args(const fc_kimpl *k, void **params, void **extra, uint64_t *args)
{
    if (params && extra)
        return CUDA_ERROR_INVALID_VALUE; /* documented */
    if (extra)
        return args_from_extra(k, extra, args);
    if (k->nparams == 0)
        return CUDA_SUCCESS;
    if (!params)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned int i = 0; i < k->nparams; i++) {
        if (!params[i])
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(&args[i], params[i], k->psize[i]); /* little-endian */
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
    uint64_t args[FC_MAX_KPARAMS] = {0};
    rc = fc_stream_resolve(l->stream, l->per_thread, &s);
    if (rc == CUDA_SUCCESS)
        rc = fc_function_resolve(l->f, s->ctx, &k);
    if (rc == CUDA_SUCCESS)
        rc = check_geometry(l);
    if (rc == CUDA_SUCCESS)
        rc = collect_args(k, l->params, l->extra, args);
    if (rc == CUDA_SUCCESS) {
        fc_op *op = fc_op_new(FC_OP_KERNEL);
        if (!op) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            op->u.kernel.impl = k;
            memcpy(op->u.kernel.args, args, sizeof args);
            rc = fc_enqueue(s, op, NULL);
        }
    }
    fc_unlock();
    return rc;
}

#define LAUNCH(f, gx, gy, gz, bx, by, bz, sh, st, kp, ex, pt)                                       \
    launch_kernel(&(launch){.f = (f),                                                             \
                            .grid = {(gx), (gy), (gz)},                                           \
                            .block = {(bx), (by), (bz)},                                          \
                            .shmem = (sh),                                                        \
                            .stream = (st),                                                       \
                            .params = (kp),                                                       \
                            .extra = (ex),                                                        \
                            .per_thread = (pt)})

FC_EXPORT(cuLaunchKernel,
          (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
           unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
           void **kernelParams, void **extra),
          (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams,
           extra))
{
    return LAUNCH(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                  kernelParams, extra, false);
}

FC_EXPORT(cuLaunchKernel_ptsz,
          (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
           unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
           void **kernelParams, void **extra),
          (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams,
           extra))
{
    return LAUNCH(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                  kernelParams, extra, true);
}

/* A cooperative launch has the same semantics here (one host pass). */
FC_EXPORT(cuLaunchCooperativeKernel,
          (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
           unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
           void **kernelParams),
          (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams))
{
    return LAUNCH(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                  kernelParams, NULL, false);
}

FC_EXPORT(cuLaunchCooperativeKernel_ptsz,
          (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX,
           unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
           void **kernelParams),
          (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams))
{
    return LAUNCH(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,
                  kernelParams, NULL, true);
}

/* Launch attributes are accepted and have no effect on a host pass. */
static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra,
                          bool per_thread)
{
    if (!atomic_load(&fc_st.initialized))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!config || (config->numAttrs && !config->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    return LAUNCH(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX, config->blockDimY,
                  config->blockDimZ, config->sharedMemBytes, config->hStream, kernelParams, extra, per_thread);
}

FC_EXPORT(cuLaunchKernelEx, (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra),
          (config, f, kernelParams, extra))
{
    return launch_ex(config, f, kernelParams, extra, false);
}

FC_EXPORT(cuLaunchKernelEx_ptsz, (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra),
          (config, f, kernelParams, extra))
{
    return launch_ex(config, f, kernelParams, extra, true);
}
