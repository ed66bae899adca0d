/* Forked children of a threaded process, for the fork tests: whatever the
 * parent's threads hold when it forks (the dynamic loader's lock, above all),
 * a child that calls the driver and exits must exit. Each argument is a step:
 *   init             cuInit, the primary context made current, and
 *                    GG_TEST_PTX loaded: the shim set up before any fork
 *   load:LIB         dlopen LIB, kept (libgcc_s.so.1: GCC's unwinder)
 *   gcc              print "libgcc_s: loaded" or "libgcc_s: absent" (a
 *                    sanitizer's runtime loads it)
 *   hold             a thread enters dl_iterate_phdr and stays inside its
 *                    callback (the loader's list locked) until release
 *   release          let it out, and join it
 *   hammer:T:LIB     T threads that keep the loader's locks busy: each in
 *                    turn walks the loaded objects with dl_iterate_phdr
 *                    (lingering in the callback), and dlopen()s and
 *                    dlclose()s LIB; and one thread that allocates and frees
 *                    device memory (after init)
 *   calm             stop and join the hammer threads
 *   forks:N:WORK     fork N children one after another, each doing WORK and
 *                    then ending, in turn, with _exit(0), exit(0) and _Exit(0);
 *                    each is waited for up to 20 s (a child still there then
 *                    is a hang: killed, and no more are forked). WORK: alloc
 *                    (one cuMemAlloc_v2 of 64 bytes, kept), miss (a lookup of
 *                    a kernel GG_TEST_PTX lacks) or trace (an allocation
 *                    whose stack GPUGUARD_REDZONE_TRACE_IDX asks for). A child
 *                    of a parent without init sets the driver up first.
 *                    Prints "forks: N exited 0, H hung, O otherwise".
 *   storm:T:F:S      T threads that each allocate, copy in, launch gg_fill,
 *                    synchronize, copy out and free, and run a labelled
 *                    boundary (gpuguard_boundary, when the shim is there)
 *                    every 8th round, while one thread sends this process
 *                    GPUGUARD_SIGNAL's number (GG_TEST_SIGNAL) S times and
 *                    the main thread runs forks:F:alloc; then all of them
 *                    are stopped and joined. Prints the forks line, then
 *                    "storm: done" (after init)
 *   watchdog:S       a process still running S s from here (a hang) says so
 *                    on stderr and dies with status 97, running nothing else
 * Exits 0, or 1 when a child hung or did not exit 0.
 *
 * Two things that could hang a child without the shim never run across a
 * fork (a lock held by the threads that do them, taken by the forking
 * thread): a dlclose, which runs __cxa_finalize under glibc's lock of the
 * exit handlers, a lock glibc does not reset in the child, where exit()
 * takes it; and, under AddressSanitizer, whatever allocates host memory
 * (dlopen, the driver calls; a thread's start, waited for before forking):
 * GCC 12's runtime does not take its allocator's locks around fork().
 * Walking the objects takes neither. */
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN 1
#endif
#endif
#ifndef ASAN
#define ASAN 0
#endif

#define MAX_HAMMERS 8
#define HANG_SECONDS 20

static struct {
	bool ready; /* init ran: the driver is set up here */
	CUmodule module;
	CUcontext ctx; /* the primary context, made current by each thread of storm */
	/* hold */
	pthread_t holder;
	pthread_mutex_t hold_lock;
	pthread_cond_t hold_cond;
	bool inside, let_go;
	/* hammer */
	pthread_t hammers[MAX_HAMMERS + 1];
	unsigned nhammers;
	atomic_bool stop;
	atomic_uint started; /* threads past their first round: done setting up */
	const char *lib;
	/* Held by a thread while it dlcloses, and under ASan while it
	 * allocates; by the forking thread around fork(). */
	pthread_mutex_t gate;
} app = { .hold_lock = PTHREAD_MUTEX_INITIALIZER,
	  .hold_cond = PTHREAD_COND_INITIALIZER,
	  .gate = PTHREAD_MUTEX_INITIALIZER };

static void check(CUresult rc, const char *what)
{
	if (rc != CUDA_SUCCESS) {
		fprintf(stderr, "app-fork-storm: %s: %d\n", what, (int)rc);
		exit(2);
	}
}

