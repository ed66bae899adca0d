/* A library whose destructor frees device memory, as a C++ library's static
 * objects do at exit: its destructor runs in the C library's _dl_fini, after
 * the program's exit handlers and after gpuguard's own destructor
 * (test-exit.c, leaks freed late are no leaks). app-redzone's latefree:N
 * step dlopens it and hands it buffer N. */
#include <cuda.h>
#include <stdio.h>

#define MAX_HELD 16

static CUdeviceptr held[MAX_HELD];
static int nheld;

int latefree_hold(CUdeviceptr ptr);
__attribute__((visibility("default"))) int latefree_hold(CUdeviceptr ptr)
{
	if (nheld == MAX_HELD)
		return -1;
	held[nheld++] = ptr;
	return 0;
}

__attribute__((destructor)) static void free_held(void)
{
	for (int i = 0; i < nheld; i++)
		fprintf(stderr, "liblatefree: free %d\n", (int)cuMemFree_v2(held[i]));
}
