/* The shim with no driver anywhere: dlopen it directly (not preloaded) and
 * call its hooks. Each must return CUDA_ERROR_NOT_SUPPORTED, never crash.
 * dlsym() does not see the hooks' hidden version (libgpuguard.map): ask for it. */
#include <dlfcn.h>
#include <stdio.h>

#include "driver-table.h"

int main(int argc, char **argv)
{
	void *shim;
	PFN_cuMemAlloc_v3020 alloc;
	PFN_cuModuleGetFunction_v2000 lookup;
	PFN_cuCtxSynchronize_v2000 sync;
	PFN_cuGetProcAddress_v12000 gpa;
	CUdeviceptr p = 0;
	CUfunction f = NULL;
	void *fn = NULL;

	if (argc != 2 || !(shim = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL))) {
		fprintf(stderr, "usage: %s LIBGPUGUARD.so (%s)\n", argv[0], dlerror());
		return 64;
	}
	alloc = (PFN_cuMemAlloc_v3020)dlvsym(shim, "cuMemAlloc_v2", "GPUGUARD_HOOK");
	lookup = (PFN_cuModuleGetFunction_v2000)dlvsym(shim, "cuModuleGetFunction", "GPUGUARD_HOOK");
	sync = (PFN_cuCtxSynchronize_v2000)dlvsym(shim, "cuCtxSynchronize", "GPUGUARD_HOOK");
	gpa = (PFN_cuGetProcAddress_v12000)dlvsym(shim, "cuGetProcAddress_v2", "GPUGUARD_HOOK");
	if (!alloc || !lookup || !sync || !gpa) {
		fprintf(stderr, "hooks missing from the shim\n");
		return 3;
	}
	printf("cuMemAlloc_v2 -> %d\n", (int)alloc(&p, 64));
	printf("cuModuleGetFunction -> %d\n", (int)lookup(&f, NULL, "k"));
	printf("cuCtxSynchronize -> %d\n", (int)sync());
	printf("cuGetProcAddress_v2 -> %d\n", (int)gpa("cuMemAlloc", &fn, 12000, 0, NULL));
	return 0;
}
