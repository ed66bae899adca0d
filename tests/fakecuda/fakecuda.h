/*
 * Test controls of the fake CUDA driver (tests/fakecuda/libcuda.so.1).
 *
 * The fake exports these non-cu names next to the driver API.  Test programs
 * should resolve them at run time, e.g.
 *
 *     fakecuda_read_fn rd = (fakecuda_read_fn)dlsym(RTLD_DEFAULT, "fakecuda_read");
 *     if (rd) ...   // running on the fake; absent on a real driver
 *
 * so that the same program also runs against NVIDIA's libcuda.so.1.
 *
 * Environment variables read by the fake:
 *   FAKECUDA_DEVICES=N      number of devices (default 1, at most 8); 0 makes
 *                           cuInit fail with CUDA_ERROR_NO_DEVICE
 *   FAKECUDA_MEM_LIMIT=B    cap on live allocated bytes, decimal (read at cuInit)
 *   FAKECUDA_MANAGED=1      the device has managed memory, reached by copies
 *                           only (read at cuInit; default: none)
 *   FAKECUDA_REUSE_HANDLES=1  a module's function handles are handed out again
 *                           by the next module loaded with as many functions
 *                           (as NVIDIA's may be: a handle is opaque, and valid
 *                           only until its module is unloaded; read at cuInit)
 *   FAKECUDA_CALLS_FILE=P   at process exit, write "name count" lines for every
 *                           cu* entry point called at least once
 *   FAKECUDA_CENSUS=P       at process exit, write the census (below) as JSON:
 *                           calls by kind, and each entry point called with
 *                           its kind and count (fc_proc.c)
 *   FAKECUDA_TIMELINE=1     the device timeline (fc_stream.c): queued work
 *                           has a modelled completion time, whatever forces
 *                           it first waits until then (so a host wait costs
 *                           wall time, as on a GPU), cuStreamQuery and
 *                           cuEventQuery answer CUDA_ERROR_NOT_READY until
 *                           then, and event timestamps are those times.  Each
 *                           op lasts FAKECUDA_OP_NS (default 1000), plus
 *                           FAKECUDA_KERNEL_NS for a kernel (5000), or per KiB
 *                           FAKECUDA_COPY_NS_PER_KIB for a copy (100) or
 *                           FAKECUDA_MEMSET_NS_PER_KIB for a memset (50).
 *                           All read at cuInit.  Off by default: with it, what
 *                           a shim that queries events sees depends on timing
 *                           (gpuguard's stream-ordered fills, see BENCHMARKS.md
 *                           §12), and the suite's outcomes must not.
 *   FAKECUDA_FAIL_LAUNCH=N:CODE
 *                           the N-th launch returns the CUresult CODE and
 *                           queues nothing (the context stays usable)
 *   FAKECUDA_STICKY=N:CODE  the N-th launch succeeds and its kernel runs; once
 *                           it has run, its context fails with the sticky
 *                           CUresult CODE, as after a kernel fault (below)
 *     Both read at cuInit, in decimal: N from 1, CODE a CUresult other than
 *     CUDA_SUCCESS that cuGetErrorName names (e.g. 700 ILLEGAL_ADDRESS, 701
 *     LAUNCH_OUT_OF_RESOURCES, 719 LAUNCH_FAILED); a malformed value is
 *     reported on stderr and ignored.  N counts the launches of every launch
 *     entry point (cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel
 *     and their _ptsz forms) in the process, from cuInit on, that passed the
 *     launch's own checks (handles, geometry, parameters); launches refused
 *     for those are not counted, the one FAKECUDA_FAIL_LAUNCH fails is.  When
 *     both name the same launch, it fails.
 *   CUDA_MODULE_LOADING=LAZY|EAGER
 *                           NVIDIA's own variable, read at cuInit as its
 *                           driver reads it; cuModuleGetLoadingMode reports
 *                           it.  The fake's default is EAGER (NVIDIA's driver
 *                           defaults to LAZY since CUDA 12.2 on Linux), so an
 *                           image without code for the device is refused when
 *                           it is loaded; another value is reported on stderr
 *                           and ignored.  With LAZY, cuLibraryLoadData and
 *                           cuLibraryLoadFromFile take such an image and
 *                           cuLibraryGetKernel, cuKernelGetName and
 *                           cuKernelGetParamInfo work, but what needs its code
 *                           in a context returns CUDA_ERROR_NO_BINARY_FOR_GPU:
 *                           cuKernelGetFunction, cuLibraryGetModule, and a
 *                           launch of one of its CUkernels (refused like a bad
 *                           handle: not counted by the knobs above).
 *                           cuModuleLoad* refuse it at once in both modes (a
 *                           module is loaded into the current context by that
 *                           call; lazy loading defers only its kernels).
 *
 * Behaviour worth knowing when writing a test against the fake:
 *   - Every device is compute capability 9.0 (sm_90).  Code runs on it when
 *     it is SASS (an ELF cubin, or a fatbin's ELF entry) for the same major
 *     version and a minor version no higher (so sm_90 only: sm_80 or sm_86
 *     SASS does not), or PTX whose target is no newer than the device
 *     (.target sm_XY or a fatbin PTX entry's arch, XY <= 90) and whose ISA
 *     this driver's JIT reads (.version 9.x at most, CUDA 13.0's).  A fatbin
 *     runs by its SASS when it has some for the device, else by its newest
 *     such PTX; a fatbin or cubin with neither is
 *     CUDA_ERROR_NO_BINARY_FOR_GPU (when, see CUDA_MODULE_LOADING above).  A
 *     bare PTX text targeting a newer GPU is CUDA_ERROR_INVALID_PTX, and one
 *     of a newer ISA CUDA_ERROR_UNSUPPORTED_PTX_VERSION, in both modes.
 *     Compressed fatbin entries are not read (CUDA_ERROR_NOT_SUPPORTED, and
 *     a note on stderr): build with `fatbinary --compress=false`.
 *   - Device addresses lie in a PROT_NONE reservation: dereferencing one on
 *     the host faults.  Allocations are 256-byte aligned; fresh memory holds
 *     a non-zero garbage pattern.  cuMemAllocPitch_v2's pitch is the width
 *     rounded up to 512 bytes (ElementSizeBytes 4, 8 or 16 only).
 *   - Async work (memcpy/memset *Async, launches, cuMemFreeAsync, event
 *     records) is queued and runs only when forced: cuStreamSynchronize,
 *     cuStreamQuery, cuEventSynchronize/Query, cuCtxSynchronize, cuMemFree_v2,
 *     context destroy/reset, or a synchronous call on the legacy stream, which
 *     first runs the context's blocking streams (never CU_STREAM_NON_BLOCKING
 *     ones).  fakecuda_read does not run anything.  With FAKECUDA_TIMELINE=1
 *     a query runs the work only once its modelled time has passed (else
 *     CUDA_ERROR_NOT_READY), and the rest wait for that time first.
 *   - A copy or set checks its whole device extent first (a 2D or 3D
 *     side's from its first byte to its last: the last row needs only its
 *     width): it must lie inside one allocation's requested size, else
 *     CUDA_ERROR_INVALID_VALUE and nothing is done (fc_copy3d.c).  CUDA
 *     arrays (cuArrayCreate_v2, cuArray3DCreate_v2) exist for copies only,
 *     of the plain formats (8, 16, 32-bit integers, half, float; 1, 2 or 4
 *     channels), stored in a device allocation of their own.
 *   - Synchronous memset/memcpy complete before they return; so does an
 *     async device-to-host copy into pageable memory (anything but
 *     cuMemHostAlloc memory), after its stream's earlier work, as NVIDIA's
 *     driver does.
 *   - A kernel touching a byte outside every live allocation's extent kills
 *     its context, as on a GPU: CUDA_ERROR_ILLEGAL_ADDRESS from the call that
 *     runs it and from every later call on that context (sticky) until
 *     cuCtxDestroy / cuDevicePrimaryCtxReset; its queued work is dropped.
 *     FAKECUDA_STICKY does the same with its own code, once its kernel has
 *     run (when something runs the queued work, above), unless that kernel
 *     faulted by itself first.
 *   - Kernels are host implementations chosen by .entry name (kernels.ptx:
 *     gg_fill, gg_overrun, gg_copy, gg_sum, gg_overrun_second) for an entry
 *     declared with the same parameters; other entries launch as no-ops.
 *     Their attributes (cuFuncGetAttribute, the occupancy calculator) are
 *     those of an sm_90 build: the registers ptxas reports for each
 *     kernels.ptx entry, no static shared memory.
 *   - Every entry's parameters are read from its image, as ptxas lays them
 *     out: from the PTX .param list (each at a multiple of its .align, else
 *     of its type's size; 4352 bytes at most below PTX ISA 8.1, 32764 from
 *     it), or a cubin's .nv.info section.  cuFuncGetParamInfo and
 *     cuKernelGetParamInfo report them; a launch needs one non-NULL
 *     kernelParams pointer each, or an `extra` buffer of exactly their size,
 *     with no padding after the last one (larger:
 *     CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, as NVIDIA's driver answers;
 *     smaller: CUDA_ERROR_INVALID_VALUE).  A cubin without an entry's
 *     .nv.info section (none that ptxas writes) gives it the parameters of
 *     the fake kernel of that name, or none.  .texref/.samplerref/.surfref
 *     parameters are CUDA_ERROR_NOT_SUPPORTED.
 *   - Modules hold kernels only: cuModuleGetGlobal finds no variable.  The
 *     JIT linker (cuLink*) takes PTX, cubins and fatbins and writes a cubin
 *     of their entries that cuModuleLoadData loads.
 *   - What the device reports it cannot do, it does not: no mapped host
 *     memory (cuMemHostAlloc memory is host memory for copies, and
 *     cuMemHostGetDevicePointer fails), no host registration, no managed
 *     memory, no peer access, and no IPC mapping (cuIpcGetMemHandle makes a
 *     handle, cuIpcOpenMemHandle maps none).  Page-locked allocations die
 *     with their context.
 *   - A stream callback runs when its stream's earlier work has run, on the
 *     thread that forces it (with FAKECUDA_TIMELINE=1, on a thread of the
 *     fake's once the device reaches it, if nothing forced it first); the API answers CUDA_ERROR_NOT_PERMITTED inside
 *     it.  Event timing is the host clock at the moment a record ran.
 *   - Virtual memory management: granularity 2 MiB, minimum and
 *     recommended.  cuMemCreate makes device memory only (no host
 *     locations, no exportable handle types), counted as one allocation
 *     until released and unmapped.  A cuMemMap mapping has no access until
 *     cuMemSetAccess gives its own device read or read-write (no peer
 *     access): until then copies and memsets on it are
 *     CUDA_ERROR_INVALID_VALUE and a kernel touching it faults, as on
 *     reserved but unmapped addresses.  cuMemUnmap and cuMemSetAccess take
 *     whole mappings and run all queued work first; cuMemAddressFree
 *     refuses a range that is still mapped.  fakecuda_read/write reach a
 *     mapping whatever its access.
 *   - Stream capture (fc_graph.c has the details): work queued to a
 *     capturing stream becomes graph nodes instead of running; a launch
 *     of the instantiated graph queues them, in capture order, on the
 *     launch stream.  Events fork and join captures across streams.
 *     Calls that would wait for a capture, or that the thread's capture
 *     mode prohibits (cuMemAlloc, cuMemFree, synchronous copies, event
 *     queries, context synchronisation), fail as cuda.h documents and
 *     invalidate the capture.  cuMemAllocAsync while capturing reserves an
 *     address at once; memory is behind it only from the moment a launch's
 *     allocation node runs until its free runs (fakecuda_read fails
 *     outside that time, a kernel faults).
 *   - Memory pools: each device's default pool, current until
 *     cuDeviceSetMemPool names a pool made by cuMemPoolCreate (device
 *     locations only, no IPC handle types; maxSize caps it).  A pool keeps
 *     no freed memory, so reserved == used.  cuMemPoolDestroy of a pool
 *     with live allocations succeeds at once; they stay usable until freed.
 *
 * Where a peer's tests see that this is not a GPU: 50 of the 267 tests of
 * numba-cuda 0.30.4's numba.cuda.tests.cudadrv fail here without the shim
 * (tests/test-peer-suite.c lists them in its log), none for want of an entry
 * point.  By cause, none of them cheap to remove:
 *   - a kernel that is not one of kernels.ptx's runs as a no-op, so what
 *     numba's @cuda.jit, NVRTC or a test's own PTX computes is not there
 *     (26: array setitem, records, transposes, the driver and linker tests
 *     that check a kernel's output); it would take a PTX interpreter;
 *   - function attributes are those of the fake's kernels: a compiled
 *     kernel's registers and shared, constant and local memory are not
 *     measured (6 test_linker tests); it would take ptxas;
 *   - no mapped, registered or managed memory (15: test_host_alloc,
 *     test_pinned, test_managed_alloc, parts of test_cuda_memory and
 *     test_deallocations): the device says it cannot, as one without them
 *     would, but numba-cuda assumes every GPU can;
 *   - modules hold no variables, so cuModuleGetGlobal and cuLibraryGetGlobal
 *     find none (2 test_module_callbacks tests);
 *   - cuda.core's graph builder captures and then stops at instantiation,
 *     on one of the graph entry points the fake does not have (cuda.core
 *     binds graph user objects, cuGraphExecUpdate and more), and the kernel
 *     it captures is a numba kernel (a no-op here) (1 test_cuda_driver
 *     test).
 */
