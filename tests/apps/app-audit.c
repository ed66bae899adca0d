/* Kernel lookups on demand, for the audit tests. Each argument is a step:
 *   file:PATH       load a module from a file           (named PATH's basename)
 *   data:PATH       load a copy of the file from the heap (named image:HASH)
 *   static          load the PTX compiled into this program (named app-audit+0xOFF)
 *   lib:PATH        load a library from a file
 *   enumfunc        cuLibraryEnumerateKernels of the current library, then for
 *                   each kernel cuKernelGetName and cuKernelGetFunction (no
 *                   lookup by name): prints each name and result
 *   enumlaunch      cuLibraryEnumerateKernels of the current library, then
 *                   launch each kernel as it is (a CUkernel is a CUfunction to
 *                   cuLaunchKernel), never naming it: prints each result
 *   tryfile:PATH    load a module from a file, print the result (a failure is no exit)
 *   trydata:PATH    the same from a heap copy of the file
 *   trylib:PATH     the same for a library from a file
 *   trylibmodule    cuLibraryGetModule of the current library, print the result
 *   badfatbin       with no current context, cuModuleLoadData of a 16-byte
 *                   fatbin header on the heap claiming a terabyte: prints the result
 *   kfunc:NAME      cuLibraryGetKernel of NAME on the current library, then
 *                   cuKernelGetFunction of it: prints both results
 *   get:NAME        cuModuleGetFunction on the current module, from lookup_a(),
 *                   NAME copied into one buffer that every get: step uses
 *   get2:NAME       the same from lookup_b(): a second call site
 *   helper:NAME     the same through libhelper.so's helper_lookup()
 *   helper-overrun  allocate 64 bytes through libhelper.so's helper_alloc(),
 *                   set them, write one byte past them (the fake's
 *                   fakecuda_write), free it
 *   kernel:NAME     cuLibraryGetKernel on the current library
 *   libmodule       make the library's module (never seen loading) current
 *   stale           unload the current module, keep its handle current
 *   reload:PATH     unload the current module, load PATH: prints whether the
 *                   driver gave the same handle again
 *   threads:N:K:NAME  N threads, each K lookups of NAME from lookup_a()
 *   launch          launch gg_fill (looked up quietly) on a small buffer
 *   launches:N      the same N times
 *   sync            cuCtxSynchronize
 *   unwinder        whether libunwind is mapped, and what the process resolves
 *                   _Unwind_RaiseException and _ULx86_64_init_local to
 * Prints one line per step on stdout (flushed), with what the app knows. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

CUresult helper_lookup(CUfunction *f, CUmodule mod, const char *name);
CUresult helper_alloc(CUdeviceptr *p, size_t bytes);
/* Two call sites of their own, exported so they have names. */
CUresult lookup_a(CUfunction *f, const char *name);
CUresult lookup_b(CUfunction *f, const char *name);

static const char static_ptx[] =
	".version 8.0\n.target sm_90\n.address_size 64\n"
	".visible .entry gg_fill(.param .u64 p, .param .u8 v, .param .u64 n)\n{\n\tret;\n}\n"
	".visible .entry static_only()\n{\n\tret;\n}\n";

static CUmodule mod;

static const char *describe(const void *p, char *buf, size_t cap)
{
	Dl_info info;
	const char *obj;

	if (!p)
		return "null";
	if (!dladdr(p, &info) || !info.dli_fname)
		return "unknown";
	obj = strrchr(info.dli_fname, '/');
	snprintf(buf, cap, "%s", obj ? obj + 1 : info.dli_fname);
	return buf;
}
static CUlibrary lib;

