/* Result-code parity: every hooked entry point called with bad arguments, in
 * every state (before cuInit, no current context, with one). Prints each
 * result code and the output values; stdout must be byte-for-byte the same
 * with and without the shim. */
#include <stdio.h>
#include <string.h>

#include "driver-table.h"

#define SHOW(call) show(#call, (call))

static void show(const char *what, CUresult rc)
{
	const char *name = NULL;

	if (cuGetErrorName(rc, &name) != CUDA_SUCCESS)
		name = "?";
	printf("%-100s -> %d %s\n", what, (int)rc, name);
}

static const char garbage[] = "this is not a module image";

int main(int argc, char **argv)
{
	CUdeviceptr p = 0, q = 0, base = 0;
	size_t size = 0;
	CUmodule mod = NULL, m2 = NULL;
	CUfunction f = NULL;
	CUlibrary lib = NULL;
	CUkernel k = NULL;
	CUcontext ctx = NULL;
	CUstream stream = NULL;
	void *fn = NULL;
	unsigned long long v = 0;
	CUpointer_attribute attrs[2] = { CU_POINTER_ATTRIBUTE_RANGE_SIZE,
					 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR };
	unsigned long long out0 = 0, out1 = 0;
	void *data[2] = { &out0, &out1 };
	void *params[3];
	const char *ptx = argc > 1 ? argv[1] : "kernels.ptx";

	/* Before cuInit. */
	SHOW(cuMemAlloc_v2(&p, 16));
	SHOW(cuMemFree_v2(0x1000));
	SHOW(cuModuleGetFunction(&f, NULL, "gg_fill"));
	SHOW(cuModuleLoad(&mod, ptx));
	SHOW(cuCtxSynchronize());
	SHOW(cuGetProcAddress_v2("cuMemAlloc", &fn, 12000, 0, NULL));
	printf("pfn before init %s\n", fn ? "set" : "null");

	SHOW(cuInit(0));
	/* No current context. */
	SHOW(cuMemAlloc_v2(&p, 16));
	SHOW(cuMemAllocAsync(&p, 16, NULL));
	SHOW(cuModuleLoad(&mod, ptx));
	SHOW(cuCtxSynchronize());
	SHOW(cuCtxSynchronize_v2(NULL));
	SHOW(cuMemGetAddressRange_v2(&base, &size, 0x1000));

	SHOW(cuDevicePrimaryCtxRetain(&ctx, 0));
	SHOW(cuCtxSetCurrent(ctx));
	SHOW(cuStreamCreate(&stream, 0));

	/* Allocation and free. */
	SHOW(cuMemAlloc_v2(NULL, 16));
	SHOW(cuMemAlloc_v2(&p, 0));
	SHOW(cuMemAlloc_v2(&p, (size_t)1 << 62));
	SHOW(cuMemAlloc_v2(&p, 100));
	SHOW(cuMemFree_v2(p + 4));
	SHOW(cuMemFree_v2(0));
	SHOW(cuMemFree_v2(0xdead0000));
	SHOW(cuMemAllocAsync(NULL, 16, stream));
	SHOW(cuMemAllocAsync(&q, 0, stream));
	SHOW(cuMemAllocAsync_ptsz(&q, 0, stream));
	SHOW(cuMemFreeAsync(0xdead0000, stream));
	SHOW(cuMemFreeAsync_ptsz(0xdead0000, stream));
	SHOW(cuStreamSynchronize(stream));

	/* Queries. */
	SHOW(cuMemGetAddressRange_v2(&base, &size, p + 99));
	printf("range %s size %zu\n", base == p ? "base" : "other", size);
	SHOW(cuMemGetAddressRange_v2(NULL, NULL, p));
	SHOW(cuMemGetAddressRange_v2(&base, &size, 0xdead0000));
	SHOW(cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p));
	printf("range size attribute %llu\n", v);
	SHOW(cuPointerGetAttribute(NULL, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p));
	SHOW(cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_RANGE_SIZE, 0xdead0000));
	SHOW(cuPointerGetAttribute(&v, (CUpointer_attribute)9999, p));
	SHOW(cuPointerGetAttributes(2, attrs, data, p));
	printf("attributes %llu %s\n", out0, out1 == p ? "base" : "other");
	SHOW(cuPointerGetAttributes(0, NULL, NULL, p));
	SHOW(cuPointerGetAttributes(2, attrs, data, 0xdead0000));

	/* Modules, libraries and lookups. */
	SHOW(cuModuleLoad(&mod, "/nonexistent/kernels.ptx"));
	SHOW(cuModuleLoad(NULL, ptx));
	SHOW(cuModuleLoadData(&m2, NULL));
	SHOW(cuModuleLoadData(&m2, garbage));
	SHOW(cuModuleLoadDataEx(&m2, garbage, 0, NULL, NULL));
	SHOW(cuModuleLoadFatBinary(&m2, garbage));
	SHOW(cuModuleLoad(&mod, ptx));
	SHOW(cuModuleGetFunction(NULL, mod, "gg_fill"));
	SHOW(cuModuleGetFunction(&f, mod, NULL));
	SHOW(cuModuleGetFunction(&f, NULL, "gg_fill"));
	SHOW(cuModuleGetFunction(&f, mod, "no_such_kernel"));
	SHOW(cuModuleGetFunction(&f, mod, ""));
	SHOW(cuLibraryLoadData(&lib, NULL, NULL, NULL, 0, NULL, NULL, 0));
	SHOW(cuLibraryLoadData(&lib, garbage, NULL, NULL, 0, NULL, NULL, 0));
	SHOW(cuLibraryLoadFromFile(&lib, "/nonexistent/kernels.ptx", NULL, NULL, 0, NULL, NULL, 0));
	SHOW(cuLibraryLoadFromFile(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
	SHOW(cuLibraryGetKernel(&k, lib, "no_such_kernel"));
	SHOW(cuLibraryGetKernel(NULL, lib, "gg_fill"));
	SHOW(cuLibraryGetKernel(&k, NULL, "gg_fill"));
	SHOW(cuLibraryUnload(lib));
	SHOW(cuLibraryUnload(lib));
	SHOW(cuLibraryUnload(NULL));

	/* Launches. */
	params[0] = &p;
	params[1] = &v;
	params[2] = &v;
	SHOW(cuModuleGetFunction(&f, mod, "gg_fill"));
	SHOW(cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
	SHOW(cuLaunchKernel(f, 0, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
	SHOW(cuLaunchKernel_ptsz(f, 1, 1, 1, 0, 1, 1, 0, NULL, params, NULL));
	SHOW(cuLaunchCooperativeKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, params));
	SHOW(cuLaunchCooperativeKernel_ptsz(f, 0, 1, 1, 1, 1, 1, 0, NULL, params));
	SHOW(cuLaunchKernelEx(NULL, f, params, NULL));
	SHOW(cuLaunchKernelEx_ptsz(NULL, f, params, NULL));
	SHOW(cuCtxSynchronize());
	SHOW(cuModuleUnload(mod));
	SHOW(cuModuleUnload(mod));
	SHOW(cuModuleUnload(NULL));

	/* cuGetProcAddress. */
	SHOW(cuGetProcAddress_v2(NULL, &fn, 12000, 0, NULL));
	SHOW(cuGetProcAddress_v2("cuMemAlloc", NULL, 12000, 0, NULL));
	fn = (void *)1;
	SHOW(cuGetProcAddress_v2("cuNoSuchThing", &fn, 12000, 0, NULL));
	printf("pfn after a miss %s\n", fn == NULL ? "null" : "set");
	SHOW(cuGetProcAddress(NULL, &fn, 11030, 0));

	/* Teardown with bad handles. */
	SHOW(cuMemFree_v2(p));
	SHOW(cuMemFree_v2(p));
	SHOW(cuStreamDestroy_v2(stream));
	SHOW(cuCtxDestroy_v2(NULL));
	SHOW(cuDevicePrimaryCtxRelease_v2(99));
	SHOW(cuDevicePrimaryCtxReset_v2(-1));
	SHOW(cuDevicePrimaryCtxRelease_v2(0));
	SHOW(cuCtxSynchronize());
	return 0;
}
