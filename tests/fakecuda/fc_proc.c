/*
 * Entry-point lookup (cuGetProcAddress), error strings, the driver version,
 * and the call counters.  All of it works before cuInit.
 *
 * The lookup table and the counters are both generated from entrypoints.h.
 * cuGetProcAddress returns fc_self_<sym>, a hidden alias of the exported
 * function: the same address dlsym() gives for that symbol, and immune to
 * symbol interposition (an LD_PRELOADed shim exporting cuMemAlloc_v2 does not
 * change what the driver hands out, exactly as with NVIDIA's driver).
 */
#include "fc_internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fakecuda.h"
#include "fc_errors.h"

atomic_ulong fc_calls[FC_EP_COUNT];

atomic_uint fc_raise_ep = FC_EP_COUNT;
static atomic_int raise_sig;

typedef struct proc_entry {
    const char *symbol;
    const char *base;
    int version;
    bool per_thread;
    void *fn;
} proc_entry;

static const proc_entry table[] = {
#define FC_PROC_ENTRY(sym, base, ver, pt) { #sym, #base, ver, pt, (void *)fc_self_##sym },
    FAKECUDA_ENTRY_POINTS(FC_PROC_ENTRY)
#undef FC_PROC_ENTRY
};

_Static_assert(sizeof table / sizeof table[0] == FC_EP_COUNT, "one table entry per entry point");

/* cuMemAlloc_v2 behind an address no symbol names (FAKECUDA_PROCADDR_UNEXPORTED). */
static CUresult unexported_cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    return fc_self_cuMemAlloc_v2(dptr, bytesize);
}

/*
 * The variant of `symbol` for cudaVersion: the highest version not above
 * it; with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the per-thread
 * variant when there is one ("If a per-thread version is not found, the API
 * will return the legacy version").  CU_GET_PROC_ADDRESS_DEFAULT means
 * legacy here: the driver was not built with per-thread default streams.
 */
static CUresult get_proc(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                         CUdriverProcAddressQueryResult *status)
{
    const cuuint64_t known = CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                             CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    if (pfn)
        *pfn = NULL;
    /* "If the specified CUDA version is greater than the driver version,
     * the API will return CUDA_ERROR_INVALID_VALUE." */
    if (!symbol || !pfn || (flags & ~known) || cudaVersion > FC_DRIVER_VERSION)
        return CUDA_ERROR_INVALID_VALUE;

    bool want_pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    bool named = false;
    const proc_entry *legacy = NULL, *pt = NULL;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const proc_entry *e = &table[i];
        if (strcmp(e->base, symbol) != 0)
            continue;
        if (e->version > FC_DRIVER_VERSION)
            continue; /* an older driver's: it has no such entry point */
        named = true;
        if (e->version > cudaVersion)
            continue;
        const proc_entry **best = e->per_thread ? &pt : &legacy;
        if (!*best || e->version > (*best)->version)
            *best = e;
    }
    const proc_entry *hit = want_pt && pt ? pt : legacy;
    if (!hit) {
        if (status)
            *status = named ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                            : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = hit->fn;
    /* A test knob: the answer for cuMemAlloc is a function the driver does
     * not export, as an internal entry point would be. */
    const char *unexported = getenv("FAKECUDA_PROCADDR_UNEXPORTED");
    if (unexported && !strcmp(unexported, symbol) && hit->fn == (void *)fc_self_cuMemAlloc_v2)
        *pfn = (void *)unexported_cuMemAlloc_v2;
    if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

FC_EXPORT(cuGetProcAddress, (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags),
          (symbol, pfn, cudaVersion, flags))
{
    return get_proc(symbol, pfn, cudaVersion, flags, NULL);
}

FC_EXPORT(cuGetProcAddress_v2,
          (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
           CUdriverProcAddressQueryResult *symbolStatus),
          (symbol, pfn, cudaVersion, flags, symbolStatus))
{
    return get_proc(symbol, pfn, cudaVersion, flags, symbolStatus);
}

/*
 * The undocumented export tables (what the CUDA runtime asks for by UUID)
 * do not exist here: the fake serves the driver API only.
 */
FC_EXPORT(cuGetExportTable, (const void **ppExportTable, const CUuuid *pExportTableId),
          (ppExportTable, pExportTableId))
{
    if (!ppExportTable || !pExportTableId)
        return CUDA_ERROR_INVALID_VALUE;
    *ppExportTable = NULL;
    return CUDA_ERROR_NOT_SUPPORTED;
}

FC_EXPORT(cuDriverGetVersion, (int *driverVersion), (driverVersion))
{
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = FC_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Error strings (fc_errors.h is generated from cuda.h by gen_errors.py)     */
/* ------------------------------------------------------------------------ */

typedef struct error_entry {
    CUresult code;
    const char *name;
    const char *text;
} error_entry;

static const error_entry errors[] = {
#define FC_ERROR_ENTRY(name, text) { name, #name, text },
    FAKECUDA_CUDA_ERRORS(FC_ERROR_ENTRY)
#undef FC_ERROR_ENTRY
};

static const error_entry *find_error(CUresult code)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == code)
            return &errors[i];
    return NULL;
}

