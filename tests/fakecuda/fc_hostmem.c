/*
 * Host memory the driver knows (page-locked allocations, registrations),
 * managed memory, and inter-process memory handles.
 *
 * What the fake device can do here follows its attributes, so a program
 * that asks before it uses a feature sees a consistent machine:
 *   - CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY is 0: page-locked memory is
 *     ordinary host memory for copies, and cuMemHostGetDevicePointer fails
 *     (the failure that cuMemHostAlloc's documentation defers to it);
 *   - CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED is 0: cuMemHostRegister is
 *     CUDA_ERROR_NOT_SUPPORTED;
 *   - CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY is 0: cuMemAllocManaged is
 *     CUDA_ERROR_NOT_SUPPORTED, as documented for such a device. With
 *     FAKECUDA_MANAGED=1 (a test knob) it is 1, and cuMemAllocManaged gives
 *     device memory marked managed (CU_POINTER_ATTRIBUTE_IS_MANAGED), freed
 *     by cuMemFree, which the host reaches through copies only (its
 *     addresses are the fake's device addresses: no host load can follow
 *     them, so a client that touches managed memory directly crashes);
 *   - memory lives in this process only: cuIpcGetMemHandle makes a handle,
 *     and cuIpcOpenMemHandle can map none (CUDA_ERROR_MAP_FAILED).
 */
#include "fc_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Page-locked host allocations                                              */
/* ------------------------------------------------------------------------ */

typedef struct host_alloc {
    fc_tnode node; /* key = host address, val = mapped length */
    size_t size;   /* requested */
    unsigned int flags;
    fc_ctx *ctx; /* freed with it, as the driver frees a context's resources */
} host_alloc;

/* Every live allocation, by address; under the driver lock. */
static fc_tnode *host_allocs;

static host_alloc *host_find(const void *p)
{
    if (!host_allocs)
        return NULL; /* the common case: a copy's host buffer in a process with none */
    host_alloc *h = (host_alloc *)fc_tree_floor(host_allocs, (uint64_t)(uintptr_t)p);
    if (!h || (uint64_t)(uintptr_t)p - h->node.key >= h->size)
        return NULL;
    return h;
}

bool fc_host_is_page_locked(const void *p, size_t n)
{
    host_alloc *h = host_find(p);
    return h && n <= h->size - ((uint64_t)(uintptr_t)p - h->node.key);
}

static void host_release(host_alloc *h)
{
    fc_tree_erase(&host_allocs, h->node.key);
    munmap((void *)(uintptr_t)h->node.key, (size_t)h->node.val);
    free(h);
}

typedef struct host_list {
    host_alloc **v;
    size_t n, cap;
} host_list;

static void host_collect(fc_tnode *t, const fc_ctx *c, host_list *out)
{
    if (!t)
        return;
    host_collect(t->l, c, out);
    host_alloc *h = (host_alloc *)t;
    if (h->ctx == c) {
        if (out->n == out->cap) {
            size_t cap = out->cap ? out->cap * 2 : 16;
            host_alloc **v = realloc(out->v, cap * sizeof *v);
            if (v) {
                out->v = v;
                out->cap = cap;
            }
        }
        if (out->n < out->cap)
            out->v[out->n++] = h;
    }
    host_collect(t->r, c, out);
}

void fc_host_ctx_teardown(fc_ctx *c)
{
    host_list l = { 0 };
    host_collect(host_allocs, c, &l);
    for (size_t i = 0; i < l.n; i++)
        host_release(l.v[i]);
    free(l.v);
}

/*
 * Page-aligned and mapped anew, so that a use after cuMemFreeHost (or after
 * its context is gone) faults.  The documentation does not say what a size
 * of 0 gives; like cuMemAlloc, it is CUDA_ERROR_INVALID_VALUE here.
 */
FC_EXPORT(cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int Flags), (pp, bytesize, Flags))
{
    const unsigned int known = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                               CU_MEMHOSTALLOC_WRITECOMBINED;
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS && (!pp || bytesize == 0 || (Flags & ~known)))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        size_t len = bytesize > SIZE_MAX - page ? 0 : (bytesize + page - 1) / page * page;
        host_alloc *h = len ? calloc(1, sizeof *h) : NULL;
        void *p = h ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                    : MAP_FAILED;
        if (p == MAP_FAILED) {
            free(h);
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            h->node.key = (uint64_t)(uintptr_t)p;
            h->node.val = len;
            h->size = bytesize;
            h->flags = Flags;
            h->ctx = c;
            fc_tree_insert(&host_allocs, &h->node, fc_rand());
            *pp = p;
        }
    }
    fc_unlock();
    return rc;
}

/* p must be what cuMemHostAlloc returned; anything else is INVALID_VALUE. */
FC_EXPORT(cuMemFreeHost, (void *p), (p))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    host_alloc *h = rc == CUDA_SUCCESS ? host_find(p) : NULL;
    if (rc == CUDA_SUCCESS && (!h || h->node.key != (uint64_t)(uintptr_t)p))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        host_release(h);
    fc_unlock();
    return rc;
}

/* Any address inside a cuMemHostAlloc allocation gives its flags. */
FC_EXPORT(cuMemHostGetFlags, (unsigned int *pFlags, void *p), (pFlags, p))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    host_alloc *h = rc == CUDA_SUCCESS ? host_find(p) : NULL;
    if (rc == CUDA_SUCCESS && (!pFlags || !h))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        *pFlags = h->flags;
    fc_unlock();
    return rc;
}

