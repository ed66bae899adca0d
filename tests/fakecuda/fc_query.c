/*
 * Memory queries (cuMemGetInfo, cuMemGetAddressRange, cuPointerGetAttribute
 * and cuPointerGetAttributes) and the fakecuda_* memory test controls.
 *
 * Attribute value types follow NVIDIA's own bindings (cuda-python's
 * HelperCUpointer_attribute): unsigned int for enums, ordinals and flags,
 * an int-sized boolean, unsigned long long for ids, size_t for sizes.
 */
#include "fc_internal.h"

#include <errno.h>
#include <string.h>

#include "fakecuda.h"

/* The legacy 32-bit forms cannot describe this device. */
FC_EXPORT(cuMemGetInfo, (unsigned int *free, unsigned int *total), (free, total))
{
    (void)free;
    (void)total;
    return CUDA_ERROR_NOT_SUPPORTED;
}

FC_EXPORT(cuMemGetAddressRange, (CUdeviceptr_v1 * pbase, unsigned int *psize, CUdeviceptr_v1 dptr),
          (pbase, psize, dptr))
{
    (void)pbase;
    (void)psize;
    (void)dptr;
    return CUDA_ERROR_NOT_SUPPORTED;
}

FC_EXPORT(cuMemGetInfo_v2, (size_t * free, size_t *total), (free, total))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS && (!free || !total))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        uint64_t avail = FC_DEVICE_MEM - fc_st.dev_used[c->dev];
        if (fc_st.mem_limit) {
            uint64_t left = fc_st.mem_used < fc_st.mem_limit ? fc_st.mem_limit - fc_st.mem_used : 0;
            if (left < avail)
                avail = left;
        }
        *free = (size_t)avail;
        *total = (size_t)FC_DEVICE_MEM;
    }
    fc_unlock();
    return rc;
}

/*
 * An interior pointer gives the allocation's base and requested size; either
 * output may be NULL.  A pointer in no allocation: CUDA_ERROR_NOT_FOUND, the
 * code the documentation lists for this function.
 */
FC_EXPORT(cuMemGetAddressRange_v2, (CUdeviceptr * pbase, size_t *psize, CUdeviceptr dptr),
          (pbase, psize, dptr))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS) {
        fc_alloc *a = fc_mem_find(dptr);
        if (!a) {
            rc = CUDA_ERROR_NOT_FOUND;
        } else {
            if (pbase)
                *pbase = (CUdeviceptr)a->node.key;
            if (psize)
                *psize = (size_t)a->size;
        }
    }
    fc_unlock();
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Pointer attributes                                                        */
/* ------------------------------------------------------------------------ */

static void put_uint(void *data, unsigned int v)
{
    memcpy(data, &v, sizeof v);
}

static void put_u64(void *data, unsigned long long v)
{
    memcpy(data, &v, sizeof v);
}

static void put_ptr(void *data, const void *v)
{
    memcpy(data, &v, sizeof v);
}

/*
 * Write attribute `attr` of allocation a (NULL: not a CUDA pointer, every
 * value its default) for pointer ptr.  Returns CUDA_ERROR_INVALID_VALUE for
 * an unknown attribute, CUDA_ERROR_NOT_SUPPORTED for ones the fake has no
 * meaning for (P2P tokens, exportable handle types).
 */
