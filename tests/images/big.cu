// A big image for the image preflight benchmark (bench-image.c): the
// initialized array goes into every cubin, so twelve of them make a fatbin
// of about 10 MB.
__device__ const unsigned char gg_big[864 * 1024] = { 1 };

extern "C" __global__ void gg_touch(unsigned char *out, int i)
{
	out[0] = gg_big[i];
}