FC_EXPORT(cuGetErrorName, (CUresult error, const char **pStr), (error, pStr))
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    const error_entry *e = find_error(error);
    *pStr = e ? e->name : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_EXPORT(cuGetErrorString, (CUresult error, const char **pStr), (error, pStr))
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    const error_entry *e = find_error(error);
    *pStr = e ? e->text : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ------------------------------------------------------------------------ */
/* Call counters                                                             */
/* ------------------------------------------------------------------------ */

FC_PUBLIC unsigned long fakecuda_calls(const char *entry_point)
{
    if (!entry_point)
        return 0;
    for (size_t i = 0; i < FC_EP_COUNT; i++)
        if (strcmp(table[i].symbol, entry_point) == 0)
            return atomic_load_explicit(&fc_calls[i], memory_order_relaxed);
    return 0;
}

FC_PUBLIC void fakecuda_reset_calls(void)
{
    for (size_t i = 0; i < FC_EP_COUNT; i++)
        atomic_store_explicit(&fc_calls[i], 0, memory_order_relaxed);
    atomic_store_explicit(&fc_async_waits, 0, memory_order_relaxed);
}

/* ------------------------------------------------------------------------ */
/* The census: calls by what they cost a GPU                                */
/* ------------------------------------------------------------------------ */

/*
 * Asynchronous calls that waited for their stream anyway (fc_copy.c: an
 * async copy into pageable host memory, or between host buffers); each is
 * counted as a host wait instead of queued device work.  Relaxed, like
 * fc_calls.
 */
atomic_ulong fc_async_waits;

static bool has(const char *sym, const char *part)
{
    return strstr(sym, part) != NULL;
}

static bool starts(const char *sym, const char *prefix)
{
    return strncmp(sym, prefix, strlen(prefix)) == 0;
}

