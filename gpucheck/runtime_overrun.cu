// A CUDA runtime program with a bug, for scripts/gpu-check: a kernel launched
// with <<<...>>> writes 8 bytes past the end of a 1000-byte cudaMalloc buffer,
// then the buffer is freed with cudaFree. Built by nvcc (static cudart by
// default), it reaches the driver only through the runtime, which gets every
// driver function from cuGetProcAddress. Prints only what the program itself
// knows, so its stdout is the same with and without gpuguard.
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#include "gc-runtime.h"

#define CHECK(call) GC_CHECK("runtime_overrun", call)

int main()
{
	const unsigned long long size = 1000, extra = 8;
	unsigned char *buf = nullptr;
	static unsigned char host[1000];
	unsigned long long sum = 0;

	CHECK(cudaMalloc(&buf, size));
	write_bytes<<<4, 128>>>(buf, size + extra, 0x41); // the bug: size + extra
	CHECK(cudaGetLastError());
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaMemcpy(host, buf, size, cudaMemcpyDeviceToHost));
	for (unsigned long long i = 0; i < size; i++)
		sum += host[i];
	std::printf("sum of %llu bytes: %llu\n", size, sum);
	CHECK(cudaFree(buf));
	std::printf("freed\n");
	return 0;
}
