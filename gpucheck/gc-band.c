/* gc-band KERNELS.ptx PAD SIZE...: reads red-zone bands back from the device
 * for scripts/gpu-check. Allocates one buffer per SIZE (cuMemAlloc_v2:
 * allocation indices 0, 1, ...), fills each with 0x11 on the device
 * (gg_fill), copies its SIZE bytes back with cuMemcpyDtoH_v2, and, when PAD
 * is not 0, reads the PAD bytes after its end with a kernel (gg_copy into a
 * PAD-byte buffer allocated after the others, then copied back): a copy that
 * reaches past the end is refused under gpuguard as without it, so only a
 * kernel sees the band. Prints, per buffer:
 *   user K: ok | N of SIZE bytes changed
 *   band K: xx xx ...          (the PAD bytes after the end; "not read" for PAD 0)
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
	CUfunction fill, copy;
	CUdeviceptr scratch = 0;
	int n = argc - 3;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 4 || n > MAX_BUFS) {
		fprintf(stderr, "usage: gc-band KERNELS.ptx PAD SIZE...\n");
		return 64;
	}
	pad = strtoul(argv[2], NULL, 0);
	mod = gc_setup(argv[1], &ctx);
	GC_CHECK(cuModuleGetFunction(&fill, mod, "gg_fill"));
	GC_CHECK(cuModuleGetFunction(&copy, mod, "gg_copy"));
	for (int k = 0; k < n; k++) {
		sizes[k] = strtoul(argv[3 + k], NULL, 0);
		GC_CHECK(cuMemAlloc_v2(&bufs[k], sizes[k]));
		gc_fill(fill, bufs[k], 0x11, sizes[k]);
	}
	GC_CHECK(cuCtxSynchronize());
	if (pad)
		GC_CHECK(cuMemAlloc_v2(&scratch, pad));
	for (int k = 0; k < n; k++) {
		size_t len = sizes[k] > pad ? sizes[k] : pad, changed = 0, size = 0;
		unsigned char *host = malloc(len);
		CUdeviceptr base = 0, band = bufs[k] + sizes[k];
		unsigned long long count = pad;
		void *params[] = { &scratch, &band, &count };
		CUresult rc;

		if (!host)
			return 3;
		rc = cuMemcpyDtoH_v2(host, bufs[k], sizes[k]);
		if (rc != CUDA_SUCCESS) {
			printf("user %d: unreadable (%s)\n", k, gc_err(rc));
		} else {
			for (size_t i = 0; i < sizes[k]; i++)
				changed += host[i] != 0x11;
			if (changed)
				printf("user %d: %zu of %zu bytes changed\n", k, changed, sizes[k]);
			else
				printf("user %d: ok\n", k);
		}
		if (!pad) {
			printf("band %d: not read\n", k);
		} else if ((rc = cuLaunchKernel(copy, 1, 1, 1, 64, 1, 1, 0, NULL, params, NULL)) ||
			   (rc = cuCtxSynchronize()) || (rc = cuMemcpyDtoH_v2(host, scratch, pad))) {
			printf("band %d: unreadable (%s)\n", k, gc_err(rc));
		} else {
			printf("band %d:", k);
			for (size_t i = 0; i < pad; i++)
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
	if (scratch)
		GC_CHECK(cuMemFree_v2(scratch));
	GC_CHECK(cuModuleUnload(mod));
	GC_CHECK(cuDevicePrimaryCtxRelease_v2(0));
	printf("done\n");
	return 0;
}
