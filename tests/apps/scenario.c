/* The scenario every route runs. Its stdout is compared with and without the
 * shim, so it prints only what the application itself would know. */
#include <dlfcn.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver-table.h"

static const char *name_of(const struct app_driver *d, CUresult rc)
{
	const char *s = NULL;

	if (!d->GetErrorName || d->GetErrorName(rc, &s) != CUDA_SUCCESS || !s)
		return "?";
	return s;
}

#define CHECK(call)                                                                            \
	do {                                                                                   \
		CUresult rc_ = (call);                                                         \
		if (rc_ != CUDA_SUCCESS) {                                                     \
			fprintf(stderr, "%s: %s failed: %s\n", route, #call, name_of(d, rc_)); \
			return 2;                                                              \
		}                                                                              \
	} while (0)

/* GG_SCENARIO_DANGLING=halt: at an abort, the driver's count of graph
 * launches (the fake driver's fakecuda_calls, looked up beforehand), written
 * with write(2). */
static unsigned long (*driver_calls)(const char *);

static void on_abort_count(int sig)
{
	char line[64];
	unsigned long n = driver_calls
				  ? driver_calls("cuGraphLaunch") + driver_calls("cuGraphLaunch_ptsz")
				  : 999;
	int len = snprintf(line, sizeof(line), "graph launches forwarded at abort: %lu\n", n);

	(void)sig;
	if (write(1, line, (size_t)len) < 0)
		return;
}

/* GG_SCENARIO_DANGLING: a graph captured with gg_fill of a 100-byte buffer D,
 * replayed once, D freed, the graph replayed again (with a quarantine, a
 * dangling launch); with "halt", the count of graph launches the driver saw
 * is written if the process aborts before the second replay returns. */
static int dangling_replay(const struct app_driver *d, const char *route, CUmodule mod)
{
	CUfunction fillk;
	CUdeviceptr D;
	CUstream s;
	CUgraph g;
	CUgraphExec x;
	uint64_t nd = 100;
	unsigned char two = 2;
	void *pd[] = { &D, &two, &nd };

	CHECK(d->ModuleGetFunction(&fillk, mod, "gg_fill"));
	CHECK(d->MemAlloc(&D, nd));
	CHECK(d->StreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(d->StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
	CHECK(d->LaunchKernel(fillk, 1, 1, 1, 128, 1, 1, 0, s, pd, NULL));
	CHECK(d->StreamEndCapture(s, &g));
	CHECK(d->GraphInstantiate(&x, g, 0));
	CHECK(d->GraphLaunch(x, s));
	CHECK(d->StreamSynchronize(s));
	CHECK(d->MemFree(D));
	if (!strcmp(getenv("GG_SCENARIO_DANGLING"), "halt")) {
		void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);

		driver_calls = h ? (unsigned long (*)(const char *))dlsym(h, "fakecuda_calls") : NULL;
		signal(SIGABRT, on_abort_count);
		fflush(stdout);
	}
	printf("dangling replay: %s\n", name_of(d, d->GraphLaunch(x, s)));
	CHECK(d->StreamSynchronize(s));
	CHECK(d->GraphExecDestroy(x));
	CHECK(d->GraphDestroy(g));
	CHECK(d->StreamDestroy(s));
	return 0;
}

/* GG_SCENARIO_OOM: under the fake driver's memory limit of 8 MiB, six
 * buffers of 1 MiB allocated and freed (a quarantine of 16 MiB holds them),
 * then a call that needs 4 MiB: more than is left unless the quarantine
 * gives its memory back. Before each, the six again: an array, a 3D array,
 * physical memory (cuMemCreate), the upload and the launch of a captured
 * graph whose memory node allocates at each, the launch of one built with
 * cuGraphAddMemAllocNode. Prints each result. */
static int six_freed(const struct app_driver *d, const char *route)
{
	CUdeviceptr p[6];

	for (int i = 0; i < 6; i++)
		CHECK(d->MemAlloc(&p[i], 1 << 20));
	for (int i = 0; i < 6; i++)
		CHECK(d->MemFree(p[i]));
	return 0;
}

static int out_of_memory(const struct app_driver *d, const char *route, CUdevice dev)
{
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	void (*limit)(size_t) = h ? (void (*)(size_t))dlsym(h, "fakecuda_set_mem_limit") : NULL;
	CUDA_ARRAY_DESCRIPTOR a2 = {
		.Width = 2048, .Height = 2048, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1
	};
	CUDA_ARRAY3D_DESCRIPTOR a3 = { .Width = 256,
				       .Height = 256,
				       .Depth = 64,
				       .Format = CU_AD_FORMAT_UNSIGNED_INT8,
				       .NumChannels = 1 };
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				     .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev } };
	CUDA_MEM_ALLOC_NODE_PARAMS mp = {
		.poolProps = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
			       .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev } },
		.bytesize = 4 << 20,
	};
	CUmemGenericAllocationHandle mem;
	CUgraph built;
	CUgraphNode node;
	CUgraphExec bx;
	CUdeviceptr g;
	CUarray arr;
	CUstream s;
	CUgraph graph;
	CUgraphExec x;
	CUresult rc;

	if (!limit) {
		printf("out of memory: no fake driver\n");
		return 0;
	}
	CHECK(d->StreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(d->StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
	CHECK(d->MemAllocAsync(&g, 4 << 20, s));
	CHECK(d->MemFreeAsync(g, s));
	CHECK(d->StreamEndCapture(s, &graph));
	CHECK(d->GraphInstantiate(&x, graph, 0));
	limit(8 << 20);
	if (six_freed(d, route))
		return 2;
	rc = d->ArrayCreate(&arr, &a2);
	printf("out of memory: cuArrayCreate_v2 %s\n", name_of(d, rc));
	if (rc == CUDA_SUCCESS)
		CHECK(d->ArrayDestroy(arr));
	if (six_freed(d, route))
		return 2;
	rc = d->Array3DCreate(&arr, &a3);
	printf("out of memory: cuArray3DCreate_v2 %s\n", name_of(d, rc));
	if (rc == CUDA_SUCCESS)
		CHECK(d->ArrayDestroy(arr));
	if (six_freed(d, route))
		return 2;
	rc = d->MemCreate(&mem, 4 << 20, &prop, 0);
	printf("out of memory: cuMemCreate %s\n", name_of(d, rc));
	if (rc == CUDA_SUCCESS)
		CHECK(d->MemRelease(mem));
	if (six_freed(d, route))
		return 2;
	rc = d->GraphUpload(x, s);
	printf("out of memory: cuGraphUpload %s\n", name_of(d, rc));
	if (six_freed(d, route))
		return 2;
	rc = d->GraphLaunch(x, s);
	printf("out of memory: cuGraphLaunch %s\n", name_of(d, rc));
	CHECK(d->StreamSynchronize(s));
	CHECK(d->GraphCreate(&built, 0));
	rc = d->GraphAddMemAllocNode(&node, built, NULL, 0, &mp);
	printf("out of memory: cuGraphAddMemAllocNode %s\n", name_of(d, rc));
	CHECK(d->GraphInstantiate(&bx, built, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
	if (six_freed(d, route))
		return 2;
	rc = d->GraphLaunch(bx, s);
	printf("out of memory: cuGraphLaunch of a built graph %s\n", name_of(d, rc));
	CHECK(d->StreamSynchronize(s));
	if (rc == CUDA_SUCCESS)
		CHECK(d->MemFreeAsync(mp.dptr, s));
	CHECK(d->StreamSynchronize(s));
	CHECK(d->GraphExecDestroy(bx));
	CHECK(d->GraphDestroy(built));
	limit(0);
	CHECK(d->GraphExecDestroy(x));
	CHECK(d->GraphDestroy(graph));
	CHECK(d->StreamDestroy(s));
	return 0;
}

/* GG_SCENARIO_NODE_PARAMS: the generic node functions (CUDA 12.2). A graph
 * of one kernel node added with cuGraphAddNode, gg_fill of a 100-byte E;
 * replayed; the node set in the executable graph (cuGraphExecNodeSetParams)
 * to gg_overrun of E by 4, replayed; the graph's node set
 * (cuGraphNodeSetParams) to gg_overrun of a 200-byte F by 2, instantiated
 * again, replayed; E and F freed. */
static int generic_nodes(const struct app_driver *d, const char *route, CUmodule mod)
{
	CUfunction over, fillk;
	CUdeviceptr E, F;
	CUstream s;
	CUgraph g;
	CUgraphExec x1, x2;
	CUgraphNode m;
	uint64_t ne = 100, nf = 200, four = 4, two = 2;
	unsigned char one = 1;
	void *pe_fill[] = { &E, &one, &ne }, *pe_over[] = { &E, &ne, &four };
	void *pf_over[] = { &F, &nf, &two };
	CUgraphNodeParams p = { .type = CU_GRAPH_NODE_TYPE_KERNEL };

	CHECK(d->ModuleGetFunction(&over, mod, "gg_overrun"));
	CHECK(d->ModuleGetFunction(&fillk, mod, "gg_fill"));
	CHECK(d->MemAlloc(&E, ne));
	CHECK(d->MemAlloc(&F, nf));
	CHECK(d->StreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(d->GraphCreate(&g, 0));
	p.kernel = (CUDA_KERNEL_NODE_PARAMS_v3){ .func = fillk,
						 .gridDimX = 1,
						 .gridDimY = 1,
						 .gridDimZ = 1,
						 .blockDimX = 128,
						 .blockDimY = 1,
						 .blockDimZ = 1,
						 .kernelParams = pe_fill };
	CHECK(d->GraphAddNode(&m, g, NULL, NULL, 0, &p));
	CHECK(d->GraphInstantiate(&x1, g, 0));
	CHECK(d->GraphLaunch(x1, s));
	CHECK(d->StreamSynchronize(s));
	p.kernel.func = over;
	p.kernel.kernelParams = pe_over;
	CHECK(d->GraphExecNodeSetParams(x1, m, &p));
	CHECK(d->GraphLaunch(x1, s));
	CHECK(d->StreamSynchronize(s));
	p.kernel.kernelParams = pf_over;
	CHECK(d->GraphNodeSetParams(m, &p));
	CHECK(d->GraphInstantiate(&x2, g, 0));
	CHECK(d->GraphLaunch(x2, s));
	CHECK(d->StreamSynchronize(s));
	CHECK(d->MemFree(E));
	CHECK(d->MemFree(F));
	CHECK(d->GraphExecDestroy(x2));
	CHECK(d->GraphExecDestroy(x1));
	CHECK(d->GraphDestroy(g));
	CHECK(d->StreamDestroy(s));
	printf("generic nodes: added, set in the executable graph and in the graph\n");
	return 0;
}

int app_scenario(const struct app_driver *d, const char *route, const char *ptx_path)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fill = NULL, missing = NULL;
	CUdeviceptr buf, abuf, base;
	CUstream stream;
	size_t size = 0;
	unsigned char host[1000];
	uint64_t n = sizeof(host), sum = 0;
	unsigned char value = 7;
	CUresult rc;

	CHECK(d->Init(0));
	CHECK(d->DeviceGet(&dev, 0));
	CHECK(d->PrimaryCtxRetain(&ctx, dev));
	CHECK(d->CtxSetCurrent(ctx));
	CHECK(d->ModuleLoad(&mod, ptx_path));
	/* First, so that the base scenario's second free (an error) comes after. */
	if (getenv("GG_SCENARIO_DANGLING") && dangling_replay(d, route, mod))
		return 2;
	if (getenv("GG_SCENARIO_OOM") && out_of_memory(d, route, dev))
		return 2;

	rc = d->ModuleGetFunction(&fill, mod, "gg_fill");
	printf("lookup gg_fill: %s\n", name_of(d, rc));
	rc = d->ModuleGetFunction(&missing, mod, "no_such_kernel");
	printf("lookup no_such_kernel: %s\n", name_of(d, rc));

	CHECK(d->MemAlloc(&buf, n));
	void *params[] = { &buf, &value, &n };
	CHECK(d->LaunchKernel(fill, 1, 1, 1, 128, 1, 1, 0, NULL, params, NULL));
	CHECK(d->CtxSynchronize());
	CHECK(d->MemcpyDtoH(host, buf, n));
	for (size_t i = 0; i < n; i++)
		sum += host[i];
	printf("sum after gg_fill: %" PRIu64 "\n", sum);
	CHECK(d->MemGetAddressRange(&base, &size, buf + 10));
	printf("address range of buf+10: base %s, size %zu\n", base == buf ? "buf" : "other", size);
	CHECK(d->MemFree(buf));
	rc = d->MemFree(buf);
	printf("second free: %s\n", name_of(d, rc));

	CHECK(d->StreamCreate(&stream, 0));
	CHECK(d->MemAllocAsync(&abuf, 256, stream));
	CHECK(d->MemFreeAsync(abuf, stream));
	CHECK(d->StreamSynchronize(stream));
	CHECK(d->StreamDestroy(stream));
	printf("stream-ordered alloc and free: done\n");

	/* GG_SCENARIO_LIBRARY=PATH: a library loaded from PATH, its gg_fill and
	 * module materialised in this context (where lazy loading fails). */
	if (getenv("GG_SCENARIO_LIBRARY")) {
		CUlibrary lib;
		CUkernel k;
		CUfunction lf;
		CUmodule lm;

		rc = d->LibraryLoadFromFile(&lib, getenv("GG_SCENARIO_LIBRARY"), NULL, NULL, 0, NULL,
					    NULL, 0);
		printf("library: %s\n", name_of(d, rc));
		if (rc == CUDA_SUCCESS) {
			rc = d->LibraryGetKernel(&k, lib, "gg_fill");
			printf("library kernel gg_fill: %s\n", name_of(d, rc));
			if (rc == CUDA_SUCCESS)
				printf("its function: %s\n", name_of(d, d->KernelGetFunction(&lf, k)));
			printf("library module: %s\n", name_of(d, d->LibraryGetModule(&lm, lib)));
			CHECK(d->LibraryUnload(lib));
		}
	}

	/* GG_SCENARIO_OVERRUN: gg_overrun_second writes 8 bytes past the second of
	 * two buffers, its parameters in kernelParams, then 4 through extra's buffer. */
	if (getenv("GG_SCENARIO_OVERRUN")) {
		CUfunction two;
		CUdeviceptr a, b;
		uint64_t na = 100, nb = 200, over = 8;
		void *two_params[] = { &a, &na, &b, &nb, &over };
		struct {
			CUdeviceptr a;
			uint64_t na;
			CUdeviceptr b;
			uint64_t nb, over;
		} pbuf;
		size_t buf_size = sizeof(pbuf);
		void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &pbuf, CU_LAUNCH_PARAM_BUFFER_SIZE,
				  &buf_size, CU_LAUNCH_PARAM_END };

		CHECK(d->ModuleGetFunction(&two, mod, "gg_overrun_second"));
		CHECK(d->MemAlloc(&a, na));
		CHECK(d->MemAlloc(&b, nb));
		CHECK(d->LaunchKernel(two, 1, 1, 1, 128, 1, 1, 0, NULL, two_params, NULL));
		CHECK(d->CtxSynchronize());
		pbuf = (__typeof__(pbuf)){ a, na, b, nb, 4 };
		CHECK(d->LaunchKernel(two, 1, 1, 1, 128, 1, 1, 0, NULL, NULL, extra));
		CHECK(d->CtxSynchronize());
		CHECK(d->MemFree(b));
		CHECK(d->MemFree(a));
		printf("two-buffer overruns: done\n");
	}

	/* GG_SCENARIO_GRAPH: CUDA graphs (each replay runs each kernel node).
	 * Captured: gg_overrun writes 8 bytes past a 1000-byte buffer A; captured,
	 * it does not run; a synchronize (the tests' sync:1 boundary sees A's band
	 * clean); three replays; A freed. Built node by node: gg_fill of a
	 * 100-byte B, then a child graph whose gg_overrun writes 4 past a 200-byte
	 * C; one replay; the fill node set to gg_overrun of B by 2, one replay;
	 * the graph updated from one whose nodes fill B and C, one replay; B and
	 * C freed. */
	if (getenv("GG_SCENARIO_GRAPH")) {
		CUfunction over, fillk;
		CUdeviceptr A, B, C;
		CUstream s;
		CUgraph g1, g2, g3, g4, g5;
		CUgraphExec x1, x2;
		CUgraphNode n1, n2, c1, m1, m2, c2;
		CUgraphExecUpdateResultInfo info;
		uint64_t na = 1000, nb = 100, nc = 200, eight = 8, four = 4, two = 2;
		unsigned char one = 1;
		void *pa[] = { &A, &na, &eight };
		void *pb_fill[] = { &B, &one, &nb }, *pb_over[] = { &B, &nb, &two };
		void *pc_over[] = { &C, &nc, &four }, *pc_fill[] = { &C, &one, &nc };
		CUDA_KERNEL_NODE_PARAMS kp = { .gridDimX = 1,
					       .gridDimY = 1,
					       .gridDimZ = 1,
					       .blockDimX = 128,
					       .blockDimY = 1,
					       .blockDimZ = 1 };

		CHECK(d->ModuleGetFunction(&over, mod, "gg_overrun"));
		CHECK(d->ModuleGetFunction(&fillk, mod, "gg_fill"));
		CHECK(d->MemAlloc(&A, na));
		CHECK(d->StreamCreate(&s, CU_STREAM_NON_BLOCKING));
		CHECK(d->StreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
		CHECK(d->LaunchKernel(over, 1, 1, 1, 128, 1, 1, 0, s, pa, NULL));
		CHECK(d->StreamEndCapture(s, &g1));
		CHECK(d->GraphInstantiate(&x1, g1, 0));
		CHECK(d->CtxSynchronize());
		for (int i = 0; i < 3; i++)
			CHECK(d->GraphLaunch(x1, s));
		CHECK(d->StreamSynchronize(s));
		CHECK(d->MemFree(A));
		printf("captured graph: replayed 3 times\n");

		CHECK(d->MemAlloc(&B, nb));
		CHECK(d->MemAlloc(&C, nc));
		CHECK(d->GraphCreate(&g2, 0));
		CHECK(d->GraphCreate(&g3, 0));
		kp.func = fillk;
		kp.kernelParams = pb_fill;
		CHECK(d->GraphAddKernelNode(&n1, g2, NULL, 0, &kp));
		kp.func = over;
		kp.kernelParams = pc_over;
		CHECK(d->GraphAddKernelNode(&n2, g3, NULL, 0, &kp));
		CHECK(d->GraphAddChildGraphNode(&c1, g2, &n1, 1, g3));
		CHECK(d->GraphInstantiate(&x2, g2, 0));
		CHECK(d->GraphLaunch(x2, s));
		CHECK(d->StreamSynchronize(s));
		kp.func = over;
		kp.kernelParams = pb_over;
		CHECK(d->GraphExecKernelNodeSetParams(x2, n1, &kp));
		CHECK(d->GraphLaunch(x2, s));
		CHECK(d->StreamSynchronize(s));
		CHECK(d->GraphCreate(&g4, 0));
		CHECK(d->GraphCreate(&g5, 0));
		kp.func = fillk;
		kp.kernelParams = pb_fill;
		CHECK(d->GraphAddKernelNode(&m1, g4, NULL, 0, &kp));
		kp.kernelParams = pc_fill;
		CHECK(d->GraphAddKernelNode(&m2, g5, NULL, 0, &kp));
		CHECK(d->GraphAddChildGraphNode(&c2, g4, &m1, 1, g5));
		CHECK(d->GraphExecUpdate(x2, g4, &info));
		CHECK(d->GraphLaunch(x2, s));
		CHECK(d->StreamSynchronize(s));
		CHECK(d->MemFree(B));
		CHECK(d->MemFree(C));
		CHECK(d->GraphExecDestroy(x2));
		CHECK(d->GraphExecDestroy(x1));
		for (CUgraph *g = (CUgraph[]){ g1, g2, g3, g4, g5 }, *e = g + 5; g < e; g++)
			CHECK(d->GraphDestroy(*g));
		CHECK(d->StreamDestroy(s));
		printf("built graph: replayed 3 times, set and updated\n");
	}

	if (getenv("GG_SCENARIO_NODE_PARAMS") && generic_nodes(d, route, mod))
		return 2;

	CHECK(d->ModuleUnload(mod));
	CHECK(d->PrimaryCtxRelease(dev));
	printf("%s: ok\n", route);
	return 0;
}
