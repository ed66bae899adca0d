/*
 * Stream-ordered memory pools: each device's default pool, and the pools
 * cuMemPoolCreate makes.
 *
 * A device's current pool (its default until cuDeviceSetMemPool names
 * another of its pools) is what cuMemAllocAsync takes memory from;
 * cuMemAllocFromPoolAsync names its pool (fc_mem.c records the pool in each
 * such allocation).  A freed allocation goes back to the device at once,
 * so a pool never holds memory it does not hand out: its reserved bytes
 * are its used bytes, and trimming has nothing to give back.  The release
 * threshold and the reuse switches are kept and read back as set; they
 * change nothing here.  A created pool's maxSize caps its used bytes
 * (CUDA_ERROR_OUT_OF_MEMORY beyond).
 *
 * cuMemPoolDestroy invalidates the handle at once; the pool's allocations
 * stay usable and freeable, and the pool goes with the last of them, as
 * documented.  A device's default pool cannot be destroyed.
 */
#include "fc_internal.h"

#include <stdlib.h>
#include <string.h>

static void pool_setup(fc_pool *p, int dev)
{
    memset(p, 0, sizeof *p);
    p->dev = dev;
    /* "(default 0)" and "(default enabled)" three times. */
    p->reuse_follow_event_deps = p->reuse_opportunistic = p->reuse_internal_deps = 1;
    fc_handle_add(&p->h, FC_K_POOL);
}

void fc_pool_init(void)
{
    for (int d = 0; d < fc_st.ndevices; d++) {
        pool_setup(&fc_st.pools[d], d);
        fc_st.current_pool[d] = &fc_st.pools[d];
    }
}

static bool is_default(const fc_pool *p)
{
    return p == &fc_st.pools[p->dev];
}

bool fc_pool_fits(const fc_pool *p, uint64_t extent)
{
    return !p->max_size || (p->used <= p->max_size && extent <= p->max_size - p->used);
}

void fc_pool_account(fc_pool *p, uint64_t extent, bool made)
{
    if (made) {
        p->live++;
        p->used += extent;
        if (p->used > p->used_high)
            p->used_high = p->used;
        if (p->used > p->reserved_high)
            p->reserved_high = p->used;
    } else {
        p->live--;
        p->used -= extent;
        if (p->destroyed && p->live == 0)
            free(p);
    }
}

CUresult fc_mem_location_check(const CUmemLocation *loc, CUresult bad_device)
{
    switch (loc->type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        return fc_dev_valid(loc->id) ? CUDA_SUCCESS : bad_device;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        return CUDA_ERROR_NOT_SUPPORTED;
    default: /* HOST_NUMA_CURRENT is documented as invalid here */
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult fc_mem_handle_types_check(CUmemAllocationHandleType types)
{
    const unsigned int known = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_WIN32 |
                               CU_MEM_HANDLE_TYPE_WIN32_KMT | CU_MEM_HANDLE_TYPE_FABRIC;
    if ((unsigned int)types & ~known)
        return CUDA_ERROR_INVALID_VALUE;
    return types == CU_MEM_HANDLE_TYPE_NONE ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED;
}

/* CUmemPoolProps as cuMemPoolCreate documents it; what the fake's devices
 * report they lack (managed or host pools, IPC handle types, hardware
 * decompression) is CUDA_ERROR_NOT_SUPPORTED. */
static CUresult pool_props_check(const CUmemPoolProps *pp)
{
    static const unsigned char zero[sizeof pp->reserved];
    if (pp->allocType == CU_MEM_ALLOCATION_TYPE_MANAGED)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (pp->allocType != CU_MEM_ALLOCATION_TYPE_PINNED || pp->win32SecurityAttributes ||
        memcmp(pp->reserved, zero, sizeof zero) != 0 ||
        (pp->usage & ~CU_MEM_POOL_CREATE_USAGE_HW_DECOMPRESS))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = fc_mem_location_check(&pp->location, CUDA_ERROR_INVALID_VALUE);
    if (rc == CUDA_SUCCESS)
        rc = fc_mem_handle_types_check(pp->handleTypes);
    if (rc == CUDA_SUCCESS && pp->usage)
        rc = CUDA_ERROR_NOT_SUPPORTED;
    return rc;
}

FC_EXPORT(cuMemPoolCreate, (CUmemoryPool * pool, const CUmemPoolProps *poolProps),
          (pool, poolProps))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pool || !poolProps)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        rc = pool_props_check(poolProps);
    fc_pool *p = NULL;
    if (rc == CUDA_SUCCESS && !(p = malloc(sizeof *p)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
        pool_setup(p, poolProps->location.id);
        p->max_size = poolProps->maxSize;
        *pool = (CUmemoryPool)p;
    }
    fc_unlock();
    return rc;
}

/* "A device's default memory pool cannot be destroyed": CUDA_ERROR_INVALID_VALUE. */
FC_EXPORT(cuMemPoolDestroy, (CUmemoryPool pool), (pool))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_pool *p = fc_handle_get(pool, FC_K_POOL);
    if (!p || is_default(p)) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else {
        fc_handle_del(&p->h);
        /* "Destroying the current mempool of a device sets the default
         * mempool of that device as the current mempool for that device." */
        if (fc_st.current_pool[p->dev] == p)
            fc_st.current_pool[p->dev] = &fc_st.pools[p->dev];
        if (p->live == 0)
            free(p);
        else
            p->destroyed = true;
    }
    fc_unlock();
    return rc;
}

