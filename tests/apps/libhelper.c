/* A library between the application and the driver: the call site of its
 * lookups and allocations is here, unless GPUGUARD_SKIP_OBJECTS skips it. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

CUresult helper_lookup(CUfunction *f, CUmodule mod, const char *name);
CUresult helper_alloc(CUdeviceptr *p, size_t bytes);

__attribute__((noinline)) CUresult helper_lookup(CUfunction *f, CUmodule mod, const char *name)
{
	CUresult rc = cuModuleGetFunction(f, mod, name);

	__asm__ volatile("" ::: "memory"); /* keep the call from becoming a tail call */
	return rc;
}

__attribute__((noinline)) CUresult helper_alloc(CUdeviceptr *p, size_t bytes)
{
	CUresult rc = cuMemAlloc_v2(p, bytes);

	__asm__ volatile("" ::: "memory");
	return rc;
}
