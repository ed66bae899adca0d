/* Built on the toolkit's real libcudart.so: on a machine with no driver, the
 * same error comes back with and without the shim. */
#include <cuda_runtime_api.h>
#include <stdio.h>

int main(void)
{
	int count = -1;
	void *p = NULL;
	cudaError_t e = cudaGetDeviceCount(&count);

	printf("cudaGetDeviceCount: %d (%s) count %d\n", (int)e, cudaGetErrorName(e), count);
	e = cudaMalloc(&p, 1024);
	printf("cudaMalloc: %d (%s) %s\n", (int)e, cudaGetErrorName(e), p ? "non-null" : "null");
	return 0;
}
