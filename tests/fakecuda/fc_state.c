/*
 * Driver state, cuInit, handle registry and devices.
 *
 * The fake driver keeps all of its state in one struct (fc_st) guarded by one
 * mutex.  That makes every API call atomic with respect to every other, which
 * is stricter than the real driver but never hides a bug the tests look for:
 * ordering bugs come from the stream model (fc_stream.c), not from races
 * inside the driver.
 */
#include "fc_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fc_state fc_st = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

/* ------------------------------------------------------------------------ */
/* Small helpers                                                             */
/* ------------------------------------------------------------------------ */

/* Set while this thread runs a stream callback (with the lock held). */
static __thread bool in_callback;

CUresult fc_enter(void)
{
    if (!atomic_load_explicit(&fc_st.initialized, memory_order_acquire))
        return CUDA_ERROR_NOT_INITIALIZED;
    if (in_callback)
        return CUDA_ERROR_NOT_PERMITTED;
    fc_lock();
    return CUDA_SUCCESS;
}

void fc_run_callback(const fc_op *op, CUresult status)
{
    in_callback = true;
    op->u.callback.fn(op->u.callback.stream, status, op->u.callback.user);
    in_callback = false;
}

uint32_t fc_rand(void)
{
    /* xorshift32; the seed is set at cuInit (and is never 0). */
    uint32_t x = fc_st.prng ? fc_st.prng : 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    fc_st.prng = x;
    return x;
}

void fc_handle_add(fc_handle *h, int kind)
{
    h->kind = kind;
    h->node.key = (uint64_t)(uintptr_t)h;
    h->node.val = 0;
    fc_tree_insert(&fc_st.handles, &h->node, fc_rand());
}

void fc_handle_del(fc_handle *h)
{
    if (fc_tree_find(fc_st.handles, (uint64_t)(uintptr_t)h) == &h->node)
        fc_tree_erase(&fc_st.handles, h->node.key);
}

void *fc_handle_get(const void *p, int kind)
{
    if (!p)
        return NULL;
    fc_tnode *n = fc_tree_find(fc_st.handles, (uint64_t)(uintptr_t)p);
    if (!n)
        return NULL;
    fc_handle *h = (fc_handle *)n; /* node is the first member */
    return h->kind == kind ? h : NULL;
}

uint64_t fc_thread_id(void)
{
    static atomic_uint_fast64_t next = 1;
    static __thread uint64_t id;
    if (!id)
        id = atomic_fetch_add(&next, 1);
    return id;
}

bool fc_dev_valid(CUdevice dev)
{
    return dev >= 0 && dev < fc_st.ndevices;
}

/* A non-negative decimal number ending at `stop`; false when malformed. */
static bool parse_u64(const char *s, char stop, const char **rest, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end != stop || *s == '-')
        return false;
    *out = v;
    *rest = end;
    return true;
}

/*
 * Parse a non-negative decimal number from the environment; false when unset
 * or malformed (a malformed value is reported once, as the real driver would
 * simply ignore it).
 */
static bool env_u64(const char *name, uint64_t *out)
{
    const char *s = getenv(name), *rest;
    if (!s || !*s)
        return false;
    if (!parse_u64(s, '\0', &rest, out)) {
        fprintf(stderr, "fakecuda: ignoring %s=%s (not a decimal number)\n", name, s);
        return false;
    }
    return true;
}

/*
 * A launch knob, N:CODE in decimal: the N-th launch (from 1) and a CUresult
 * other than CUDA_SUCCESS that cuGetErrorName knows.  Off (N 0) when unset;
 * a malformed value is reported and ignored.
 */
static void env_launch_knob(const char *name, uint64_t *nth, CUresult *code)
{
    const char *s = getenv(name), *rest, *str;
    uint64_t n, c;
    *nth = 0;
    if (!s || !*s)
        return;
    if (!parse_u64(s, ':', &rest, &n) || n == 0 || !parse_u64(rest + 1, '\0', &rest, &c) ||
        c == 0 || c > INT32_MAX || fc_self_cuGetErrorName((CUresult)c, &str) != CUDA_SUCCESS) {
        fprintf(stderr,
                "fakecuda: ignoring %s=%s (not N:CODE, a launch from 1 and a CUresult error)\n",
                name, s);
        return;
    }
    *nth = n;
    *code = (CUresult)c;
}

/*
 * CUDA_MODULE_LOADING, NVIDIA's variable: LAZY or EAGER, as the CUDA
 * Programming Guide spells them.  Unset: eager, the fake's default (NVIDIA's
 * driver defaults to lazy since CUDA 12.2); another value is reported once
 * and the default kept.
 */
