/* cuda.h as the driver itself sees it: every exact versioned name declared
 * (cuMemAlloc and cuMemAlloc_v2, cuLaunchKernel and cuLaunchKernel_ptsz, ...),
 * plus cudaTypedefs.h's versioned PFN typedefs to check our signatures. */
#ifndef GG_SHIM_DRIVER_CUDA_API_H
#define GG_SHIM_DRIVER_CUDA_API_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>

#endif
