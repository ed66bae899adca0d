// What the CUDA runtime programs of scripts/gpu-check share: a runtime call
// that fails ends the program with status 2, naming the call and the error.
#ifndef GG_GPUCHECK_GC_RUNTIME_H
#define GG_GPUCHECK_GC_RUNTIME_H

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define GC_CHECK(program, call)                                                     \
	do {                                                                        \
		cudaError_t e_ = (call);                                            \
		if (e_ != cudaSuccess) {                                            \
			std::fprintf(stderr, "%s: %s failed: %s\n", program, #call, \
				     cudaGetErrorName(e_));                         \
			std::exit(2);                                               \
		}                                                                   \
	} while (0)

// @value into p[0..n): a kernel's write, past the end when @n says so.
__global__ void write_bytes(unsigned char *p, unsigned long long n, unsigned char value)
{
	for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
	     i += (unsigned long long)blockDim.x * gridDim.x)
		p[i] = value;
}

#endif