/* Its documented results: CUDA_ERROR_INVALID_DEVICE for a device that is not one. */
FC_EXPORT(cuDeviceGetDefaultMemPool, (CUmemoryPool * pool_out, CUdevice dev), (pool_out, dev))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pool_out)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!fc_dev_valid(dev))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else
        *pool_out = (CUmemoryPool)&fc_st.pools[dev];
    fc_unlock();
    return rc;
}

/* "By default the current mempool is the default mempool for a device";
 * its documented results are CUDA_SUCCESS and CUDA_ERROR_INVALID_VALUE. */
FC_EXPORT(cuDeviceGetMemPool, (CUmemoryPool * pool, CUdevice dev), (pool, dev))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pool || !fc_dev_valid(dev))
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        *pool = (CUmemoryPool)fc_st.current_pool[dev];
    fc_unlock();
    return rc;
}

/* "The memory pool must be local to the specified device": one of its
 * pools, which becomes the one cuMemAllocAsync allocates from. */
FC_EXPORT(cuDeviceSetMemPool, (CUdevice dev, CUmemoryPool pool), (dev, pool))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_pool *p = fc_handle_get(pool, FC_K_POOL);
    if (!p || !fc_dev_valid(dev) || p->dev != dev)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        fc_st.current_pool[dev] = p;
    fc_unlock();
    return rc;
}

static bool is_reuse_attr(CUmemPool_attribute a)
{
    return a == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES ||
           a == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC ||
           a == CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
}

static int *reuse_field(fc_pool *p, CUmemPool_attribute a)
{
    if (a == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES)
        return &p->reuse_follow_event_deps;
    if (a == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC)
        return &p->reuse_opportunistic;
    return &p->reuse_internal_deps;
}

/* The value types are those the documentation gives: int for the reuse
 * switches, cuuint64_t for the byte counts. */
FC_EXPORT(cuMemPoolGetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value),
          (pool, attr, value))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_pool *p = fc_handle_get(pool, FC_K_POOL);
    if (!p || !value) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else if (is_reuse_attr(attr)) {
        *(int *)value = *reuse_field(p, attr);
    } else {
        cuuint64_t v;
        switch (attr) {
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
            v = p->release_threshold;
            break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
            v = p->used;
            break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
            v = p->reserved_high;
            break;
        case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
            v = p->used;
            break;
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
            v = p->used_high;
            break;
        default:
            rc = CUDA_ERROR_INVALID_VALUE;
            break;
        }
        if (rc == CUDA_SUCCESS)
            *(cuuint64_t *)value = v;
    }
    fc_unlock();
    return rc;
}

/*
 * The current byte counts are not settable; a high watermark "can only be
 * reset to zero" (the runtime's cudaMemPoolAttr*MemHigh; the driver's says
 * "It is illegal to set this attribute to a non-zero value"), after which
 * it follows the current use again.
 */
FC_EXPORT(cuMemPoolSetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value),
          (pool, attr, value))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_pool *p = fc_handle_get(pool, FC_K_POOL);
    if (!p || !value) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else if (is_reuse_attr(attr)) {
        *reuse_field(p, attr) = *(const int *)value != 0;
    } else {
        cuuint64_t v = *(const cuuint64_t *)value;
        switch (attr) {
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
            p->release_threshold = v;
            break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
            if (v != 0)
                rc = CUDA_ERROR_INVALID_VALUE;
            else
                p->reserved_high = p->used;
            break;
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
            if (v != 0)
                rc = CUDA_ERROR_INVALID_VALUE;
            else
                p->used_high = p->used;
            break;
        default:
            rc = CUDA_ERROR_INVALID_VALUE;
            break;
        }
    }
    fc_unlock();
    return rc;
}

/* The pool holds nothing it could give back (see the top of this file). */
FC_EXPORT(cuMemPoolTrimTo, (CUmemoryPool pool, size_t minBytesToKeep), (pool, minBytesToKeep))
{
    (void)minBytesToKeep;
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!fc_handle_get(pool, FC_K_POOL))
        rc = CUDA_ERROR_INVALID_VALUE;
    fc_unlock();
    return rc;
}

/*
 * As cuMemAllocAsync, from the given pool, whose device may differ from the
 * stream's ("The specified memory pool may be from a device different than
 * that of the specified hStream"); the allocation then belongs to no
 * context of the stream's.
 */
static CUresult alloc_from_pool(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream h,
                                bool per_thread)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_stream *s = NULL;
    rc = fc_stream_for_work(h, per_thread, &s);
    fc_pool *p = fc_handle_get(pool, FC_K_POOL);
    if (rc == CUDA_SUCCESS && (!dptr || bytesize == 0 || !p))
        rc = CUDA_ERROR_INVALID_VALUE;
    /* Captured, an allocation node: the graph owns the memory, not the pool. */
    if (rc == CUDA_SUCCESS && s->cap)
        rc = fc_capture_alloc(s, bytesize, p->dev, dptr);
    else if (rc == CUDA_SUCCESS)
        rc = fc_mem_alloc(s->ctx->dev == p->dev ? s->ctx : NULL, bytesize, p, dptr);
    fc_unlock();
    return rc;
}

FC_EXPORT(cuMemAllocFromPoolAsync,
          (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),
          (dptr, bytesize, pool, hStream))
{
    return alloc_from_pool(dptr, bytesize, pool, hStream, false);
}

FC_EXPORT(cuMemAllocFromPoolAsync_ptsz,
          (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),
          (dptr, bytesize, pool, hStream))
{
    return alloc_from_pool(dptr, bytesize, pool, hStream, true);
}
