/* Device allocations on demand, for the red-zone tests. Each argument is a step:
 *   alloc:N          cuMemAlloc_v2 of N bytes (buffer k = the k-th alloc or async)
 *   async:N          cuMemAllocAsync of N bytes on a stream of the app's
 *   managed:N        cuMemAllocManaged of N bytes (freed by cuMemFree_v2)
 *   pool:N           cuMemAllocFromPoolAsync of N bytes from the device's default
 *                    pool on the app's stream (freed by cuMemFreeAsync)
 *   load:PATH        dlopen PATH (a stand-in of a framework's library)
 *   vmm:N            N granules of virtual memory: reserve, create, map, set
 *                    access, write and read back a byte, unmap, release, free
 *   pitch:W:H        cuMemAllocPitch_v2 of H rows of W bytes, 4-byte elements;
 *                    prints the pitch; its size is pitch * H
 *   free:K           cuMemFree_v2 (or cuMemFreeAsync + stream sync) of buffer K
 *   ifree:K:OFF      the same of buffer K + OFF (a pointer inside it); prints the result
 *   salloc:N:S       cuMemAllocAsync of N bytes on stream S (0: the app's stream, 1: a
 *                    second non-blocking stream of its own), not synchronized
 *   sfill:K:S        kernel gg_fill over buffer K (value 1) queued on stream S, not
 *                    synchronized
 *   sfree:K:S        cuMemFreeAsync of buffer K on stream S, not synchronized; prints
 *                    the result
 *   ssync            cuStreamSynchronize of both streams
 *   abortcount       if the process aborts from here on, first print (write(2))
 *                    "launches forwarded at abort: N", the fake driver's count of
 *                    cuLaunchKernel calls
 *   same:A:B         whether buffers A and B got the same address
 *   sites:N:F        N rounds of a 16-byte allocation from each of ten functions
 *                    (redzone_place_0 .. _9, each calling redzone_alloc); all freed
 *                    at the end when F is 1, kept until exit when 0
 *   deep:D:S         an allocation of S bytes made D frames deep (redzone_deep), kept
 *   overrun:K:E      kernel gg_overrun writes E bytes past the end of buffer K, then sync
 *   under:K:E        kernel gg_underrun, given only buffer K, writes the E bytes right
 *                    below its start, then sync
 *   two:A:B:E        kernel gg_overrun_second given buffers A and B: writes all of
 *                    A, and E bytes past the end of B; kernelParams, on the
 *                    legacy stream, not synchronized; then "app: two returned"
 *                    on stderr (a checked launch's ERROR comes before it)
 *   twox:A:B:E       the same, its parameters in extra's CU_LAUNCH_PARAM_BUFFER
 *   twok:A:B:E       the same kernel as a CUkernel of a library
 *                    (cuLibraryLoadFromFile, cuLibraryGetKernel), launched directly
 *   twof:A:B:E       the same through the CUfunction cuKernelGetFunction gives
 *                    for that CUkernel (a handle no hooked lookup produced)
 *   twoi:A:B:E       the same as two, given B + 16 (a pointer into the middle)
 *                    and B's size - 16
 *   reload:P1:P2     load PTX file P1, launch its kernel gg_overrun_second on
 *                    buffers 0 and 1 (nothing past their ends), unload it; load
 *                    P2, launch its gg_fill over buffer 1 with kernelParams
 *                    ending where an unreadable page starts; unload it; prints
 *                    whether the driver handed out the first kernel's handle again
 *   fill:K           kernel gg_fill over buffer K's size (value 1), then sync
 *   kcopy:A:B        kernel gg_copy of A's size from buffer B into A, then sync
 *   copy:K:E         cuMemcpyHtoD of K's size + E bytes of 0x42 into buffer K; prints
 *                    the result (past the end: refused, with and without red zones)
 *   poke:K:E         E bytes of 0x42 written right past buffer K's end, unseen by
 *                    the driver API (the fake's fakecuda_write: what a kernel, or
 *                    a host pointer into mapped memory, does); no driver call
 *   sum:K:E          kernel gg_sum over K's size + E bytes (reads past the end); prints it
 *   band:K:P         the P bytes after buffer K's end, read with the fake's fakecuda_read
 *   range:K:OFF      cuMemGetAddressRange_v2 of buffer K + OFF
 *   attr:K:OFF       cuPointerGetAttribute(RANGE_SIZE) and cuPointerGetAttributes of K + OFF
 *   limit:B          the fake driver's memory limit, B bytes
 *   sync             cuCtxSynchronize
 *   meminfo          cuMemGetInfo_v2: "meminfo used U" (total - free)
 *   launch           launch gg_fill on a 64-byte buffer of its own
 *   capfree:K:M      capture (mode M: 0 global, 1 thread-local, 2 relaxed) a
 *                    memset on a blocking stream of its own, free buffer K
 *                    meanwhile, end the capture; prints each result
 *   graph:K:E[:F]    capture gg_overrun over buffer K's size + E bytes, on the
 *                    app's stream, into a graph (relaxed mode), and instantiate
 *                    it with flags F (4: for device launch; default 0): the
 *                    graph the next steps replay; prints the results
 *   replay:N         launch that graph N times on the app's stream, then
 *                    cuCtxSynchronize; prints the last launch's result and the
 *                    synchronize's
 *   deadreplay       launch that graph on a stream already destroyed; prints
 *                    the result
 *   gset:K:E         cuGraphExecKernelNodeSetParams: its node becomes gg_overrun
 *                    over buffer K's size + E bytes; prints the result
 *   capalloc:N       cuMemAllocAsync of N bytes on a stream being captured
 *                    (relaxed mode): a graph's allocation node; prints results
 *   badlaunch        launch gg_fill with 2048 threads a block, which the driver
 *                    refuses (CUDA_ERROR_INVALID_VALUE); prints the result
 *   reset            cuDevicePrimaryCtxReset_v2, then retain the primary context again
 *   old-reset        the same through the legacy cuDevicePrimaryCtxReset
 *   old-release      cuDevicePrimaryCtxRelease (legacy) of the only retain, then retain again
 *   pop / push       cuCtxPopCurrent_v2 / cuCtxPushCurrent_v2 of the primary context
 *   deadfree:K       cuMemFreeAsync of buffer K on a stream already destroyed
 *   ctx              create a context (cuCtxCreate_v4) and make it current
 *   contexts:N       N contexts more, each made current in turn and given one
 *                    live 16-byte allocation; prints how many succeeded
 *   destroy          destroy that context
 *   attach           cuCtxAttach (deprecated) of the current context
 *   detach           cuCtxDetach (deprecated) of that created context; when
 *                    it is gone, back to the primary context; prints which
 *   old-destroy      destroy it through the legacy cuCtxDestroy
 *   threads:T:N:S    T threads, each N alloc/free pairs of S bytes
 *   many:N:S         N live allocations of S bytes, then free them all
 *   hold:N:S         N allocations of S bytes, kept until exit
 *   wait:PATH        wait (up to 30 s) until PATH exists
 *   raise:SIG        send signal number SIG to this process
 *   storm:T:N:K      T threads, each N alloc/free pairs, while K signals
 *                    GPUGUARD_SIGNAL's number (GG_TEST_SIGNAL) arrive
 *   handler:SIG      install a handler of the application's own for SIG
 *   handled          how many times the application's own handler ran
 *   fork:SIG         fork; the child allocates 64 bytes, overruns it by 2,
 *                    sends itself SIG (when not 0) and waits for its own
 *                    summary (GPUGUARD_SUMMARY_JSON, %p = its pid), then exits
 *                    0; the parent waits for it
 *   slowstart:MS     from here on (and in children forked later), the
 *                    program's thread runtime holds a lock of its own from
 *                    the moment it creates a thread until that thread has been
 *                    starting for MS ms, and fork() does not take it, as GCC
 *                    12's AddressSanitizer does with its allocator lock: a
 *                    child forked meanwhile creates no thread (pthread_create
 *                    waits 3 s for the lock there, then fails with EAGAIN)
 *   forkrace:N:SIG   N times: fork a child that calls the driver (its first
 *                    hook starts its own watcher thread) and at once forks a
 *                    grandchild, which calls the driver, sends itself SIG and
 *                    waits (up to 3 s) for its own summary (GPUGUARD_SUMMARY_JSON,
 *                    %p = its pid), which only a boundary writes before it
 *                    exits; prints how many grandchildren saw theirs
 *   child:MODE       fork one child and wait for it. MODE: idle (no driver
 *                    call), clean (64 bytes allocated, filled, freed), overrun
 *                    (64 bytes overrun by 8), each ending with exit(0), or the
 *                    same with "-_exit" (clean-_exit, overrun-_exit), ending
 *                    with _exit(0); the parent prints the child's status
 *   brood:T:C        T threads, each overrunning a 64-byte buffer of its own
 *                    and forking C children that each overrun one of theirs
 *                    (by 8), exit(0); prints how many children exited 0
 *   vfork            vfork a child that fails to exec and ends with _exit(127),
 *                    as posix_spawn and Python's subprocess do
 *   cbexit:S         a stream callback that calls _exit(S), run by a cuCtxSynchronize:
 *                    _exit inside a hooked call, as from a signal handler
 *   tasks            how many threads this process has
 *   label:TEXT       gpuguard_boundary(TEXT), found with dlsym(RTLD_DEFAULT); prints
 *                    "label TEXT: N" (its result) or "label TEXT: absent"
 *   labels:T:N       T threads, each N labelled boundaries at once; prints the sum
 *                    of their results
 *   version          gpuguard_version(), found the same way; prints it
 *   cblabel          gpuguard_boundary from a stream callback run by a
 *                    cuCtxSynchronize (inside a hooked call); prints its result
 *   cycles:N         N times: reset the primary context, allocate 100 bytes,
 *                    check the size cuMemGetAddressRange_v2 reports, free
 *   print:N          N lines through a fully buffered stream, never flushed
 *   exit:N           exit(N) here
 *   open2:PATH       close fd 2 and open PATH, which gets fd 2, as a daemon's
 *                    data file; writes "data" into it
 *   cd:PATH          chdir(PATH): relative report paths must not follow it
 * Before its first CUDA call, GG_TEST_EARLY_HANDLER=SIG installs the handler
 * of handler:SIG, GG_TEST_EARLY_IGNORE=SIG sets SIG to SIG_IGN, and
 * GG_TEST_EARLY_WAIT=PATH prints "early" and waits (up to 30 s) for PATH.
 * GG_TEST_NO_THREADS=1 makes every pthread_create fail with EAGAIN.
 * With GG_TEST_LATE_OVERRUN set, an exit handler registered before the first
 * driver call (so it runs after gpuguard's) overruns buffer 0 by 8 and frees
 * it: a violation found after gpuguard's exit report.
 * Prints one line per step on stdout, with only what the application knows. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* cuCtxAttach and cuCtxDetach are deprecated: PyCUDA still calls them. */
