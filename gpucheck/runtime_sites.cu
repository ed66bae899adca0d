// Call sites through the CUDA runtime that nvcc links into a program by default
// (libcudart_static.a), for scripts/gpu-check: two allocations from two
// functions, each written 8 bytes past its end by a kernel, and two lookups of
// a kernel a library lacks, from two more (cudaLibrary*, CUDA 12.5 on; an older
// toolkit prints "lookup a: unsupported"). Under gpuguard each site must be the
// program's function that called the runtime (gc_alloc_a, gc_alloc_b,
// gc_lookup_a, gc_lookup_b), not the runtime's code under it: named in the
// summary of the program as built (gpu-check exports gc_* so they have names),
// and by gpuguard symbolize, with that copy, for a stripped one. Prints only
// what the program knows, so its stdout is the same with and without gpuguard.
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#include "gc-runtime.h"

#define CHECK(call) GC_CHECK("runtime_sites", call)

#if CUDART_VERSION >= 12050
// A library with one kernel, JIT-compiled for whatever GPU this is; the
// lookups ask it for another.
static const char ptx[] = ".version 6.0\n.target sm_50\n.address_size 64\n"
			  ".visible .entry gc_present()\n{\n\tret;\n}\n";
#else
typedef void *cudaLibrary_t;
#endif

// The application's functions: C names, not inlined, and each does something
// after its call into the runtime, so its frame is on the stack.
extern "C" {

__attribute__((noinline)) void *gc_alloc_a(size_t n)
{
	void *p = nullptr;

	CHECK(cudaMalloc(&p, n));
	std::printf("alloc a %zu\n", n);
	return p;
}

__attribute__((noinline)) void *gc_alloc_b(size_t n)
{
	void *p = nullptr;

	CHECK(cudaMalloc(&p, n));
	std::printf("alloc b %zu\n", n);
	return p;
}

__attribute__((noinline)) void gc_lookup_a(cudaLibrary_t lib)
{
#if CUDART_VERSION >= 12050
	cudaKernel_t k;
	cudaError_t e = cudaLibraryGetKernel(&k, lib, "gc_no_such_kernel");

	std::printf("lookup a: %s\n", cudaGetErrorName(e));
#else
	(void)lib;
	std::printf("lookup a: unsupported\n");
#endif
}

__attribute__((noinline)) void gc_lookup_b(cudaLibrary_t lib)
{
#if CUDART_VERSION >= 12050
	cudaKernel_t k;
	cudaError_t e = cudaLibraryGetKernel(&k, lib, "gc_no_such_kernel");

	std::printf("lookup b: %s\n", cudaGetErrorName(e));
#else
	(void)lib;
	std::printf("lookup b: unsupported\n");
#endif
}

} // extern "C"

int main()
{
	cudaLibrary_t lib = nullptr;
	unsigned char *a, *b;

	a = (unsigned char *)gc_alloc_a(1000);
	b = (unsigned char *)gc_alloc_b(2000);
	// The bug: 8 bytes more than each buffer holds.
	write_bytes<<<4, 128>>>(a, 1000 + 8, 0x41);
	write_bytes<<<4, 128>>>(b, 2000 + 8, 0x41);
	CHECK(cudaGetLastError());
	CHECK(cudaDeviceSynchronize());
#if CUDART_VERSION >= 12050
	CHECK(cudaLibraryLoadData(&lib, ptx, nullptr, nullptr, 0, nullptr, nullptr, 0));
#endif
	gc_lookup_a(lib);
	gc_lookup_b(lib);
#if CUDART_VERSION >= 12050
	CHECK(cudaLibraryUnload(lib));
#endif
	CHECK(cudaFree(a));
	CHECK(cudaFree(b));
	std::printf("freed\n");
	return 0;
}
