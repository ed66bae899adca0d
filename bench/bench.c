/* gpuguard's benchmarks: one driver-API program, one case per run, timed
 * with CLOCK_MONOTONIC around the measured loop only. scripts/bench runs it
 * without the shim, with the shim disabled, with the audit only and with red
 * zones, and under callgrind for instruction counts.
 *
 *   bench lookup-hit N       N cuModuleGetFunction that succeed
 *   bench lookup-miss N      N that fail (each unwinds once)
 *   bench launch N           N cuLaunchKernel of an empty kernel
 *   bench launch4 N          N cuLaunchKernel of a kernel given four allocations
 *   bench launch4-held N     the same after a fifth allocation was freed (with
 *                            GPUGUARD_QUARANTINE, held: every launch is looked at
 *                            for dangling pointers)
 *   bench qfree N S          N frees of allocations of S bytes (made first, untimed):
 *                            with GPUGUARD_QUARANTINE, each filled and held
 *   bench qrelease N S       N allocations of S bytes freed (untimed), then one
 *                            cuCtxSynchronize: with GPUGUARD_BOUNDARY=sync:1 and a
 *                            quarantine, each one's fill checked and released
 *   bench alloc N S          N cuMemAlloc_v2 + cuMemFree_v2 pairs of S bytes
 *   bench alloc-deep N D     N pairs of 256 bytes, made D frames deeper than
 *                            alloc's (the stacks GPUGUARD_STACK_DEPTH keeps)
 *   bench htod N OFF         N cuMemcpyHtoD_v2 of 64 bytes, OFF bytes into a 256-byte
 *                            allocation (with red zones, a checked range)
 *   bench scale L N          the same with L allocations live meanwhile
 *   bench threads T N        T threads, N pairs each: pairs per second
 *   bench graph N K          N cuGraphLaunch of a graph of K kernel nodes, each
 *                            gg_touch4 given four allocations, captured from
 *                            a stream (replays unchanged: the memo's case)
 *   bench scan Z [S]         one cuCtxSynchronize with Z live allocations of
 *                            S bytes (256) (a scan when GPUGUARD_BOUNDARY=sync:1)
 *
 * Prints "ns_per_op X" (or "pairs_per_s X", "ns X") on stdout.
 * Needs GG_BENCH_PTX: the kernels' PTX file (tests/fakecuda/kernels.ptx). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#define CHECK(call)                                                                 \
	do {                                                                        \
		CUresult rc_ = (call);                                              \
		if (rc_ != CUDA_SUCCESS) {                                          \
			fprintf(stderr, "bench: %s failed: %d\n", #call, (int)rc_); \
			exit(2);                                                    \
		}                                                                   \
	} while (0)

static CUcontext ctx;
static CUmodule mod;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void pairs(unsigned long n, size_t bytes)
{
	for (unsigned long i = 0; i < n; i++) {
		CUdeviceptr p;

		CHECK(cuMemAlloc_v2(&p, bytes));
		CHECK(cuMemFree_v2(p));
	}
}

/* @depth frames, then the pairs: each frame its own (no tail call). */
__attribute__((noinline)) static void deep_pairs(unsigned long n, unsigned long depth)
{
	if (depth)
		deep_pairs(n, depth - 1);
	else
		pairs(n, 256);
	__asm__ volatile("" ::: "memory");
}

struct job {
	unsigned long n;
};

static void *pair_thread(void *arg)
{
	struct job *j = arg;

	CHECK(cuCtxSetCurrent(ctx));
	pairs(j->n, 256);
	return NULL;
}

static CUdeviceptr *hold(unsigned long n, size_t bytes)
{
	CUdeviceptr *live = malloc(n * sizeof(*live));

	if (!live)
		exit(2);
	for (unsigned long i = 0; i < n; i++)
		CHECK(cuMemAlloc_v2(&live[i], bytes));
	return live;
}

