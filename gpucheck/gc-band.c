/* gc-band KERNELS.ptx PAD SIZE...: reads red-zone bands back from the device
 * the way an application could, for scripts/gpu-check. Allocates one buffer
 * per SIZE (cuMemAlloc_v2: allocation indices 0, 1, ...), fills each with
 * 0x11 on the device (gg_fill), then copies SIZE + PAD bytes of each back with
 * cuMemcpyDtoH_v2 (past the end the application asked for: only gpuguard's
 * padding makes that memory part of the allocation) and prints, per buffer:
 *   user K: ok | N of SIZE bytes changed
 *   band K: xx xx ...          (the PAD bytes after the end)
 *   range K: base buffer|other size S   (cuMemGetAddressRange_v2 of the middle)
 * Then frees them all. */
#include <string.h>

#include "gc-common.h"

#define MAX_BUFS 64

int main(int argc, char **argv)
{
	CUdeviceptr bufs[MAX_BUFS];
	size_t sizes[MAX_BUFS], pad;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fill;
	int n = argc - 3;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 4 || n > MAX_BUFS) {
		fprintf(stderr, "usage: gc-band KERNELS.ptx PAD SIZE...\n");
		return 64;
	}
	pad = strtoul(argv[2], NULL, 0);
	mod = gc_setup(argv[1], &ctx);
	GC_CHECK(cuModuleGetFunction(&fill, mod, "gg_fill"));
	for (int k = 0; k < n; k++) {
		sizes[k] = strtoul(argv[3 + k], NULL, 0);
		GC_CHECK(cuMemAlloc_v2(&bufs[k], sizes[k]));
		gc_fill(fill, bufs[k], 0x11, sizes[k]);
	}
	GC_CHECK(cuCtxSynchronize());
	for (int k = 0; k < n; k++) {
		size_t len = sizes[k] + pad, changed = 0, size = 0;
		unsigned char *host = malloc(len);
		CUdeviceptr base = 0;
		CUresult rc;

		if (!host)
			return 3;
		rc = cuMemcpyDtoH_v2(host, bufs[k], len);
		if (rc != CUDA_SUCCESS) {
			printf("user %d: unreadable\nband %d: unreadable (%s)\n", k, k, gc_err(rc));
		} else {
			for (size_t i = 0; i < sizes[k]; i++)
				changed += host[i] != 0x11;
			if (changed)
				printf("user %d: %zu of %zu bytes changed\n", k, changed, sizes[k]);
			else
				printf("user %d: ok\n", k);
			printf("band %d:", k);
			for (size_t i = sizes[k]; i < len; i++)
				printf(" %02x", host[i]);
			printf("\n");
		}
		free(host);
		rc = cuMemGetAddressRange_v2(&base, &size, bufs[k] + sizes[k] / 2);
		printf("range %d: %s base %s size %zu\n", k, gc_err(rc),
		       base == bufs[k] ? "buffer" : "other", size);
	}
	for (int k = 0; k < n; k++)
		GC_CHECK(cuMemFree_v2(bufs[k]));
	GC_CHECK(cuModuleUnload(mod));
	GC_CHECK(cuDevicePrimaryCtxRelease_v2(0));
	printf("done\n");
	return 0;
}