static CUresult put_attribute(void *data, CUpointer_attribute attr, const fc_alloc *a,
                              CUdeviceptr ptr)
{
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        put_ptr(data, a ? (const void *)a->ctx : NULL);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        put_uint(data, a ? (unsigned int)CU_MEMORYTYPE_DEVICE : 0u);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        put_u64(data, a ? ptr : 0);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: /* device memory has none */
        put_ptr(data, NULL);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: /* "Otherwise returns NULL" */
        put_ptr(data, a ? (const void *)a->pool : NULL);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        put_uint(data, a && a->managed);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
        put_uint(data, 0);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        put_uint(data, a && !a->pool && !a->phys); /* cuMemAlloc memory, not pool or VMM memory */
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        put_uint(data, a != NULL);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        put_u64(data, a ? a->buffer_id : 0);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        put_uint(data, a ? (unsigned int)a->dev : 0u);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        put_u64(data, a ? a->node.key : 0);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: {
        size_t v = a ? (size_t)a->size : 0;
        memcpy(data, &v, sizeof v);
        return CUDA_SUCCESS;
    }
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: {
        size_t v = a ? (size_t)a->extent : 0;
        memcpy(data, &v, sizeof v);
        return CUDA_SUCCESS;
    }
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: /* a mapping's as cuMemSetAccess set it (the same values) */
        put_uint(data, !a        ? 0u
                       : a->phys ? a->access
                                 : (unsigned int)CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        return CUDA_ERROR_NOT_SUPPORTED;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/*
 * A pointer the driver does not know: CUDA_ERROR_INVALID_VALUE ("not
 * allocated by, mapped by, or registered with a CUcontext").  The device
 * pointer attribute also needs a current context, as documented; the others
 * are answered from the unified address space alone.
 */
FC_EXPORT(cuPointerGetAttribute, (void *data, CUpointer_attribute attribute, CUdeviceptr ptr),
          (data, attribute, ptr))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_alloc *a = fc_mem_find(ptr);
    if (!data) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else if (attribute == CU_POINTER_ATTRIBUTE_DEVICE_POINTER) {
        fc_ctx *c;
        rc = fc_ctx_current(&c);
        if (rc == CUDA_SUCCESS && !a)
            rc = CUDA_ERROR_INVALID_VALUE;
    } else if (attribute == CU_POINTER_ATTRIBUTE_HOST_POINTER) {
        rc = CUDA_ERROR_INVALID_VALUE; /* no host pointer for device memory */
    } else if (!a) {
        unsigned char scratch[16];
        rc = put_attribute(scratch, attribute, NULL, ptr);
        if (rc == CUDA_SUCCESS)
            rc = CUDA_ERROR_INVALID_VALUE; /* a known attribute, an unknown pointer */
    }
    if (rc == CUDA_SUCCESS)
        rc = put_attribute(data, attribute, a, ptr);
    fc_unlock();
    return rc;
}

/*
 * "Unlike cuPointerGetAttribute, this function will not return an error
 * when the ptr encountered is not a valid CUDA pointer. Instead, the
 * attributes are assigned default NULL values and CUDA_SUCCESS is returned."
 */
FC_EXPORT(cuPointerGetAttributes,
          (unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
           CUdeviceptr ptr),
          (numAttributes, attributes, data, ptr))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!attributes || !data)
        rc = CUDA_ERROR_INVALID_VALUE;
    for (unsigned int i = 0; rc == CUDA_SUCCESS && i < numAttributes; i++)
        if (!data[i])
            rc = CUDA_ERROR_INVALID_VALUE;
    const fc_alloc *a = fc_mem_find(ptr);
    for (unsigned int i = 0; rc == CUDA_SUCCESS && i < numAttributes; i++)
        rc = put_attribute(data[i], attributes[i], a, ptr);
    fc_unlock();
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Test controls                                                             */
/* ------------------------------------------------------------------------ */

/* The allocation holding [addr, addr+n) within its extent, or NULL. */
static fc_alloc *extent_holding(CUdeviceptr addr, size_t n)
{
    fc_alloc *a = (fc_alloc *)fc_tree_floor(fc_st.allocs, addr);
    if (!a || addr - a->node.key >= a->extent || n > a->extent - (addr - a->node.key))
        return NULL;
    return a;
}

FC_PUBLIC int fakecuda_read(CUdeviceptr src, void *dst, size_t n)
{
    fc_lock();
    fc_alloc *a = extent_holding(src, n);
    if (a && n)
        memcpy(dst, a->host + (src - a->node.key), n);
    fc_unlock();
    return a ? 0 : -EFAULT;
}

FC_PUBLIC int fakecuda_write(CUdeviceptr dst, const void *src, size_t n)
{
    fc_lock();
    fc_alloc *a = extent_holding(dst, n);
    if (a && n)
        memcpy(a->host + (dst - a->node.key), src, n);
    fc_unlock();
    return a ? 0 : -EFAULT;
}

FC_PUBLIC void fakecuda_set_mem_limit(size_t bytes)
{
    fc_lock();
    fc_st.mem_limit = bytes;
    fc_unlock();
}

FC_PUBLIC size_t fakecuda_mem_used(void)
{
    fc_lock();
    size_t v = fc_st.mem_used;
    fc_unlock();
    return v;
}

FC_PUBLIC size_t fakecuda_live_allocations(void)
{
    fc_lock();
    size_t v = fc_st.live_allocs;
    fc_unlock();
    return v;
}
