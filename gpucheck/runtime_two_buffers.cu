// Which kernel did it, for scripts/gpu-check: gc_write_two is given two
// cudaMalloc buffers and writes all of the first and 8 bytes past the end of
// the second. Built by nvcc with -g (the launch's source line, for
// `gpuguard symbolize`); run with --check-launches the violation names the
// kernel and the launch's call site, without it the kernel is its suspect.
// Prints only what the program itself knows.
#include <cstdio>

#include <cuda_runtime.h>

#include "gc-runtime.h"

#define CHECK(call) GC_CHECK("runtime_two_buffers", call)

extern "C" __global__ void gc_write_two(unsigned char *a, unsigned long long na, unsigned char *b,
					unsigned long long nb)
{
	for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
	     i < na || i < nb; i += (unsigned long long)blockDim.x * gridDim.x) {
		if (i < na)
			a[i] = 0x41;
		if (i < nb)
			b[i] = 0x42;
	}
}

// Exported (-Xlinker --export-dynamic-symbol=gc_*), so its frame has a name.
extern "C" __attribute__((noinline)) void gc_launch_two(unsigned char *a, unsigned char *b)
{
	gc_write_two<<<4, 128>>>(a, 1000, b, 2000 + 8); // the bug: b has 2000 bytes
	CHECK(cudaGetLastError());
}

int main()
{
	unsigned char *a = nullptr, *b = nullptr;

	CHECK(cudaMalloc(&a, 1000));
	CHECK(cudaMalloc(&b, 2000));
	gc_launch_two(a, b);
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaFree(b));
	CHECK(cudaFree(a));
	std::printf("two buffers written\n");
	return 0;
}
