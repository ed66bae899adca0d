/* A stand-in for NVIDIA's libcudart_static.a, for tests without a GPU (the
 * real runtime does not start on the fake driver). What matters is what the
 * shim sees of it, so that is as in the real one:
 *   - the names: public entry points cuda* and __cuda*, internal functions
 *     libcudart_static_<sha1> (CUDA 13's names, local symbols as there);
 *   - the route to the driver: dlopen("libcuda.so.1"), cuGetProcAddress from
 *     dlsym, every other driver function from cuGetProcAddress;
 *   - lazy loading: the module is loaded and a kernel looked up at its first
 *     launch, from the runtime's own code, several frames below the caller;
 *   - the table of its own entry points' names in .rodata (the real runtime
 *     gives them to the tools' callback API), by which gpuguard knows a
 *     stripped program carries the runtime.
 * Built with -fno-optimize-sibling-calls and noinline functions, so every
 * frame of the path is on the stack, as the real runtime's are. */
#include "cudart.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>

#define NOINLINE __attribute__((noinline))
#define MAX_KERNELS 16

static struct {
	pthread_once_t once;
	cudaError_t init_error;
	PFN_cuGetProcAddress_v12000 get_proc;
	PFN_cuInit_v2000 init;
	PFN_cuDeviceGet_v2000 device_get;
	PFN_cuDevicePrimaryCtxRetain_v7000 retain;
	PFN_cuCtxSetCurrent_v4000 set_current;
	PFN_cuModuleLoad_v2000 module_load;
	PFN_cuModuleGetFunction_v2000 get_function;
	PFN_cuLaunchKernel_v4000 launch;
	PFN_cuCtxSynchronize_v2000 sync;
	PFN_cuMemAlloc_v3020 alloc;
	PFN_cuMemFree_v3020 free;
	PFN_cuMemcpyHtoD_v3020 htod;
	PFN_cuMemcpyDtoH_v3020 dtoh;

	const char *image; /* the registered "fat binary": a PTX file's path */
	pthread_mutex_t lock;
	CUmodule module; /* loaded at the first launch */
	struct {
		const void *host_fun;
		const char *name;
		CUfunction function;
	} kernels[MAX_KERNELS];
	int nkernels;
} rt = { .once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER };

/* The runtime's names of its entry points, as the real one keeps them. */
static const char *const api_names[] = {
	"cudaMalloc",
	"cudaFree",
	"cudaMemcpy",
	"cudaLaunchKernel",
	"cudaDeviceSynchronize",
	"__cudaRegisterFatBinary",
	"__cudaRegisterFunction",
};
enum {
	API_MALLOC,
	API_FREE,
	API_MEMCPY,
	API_LAUNCH,
	API_SYNC
};

static NOINLINE cudaError_t libcudart_static_ad7babe3bbced19fc2368606301643167815ce73(int api,
										      const char *call,
										      CUresult rc)
{
	fprintf(stderr, "fake-cudart: %s: %s failed: %d\n", api_names[api], call, (int)rc);
	return rc == CUDA_ERROR_OUT_OF_MEMORY ? cudaErrorMemoryAllocation : cudaErrorUnknown;
}
#define FAILED libcudart_static_ad7babe3bbced19fc2368606301643167815ce73

/* The driver, found the way the real runtime finds it. */
static void libcudart_static_ce35566c0fb89251159c0405119af58badb0226c(void)
{
	PFN_cuGetProcAddress_v11030 gpa;
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	CUdriverProcAddressQueryResult status;
	CUdevice dev;
	CUcontext ctx;

	rt.init_error = cudaErrorInitializationError;
	if (!h || !(gpa = (PFN_cuGetProcAddress_v11030)dlsym(h, "cuGetProcAddress")) ||
	    gpa("cuGetProcAddress", (void **)&rt.get_proc, 12000, 0) != CUDA_SUCCESS)
		return;
#define GET(field, name)                                                                          \
	if (rt.get_proc(name, (void **)&rt.field, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status) != \
		    CUDA_SUCCESS ||                                                               \
	    !rt.field)                                                                            \
		return;
	GET(init, "cuInit")
	GET(device_get, "cuDeviceGet")
	GET(retain, "cuDevicePrimaryCtxRetain")
	GET(set_current, "cuCtxSetCurrent")
	GET(module_load, "cuModuleLoad")
	GET(get_function, "cuModuleGetFunction")
	GET(launch, "cuLaunchKernel")
	GET(sync, "cuCtxSynchronize")
	GET(alloc, "cuMemAlloc")
	GET(free, "cuMemFree")
	GET(htod, "cuMemcpyHtoD")
	GET(dtoh, "cuMemcpyDtoH")
#undef GET
	if (rt.init(0) || rt.device_get(&dev, 0) || rt.retain(&ctx, dev) || rt.set_current(ctx))
		return;
	rt.init_error = cudaSuccess;
}
#define LOAD_DRIVER libcudart_static_ce35566c0fb89251159c0405119af58badb0226c

static inline cudaError_t lazy_init(void)
{
	pthread_once(&rt.once, LOAD_DRIVER);
	return rt.init_error;
}