#define CHECK(call)                                                                     \
	do {                                                                            \
		CUresult rc_ = (call);                                                  \
		if (rc_ != CUDA_SUCCESS) {                                              \
			fprintf(stderr, "app-audit: %s failed: %d\n", #call, (int)rc_); \
			exit(2);                                                        \
		}                                                                       \
	} while (0)

__attribute__((noinline)) CUresult lookup_a(CUfunction *f, const char *name)
{
	CUresult rc = cuModuleGetFunction(f, mod, name);

	__asm__ volatile("" ::: "memory");
	return rc;
}

__attribute__((noinline)) CUresult lookup_b(CUfunction *f, const char *name)
{
	CUresult rc = cuModuleGetFunction(f, mod, name);

	__asm__ volatile("" ::: "memory");
	return rc;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		exit(3);
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		exit(3);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

struct job {
	int count;
	const char *name;
};

static void *thread_main(void *arg)
{
	struct job *j = arg;
	CUfunction f;

	for (int i = 0; i < j->count; i++)
		lookup_a(&f, j->name);
	return NULL;
}

static void launch(void)
{
	CUfunction fill;
	CUdeviceptr p;
	unsigned char v = 1;
	unsigned long long n = 64;
	void *params[] = { &p, &v, &n };

	CHECK(cuModuleGetFunction(&fill, mod, "gg_fill"));
	CHECK(cuMemAlloc_v2(&p, 64));
	CHECK(cuLaunchKernel(fill, 1, 1, 1, 64, 1, 1, 0, NULL, params, NULL));
	CHECK(cuCtxSynchronize());
	CHECK(cuMemFree_v2(p));
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUfunction f;
	CUkernel k;

	setvbuf(stdout, NULL, _IOLBF, 0);
	CHECK(cuInit(0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CHECK(cuCtxSetCurrent(ctx));
	for (int i = 1; i < argc; i++) {
		char *arg = argv[i], *val = strchr(arg, ':');
		size_t len;

		val = val ? val + 1 : "";
		if (!strncmp(arg, "file:", 5)) {
			CHECK(cuModuleLoad(&mod, val));
			printf("loaded %p\n", (void *)mod);
		} else if (!strncmp(arg, "data:", 5)) {
			char *image = read_file(val, &len);

			CHECK(cuModuleLoadData(&mod, image));
			printf("loaded %p\n", (void *)mod);
		} else if (!strcmp(arg, "static")) {
			Dl_info info;

			CHECK(cuModuleLoadData(&mod, static_ptx));
			dladdr(static_ptx, &info);
			printf("static image at +0x%lx\n",
			       (unsigned long)((char *)static_ptx - (char *)info.dli_fbase));
		} else if (!strncmp(arg, "tryfile:", 8)) {
			printf("load %s: %d\n", val, (int)cuModuleLoad(&mod, val));
		} else if (!strncmp(arg, "trydata:", 8)) {
			char *image = read_file(val, &len);

			printf("load data: %d\n", (int)cuModuleLoadData(&mod, image));
		} else if (!strncmp(arg, "trylib:", 7)) {
			printf("library %s: %d\n", val,
			       (int)cuLibraryLoadFromFile(&lib, val, NULL, NULL, 0, NULL, NULL, 0));
		} else if (!strcmp(arg, "badfatbin")) {
			/* On the heap: no object's mapping names it. */
			uint64_t *header = malloc(2 * sizeof(*header));
			CUcontext c;

			if (!header)
				exit(3);
			header[0] = 0x0010000100000000ull | 0xBA55ED50u;
			header[1] = 1ull << 40;
			CHECK(cuCtxPopCurrent(&c));
			printf("bad fatbin: %d\n", (int)cuModuleLoadData(&mod, header));
			CHECK(cuCtxPushCurrent(c));
			free(header);
		} else if (!strcmp(arg, "trylibmodule")) {
			printf("library module: %d\n", (int)cuLibraryGetModule(&mod, lib));
		} else if (!strncmp(arg, "kfunc:", 6)) {
			CUresult rk = cuLibraryGetKernel(&k, lib, val), rf = CUDA_ERROR_UNKNOWN;

			if (rk == CUDA_SUCCESS)
				rf = cuKernelGetFunction(&f, k);
			printf("kernel %s: %d, function: %d\n", val, (int)rk, (int)rf);
		} else if (!strcmp(arg, "enumfunc")) {
			CUkernel ks[16];
			unsigned n = 0;
			const char *kname;

			CHECK(cuLibraryGetKernelCount(&n, lib));
			n = n < 16 ? n : 16;
			CHECK(cuLibraryEnumerateKernels(ks, n, lib));
			for (unsigned j = 0; j < n; j++) {
				CHECK(cuKernelGetName(&kname, ks[j]));
				printf("enumerated %s: function %d\n", kname,
				       (int)cuKernelGetFunction(&f, ks[j]));
			}
		} else if (!strcmp(arg, "enumlaunch")) {
			CUkernel ks[16];
			unsigned n = 0;

			CHECK(cuLibraryGetKernelCount(&n, lib));
			n = n < 16 ? n : 16;
			CHECK(cuLibraryEnumerateKernels(ks, n, lib));
			for (unsigned j = 0; j < n; j++)
				printf("enumerated launch %u: %d\n", j,
				       (int)cuLaunchKernel((CUfunction)ks[j], 1, 1, 1, 1, 1, 1, 0, NULL,
							   NULL, NULL));
		} else if (!strncmp(arg, "lib:", 4)) {
			CHECK(cuLibraryLoadFromFile(&lib, val, NULL, NULL, 0, NULL, NULL, 0));
			printf("library %p\n", (void *)lib);
		} else if (!strncmp(arg, "get:", 4)) {
			static char get_name[4096]; /* one pointer for every get: */

			snprintf(get_name, sizeof(get_name), "%s", val);
			printf("get %s: %d\n", val, (int)lookup_a(&f, get_name));
		} else if (!strncmp(arg, "get2:", 5)) {
			printf("get2 %s: %d\n", val, (int)lookup_b(&f, val));
		} else if (!strncmp(arg, "helper:", 7)) {
			printf("helper %s: %d\n", val, (int)helper_lookup(&f, mod, val));
		} else if (!strcmp(arg, "helper-overrun")) {
			CUdeviceptr p;

			int (*wr)(CUdeviceptr, const void *,
				  size_t) = (int (*)(CUdeviceptr, const void *,
						     size_t))dlsym(RTLD_DEFAULT, "fakecuda_write");
			unsigned char past = 0xab;

			CHECK(helper_alloc(&p, 64));
			CHECK(cuMemsetD8_v2(p, 0xab, 64));
			/* One byte past the end, as a kernel would write it: a set that
			 * long is refused under red zones as without them. */
			if (!wr || wr(p + 64, &past, 1))
				fprintf(stderr, "app-audit: no fakecuda_write to write past the end\n");
			printf("helper overrun: %d\n", (int)cuMemFree_v2(p));
		} else if (!strncmp(arg, "kernel:", 7)) {
			printf("kernel %s: %d\n", val, (int)cuLibraryGetKernel(&k, lib, val));
		} else if (!strcmp(arg, "libmodule")) {
			CHECK(cuLibraryGetModule(&mod, lib));
			printf("library module %p\n", (void *)mod);
		} else if (!strncmp(arg, "reload:", 7)) {
			CUmodule was = mod;

			CHECK(cuModuleUnload(mod));
			CHECK(cuModuleLoad(&mod, val));
			printf("reloaded: handle %s\n", mod == was ? "reused" : "new");
		} else if (!strcmp(arg, "stale")) {
			CHECK(cuModuleUnload(mod));
			printf("stale %p\n", (void *)mod);
		} else if (!strncmp(arg, "threads:", 8)) {
			int n = atoi(val), count = atoi(strchr(val, ':') + 1);
			struct job job = { count, strchr(strchr(val, ':') + 1, ':') + 1 };
			pthread_t t[64];

			for (int j = 0; j < n; j++)
				pthread_create(&t[j], NULL, thread_main, &job);
			for (int j = 0; j < n; j++)
				pthread_join(t[j], NULL);
			printf("threads done\n");
		} else if (!strcmp(arg, "launch")) {
			launch();
			printf("launched\n");
		} else if (!strncmp(arg, "launches:", 9)) {
			for (int left = atoi(val); left > 0; left--)
				launch();
			printf("launched %d\n", atoi(val));
		} else if (!strcmp(arg, "unwinder")) {
			char line[512], buf[256];
			int mapped = 0;
			FILE *maps = fopen("/proc/self/maps", "r");

			while (maps && fgets(line, sizeof(line), maps))
				mapped |= strstr(line, "libunwind.so.8") != NULL;
			if (maps)
				fclose(maps);
			printf("libunwind mapped: %s\n", mapped ? "yes" : "no");
			printf("_Unwind_RaiseException -> %s\n",
			       describe(dlsym(RTLD_DEFAULT, "_Unwind_RaiseException"), buf,
					sizeof(buf)));
			printf("_ULx86_64_init_local -> %s\n",
			       describe(dlsym(RTLD_DEFAULT, "_ULx86_64_init_local"), buf, sizeof(buf)));
		} else if (!strcmp(arg, "sync")) {
			CHECK(cuCtxSynchronize());
			printf("synced\n");
		} else {
			fprintf(stderr, "app-audit: unknown step '%s'\n", arg);
			return 64;
		}
	}
	printf("done\n");
	return 0;
}
