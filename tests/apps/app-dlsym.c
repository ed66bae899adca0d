/* Route 2: dlopen("libcuda.so.1", RTLD_LOCAL) and dlsym(handle, exact name),
 * as XLA and PyTorch's driver stubs do. */
#include <dlfcn.h>
#include <stdio.h>

#include "driver-table.h"

int main(int argc, char **argv)
{
	struct app_driver d;
	void *h;

	if (argc != 2) {
		fprintf(stderr, "usage: %s KERNELS.ptx\n", argv[0]);
		return 64;
	}
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 3;
	}
#define APP_FN(field, export, pfn, base)                         \
	if (!(d.field = (pfn)dlsym(h, #export))) {               \
		fprintf(stderr, "dlsym: %s missing\n", #export); \
		return 3;                                        \
	}
	APP_DRIVER_FUNCTIONS
#undef APP_FN
	return app_scenario(&d, "dlsym", argv[1]);
}