int main(int argc, char **argv)
{
	const char *ptx = getenv("GG_BENCH_PTX"), *what = argc > 1 ? argv[1] : "";
	unsigned long a = argc > 2 ? strtoul(argv[2], NULL, 0) : 0;
	unsigned long b = argc > 3 ? strtoul(argv[3], NULL, 0) : 0;
	CUfunction f;
	double t0, t;

	if (!ptx || !a) {
		fprintf(stderr, "usage: GG_BENCH_PTX=kernels.ptx bench CASE N [M]\n");
		return 64;
	}
	CHECK(cuInit(0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuModuleLoad(&mod, ptx));

	if (!strcmp(what, "lookup-hit") || !strcmp(what, "lookup-miss")) {
		const char *name = what[7] == 'h' ? "gg_fill" : "no_such_kernel";

		t0 = now_ns();
		for (unsigned long i = 0; i < a; i++)
			(void)cuModuleGetFunction(&f, mod, name);
		printf("ns_per_op %.1f\n", (now_ns() - t0) / (double)a);
	} else if (!strcmp(what, "launch")) {
		unsigned char v = 0;
		unsigned long long n = 0;
		CUdeviceptr p = 0;
		void *params[] = { &p, &v, &n };

		CHECK(cuModuleGetFunction(&f, mod, "gg_fill"));
		t0 = now_ns();
		for (unsigned long i = 0; i < a; i++)
			CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
		t = now_ns() - t0;
		CHECK(cuCtxSynchronize());
		printf("ns_per_op %.1f\n", t / (double)a);
	} else if (!strcmp(what, "launch4") || !strcmp(what, "launch4-held")) {
		CUdeviceptr p[4], gone;
		void *params[] = { &p[0], &p[1], &p[2], &p[3] };

		for (int i = 0; i < 4; i++)
			CHECK(cuMemAlloc_v2(&p[i], 256));
		if (what[7]) {
			CHECK(cuMemAlloc_v2(&gone, 256));
			CHECK(cuMemFree_v2(gone));
		}
		CHECK(cuModuleGetFunction(&f, mod, "gg_touch4"));
		t0 = now_ns();
		for (unsigned long i = 0; i < a; i++)
			CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
		t = now_ns() - t0;
		CHECK(cuCtxSynchronize());
		for (int i = 0; i < 4; i++)
			CHECK(cuMemFree_v2(p[i]));
		printf("ns_per_op %.1f\n", t / (double)a);
	} else if (!strcmp(what, "qfree") || !strcmp(what, "qrelease")) {
		CUdeviceptr *p = calloc(a, sizeof(*p));

		if (!p)
			return 2;
		for (unsigned long i = 0; i < a; i++)
			CHECK(cuMemAlloc_v2(&p[i], b));
		t0 = now_ns();
		for (unsigned long i = 0; i < a; i++)
			CHECK(cuMemFree_v2(p[i]));
		t = now_ns() - t0;
		if (what[1] == 'r') {
			t0 = now_ns();
			CHECK(cuCtxSynchronize());
			t = now_ns() - t0;
		}
		printf("ns_per_op %.1f\n", t / (double)a);
		free(p);
	} else if (!strcmp(what, "graph")) {
		CUdeviceptr p[4];
		void *params[] = { &p[0], &p[1], &p[2], &p[3] };
		CUstream s;
		CUgraph g;
		CUgraphExec x;

		for (int i = 0; i < 4; i++)
			CHECK(cuMemAlloc_v2(&p[i], 256));
		CHECK(cuModuleGetFunction(&f, mod, "gg_touch4"));
		CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
		CHECK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
		for (unsigned long k = 0; k < (b ? b : 1); k++)
			CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
		CHECK(cuStreamEndCapture(s, &g));
		CHECK(cuGraphInstantiateWithFlags(&x, g, 0));
		t = 0;
		for (unsigned long done = 0; done < a;) {
			unsigned long batch = a - done < 256 ? a - done : 256;

			t0 = now_ns();
			for (unsigned long i = 0; i < batch; i++)
				CHECK(cuGraphLaunch(x, s));
			t += now_ns() - t0;
			CHECK(cuStreamSynchronize(s)); /* the fake's queue stays short */
			done += batch;
		}
		CHECK(cuGraphExecDestroy(x));
		CHECK(cuGraphDestroy(g));
		CHECK(cuStreamDestroy_v2(s));
		for (int i = 0; i < 4; i++)
			CHECK(cuMemFree_v2(p[i]));
		printf("ns_per_op %.1f\n", t / (double)a);
	} else if (!strcmp(what, "htod")) {
		unsigned char host[64] = { 0 };
		CUdeviceptr p;

		if (b > 256 - sizeof(host))
			return 64;
		CHECK(cuMemAlloc_v2(&p, 256));
		t0 = now_ns();
		for (unsigned long i = 0; i < a; i++)
			CHECK(cuMemcpyHtoD_v2(p + b, host, sizeof(host)));
		printf("ns_per_op %.1f\n", (now_ns() - t0) / (double)a);
		CHECK(cuMemFree_v2(p));
	} else if (!strcmp(what, "alloc")) {
		t0 = now_ns();
		pairs(a, b ? b : 256);
		printf("ns_per_op %.1f\n", (now_ns() - t0) / (double)a);
	} else if (!strcmp(what, "alloc-deep")) {
		t0 = now_ns();
		deep_pairs(a, b);
		printf("ns_per_op %.1f\n", (now_ns() - t0) / (double)a);
	} else if (!strcmp(what, "scale")) {
		CUdeviceptr *live = hold(a, 256);

		t0 = now_ns();
		pairs(b, 256);
		printf("ns_per_op %.1f\n", (now_ns() - t0) / (double)b);
		for (unsigned long i = 0; i < a; i++)
			CHECK(cuMemFree_v2(live[i]));
		free(live);
	} else if (!strcmp(what, "threads")) {
		pthread_t th[64];
		struct job job = { b };

		if (a > 64)
			return 64;
		t0 = now_ns();
		for (unsigned long i = 0; i < a; i++)
			pthread_create(&th[i], NULL, pair_thread, &job);
		for (unsigned long i = 0; i < a; i++)
			pthread_join(th[i], NULL);
		t = now_ns() - t0;
		printf("pairs_per_s %.0f\n", (double)(a * b) / (t / 1e9));
	} else if (!strcmp(what, "scan")) {
		CUdeviceptr *live = hold(a, b ? b : 256);

		t0 = now_ns();
		CHECK(cuCtxSynchronize());
		printf("ns %.0f\n", now_ns() - t0);
		free(live); /* left live: the exit scan reads them too */
	} else {
		fprintf(stderr, "bench: unknown case '%s'\n", what);
		return 64;
	}
	CHECK(cuModuleUnload(mod));
	CHECK(cuDevicePrimaryCtxRelease_v2(0));
	return 0;
}