#ifndef GG_TESTS_FAKECUDA_FAKECUDA_H
#define GG_TESTS_FAKECUDA_FAKECUDA_H

#include <stddef.h>

#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Copy n bytes of "device" memory at src to host memory dst (read) or host
 * memory src to device memory dst (write), immediately and ignoring stream
 * order (queued work is not run first).  The range must lie inside one live
 * allocation, counting its extent as the driver made it (the requested size
 * rounded up to the 256-byte allocation granularity), so guard bytes a shim
 * keeps inside its own larger allocation are reachable.
 * Returns 0, or -EFAULT when the range is not inside one live allocation.
 */
int fakecuda_read(CUdeviceptr src, void *dst, size_t n);
int fakecuda_write(CUdeviceptr dst, const void *src, size_t n);

/* Cap on the total live allocated bytes (requested sizes); 0 = no cap. */
void fakecuda_set_mem_limit(size_t bytes);
/* Total requested bytes of live allocations (all devices and contexts). */
size_t fakecuda_mem_used(void);
/* Number of live allocations (all devices and contexts). */
size_t fakecuda_live_allocations(void);

/*
 * How many times the exported entry point `entry_point` (an exact exported
 * name such as "cuMemAlloc_v2") was called; 0 for unknown names.
 */
unsigned long fakecuda_calls(const char *entry_point);
/* Zero every call counter. */
void fakecuda_reset_calls(void);

