/*
 * Virtual memory management: address reservations (cuMemAddressReserve),
 * physical allocations (cuMemCreate), the mappings between them (cuMemMap)
 * and their access (cuMemSetAccess).
 *
 * A reservation is a range of the fake's device address space, taken out of
 * the free ranges cuMemAlloc draws from, so the two never overlap.  A
 * physical allocation is host backing memory charged to its device like
 * any allocation.  A mapping is an fc_alloc over the allocation's backing,
 * entered in the allocation tree like any allocation, so memcpy, memset,
 * kernels, cuMemGetAddressRange and the pointer attributes find it; it
 * differs in that a mapping starts with no access: until cuMemSetAccess
 * grants its device read or read-write access, copies and memsets through
 * it fail with CUDA_ERROR_INVALID_VALUE and a kernel touching it faults
 * (CUDA_ERROR_ILLEGAL_ADDRESS), as reserved but unmapped addresses do.
 *
 * Granularity: FC_VMM_GRANULE (2 MiB), minimum and recommended.  Sizes and
 * addresses of cuMemCreate and cuMemMap must be multiples of it;
 * reservations are page multiples (as documented) aligned to at least it.
 *
 * The errors are those cuda.h lists for each function; where it is silent,
 * CUDA_ERROR_INVALID_VALUE:
 *   - the fake refuses cuMemAddressFree of a range that still has mappings
 *     (the documentation does not say; unmapping first is the documented
 *     order), and cuMemUnmap / cuMemSetAccess of a range that is not made
 *     of whole mappings, with no gaps ("cannot unmap a sub-range", "a fully
 *     mapped address range");
 *   - what the device reports it cannot do is CUDA_ERROR_NOT_SUPPORTED: host
 *     locations, exportable handle types, GPUDirect RDMA, compressed or tile
 *     pool memory, and access from a peer device (CUDA_ERROR_INVALID_DEVICE,
 *     as for an ordinal that is no device: no peer access here).
 * cuMemUnmap and cuMemSetAccess are synchronous ("\note_sync"): queued work
 * of every stream runs first.  cuMemRelease of a mapped allocation keeps
 * its memory until the last mapping goes, as documented.
 */
#include "fc_internal.h"

#include <stdlib.h>
#include <unistd.h>

/* A cuMemCreate allocation; its address is the CUmemGenericAllocationHandle. */
typedef struct fc_phys {
    fc_handle h; /* registered while a reference is held */
    int dev;
    uint64_t size;
    unsigned char *host;
    unsigned int refs; /* cuMemCreate, cuMemRetainAllocationHandle, less cuMemRelease */
    unsigned int maps; /* live mappings */
} fc_phys;

static fc_phys *phys_get(CUmemGenericAllocationHandle handle)
{
    return fc_handle_get((const void *)(uintptr_t)handle, FC_K_PHYS);
}

/* Freed once nothing refers to it: no handle reference, no mapping. */
static void phys_put(fc_phys *ph)
{
    if (ph->refs || ph->maps)
        return;
    fc_mem_backing_free(ph->host, ph->size);
    fc_mem_uncharge(ph->dev, ph->size, ph->size);
    free(ph);
}

/* The mapping that holds addr, or NULL. */
static fc_alloc *mapping_at(uint64_t addr)
{
    fc_alloc *a = fc_mem_find(addr);
    return a && a->phys ? a : NULL;
}

/*
 * Whether [ptr, ptr+size) is made of whole mappings with no gap between
 * them: what cuMemUnmap and cuMemSetAccess take.
 */
static bool whole_mappings(uint64_t ptr, uint64_t size)
{
    uint64_t end = ptr + size;
    if (size == 0 || end < ptr)
        return false;
    while (ptr < end) {
        fc_alloc *a = fc_mem_find_base(ptr);
        if (!a || !a->phys || a->size > end - ptr)
            return false;
        ptr += a->size;
    }
    return true;
}

/* ------------------------------------------------------------------------ */
/* Allocation properties and granularity                                     */
/* ------------------------------------------------------------------------ */

/*
 * CUmemAllocationProp as cuMemCreate documents it: pinned memory of a
 * device, no Windows metadata.  Compression is a hint ("Applications are
 * expected to query" what they got) the fake does not take.
 */
static CUresult prop_check(const CUmemAllocationProp *prop, CUresult bad_device)
{
    const unsigned int usages = CU_MEM_CREATE_USAGE_TILE_POOL | CU_MEM_CREATE_USAGE_HW_DECOMPRESS;
    if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || prop->win32HandleMetaData ||
        (prop->allocFlags.compressionType != CU_MEM_ALLOCATION_COMP_NONE &&
         prop->allocFlags.compressionType != CU_MEM_ALLOCATION_COMP_GENERIC) ||
        (prop->allocFlags.usage & ~usages))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = fc_mem_location_check(&prop->location, bad_device);
    if (rc == CUDA_SUCCESS)
        rc = fc_mem_handle_types_check(prop->requestedHandleTypes);
    /* GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED reads 0; no sparse arrays to
     * back, no decompression engine. */
    if (rc == CUDA_SUCCESS && (prop->allocFlags.gpuDirectRDMACapable || prop->allocFlags.usage))
        rc = CUDA_ERROR_NOT_SUPPORTED;
    return rc;
}