static bool env_lazy_loading(void)
{
    const char *s = getenv("CUDA_MODULE_LOADING");
    if (!s || !*s || strcmp(s, "EAGER") == 0)
        return false;
    if (strcmp(s, "LAZY") == 0)
        return true;
    fprintf(stderr, "fakecuda: ignoring CUDA_MODULE_LOADING=%s (not LAZY or EAGER)\n", s);
    return false;
}

/*
 * fork() while another thread holds the driver lock would leave the child
 * with a lock nobody can release: take it around fork.
 */
static void atfork_prepare(void)
{
    fc_lock();
}

static void atfork_release(void)
{
    fc_unlock();
}

__attribute__((constructor)) static void fc_state_ctor(void)
{
    pthread_atfork(atfork_prepare, atfork_release, atfork_release);
}

/* ------------------------------------------------------------------------ */
/* cuInit                                                                    */
/* ------------------------------------------------------------------------ */

FC_EXPORT(cuInit, (unsigned int Flags), (Flags))
{
    if (in_callback)
        return CUDA_ERROR_NOT_PERMITTED; /* it would wait for the lock the callback's caller holds */
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;

    fc_lock();
    if (atomic_load(&fc_st.initialized)) {
        fc_unlock();
        return CUDA_SUCCESS;
    }

    uint64_t ndev = 1;
    if (env_u64("FAKECUDA_DEVICES", &ndev) && ndev > FC_MAX_DEVICES)
        ndev = FC_MAX_DEVICES;
    if (ndev == 0) {
        fc_unlock();
        return CUDA_ERROR_NO_DEVICE;
    }
    uint64_t limit;
    if (env_u64("FAKECUDA_MEM_LIMIT", &limit))
        fc_st.mem_limit = (size_t)limit;
    uint64_t managed;
    fc_st.managed = env_u64("FAKECUDA_MANAGED", &managed) && managed == 1;
    uint64_t reuse;
    fc_st.reuse_handles = env_u64("FAKECUDA_REUSE_HANDLES", &reuse) && reuse == 1;
    fc_st.lazy_loading = env_lazy_loading();
    env_launch_knob("FAKECUDA_FAIL_LAUNCH", &fc_st.fail_launch.nth, &fc_st.fail_launch.code);
    env_launch_knob("FAKECUDA_STICKY", &fc_st.sticky_launch.nth, &fc_st.sticky_launch.code);
    uint64_t on = 0;
    fc_st.timeline.on = env_u64("FAKECUDA_TIMELINE", &on) && on == 1;
    fc_st.timeline.op_ns = 1000;
    fc_st.timeline.kernel_ns = 5000;
    fc_st.timeline.copy_ns_per_kib = 100; /* about 10 GB/s */
    fc_st.timeline.set_ns_per_kib = 50;
    if (env_u64("FAKECUDA_OP_NS", &on))
        fc_st.timeline.op_ns = on;
    if (env_u64("FAKECUDA_KERNEL_NS", &on))
        fc_st.timeline.kernel_ns = on;
    if (env_u64("FAKECUDA_COPY_NS_PER_KIB", &on))
        fc_st.timeline.copy_ns_per_kib = on;
    if (env_u64("FAKECUDA_MEMSET_NS_PER_KIB", &on))
        fc_st.timeline.set_ns_per_kib = on;

    CUresult rc = fc_mem_init();
    if (rc != CUDA_SUCCESS) {
        fc_unlock();
        return rc;
    }

    fc_st.prng = 0x2545f491u;
    fc_st.ndevices = (int)ndev;
    fc_st.next_buffer_id = 1;
    fc_st.next_stream_id = 1;
    LIST_INIT(&fc_st.zombie_streams);
    LIST_INIT(&fc_st.libraries);
    for (int d = 0; d < fc_st.ndevices; d++) {
        fc_ctx *c = &fc_st.primary[d];
        memset(c, 0, sizeof *c);
        c->dev = d;
        c->primary = true;
        LIST_INIT(&c->streams);
        LIST_INIT(&c->events);
        LIST_INIT(&c->modules);
        fc_handle_add(&c->h, FC_K_CTX);
    }
    fc_pool_init();
    atomic_store_explicit(&fc_st.initialized, true, memory_order_release);
    fc_unlock();
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Devices                                                                   */
/* ------------------------------------------------------------------------ */

FC_EXPORT(cuDeviceGet, (CUdevice * device, int ordinal), (device, ordinal))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!device)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!fc_dev_valid(ordinal))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else
        *device = ordinal;
    fc_unlock();
    return rc;
}