#define CUDA_ENABLE_DEPRECATED 1
#include "driver-table.h"
#include "steps.h"

#define MAX_BUFS 1024

static CUmodule mod;
static CUstream stream, stream2;
static CUgraphExec app_graph; /* graph: */
static CUgraphNode app_graph_node;
static CUcontext primary, created;
static struct {
	CUdeviceptr ptr;
	size_t size;
	int async;
} bufs[MAX_BUFS];
static int nbufs;
static const char *ptx; /* GG_TEST_PTX: the kernels */

#define CHECK(call)                                                                       \
	do {                                                                              \
		CUresult rc_ = (call);                                                    \
		if (rc_ != CUDA_SUCCESS) {                                                \
			fprintf(stderr, "app-redzone: %s failed: %d\n", #call, (int)rc_); \
			exit(2);                                                          \
		}                                                                         \
	} while (0)

/* Two exported functions allocate, so the call site has a name. */
CUresult redzone_alloc(CUdeviceptr *p, size_t n);
CUresult redzone_alloc_async(CUdeviceptr *p, size_t n);

__attribute__((noinline)) CUresult redzone_alloc(CUdeviceptr *p, size_t n)
{
	CUresult rc = cuMemAlloc_v2(p, n);

	__asm__ volatile("" ::: "memory");
	return rc;
}

__attribute__((noinline)) CUresult redzone_alloc_async(CUdeviceptr *p, size_t n)
{
	CUresult rc = cuMemAllocAsync(p, n, stream);

	__asm__ volatile("" ::: "memory");
	return rc;
}

/* Ten places that allocate through one helper, as a program's tensor
 * allocator is called from many places: each its own stack, one call site. */
#define PLACE(i)                                                             \
	CUresult redzone_place_##i(CUdeviceptr *p);                          \
	__attribute__((noinline)) CUresult redzone_place_##i(CUdeviceptr *p) \
	{                                                                    \
		CUresult rc = redzone_alloc(p, 16);                          \
		__asm__ volatile("" ::: "memory");                           \
		return rc;                                                   \
	}
/* A list of definitions, which clang-format lays out differently each run. */
/* clang-format off */
PLACE(0) PLACE(1) PLACE(2) PLACE(3) PLACE(4) PLACE(5) PLACE(6) PLACE(7) PLACE(8) PLACE(9)
/* clang-format on */
#undef PLACE
	static CUresult (*const places[10])(CUdeviceptr *) = {
		redzone_place_0, redzone_place_1, redzone_place_2, redzone_place_3, redzone_place_4,
		redzone_place_5, redzone_place_6, redzone_place_7, redzone_place_8, redzone_place_9,
	};

CUresult redzone_deep(unsigned long depth, CUdeviceptr *p, size_t n);

/* An allocation @depth frames deeper than its caller. */
__attribute__((noinline)) CUresult redzone_deep(unsigned long depth, CUdeviceptr *p, size_t n)
{
	CUresult rc = depth ? redzone_deep(depth - 1, p, n) : redzone_alloc(p, n);

	__asm__ volatile("" ::: "memory");
	return rc;
}

static void launch(const char *name, void **params)
{
	CUfunction f;

	CHECK(cuModuleGetFunction(&f, mod, name));
	CHECK(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, NULL, params, NULL));
	CHECK(cuCtxSynchronize());
}

static volatile sig_atomic_t app_handled;

/* abortcount's handler: the driver's count of launches, written with write(2). */
static void on_abort_count(int sig)
{
	unsigned long (*calls)(const char *) = (unsigned long (*)(const char *))dlsym(RTLD_DEFAULT,
										      "fakecuda_calls");
	char line[64];
	int n = snprintf(line, sizeof(line), "launches forwarded at abort: %lu\n",
			 calls ? calls("cuLaunchKernel") : 999);

	(void)sig;
	if (write(1, line, (size_t)n) < 0)
		return;
}

static void on_app_signal(int sig)
{
	(void)sig;
	app_handled++;
}

