/*
 * CUDA arrays, as far as copies need them (cuMemcpyDtoA, cuMemcpyAtoD, and
 * the 2D, 3D and batched copies' array operands: fc_copy3d.c).
 *
 * An array's elements lie row after row, layer after layer, in a device
 * allocation of the current context made for it and never handed to the
 * application, so copies to and from it go through the device-memory paths
 * every other copy takes (streams, captures, faults).  The plain formats of
 * cuda.h's CUarray_format (8, 16 and 32-bit integers, half and float) with
 * 1, 2 or 4 channels are supported; the packed, planar and block-compressed
 * ones are CUDA_ERROR_INVALID_VALUE here, as are the cubemap, sparse and
 * deferred-mapping flags.  The 32-bit legacy forms (CUDA 2.0's descriptors)
 * are CUDA_ERROR_NOT_SUPPORTED, like the fake's other legacy forms.
 */
#include "fc_internal.h"

#include <stdlib.h>

fc_array *fc_array_get(CUarray h)
{
    return fc_handle_get(h, FC_K_ARRAY);
}

size_t fc_array_row_bytes(const fc_array *a)
{
    return a->desc.Width * a->elem;
}

size_t fc_array_rows(const fc_array *a)
{
    return a->desc.Height ? a->desc.Height : 1;
}

size_t fc_array_layers(const fc_array *a)
{
    return a->desc.Depth ? a->desc.Depth : 1;
}

/* Bytes of one element of `format` (one channel); 0 when unsupported. */
static size_t format_bytes(CUarray_format format)
{
    switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 0;
    }
}

#define FC_ARRAY_FLAGS \
    (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_TEXTURE_GATHER)

static CUresult array_create(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    if (!out || !d)
        return CUDA_ERROR_INVALID_VALUE;
    size_t fb = format_bytes(d->Format), bytes;
    if (!fb || (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4) || !d->Width ||
        (d->Depth && !d->Height) || (d->Flags & ~(unsigned)FC_ARRAY_FLAGS))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    fc_array *a = rc == CUDA_SUCCESS ? calloc(1, sizeof *a) : NULL;
    if (rc == CUDA_SUCCESS && !a)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
        a->desc = *d;
        a->elem = fb * d->NumChannels;
        if (__builtin_mul_overflow(fc_array_row_bytes(a), fc_array_rows(a), &bytes) ||
            __builtin_mul_overflow(bytes, fc_array_layers(a), &bytes))
            rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (rc == CUDA_SUCCESS)
        rc = fc_mem_alloc(c, bytes, NULL, &a->ptr);
    if (rc == CUDA_SUCCESS) {
        a->buffer_id = fc_mem_find_base(a->ptr)->buffer_id;
        fc_handle_add(&a->h, FC_K_ARRAY);
        *out = (CUarray)a;
    } else {
        free(a);
    }
    fc_unlock();
    return rc;
}

FC_EXPORT(cuArray3DCreate_v2, (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray),
          (pHandle, pAllocateArray))
{
    return array_create(pHandle, pAllocateArray);
}

FC_EXPORT(cuArrayCreate_v2, (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray),
          (pHandle, pAllocateArray))
{
    if (!pAllocateArray)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR d = { .Width = pAllocateArray->Width,
                                  .Height = pAllocateArray->Height,
                                  .Format = pAllocateArray->Format,
                                  .NumChannels = pAllocateArray->NumChannels };
    return array_create(pHandle, &d);
}

/* Its storage goes with it, unless its context's teardown took it already. */
FC_EXPORT(cuArrayDestroy, (CUarray hArray), (hArray))
{
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    fc_array *a = rc == CUDA_SUCCESS ? fc_array_get(hArray) : NULL;
    if (rc == CUDA_SUCCESS && !a)
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (rc == CUDA_SUCCESS) {
        /* Copies queued from or to it run first. */
        rc = fc_ctx_sync(c);
        fc_alloc *m = fc_mem_find_base(a->ptr);
        if (m && m->buffer_id == a->buffer_id)
            fc_mem_release(m);
        fc_handle_del(&a->h);
        free(a);
    }
    fc_unlock();
    return rc;
}

static CUresult describe(CUarray h, CUDA_ARRAY3D_DESCRIPTOR *out)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = fc_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    fc_ctx *c = NULL;
    rc = fc_ctx_current(&c);
    fc_array *a = rc == CUDA_SUCCESS ? fc_array_get(h) : NULL;
    if (rc == CUDA_SUCCESS && !a)
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (rc == CUDA_SUCCESS)
        *out = a->desc;
    fc_unlock();
    return rc;
}

FC_EXPORT(cuArray3DGetDescriptor_v2, (CUDA_ARRAY3D_DESCRIPTOR * pArrayDescriptor, CUarray hArray),
          (pArrayDescriptor, hArray))
{
    return describe(hArray, pArrayDescriptor);
}

/* A 3D array has no 2D descriptor. */
FC_EXPORT(cuArrayGetDescriptor_v2, (CUDA_ARRAY_DESCRIPTOR * pArrayDescriptor, CUarray hArray),
          (pArrayDescriptor, hArray))
{
    CUDA_ARRAY3D_DESCRIPTOR d;
    CUresult rc = describe(hArray, pArrayDescriptor ? &d : NULL);
    if (rc == CUDA_SUCCESS && d.Depth)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        *pArrayDescriptor = (CUDA_ARRAY_DESCRIPTOR){
            .Width = d.Width, .Height = d.Height, .Format = d.Format, .NumChannels = d.NumChannels
        };
    return rc;
}

/* The 32-bit legacy forms. */
FC_EXPORT(cuArrayCreate, (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *pAllocateArray),
          (pHandle, pAllocateArray))
{
    (void)pHandle, (void)pAllocateArray;
    return CUDA_ERROR_NOT_SUPPORTED;
}

FC_EXPORT(cuArray3DCreate, (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *pAllocateArray),
          (pHandle, pAllocateArray))
{
    (void)pHandle, (void)pAllocateArray;
    return CUDA_ERROR_NOT_SUPPORTED;
}

FC_EXPORT(cuArrayGetDescriptor, (CUDA_ARRAY_DESCRIPTOR_v1 * pArrayDescriptor, CUarray hArray),
          (pArrayDescriptor, hArray))
{
    (void)pArrayDescriptor, (void)hArray;
    return CUDA_ERROR_NOT_SUPPORTED;
}

FC_EXPORT(cuArray3DGetDescriptor, (CUDA_ARRAY3D_DESCRIPTOR_v1 * pArrayDescriptor, CUarray hArray),
          (pArrayDescriptor, hArray))
{
    (void)pArrayDescriptor, (void)hArray;
    return CUDA_ERROR_NOT_SUPPORTED;
}