FC_EXPORT(cuMemGetAllocationGranularity,
          (size_t * granularity, const CUmemAllocationProp *prop,
           CUmemAllocationGranularity_flags option),
          (granularity, prop, option))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                         option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        rc = prop_check(prop, CUDA_ERROR_INVALID_VALUE); /* its list has no INVALID_DEVICE */
    if (rc == CUDA_SUCCESS)
        *granularity = (size_t)FC_VMM_GRANULE;
    fc_unlock();
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Address reservations                                                      */
/* ------------------------------------------------------------------------ */

/*
 * "The size and address parameters must be a multiple of the host page
 * size and the alignment must be a power of two or zero for default
 * alignment"; the fake aligns every reservation to at least the
 * granularity, so a reservation can be mapped from its start.  A hint that
 * is taken or misaligned is passed over, as a hint may be.
 */
FC_EXPORT(cuMemAddressReserve,
          (CUdeviceptr * ptr, size_t size, size_t alignment, CUdeviceptr addr,
           unsigned long long flags),
          (ptr, size, alignment, addr, flags))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    if (!ptr || size == 0 || size % page || addr % page || (alignment & (alignment - 1)) || flags)
        rc = CUDA_ERROR_INVALID_VALUE;
    uint64_t align = alignment > FC_VMM_GRANULE ? alignment : FC_VMM_GRANULE;
    uint64_t start = 0;
    fc_tnode *r = NULL;
    if (rc == CUDA_SUCCESS && !(r = calloc(1, sizeof *r)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS && !fc_va_reserve(size, align, addr, &start))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
        r->key = start;
        r->val = size;
        fc_tree_insert(&fc_st.reserved, r, fc_rand());
        *ptr = (CUdeviceptr)start;
    } else {
        free(r);
    }
    fc_unlock();
    return rc;
}

/* "The size must match what was given to memAddressReserve and the ptr
 * given must match what was returned"; no mapping may be left in it. */
FC_EXPORT(cuMemAddressFree, (CUdeviceptr ptr, size_t size), (ptr, size))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_tnode *r = fc_tree_find(fc_st.reserved, ptr);
    /* Any allocation record starting in the range is one of its mappings. */
    fc_tnode *last = r && size ? fc_tree_floor(fc_st.allocs, ptr + size - 1) : NULL;
    if (!r || r->val != size || (last && last->key >= ptr)) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else {
        fc_tree_erase(&fc_st.reserved, ptr);
        free(r);
        fc_va_release(ptr, size);
    }
    fc_unlock();
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Physical allocations                                                      */
/* ------------------------------------------------------------------------ */

FC_EXPORT(cuMemCreate,
          (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp *prop,
           unsigned long long flags),
          (handle, size, prop, flags))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!handle || flags || size == 0 || size % FC_VMM_GRANULE)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        rc = prop_check(prop, CUDA_ERROR_INVALID_DEVICE);
    fc_phys *ph = NULL;
    if (rc == CUDA_SUCCESS)
        rc = fc_mem_charge(prop->location.id, size, size);
    if (rc == CUDA_SUCCESS) {
        ph = calloc(1, sizeof *ph);
        if (!ph || !(ph->host = fc_mem_backing_new(size))) {
            free(ph);
            fc_mem_uncharge(prop->location.id, size, size);
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    if (rc == CUDA_SUCCESS) {
        ph->dev = prop->location.id;
        ph->size = size;
        ph->refs = 1;
        fc_handle_add(&ph->h, FC_K_PHYS);
        *handle = (CUmemGenericAllocationHandle)(uintptr_t)ph;
    }
    fc_unlock();
    return rc;
}

/* "If handle is not a valid handle the behavior is undefined": here
 * CUDA_ERROR_INVALID_VALUE. */
FC_EXPORT(cuMemRelease, (CUmemGenericAllocationHandle handle), (handle))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_phys *ph = phys_get(handle);
    if (!ph) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else if (--ph->refs == 0) {
        fc_handle_del(&ph->h);
        phys_put(ph);
    }
    fc_unlock();
    return rc;
}

/* Any address of a mapping; the handle is the one that was mapped, with
 * one more reference (a released one becomes valid again). */
FC_EXPORT(cuMemRetainAllocationHandle, (CUmemGenericAllocationHandle * handle, void *addr),
          (handle, addr))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_alloc *m = mapping_at((uint64_t)(uintptr_t)addr);
    if (!handle || !m) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else {
        fc_phys *ph = m->phys;
        if (ph->refs++ == 0)
            fc_handle_add(&ph->h, FC_K_PHYS);
        *handle = (CUmemGenericAllocationHandle)(uintptr_t)ph;
    }
    fc_unlock();
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Mappings                                                                  */
/* ------------------------------------------------------------------------ */

