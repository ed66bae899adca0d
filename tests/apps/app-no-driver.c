/* The shim with no driver anywhere: dlopen it directly (not preloaded) and
 * call its hooks. Each must return CUDA_ERROR_NOT_SUPPORTED, never crash. */
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
	alloc = (PFN_cuMemAlloc_v3020)dlsym(shim, "cuMemAlloc_v2");
	lookup = (PFN_cuModuleGetFunction_v2000)dlsym(shim, "cuModuleGetFunction");
	sync = (PFN_cuCtxSynchronize_v2000)dlsym(shim, "cuCtxSynchronize");
	gpa = (PFN_cuGetProcAddress_v12000)dlsym(shim, "cuGetProcAddress_v2");
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