/*
 * A test hook: the next call of the exported entry point `entry_point`, from
 * any thread, raises signal `sig` on the calling thread (raise(3)) before it
 * does its work, as a signal that arrives inside a driver call does.  Once:
 * the call disarms it first.  Returns 0, or -1 for an unknown name.
 */
int fakecuda_raise_in(const char *entry_point, int sig);

/*
 * The census: every call of every entry point, by what it costs a GPU
 * (fc_proc.c has the rule, from CUDA's "API synchronization behavior"):
 * host waits, queued device work, queries, object creations and the rest.
 * An Async copy that waited for its stream (into pageable host memory, or
 * host to host) counts as a host wait.  fakecuda_reset_calls zeroes it.
 */
enum fakecuda_call_kind {
    FAKECUDA_HOST_WAIT,
    FAKECUDA_DEVICE_WORK,
    FAKECUDA_QUERY,
    FAKECUDA_CREATION,
    FAKECUDA_OTHER,
    FAKECUDA_KINDS
};
typedef struct fakecuda_census {
    unsigned long calls;                /* every entry point, all kinds */
    unsigned long kind[FAKECUDA_KINDS]; /* by enum fakecuda_call_kind */
} fakecuda_census;
void fakecuda_get_census(fakecuda_census *out);
/* The kind of an exported entry point's calls (enum fakecuda_call_kind), or
 * -1 for a name the fake does not export.  An Async copy is DEVICE_WORK here;
 * the census moves those that waited. */
int fakecuda_call_kind(const char *entry_point);

typedef int (*fakecuda_read_fn)(CUdeviceptr, void *, size_t);
typedef int (*fakecuda_write_fn)(CUdeviceptr, const void *, size_t);
typedef void (*fakecuda_set_mem_limit_fn)(size_t);
typedef size_t (*fakecuda_mem_used_fn)(void);
typedef size_t (*fakecuda_live_allocations_fn)(void);
typedef unsigned long (*fakecuda_calls_fn)(const char *);
typedef void (*fakecuda_reset_calls_fn)(void);
typedef int (*fakecuda_raise_in_fn)(const char *, int);
typedef void (*fakecuda_get_census_fn)(fakecuda_census *);
typedef int (*fakecuda_call_kind_fn)(const char *);

#ifdef __cplusplus
}
#endif

#endif /* GG_TESTS_FAKECUDA_FAKECUDA_H */
