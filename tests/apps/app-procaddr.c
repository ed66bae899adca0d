/* Route 3: the CUDA runtime's way. Only cuGetProcAddress comes from dlsym;
 * it is asked for itself at 12000 (the 5-argument form), and that one for
 * every other function by base name at 12000 (every function of the table
 * has the signature it had in CUDA 12; the generic graph node functions at
 * 12030, driver-table.h). --ptsz asks for the per-thread default stream
 * variants, as code built with --default-stream per-thread does. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "driver-table.h"

int main(int argc, char **argv)
{
	struct app_driver d;
	PFN_cuGetProcAddress_v11030 gpa4;
	PFN_cuGetProcAddress_v12000 gpa5 = NULL;
	cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT;
	CUdriverProcAddressQueryResult status;
	void *h;

	if (argc == 3 && !strcmp(argv[1], "--ptsz")) {
		flags = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
		argv++;
		argc--;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: %s [--ptsz] KERNELS.ptx\n", argv[0]);
		return 64;
	}
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h || !(gpa4 = (PFN_cuGetProcAddress_v11030)dlsym(h, "cuGetProcAddress"))) {
		fprintf(stderr, "procaddr: no driver\n");
		return 3;
	}
	/* Before cuInit, as the runtime does. */
	if (gpa4("cuGetProcAddress", (void **)&gpa5, 12000, 0) != CUDA_SUCCESS || !gpa5) {
		fprintf(stderr, "procaddr: no cuGetProcAddress at 12000\n");
		return 3;
	}
#define APP_FN(field, export, pfn, base)                                                           \
	if (gpa5(base, (void **)&d.field, app_fn_version(base), flags, &status) != CUDA_SUCCESS || \
	    !d.field) {                                                                            \
		fprintf(stderr, "procaddr: %s missing (status %d)\n", base, (int)status);          \
		return 3;                                                                          \
	}
	APP_DRIVER_FUNCTIONS
#undef APP_FN
	return app_scenario(&d, flags ? "procaddr-ptsz" : "procaddr", argv[1]);
}