/*
 * The kind of a call of entry point `sym`, by what the call costs on a GPU,
 * from CUDA's "API synchronization behavior" (the driver API reference) and
 * the Programming Guide's "Implicit Synchronization".  The first rule that
 * matches decides:
 *
 *   host wait     the host thread waits for the device: cuStreamSynchronize,
 *                 cuEventSynchronize, cuCtxSynchronize; cuMemFree and
 *                 cuMemFreeHost (the driver cannot release memory the device
 *                 may still use: they wait for the device); every synchronous
 *                 copy that may touch host memory (device to host "returns
 *                 only once the copy has completed", pinned host to device
 *                 "is synchronous with respect to the host", pageable host to
 *                 device "a stream sync is performed before the copy", host
 *                 to host "fully synchronous"; cuMemcpy, 2D and 3D take their
 *                 direction from their arguments, so they count here); and an
 *                 Async copy that waited (fc_async_waits: device to pageable
 *                 host memory, "the function will return only once the copy
 *                 has completed", or host to host).
 *   device work   work queued in stream order that the host does not wait
 *                 for: every *Async call (copies, memsets, stream-ordered
 *                 allocations and frees), launches, graph launches, event
 *                 records, cuStreamWaitEvent, stream callbacks; synchronous
 *                 device-to-device (and array, and peer) copies ("no
 *                 host-side synchronization is performed"); and synchronous
 *                 memsets of device memory ("asynchronous with respect to the
 *                 host except when the target is pinned host memory", which
 *                 no device of the fake reaches).
 *   query         the host asks and the device need not answer by running
 *                 work: cuStreamQuery, cuEventQuery, cuEventElapsedTime,
 *                 pointer and attribute queries, every cu*Get* and Is* call,
 *                 the occupancy calculator.
 *   creation      a driver object is made: every cu*Create* (events,
 *                 streams, pools, graphs, contexts, arrays, linkers,
 *                 physical memory), graph instantiation and graph nodes,
 *                 module and library loads, primary context retains.
 *   other         the rest (plain allocations, destructions, settings,
 *                 initialisation, context lifetimes).
 *
 * It is decided when the census is read, not per call: the hot path pays
 * one relaxed increment (FC_EXPORT).
 */
static int call_kind(const char *sym)
{
    bool async = has(sym, "Async");
    if (has(sym, "Synchronize") || !strcmp(sym, "cuMemFree") || !strcmp(sym, "cuMemFree_v2") ||
        !strcmp(sym, "cuMemFreeHost"))
        return FAKECUDA_HOST_WAIT;
    if (starts(sym, "cuMemcpy") && !async && !has(sym, "DtoD") && !has(sym, "DtoA") &&
        !has(sym, "AtoD") && !has(sym, "Peer"))
        return FAKECUDA_HOST_WAIT;
    if (async || starts(sym, "cuMemcpy") || starts(sym, "cuMemset") || starts(sym, "cuLaunch") ||
        starts(sym, "cuGraphLaunch") || starts(sym, "cuEventRecord") ||
        starts(sym, "cuStreamWaitEvent") || starts(sym, "cuStreamAddCallback"))
        return FAKECUDA_DEVICE_WORK;
    if (starts(sym, "cuStreamQuery") || !strcmp(sym, "cuEventQuery") ||
        starts(sym, "cuEventElapsedTime") || has(sym, "Get") || has(sym, "IsCapturing") ||
        starts(sym, "cuOccupancy") || !strcmp(sym, "cuDeviceComputeCapability") ||
        starts(sym, "cuDeviceTotalMem") || !strcmp(sym, "cuDeviceCanAccessPeer"))
        return FAKECUDA_QUERY;
    if (has(sym, "Create") || starts(sym, "cuGraphInstantiate") || starts(sym, "cuGraphAdd") ||
        starts(sym, "cuModuleLoad") || starts(sym, "cuLibraryLoad") ||
        !strcmp(sym, "cuDevicePrimaryCtxRetain"))
        return FAKECUDA_CREATION;
    return FAKECUDA_OTHER;
}

FC_PUBLIC int fakecuda_call_kind(const char *entry_point)
{
    if (!entry_point)
        return -1;
    for (size_t i = 0; i < FC_EP_COUNT; i++)
        if (strcmp(table[i].symbol, entry_point) == 0)
            return call_kind(table[i].symbol);
    return -1;
}

FC_PUBLIC void fakecuda_get_census(fakecuda_census *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < FC_EP_COUNT; i++) {
        unsigned long n = atomic_load_explicit(&fc_calls[i], memory_order_relaxed);
        out->calls += n;
        out->kind[call_kind(table[i].symbol)] += n;
    }
    /* An Async copy that waited: a host wait, not queued work. */
    unsigned long waited = atomic_load_explicit(&fc_async_waits, memory_order_relaxed);
    if (waited > out->kind[FAKECUDA_DEVICE_WORK])
        waited = out->kind[FAKECUDA_DEVICE_WORK];
    out->kind[FAKECUDA_DEVICE_WORK] -= waited;
    out->kind[FAKECUDA_HOST_WAIT] += waited;
}