static void wait_for(const char *path)
{
	for (int i = 0; i < 3000 && access(path, F_OK); i++)
		usleep(10000);
}

static void *pair_thread(void *arg)
{
	unsigned long *job = arg; /* count, size */

	for (unsigned long i = 0; i < job[0]; i++) {
		CUdeviceptr p;

		CHECK(cuCtxSetCurrent(primary));
		CHECK(redzone_alloc(&p, job[1]));
		CHECK(cuMemFree_v2(p));
	}
	return NULL;
}

static void CUDA_CB exit_from_callback(CUstream s, CUresult status, void *code)
{
	(void)s;
	(void)status;
	_exit(*(int *)code);
}

/* A forked child's work for child:MODE; it makes its own buffer. */
static void child_work(const char *mode)
{
	CUdeviceptr p;
	unsigned long long size = 64, extra = 8;
	unsigned char v = 7;
	void *over[] = { &p, &size, &extra }, *fill[] = { &p, &v, &size };

	if (!strncmp(mode, "idle", 4))
		return;
	CHECK(redzone_alloc(&p, 64));
	launch(!strncmp(mode, "overrun", 7) ? "gg_overrun" : "gg_fill",
	       !strncmp(mode, "overrun", 7) ? over : fill);
	CHECK(cuMemFree_v2(p));
}

/* slowstart:MS. Every thread the program creates goes through here (the
 * shim's watcher too: the program's definition comes first); with MS 0 it
 * is the C library's own pthread_create. */
static struct {
	unsigned long ms;
	sem_t lock; /* 1: free; taken by pthread_create, given back by the new thread */
} slow_start;

struct thread_start {
	void *(*fn)(void *);
	void *arg;
};

static void *slow_thread_start(void *p)
{
	struct thread_start s = *(struct thread_start *)p;

	free(p);
	usleep((useconds_t)(slow_start.ms * 1000));
	sem_post(&slow_start.lock); /* started */
	return s.fn(s.arg);
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	struct thread_start *s;
	struct timespec until;
	int err;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "pthread_create");
	if (getenv("GG_TEST_NO_THREADS"))
		return EAGAIN;
	if (!slow_start.ms)
		return real(t, attr, fn, arg);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 3;
	while ((err = sem_timedwait(&slow_start.lock, &until)) && errno == EINTR)
		;
	if (err)
		return EAGAIN; /* held since before fork(): never given back here */
	if (!(s = malloc(sizeof(*s)))) {
		sem_post(&slow_start.lock);
		return EAGAIN;
	}
	s->fn = fn;
	s->arg = arg;
	if ((err = real(t, attr, slow_thread_start, s))) {
		free(s);
		sem_post(&slow_start.lock);
	}
	return err;
}

/* GPUGUARD_SUMMARY_JSON with %p as this process's pid; false without %p. */
static int own_summary(char *path, size_t cap)
{
	const char *pattern = getenv("GPUGUARD_SUMMARY_JSON"), *at;

	if (!pattern || !(at = strstr(pattern, "%p")))
		return 0;
	snprintf(path, cap, "%.*s%d%s", (int)(at - pattern), pattern, (int)getpid(), at + 2);
	return 1;
}

/* forkrace: a child forked as its watcher starts; its grandchild's status
 * (0: its boundary ran). */
static int forkrace_child(int sig)
{
	CUdeviceptr p;
	pid_t pid;
	int status = 0;

	CHECK(redzone_alloc(&p, 64)); /* its first hook: its watcher starts */
	if ((pid = fork()) == 0) {    /* at once */
		struct stat st;
		char path[512];

		CHECK(redzone_alloc(&p, 64));
		if (!own_summary(path, sizeof(path)))
			_exit(4);
		kill(getpid(), sig);
		for (int i = 0; i < 300 && stat(path, &st); i++)
			usleep(10000);
		_exit(stat(path, &st) ? 3 : 0);
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 5;
}

/* brood:T:C: each thread overruns a buffer of its own, then forks C
 * children that overrun one each; returns how many exited 0. */
static void *brood_thread(void *arg)
{
	unsigned long *job = arg, clean = 0;

	CHECK(cuCtxSetCurrent(primary));
	child_work("overrun");
	for (unsigned long k = 0; k < job[1]; k++) {
		pid_t pid = fork();
		int status = 0;

		if (pid == 0) {
			CHECK(cuCtxSetCurrent(primary));
			child_work("overrun");
			exit(0);
		}
		waitpid(pid, &status, 0);
		clean += WIFEXITED(status) && WEXITSTATUS(status) == 0;
	}
	return (void *)(uintptr_t)clean;
}

/* The control API (the shim's gpuguard_boundary), looked up as a program
 * that runs with and without the shim would: -2 when it is absent. */
static int label_boundary(const char *label)
{
	int (*fn)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "gpuguard_boundary");

	return fn ? fn(label) : -2;
}

static void print_label(const char *label)
{
	int n = label_boundary(label);

	if (n == -2)
		printf("label %s: absent\n", label);
	else
		printf("label %s: %d\n", label, n);
}

static void CUDA_CB label_from_callback(CUstream hs, CUresult status, void *arg)
{
	(void)hs;
	(void)status;
	*(int *)arg = label_boundary("callback");
}

static void *label_thread(void *arg)
{
	unsigned long n = *(unsigned long *)arg;
	long sum = 0;

	for (unsigned long k = 0; k < n; k++)
		sum += label_boundary("thread");
	return (void *)sum;
}

static void late_overrun(void)
{
	unsigned long long size = bufs[0].size, extra = 8;
	void *params[] = { &bufs[0].ptr, &size, &extra };

	if (!nbufs)
		return;
	launch("gg_overrun", params);
	fprintf(stderr, "app: late free %d\n", (int)cuMemFree_v2(bufs[0].ptr));
}

/* Each step's function is inlined into main, so that the stacks the reports
 * print show main as the frame that called the driver, as the tests expect. */
#define STEP APP_STEP

/* A step's arguments: the whole argument, what follows its name's colon, and
 * the numbers there (0 where missing). */
struct args {
	char *arg;
	char *text;
	unsigned long a, b, c;
};

STEP step_alloc(const struct args *args)
{
	int async = args->arg[0] == 'a' && args->arg[1] == 's';
	CUresult rc;

	rc = async ? redzone_alloc_async(&bufs[nbufs].ptr, args->a)
		   : redzone_alloc(&bufs[nbufs].ptr, args->a);
	printf("%s %lu: %d buffer %d\n", async ? "async" : "alloc", args->a, (int)rc, nbufs);
	if (rc == CUDA_SUCCESS) {
		bufs[nbufs].size = args->a;
		bufs[nbufs++].async = async;
	}
	return 0;
}

STEP step_managed(const struct args *args)
{
	int pool = args->arg[0] == 'p';
	CUmemoryPool mp;
	CUresult rc;

	if (pool) {
		CHECK(cuDeviceGetDefaultMemPool(&mp, 0));
		rc = cuMemAllocFromPoolAsync(&bufs[nbufs].ptr, args->a, mp, stream);
		CHECK(cuStreamSynchronize(stream));
	} else {
		rc = cuMemAllocManaged(&bufs[nbufs].ptr, args->a, CU_MEM_ATTACH_GLOBAL);
	}
	printf("%s %lu: %d buffer %d\n", pool ? "pool" : "managed", args->a, (int)rc, nbufs);
	if (rc == CUDA_SUCCESS) {
		bufs[nbufs].size = args->a;
		bufs[nbufs++].async = pool;
	}
	return 0;
}

