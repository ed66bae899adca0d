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
 *   latefree:K       hands buffer K to liblatefree (GG_TEST_LATEFREE_LIB), whose
 *                    destructor frees it at exit
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
 *   icopy:K:OFF:N    cuMemcpyHtoD_v2 of N bytes of 0x42 into buffer K + OFF; prints
 *                    the result
 *   iset:K:OFF:N     cuMemsetD8_v2 of N bytes at buffer K + OFF; prints the result
 *   ifill:K:OFF:N    kernel gg_fill over N bytes from buffer K + OFF (value 1), then
 *                    sync; prints the launch's result
 *   tfree:K          cuMemFree_v2 of buffer K on a thread of its own (joined);
 *                    prints the result
 *   talloc:N         cuMemAlloc_v2 of N bytes on a thread of its own (joined)
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
 *   capq:F:L:M       capture (mode M: 0 global, 1 thread-local, 2 relaxed) on the
 *                    app's stream a memset of buffer L, meanwhile cuMemFreeAsync of
 *                    buffer F on the second stream, end the capture, launch the
 *                    graph and synchronize; prints each result
 *   capqt:F:L:M      the same, the free made on a thread of its own
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
 *   ignore:SIG       set SIG to SIG_IGN; default:SIG sets it to SIG_DFL
 *   labelhandler:SIG install a handler for SIG that calls gpuguard_boundary
 *                    ("handler") and writes "handler label: N" (write(2))
 *   exithandler:SIG:STATUS install a handler for SIG that calls exit(STATUS)
 *   raisein:NAME:SIG the fake driver's next call of NAME, from any thread
 *                    (the shim's own calls too), raises SIG inside it
 *                    (fakecuda_raise_in)
 *   watchdog:S       a process still running S s from here dies with status
 *                    97 and says so on stderr: a hang fails, loudly
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
 *   dirtylabels:N    N times: allocate 64 bytes, overrun it by 1, free it, and
 *                    run gpuguard_boundary("dirty-K"), K from 0; prints the sum
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
 * GG_TEST_EARLY_OPEN2=PATH closes fd 2 and opens PATH there (writing "data")
 * before the first hooked call.
 * With GG_TEST_LATE_BOUNDARY set ("label" or "launch"), an exit handler
 * registered before the first hooked call (so run after the shim's exit
 * report) runs, on a thread of its own that it joins, a labelled boundary or
 * a launch of gg_fill over a buffer of its own (a launch:N boundary when it
 * is the N-th).
 * GG_TEST_EARLY_ATFORK=SIG registers, before the first CUDA call, a fork
 * prepare handler that raises SIG: it runs after gpuguard's, which holds its
 * locks across fork().
 * With GG_TEST_LATE_FREE set, an exit handler registered before the first
 * hooked call (so run after the shim's, as a C++ static object's destructor
 * is) frees every buffer still live.
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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* cuCtxAttach and cuCtxDetach are deprecated: PyCUDA still calls them. */
#define CUDA_ENABLE_DEPRECATED 1
#include "driver-table.h"

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

/* labelhandler:SIG's handler: gpuguard_boundary, found before (dlsym is no
 * function for a handler), its result written with write(2) only. */
static int (*handler_boundary)(const char *);

static void write_number_line(int fd, const char *what, long n)
{
	char line[96], digits[24];
	size_t len = strlen(what), k = 0;
	unsigned long u = n < 0 ? (unsigned long)-n : (unsigned long)n;

	memcpy(line, what, len);
	do
		digits[k++] = (char)('0' + u % 10);
	while ((u /= 10) && k < sizeof(digits));
	if (n < 0)
		line[len++] = '-';
	while (k)
		line[len++] = digits[--k];
	line[len++] = '\n';
	if (write(fd, line, len) < 0)
		return;
}

static void on_label_signal(int sig)
{
	int saved = errno;

	(void)sig;
	write_number_line(1, "handler label: ", handler_boundary ? handler_boundary("handler") : -2);
	errno = saved;
}

/* exithandler:SIG:STATUS's handler: exit(STATUS), as programs do. */
static int exit_handler_status;

static void on_exit_signal(int sig)
{
	(void)sig;
	exit(exit_handler_status);
}

/* watchdog:S: a hang fails loudly, with neither exit handlers nor the shim's
 * _exit (either could wait on what hangs). */
static void on_watchdog(int sig)
{
	static const char msg[] = "app-redzone: watchdog: still running, a hang\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		syscall(SYS_exit_group, 97);
	syscall(SYS_exit_group, 97);
}

/* GG_TEST_EARLY_ATFORK=SIG: the program's fork handlers, registered before
 * the shim's (so this prepare handler runs after the shim's, while the shim
 * holds its locks), raise SIG. */
static int atfork_signal;

static void atfork_raise(void)
{
	raise(atfork_signal);
}

static void wait_for(const char *path)
{
	for (int i = 0; i < 3000 && access(path, F_OK); i++)
		usleep(10000);
}

/* tfree and talloc: one driver call on a thread of its own. */
struct one_call {
	CUdeviceptr ptr;
	size_t bytes;    /* 0: free @ptr; else allocate that many into @ptr */
	CUstream stream; /* a free's: cuMemFreeAsync there; NULL: cuMemFree_v2 */
	CUresult rc;
};

static void *one_call_thread(void *arg)
{
	struct one_call *c = arg;

	CHECK(cuCtxSetCurrent(primary));
	c->rc = c->bytes    ? cuMemAlloc_v2(&c->ptr, c->bytes)
		: c->stream ? cuMemFreeAsync(c->ptr, c->stream)
			    : cuMemFree_v2(c->ptr);
	return NULL;
}

static CUresult on_a_thread(struct one_call *c)
{
	pthread_t t;

	if (pthread_create(&t, NULL, one_call_thread, c))
		return CUDA_ERROR_OPERATING_SYSTEM;
	pthread_join(t, NULL);
	return c->rc;
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

static void late_free(void)
{
	for (int i = 0; i < nbufs; i++)
		if (bufs[i].ptr && !bufs[i].async)
			fprintf(stderr, "app: late free %d: %d\n", i, (int)cuMemFree_v2(bufs[i].ptr));
}

static void *late_boundary_thread(void *arg)
{
	(void)arg;
	return (void *)(long)label_boundary("late");
}

static void *late_launch_thread(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(primary));
	child_work("fill");
	return NULL;
}

/* An exit handler registered before the shim's set-up, so run after its exit
 * report: a boundary on another thread (labelled, or a launch:N), joined. */
static void late_boundary(void)
{
	pthread_t t;
	const char *how = getenv("GG_TEST_LATE_BOUNDARY");

	pthread_create(&t, NULL, !strcmp(how, "launch") ? late_launch_thread : late_boundary_thread,
		       NULL);
	pthread_join(t, NULL);
	fprintf(stderr, "app: late %s boundary\n", how);
}

int main(int argc, char **argv)
{
	static const char ptx_env[] = "GG_TEST_PTX";
	const char *ptx = getenv(ptx_env);

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
	if (getenv("GG_TEST_LATE_FREE"))
		atexit(late_free);
	if (getenv("GG_TEST_LATE_BOUNDARY"))
		atexit(late_boundary);
	if (getenv("GG_TEST_EARLY_ATFORK")) {
		atfork_signal = atoi(getenv("GG_TEST_EARLY_ATFORK"));
		pthread_atfork(atfork_raise, NULL, NULL);
	}
	if (getenv("GG_TEST_EARLY_WAIT")) {
		printf("early\n");
		wait_for(getenv("GG_TEST_EARLY_WAIT"));
	}
	if (getenv("GG_TEST_EARLY_OPEN2")) { /* before any hooked call */
		close(2);
		if (open(getenv("GG_TEST_EARLY_OPEN2"), O_WRONLY | O_CREAT | O_TRUNC, 0644) != 2)
			return 70;
		(void)!write(2, "data\n", 5);
	}
	if (getenv("GG_TEST_EARLY_LABEL")) /* before any hooked call */
		print_label(getenv("GG_TEST_EARLY_LABEL"));
	CHECK(cuInit(0));
	CHECK(cuDevicePrimaryCtxRetain(&primary, 0));
	CHECK(cuCtxSetCurrent(primary));
	CHECK(cuModuleLoad(&mod, ptx));
	CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	for (int i = 1; i < argc; i++) {
		unsigned long a = 0, b = 0, c = 0;
		char *arg = argv[i];
		int n = sscanf(strchr(arg, ':') ? strchr(arg, ':') + 1 : "", "%lu:%lu:%lu", &a, &b, &c);
		CUresult rc;

		(void)n;
		if (!strncmp(arg, "alloc:", 6) || !strncmp(arg, "async:", 6)) {
			int async = arg[0] == 'a' && arg[1] == 's';

			rc = async ? redzone_alloc_async(&bufs[nbufs].ptr, a)
				   : redzone_alloc(&bufs[nbufs].ptr, a);
			printf("%s %lu: %d buffer %d\n", async ? "async" : "alloc", a, (int)rc, nbufs);
			if (rc == CUDA_SUCCESS) {
				bufs[nbufs].size = a;
				bufs[nbufs++].async = async;
			}
		} else if (!strncmp(arg, "managed:", 8) || !strncmp(arg, "pool:", 5)) {
			int pool = arg[0] == 'p';
			CUmemoryPool mp;

			if (pool) {
				CHECK(cuDeviceGetDefaultMemPool(&mp, 0));
				rc = cuMemAllocFromPoolAsync(&bufs[nbufs].ptr, a, mp, stream);
				CHECK(cuStreamSynchronize(stream));
			} else {
				rc = cuMemAllocManaged(&bufs[nbufs].ptr, a, CU_MEM_ATTACH_GLOBAL);
			}
			printf("%s %lu: %d buffer %d\n", pool ? "pool" : "managed", a, (int)rc, nbufs);
			if (rc == CUDA_SUCCESS) {
				bufs[nbufs].size = a;
				bufs[nbufs++].async = pool;
			}
		} else if (!strncmp(arg, "vmm:", 4)) {
			CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
						     .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } };
			CUmemAccessDesc access = { .location = prop.location,
						   .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
			CUmemGenericAllocationHandle h;
			CUdeviceptr va;
			size_t gran, size;
			unsigned char in = 0x5a, out = 0;

			CHECK(cuMemGetAllocationGranularity(&gran, &prop,
							    CU_MEM_ALLOC_GRANULARITY_MINIMUM));
			size = gran * a;
			CHECK(cuMemAddressReserve(&va, size, 0, 0, 0));
			CHECK(cuMemCreate(&h, size, &prop, 0));
			CHECK(cuMemMap(va, size, 0, h, 0));
			CHECK(cuMemSetAccess(va, size, &access, 1));
			CHECK(cuMemcpyHtoD_v2(va + size - 1, &in, 1));
			CHECK(cuMemcpyDtoH_v2(&out, va + size - 1, 1));
			CHECK(cuMemUnmap(va, size));
			CHECK(cuMemRelease(h));
			CHECK(cuMemAddressFree(va, size));
			printf("vmm %lu: %zu bytes, read back 0x%02x\n", a, size, out);
		} else if (!strncmp(arg, "load:", 5)) {
			printf("load: %s\n", dlopen(arg + 5, RTLD_NOW) ? "ok" : "failed");
		} else if (!strncmp(arg, "pitch:", 6)) {
			size_t pitch = 0;

			rc = cuMemAllocPitch_v2(&bufs[nbufs].ptr, &pitch, a, b, 4);
			printf("pitch %lu:%lu: %d buffer %d pitch %zu\n", a, b, (int)rc, nbufs, pitch);
			if (rc == CUDA_SUCCESS) {
				bufs[nbufs].size = pitch * b;
				bufs[nbufs++].async = 0;
			}
		} else if (!strncmp(arg, "latefree:", 9)) {
			/* Handed to a library whose destructor frees it (liblatefree.c). */
			void *lib = dlopen(getenv("GG_TEST_LATEFREE_LIB"), RTLD_NOW);
			int (*hold)(CUdeviceptr) = lib ? (int (*)(CUdeviceptr))dlsym(lib,
										     "latefree_hold")
						       : NULL;

			printf("latefree %lu: %d\n", a, hold ? hold(bufs[a].ptr) : -1);
			if (hold)
				bufs[a].ptr = 0; /* the library's now */
		} else if (!strncmp(arg, "free:", 5)) {
			if (bufs[a].async) {
				rc = cuMemFreeAsync(bufs[a].ptr, stream);
				CHECK(cuStreamSynchronize(stream));
			} else {
				rc = cuMemFree_v2(bufs[a].ptr);
			}
			printf("free %lu: %d\n", a, (int)rc);
		} else if (!strncmp(arg, "salloc:", 7) || !strncmp(arg, "sfill:", 6) ||
			   !strncmp(arg, "sfree:", 6)) {
			CUstream s = b ? stream2 : stream;

			if (!stream2)
				CHECK(cuStreamCreate(&stream2, CU_STREAM_NON_BLOCKING));
			s = b ? stream2 : stream;
			if (arg[1] == 'a') {
				rc = cuMemAllocAsync(&bufs[nbufs].ptr, a, s);
				printf("salloc %lu on %lu: %d buffer %d\n", a, b, (int)rc, nbufs);
				if (rc == CUDA_SUCCESS) {
					bufs[nbufs].size = a;
					bufs[nbufs++].async = 1;
				}
			} else if (arg[1] == 'f' && arg[2] == 'i') {
				unsigned char v = 1;
				unsigned long long len = bufs[a].size;
				void *params[] = { &bufs[a].ptr, &v, &len };
				CUfunction f;

				CHECK(cuModuleGetFunction(&f, mod, "gg_fill"));
				CHECK(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, s, params, NULL));
				printf("sfill %lu on %lu\n", a, b);
			} else {
				rc = cuMemFreeAsync(bufs[a].ptr, s);
				printf("sfree %lu on %lu: %d\n", a, b, (int)rc);
			}
		} else if (!strcmp(arg, "abortcount")) {
			signal(SIGABRT, on_abort_count);
			printf("abortcount\n");
		} else if (!strcmp(arg, "ssync")) {
			CHECK(cuStreamSynchronize(stream));
			if (stream2)
				CHECK(cuStreamSynchronize(stream2));
			printf("streams synced\n");
		} else if (!strncmp(arg, "ifree:", 6)) {
			rc = cuMemFree_v2(bufs[a].ptr + b);
			printf("free %lu+%lu: %d\n", a, b, (int)rc);
		} else if (!strncmp(arg, "same:", 5)) {
			printf("buffers %lu and %lu: %s\n", a, b,
			       bufs[a].ptr == bufs[b].ptr ? "same address" : "different addresses");
		} else if (!strncmp(arg, "sites:", 6)) {
			CUdeviceptr *ps = malloc(a * 10 * sizeof(*ps));

			for (unsigned long k = 0; k < a * 10; k++)
				CHECK(places[k % 10](&ps[k]));
			for (unsigned long k = 0; b && k < a * 10; k++)
				CHECK(cuMemFree_v2(ps[k]));
			free(ps);
			printf("sites %lu: %s\n", a, b ? "freed" : "kept");
		} else if (!strncmp(arg, "deep:", 5)) {
			CUdeviceptr p;

			CHECK(redzone_deep(a, &p, b));
			printf("deep %lu: kept\n", a);
		} else if (!strncmp(arg, "overrun:", 8)) {
			unsigned long long size = bufs[a].size, extra = b;
			void *params[] = { &bufs[a].ptr, &size, &extra };

			if (bufs[a].async)
				CHECK(cuStreamSynchronize(stream));
			launch("gg_overrun", params);
			printf("overrun %lu by %lu\n", a, b);
		} else if (!strncmp(arg, "under:", 6)) {
			unsigned long long below = b;
			void *params[] = { &bufs[a].ptr, &below };

			launch("gg_underrun", params);
			printf("under %lu by %lu\n", a, b);
		} else if (!strncmp(arg, "two", 3) && strchr(arg, ':')) {
			CUdeviceptr pa = bufs[a].ptr, pb = bufs[b].ptr;
			unsigned long long na = bufs[a].size, nb = bufs[b].size, extra = c;
			void *params[] = { &pa, &na, &pb, &nb, &extra };
			CUfunction f;

			if (arg[3] == 'i')
				pb += 16, nb -= 16;
			if (arg[3] == 'k' || arg[3] == 'f') {
				static CUlibrary lib;
				CUkernel k;

				if (!lib)
					CHECK(cuLibraryLoadFromFile(&lib, ptx, NULL, NULL, 0, NULL,
								    NULL, 0));
				CHECK(cuLibraryGetKernel(&k, lib, "gg_overrun_second"));
				f = (CUfunction)k;
				if (arg[3] == 'f')
					CHECK(cuKernelGetFunction(&f, k));
			} else {
				CHECK(cuModuleGetFunction(&f, mod, "gg_overrun_second"));
			}
			if (arg[3] == 'x') {
				struct {
					CUdeviceptr pa;
					unsigned long long na;
					CUdeviceptr pb;
					unsigned long long nb, extra;
				} buf = { pa, na, pb, nb, extra };
				size_t size = sizeof(buf);
				void *x[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &buf,
					      CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END };

				CHECK(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, NULL, NULL, x));
			} else {
				CHECK(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, NULL, params, NULL));
			}
			fprintf(stderr, "app: two returned\n");
			printf("%s %lu %lu by %lu\n", strtok(arg, ":"), a, b, c);
		} else if (!strncmp(arg, "reload:", 7)) {
			char *p1 = arg + 7, *p2 = strchr(p1, ':');
			CUmodule m1, m2;
			CUfunction f1, f2;
			CUdeviceptr pa = bufs[0].ptr, pb = bufs[1].ptr;
			unsigned long long na = bufs[0].size, nb = bufs[1].size, none = 0, len = nb;
			unsigned char v = 1;
			void *two[] = { &pa, &na, &pb, &nb, &none };
			long page = sysconf(_SC_PAGESIZE);
			char *pages = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
					   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			void **fill;

			if (!p2 || pages == MAP_FAILED ||
			    mprotect(pages + page, (size_t)page, PROT_NONE)) {
				fprintf(stderr, "app-redzone: reload:P1:P2: %s\n",
					p2 ? "mmap" : "two paths");
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
		} else if (!strncmp(arg, "fill:", 5)) {
			unsigned char v = 1;
			unsigned long long len = bufs[a].size;
			void *params[] = { &bufs[a].ptr, &v, &len };

			launch("gg_fill", params);
			printf("filled %lu\n", a);
		} else if (!strncmp(arg, "kcopy:", 6)) {
			unsigned long long len = bufs[a].size;
			void *params[] = { &bufs[a].ptr, &bufs[b].ptr, &len };

			launch("gg_copy", params);
			printf("copied %lu into %lu\n", b, a);
		} else if (!strncmp(arg, "copy:", 5)) {
			size_t len = bufs[a].size + b;
			unsigned char *host = malloc(len);

			memset(host, 0x42, len);
			rc = cuMemcpyHtoD_v2(bufs[a].ptr, host, len);
			printf("copy %lu bytes into %lu: %d\n", (unsigned long)len, a, (int)rc);
			free(host);
		} else if (!strncmp(arg, "icopy:", 6) || !strncmp(arg, "iset:", 5)) {
			unsigned char *host = malloc(c ? c : 1);

			memset(host, 0x42, c ? c : 1);
			rc = arg[1] == 'c' ? cuMemcpyHtoD_v2(bufs[a].ptr + b, host, c)
					   : cuMemsetD8_v2(bufs[a].ptr + b, 0x42, c);
			printf("%s %lu bytes at %lu+%lu: %d\n", arg[1] == 'c' ? "copy" : "set", c, a, b,
			       (int)rc);
			free(host);
		} else if (!strncmp(arg, "ifill:", 6)) {
			unsigned char v = 1;
			unsigned long long len = c;
			CUdeviceptr at = bufs[a].ptr + b;
			void *params[] = { &at, &v, &len };
			CUfunction f;

			CHECK(cuModuleGetFunction(&f, mod, "gg_fill"));
			rc = cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, NULL, params, NULL);
			CHECK(cuCtxSynchronize());
			printf("fill %lu bytes at %lu+%lu: %d\n", c, a, b, (int)rc);
		} else if (!strncmp(arg, "tfree:", 6)) {
			struct one_call call = { .ptr = bufs[a].ptr };

			printf("free %lu on a thread: %d\n", a, (int)on_a_thread(&call));
		} else if (!strncmp(arg, "talloc:", 7)) {
			struct one_call call = { .bytes = a };

			rc = on_a_thread(&call);
			printf("alloc %lu on a thread: %d buffer %d\n", a, (int)rc, nbufs);
			if (rc == CUDA_SUCCESS) {
				bufs[nbufs].ptr = call.ptr;
				bufs[nbufs].size = a;
				bufs[nbufs++].async = 0;
			}
		} else if (!strncmp(arg, "sum:", 4)) {
			unsigned long long len = bufs[a].size + b, sum = 0;
			CUdeviceptr out;
			void *params[] = { &bufs[a].ptr, &len, &out };

			CHECK(cuMemAlloc_v2(&out, 8));
			launch("gg_sum", params);
			CHECK(cuMemcpyDtoH_v2(&sum, out, 8));
			CHECK(cuMemFree_v2(out));
			printf("sum of %lu + %lu bytes: %llu\n", a, b, sum);
		} else if (!strncmp(arg, "poke:", 5)) {
			int (*wr)(CUdeviceptr, const void *,
				  size_t) = (int (*)(CUdeviceptr, const void *,
						     size_t))dlsym(RTLD_DEFAULT, "fakecuda_write");
			unsigned char bytes[4096];

			memset(bytes, 0x42, sizeof(bytes));
			printf("poke %lu bytes past %lu: %s\n", b, a,
			       wr && b <= sizeof(bytes) && !wr(bufs[a].ptr + bufs[a].size, bytes, b)
				       ? "written"
				       : "unwritable");
		} else if (!strncmp(arg, "band:", 5)) {
			int (*rd)(CUdeviceptr, void *, size_t) = (int (*)(
				CUdeviceptr, void *, size_t))dlsym(RTLD_DEFAULT, "fakecuda_read");
			unsigned char band[4096];

			CHECK(cuCtxSynchronize());
			if (!rd || b > sizeof(band) || rd(bufs[a].ptr + bufs[a].size, band, b)) {
				printf("band %lu: unreadable\n", a);
				continue;
			}
			printf("band %lu:", a);
			for (unsigned long k = 0; k < b; k++)
				printf(" %02x", band[k]);
			printf("\n");
		} else if (!strncmp(arg, "range:", 6)) {
			CUdeviceptr base = 0;
			size_t size = 0;

			rc = cuMemGetAddressRange_v2(&base, &size, bufs[a].ptr + b);
			printf("range %lu+%lu: %d base %s size %zu\n", a, b, (int)rc,
			       base == bufs[a].ptr ? "buffer"
			       : base              ? "other"
						   : "none",
			       size);
		} else if (!strncmp(arg, "attr:", 5)) {
			size_t size = 0;
			unsigned long long size2 = 0, start = 0;
			CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
							CU_POINTER_ATTRIBUTE_RANGE_SIZE };
			void *data[] = { &start, &size2 };

			rc = cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
						   bufs[a].ptr + b);
			printf("attr %lu+%lu: %d size %zu;", a, b, (int)rc, size);
			rc = cuPointerGetAttributes(2, attrs, data, bufs[a].ptr + b);
			printf(" attrs: %d size %llu\n", (int)rc, size2);
		} else if (!strncmp(arg, "limit:", 6)) {
			void (*lim)(size_t) = (void (*)(size_t))dlsym(RTLD_DEFAULT,
								      "fakecuda_set_mem_limit");

			if (lim)
				lim(a);
			printf("limit %lu\n", a);
		} else if (!strncmp(arg, "graph:", 6)) {
			unsigned long long size = bufs[a].size, extra = b;
			void *params[] = { &bufs[a].ptr, &size, &extra };
			CUfunction f;
			CUgraph g;
			CUresult begin, launched, end;

			CHECK(cuModuleGetFunction(&f, mod, "gg_overrun"));
			begin = cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_RELAXED);
			launched = cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, stream, params, NULL);
			end = cuStreamEndCapture(stream, &g);
			if (end == CUDA_SUCCESS) {
				CHECK(cuGraphInstantiateWithFlags(&app_graph, g, c));
				CHECK(cuGraphGetNodes(g, &app_graph_node, &(size_t){ 1 }));
			}
			printf("graph %lu by %lu: begin %d, launch %d, end %d\n", a, b, (int)begin,
			       (int)launched, (int)end);
		} else if (!strncmp(arg, "replay:", 7)) {
			CUresult last = CUDA_SUCCESS;

			for (unsigned long k = 0; k < a; k++)
				last = cuGraphLaunch(app_graph, stream);
			printf("replayed %lu: %d, synchronize %d\n", a, (int)last,
			       (int)cuCtxSynchronize());
		} else if (!strcmp(arg, "deadreplay")) {
			CUstream dead;

			CHECK(cuStreamCreate(&dead, CU_STREAM_NON_BLOCKING));
			CHECK(cuStreamDestroy_v2(dead));
			printf("dead replay: %d\n", (int)cuGraphLaunch(app_graph, dead));
		} else if (!strncmp(arg, "gset:", 5)) {
			unsigned long long size = bufs[a].size, extra = b;
			void *params[] = { &bufs[a].ptr, &size, &extra };
			CUDA_KERNEL_NODE_PARAMS kp = { .gridDimX = 1,
						       .gridDimY = 1,
						       .gridDimZ = 1,
						       .blockDimX = 128,
						       .blockDimY = 1,
						       .blockDimZ = 1,
						       .kernelParams = params };

			CHECK(cuModuleGetFunction(&kp.func, mod, "gg_overrun"));
			printf("gset %lu by %lu: %d\n", a, b,
			       (int)cuGraphExecKernelNodeSetParams_v2(app_graph, app_graph_node, &kp));
		} else if (!strcmp(arg, "sync")) {
			CHECK(cuCtxSynchronize());
			printf("synced\n");
		} else if (!strcmp(arg, "meminfo")) {
			size_t free_bytes = 0, total = 0;

			CHECK(cuMemGetInfo_v2(&free_bytes, &total));
			printf("meminfo used %zu\n", total - free_bytes);
		} else if (!strncmp(arg, "capfree:", 8)) {
			CUstream cs;
			CUgraph g = NULL;
			CUresult begin, memset_rc, end;

			CHECK(cuStreamCreate(&cs, CU_STREAM_DEFAULT));
			begin = cuStreamBeginCapture_v2(cs, (CUstreamCaptureMode)b);
			memset_rc = cuMemsetD8Async(bufs[a].ptr, 1, bufs[a].size, cs);
			rc = cuMemFree_v2(bufs[a].ptr);
			end = cuStreamEndCapture(cs, &g);
			printf("capfree %lu mode %lu: begin %d, memset %d, free %d, end %d, graph %s\n",
			       a, b, (int)begin, (int)memset_rc, (int)rc, (int)end, g ? "yes" : "no");
			if (g)
				CHECK(cuGraphDestroy(g));
			CHECK(cuStreamDestroy_v2(cs));
		} else if (!strncmp(arg, "capq:", 5) || !strncmp(arg, "capqt:", 6)) {
			CUgraph g = NULL;
			CUgraphExec x = NULL;
			CUresult begin, memset_rc, end, launch_rc = CUDA_ERROR_INVALID_VALUE;

			if (!stream2)
				CHECK(cuStreamCreate(&stream2, CU_STREAM_NON_BLOCKING));
			begin = cuStreamBeginCapture_v2(stream, (CUstreamCaptureMode)c);
			memset_rc = cuMemsetD8Async(bufs[b].ptr, 3, bufs[b].size, stream);
			if (arg[4] == 't') {
				struct one_call call = { .ptr = bufs[a].ptr, .stream = stream2 };

				rc = on_a_thread(&call);
			} else {
				rc = cuMemFreeAsync(bufs[a].ptr, stream2);
			}
			end = cuStreamEndCapture(stream, &g);
			if (g && cuGraphInstantiateWithFlags(&x, g, 0) == CUDA_SUCCESS) {
				launch_rc = cuGraphLaunch(x, stream);
				CHECK(cuStreamSynchronize(stream));
				CHECK(cuGraphExecDestroy(x));
			}
			CHECK(cuStreamSynchronize(stream2));
			printf("capq %lu %lu mode %lu: begin %d, memset %d, free %d, end %d, graph %s, "
			       "launch %d\n",
			       a, b, c, (int)begin, (int)memset_rc, (int)rc, (int)end, g ? "yes" : "no",
			       (int)launch_rc);
			if (g)
				CHECK(cuGraphDestroy(g));
		} else if (!strncmp(arg, "capalloc:", 9)) {
			CUstream cs;
			CUgraph g = NULL;
			CUdeviceptr p = 0;
			CUresult alloc_rc, end;

			CHECK(cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING));
			CHECK(cuStreamBeginCapture_v2(cs, CU_STREAM_CAPTURE_MODE_RELAXED));
			alloc_rc = cuMemAllocAsync(&p, a, cs);
			if (alloc_rc == CUDA_SUCCESS)
				CHECK(cuMemFreeAsync(p, cs));
			end = cuStreamEndCapture(cs, &g);
			printf("capalloc %lu: alloc %d, end %d\n", a, (int)alloc_rc, (int)end);
			if (g)
				CHECK(cuGraphDestroy(g));
			CHECK(cuStreamDestroy_v2(cs));
		} else if (!strcmp(arg, "badlaunch")) {
			CUfunction f;
			CUdeviceptr p = 0;
			unsigned long long len = 0;
			unsigned char v = 0;
			void *params[] = { &p, &v, &len };

			CHECK(cuModuleGetFunction(&f, mod, "gg_fill"));
			rc = cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, NULL, params, NULL);
			printf("badlaunch: %d\n", (int)rc);
		} else if (!strcmp(arg, "launch")) {
			CUdeviceptr p;
			unsigned char v = 1;
			unsigned long long len = 64;
			void *params[] = { &p, &v, &len };

			CHECK(cuMemAlloc_v2(&p, 64));
			launch("gg_fill", params);
			CHECK(cuMemFree_v2(p));
			printf("launched\n");
		} else if (!strcmp(arg, "reset")) {
			CHECK(cuCtxSynchronize());
			rc = cuDevicePrimaryCtxReset_v2(0);
			CHECK(cuDevicePrimaryCtxRetain(&primary, 0));
			CHECK(cuCtxSetCurrent(primary));
			CHECK(cuModuleLoad(&mod, ptx));
			CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
			printf("reset: %d\n", (int)rc);
		} else if (!strcmp(arg, "old-reset") || !strcmp(arg, "old-release")) {
			CHECK(cuCtxSynchronize());
			rc = !strcmp(arg, "old-reset") ? cuDevicePrimaryCtxReset(0)
						       : cuDevicePrimaryCtxRelease(0);
			CHECK(cuDevicePrimaryCtxRetain(&primary, 0));
			CHECK(cuCtxSetCurrent(primary));
			CHECK(cuModuleLoad(&mod, ptx));
			CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
			printf("%s: %d\n", arg, (int)rc);
		} else if (!strcmp(arg, "pop")) {
			CUcontext top = NULL;

			rc = cuCtxPopCurrent_v2(&top);
			printf("pop: %d %s\n", (int)rc, top == primary ? "primary" : "other");
		} else if (!strcmp(arg, "push")) {
			printf("push: %d\n", (int)cuCtxPushCurrent_v2(primary));
		} else if (!strncmp(arg, "deadfree:", 9)) {
			CUstream dead;

			CHECK(cuStreamCreate(&dead, CU_STREAM_NON_BLOCKING));
			CHECK(cuStreamDestroy_v2(dead));
			rc = cuMemFreeAsync(bufs[a].ptr, dead);
			printf("free %lu on a destroyed stream: %s\n", a, rc ? "refused" : "done");
		} else if (!strncmp(arg, "contexts:", 9)) {
			CUcontext back, made;
			CUdeviceptr p;
			unsigned long ok = 0;

			CHECK(cuCtxGetCurrent(&back));
			for (unsigned long k = 0; k < a; k++) {
				CHECK(cuCtxCreate_v4(&made, NULL, 0, 0));
				ok += redzone_alloc(&p, 16) == CUDA_SUCCESS;
				CHECK(cuCtxPopCurrent_v2(&made));
			}
			CHECK(cuCtxSetCurrent(back));
			printf("contexts %lu: %lu allocations\n", a, ok);
		} else if (!strcmp(arg, "ctx")) {
			CHECK(cuCtxCreate_v4(&created, NULL, 0, 0));
			CHECK(cuModuleLoad(&mod, ptx));
			printf("context created\n");
		} else if (!strcmp(arg, "attach")) {
			CUcontext same = NULL;

			rc = cuCtxAttach(&same, 0);
			printf("attach: %d%s\n", (int)rc, same == created ? " (created)" : "");
		} else if (!strcmp(arg, "detach")) {
			unsigned version;
			bool gone;

			CHECK(cuCtxSynchronize());
			rc = cuCtxDetach(created);
			gone = cuCtxGetApiVersion(created, &version) != CUDA_SUCCESS;
			if (gone) {
				CHECK(cuCtxSetCurrent(primary));
				CHECK(cuModuleLoad(&mod, ptx));
			}
			printf("detach: %d (%s)\n", (int)rc, gone ? "gone" : "alive");
		} else if (!strcmp(arg, "destroy") || !strcmp(arg, "old-destroy")) {
			CHECK(cuCtxSynchronize());
			rc = arg[0] == 'o' ? cuCtxDestroy(created) : cuCtxDestroy_v2(created);
			CHECK(cuCtxSetCurrent(primary));
			CHECK(cuModuleLoad(&mod, ptx));
			printf("%s: %d\n", arg, (int)rc);
		} else if (!strncmp(arg, "label:", 6)) {
			print_label(arg + 6);
		} else if (!strncmp(arg, "labels:", 7)) {
			pthread_t t[64];
			long sum = 0;

			for (unsigned long k = 0; k < a && k < 64; k++)
				pthread_create(&t[k], NULL, label_thread, &b);
			for (unsigned long k = 0; k < a && k < 64; k++) {
				void *r;

				pthread_join(t[k], &r);
				sum += (long)r;
			}
			printf("labels: %ld\n", sum);
		} else if (!strncmp(arg, "dirtylabels:", 12)) {
			long sum = 0;

			for (unsigned long k = 0; k < a; k++) {
				CUdeviceptr p;
				unsigned long long size = 64, extra = 1;
				void *params[] = { &p, &size, &extra };
				char label[32];

				CHECK(cuMemAlloc_v2(&p, 64));
				launch("gg_overrun", params);
				CHECK(cuMemFree_v2(p));
				snprintf(label, sizeof(label), "dirty-%lu", k);
				sum += label_boundary(label);
			}
			printf("dirtylabels: %ld\n", sum);
		} else if (!strcmp(arg, "cblabel")) {
			static int got = -3;

			CHECK(cuStreamAddCallback(stream, label_from_callback, &got, 0));
			CHECK(cuCtxSynchronize());
			printf("label in callback: %d\n", got);
		} else if (!strcmp(arg, "version")) {
			const char *(*fn)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT,
									       "gpuguard_version");

			printf("version: %s\n", fn ? fn() : "absent");
		} else if (!strncmp(arg, "threads:", 8)) {
			pthread_t t[64];
			unsigned long job[2] = { b, c };

			for (unsigned long k = 0; k < a && k < 64; k++)
				pthread_create(&t[k], NULL, pair_thread, job);
			for (unsigned long k = 0; k < a && k < 64; k++)
				pthread_join(t[k], NULL);
			printf("threads done\n");
		} else if (!strncmp(arg, "hold:", 5)) {
			for (unsigned long k = 0; k < a; k++) {
				CUdeviceptr p;

				CHECK(redzone_alloc(&p, b));
			}
			printf("holding %lu\n", a);
		} else if (!strncmp(arg, "many:", 5)) {
			CUdeviceptr *ps = malloc(a * sizeof(*ps));

			for (unsigned long k = 0; k < a; k++)
				CHECK(redzone_alloc(&ps[k], b));
			for (unsigned long k = 0; k < a; k++)
				CHECK(cuMemFree_v2(ps[k]));
			free(ps);
			printf("many done\n");
		} else if (!strncmp(arg, "wait:", 5)) {
			wait_for(arg + 5);
			printf("waited\n");
		} else if (!strncmp(arg, "raise:", 6)) {
			kill(getpid(), (int)a);
			printf("raised %lu\n", a);
		} else if (!strncmp(arg, "storm:", 6)) {
			pthread_t t[64];
			unsigned long job[2] = { b, 64 };
			const char *sig = getenv("GG_TEST_SIGNAL");

			for (unsigned long k = 0; k < a && k < 64; k++)
				pthread_create(&t[k], NULL, pair_thread, job);
			for (unsigned long k = 0; k < c && sig; k++) {
				kill(getpid(), atoi(sig));
				usleep(100);
			}
			for (unsigned long k = 0; k < a && k < 64; k++)
				pthread_join(t[k], NULL);
			printf("storm done\n");
		} else if (!strncmp(arg, "handler:", 8)) {
			signal((int)a, on_app_signal);
			printf("handler %lu\n", a);
		} else if (!strncmp(arg, "labelhandler:", 13)) {
			struct sigaction sa = { .sa_handler = on_label_signal };

			*(void **)&handler_boundary = dlsym(RTLD_DEFAULT, "gpuguard_boundary");
			sigemptyset(&sa.sa_mask);
			sigaction((int)a, &sa, NULL);
			printf("label handler %lu\n", a);
		} else if (!strncmp(arg, "exithandler:", 12)) {
			exit_handler_status = (int)b;
			signal((int)a, on_exit_signal);
			printf("exit handler %lu\n", a);
		} else if (!strncmp(arg, "raisein:", 8)) {
			int (*arm)(const char *, int) = (int (*)(const char *, int))dlsym(
				RTLD_DEFAULT, "fakecuda_raise_in");
			char name[64];
			int sig = 0;

			if (!arm || sscanf(arg + 8, "%63[^:]:%d", name, &sig) != 2 || arm(name, sig)) {
				fprintf(stderr, "app-redzone: cannot arm %s\n", arg);
				exit(2);
			}
			printf("armed %s\n", name);
		} else if (!strncmp(arg, "watchdog:", 9)) {
			signal(SIGALRM, on_watchdog);
			alarm((unsigned)a);
		} else if (!strncmp(arg, "ignore:", 7) || !strncmp(arg, "default:", 8)) {
			signal((int)a, arg[0] == 'i' ? SIG_IGN : SIG_DFL);
			printf("%s %lu\n", arg[0] == 'i' ? "ignoring" : "default", a);
		} else if (!strcmp(arg, "handled")) {
			printf("app handler ran %d\n", (int)app_handled);
		} else if (!strncmp(arg, "fork:", 5)) {
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
				if (a && pattern && strstr(pattern, "%p")) {
					snprintf(path, sizeof(path), "%.*s%d%s",
						 (int)(strstr(pattern, "%p") - pattern), pattern,
						 (int)getpid(), strstr(pattern, "%p") + 2);
					kill(getpid(), (int)a);
					wait_for(path);
				}
				exit(0);
			}
			waitpid(pid, &status, 0);
			printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
			if (WIFSIGNALED(status))
				printf("child killed by signal %d\n", WTERMSIG(status));
		} else if (!strncmp(arg, "slowstart:", 10)) {
			sem_init(&slow_start.lock, 0, 1);
			slow_start.ms = a;
			printf("slowstart %lu\n", a);
		} else if (!strncmp(arg, "forkrace:", 9)) {
			unsigned long ran = 0;

			fflush(stdout);
			for (unsigned long k = 0; k < a; k++) {
				pid_t pid = fork();
				int status = 0;

				if (pid == 0)
					_exit(forkrace_child((int)b));
				waitpid(pid, &status, 0);
				ran += WIFEXITED(status) && WEXITSTATUS(status) == 0;
			}
			printf("forkrace: %lu of %lu grandchildren ran their boundary\n", ran, a);
		} else if (!strncmp(arg, "child:", 6)) {
			const char *mode = arg + 6;
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
			printf("child %s exited %d\n", mode,
			       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		} else if (!strncmp(arg, "cbexit:", 7)) {
			static int code;

			code = (int)a;
			fflush(stdout);
			CHECK(cuStreamAddCallback(stream, exit_from_callback, &code, 0));
			CHECK(cuCtxSynchronize());
			printf("the callback did not run\n");
		} else if (!strcmp(arg, "vfork")) {
			pid_t pid;
			int status = 0;

			fflush(stdout);
			if ((pid = vfork()) == 0) {
				execl("/nonexistent/gpuguard-test-program", "gpuguard-test-program",
				      (char *)NULL);
				_exit(127);
			}
			waitpid(pid, &status, 0);
			printf("vfork child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		} else if (!strncmp(arg, "brood:", 6)) {
			pthread_t t[16];
			unsigned long clean = 0, job[2] = { a, b };
			void *ok;

			fflush(stdout);
			for (unsigned long k = 0; k < a && k < 16; k++)
				pthread_create(&t[k], NULL, brood_thread, job);
			for (unsigned long k = 0; k < a && k < 16; k++) {
				pthread_join(t[k], &ok);
				clean += (unsigned long)(uintptr_t)ok;
			}
			printf("brood: %lu of %lu children exited 0\n", clean, a * b);
		} else if (!strncmp(arg, "cycles:", 7)) {
			unsigned long bad = 0;

			for (unsigned long k = 0; k < a; k++) {
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
			printf("cycles: %lu of %lu showed padding\n", bad, a);
		} else if (!strcmp(arg, "tasks")) {
			char cmd[64];

			snprintf(cmd, sizeof(cmd), "ls /proc/%d/task | wc -l", (int)getpid());
			fflush(stdout);
			printf("tasks ");
			fflush(stdout);
			if (system(cmd) != 0)
				printf("?\n");
		} else if (!strncmp(arg, "print:", 6)) {
			FILE *f = fdopen(dup(1), "w");

			setvbuf(f, NULL, _IOFBF, 1 << 16);
			for (unsigned long k = 0; k < a; k++)
				fprintf(f, "buffered line %lu\n", k);
			/* Not flushed, not closed: exit() must do it. */
		} else if (!strncmp(arg, "exit:", 5)) {
			exit((int)a);
		} else if (!strncmp(arg, "open2:", 6)) {
			close(2);
			if (open(arg + 6, O_WRONLY | O_CREAT | O_TRUNC, 0644) != 2)
				return 70;
			(void)!write(2, "data\n", 5);
			printf("opened 2\n");
		} else if (!strncmp(arg, "cd:", 3)) {
			printf("cd %s: %d\n", arg + 3, chdir(arg + 3));
		} else {
			fprintf(stderr, "app-redzone: unknown step '%s'\n", arg);
			return 64;
		}
	}
	printf("done\n");
	return 0;
}
