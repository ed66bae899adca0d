/* The few entry points of the CUDA runtime that app-static-rt uses, as
 * tests/apps/fake-cudart/cudart.c gives them: the real runtime's names, in a
 * static archive linked into the program, the way nvcc links
 * libcudart_static.a by default. Their arguments are simpler than the real
 * ones; only the names and where the frames sit matter. */
#ifndef GG_TESTS_APPS_FAKE_CUDART_CUDART_H
#define GG_TESTS_APPS_FAKE_CUDART_CUDART_H

#include <stddef.h>

typedef int cudaError_t;
enum {
	cudaSuccess = 0,
	cudaErrorMemoryAllocation = 2,
	cudaErrorInitializationError = 3,
	cudaErrorInvalidDeviceFunction = 98,
	cudaErrorUnknown = 999
};
enum cudaMemcpyKind {
	cudaMemcpyHostToDevice = 1,
	cudaMemcpyDeviceToHost = 2
};

cudaError_t cudaMalloc(void **ptr, size_t size);
cudaError_t cudaFree(void *ptr);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
/* @func is the kernel's host function, registered by __cudaRegisterFunction. */
cudaError_t cudaLaunchKernel(const void *func);
cudaError_t cudaDeviceSynchronize(void);

/* What nvcc's generated registration code calls at start-up: the program's
 * device code (here the path of a PTX file) and each kernel's host function
 * with its device name. */
void **__cudaRegisterFatBinary(const void *fat_cubin);
void __cudaRegisterFunction(void **handle, const void *host_fun, const char *device_name);

#endif