static const char *const kind_names[FAKECUDA_KINDS] = {
    [FAKECUDA_HOST_WAIT] = "host_waits", [FAKECUDA_DEVICE_WORK] = "device_work",
    [FAKECUDA_QUERY] = "queries",        [FAKECUDA_CREATION] = "creations",
    [FAKECUDA_OTHER] = "other",
};

/*
 * FAKECUDA_CENSUS: the census as JSON, at process exit (after the exit
 * handlers, so a shim's exit work is in it):
 *   { "calls": N, "host_waits": N, "device_work": N, "queries": N,
 *     "creations": N, "other": N, "async_waits": N,
 *     "entry_points": { "cuMemAlloc_v2": { "kind": "other", "count": N }, ... } }
 * Written to a temporary file and renamed, so a reader never sees half.
 */
__attribute__((destructor)) static void write_census(void)
{
    const char *path = getenv("FAKECUDA_CENSUS");
    if (!path || !*path)
        return;
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        fprintf(stderr, "fakecuda: FAKECUDA_CENSUS=%s is too long\n", path);
        return;
    }
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "fakecuda: cannot write FAKECUDA_CENSUS=%s\n", path);
        return;
    }
    fakecuda_census c;
    fakecuda_get_census(&c);
    fprintf(f, "{ \"calls\": %lu", c.calls);
    for (int k = 0; k < FAKECUDA_KINDS; k++)
        fprintf(f, ", \"%s\": %lu", kind_names[k], c.kind[k]);
    fprintf(f, ", \"async_waits\": %lu,\n  \"entry_points\": {",
            atomic_load_explicit(&fc_async_waits, memory_order_relaxed));
    bool first = true;
    for (size_t i = 0; i < FC_EP_COUNT; i++) {
        unsigned long n = atomic_load_explicit(&fc_calls[i], memory_order_relaxed);
        if (!n)
            continue;
        fprintf(f, "%s\n    \"%s\": { \"kind\": \"%s\", \"count\": %lu }", first ? "" : ",",
                table[i].symbol, kind_names[call_kind(table[i].symbol)], n);
        first = false;
    }
    fprintf(f, "\n  }\n}\n");
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "fakecuda: cannot write FAKECUDA_CENSUS=%s\n", path);
        unlink(tmp);
    }
}

FC_PUBLIC int fakecuda_raise_in(const char *entry_point, int sig)
{
    for (size_t i = 0; i < FC_EP_COUNT; i++) {
        if (entry_point && strcmp(table[i].symbol, entry_point) == 0) {
            atomic_store(&raise_sig, sig);
            atomic_store(&fc_raise_ep, (unsigned)i);
            return 0;
        }
    }
    return -1;
}

/* The armed call: disarmed first, so the signal's handler may call the
 * driver (this entry point too) without raising it again. */
void fc_raise_now(void)
{
    unsigned ep = atomic_exchange(&fc_raise_ep, FC_EP_COUNT);
    if (ep != FC_EP_COUNT)
        raise(atomic_load(&raise_sig));
}

/* FAKECUDA_CALLS_FILE: "name count" per entry point called, in list order. */
__attribute__((destructor)) static void write_calls_file(void)
{
    const char *path = getenv("FAKECUDA_CALLS_FILE");
    if (!path || !*path)
        return;
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "fakecuda: cannot write FAKECUDA_CALLS_FILE=%s\n", path);
        return;
    }
    for (size_t i = 0; i < FC_EP_COUNT; i++) {
        unsigned long n = atomic_load_explicit(&fc_calls[i], memory_order_relaxed);
        if (n)
            fprintf(f, "%s %lu\n", table[i].symbol, n);
    }
    fclose(f);
}
