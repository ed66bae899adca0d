/* The cuGetProcAddress traps of test-hooks.c, each printed as "query: result
 * object:symbol". Run with and without the shim: the symbols must agree, and
 * only hooked exports may come back from libgpuguard.so. */
#include <dlfcn.h>
#include <stdio.h>

#include "describe.h"
#include "driver-table.h"

static PFN_cuGetProcAddress_v12000 gpa5;

static void query(const char *sym, int version, cuuint64_t flags, int with_status)
{
	CUdriverProcAddressQueryResult status = (CUdriverProcAddressQueryResult)-1;
	void *fn = (void *)1; /* the driver must overwrite it */
	char buf[256];
	CUresult rc = gpa5(sym, &fn, version, flags, with_status ? &status : NULL);

	printf("%s@%d/%llu%s: rc %d status %d -> %s\n", sym, version, (unsigned long long)flags,
	       with_status ? "" : " (NULL status)", (int)rc, (int)status,
	       fn == (void *)1 ? "untouched" : app_describe(fn, buf, sizeof(buf)));
}

int main(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	PFN_cuGetProcAddress_v11030 gpa4, self4 = NULL;
	char buf[256];
	CUresult rc;

	if (!h || !(gpa4 = (PFN_cuGetProcAddress_v11030)dlsym(h, "cuGetProcAddress"))) {
		fprintf(stderr, "procaddr-traps: no driver\n");
		return 3;
	}
	/* All before cuInit. The 4-argument form asked for itself at 11030 and 12000. */
	rc = gpa4("cuGetProcAddress", (void **)&self4, 11030, 0);
	printf("4-arg cuGetProcAddress@11030: rc %d -> %s\n", (int)rc,
	       app_describe((void *)self4, buf, sizeof(buf)));
	rc = gpa4("cuGetProcAddress", (void **)&gpa5, 12000, 0);
	printf("4-arg cuGetProcAddress@12000: rc %d -> %s\n", (int)rc,
	       app_describe((void *)gpa5, buf, sizeof(buf)));
	if (!gpa5)
		return 3;
	query("cuGetProcAddress", 11030, 0, 1);
	query("cuGetProcAddress", 12000, 0, 0);
	query("cuMemAlloc", 2000, 0, 1);
	query("cuMemAlloc", 3020, 0, 1);
	query("cuMemAlloc", 13000, 0, 0);
	query("cuMemFree", 2000, 0, 1);
	query("cuCtxSynchronize", 12000, 0, 1);
	query("cuCtxSynchronize", 13000, 0, 1);
	query("cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, 1);
	query("cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, 1);
	query("cuMemAllocAsync", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, 1);
	query("cuModuleGetFunction", 12000, 0, 1);
	query("cuMemcpyHtoD", 2000, 0, 1);
	query("cuMemcpyHtoD", 12000, 0, 1);
	query("cuMemsetD8Async", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, 1);
	query("cuMemcpyBatchAsync", 13000, 0, 1);
	query("cuGraphLaunch", 12000, 0, 1);
	query("cuGraphLaunch", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, 1);
	query("cuGraphInstantiate", 11000, 0, 1);
	query("cuGraphInstantiateWithFlags", 12000, 0, 1);
	query("cuGraphExecUpdate", 12000, 0, 1);
	query("cuGraphExecKernelNodeSetParams", 12000, 0, 1);
	query("cuStreamBeginCapture", 12000, 0, 1);
	query("cuStreamBeginCapture", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, 1);
	query("cuStreamEndCapture", 12000, 0, 1);
	query("cuArrayCreate", 12000, 0, 1);
	query("cuArray3DCreate", 12000, 0, 1);
	query("cuCtxCreate", 12000, 0, 1);
	query("cuDevicePrimaryCtxRetain", 12000, 0, 1);
	query("cuMemCreate", 12000, 0, 1);
	query("cuGraphUpload", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, 1);
	query("cuGraphAddMemAllocNode", 12000, 0, 1);
	query("cuDriverGetVersion", 12000, 0, 1);
	query("cuGetExportTable", 12000, 0, 1);
	query("cuNoSuchFunction", 12000, 0, 1);
	query("cuNoSuchFunction", 12000, 0, 0);
	query("cuMemAllocAsync", 11000, 0, 1);
	printf("NULL symbol: rc %d\n", (int)gpa5(NULL, (void **)&self4, 12000, 0, NULL));
	printf("NULL pfn: rc %d\n", (int)gpa5("cuMemAlloc", NULL, 12000, 0, NULL));
	return 0;
}