static NOINLINE cudaError_t libcudart_static_91ec308f0fdbb3d9b92cef42bec3139147eab225(void **ptr,
										      size_t size)
{
	CUdeviceptr p = 0;
	CUresult rc = rt.alloc(&p, size);

	*ptr = (void *)(uintptr_t)p;
	return rc ? FAILED(API_MALLOC, "cuMemAlloc_v2", rc) : cudaSuccess;
}

NOINLINE cudaError_t cudaMalloc(void **ptr, size_t size)
{
	cudaError_t err = lazy_init();

	if (err)
		return err;
	err = libcudart_static_91ec308f0fdbb3d9b92cef42bec3139147eab225(ptr, size);
	return err;
}

static NOINLINE cudaError_t libcudart_static_e4c049b7e05830caf257f6caf86ca3ce09d19c0a(void *ptr)
{
	CUresult rc = rt.free((CUdeviceptr)(uintptr_t)ptr);

	return rc ? FAILED(API_FREE, "cuMemFree_v2", rc) : cudaSuccess;
}

NOINLINE cudaError_t cudaFree(void *ptr)
{
	cudaError_t err = lazy_init();

	if (err)
		return err;
	err = libcudart_static_e4c049b7e05830caf257f6caf86ca3ce09d19c0a(ptr);
	return err;
}

static NOINLINE cudaError_t libcudart_static_708e88b986163037cbc4ea53aeda45158d655fb0(
	void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	CUresult rc = kind == cudaMemcpyHostToDevice ? rt.htod((CUdeviceptr)(uintptr_t)dst, src, count)
						     : rt.dtoh(dst, (CUdeviceptr)(uintptr_t)src, count);

	return rc ? FAILED(API_MEMCPY, "cuMemcpy", rc) : cudaSuccess;
}

NOINLINE cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	cudaError_t err = lazy_init();

	if (err)
		return err;
	err = libcudart_static_708e88b986163037cbc4ea53aeda45158d655fb0(dst, src, count, kind);
	return err;
}

void **__cudaRegisterFatBinary(const void *fat_cubin)
{
	rt.image = fat_cubin;
	return (void **)&rt.image;
}

void __cudaRegisterFunction(void **handle, const void *host_fun, const char *device_name)
{
	(void)handle;
	if (rt.nkernels < MAX_KERNELS) {
		rt.kernels[rt.nkernels].host_fun = host_fun;
		rt.kernels[rt.nkernels++].name = device_name;
	}
}

/* Lazy loading: the module, at the first launch of any of its kernels. */
static NOINLINE CUresult libcudart_static_9442dfa39571e5d1462cef4f623e1077e35d31b8(void)
{
	CUresult rc = CUDA_SUCCESS;

	if (!rt.module)
		rc = rt.module_load(&rt.module, rt.image ? rt.image : "");
	return rc;
}

/* ...and the kernel, at its own first launch. */
static NOINLINE CUresult libcudart_static_5d56a0126a4c115b569f4df8d543490be4276bd6(int k)
{
	CUresult rc = libcudart_static_9442dfa39571e5d1462cef4f623e1077e35d31b8();

	if (rc == CUDA_SUCCESS && !rt.kernels[k].function)
		rc = rt.get_function(&rt.kernels[k].function, rt.module, rt.kernels[k].name);
	return rc;
}

static NOINLINE cudaError_t libcudart_static_d3e76c1c2dad3fe1810c0f85b423f66a7bc42a7c(const void *func)
{
	CUfunction f = NULL;
	CUresult rc = CUDA_ERROR_NOT_FOUND;
	int k;

	pthread_mutex_lock(&rt.lock);
	for (k = 0; k < rt.nkernels && rt.kernels[k].host_fun != func; k++)
		;
	if (k < rt.nkernels)
		rc = libcudart_static_5d56a0126a4c115b569f4df8d543490be4276bd6(k);
	if (rc == CUDA_SUCCESS)
		f = rt.kernels[k].function;
	pthread_mutex_unlock(&rt.lock);
	if (rc)
		return rc == CUDA_ERROR_NOT_FOUND ? cudaErrorInvalidDeviceFunction
						  : FAILED(API_LAUNCH, "cuModuleLoad", rc);
	/* Kernels without parameters only: enough for what the tests launch. */
	rc = rt.launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	return rc ? FAILED(API_LAUNCH, "cuLaunchKernel", rc) : cudaSuccess;
}

NOINLINE cudaError_t cudaLaunchKernel(const void *func)
{
	cudaError_t err = lazy_init();

	if (err)
		return err;
	err = libcudart_static_d3e76c1c2dad3fe1810c0f85b423f66a7bc42a7c(func);
	return err;
}

static NOINLINE cudaError_t libcudart_static_13bae50e3a32c2d525c3ea965b11e7e66a0f6840(void)
{
	CUresult rc = rt.sync();

	return rc ? FAILED(API_SYNC, "cuCtxSynchronize", rc) : cudaSuccess;
}

NOINLINE cudaError_t cudaDeviceSynchronize(void)
{
	cudaError_t err = lazy_init();

	if (err)
		return err;
	err = libcudart_static_13bae50e3a32c2d525c3ea965b11e7e66a0f6840();
	return err;
}