static void setup_driver(void)
{
	CUdevice dev;
	CUcontext ctx;
	const char *ptx = getenv("GG_TEST_PTX");

	check(cuInit(0), "cuInit");
	check(cuDeviceGet(&dev, 0), "cuDeviceGet");
	check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
	check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	app.ctx = ctx;
	if (!ptx) {
		fprintf(stderr, "app-fork-storm: GG_TEST_PTX is not set\n");
		exit(2);
	}
	check(cuModuleLoad(&app.module, ptx), "cuModuleLoad");
	app.ready = true;
}

/* ---- hold ---- */

static int stay_inside(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	(void)arg;
	pthread_mutex_lock(&app.hold_lock);
	app.inside = true;
	pthread_cond_broadcast(&app.hold_cond);
	while (!app.let_go)
		pthread_cond_wait(&app.hold_cond, &app.hold_lock);
	pthread_mutex_unlock(&app.hold_lock);
	return 1;
}

static void *holder(void *arg)
{
	(void)arg;
	dl_iterate_phdr(stay_inside, NULL);
	return NULL;
}

static void hold(void)
{
	if (pthread_create(&app.holder, NULL, holder, NULL))
		exit(2);
	pthread_mutex_lock(&app.hold_lock);
	while (!app.inside)
		pthread_cond_wait(&app.hold_cond, &app.hold_lock);
	pthread_mutex_unlock(&app.hold_lock);
}

static void release(void)
{
	pthread_mutex_lock(&app.hold_lock);
	app.let_go = true;
	pthread_cond_broadcast(&app.hold_cond);
	pthread_mutex_unlock(&app.hold_lock);
	pthread_join(app.holder, NULL);
}

/* ---- hammer ---- */

static int linger(struct dl_phdr_info *info, size_t size, void *arg)
{
	volatile unsigned spin = 0;

	(void)info;
	(void)size;
	(void)arg;
	while (spin < 2000)
		spin++;
	return 0;
}

static void gate_enter(bool always)
{
	if (always || ASAN)
		pthread_mutex_lock(&app.gate);
}

static void gate_leave(bool always)
{
	if (always || ASAN)
		pthread_mutex_unlock(&app.gate);
}

static void *loader_hammer(void *arg)
{
	(void)arg;
	for (bool first = true; first || !atomic_load(&app.stop); first = false) {
		void *h;

		for (int i = 0; i < 20; i++)
			dl_iterate_phdr(linger, NULL);
		gate_enter(false);
		h = dlopen(app.lib, RTLD_NOW | RTLD_LOCAL);
		gate_leave(false);
		gate_enter(true);
		if (h)
			dlclose(h);
		gate_leave(true);
		if (first)
			atomic_fetch_add(&app.started, 1);
	}
	return NULL;
}

static void *alloc_hammer(void *arg)
{
	(void)arg;
	for (bool first = true; first || !atomic_load(&app.stop); first = false) {
		CUdeviceptr p;

		gate_enter(false);
		if (cuMemAlloc_v2(&p, 256) == CUDA_SUCCESS)
			cuMemFree_v2(p);
		gate_leave(false);
		if (first)
			atomic_fetch_add(&app.started, 1);
	}
	return NULL;
}

static void hammer(unsigned n, const char *lib)
{
	app.lib = lib;
	atomic_store(&app.stop, false);
	for (unsigned i = 0; i < n && app.nhammers < MAX_HAMMERS; i++)
		if (pthread_create(&app.hammers[app.nhammers++], NULL, loader_hammer, NULL))
			exit(2);
	if (app.ready && pthread_create(&app.hammers[app.nhammers++], NULL, alloc_hammer, NULL))
		exit(2);
	/* A thread starting up allocates (its stack, its TLS, a sanitizer's
	 * records of it), and the gate does not cover that: it is done before
	 * the first fork. */
	while (atomic_load(&app.started) < app.nhammers) {
		struct timespec pause = { 0, 1000000 };

		nanosleep(&pause, NULL);
	}
}

static void calm(void)
{
	atomic_store(&app.stop, true);
	for (unsigned i = 0; i < app.nhammers; i++)
		pthread_join(app.hammers[i], NULL);
	app.nhammers = 0;
	atomic_store(&app.started, 0);
}

