/* The driver functions the test apps use, once: exact export name, PFN type
 * and the base name cuGetProcAddress is asked for. */
#ifndef GG_TESTS_APPS_DRIVER_TABLE_H
#define GG_TESTS_APPS_DRIVER_TABLE_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>

/* APP_FN(field, export, PFN type, base name) */
#define APP_DRIVER_FUNCTIONS                                                                          \
	APP_FN(Init, cuInit, PFN_cuInit_v2000, "cuInit")                                              \
	APP_FN(DeviceGet, cuDeviceGet, PFN_cuDeviceGet_v2000, "cuDeviceGet")                          \
	APP_FN(PrimaryCtxRetain, cuDevicePrimaryCtxRetain, PFN_cuDevicePrimaryCtxRetain_v7000,        \
	       "cuDevicePrimaryCtxRetain")                                                            \
	APP_FN(PrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, PFN_cuDevicePrimaryCtxRelease_v11000, \
	       "cuDevicePrimaryCtxRelease")                                                           \
	APP_FN(CtxSetCurrent, cuCtxSetCurrent, PFN_cuCtxSetCurrent_v4000, "cuCtxSetCurrent")          \
	APP_FN(CtxSynchronize, cuCtxSynchronize, PFN_cuCtxSynchronize_v2000, "cuCtxSynchronize")      \
	APP_FN(ModuleLoad, cuModuleLoad, PFN_cuModuleLoad_v2000, "cuModuleLoad")                      \
	APP_FN(ModuleUnload, cuModuleUnload, PFN_cuModuleUnload_v2000, "cuModuleUnload")              \
	APP_FN(ModuleGetFunction, cuModuleGetFunction, PFN_cuModuleGetFunction_v2000,                 \
	       "cuModuleGetFunction")                                                                 \
	APP_FN(MemAlloc, cuMemAlloc_v2, PFN_cuMemAlloc_v3020, "cuMemAlloc")                           \
	APP_FN(MemFree, cuMemFree_v2, PFN_cuMemFree_v3020, "cuMemFree")                               \
	APP_FN(MemAllocAsync, cuMemAllocAsync, PFN_cuMemAllocAsync_v11020, "cuMemAllocAsync")         \
	APP_FN(MemFreeAsync, cuMemFreeAsync, PFN_cuMemFreeAsync_v11020, "cuMemFreeAsync")             \
	APP_FN(MemcpyDtoH, cuMemcpyDtoH_v2, PFN_cuMemcpyDtoH_v3020, "cuMemcpyDtoH")                   \
	APP_FN(MemGetAddressRange, cuMemGetAddressRange_v2, PFN_cuMemGetAddressRange_v3020,           \
	       "cuMemGetAddressRange")                                                                \
	APP_FN(LaunchKernel, cuLaunchKernel, PFN_cuLaunchKernel_v4000, "cuLaunchKernel")              \
	APP_FN(LibraryLoadFromFile, cuLibraryLoadFromFile, PFN_cuLibraryLoadFromFile_v12000,          \
	       "cuLibraryLoadFromFile")                                                               \
	APP_FN(LibraryUnload, cuLibraryUnload, PFN_cuLibraryUnload_v12000, "cuLibraryUnload")         \
	APP_FN(LibraryGetKernel, cuLibraryGetKernel, PFN_cuLibraryGetKernel_v12000,                   \
	       "cuLibraryGetKernel")                                                                  \
	APP_FN(KernelGetFunction, cuKernelGetFunction, PFN_cuKernelGetFunction_v12000,                \
	       "cuKernelGetFunction")                                                                 \
	APP_FN(LibraryGetModule, cuLibraryGetModule, PFN_cuLibraryGetModule_v12000,                   \
	       "cuLibraryGetModule")                                                                  \
	APP_FN(StreamCreate, cuStreamCreate, PFN_cuStreamCreate_v2000, "cuStreamCreate")              \
	APP_FN(StreamSynchronize, cuStreamSynchronize, PFN_cuStreamSynchronize_v2000,                 \
	       "cuStreamSynchronize")                                                                 \
	APP_FN(StreamDestroy, cuStreamDestroy_v2, PFN_cuStreamDestroy_v4000, "cuStreamDestroy")       \
	APP_FN(GetErrorName, cuGetErrorName, PFN_cuGetErrorName_v6000, "cuGetErrorName")              \
	APP_FN(StreamBeginCapture, cuStreamBeginCapture_v2, PFN_cuStreamBeginCapture_v10010,          \
	       "cuStreamBeginCapture")                                                                \
	APP_FN(StreamEndCapture, cuStreamEndCapture, PFN_cuStreamEndCapture_v10000,                   \
	       "cuStreamEndCapture")                                                                  \
	APP_FN(GraphCreate, cuGraphCreate, PFN_cuGraphCreate_v10000, "cuGraphCreate")                 \
	APP_FN(GraphAddKernelNode, cuGraphAddKernelNode_v2, PFN_cuGraphAddKernelNode_v12000,          \
	       "cuGraphAddKernelNode")                                                                \
	APP_FN(GraphAddChildGraphNode, cuGraphAddChildGraphNode, PFN_cuGraphAddChildGraphNode_v10000, \
	       "cuGraphAddChildGraphNode")                                                            \
	APP_FN(GraphInstantiate, cuGraphInstantiateWithFlags, PFN_cuGraphInstantiateWithFlags_v11040, \
	       "cuGraphInstantiateWithFlags")                                                         \
	APP_FN(GraphExecKernelNodeSetParams, cuGraphExecKernelNodeSetParams_v2,                       \
	       PFN_cuGraphExecKernelNodeSetParams_v12000, "cuGraphExecKernelNodeSetParams")           \
	APP_FN(GraphExecUpdate, cuGraphExecUpdate_v2, PFN_cuGraphExecUpdate_v12000,                   \
	       "cuGraphExecUpdate")                                                                   \
	APP_FN(GraphLaunch, cuGraphLaunch, PFN_cuGraphLaunch_v10000, "cuGraphLaunch")                 \
	APP_FN(GraphExecDestroy, cuGraphExecDestroy, PFN_cuGraphExecDestroy_v10000,                   \
	       "cuGraphExecDestroy")                                                                  \
	APP_FN(GraphDestroy, cuGraphDestroy, PFN_cuGraphDestroy_v10000, "cuGraphDestroy")             \
	APP_FN(GraphAddNode, cuGraphAddNode_v2, PFN_cuGraphAddNode_v12030, "cuGraphAddNode")          \
	APP_FN(GraphNodeSetParams, cuGraphNodeSetParams, PFN_cuGraphNodeSetParams_v12020,             \
	       "cuGraphNodeSetParams")                                                                \
	APP_FN(GraphExecNodeSetParams, cuGraphExecNodeSetParams, PFN_cuGraphExecNodeSetParams_v12020, \
	       "cuGraphExecNodeSetParams")                                                            \
	APP_FN(ArrayCreate, cuArrayCreate_v2, PFN_cuArrayCreate_v3020, "cuArrayCreate")               \
	APP_FN(Array3DCreate, cuArray3DCreate_v2, PFN_cuArray3DCreate_v3020, "cuArray3DCreate")       \
	APP_FN(ArrayDestroy, cuArrayDestroy, PFN_cuArrayDestroy_v2000, "cuArrayDestroy")              \
	APP_FN(MemCreate, cuMemCreate, PFN_cuMemCreate_v10020, "cuMemCreate")                         \
	APP_FN(MemRelease, cuMemRelease, PFN_cuMemRelease_v10020, "cuMemRelease")                     \
	APP_FN(GraphUpload, cuGraphUpload, PFN_cuGraphUpload_v11010, "cuGraphUpload")                 \
	APP_FN(GraphAddMemAllocNode, cuGraphAddMemAllocNode, PFN_cuGraphAddMemAllocNode_v11040,       \
	       "cuGraphAddMemAllocNode")

/* The CUDA version cuGetProcAddress is asked for @base at: 12000 (every
 * function's CUDA 12 form), the generic graph node functions at 12030. */
static inline int app_fn_version(const char *base)
{
	static const char *const newer[] = { "cuGraphAddNode", "cuGraphNodeSetParams",
					     "cuGraphExecNodeSetParams" };

	for (unsigned i = 0; i < sizeof(newer) / sizeof(newer[0]); i++)
		if (!__builtin_strcmp(base, newer[i]))
			return 12030;
	return 12000;
}

struct app_driver {
#define APP_FN(field, export, pfn, base) pfn field;
	APP_DRIVER_FUNCTIONS
#undef APP_FN
};

/* The common scenario (scenario.c): one module, a found and a missing kernel,
 * a kernel that fills a buffer, sync and stream-ordered allocations. Prints
 * what it saw on stdout; returns the exit status. */
int app_scenario(const struct app_driver *d, const char *route, const char *ptx_path);

#endif