STEP step_vmm(const struct args *args)
{
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				     .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } };
	CUmemAccessDesc access = { .location = prop.location,
				   .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
	CUmemGenericAllocationHandle h;
	CUdeviceptr va;
	size_t gran, size;
	unsigned char in = 0x5a, out = 0;

	CHECK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	size = gran * args->a;
	CHECK(cuMemAddressReserve(&va, size, 0, 0, 0));
	CHECK(cuMemCreate(&h, size, &prop, 0));
	CHECK(cuMemMap(va, size, 0, h, 0));
	CHECK(cuMemSetAccess(va, size, &access, 1));
	CHECK(cuMemcpyHtoD_v2(va + size - 1, &in, 1));
	CHECK(cuMemcpyDtoH_v2(&out, va + size - 1, 1));
	CHECK(cuMemUnmap(va, size));
	CHECK(cuMemRelease(h));
	CHECK(cuMemAddressFree(va, size));
	printf("vmm %lu: %zu bytes, read back 0x%02x\n", args->a, size, out);
	return 0;
}

STEP step_load(const struct args *args)
{
	printf("load: %s\n", dlopen(args->text, RTLD_NOW) ? "ok" : "failed");
	return 0;
}

STEP step_pitch(const struct args *args)
{
	size_t pitch = 0;
	CUresult rc;

	rc = cuMemAllocPitch_v2(&bufs[nbufs].ptr, &pitch, args->a, args->b, 4);
	printf("pitch %lu:%lu: %d buffer %d pitch %zu\n", args->a, args->b, (int)rc, nbufs, pitch);
	if (rc == CUDA_SUCCESS) {
		bufs[nbufs].size = pitch * args->b;
		bufs[nbufs++].async = 0;
	}
	return 0;
}

STEP step_free(const struct args *args)
{
	CUresult rc;

	if (bufs[args->a].async) {
		rc = cuMemFreeAsync(bufs[args->a].ptr, stream);
		CHECK(cuStreamSynchronize(stream));
	} else {
		rc = cuMemFree_v2(bufs[args->a].ptr);
	}
	printf("free %lu: %d\n", args->a, (int)rc);
	return 0;
}

STEP step_on_stream(const struct args *args)
{
	CUstream s = args->b ? stream2 : stream;
	CUresult rc;

	if (!stream2)
		CHECK(cuStreamCreate(&stream2, CU_STREAM_NON_BLOCKING));
	s = args->b ? stream2 : stream;
	if (args->arg[1] == 'a') {
		rc = cuMemAllocAsync(&bufs[nbufs].ptr, args->a, s);
		printf("salloc %lu on %lu: %d buffer %d\n", args->a, args->b, (int)rc, nbufs);
		if (rc == CUDA_SUCCESS) {
			bufs[nbufs].size = args->a;
			bufs[nbufs++].async = 1;
		}
	} else if (args->arg[1] == 'f' && args->arg[2] == 'i') {
		unsigned char v = 1;
		unsigned long long len = bufs[args->a].size;
		void *params[] = { &bufs[args->a].ptr, &v, &len };
		CUfunction f;

		CHECK(cuModuleGetFunction(&f, mod, "gg_fill"));
		CHECK(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, s, params, NULL));
		printf("sfill %lu on %lu\n", args->a, args->b);
	} else {
		rc = cuMemFreeAsync(bufs[args->a].ptr, s);
		printf("sfree %lu on %lu: %d\n", args->a, args->b, (int)rc);
	}
	return 0;
}

STEP step_abortcount(const struct args *args)
{
	(void)args;
	signal(SIGABRT, on_abort_count);
	printf("abortcount\n");
	return 0;
}

STEP step_ssync(const struct args *args)
{
	(void)args;
	CHECK(cuStreamSynchronize(stream));
	if (stream2)
		CHECK(cuStreamSynchronize(stream2));
	printf("streams synced\n");
	return 0;
}

STEP step_ifree(const struct args *args)
{
	CUresult rc;

	rc = cuMemFree_v2(bufs[args->a].ptr + args->b);
	printf("free %lu+%lu: %d\n", args->a, args->b, (int)rc);
	return 0;
}

STEP step_same(const struct args *args)
{
	printf("buffers %lu and %lu: %s\n", args->a, args->b,
	       bufs[args->a].ptr == bufs[args->b].ptr ? "same address" : "different addresses");
	return 0;
}

STEP step_sites(const struct args *args)
{
	CUdeviceptr *ps = malloc(args->a * 10 * sizeof(*ps));

	for (unsigned long k = 0; k < args->a * 10; k++)
		CHECK(places[k % 10](&ps[k]));
	for (unsigned long k = 0; args->b && k < args->a * 10; k++)
		CHECK(cuMemFree_v2(ps[k]));
	free(ps);
	printf("sites %lu: %s\n", args->a, args->b ? "freed" : "kept");
	return 0;
}

STEP step_deep(const struct args *args)
{
	CUdeviceptr p;

	CHECK(redzone_deep(args->a, &p, args->b));
	printf("deep %lu: kept\n", args->a);
	return 0;
}

STEP step_overrun(const struct args *args)
{
	unsigned long long size = bufs[args->a].size, extra = args->b;
	void *params[] = { &bufs[args->a].ptr, &size, &extra };

	if (bufs[args->a].async)
		CHECK(cuStreamSynchronize(stream));
	launch("gg_overrun", params);
	printf("overrun %lu by %lu\n", args->a, args->b);
	return 0;
}

STEP step_under(const struct args *args)
{
	unsigned long long below = args->b;
	void *params[] = { &bufs[args->a].ptr, &below };

	launch("gg_underrun", params);
	printf("under %lu by %lu\n", args->a, args->b);
	return 0;
}

STEP step_two(const struct args *args)
{
	CUdeviceptr pa = bufs[args->a].ptr, pb = bufs[args->b].ptr;
	unsigned long long na = bufs[args->a].size, nb = bufs[args->b].size, extra = args->c;
	void *params[] = { &pa, &na, &pb, &nb, &extra };
	CUfunction f;

	if (args->arg[3] == 'i')
		pb += 16, nb -= 16;
	if (args->arg[3] == 'k' || args->arg[3] == 'f') {
		static CUlibrary lib;
		CUkernel k;

		if (!lib)
			CHECK(cuLibraryLoadFromFile(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
		CHECK(cuLibraryGetKernel(&k, lib, "gg_overrun_second"));
		f = (CUfunction)k;
		if (args->arg[3] == 'f')
			CHECK(cuKernelGetFunction(&f, k));
	} else {
		CHECK(cuModuleGetFunction(&f, mod, "gg_overrun_second"));
	}
	if (args->arg[3] == 'x') {
		struct {
			CUdeviceptr pa;
			unsigned long long na;
			CUdeviceptr pb;
			unsigned long long nb, extra;
		} buf = { pa, na, pb, nb, extra };
		size_t size = sizeof(buf);
		void *x[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
			      CU_LAUNCH_PARAM_END };

		CHECK(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, NULL, NULL, x));
	} else {
		CHECK(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, NULL, params, NULL));
	}
	fprintf(stderr, "app: two returned\n");
	printf("%s %lu %lu by %lu\n", strtok(args->arg, ":"), args->a, args->b, args->c);
	return 0;
}

