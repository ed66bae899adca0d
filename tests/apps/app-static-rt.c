/* A CUDA runtime program as nvcc builds it by default: the runtime linked in
 * statically (here tests/apps/fake-cudart, named as the real one), so the
 * runtime's frames are frames of this executable. Two allocations from two
 * functions of the application, each written 8 bytes past its end, and a
 * kernel the module lacks launched from two more, a synchronize (for a sync:1
 * boundary), then the buffers freed:
 * each allocation site and each lookup site must be the application's
 * function, not the runtime's code they all pass through. Built unstripped and
 * stripped (tests/meson.build).
 *
 * Prints one line per step on stdout, with only what the program knows. The
 * module is the PTX file GG_TEST_PTX names, registered at start-up as nvcc's
 * generated code registers a program's device code. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake-cudart/cudart.h"

#define NOINLINE __attribute__((noinline))

/* What nvcc writes for `__global__ void no_such_kernel()`: a host function
 * named as the kernel, which <<<...>>> calls, and its launch stub. */
void no_such_kernel(void) __asm__("_Z14no_such_kernelv");
void no_such_kernel_stub(void) __asm__("_Z33__device_stub__Z14no_such_kernelvv");

NOINLINE void no_such_kernel_stub(void)
{
	cudaError_t err = cudaLaunchKernel((const void *)no_such_kernel);

	printf("launch no_such_kernel: %d\n", err);
}

NOINLINE void no_such_kernel(void)
{
	no_such_kernel_stub();
	__asm__ volatile("" ::: "memory"); /* not a tail call: keep this frame, as -O0 does */
}

/* nvcc's registration of the program's device code, run before main. */
__attribute__((constructor)) static void __sti____cudaRegisterAll(void)
{
	const char *ptx = getenv("GG_TEST_PTX");
	void **handle = __cudaRegisterFatBinary(ptx ? ptx : "");

	__cudaRegisterFunction(handle, (const void *)no_such_kernel, "no_such_kernel");
}

/* The application: exported, so its call sites have names. */
NOINLINE void *app_alloc_a(size_t n);
NOINLINE void *app_alloc_b(size_t n);
NOINLINE void app_overrun(void *buf, size_t n, size_t past);
NOINLINE void app_launch_a(void);
NOINLINE void app_launch_b(void);

NOINLINE void *app_alloc_a(size_t n)
{
	void *p = NULL;

	printf("alloc a %zu: %d\n", n, cudaMalloc(&p, n));
	return p;
}

NOINLINE void *app_alloc_b(size_t n)
{
	void *p = NULL;

	printf("alloc b %zu: %d\n", n, cudaMalloc(&p, n));
	return p;
}

/* The bytes past the end are written as a kernel writes them (the fake
 * driver's fakecuda_write): a copy that long is refused, with red zones as
 * without them. */
NOINLINE void app_overrun(void *buf, size_t n, size_t past)
{
	static unsigned char host[4096];
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	int (*wr)(unsigned long long, const void *,
		  size_t) = h ? (int (*)(unsigned long long, const void *,
					 size_t))dlsym(h, "fakecuda_write")
			      : NULL;
	int rc;

	memset(host, 0x41, sizeof(host));
	rc = cudaMemcpy(buf, host, n, cudaMemcpyHostToDevice);
	if (!rc && (!wr || wr((unsigned long long)(uintptr_t)buf + n, host, past)))
		rc = -1;
	printf("overrun %zu by %zu: %d\n", n, past, rc);
}

NOINLINE void app_launch_a(void)
{
	no_such_kernel(); /* no_such_kernel<<<1, 1>>>() */
	__asm__ volatile("" ::: "memory");
}

NOINLINE void app_launch_b(void)
{
	no_such_kernel();
	__asm__ volatile("" ::: "memory");
}

int main(void)
{
	void *a = app_alloc_a(1000), *b = app_alloc_b(2000);

	app_overrun(a, 1000, 8);
	app_overrun(b, 2000, 8);
	app_launch_a();
	app_launch_b();
	printf("sync: %d\n", cudaDeviceSynchronize());
	printf("free a: %d\n", cudaFree(a));
	printf("free b: %d\n", cudaFree(b));
	return 0;
}
