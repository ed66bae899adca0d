// A kernel for the image preflight tests (test-image.c): what it does does
// not matter, only the code nvcc makes of it for each -gencode.
extern "C" __global__ void gg_scale(float *x, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] *= a;
}