STEP step_reload(const struct args *args)
{
	char *p1 = args->text, *p2 = strchr(p1, ':');
	CUmodule m1, m2;
	CUfunction f1, f2;
	CUdeviceptr pa = bufs[0].ptr, pb = bufs[1].ptr;
	unsigned long long na = bufs[0].size, nb = bufs[1].size, none = 0, len = nb;
	unsigned char v = 1;
	void *two[] = { &pa, &na, &pb, &nb, &none };
	long page = sysconf(_SC_PAGESIZE);
	char *pages = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);
	void **fill;

	if (!p2 || pages == MAP_FAILED || mprotect(pages + page, (size_t)page, PROT_NONE)) {
		fprintf(stderr, "app-redzone: reload:P1:P2: %s\n", p2 ? "mmap" : "two paths");
		exit(64);
	}
	*p2++ = '\0';
	CHECK(cuModuleLoad(&m1, p1));
	CHECK(cuModuleGetFunction(&f1, m1, "gg_overrun_second"));
	CHECK(cuLaunchKernel(f1, 1, 1, 1, 128, 1, 1, 0, NULL, two, NULL));
	CHECK(cuCtxSynchronize());
	CHECK(cuModuleUnload(m1));
	CHECK(cuModuleLoad(&m2, p2));
	CHECK(cuModuleGetFunction(&f2, m2, "gg_fill"));
	/* Its three parameters and not a byte more are readable. */
	fill = (void **)(pages + page) - 3;
	fill[0] = &pb, fill[1] = &v, fill[2] = &len;
	CHECK(cuLaunchKernel(f2, 1, 1, 1, 128, 1, 1, 0, NULL, fill, NULL));
	CHECK(cuCtxSynchronize());
	CHECK(cuModuleUnload(m2));
	munmap(pages, 2 * (size_t)page);
	printf("reloaded: handle %s\n", f1 == f2 ? "reused" : "new");
	return 0;
}

STEP step_fill(const struct args *args)
{
	unsigned char v = 1;
	unsigned long long len = bufs[args->a].size;
	void *params[] = { &bufs[args->a].ptr, &v, &len };

	launch("gg_fill", params);
	printf("filled %lu\n", args->a);
	return 0;
}

STEP step_kcopy(const struct args *args)
{
	unsigned long long len = bufs[args->a].size;
	void *params[] = { &bufs[args->a].ptr, &bufs[args->b].ptr, &len };

	launch("gg_copy", params);
	printf("copied %lu into %lu\n", args->b, args->a);
	return 0;
}

STEP step_copy(const struct args *args)
{
	size_t len = bufs[args->a].size + args->b;
	unsigned char *host = malloc(len);
	CUresult rc;

	memset(host, 0x42, len);
	rc = cuMemcpyHtoD_v2(bufs[args->a].ptr, host, len);
	printf("copy %lu bytes into %lu: %d\n", (unsigned long)len, args->a, (int)rc);
	free(host);
	return 0;
}

STEP step_sum(const struct args *args)
{
	unsigned long long len = bufs[args->a].size + args->b, sum = 0;
	CUdeviceptr out;
	void *params[] = { &bufs[args->a].ptr, &len, &out };

	CHECK(cuMemAlloc_v2(&out, 8));
	launch("gg_sum", params);
	CHECK(cuMemcpyDtoH_v2(&sum, out, 8));
	CHECK(cuMemFree_v2(out));
	printf("sum of %lu + %lu bytes: %llu\n", args->a, args->b, sum);
	return 0;
}

STEP step_poke(const struct args *args)
{
	int (*wr)(CUdeviceptr, const void *, size_t) = (int (*)(
		CUdeviceptr, const void *, size_t))dlsym(RTLD_DEFAULT, "fakecuda_write");
	CUdeviceptr end = bufs[args->a].ptr + bufs[args->a].size;
	unsigned char bytes[4096];

	memset(bytes, 0x42, sizeof(bytes));
	printf("poke %lu bytes past %lu: %s\n", args->b, args->a,
	       wr && args->b <= sizeof(bytes) && !wr(end, bytes, args->b) ? "written" : "unwritable");
	return 0;
}

STEP step_band(const struct args *args)
{
	int (*rd)(CUdeviceptr, void *,
		  size_t) = (int (*)(CUdeviceptr, void *, size_t))dlsym(RTLD_DEFAULT, "fakecuda_read");
	CUdeviceptr end = bufs[args->a].ptr + bufs[args->a].size;
	unsigned char band[4096];

	CHECK(cuCtxSynchronize());
	if (!rd || args->b > sizeof(band) || rd(end, band, args->b)) {
		printf("band %lu: unreadable\n", args->a);
		return 0;
	}
	printf("band %lu:", args->a);
	for (unsigned long k = 0; k < args->b; k++)
		printf(" %02x", band[k]);
	printf("\n");
	return 0;
}

STEP step_range(const struct args *args)
{
	CUdeviceptr base = 0;
	size_t size = 0;
	CUresult rc;

	rc = cuMemGetAddressRange_v2(&base, &size, bufs[args->a].ptr + args->b);
	printf("range %lu+%lu: %d base %s size %zu\n", args->a, args->b, (int)rc,
	       base == bufs[args->a].ptr ? "buffer"
	       : base                    ? "other"
					 : "none",
	       size);
	return 0;
}

STEP step_attr(const struct args *args)
{
	size_t size = 0;
	unsigned long long size2 = 0, start = 0;
	CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
					CU_POINTER_ATTRIBUTE_RANGE_SIZE };
	void *data[] = { &start, &size2 };
	CUdeviceptr p = bufs[args->a].ptr + args->b;
	CUresult rc;

	rc = cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p);
	printf("attr %lu+%lu: %d size %zu;", args->a, args->b, (int)rc, size);
	rc = cuPointerGetAttributes(2, attrs, data, p);
	printf(" attrs: %d size %llu\n", (int)rc, size2);
	return 0;
}

STEP step_limit(const struct args *args)
{
	void (*lim)(size_t) = (void (*)(size_t))dlsym(RTLD_DEFAULT, "fakecuda_set_mem_limit");

	if (lim)
		lim(args->a);
	printf("limit %lu\n", args->a);
	return 0;
}

STEP step_graph(const struct args *args)
{
	unsigned long long size = bufs[args->a].size, extra = args->b;
	void *params[] = { &bufs[args->a].ptr, &size, &extra };
	CUfunction f;
	CUgraph g;
	CUresult begin, launched, end;

	CHECK(cuModuleGetFunction(&f, mod, "gg_overrun"));
	begin = cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_RELAXED);
	launched = cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, stream, params, NULL);
	end = cuStreamEndCapture(stream, &g);
	if (end == CUDA_SUCCESS) {
		CHECK(cuGraphInstantiateWithFlags(&app_graph, g, args->c));
		CHECK(cuGraphGetNodes(g, &app_graph_node, &(size_t){ 1 }));
	}
	printf("graph %lu by %lu: begin %d, launch %d, end %d\n", args->a, args->b, (int)begin,
	       (int)launched, (int)end);
	return 0;
}

STEP step_replay(const struct args *args)
{
	CUresult last = CUDA_SUCCESS;

	for (unsigned long k = 0; k < args->a; k++)
		last = cuGraphLaunch(app_graph, stream);
	printf("replayed %lu: %d, synchronize %d\n", args->a, (int)last, (int)cuCtxSynchronize());
	return 0;
}

