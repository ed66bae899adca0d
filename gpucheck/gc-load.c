/* gc-load FILE: load a module image from FILE, for scripts/gpu-check's image
 * preflight: once as a module from memory (cuModuleLoadData) and once as a
 * library (cuLibraryLoadData), printing each result; an image with no code
 * for this GPU is refused (CUDA_ERROR_NO_BINARY_FOR_GPU), or, for a lazily
 * loaded library, loads and fails where its kernel is used. */
#include <string.h>

#include "gc-common.h"

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule mod;
	CUlibrary lib;
	CUresult rc;
	FILE *f;
	long n;
	char *image;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2) {
		fprintf(stderr, "usage: gc-load FILE\n");
		return 64;
	}
	if (!(f = fopen(argv[1], "rb")) || fseek(f, 0, SEEK_END) || (n = ftell(f)) <= 0 ||
	    fseek(f, 0, SEEK_SET) || !(image = malloc((size_t)n + 1)) ||
	    fread(image, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "gc-load: %s cannot be read\n", argv[1]);
		return 3;
	}
	image[n] = '\0';
	fclose(f);
	GC_CHECK(cuInit(0));
	GC_CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
	GC_CHECK(cuCtxSetCurrent(ctx));
	rc = cuModuleLoadData(&mod, image);
	printf("module: %s\n", gc_err(rc));
	if (rc == CUDA_SUCCESS)
		GC_CHECK(cuModuleUnload(mod));
	rc = cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0);
	printf("library: %s\n", gc_err(rc));
	if (rc == CUDA_SUCCESS)
		GC_CHECK(cuLibraryUnload(lib));
	GC_CHECK(cuDevicePrimaryCtxRelease(0));
	free(image);
	return 0;
}
