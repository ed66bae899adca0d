/* gc-bench: the workloads scripts/gpu-check times with and without gpuguard.
 *   gc-bench KERNELS.ptx alloc ITER   ITER times: allocate 4 KiB, 64 KiB and
 *       1 MiB (cuMemAlloc_v2), fill each (gg_fill), copy (gg_copy), synchronize,
 *       read 16 bytes back, free the three: the allocation-heavy case
 *   gc-bench KERNELS.ptx launch ITER  one 1 MiB buffer, ITER launches of gg_fill,
 *       a cuCtxSynchronize every 32: the launch-heavy case
 *   gc-bench KERNELS.ptx scan N SIZE  N live allocations of SIZE bytes, then two
 *       cuCtxSynchronize calls timed one by one (run it with
 *       GPUGUARD_BOUNDARY=sync:2: the second one is followed by a boundary that
 *       scans all N zones before it returns), then N frees
 * Prints "checksum ..." lines (the same with and without the shim) and
 * "TIME name NANOSECONDS" lines (the timed part only: no process start, no
 * cuInit, no module load). */
#include <string.h>

#include "gc-common.h"

static CUfunction fill, copy;

static uint64_t alloc_loop(unsigned long iter)
{
	static const size_t sizes[3] = { 4096, 65536, 1 << 20 };
	uint64_t checksum = 0;

	for (unsigned long i = 0; i < iter; i++) {
		CUdeviceptr b[3];
		unsigned char host[16];
		unsigned long long n = 4096;
		void *params[3];

		for (int k = 0; k < 3; k++) {
			GC_CHECK(cuMemAlloc_v2(&b[k], sizes[k]));
			gc_fill(fill, b[k], (unsigned char)(i + (unsigned long)k), sizes[k]);
		}
		params[0] = &b[0];
		params[1] = &b[2];
		params[2] = &n;
		GC_CHECK(cuLaunchKernel(copy, 16, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
		GC_CHECK(cuCtxSynchronize());
		GC_CHECK(cuMemcpyDtoH_v2(host, b[0], sizeof(host)));
		for (size_t j = 0; j < sizeof(host); j++)
			checksum = checksum * 31 + host[j];
		for (int k = 0; k < 3; k++)
			GC_CHECK(cuMemFree_v2(b[k]));
	}
	return checksum;
}

static uint64_t launch_loop(unsigned long iter)
{
	const size_t size = 1 << 20;
	unsigned char host[16];
	uint64_t checksum = 0;
	CUdeviceptr b;

	GC_CHECK(cuMemAlloc_v2(&b, size));
	for (unsigned long i = 0; i < iter; i++) {
		gc_fill(fill, b, (unsigned char)i, size);
		if (i % 32 == 31)
			GC_CHECK(cuCtxSynchronize());
	}
	GC_CHECK(cuCtxSynchronize());
	GC_CHECK(cuMemcpyDtoH_v2(host, b, sizeof(host)));
	for (size_t j = 0; j < sizeof(host); j++)
		checksum = checksum * 31 + host[j];
	GC_CHECK(cuMemFree_v2(b));
	return checksum;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule mod;
	uint64_t t0, t1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 4) {
		fprintf(stderr, "usage: gc-bench KERNELS.ptx alloc|launch ITER | scan N SIZE\n");
		return 64;
	}
	mod = gc_setup(argv[1], &ctx);
	GC_CHECK(cuModuleGetFunction(&fill, mod, "gg_fill"));
	GC_CHECK(cuModuleGetFunction(&copy, mod, "gg_copy"));
	if (!strcmp(argv[2], "alloc") || !strcmp(argv[2], "launch")) {
		unsigned long iter = strtoul(argv[3], NULL, 0);
		uint64_t sum;

		/* One round first: the kernels' first launch (JIT, lazy loading) untimed. */
		(void)(argv[2][0] == 'a' ? alloc_loop(1) : launch_loop(1));
		t0 = gc_now_ns();
		sum = argv[2][0] == 'a' ? alloc_loop(iter) : launch_loop(iter);
		t1 = gc_now_ns();
		printf("checksum %s %lu: %llu\n", argv[2], iter, (unsigned long long)sum);
		printf("TIME loop_ns %llu\n", (unsigned long long)(t1 - t0));
	} else if (!strcmp(argv[2], "scan") && argc == 5) {
		unsigned long n = strtoul(argv[3], NULL, 0), size = strtoul(argv[4], NULL, 0);
		CUdeviceptr *p = malloc(n * sizeof(*p));
		uint64_t t2, t3, t4;

		if (!p)
			return 3;
		t0 = gc_now_ns();
		for (unsigned long k = 0; k < n; k++)
			GC_CHECK(cuMemAlloc_v2(&p[k], size));
		t1 = gc_now_ns();
		GC_CHECK(cuCtxSynchronize());
		t2 = gc_now_ns();
		GC_CHECK(cuCtxSynchronize());
		t3 = gc_now_ns();
		for (unsigned long k = 0; k < n; k++)
			GC_CHECK(cuMemFree_v2(p[k]));
		t4 = gc_now_ns();
		free(p);
		printf("checksum scan: %lu allocations of %lu bytes made and freed\n", n, size);
		printf("TIME alloc_ns %llu\n", (unsigned long long)(t1 - t0));
		printf("TIME sync1_ns %llu\n", (unsigned long long)(t2 - t1));
		printf("TIME sync2_ns %llu\n", (unsigned long long)(t3 - t2));
		printf("TIME free_ns %llu\n", (unsigned long long)(t4 - t3));
	} else {
		fprintf(stderr, "gc-bench: unknown workload '%s'\n", argv[2]);
		return 64;
	}
	GC_CHECK(cuModuleUnload(mod));
	GC_CHECK(cuDevicePrimaryCtxRelease_v2(0));
	return 0;
}