/* ---- forks ---- */

/* The program's own frame for the child's call: a miss's site names it. */
void fork_child_work(const char *work);
__attribute__((noinline)) void fork_child_work(const char *work)
{
	CUdeviceptr p;

	if (!app.ready)
		setup_driver();
	if (!strcmp(work, "alloc") || !strcmp(work, "trace")) {
		check(cuMemAlloc_v2(&p, 64), "cuMemAlloc_v2");
	} else if (!strcmp(work, "miss")) {
		CUfunction f;

		if (cuModuleGetFunction(&f, app.module, "gg_no_such_kernel") != CUDA_ERROR_NOT_FOUND)
			exit(3);
	}
	__asm__ volatile("" ::: "memory"); /* keep this frame a frame */
}

/* The child's status, waiting up to HANG_SECONDS; -1: it hung (killed). */
static int wait_bounded(pid_t pid)
{
	struct timespec start, now, pause = { 0, 1000000 };
	int status;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		pid_t got = waitpid(pid, &status, WNOHANG);

		if (got == pid)
			return status;
		if (got < 0 && errno != EINTR)
			return -2;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec >= HANG_SECONDS) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		nanosleep(&pause, NULL);
	}
}

static int forks(unsigned long n, const char *work)
{
	unsigned long clean = 0, hung = 0, other = 0;

	for (unsigned long i = 0; i < n && !hung; i++) {
		pid_t pid;
		int status;

		pthread_mutex_lock(&app.gate);
		pid = fork();
		if (pid != 0) /* the child never uses it */
			pthread_mutex_unlock(&app.gate);
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			fork_child_work(work);
			if (i % 3 == 0)
				_exit(0);
			if (i % 3 == 1)
				exit(0);
			_Exit(0);
		}
		status = wait_bounded(pid);
		if (status == -1) {
			fprintf(stderr,
				"app-fork-storm: child %lu (pid %d, work %s) did not exit in %d s\n", i,
				(int)pid, work, HANG_SECONDS);
			hung++;
		} else if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			clean++;
		} else {
			fprintf(stderr, "app-fork-storm: child %lu ended with status 0x%x\n", i,
				status);
			other++;
		}
	}
	printf("forks: %lu exited 0, %lu hung, %lu otherwise\n", clean, hung, other);
	fflush(stdout);
	return hung || other ? 1 : 0;
}

/* ---- storm ---- */

static struct {
	atomic_bool stop;
	atomic_uint started;           /* threads past their start (and workers their first round) */
	int (*boundary)(const char *); /* the shim's gpuguard_boundary, or NULL */
	int signal;                    /* GG_TEST_SIGNAL, 0: none */
	unsigned long signals;         /* how many to send */
} storm;

static void *storm_worker(void *arg)
{
	static const unsigned long long size = 256;

	(void)arg;
	gate_enter(false);
	check(cuCtxSetCurrent(app.ctx), "cuCtxSetCurrent");
	gate_leave(false);
	for (unsigned long round = 0; !atomic_load(&storm.stop); round++) {
		unsigned char host[256] = { 0 }, value = 7;
		CUdeviceptr p;
		CUfunction f;
		void *params[] = { &p, &value, (void *)&size };

		gate_enter(false);
		check(cuMemAlloc_v2(&p, size), "cuMemAlloc_v2");
		check(cuMemcpyHtoD_v2(p, host, size), "cuMemcpyHtoD_v2");
		check(cuModuleGetFunction(&f, app.module, "gg_fill"), "cuModuleGetFunction");
		check(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, NULL, params, NULL), "cuLaunchKernel");
		check(cuCtxSynchronize(), "cuCtxSynchronize");
		check(cuMemcpyDtoH_v2(host, p, size), "cuMemcpyDtoH_v2");
		check(cuMemFree_v2(p), "cuMemFree_v2");
		if (host[size - 1] != value) {
			fprintf(stderr, "app-fork-storm: the kernel's bytes are not there\n");
			exit(2);
		}
		if (storm.boundary && round % 8 == 0 && storm.boundary("storm") != 0) {
			fprintf(stderr, "app-fork-storm: a labelled boundary found errors\n");
			exit(2);
		}
		gate_leave(false);
		if (round == 0)
			atomic_fetch_add(&storm.started, 1);
	}
	return NULL;
}