/* Whether [ptr, ptr+size) lies inside one reservation. */
static bool in_one_reservation(uint64_t ptr, uint64_t size)
{
    fc_tnode *r = fc_tree_floor(fc_st.reserved, ptr);
    return r && ptr - r->key < r->val && size <= r->val - (ptr - r->key);
}

/*
 * "This range must be an address reservation previously reserved with
 * cuMemAddressReserve", not mapped yet; ptr and size multiples of the
 * granularity, size at most the allocation's; offset "currently must be
 * zero"; flags zero.
 */
FC_EXPORT(cuMemMap,
          (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
           unsigned long long flags),
          (ptr, size, offset, handle, flags))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_phys *ph = phys_get(handle);
    if (!ph || flags || offset || size == 0 || size % FC_VMM_GRANULE || ptr % FC_VMM_GRANULE ||
        size > ph->size || !in_one_reservation(ptr, size))
        rc = CUDA_ERROR_INVALID_VALUE;
    /* In a reservation every allocation record is a mapping. */
    fc_alloc *prev = rc == CUDA_SUCCESS ? (fc_alloc *)fc_tree_floor(fc_st.allocs, ptr + size - 1)
                                        : NULL;
    if (prev && prev->node.key + prev->size > ptr)
        rc = CUDA_ERROR_INVALID_VALUE; /* "not currently mapped" */
    fc_alloc *m = NULL;
    if (rc == CUDA_SUCCESS && !(m = calloc(1, sizeof *m)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
        m->node.key = ptr;
        m->size = m->extent = size;
        m->host = ph->host + offset;
        m->dev = ph->dev;
        m->buffer_id = fc_st.next_buffer_id++;
        m->phys = ph;
        m->access = CU_MEM_ACCESS_FLAGS_PROT_NONE; /* "all mappings start with no accessibility" */
        fc_mem_link(m);
        ph->maps++;
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuMemUnmap, (CUdeviceptr ptr, size_t size), (ptr, size))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!whole_mappings(ptr, size)) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else {
        fc_sync_all();
        for (uint64_t at = ptr; at < ptr + size;) {
            fc_alloc *m = fc_mem_find_base(at);
            fc_phys *ph = m->phys;
            at += m->size;
            fc_mem_unlink(m);
            free(m);
            ph->maps--;
            phys_put(ph);
        }
    }
    fc_unlock();
    return rc;
}

/* CU_MEM_ACCESS_FLAGS_PROT_* of a descriptor, for a device of the fake. */
static CUresult access_desc_check(const CUmemAccessDesc *d)
{
    if (d->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE; /* device memory; no host access here */
    if (!fc_dev_valid(d->location.id))
        return CUDA_ERROR_INVALID_DEVICE;
    if (d->flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && d->flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        d->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* A device may be given access to its own memory only: no peer access. */
static CUresult access_peer_check(uint64_t ptr, uint64_t size, const CUmemAccessDesc *d)
{
    for (uint64_t at = ptr; at < ptr + size;) {
        const fc_alloc *m = fc_mem_find_base(at);
        if (d->location.id != m->dev && d->flags != CU_MEM_ACCESS_FLAGS_PROT_NONE)
            return CUDA_ERROR_INVALID_DEVICE;
        at += m->size;
    }
    return CUDA_SUCCESS;
}

FC_EXPORT(cuMemSetAccess, (CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count),
          (ptr, size, desc, count))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!desc || count == 0)
        rc = CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; rc == CUDA_SUCCESS && i < count; i++)
        rc = access_desc_check(&desc[i]);
    if (rc == CUDA_SUCCESS && !whole_mappings(ptr, size))
        rc = CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; rc == CUDA_SUCCESS && i < count; i++)
        rc = access_peer_check(ptr, size, &desc[i]);
    if (rc == CUDA_SUCCESS) {
        fc_sync_all();
        for (uint64_t at = ptr; at < ptr + size;) {
            fc_alloc *m = fc_mem_find_base(at);
            for (size_t i = 0; i < count; i++)
                if (desc[i].location.id == m->dev)
                    m->access = (unsigned int)desc[i].flags;
            at += m->size;
        }
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuMemGetAccess,
          (unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr),
          (flags, location, ptr))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    const fc_alloc *m = mapping_at(ptr);
    if (!flags || !location || location->type != CU_MEM_LOCATION_TYPE_DEVICE)
        rc = CUDA_ERROR_INVALID_VALUE;
    else if (!fc_dev_valid(location->id))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else if (!m)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        *flags = location->id == m->dev ? m->access : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    fc_unlock();
    return rc;
}