/* The 32-bit legacy form cannot describe this device's addresses. */
FC_EXPORT(cuMemHostGetDevicePointer, (CUdeviceptr_v1 * pdptr, void *p, unsigned int Flags),
          (pdptr, p, Flags))
{
    (void)pdptr;
    (void)p;
    (void)Flags;
    return CUDA_ERROR_NOT_SUPPORTED;
}

/*
 * "will fail if the CU_MEMHOSTALLOC_DEVICEMAP flag was not specified at the
 * time the memory was allocated, or if the function is called on a GPU that
 * does not support mapped pinned memory": the fake device is such a GPU.
 */
FC_EXPORT(cuMemHostGetDevicePointer_v2, (CUdeviceptr * pdptr, void *p, unsigned int Flags),
          (pdptr, p, Flags))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS)
        rc = CUDA_ERROR_INVALID_VALUE;
    (void)pdptr;
    (void)p;
    (void)Flags;
    fc_unlock();
    return rc;
}

static CUresult host_register(void *p, size_t bytesize, unsigned int Flags)
{
    const unsigned int known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                               CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS && (!p || bytesize == 0 || (Flags & ~known)))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        rc = CUDA_ERROR_NOT_SUPPORTED; /* HOST_REGISTER_SUPPORTED is 0 */
    fc_unlock();
    return rc;
}

FC_EXPORT(cuMemHostRegister, (void *p, size_t bytesize, unsigned int Flags), (p, bytesize, Flags))
{
    return host_register(p, bytesize, Flags);
}

FC_EXPORT(cuMemHostRegister_v2, (void *p, size_t bytesize, unsigned int Flags),
          (p, bytesize, Flags))
{
    return host_register(p, bytesize, Flags);
}

/* Nothing can be registered, so nothing can be unregistered. */
FC_EXPORT(cuMemHostUnregister, (void *p), (p))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS)
        rc = p ? CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED : CUDA_ERROR_INVALID_VALUE;
    fc_unlock();
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Managed memory                                                            */
/* ------------------------------------------------------------------------ */

FC_EXPORT(cuMemAllocManaged, (CUdeviceptr * dptr, size_t bytesize, unsigned int flags),
          (dptr, bytesize, flags))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS &&
        (!dptr || bytesize == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS && !fc_st.managed)
        rc = CUDA_ERROR_NOT_SUPPORTED; /* MANAGED_MEMORY is 0 */
    if (rc == CUDA_SUCCESS)
        rc = fc_mem_alloc(c, bytesize, NULL, dptr);
    if (rc == CUDA_SUCCESS)
        fc_mem_find_base(*dptr)->managed = true;
    fc_unlock();
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Inter-process memory handles                                              */
/* ------------------------------------------------------------------------ */

/* What a handle holds: who made it and which buffer (buffer ids are unique). */
typedef struct ipc_payload {
    char magic[16];
    uint64_t pid;
    uint64_t buffer_id;
    uint64_t size;
} ipc_payload;

_Static_assert(sizeof(ipc_payload) <= CU_IPC_HANDLE_SIZE, "an IPC payload fits a handle");

static const char ipc_magic[16] = "fakecuda ipc v1";

/*
 * dptr must be the base of a cuMemAlloc allocation (not stream-ordered pool
 * memory).  A freed and reallocated address gets a new handle, as documented,
 * because the buffer id differs.
 */
FC_EXPORT(cuIpcGetMemHandle, (CUipcMemHandle * pHandle, CUdeviceptr dptr), (pHandle, dptr))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    fc_alloc *a = rc == CUDA_SUCCESS ? fc_mem_find_base(dptr) : NULL;
    if (rc == CUDA_SUCCESS && (!pHandle || !a || a->pool || a->phys))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        ipc_payload pl = { .pid = (uint64_t)getpid(), .buffer_id = a->buffer_id, .size = a->size };
        memcpy(pl.magic, ipc_magic, sizeof pl.magic);
        memset(pHandle, 0, sizeof *pHandle);
        memcpy(pHandle->reserved, &pl, sizeof pl);
    }
    fc_unlock();
    return rc;
}

/*
 * A handle the fake did not make is CUDA_ERROR_INVALID_HANDLE.  One it made
 * names a buffer in some process's heap, which the fake cannot map into this
 * one: CUDA_ERROR_MAP_FAILED.
 */
static CUresult ipc_open(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS && (!pdptr || Flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        ipc_payload pl;
        memcpy(&pl, handle.reserved, sizeof pl);
        rc = memcmp(pl.magic, ipc_magic, sizeof pl.magic) == 0 ? CUDA_ERROR_MAP_FAILED
                                                               : CUDA_ERROR_INVALID_HANDLE;
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuIpcOpenMemHandle, (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int Flags),
          (pdptr, handle, Flags))
{
    return ipc_open(pdptr, handle, Flags);
}

FC_EXPORT(cuIpcOpenMemHandle_v2, (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int Flags),
          (pdptr, handle, Flags))
{
    return ipc_open(pdptr, handle, Flags);
}

/* No handle is ever open, so no pointer came from cuIpcOpenMemHandle. */
FC_EXPORT(cuIpcCloseMemHandle, (CUdeviceptr dptr), (dptr))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    if (rc == CUDA_SUCCESS)
        rc = CUDA_ERROR_INVALID_VALUE;
    (void)dptr;
    fc_unlock();
    return rc;
}