/* kill() of its own process only: no allocation, nothing held across a fork;
 * it ends only once the forks are over. */
static void *storm_signaller(void *arg)
{
	(void)arg;
	atomic_fetch_add(&storm.started, 1);
	for (unsigned long k = 0; k < storm.signals && !atomic_load(&storm.stop); k++) {
		struct timespec pause = { 0, 1000000 };

		kill(getpid(), storm.signal);
		nanosleep(&pause, NULL);
	}
	/* A thread's end frees what it allocated: not across a fork either. */
	while (!atomic_load(&storm.stop)) {
		struct timespec pause = { 0, 1000000 };

		nanosleep(&pause, NULL);
	}
	return NULL;
}

static int storm_run(unsigned threads, unsigned long forks_n, unsigned long signals)
{
	pthread_t t[MAX_HAMMERS], signaller;
	const char *sig = getenv("GG_TEST_SIGNAL");
	int rc;

	if (!app.ready || threads > MAX_HAMMERS) {
		fprintf(stderr, "app-fork-storm: storm needs init, and at most %d threads\n",
			MAX_HAMMERS);
		exit(2);
	}
	*(void **)&storm.boundary = dlsym(RTLD_DEFAULT, "gpuguard_boundary");
	storm.signal = sig ? atoi(sig) : 0;
	storm.signals = storm.signal ? signals : 0;
	atomic_store(&storm.stop, false);
	atomic_store(&storm.started, 0);
	for (unsigned i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, storm_worker, NULL))
			exit(2);
	if (pthread_create(&signaller, NULL, storm_signaller, NULL))
		exit(2);
	/* As hammer's: a thread starting up allocates, which the gate does not
	 * cover (under ASan, a child forked meanwhile hangs on the allocator's
	 * lock: the sanitizer's, not the shim's), so the forks wait for it. */
	while (atomic_load(&storm.started) < threads + 1) {
		struct timespec pause = { 0, 1000000 };

		nanosleep(&pause, NULL);
	}
	rc = forks(forks_n, "alloc");
	atomic_store(&storm.stop, true);
	for (unsigned i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	pthread_join(signaller, NULL);
	printf("storm: done\n");
	return rc;
}

static void on_watchdog(int sig)
{
	static const char msg[] = "app-fork-storm: watchdog: still running, a hang\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		syscall(SYS_exit_group, 97);
	syscall(SYS_exit_group, 97);
}

int main(int argc, char **argv)
{
	int rc = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		char work[16];
		unsigned long n, k;
		unsigned t;
		int used = 0;

		if (!strcmp(arg, "init")) {
			setup_driver();
		} else if (!strncmp(arg, "load:", 5)) {
			if (!dlopen(arg + 5, RTLD_NOW)) {
				fprintf(stderr, "app-fork-storm: %s\n", dlerror());
				return 2;
			}
		} else if (!strcmp(arg, "gcc")) {
			printf("libgcc_s: %s\n",
			       dlopen("libgcc_s.so.1", RTLD_LAZY | RTLD_NOLOAD) ? "loaded" : "absent");
		} else if (!strcmp(arg, "hold")) {
			hold();
		} else if (!strcmp(arg, "release")) {
			release();
		} else if (sscanf(arg, "hammer:%u:%n", &t, &used) == 1 && used) {
			hammer(t, arg + used);
		} else if (!strcmp(arg, "calm")) {
			calm();
		} else if (sscanf(arg, "forks:%lu:%15s", &n, work) == 2) {
			rc |= forks(n, work);
		} else if (sscanf(arg, "storm:%u:%lu:%lu", &t, &n, &k) == 3) {
			rc |= storm_run(t, n, k);
		} else if (sscanf(arg, "watchdog:%u", &t) == 1) {
			signal(SIGALRM, on_watchdog);
			alarm(t);
		} else {
			fprintf(stderr, "app-fork-storm: unknown step %s\n", arg);
			return 2;
		}
	}
	return rc;
}