STEP step_deadreplay(const struct args *args)
{
	CUstream dead;

	(void)args;
	CHECK(cuStreamCreate(&dead, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamDestroy_v2(dead));
	printf("dead replay: %d\n", (int)cuGraphLaunch(app_graph, dead));
	return 0;
}

STEP step_gset(const struct args *args)
{
	unsigned long long size = bufs[args->a].size, extra = args->b;
	void *params[] = { &bufs[args->a].ptr, &size, &extra };
	CUDA_KERNEL_NODE_PARAMS kp = { .gridDimX = 1,
				       .gridDimY = 1,
				       .gridDimZ = 1,
				       .blockDimX = 128,
				       .blockDimY = 1,
				       .blockDimZ = 1,
				       .kernelParams = params };

	CHECK(cuModuleGetFunction(&kp.func, mod, "gg_overrun"));
	printf("gset %lu by %lu: %d\n", args->a, args->b,
	       (int)cuGraphExecKernelNodeSetParams_v2(app_graph, app_graph_node, &kp));
	return 0;
}

STEP step_sync(const struct args *args)
{
	(void)args;
	CHECK(cuCtxSynchronize());
	printf("synced\n");
	return 0;
}

STEP step_meminfo(const struct args *args)
{
	size_t free_bytes = 0, total = 0;

	(void)args;
	CHECK(cuMemGetInfo_v2(&free_bytes, &total));
	printf("meminfo used %zu\n", total - free_bytes);
	return 0;
}

STEP step_capfree(const struct args *args)
{
	CUstream cs;
	CUgraph g = NULL;
	CUresult begin, memset_rc, end;
	CUresult rc;

	CHECK(cuStreamCreate(&cs, CU_STREAM_DEFAULT));
	begin = cuStreamBeginCapture_v2(cs, (CUstreamCaptureMode)args->b);
	memset_rc = cuMemsetD8Async(bufs[args->a].ptr, 1, bufs[args->a].size, cs);
	rc = cuMemFree_v2(bufs[args->a].ptr);
	end = cuStreamEndCapture(cs, &g);
	printf("capfree %lu mode %lu: begin %d, memset %d, free %d, end %d, graph %s\n", args->a,
	       args->b, (int)begin, (int)memset_rc, (int)rc, (int)end, g ? "yes" : "no");
	if (g)
		CHECK(cuGraphDestroy(g));
	CHECK(cuStreamDestroy_v2(cs));
	return 0;
}

STEP step_capalloc(const struct args *args)
{
	CUstream cs;
	CUgraph g = NULL;
	CUdeviceptr p = 0;
	CUresult alloc_rc, end;

	CHECK(cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamBeginCapture_v2(cs, CU_STREAM_CAPTURE_MODE_RELAXED));
	alloc_rc = cuMemAllocAsync(&p, args->a, cs);
	if (alloc_rc == CUDA_SUCCESS)
		CHECK(cuMemFreeAsync(p, cs));
	end = cuStreamEndCapture(cs, &g);
	printf("capalloc %lu: alloc %d, end %d\n", args->a, (int)alloc_rc, (int)end);
	if (g)
		CHECK(cuGraphDestroy(g));
	CHECK(cuStreamDestroy_v2(cs));
	return 0;
}

STEP step_badlaunch(const struct args *args)
{
	CUfunction f;
	CUdeviceptr p = 0;
	unsigned long long len = 0;
	unsigned char v = 0;
	void *params[] = { &p, &v, &len };
	CUresult rc;

	(void)args;
	CHECK(cuModuleGetFunction(&f, mod, "gg_fill"));
	rc = cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, NULL, params, NULL);
	printf("badlaunch: %d\n", (int)rc);
	return 0;
}

STEP step_launch(const struct args *args)
{
	CUdeviceptr p;
	unsigned char v = 1;
	unsigned long long len = 64;
	void *params[] = { &p, &v, &len };

	(void)args;
	CHECK(cuMemAlloc_v2(&p, 64));
	launch("gg_fill", params);
	CHECK(cuMemFree_v2(p));
	printf("launched\n");
	return 0;
}

STEP step_reset(const struct args *args)
{
	CUresult rc;

	(void)args;
	CHECK(cuCtxSynchronize());
	rc = cuDevicePrimaryCtxReset_v2(0);
	CHECK(cuDevicePrimaryCtxRetain(&primary, 0));
	CHECK(cuCtxSetCurrent(primary));
	CHECK(cuModuleLoad(&mod, ptx));
	CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	printf("reset: %d\n", (int)rc);
	return 0;
}

STEP step_old_reset(const struct args *args)
{
	CUresult rc;

	CHECK(cuCtxSynchronize());
	rc = !strcmp(args->arg, "old-reset") ? cuDevicePrimaryCtxReset(0)
					     : cuDevicePrimaryCtxRelease(0);
	CHECK(cuDevicePrimaryCtxRetain(&primary, 0));
	CHECK(cuCtxSetCurrent(primary));
	CHECK(cuModuleLoad(&mod, ptx));
	CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	printf("%s: %d\n", args->arg, (int)rc);
	return 0;
}

STEP step_pop(const struct args *args)
{
	CUcontext top = NULL;
	CUresult rc;

	(void)args;
	rc = cuCtxPopCurrent_v2(&top);
	printf("pop: %d %s\n", (int)rc, top == primary ? "primary" : "other");
	return 0;
}

STEP step_push(const struct args *args)
{
	(void)args;
	printf("push: %d\n", (int)cuCtxPushCurrent_v2(primary));
	return 0;
}

STEP step_deadfree(const struct args *args)
{
	CUstream dead;
	CUresult rc;

	CHECK(cuStreamCreate(&dead, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamDestroy_v2(dead));
	rc = cuMemFreeAsync(bufs[args->a].ptr, dead);
	printf("free %lu on a destroyed stream: %s\n", args->a, rc ? "refused" : "done");
	return 0;
}

STEP step_contexts(const struct args *args)
{
	CUcontext back, made;
	CUdeviceptr p;
	unsigned long ok = 0;

	CHECK(cuCtxGetCurrent(&back));
	for (unsigned long k = 0; k < args->a; k++) {
		CHECK(cuCtxCreate_v4(&made, NULL, 0, 0));
		ok += redzone_alloc(&p, 16) == CUDA_SUCCESS;
		CHECK(cuCtxPopCurrent_v2(&made));
	}
	CHECK(cuCtxSetCurrent(back));
	printf("contexts %lu: %lu allocations\n", args->a, ok);
	return 0;
}

STEP step_ctx(const struct args *args)
{
	(void)args;
	CHECK(cuCtxCreate_v4(&created, NULL, 0, 0));
	CHECK(cuModuleLoad(&mod, ptx));
	printf("context created\n");
	return 0;
}

STEP step_attach(const struct args *args)
{
	CUcontext same = NULL;
	CUresult rc;

	(void)args;
	rc = cuCtxAttach(&same, 0);
	printf("attach: %d%s\n", (int)rc, same == created ? " (created)" : "");
	return 0;
}

STEP step_detach(const struct args *args)
{
	unsigned version;
	bool gone;
	CUresult rc;

	(void)args;
	CHECK(cuCtxSynchronize());
	rc = cuCtxDetach(created);
	gone = cuCtxGetApiVersion(created, &version) != CUDA_SUCCESS;
	if (gone) {
		CHECK(cuCtxSetCurrent(primary));
		CHECK(cuModuleLoad(&mod, ptx));
	}
	printf("detach: %d (%s)\n", (int)rc, gone ? "gone" : "alive");
	return 0;
}

STEP step_destroy(const struct args *args)
{
	CUresult rc;

	CHECK(cuCtxSynchronize());
	rc = args->arg[0] == 'o' ? cuCtxDestroy(created) : cuCtxDestroy_v2(created);
	CHECK(cuCtxSetCurrent(primary));
	CHECK(cuModuleLoad(&mod, ptx));
	printf("%s: %d\n", args->arg, (int)rc);
	return 0;
}

STEP step_label(const struct args *args)
{
	print_label(args->text);
	return 0;
}

STEP step_labels(const struct args *args)
{
	pthread_t t[64];
	unsigned long each = args->b;
	long sum = 0;

	for (unsigned long k = 0; k < args->a && k < 64; k++)
		pthread_create(&t[k], NULL, label_thread, &each);
	for (unsigned long k = 0; k < args->a && k < 64; k++) {
		void *r;

		pthread_join(t[k], &r);
		sum += (long)r;
	}
	printf("labels: %ld\n", sum);
	return 0;
}

STEP step_cblabel(const struct args *args)
{
	static int got = -3;

	(void)args;
	CHECK(cuStreamAddCallback(stream, label_from_callback, &got, 0));
	CHECK(cuCtxSynchronize());
	printf("label in callback: %d\n", got);
	return 0;
}

STEP step_version(const struct args *args)
{
	const char *(*fn)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "gpuguard_version");

	(void)args;
	printf("version: %s\n", fn ? fn() : "absent");
	return 0;
}