FC_EXPORT(cuDeviceGetCount, (int *count), (count))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!count)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        *count = fc_st.ndevices;
    fc_unlock();
    return rc;
}

FC_EXPORT(cuDeviceGetName, (char *name, int len, CUdevice dev), (name, len, dev))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!name || len <= 0)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!fc_dev_valid(dev))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else
        snprintf(name, (size_t)len, "%s", FC_DEVICE_NAME);
    fc_unlock();
    return rc;
}

/* The 32-bit legacy form cannot describe a device of this size. */
FC_EXPORT(cuDeviceTotalMem, (unsigned int *bytes, CUdevice dev), (bytes, dev))
{
    (void)bytes;
    (void)dev;
    return CUDA_ERROR_NOT_SUPPORTED;
}

FC_EXPORT(cuDeviceTotalMem_v2, (size_t * bytes, CUdevice dev), (bytes, dev))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!bytes)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!fc_dev_valid(dev))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else
        *bytes = (size_t)FC_DEVICE_MEM;
    fc_unlock();
    return rc;
}

/* A plausible compute capability 9.0 device; everything unlisted reads 0. */
static int device_attribute(CUdevice_attribute a, CUdevice dev)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        return FC_SM_VERSION / 10;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        return FC_SM_VERSION % 10;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
        return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
        return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
        return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
        return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
        return 0x7fffffff;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
        return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
        return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
        return 48 * 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
        return FC_SMEM_OPTIN;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
        return 228 * 1024;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
        return 64 * 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
        return 65536;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        return FC_SM_COUNT;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
        return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
        return 65536;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK:
        return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
        return 2048;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
        return 1980000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
        return 5120;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
        return 50 * 1024 * 1024;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
        return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
        return 1;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
        return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
        return 1;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
        return 1; /* fc_vmm.c */
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
        return fc_st.managed; /* fc_hostmem.c */
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
        return dev + 1;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
        return (int)FC_MAX_PITCH;
    default:
        return 0;
    }
}

/* Deprecated since CUDA 5.0, still exported: the same numbers as the attributes. */
FC_EXPORT(cuDeviceComputeCapability, (int *major, int *minor, CUdevice dev), (major, minor, dev))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!major || !minor)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!fc_dev_valid(dev))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else {
        *major = device_attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
        *minor = device_attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    }
    fc_unlock();
    return rc;
}

/*
 * 16 octets that identify the device: fixed, distinct per ordinal, shaped
 * like a random (version 4, variant 1) UUID.  The fake has no MIG mode, so
 * the CUDA 9.2 form (the physical GPU's UUID) and the CUDA 11.4 form (the
 * MIG instance's, when there is one) answer the same.
 */
static CUresult device_uuid(CUuuid *uuid, CUdevice dev)
{
    static const unsigned char base[16] = { 0x67, 0x67, 0x75, 0x61, 0x72, 0x64, 0x4b, 0x66,
                                            0xa1, 0x6b, 0x65, 0x63, 0x75, 0x64, 0x61, 0x00 };
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!uuid)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!fc_dev_valid(dev))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else {
        memcpy(uuid->bytes, base, sizeof base);
        uuid->bytes[15] = (char)dev;
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuDeviceGetUuid, (CUuuid * uuid, CUdevice dev), (uuid, dev))
{
    return device_uuid(uuid, dev);
}

FC_EXPORT(cuDeviceGetUuid_v2, (CUuuid * uuid, CUdevice dev), (uuid, dev))
{
    return device_uuid(uuid, dev);
}

/*
 * The fake's devices have no peer-to-peer path (as GPUs on separate PCIe
 * root complexes): 0 for every pair, a device and itself included.  So
 * cuCtxEnablePeerAccess always fails with CUDA_ERROR_PEER_ACCESS_UNSUPPORTED.
 */
FC_EXPORT(cuDeviceCanAccessPeer, (int *canAccessPeer, CUdevice dev, CUdevice peerDev),
          (canAccessPeer, dev, peerDev))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!canAccessPeer)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!fc_dev_valid(dev) || !fc_dev_valid(peerDev))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else
        *canAccessPeer = 0;
    fc_unlock();
    return rc;
}

FC_EXPORT(cuDeviceGetAttribute, (int *pi, CUdevice_attribute attrib, CUdevice dev),
          (pi, attrib, dev))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pi || (int)attrib <= 0 || (int)attrib >= (int)CU_DEVICE_ATTRIBUTE_MAX)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!fc_dev_valid(dev))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else
        *pi = device_attribute(attrib, dev);
    fc_unlock();
    return rc;
}