STEP step_threads(const struct args *args)
{
	pthread_t t[64];
	unsigned long job[2] = { args->b, args->c };

	for (unsigned long k = 0; k < args->a && k < 64; k++)
		pthread_create(&t[k], NULL, pair_thread, job);
	for (unsigned long k = 0; k < args->a && k < 64; k++)
		pthread_join(t[k], NULL);
	printf("threads done\n");
	return 0;
}

STEP step_hold(const struct args *args)
{
	for (unsigned long k = 0; k < args->a; k++) {
		CUdeviceptr p;

		CHECK(redzone_alloc(&p, args->b));
	}
	printf("holding %lu\n", args->a);
	return 0;
}

STEP step_many(const struct args *args)
{
	CUdeviceptr *ps = malloc(args->a * sizeof(*ps));

	for (unsigned long k = 0; k < args->a; k++)
		CHECK(redzone_alloc(&ps[k], args->b));
	for (unsigned long k = 0; k < args->a; k++)
		CHECK(cuMemFree_v2(ps[k]));
	free(ps);
	printf("many done\n");
	return 0;
}

STEP step_wait(const struct args *args)
{
	wait_for(args->text);
	printf("waited\n");
	return 0;
}

STEP step_raise(const struct args *args)
{
	kill(getpid(), (int)args->a);
	printf("raised %lu\n", args->a);
	return 0;
}

STEP step_storm(const struct args *args)
{
	pthread_t t[64];
	unsigned long job[2] = { args->b, 64 };
	const char *sig = getenv("GG_TEST_SIGNAL");

	for (unsigned long k = 0; k < args->a && k < 64; k++)
		pthread_create(&t[k], NULL, pair_thread, job);
	for (unsigned long k = 0; k < args->c && sig; k++) {
		kill(getpid(), atoi(sig));
		usleep(100);
	}
	for (unsigned long k = 0; k < args->a && k < 64; k++)
		pthread_join(t[k], NULL);
	printf("storm done\n");
	return 0;
}

STEP step_handler(const struct args *args)
{
	signal((int)args->a, on_app_signal);
	printf("handler %lu\n", args->a);
	return 0;
}

STEP step_handled(const struct args *args)
{
	(void)args;
	printf("app handler ran %d\n", (int)app_handled);
	return 0;
}

STEP step_fork(const struct args *args)
{
	pid_t pid = fork();
	int status = 0;

	if (pid == 0) {
		CUdeviceptr p;
		unsigned long long size = 64, extra = 2;
		void *params[] = { &p, &size, &extra };
		const char *pattern = getenv("GPUGUARD_SUMMARY_JSON");
		char path[512];

		CHECK(redzone_alloc(&p, 64));
		launch("gg_overrun", params);
		if (args->a && pattern && strstr(pattern, "%p")) {
			snprintf(path, sizeof(path), "%.*s%d%s", (int)(strstr(pattern, "%p") - pattern),
				 pattern, (int)getpid(), strstr(pattern, "%p") + 2);
			kill(getpid(), (int)args->a);
			wait_for(path);
		}
		exit(0);
	}
	waitpid(pid, &status, 0);
	printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	if (WIFSIGNALED(status))
		printf("child killed by signal %d\n", WTERMSIG(status));
	return 0;
}

STEP step_slowstart(const struct args *args)
{
	sem_init(&slow_start.lock, 0, 1);
	slow_start.ms = args->a;
	printf("slowstart %lu\n", args->a);
	return 0;
}

STEP step_forkrace(const struct args *args)
{
	unsigned long ran = 0;

	fflush(stdout);
	for (unsigned long k = 0; k < args->a; k++) {
		pid_t pid = fork();
		int status = 0;

		if (pid == 0)
			_exit(forkrace_child((int)args->b));
		waitpid(pid, &status, 0);
		ran += WIFEXITED(status) && WEXITSTATUS(status) == 0;
	}
	printf("forkrace: %lu of %lu grandchildren ran their boundary\n", ran, args->a);
	return 0;
}

STEP step_child(const struct args *args)
{
	const char *mode = args->text;
	pid_t pid;
	int status = 0;

	fflush(stdout);
	if ((pid = fork()) == 0) {
		child_work(mode);
		if (strstr(mode, "-_exit"))
			_exit(0);
		exit(0);
	}
	waitpid(pid, &status, 0);
	printf("child %s exited %d\n", mode, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}

STEP step_cbexit(const struct args *args)
{
	static int code;

	code = (int)args->a;
	fflush(stdout);
	CHECK(cuStreamAddCallback(stream, exit_from_callback, &code, 0));
	CHECK(cuCtxSynchronize());
	printf("the callback did not run\n");
	return 0;
}

/* Not inlined (a function that calls vfork cannot be); no test reads its stacks. */
static int step_vfork(const struct args *args)
{
	pid_t pid;
	int status = 0;

	(void)args;
	fflush(stdout);
	if ((pid = vfork()) == 0) {
		execl("/nonexistent/gpuguard-test-program", "gpuguard-test-program", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	printf("vfork child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}

STEP step_brood(const struct args *args)
{
	pthread_t t[16];
	unsigned long clean = 0, job[2] = { args->a, args->b };
	void *ok;

	fflush(stdout);
	for (unsigned long k = 0; k < args->a && k < 16; k++)
		pthread_create(&t[k], NULL, brood_thread, job);
	for (unsigned long k = 0; k < args->a && k < 16; k++) {
		pthread_join(t[k], &ok);
		clean += (unsigned long)(uintptr_t)ok;
	}
	printf("brood: %lu of %lu children exited 0\n", clean, args->a * args->b);
	return 0;
}

STEP step_cycles(const struct args *args)
{
	unsigned long bad = 0;

	for (unsigned long k = 0; k < args->a; k++) {
		CUdeviceptr p, base;
		size_t size = 0;

		CHECK(cuDevicePrimaryCtxReset_v2(0));
		CHECK(cuDevicePrimaryCtxRetain(&primary, 0));
		CHECK(cuCtxSetCurrent(primary));
		CHECK(redzone_alloc(&p, 100));
		CHECK(cuMemGetAddressRange_v2(&base, &size, p));
		bad += size != 100;
		CHECK(cuMemFree_v2(p));
	}
	CHECK(cuModuleLoad(&mod, ptx));
	CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	printf("cycles: %lu of %lu showed padding\n", bad, args->a);
	return 0;
}

STEP step_tasks(const struct args *args)
{
	char cmd[64];

	(void)args;
	snprintf(cmd, sizeof(cmd), "ls /proc/%d/task | wc -l", (int)getpid());
	fflush(stdout);
	printf("tasks ");
	fflush(stdout);
	if (system(cmd) != 0)
		printf("?\n");
	return 0;
}

STEP step_print(const struct args *args)
{
	FILE *f = fdopen(dup(1), "w");

	setvbuf(f, NULL, _IOFBF, 1 << 16);
	for (unsigned long k = 0; k < args->a; k++)
		fprintf(f, "buffered line %lu\n", k);
	/* Not flushed, not closed: exit() must do it. */
	return 0;
}

STEP step_exit(const struct args *args)
{
	exit((int)args->a);
	return 0;
}

STEP step_open2(const struct args *args)
{
	close(2);
	if (open(args->text, O_WRONLY | O_CREAT | O_TRUNC, 0644) != 2)
		return 70;
	(void)!write(2, "data\n", 5);
	printf("opened 2\n");
	return 0;
}

STEP step_cd(const struct args *args)
{
	printf("cd %s: %d\n", args->text, chdir(args->text));
	return 0;
}

/* The steps, one row each: name, shape (what follows "name:", in the header's
 * notation; NULL for a step that takes nothing), function. */
#define STEPS(X)                               \
	X("alloc", "N", step_alloc)            \
	X("async", "N", step_alloc)            \
	X("managed", "N", step_managed)        \
	X("pool", "N", step_managed)           \
	X("vmm", "N", step_vmm)                \
	X("load", "PATH", step_load)           \
	X("pitch", "W:H", step_pitch)          \
	X("free", "K", step_free)              \
	X("salloc", "N:S", step_on_stream)     \
	X("sfill", "K:S", step_on_stream)      \
	X("sfree", "K:S", step_on_stream)      \
	X("abortcount", NULL, step_abortcount) \
	X("ssync", NULL, step_ssync)           \
	X("ifree", "K:OFF", step_ifree)        \
	X("same", "A:B", step_same)            \
	X("sites", "N:F", step_sites)          \
	X("deep", "D:S", step_deep)            \
	X("overrun", "K:E", step_overrun)      \
	X("under", "K:E", step_under)          \
	X("two", "A:B:E", step_two)            \
	X("twox", "A:B:E", step_two)           \
	X("twok", "A:B:E", step_two)           \
	X("twof", "A:B:E", step_two)           \
	X("twoi", "A:B:E", step_two)           \
	X("reload", "P1:P2", step_reload)      \
	X("fill", "K", step_fill)              \
	X("kcopy", "A:B", step_kcopy)          \
	X("copy", "K:E", step_copy)            \
	X("sum", "K:E", step_sum)              \
	X("poke", "K:E", step_poke)            \
	X("band", "K:P", step_band)            \
	X("range", "K:OFF", step_range)        \
	X("attr", "K:OFF", step_attr)          \
	X("limit", "B", step_limit)            \
	X("graph", "K:E[:F]", step_graph)      \
	X("replay", "N", step_replay)          \
	X("deadreplay", NULL, step_deadreplay) \
	X("gset", "K:E", step_gset)            \
	X("sync", NULL, step_sync)             \
	X("meminfo", NULL, step_meminfo)       \
	X("capfree", "K:M", step_capfree)      \
	X("capalloc", "N", step_capalloc)      \
	X("badlaunch", NULL, step_badlaunch)   \
	X("launch", NULL, step_launch)         \
	X("reset", NULL, step_reset)           \
	X("old-reset", NULL, step_old_reset)   \
	X("old-release", NULL, step_old_reset) \
	X("pop", NULL, step_pop)               \
	X("push", NULL, step_push)             \
	X("deadfree", "K", step_deadfree)      \
	X("contexts", "N", step_contexts)      \
	X("ctx", NULL, step_ctx)               \
	X("attach", NULL, step_attach)         \
	X("detach", NULL, step_detach)         \
	X("destroy", NULL, step_destroy)       \
	X("old-destroy", NULL, step_destroy)   \
	X("label", "TEXT", step_label)         \
	X("labels", "T:N", step_labels)        \
	X("cblabel", NULL, step_cblabel)       \
	X("version", NULL, step_version)       \
	X("threads", "T:N:S", step_threads)    \
	X("hold", "N:S", step_hold)            \
	X("many", "N:S", step_many)            \
	X("wait", "PATH", step_wait)           \
	X("raise", "SIG", step_raise)          \
	X("storm", "T:N:K", step_storm)        \
	X("handler", "SIG", step_handler)      \
	X("handled", NULL, step_handled)       \
	X("fork", "SIG", step_fork)            \
	X("slowstart", "MS", step_slowstart)   \
	X("forkrace", "N:SIG", step_forkrace)  \
	X("child", "MODE", step_child)         \
	X("cbexit", "S", step_cbexit)          \
	X("vfork", NULL, step_vfork)           \
	X("brood", "T:C", step_brood)          \
	X("cycles", "N", step_cycles)          \
	X("tasks", NULL, step_tasks)           \
	X("print", "N", step_print)            \
	X("exit", "N", step_exit)              \
	X("open2", "PATH", step_open2)         \
	X("cd", "PATH", step_cd)

static const struct app_step_row steps[] = { STEPS(APP_STEP_ROW) };

/* The row of step @arg, its arguments in @args; -1 (said on stderr) when it
 * names no step, or is not written as its row's shape says. */
static int find_step(char *arg, struct args *args)
{
	int row;

	*args = (struct args){ .arg = arg };
	row = app_find_step("app-redzone", steps, sizeof(steps) / sizeof(steps[0]), arg, &args->text);
	sscanf(args->text, "%lu:%lu:%lu", &args->a, &args->b, &args->c);
	return row;
}

int main(int argc, char **argv)
{
	static const char ptx_env[] = "GG_TEST_PTX";

	ptx = getenv(ptx_env);

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!ptx) {
		fprintf(stderr, "app-redzone: set %s to the kernels' PTX file\n", ptx_env);
		return 64;
	}
	if (getenv("GG_TEST_EARLY_HANDLER"))
		signal(atoi(getenv("GG_TEST_EARLY_HANDLER")), on_app_signal);
	if (getenv("GG_TEST_EARLY_IGNORE"))
		signal(atoi(getenv("GG_TEST_EARLY_IGNORE")), SIG_IGN);
	if (getenv("GG_TEST_LATE_OVERRUN"))
		atexit(late_overrun);
	if (getenv("GG_TEST_EARLY_WAIT")) {
		printf("early\n");
		wait_for(getenv("GG_TEST_EARLY_WAIT"));
	}
	if (getenv("GG_TEST_EARLY_LABEL")) /* before any hooked call */
		print_label(getenv("GG_TEST_EARLY_LABEL"));
	CHECK(cuInit(0));
	CHECK(cuDevicePrimaryCtxRetain(&primary, 0));
	CHECK(cuCtxSetCurrent(primary));
	CHECK(cuModuleLoad(&mod, ptx));
	CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	for (int i = 1; i < argc; i++) {
		struct args args;
		int row = find_step(argv[i], &args), rc;

		APP_RUN_STEP(STEPS); /* the step's function, inlined here */
		if (rc)
			return rc;
	}
	printf("done\n");
	return 0;
}
