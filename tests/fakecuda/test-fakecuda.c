/*
 * Unit tests of the fake CUDA driver (libcuda.so.1 in this directory).
 *
 * Criterion runs every test in a process of its own, so each one starts
 * with an uninitialised driver.  The tests pin the documented behaviour the
 * rest of the suite relies on: result codes, queued-work ordering, pointer
 * lookups, cuGetProcAddress, kernels, limits and the test controls.
 */
#include <criterion/criterion.h>
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cudaProfiler.h>

#include "fakecuda.h"

static const char *errname(CUresult rc)
{
    const char *s = NULL;
    return cuGetErrorName(rc, &s) == CUDA_SUCCESS ? s : "(unknown CUresult)";
}

#define EXPECT(want, call)                                                            \
    do {                                                                              \
        CUresult rc_ = (call);                                                        \
        cr_assert_eq(rc_, (want), "%s returned %s, expected %s", #call, errname(rc_), \
                     errname(want));                                                  \
    } while (0)
#define OK(call) EXPECT(CUDA_SUCCESS, call)

/* cuInit and the primary context of device 0, current on this thread. */
static CUcontext primary(void)
{
    CUcontext c = NULL;
    OK(cuInit(0));
    OK(cuDevicePrimaryCtxRetain(&c, 0));
    OK(cuCtxSetCurrent(c));
    return c;
}

static CUmodule kernels(void)
{
    CUmodule m = NULL;
    OK(cuModuleLoad(&m, FAKECUDA_PTX));
    return m;
}

static CUfunction function(CUmodule m, const char *name)
{
    CUfunction f = NULL;
    OK(cuModuleGetFunction(&f, m, name));
    return f;
}

static CUdeviceptr alloc(size_t n)
{
    CUdeviceptr p = 0;
    OK(cuMemAlloc_v2(&p, n));
    return p;
}

static unsigned char byte_at(CUdeviceptr p)
{
    unsigned char b = 0;
    cr_assert_eq(fakecuda_read(p, &b, 1), 0);
    return b;
}

static CUresult launch3(CUfunction f, CUstream s, void *a, void *b, void *c)
{
    void *params[] = { a, b, c };
    return cuLaunchKernel(f, 4, 1, 1, 128, 1, 1, 0, s, params, NULL);
}

static CUresult fill(CUfunction gg_fill, CUstream s, CUdeviceptr p, unsigned char v, uint64_t n)
{
    return launch3(gg_fill, s, &p, &v, &n);
}

/* ------------------------------------------------------------------------ */
/* Initialisation and devices                                                */
/* ------------------------------------------------------------------------ */

Test(fakecuda, driver_version_works_before_init_and_is_13000)
{
    int v = 0;
    OK(cuDriverGetVersion(&v));
    cr_assert_eq(v, 13000);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuDriverGetVersion(NULL));
}

Test(fakecuda, calls_before_init_are_not_initialized)
{
    int n;
    CUdeviceptr p;
    CUfunction f;
    CUcontext c;
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&n));
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuMemAlloc_v2(&p, 16));
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuCtxSynchronize());
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuCtxGetCurrent(&c));
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuModuleGetFunction(&f, NULL, "gg_fill"));
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuDevicePrimaryCtxRetain(&c, 0));
}

Test(fakecuda, init_with_nonzero_flags_is_invalid_value)
{
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuInit(1));
    OK(cuInit(0));
    OK(cuInit(0));
}

Test(fakecuda, zero_devices_makes_init_fail_with_no_device)
{
    int n;
    setenv("FAKECUDA_DEVICES", "0", 1);
    EXPECT(CUDA_ERROR_NO_DEVICE, cuInit(0));
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&n));
}

Test(fakecuda, device_count_follows_the_environment)
{
    int n = 0;
    CUdevice d;
    setenv("FAKECUDA_DEVICES", "3", 1);
    OK(cuInit(0));
    OK(cuDeviceGetCount(&n));
    cr_assert_eq(n, 3);
    OK(cuDeviceGet(&d, 2));
    cr_assert_eq(d, 2);
    EXPECT(CUDA_ERROR_INVALID_DEVICE, cuDeviceGet(&d, 3));
}

Test(fakecuda, device_queries_report_a_compute_9_0_device)
{
    char name[64];
    size_t total = 0;
    int v = -1;
    CUdevice d;
    OK(cuInit(0));
    OK(cuDeviceGet(&d, 0));
    OK(cuDeviceGetName(name, sizeof name, d));
    cr_assert_str_eq(name, "gpuguard fake device");
    OK(cuDeviceTotalMem_v2(&total, d));
    cr_assert_gt(total, 0);
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d));
    cr_assert_eq(v, 9);
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d));
    cr_assert_eq(v, 0);
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, d));
    cr_assert_eq(v, 32);
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, d));
    cr_assert_eq(v, 0);
    EXPECT(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 1));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuDeviceGetAttribute(NULL, CU_DEVICE_ATTRIBUTE_WARP_SIZE, d));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuDeviceGetName(NULL, 10, d));
    EXPECT(CUDA_ERROR_INVALID_DEVICE, cuDeviceTotalMem_v2(&total, -1));
}

/* ------------------------------------------------------------------------ */
/* Contexts                                                                  */
/* ------------------------------------------------------------------------ */

Test(fakecuda, apis_without_a_current_context_are_invalid_context)
{
    CUdeviceptr p;
    CUstream s;
    CUmodule m;
    OK(cuInit(0));
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuMemAlloc_v2(&p, 16));
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuCtxSynchronize());
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuStreamCreate(&s, 0));
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuModuleLoad(&m, FAKECUDA_PTX));
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuCtxPopCurrent_v2(NULL));
}

Test(fakecuda, created_contexts_stack_on_the_calling_thread)
{
    CUcontext a, b, cur;
    CUdevice dev = -1;
    OK(cuInit(0));
    OK(cuCtxCreate_v2(&a, 0, 0));
    OK(cuCtxCreate_v4(&b, NULL, 0, 0));
    OK(cuCtxGetCurrent(&cur));
    cr_assert_eq(cur, b);
    OK(cuCtxPopCurrent_v2(&cur));
    cr_assert_eq(cur, b);
    OK(cuCtxGetCurrent(&cur));
    cr_assert_eq(cur, a);
    OK(cuCtxPushCurrent_v2(b));
    OK(cuCtxGetDevice(&dev));
    cr_assert_eq(dev, 0);
    OK(cuCtxGetDevice_v2(&dev, a));
    OK(cuCtxDestroy_v2(b)); /* current: popped */
    OK(cuCtxGetCurrent(&cur));
    cr_assert_eq(cur, a);
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuCtxDestroy_v2(b));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuCtxDestroy_v2(NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuCtxPushCurrent_v2(NULL));
    EXPECT(CUDA_ERROR_INVALID_DEVICE, cuCtxCreate_v2(&b, 0, 7));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuCtxCreate_v2(&b, 3, 0)); /* two schedule flags */
    OK(cuCtxSetCurrent(NULL));
    OK(cuCtxGetCurrent(&cur));
    cr_assert_null(cur);
}

/* cuda.h's deprecated usage count: cuCtxAttach increments that of the current
 * context, cuCtxDetach (of a context current here) decrements it and destroys
 * the context at 0, popping it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
Test(fakecuda, detach_destroys_a_context_when_its_usage_count_reaches_zero)
{
    CUcontext a, again, cur, primary;
    unsigned version = 0;
    OK(cuInit(0));
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuCtxAttach(&again, 0)); /* none current */
    OK(cuCtxCreate_v2(&a, 0, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuCtxAttach(&again, 1));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuCtxAttach(NULL, 0));
    OK(cuCtxAttach(&again, 0));
    cr_assert_eq(again, a);
    OK(cuCtxDetach(a)); /* 2 -> 1: still alive and current */
    OK(cuCtxGetApiVersion(a, &version));
    cr_assert_eq(version, 3020);
    OK(cuCtxGetCurrent(&cur));
    cr_assert_eq(cur, a);
    OK(cuCtxPopCurrent_v2(&cur));
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuCtxDetach(a)); /* not current here */
    OK(cuCtxPushCurrent_v2(a));
    OK(cuCtxDetach(a)); /* 1 -> 0: destroyed, popped */
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetApiVersion(a, &version));
    OK(cuCtxGetCurrent(&cur));
    cr_assert_null(cur);
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuCtxDetach(a));
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuCtxDetach(NULL));
    /* Primary contexts are retained and released, never detached. */
    OK(cuDevicePrimaryCtxRetain(&primary, 0));
    OK(cuCtxSetCurrent(primary));
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuCtxDetach(primary));
    OK(cuCtxSetCurrent(NULL));
    OK(cuDevicePrimaryCtxRelease_v2(0));
}
#pragma GCC diagnostic pop

/* Threads report back to the test's thread: Criterion asserts only there. */
static void *current_context_of_new_thread(void *arg)
{
    CUcontext *out = arg;
    if (cuCtxGetCurrent(out) != CUDA_SUCCESS)
        *out = (CUcontext)2;
    return NULL;
}

Test(fakecuda, the_current_context_is_per_thread)
{
    CUcontext seen = (CUcontext)1;
    pthread_t t;
    primary();
    pthread_create(&t, NULL, current_context_of_new_thread, &seen);
    pthread_join(t, NULL);
    cr_assert_null(seen);
}

typedef struct ctx_job {
    CUcontext ctx;
    CUresult rc;
} ctx_job;

static void *destroy_context(void *arg)
{
    ctx_job *job = arg;
    job->rc = cuCtxDestroy_v2(job->ctx);
    return NULL;
}

Test(fakecuda, a_context_destroyed_elsewhere_is_destroyed_for_this_thread)
{
    CUcontext c;
    CUdeviceptr p;
    pthread_t t;
    ctx_job job;
    OK(cuInit(0));
    OK(cuCtxCreate_v2(&c, 0, 0));
    job.rc = CUDA_ERROR_UNKNOWN;
    job.ctx = c;
    pthread_create(&t, NULL, destroy_context, &job);
    pthread_join(t, NULL);
    EXPECT(CUDA_SUCCESS, job.rc);
    EXPECT(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuMemAlloc_v2(&p, 16));
    EXPECT(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxSynchronize());
}

Test(fakecuda, destroying_a_context_frees_its_memory_modules_and_streams)
{
    CUcontext c;
    CUstream s;
    CUmodule m;
    CUfunction f;
    CUdeviceptr p;
    OK(cuInit(0));
    OK(cuCtxCreate_v2(&c, 0, 0));
    p = alloc(1000);
    OK(cuStreamCreate(&s, 0));
    m = kernels();
    f = function(m, "gg_fill");
    OK(fill(f, s, p, 7, 1000));
    cr_assert_eq(fakecuda_live_allocations(), 1);
    OK(cuCtxDestroy_v2(c));
    cr_assert_eq(fakecuda_live_allocations(), 0);
    cr_assert_eq(fakecuda_mem_used(), 0);
    OK(cuCtxCreate_v2(&c, 0, 0));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuStreamSynchronize(s));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuModuleUnload(m));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuModuleGetFunction(&f, m, "gg_fill"));
}

Test(fakecuda, the_last_primary_release_frees_its_memory)
{
    CUcontext c, again;
    unsigned int flags;
    int active;
    c = primary();
    OK(cuDevicePrimaryCtxRetain(&again, 0));
    cr_assert_eq(again, c);
    alloc(64);
    OK(cuDevicePrimaryCtxRelease_v2(0));
    cr_assert_eq(fakecuda_live_allocations(), 1);
    OK(cuDevicePrimaryCtxRelease_v2(0));
    cr_assert_eq(fakecuda_live_allocations(), 0);
    OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    cr_assert_eq(active, 0);
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuDevicePrimaryCtxRelease_v2(0));
    EXPECT(CUDA_ERROR_INVALID_DEVICE, cuDevicePrimaryCtxRelease_v2(99));
}

Test(fakecuda, a_primary_reset_frees_memory_and_keeps_the_handle_usable)
{
    CUcontext c = primary();
    int active = 0;
    unsigned int flags;
    alloc(64);
    OK(cuDevicePrimaryCtxReset_v2(0));
    cr_assert_eq(fakecuda_live_allocations(), 0);
    OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    cr_assert_eq(active, 1);
    alloc(64);
    OK(cuCtxSynchronize_v2(c));
    EXPECT(CUDA_ERROR_INVALID_DEVICE, cuDevicePrimaryCtxReset_v2(-1));
    OK(cuDevicePrimaryCtxSetFlags_v2(0, CU_CTX_SCHED_BLOCKING_SYNC));
    OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    cr_assert_eq(flags, CU_CTX_SCHED_BLOCKING_SYNC);
}

/* ------------------------------------------------------------------------ */
/* Allocation                                                                */
/* ------------------------------------------------------------------------ */

Test(fakecuda, alloc_of_size_zero_is_invalid_value)
{
    CUdeviceptr p;
    primary();
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAlloc_v2(&p, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAlloc_v2(NULL, 16));
    EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc_v2(&p, (size_t)1 << 62));
    cr_assert_eq(fakecuda_live_allocations(), 0);
}

Test(fakecuda, legacy_32_bit_allocation_is_not_supported)
{
    CUdeviceptr_v1 p;
    primary();
    EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemAlloc(&p, 16));
}

Test(fakecuda, device_addresses_are_aligned_and_not_host_memory)
{
    int fds[2];
    primary();
    CUdeviceptr a = alloc(1), b = alloc(1);
    cr_assert_eq(a % 256, 0);
    cr_assert_eq(b % 256, 0);
    cr_assert_geq(b > a ? b - a : a - b, 256);
    /* The kernel reads the buffer of write(): a device address faults. */
    cr_assert_eq(pipe(fds), 0);
    errno = 0;
    cr_assert_eq(write(fds[1], (const void *)(uintptr_t)a, 1), -1);
    cr_assert_eq(errno, EFAULT);
    close(fds[0]);
    close(fds[1]);
}

Test(fakecuda, fresh_memory_is_not_zeroed)
{
    unsigned char buf[256];
    primary();
    CUdeviceptr p = alloc(sizeof buf);
    cr_assert_eq(fakecuda_read(p, buf, sizeof buf), 0);
    for (size_t i = 0; i < sizeof buf; i++)
        cr_assert_neq(buf[i], 0, "byte %zu is zero", i);
}

Test(fakecuda, free_of_unknown_interior_or_freed_pointers_is_invalid_value)
{
    primary();
    CUdeviceptr p = alloc(100);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFree_v2(p + 4));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFree_v2(0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFree_v2(0xdead0000));
    OK(cuMemFree_v2(p));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFree_v2(p));
    cr_assert_eq(fakecuda_live_allocations(), 0);
}

/* cuda.h lists CUDA_ERROR_INVALID_CONTEXT among cuMemFree's results; the fake
 * answers it when no context is current, and the memory stays allocated. */
Test(fakecuda, free_with_no_context_current_is_invalid_context_and_frees_nothing)
{
    CUcontext c = primary();
    CUdeviceptr p = alloc(100);
    OK(cuCtxSetCurrent(NULL));
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuMemFree_v2(p));
    cr_assert_eq(fakecuda_live_allocations(), 1);
    OK(cuCtxSetCurrent(c));
    OK(cuMemFree_v2(p));
    cr_assert_eq(fakecuda_live_allocations(), 0);
}

Test(fakecuda, the_memory_limit_from_the_environment_gives_out_of_memory)
{
    CUdeviceptr p;
    setenv("FAKECUDA_MEM_LIMIT", "1000", 1);
    primary();
    p = alloc(600);
    EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc_v2(&p, 401));
    alloc(400);
    cr_assert_eq(fakecuda_mem_used(), 1000);
}

Test(fakecuda, the_memory_limit_control_applies_at_once)
{
    CUdeviceptr p;
    size_t free_b = 0, total = 0;
    primary();
    alloc(100);
    fakecuda_set_mem_limit(150);
    EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc_v2(&p, 51));
    OK(cuMemGetInfo_v2(&free_b, &total));
    cr_assert_eq(free_b, 50);
    fakecuda_set_mem_limit(0);
    alloc(51);
    cr_assert_eq(fakecuda_mem_used(), 151);
    cr_assert_eq(fakecuda_live_allocations(), 2);
}

Test(fakecuda, address_range_of_an_interior_pointer_gives_base_and_requested_size)
{
    CUdeviceptr base = 0;
    size_t size = 0;
    primary();
    CUdeviceptr p = alloc(100);
    OK(cuMemGetAddressRange_v2(&base, &size, p + 99));
    cr_assert_eq(base, p);
    cr_assert_eq(size, 100);
    OK(cuMemGetAddressRange_v2(NULL, &size, p + 1));
    OK(cuMemGetAddressRange_v2(&base, NULL, p));
    OK(cuMemGetAddressRange_v2(NULL, NULL, p));
    EXPECT(CUDA_ERROR_NOT_FOUND, cuMemGetAddressRange_v2(&base, &size, p + 100)); /* slack */
    EXPECT(CUDA_ERROR_NOT_FOUND, cuMemGetAddressRange_v2(&base, &size, 0xdead0000));
}

Test(fakecuda, pointer_attribute_of_an_interior_pointer)
{
    CUcontext c = primary(), owner = NULL;
    CUdeviceptr start = 0, dp = 0;
    size_t size = 0;
    unsigned int type = 0, ordinal = 7;
    int managed = -1, mapped = 0;
    unsigned long long id1 = 0, id2 = 0;
    CUdeviceptr p = alloc(300), q = alloc(10);
    OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p + 299));
    cr_assert_eq(start, p);
    OK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p + 5));
    cr_assert_eq(size, 300);
    OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, p));
    cr_assert_eq(owner, c);
    OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
    cr_assert_eq(type, CU_MEMORYTYPE_DEVICE);
    OK(cuPointerGetAttribute(&dp, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p + 3));
    cr_assert_eq(dp, p + 3);
    OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
    cr_assert_eq(ordinal, 0);
    OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
    cr_assert_eq(managed, 0);
    OK(cuPointerGetAttribute(&mapped, CU_POINTER_ATTRIBUTE_MAPPED, p));
    cr_assert_eq(mapped, 1);
    OK(cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID, p));
    OK(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, q));
    cr_assert_neq(id1, id2);
}

Test(fakecuda, pointer_attribute_errors_are_invalid_value)
{
    unsigned long long v = 0;
    primary();
    CUdeviceptr p = alloc(64);
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuPointerGetAttribute(NULL, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_RANGE_SIZE, 0xdead0000));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuPointerGetAttribute(&v, (CUpointer_attribute)9999, p));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuPointerGetAttributes(0, NULL, NULL, p));
}

Test(fakecuda, pointer_attributes_of_an_unknown_pointer_succeed_with_null_values)
{
    CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                    CU_POINTER_ATTRIBUTE_CONTEXT,
                                    CU_POINTER_ATTRIBUTE_MEMORY_TYPE };
    size_t size = 1;
    CUdeviceptr start = 1;
    CUcontext c = (CUcontext)1;
    unsigned int type = 1;
    void *data[] = { &size, &start, &c, &type };
    primary();
    CUdeviceptr p = alloc(48);
    OK(cuPointerGetAttributes(4, attrs, data, 0xdead0000));
    cr_assert_eq(size, 0);
    cr_assert_eq(start, 0);
    cr_assert_null(c);
    cr_assert_eq(type, 0);
    OK(cuPointerGetAttributes(4, attrs, data, p + 47));
    cr_assert_eq(size, 48);
    cr_assert_eq(start, p);
    cr_assert_eq(type, CU_MEMORYTYPE_DEVICE);
}

/* ------------------------------------------------------------------------ */
/* memcpy and memset                                                         */
/* ------------------------------------------------------------------------ */

Test(fakecuda, memcpy_round_trips_and_ranges_past_the_end_are_invalid_value)
{
    unsigned char in[100], out[100];
    primary();
    CUdeviceptr p = alloc(100), q = alloc(100);
    for (size_t i = 0; i < sizeof in; i++)
        in[i] = (unsigned char)i;
    OK(cuMemcpyHtoD_v2(p, in, 100));
    OK(cuMemcpyDtoD_v2(q, p, 100));
    OK(cuMemcpyDtoH_v2(out, q, 100));
    cr_assert_arr_eq(in, out, 100);
    OK(cuMemcpy(p + 10, q, 20));
    OK(cuMemcpy((CUdeviceptr)(uintptr_t)out, p + 10, 20));
    cr_assert_arr_eq(in, out, 20);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD_v2(p + 1, in, 100));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH_v2(out, p + 99, 2));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoD_v2(q, 0xdead0000, 1));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD_v2(p, NULL, 1));
    OK(cuMemcpyHtoD_v2(p, in, 0));
    EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemcpyHtoD((CUdeviceptr_v1)0, in, 1));
}

Test(fakecuda, memset_writes_elements_and_checks_alignment_and_range)
{
    unsigned char b[12];
    primary();
    CUdeviceptr p = alloc(12);
    OK(cuMemsetD32_v2(p, 0x11223344u, 3));
    cr_assert_eq(fakecuda_read(p, b, 12), 0);
    cr_assert_eq(b[0], 0x44);
    cr_assert_eq(b[3], 0x11);
    cr_assert_eq(b[11], 0x11);
    OK(cuMemsetD16_v2(p + 2, 0xaabb, 2));
    cr_assert_eq(fakecuda_read(p, b, 12), 0);
    cr_assert_eq(b[2], 0xbb);
    cr_assert_eq(b[5], 0xaa);
    cr_assert_eq(b[6], 0x22);
    OK(cuMemsetD8_v2(p + 11, 0x5a, 1));
    cr_assert_eq(byte_at(p + 11), 0x5a);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemsetD16_v2(p + 1, 0, 1));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemsetD32_v2(p + 2, 0, 1));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemsetD8_v2(p, 0, 13));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemsetD32_v2(p, 0, 4));
}

Test(fakecuda, fakecuda_read_reaches_the_allocation_extent_and_no_further)
{
    unsigned char b[256] = { 0 };
    primary();
    CUdeviceptr p = alloc(100);
    cr_assert_eq(fakecuda_write(p + 100, b, 156), 0); /* the slack up to 256 */
    cr_assert_eq(fakecuda_read(p, b, 256), 0);
    cr_assert_eq(fakecuda_read(p, b, 257), -EFAULT);
    cr_assert_eq(fakecuda_read(p + 256, b, 1), -EFAULT);
    cr_assert_eq(fakecuda_read(0xdead0000, b, 1), -EFAULT);
}

/* ------------------------------------------------------------------------ */
/* Queued work and its ordering                                              */
/* ------------------------------------------------------------------------ */

Test(fakecuda, an_async_memset_is_invisible_until_its_stream_is_synchronised)
{
    CUstream s;
    primary();
    CUdeviceptr p = alloc(16);
    unsigned char before = byte_at(p);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuMemsetD8Async(p, 0x42, 16, s));
    cr_assert_eq(byte_at(p), before);
    OK(cuStreamSynchronize(s));
    cr_assert_eq(byte_at(p), 0x42);
}

Test(fakecuda, legacy_stream_apis_flush_blocking_streams_but_not_non_blocking_ones)
{
    CUstream blocking, nonblocking;
    unsigned char b;
    primary();
    CUdeviceptr p = alloc(16), q = alloc(16);
    unsigned char old_q = byte_at(q);
    OK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    OK(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING));
    OK(cuMemsetD8Async(p, 1, 16, blocking));
    OK(cuMemsetD8Async(q, 2, 16, nonblocking));
    OK(cuMemcpyDtoH_v2(&b, p, 1)); /* a synchronous legacy-stream call */
    cr_assert_eq(b, 1);
    cr_assert_eq(byte_at(q), old_q);
    OK(cuStreamSynchronize(NULL));
    cr_assert_eq(byte_at(q), old_q);
    OK(cuCtxSynchronize());
    cr_assert_eq(byte_at(q), 2);
}

Test(fakecuda, work_on_a_blocking_stream_waits_for_earlier_legacy_work)
{
    CUstream s;
    primary();
    CUdeviceptr p = alloc(16), q = alloc(16);
    OK(cuStreamCreate(&s, 0));
    OK(cuMemsetD8Async(p, 9, 16, NULL));   /* legacy stream */
    OK(cuMemcpyDtoDAsync_v2(q, p, 16, s)); /* must see the 9s */
    OK(cuStreamSynchronize(s));
    cr_assert_eq(byte_at(q), 9);
}

Test(fakecuda, events_order_streams_and_synchronise_up_to_the_record)
{
    CUstream s1, s2;
    CUevent e;
    primary();
    CUdeviceptr p = alloc(16), q = alloc(16);
    OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    OK(cuEventQuery(e)); /* never recorded: complete */
    OK(cuMemsetD8Async(p, 5, 16, s1));
    OK(cuEventRecord(e, s1));
    OK(cuMemsetD8Async(p, 6, 16, s1)); /* after the event */
    OK(cuStreamWaitEvent(s2, e, 0));
    OK(cuMemcpyDtoDAsync_v2(q, p, 16, s2));
    OK(cuStreamSynchronize(s2));
    cr_assert_eq(byte_at(q), 5);
    cr_assert_eq(byte_at(p), 5); /* the second memset is still queued */
    OK(cuEventSynchronize(e));
    cr_assert_eq(byte_at(p), 5);
    OK(cuStreamQuery(s1));
    cr_assert_eq(byte_at(p), 6);
    OK(cuEventDestroy_v2(e));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuEventQuery(e));
}

Test(fakecuda, a_stream_ordered_free_takes_effect_when_its_stream_runs)
{
    CUstream s;
    CUdeviceptr p;
    primary();
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAllocAsync(&p, 64, s));
    cr_assert_eq(fakecuda_live_allocations(), 1);
    OK(cuMemsetD8Async(p, 3, 64, s));
    OK(cuMemFreeAsync(p, s));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(p, s)); /* already being freed */
    cr_assert_eq(fakecuda_live_allocations(), 1);
    cr_assert_eq(byte_at(p), 0xde); /* garbage: the memset has not run */
    OK(cuStreamSynchronize(s));
    cr_assert_eq(fakecuda_live_allocations(), 0);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(0xdead0000, s));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAllocAsync(&p, 0, s));
}

Test(fakecuda, mem_free_runs_pending_work_first)
{
    CUstream s;
    primary();
    CUdeviceptr p = alloc(16), q = alloc(16);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuMemsetD8Async(q, 8, 16, s));
    OK(cuMemcpyDtoDAsync_v2(p, q, 16, s));
    OK(cuMemFree_v2(q)); /* the queued copy reads q first */
    cr_assert_eq(byte_at(p), 8);
}

Test(fakecuda, a_destroyed_streams_work_still_runs)
{
    CUstream s;
    primary();
    CUdeviceptr p = alloc(16);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuMemsetD8Async(p, 4, 16, s));
    OK(cuStreamDestroy_v2(s));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuStreamSynchronize(s));
    cr_assert_neq(byte_at(p), 4);
    OK(cuCtxSynchronize());
    cr_assert_eq(byte_at(p), 4);
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuStreamDestroy_v2(NULL));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuStreamDestroy_v2(CU_STREAM_LEGACY));
}

Test(fakecuda, per_thread_entry_points_use_the_per_thread_stream)
{
    CUcontext c = primary(), sc = NULL;
    CUdeviceptr p = alloc(16);
    unsigned int flags = 99;
    OK(cuMemsetD8Async_ptsz(p, 7, 16, NULL));
    OK(cuStreamSynchronize(CU_STREAM_LEGACY)); /* the per-thread stream is blocking */
    cr_assert_eq(byte_at(p), 7);
    OK(cuMemsetD8Async_ptsz(p, 8, 16, NULL));
    OK(cuStreamSynchronize_ptsz(NULL));
    cr_assert_eq(byte_at(p), 8);
    OK(cuStreamGetCtx_ptsz(NULL, &sc));
    cr_assert_eq(sc, c);
    OK(cuStreamGetFlags(CU_STREAM_PER_THREAD, &flags));
    cr_assert_eq(flags, 0);
}

/* ------------------------------------------------------------------------ */
/* Modules and libraries                                                     */
/* ------------------------------------------------------------------------ */

Test(fakecuda, module_lookup_errors)
{
    CUmodule m;
    CUfunction f;
    primary();
    EXPECT(CUDA_ERROR_FILE_NOT_FOUND, cuModuleLoad(&m, "/nonexistent/kernels.ptx"));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuModuleLoad(NULL, FAKECUDA_PTX));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuModuleLoadData(&m, NULL));
    EXPECT(CUDA_ERROR_INVALID_PTX, cuModuleLoadData(&m, "this is not a module image"));
    m = kernels();
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuModuleGetFunction(NULL, m, "gg_fill"));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuModuleGetFunction(&f, m, NULL));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuModuleGetFunction(&f, NULL, "gg_fill"));
    EXPECT(CUDA_ERROR_NOT_FOUND, cuModuleGetFunction(&f, m, "no_such_kernel"));
    EXPECT(CUDA_ERROR_NOT_FOUND, cuModuleGetFunction(&f, m, ""));
    f = function(m, "gg_sum");
    OK(cuModuleUnload(m));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuModuleUnload(m));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuModuleUnload(NULL));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
}

static const char custom_ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                                 ".visible .entry my_kernel()\n{\n\tret;\n}\n";

Test(fakecuda, modules_load_from_memory_and_unknown_entries_run_as_no_ops)
{
    CUmodule m;
    CUfunction f;
    CUjit_option opts[] = { CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES };
    char log[16] = "junk";
    void *vals[] = { log, (void *)(uintptr_t)sizeof log };
    primary();
    OK(cuModuleLoadDataEx(&m, custom_ptx, 2, opts, vals));
    cr_assert_str_empty(log);
    f = function(m, "my_kernel");
    OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    OK(cuCtxSynchronize());
    OK(cuModuleLoadFatBinary(&m, custom_ptx));
}

Test(fakecuda, library_kernels_launch_directly_as_functions)
{
    CUlibrary lib;
    CUkernel k;
    CUmodule m;
    CUfunction f;
    uint64_t n = 32;
    unsigned char v = 0x33;
    OK(cuInit(0));
    OK(cuLibraryLoadFromFile(&lib, FAKECUDA_PTX, NULL, NULL, 0, NULL, NULL,
                             0)); /* no context needed */
    OK(cuLibraryGetKernel(&k, lib, "gg_fill"));
    primary();
    CUdeviceptr p = alloc(32);
    void *params[] = { &p, &v, &n };
    OK(cuLaunchKernel((CUfunction)k, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    OK(cuCtxSynchronize());
    cr_assert_eq(byte_at(p + 31), 0x33);
    OK(cuKernelGetFunction(&f, k));
    OK(cuLibraryGetModule(&m, lib));
    EXPECT(CUDA_ERROR_NOT_PERMITTED, cuModuleUnload(m));
    EXPECT(CUDA_ERROR_NOT_FOUND, cuLibraryGetKernel(&k, lib, "no_such_kernel"));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuLibraryGetKernel(NULL, lib, "gg_fill"));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuLibraryGetKernel(&k, NULL, "gg_fill"));
    OK(cuLibraryUnload(lib));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuLibraryUnload(lib));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    EXPECT(CUDA_ERROR_FILE_NOT_FOUND,
           cuLibraryLoadFromFile(&lib, "/nonexistent.ptx", NULL, NULL, 0, NULL, NULL, 0));
    OK(cuLibraryLoadData(&lib, custom_ptx, NULL, NULL, 0, NULL, NULL, 0));
}

/* ------------------------------------------------------------------------ */
/* Code for another GPU, and lazy loading (CUDA_MODULE_LOADING)              */
/* ------------------------------------------------------------------------ */

/* A whole file, malloc'd (an image for cuModuleLoadData / cuLibraryLoadData). */
static void *file_bytes(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    cr_assert_gt(n, 0, "%s", path);
    rewind(f);
    void *buf = malloc((size_t)n);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n, "%s", path);
    fclose(f);
    return buf;
}

static CUmoduleLoadingMode loading_mode(void)
{
    CUmoduleLoadingMode mode = 0;
    OK(cuModuleGetLoadingMode(&mode));
    return mode;
}

Test(fakecuda, module_loading_is_eager_by_default_and_read_at_init)
{
    CUmoduleLoadingMode mode;
    unsetenv("CUDA_MODULE_LOADING");
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuModuleGetLoadingMode(&mode));
    OK(cuInit(0));
    cr_assert_eq(loading_mode(), CU_MODULE_EAGER_LOADING);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuModuleGetLoadingMode(NULL));
    setenv("CUDA_MODULE_LOADING", "LAZY", 1); /* too late: read at cuInit */
    cr_assert_eq(loading_mode(), CU_MODULE_EAGER_LOADING);
}

Test(fakecuda, cuda_module_loading_lazy_makes_loading_lazy)
{
    setenv("CUDA_MODULE_LOADING", "LAZY", 1);
    OK(cuInit(0));
    cr_assert_eq(loading_mode(), CU_MODULE_LAZY_LOADING);
}

Test(fakecuda, cuda_module_loading_eager_or_another_value_keeps_loading_eager)
{
    setenv("CUDA_MODULE_LOADING", "lazy", 1); /* not NVIDIA's spelling: reported, ignored */
    OK(cuInit(0));
    cr_assert_eq(loading_mode(), CU_MODULE_EAGER_LOADING);
}

Test(fakecuda, sm80_code_is_no_binary_for_gpu_when_loaded_eagerly)
{
#if defined(FAKECUDA_ARCH80_CUBIN) && defined(FAKECUDA_ARCH80_FATBIN)
    static const char *const paths[] = { FAKECUDA_ARCH80_CUBIN, FAKECUDA_ARCH80_FATBIN };
    CUmodule m;
    CUlibrary lib;
    CUlinkState link;
    unsetenv("CUDA_MODULE_LOADING"); /* eager, the fake's default */
    primary();
    OK(cuLinkCreate_v2(0, NULL, NULL, &link));
    for (size_t i = 0; i < 2; i++) {
        void *image = file_bytes(paths[i]);
        EXPECT(CUDA_ERROR_NO_BINARY_FOR_GPU,
               cuLinkAddFile_v2(link, i ? CU_JIT_INPUT_FATBINARY : CU_JIT_INPUT_CUBIN, paths[i], 0,
                                NULL, NULL));
        EXPECT(CUDA_ERROR_NO_BINARY_FOR_GPU, cuModuleLoad(&m, paths[i]));
        EXPECT(CUDA_ERROR_NO_BINARY_FOR_GPU, cuModuleLoadData(&m, image));
        EXPECT(CUDA_ERROR_NO_BINARY_FOR_GPU, cuModuleLoadDataEx(&m, image, 0, NULL, NULL));
        EXPECT(CUDA_ERROR_NO_BINARY_FOR_GPU, cuModuleLoadFatBinary(&m, image));
        EXPECT(CUDA_ERROR_NO_BINARY_FOR_GPU,
               cuLibraryLoadFromFile(&lib, paths[i], NULL, NULL, 0, NULL, NULL, 0));
        EXPECT(CUDA_ERROR_NO_BINARY_FOR_GPU,
               cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
        free(image);
    }
    OK(cuLinkDestroy(link));
#else
    cr_skip_test("ptxas or fatbinary was not found at configure time");
#endif
}

/* The kernel gg_fill of a library of `path` (from memory when `data`), loaded lazily. */
static CUkernel lazy_gg_fill(const char *path, bool data, CUlibrary *lib)
{
    CUkernel k = NULL;
    if (data) {
        void *image = file_bytes(path);
        OK(cuLibraryLoadData(lib, image, NULL, NULL, 0, NULL, NULL, 0));
        free(image); /* the library keeps what it needs */
    } else {
        OK(cuLibraryLoadFromFile(lib, path, NULL, NULL, 0, NULL, NULL, 0));
    }
    OK(cuLibraryGetKernel(&k, *lib, "gg_fill"));
    return k;
}

Test(fakecuda, sm80_code_loads_lazily_as_a_library_and_fails_where_a_context_needs_it)
{
#if defined(FAKECUDA_ARCH80_CUBIN) && defined(FAKECUDA_ARCH80_FATBIN)
    static const char *const paths[] = { FAKECUDA_ARCH80_CUBIN, FAKECUDA_ARCH80_FATBIN };
    setenv("CUDA_MODULE_LOADING", "LAZY", 1);
    OK(cuInit(0));
    for (size_t i = 0; i < 4; i++) {
        CUlibrary lib;
        CUkernel k = lazy_gg_fill(paths[i % 2], i >= 2, &lib); /* no context needed */
        const char *name = NULL;
        size_t offset = 0, size = 0;
        OK(cuKernelGetName(&name, k));
        cr_assert_str_eq(name, "gg_fill");
        OK(cuKernelGetParamInfo(k, 1, &offset, &size));
        cr_assert(offset == 8 && size == 1);
        primary();
        CUfunction f = NULL;
        CUmodule m = NULL;
        EXPECT(CUDA_ERROR_NO_BINARY_FOR_GPU, cuKernelGetFunction(&f, k));
        EXPECT(CUDA_ERROR_NO_BINARY_FOR_GPU, cuLibraryGetModule(&m, lib));
        CUdeviceptr p = alloc(32);
        unsigned char v = 0x33;
        uint64_t n = 32;
        void *params[] = { &p, &v, &n };
        CUlaunchConfig cfg = { .gridDimX = 1,
                               .gridDimY = 1,
                               .gridDimZ = 1,
                               .blockDimX = 32,
                               .blockDimY = 1,
                               .blockDimZ = 1 };
        EXPECT(CUDA_ERROR_NO_BINARY_FOR_GPU,
               cuLaunchKernel((CUfunction)k, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
        EXPECT(CUDA_ERROR_NO_BINARY_FOR_GPU, cuLaunchKernelEx(&cfg, (CUfunction)k, params, NULL));
        OK(cuCtxSynchronize()); /* nothing was queued, the context is fine */
        cr_assert_neq(byte_at(p), 0x33);
        OK(cuLibraryUnload(lib));
    }
#else
    cr_skip_test("ptxas or fatbinary was not found at configure time");
#endif
}

Test(fakecuda, modules_refuse_sm80_code_at_load_also_when_lazy)
{
#if defined(FAKECUDA_ARCH80_CUBIN) && defined(FAKECUDA_ARCH80_FATBIN)
    CUmodule m;
    setenv("CUDA_MODULE_LOADING", "LAZY", 1);
    primary();
    void *image = file_bytes(FAKECUDA_ARCH80_FATBIN);
    EXPECT(CUDA_ERROR_NO_BINARY_FOR_GPU, cuModuleLoad(&m, FAKECUDA_ARCH80_CUBIN));
    EXPECT(CUDA_ERROR_NO_BINARY_FOR_GPU, cuModuleLoad(&m, FAKECUDA_ARCH80_FATBIN));
    EXPECT(CUDA_ERROR_NO_BINARY_FOR_GPU, cuModuleLoadData(&m, image));
    EXPECT(CUDA_ERROR_NO_BINARY_FOR_GPU, cuModuleLoadFatBinary(&m, image));
    free(image);
#else
    cr_skip_test("ptxas or fatbinary was not found at configure time");
#endif
}

/* gg_fill of `lib`: as a CUkernel and as its function, both filling memory. */
static void expect_library_gg_fill_runs(CUlibrary lib)
{
    CUkernel k = NULL;
    CUfunction f = NULL;
    CUmodule m = NULL;
    OK(cuLibraryGetKernel(&k, lib, "gg_fill"));
    OK(cuKernelGetFunction(&f, k));
    OK(cuLibraryGetModule(&m, lib));
    CUdeviceptr p = alloc(64);
    OK(fill((CUfunction)k, NULL, p, 0x21, 32));
    OK(fill(f, NULL, p + 32, 0x22, 32));
    OK(cuCtxSynchronize());
    cr_assert(byte_at(p) == 0x21 && byte_at(p + 63) == 0x22);
}

Test(fakecuda, libraries_that_run_here_behave_the_same_loaded_lazily)
{
    setenv("CUDA_MODULE_LOADING", "LAZY", 1);
    primary();
    const char *paths[] = {
        FAKECUDA_PTX,
#ifdef FAKECUDA_KERNELS_CUBIN
        FAKECUDA_KERNELS_CUBIN,
#endif
#ifdef FAKECUDA_ARCH80_PTX_FATBIN
        FAKECUDA_ARCH80_PTX_FATBIN,
#endif
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        CUlibrary lib;
        OK(cuLibraryLoadFromFile(&lib, paths[i], NULL, NULL, 0, NULL, NULL, 0));
        expect_library_gg_fill_runs(lib);
        OK(cuLibraryUnload(lib));
    }
}

Test(fakecuda, a_fatbin_with_compute_80_ptx_besides_sm80_code_runs_here_by_its_ptx)
{
#ifdef FAKECUDA_ARCH80_PTX_FATBIN
    CUmodule m;
    CUlibrary lib;
    int v = 0;
    primary();
    OK(cuModuleLoad(&m, FAKECUDA_ARCH80_PTX_FATBIN));
    CUfunction f = function(m, "gg_fill");
    OK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_PTX_VERSION, f));
    cr_assert_eq(v, 70, "the PTX (.version 7.0) was what loaded");
    CUdeviceptr p = alloc(16);
    OK(fill(f, NULL, p, 0x44, 16));
    OK(cuCtxSynchronize());
    cr_assert_eq(byte_at(p + 15), 0x44);
    OK(cuLibraryLoadFromFile(&lib, FAKECUDA_ARCH80_PTX_FATBIN, NULL, NULL, 0, NULL, NULL, 0));
    expect_library_gg_fill_runs(lib);
#else
    cr_skip_test("ptxas or fatbinary was not found at configure time");
#endif
}

Test(fakecuda, kernel_get_function_and_library_get_module_check_their_arguments)
{
    CUlibrary lib;
    CUkernel k;
    CUfunction f;
    CUmodule m;
    int not_a_handle;
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuKernelGetFunction(&f, NULL));
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuLibraryGetModule(&m, NULL));
    OK(cuInit(0));
    OK(cuLibraryLoadFromFile(&lib, FAKECUDA_PTX, NULL, NULL, 0, NULL, NULL, 0));
    OK(cuLibraryGetKernel(&k, lib, "gg_fill"));
    /* Both need a context to answer for. */
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuKernelGetFunction(&f, k));
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuLibraryGetModule(&m, lib));
    primary();
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuKernelGetFunction(NULL, k));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuLibraryGetModule(NULL, lib));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuKernelGetFunction(&f, NULL));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuLibraryGetModule(&m, NULL));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuKernelGetFunction(&f, (CUkernel)&not_a_handle));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuLibraryGetModule(&m, (CUlibrary)&not_a_handle));
    EXPECT(CUDA_ERROR_INVALID_HANDLE,
           cuKernelGetFunction(&f, (CUkernel)lib)); /* a library is no kernel */
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuLibraryGetModule(&m, (CUlibrary)k));
    CUfunction f2 = NULL;
    CUmodule m2 = NULL;
    OK(cuKernelGetFunction(&f, k));
    OK(cuKernelGetFunction(&f2, k));
    OK(cuLibraryGetModule(&m, lib));
    OK(cuLibraryGetModule(&m2, lib));
    cr_assert(f == f2 && m == m2, "one module of the library per context");
    CUfunction byname = NULL;
    OK(cuModuleGetFunction(&byname, m, "gg_fill"));
    cr_assert_eq(byname, f);
    OK(cuLibraryUnload(lib));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuKernelGetFunction(&f, k));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuLibraryGetModule(&m, lib));
}

/* ------------------------------------------------------------------------ */
/* Kernels and launches                                                      */
/* ------------------------------------------------------------------------ */

Test(fakecuda, gg_fill_copy_and_sum_compute_on_device_memory)
{
    CUmodule m;
    primary();
    m = kernels();
    CUdeviceptr a = alloc(1000), b = alloc(1000), out = alloc(8);
    uint64_t n = 1000, sum = 0;
    OK(fill(function(m, "gg_fill"), NULL, a, 3, n));
    OK(launch3(function(m, "gg_copy"), NULL, &b, &a, &n));
    OK(launch3(function(m, "gg_sum"), NULL, &b, &n, &out));
    OK(cuMemcpyDtoH_v2(&sum, out, sizeof sum));
    cr_assert_eq(sum, 3000);
}

Test(fakecuda, kernel_parameters_can_come_in_an_extra_buffer)
{
    struct {
        uint64_t p;
        uint8_t value;
        uint64_t n;
    } args;
    size_t size = sizeof args;
    primary();
    CUfunction f = function(kernels(), "gg_fill");
    CUdeviceptr p = alloc(64);
    args.p = p;
    args.value = 0x77;
    args.n = 64;
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &args, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                      CU_LAUNCH_PARAM_END };
    OK(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, NULL, extra));
    OK(cuCtxSynchronize());
    cr_assert_eq(byte_at(p + 63), 0x77);
    size = 17; /* packed without alignment: not the kernel's layout */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, NULL, extra));
}

Test(fakecuda, launch_argument_errors)
{
    uint64_t n = 1;
    unsigned char v = 1;
    primary();
    CUfunction f = function(kernels(), "gg_fill");
    CUdeviceptr p = alloc(8);
    void *params[] = { &p, &v, &n };
    void *extra[] = { CU_LAUNCH_PARAM_END };
    EXPECT(CUDA_ERROR_INVALID_HANDLE,
           cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 0, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuLaunchKernel_ptsz(f, 1, 1, 1, 0, 1, 1, 0, NULL, params, NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 1025, 1, 1, 0, NULL, params, NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, extra));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    EXPECT(CUDA_ERROR_INVALID_HANDLE,
           cuLaunchCooperativeKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, params));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuLaunchKernelEx(NULL, f, params, NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuLaunchKernelEx_ptsz(NULL, f, params, NULL));
}

Test(fakecuda, launch_ex_and_cooperative_launches_run)
{
    uint64_t n = 16;
    unsigned char v = 0x21;
    primary();
    CUfunction f = function(kernels(), "gg_fill");
    CUdeviceptr p = alloc(16);
    void *params[] = { &p, &v, &n };
    CUlaunchConfig cfg = {
        .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 16, .blockDimY = 1, .blockDimZ = 1
    };
    OK(cuLaunchKernelEx(&cfg, f, params, NULL));
    OK(cuCtxSynchronize());
    cr_assert_eq(byte_at(p), 0x21);
    v = 0x22;
    OK(cuLaunchCooperativeKernel_ptsz(f, 1, 1, 1, 16, 1, 1, 0, NULL, params));
    cr_assert_eq(byte_at(p), 0x21); /* queued */
    OK(cuStreamSynchronize_ptsz(NULL));
    cr_assert_eq(byte_at(p), 0x22);
}

Test(fakecuda, gg_overrun_within_the_extent_succeeds)
{
    uint64_t n = 100, extra = 156;
    primary();
    CUfunction f = function(kernels(), "gg_overrun");
    CUdeviceptr p = alloc(100);
    OK(launch3(f, NULL, &p, &n, &extra));
    OK(cuCtxSynchronize());
    cr_assert_eq(byte_at(p + 255), 0x41);
}

Test(fakecuda, gg_overrun_past_the_extent_is_an_illegal_address_at_the_next_sync)
{
    uint64_t n = 100, extra = 157;
    CUdeviceptr q;
    primary();
    CUfunction f = function(kernels(), "gg_overrun");
    CUdeviceptr p = alloc(100), gap = alloc(256);
    OK(cuMemFree_v2(gap));                /* nothing lives right after p's extent */
    OK(launch3(f, NULL, &p, &n, &extra)); /* the launch itself succeeds */
    EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
    cr_assert_eq(byte_at(p + 255), 0x41); /* bytes before the fault were written */
    /* The error is sticky: the context is lost until it is reset. */
    EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemAlloc_v2(&q, 16));
    EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
    OK(cuDevicePrimaryCtxReset_v2(0));
    q = alloc(16);
    OK(cuCtxSynchronize());
}

Test(fakecuda, a_kernel_on_freed_memory_is_an_illegal_address)
{
    uint64_t n = 16;
    CUstream s;
    primary();
    CUdeviceptr p = alloc(16);
    unsigned char v = 1;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(fill(function(kernels(), "gg_fill"), s, p, v, n));
    OK(cuMemFreeAsync(p, NULL)); /* not ordered after the launch on s */
    OK(cuStreamSynchronize(NULL));
    EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(s));
}

/* ------------------------------------------------------------------------ */
/* Kernel names and parameter layouts                                        */
/* ------------------------------------------------------------------------ */

static int func_attr(CUfunction f, CUfunction_attribute a);

Test(fakecuda, function_and_kernel_names_are_the_entry_names_of_the_image)
{
    static const char mangled_ptx[] =
        ".version 8.0\n.target sm_90\n.address_size 64\n"
        ".visible .entry _Z6squarePfi(.param .u64 p, .param .u32 n)\n{\n\tret;\n}\n";
    CUmodule m;
    CUlibrary lib;
    CUkernel k;
    const char *name = NULL;
    primary();
    OK(cuFuncGetName(&name, function(kernels(), "gg_overrun")));
    cr_assert_str_eq(name, "gg_overrun");
    OK(cuModuleLoadData(&m, mangled_ptx));
    OK(cuFuncGetName(&name, function(m, "_Z6squarePfi")));
    cr_assert_str_eq(name, "_Z6squarePfi"); /* as the image has it, not demangled */
    OK(cuLibraryLoadFromFile(&lib, FAKECUDA_PTX, NULL, NULL, 0, NULL, NULL, 0));
    OK(cuLibraryGetKernel(&k, lib, "gg_sum"));
    OK(cuKernelGetName(&name, k));
    cr_assert_str_eq(name, "gg_sum");
}

/* cuLibraryGetKernelCount, cuLibraryEnumerateKernels (at most numKernels, the
 * handles cuLibraryGetKernel gives) and cuKernelGetLibrary; NULL outputs are
 * invalid values, unloaded handles invalid handles. */
Test(fakecuda, a_librarys_kernels_can_be_enumerated_without_their_names)
{
    CUlibrary lib, of = NULL;
    CUkernel ks[64], k;
    unsigned n = 0;
    primary();
    OK(cuLibraryLoadFromFile(&lib, FAKECUDA_PTX, NULL, NULL, 0, NULL, NULL, 0));
    OK(cuLibraryGetKernelCount(&n, lib));
    cr_assert(n >= 2 && n <= 64, "%u", n);
    memset(ks, 0, sizeof(ks));
    OK(cuLibraryEnumerateKernels(ks, 1, lib));
    cr_assert_not_null(ks[0]);
    cr_assert_null(ks[1]); /* at most numKernels */
    OK(cuLibraryEnumerateKernels(ks, n, lib));
    OK(cuLibraryGetKernel(&k, lib, "gg_fill"));
    bool found = false;
    for (unsigned i = 0; i < n; i++)
        found |= ks[i] == k;
    cr_assert(found);
    OK(cuKernelGetLibrary(&of, k));
    cr_assert_eq(of, lib);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuLibraryGetKernelCount(NULL, lib));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuLibraryEnumerateKernels(NULL, n, lib));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuKernelGetLibrary(NULL, k));
    OK(cuLibraryUnload(lib));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuLibraryGetKernelCount(&n, lib));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuLibraryEnumerateKernels(ks, n, lib));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuKernelGetLibrary(&of, k));
}

Test(fakecuda, name_queries_of_null_or_unknown_handles_are_invalid_value)
{
    CUlibrary lib;
    CUkernel k;
    CUmodule m;
    const char *name = "untouched";
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuFuncGetName(&name, NULL));
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuKernelGetName(&name, NULL));
    primary();
    m = kernels();
    CUfunction f = function(m, "gg_fill");
    OK(cuLibraryLoadFromFile(&lib, FAKECUDA_PTX, NULL, NULL, 0, NULL, NULL, 0));
    OK(cuLibraryGetKernel(&k, lib, "gg_fill"));
    /* The documented results: CUDA_SUCCESS and CUDA_ERROR_INVALID_VALUE. */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuFuncGetName(NULL, f));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuFuncGetName(&name, NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuFuncGetName(&name, (CUfunction)k)); /* a CUkernel is no CUfunction */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuKernelGetName(NULL, k));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuKernelGetName(&name, NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuKernelGetName(&name, (CUkernel)f));
    cr_assert_str_eq(name, "untouched");
    OK(cuModuleUnload(m));
    OK(cuLibraryUnload(lib));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuFuncGetName(&name, f));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuKernelGetName(&name, k));
}

/* Offsets and sizes of a function's first n parameters, and that there is no n-th. */
static void expect_params(CUfunction f, size_t n, const size_t *offsets, const size_t *sizes)
{
    for (size_t i = 0; i < n; i++) {
        size_t off = 12345, size = 12345;
        OK(cuFuncGetParamInfo(f, i, &off, &size));
        cr_assert_eq(off, offsets[i], "parameter %zu: offset %zu, expected %zu", i, off,
                     offsets[i]);
        cr_assert_eq(size, sizes[i], "parameter %zu: size %zu, expected %zu", i, size, sizes[i]);
    }
    size_t off = 12345, size = 12345;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuFuncGetParamInfo(f, n, &off, &size));
    cr_assert_eq(off, 12345);
    cr_assert_eq(size, 12345);
}

/* What ptxas makes of layouts.ptx (see there), read from a module of `image`. */
static void expect_layouts(const char *image)
{
    CUmodule m;
    OK(cuModuleLoad(&m, image));
    expect_params(function(m, "lay_mixed"), 6, (size_t[]){ 0, 4, 10, 12, 16, 24 },
                  (size_t[]){ 1, 6, 2, 4, 8, 8 });
    expect_params(function(m, "lay_tail"), 2, (size_t[]){ 0, 8 }, (size_t[]){ 8, 1 });
    expect_params(function(m, "lay_b128"), 2, (size_t[]){ 0, 16 }, (size_t[]){ 1, 16 });
    expect_params(function(m, "lay_large"), 2, (size_t[]){ 0, 4 }, (size_t[]){ 1, 20000 });
    expect_params(function(m, "lay_none"), 0, NULL, NULL);
}

Test(fakecuda, param_info_places_each_ptx_parameter_at_its_alignment)
{
    primary();
    expect_layouts(FAKECUDA_LAYOUTS_PTX);
    CUmodule m = kernels();
    expect_params(function(m, "gg_fill"), 3, (size_t[]){ 0, 8, 16 }, (size_t[]){ 8, 1, 8 });
    expect_params(function(m, "gg_sum"), 3, (size_t[]){ 0, 8, 16 }, (size_t[]){ 8, 8, 8 });
    size_t off = 1;
    OK(cuFuncGetParamInfo(function(m, "gg_fill"), 2, &off, NULL)); /* the size is optional */
    cr_assert_eq(off, 16);
}

Test(fakecuda, param_info_of_a_ptxas_cubin_is_what_its_nv_info_records)
{
#ifdef FAKECUDA_LAYOUTS_CUBIN
    primary();
    expect_layouts(FAKECUDA_LAYOUTS_CUBIN); /* the 20000-byte one in ptxas's large form */
    CUmodule m;
    OK(cuModuleLoad(&m, FAKECUDA_KERNELS_CUBIN));
    expect_params(function(m, "gg_fill"), 3, (size_t[]){ 0, 8, 16 }, (size_t[]){ 8, 1, 8 });
    /* Declared as the fake's gg_fill declares them: it runs as gg_fill. */
    CUdeviceptr p = alloc(64);
    OK(fill(function(m, "gg_fill"), NULL, p, 0x5a, 64));
    OK(cuCtxSynchronize());
    cr_assert_eq(byte_at(p + 63), 0x5a);
#else
    cr_skip_test("ptxas was not found at configure time");
#endif
}

Test(fakecuda, param_info_past_the_last_parameter_or_without_an_offset_is_invalid_value)
{
    /* A table clang-format lays out differently each run. */
    /* clang-format off */
    static const char bad_ptx[][128] = {
        ".version 8.0\n.target sm_90\n.entry k(.param .u8 a[])\n{\n\tret;\n}\n",         /* incomplete array */
        ".version 8.0\n.target sm_90\n.entry k(.param .f16x2 a)\n{\n\tret;\n}\n",         /* no .param type */
        ".version 8.0\n.target sm_90\n.entry k(.param .u32 a .param .u32 b)\n{\n\tret;\n}\n", /* no comma */
        ".version 8.0\n.target sm_90\n.entry k(.param .align 3 .b8 a[3])\n{\n\tret;\n}\n", /* not a power of 2 */
        ".version 8.0\n.target sm_90\n.entry k(.param .align 4 .b8 a[4353])\n{\n\tret;\n}\n", /* > 4352 bytes */
    };
    /* clang-format on */
    CUmodule m;
    CUlibrary lib;
    CUkernel k;
    size_t off = 0, size = 0;
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuFuncGetParamInfo(NULL, 0, &off, &size));
    primary();
    m = kernels();
    CUfunction f = function(m, "gg_copy");
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuFuncGetParamInfo(f, 3, &off, &size));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuFuncGetParamInfo(f, SIZE_MAX, &off, &size));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuFuncGetParamInfo(f, 0, NULL, &size));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuFuncGetParamInfo(NULL, 0, &off, &size));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuFuncGetParamInfo((CUfunction)m, 0, &off, &size));
    OK(cuLibraryLoadFromFile(&lib, FAKECUDA_PTX, NULL, NULL, 0, NULL, NULL, 0));
    OK(cuLibraryGetKernel(&k, lib, "gg_copy"));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuKernelGetParamInfo(k, 3, &off, &size));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuKernelGetParamInfo(k, 0, NULL, NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuKernelGetParamInfo((CUkernel)f, 0, &off, &size));
    OK(cuModuleUnload(m));
    OK(cuLibraryUnload(lib));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuFuncGetParamInfo(f, 0, &off, &size));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuKernelGetParamInfo(k, 0, &off, &size));
    /* Parameter lists the JIT rejects do not load. */
    for (size_t i = 0; i < sizeof bad_ptx / sizeof bad_ptx[0]; i++)
        EXPECT(CUDA_ERROR_INVALID_PTX, cuModuleLoadData(&m, bad_ptx[i]));
}

Test(fakecuda, kernel_param_info_is_its_functions)
{
    CUlibrary lib;
    CUkernel k;
    CUfunction f;
    size_t koff, ksize, foff, fsize;
    OK(cuInit(0));
    OK(cuLibraryLoadFromFile(&lib, FAKECUDA_LAYOUTS_PTX, NULL, NULL, 0, NULL, NULL, 0));
    OK(cuLibraryGetKernel(&k, lib, "lay_mixed"));
    OK(cuKernelGetParamInfo(k, 3, &koff, &ksize)); /* no context needed */
    cr_assert_eq(koff, 12);
    cr_assert_eq(ksize, 4);
    primary();
    OK(cuKernelGetFunction(&f, k));
    for (size_t i = 0; i < 6; i++) {
        OK(cuKernelGetParamInfo(k, i, &koff, &ksize));
        OK(cuFuncGetParamInfo(f, i, &foff, &fsize));
        cr_assert(koff == foff && ksize == fsize, "parameter %zu differs", i);
    }
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuKernelGetParamInfo(k, 6, &koff, &ksize));
}

/* A link of the PTX files (NULL-terminated) and its cubin; destroy it. */
static CUlinkState link_ptx(const char *const *paths, void **cubin, size_t *size)
{
    CUlinkState link;
    OK(cuLinkCreate_v2(0, NULL, NULL, &link));
    for (; *paths; paths++)
        OK(cuLinkAddFile_v2(link, CU_JIT_INPUT_PTX, *paths, 0, NULL, NULL));
    OK(cuLinkComplete(link, cubin, size));
    return link;
}

Test(fakecuda, the_linkers_cubin_keeps_the_parameter_layouts)
{
    CUmodule m;
    void *cubin;
    size_t size;
    primary();
    CUlinkState link = link_ptx((const char *[]){ FAKECUDA_LAYOUTS_PTX, NULL }, &cubin, &size);
    OK(cuModuleLoadData(&m, cubin));
    expect_params(function(m, "lay_mixed"), 6, (size_t[]){ 0, 4, 10, 12, 16, 24 },
                  (size_t[]){ 1, 6, 2, 4, 8, 8 });
    expect_params(function(m, "lay_large"), 2, (size_t[]){ 0, 4 }, (size_t[]){ 1, 20000 });
    expect_params(function(m, "lay_none"), 0, NULL, NULL);
    OK(cuLinkDestroy(link));
}

Test(fakecuda, a_cubin_without_nv_info_has_the_fake_kernels_parameters_or_none)
{
    CUmodule m;
    void *cubin;
    size_t size;
    primary();
    CUlinkState link = link_ptx((const char *[]){ FAKECUDA_PTX, FAKECUDA_LAYOUTS_PTX, NULL },
                                &cubin, &size);
    /* The same cubin with its .nv.info sections renamed away. */
    unsigned char *copy = malloc(size);
    cr_assert_not_null(copy);
    memcpy(copy, cubin, size);
    for (unsigned char *at = copy;
         (at = memmem(at, size - (size_t)(at - copy), ".nv.info.", 9)) != NULL;)
        memcpy(at, ".nv.none.", 9);
    OK(cuModuleLoadData(&m, copy));
    CUfunction f = function(m, "gg_fill");
    expect_params(f, 3, (size_t[]){ 0, 8, 16 }, (size_t[]){ 8, 1, 8 });
    expect_params(function(m, "lay_mixed"), 0, NULL, NULL);
    CUdeviceptr p = alloc(32);
    OK(fill(f, NULL, p, 0x3c, 32));
    OK(cuCtxSynchronize());
    cr_assert_eq(byte_at(p + 31), 0x3c);
    free(copy);
    OK(cuLinkDestroy(link));
}

/*
 * An image in memory has no size but what its headers say: one placed to end
 * right before a PROT_NONE page loads, and an empty program header table far
 * away claims nothing; headers claiming bytes past that page are
 * CUDA_ERROR_INVALID_IMAGE, never a fault (a driver that read them would fault).
 */
Test(fakecuda, an_image_claiming_bytes_the_memory_does_not_hold_is_invalid_not_a_fault)
{
    CUmodule m;
    void *cubin;
    size_t size, page = (size_t)sysconf(_SC_PAGESIZE);
    primary();
    CUlinkState link = link_ptx((const char *[]){ FAKECUDA_PTX, NULL }, &cubin, &size);
    size_t span = (size + page - 1) / page * page + page;
    unsigned char *base = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                               0);
    cr_assert(base != MAP_FAILED);
    cr_assert_eq(mprotect(base + span - page, page, PROT_NONE), 0);
    unsigned char *at = base + span - page - size;
    uint64_t gib = UINT64_C(1) << 30, shoff;
    uint16_t n;

    memcpy(at, cubin, size);
    OK(cuModuleLoadData(&m, at));
    OK(cuModuleUnload(m));
    memcpy(at + 0x20, &gib, 8); /* e_phoff: an empty table */
    OK(cuModuleLoadData(&m, at));
    OK(cuModuleUnload(m));
    n = 56;
    memcpy(at + 0x36, &n, 2);
    n = 2;
    memcpy(at + 0x38, &n, 2); /* ... and now one of two entries */
    EXPECT(CUDA_ERROR_INVALID_IMAGE, cuModuleLoadData(&m, at));
    memcpy(at, cubin, size);
    memcpy(&n, at + 0x3c, 2);
    n++; /* one section header more than there is */
    memcpy(at + 0x3c, &n, 2);
    EXPECT(CUDA_ERROR_INVALID_IMAGE, cuModuleLoadData(&m, at));
    memcpy(at, cubin, size);
    memcpy(&shoff, at + 0x28, 8);
    shoff += page;
    memcpy(at + 0x28, &shoff, 8);
    EXPECT(CUDA_ERROR_INVALID_IMAGE, cuModuleLoadData(&m, at));
    /* A fatbin whose size reaches past the page. */
    unsigned char fatbin[16] = { 0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0, 64 };
    memcpy(base + span - page - sizeof(fatbin), fatbin, sizeof(fatbin));
    EXPECT(CUDA_ERROR_INVALID_IMAGE, cuModuleLoadData(&m, base + span - page - sizeof(fatbin)));
    munmap(base, span);
    OK(cuLinkDestroy(link));
}

/* The parameters of f packed into buf as cuFuncGetParamInfo places them; the buffer's size. */
static size_t pack_params(CUfunction f, unsigned char *buf, void *const *values)
{
    size_t off, size, end = 0;
    for (size_t i = 0; cuFuncGetParamInfo(f, i, &off, &size) == CUDA_SUCCESS; i++) {
        memcpy(buf + off, values[i], size);
        end = off + size;
    }
    return end;
}

Test(fakecuda, an_extra_buffer_laid_out_by_param_info_launches_the_kernel)
{
    primary();
    CUfunction f = function(kernels(), "gg_fill");
    CUdeviceptr p = alloc(40);
    unsigned char v = 0x6b, buf[64];
    uint64_t n = 40;
    size_t size = pack_params(f, buf, (void *[]){ &p, &v, &n });
    cr_assert_eq(size, 24);
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                      CU_LAUNCH_PARAM_END };
    CUlaunchConfig cfg = {
        .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32, .blockDimY = 1, .blockDimZ = 1
    };
    OK(cuLaunchKernelEx(&cfg, f, NULL, extra));
    OK(cuCtxSynchronize());
    cr_assert_eq(byte_at(p), 0x6b);
    cr_assert_eq(byte_at(p + 39), 0x6b);
}

Test(fakecuda, an_extra_buffer_is_the_parameter_space_without_tail_padding)
{
    CUmodule m;
    struct {
        uint64_t a;
        uint8_t b;
    } args = { 1, 2 }; /* sizeof: 16, the parameters end at 9 */
    size_t size = sizeof args;
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &args, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                      CU_LAUNCH_PARAM_END };
    primary();
    OK(cuModuleLoad(&m, FAKECUDA_LAYOUTS_PTX));
    CUfunction f = function(m, "lay_tail");
    /* What NVIDIA's driver answers to a buffer padded past the last parameter. */
    EXPECT(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
           cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra));
    size = 8;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra));
    size = 9;
    OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra));
    f = function(m, "lay_none");
    EXPECT(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
           cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra));
    size = 0;
    OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra));
    OK(cuCtxSynchronize());
}

Test(fakecuda, extra_lists_take_only_the_documented_keys)
{
    CUmodule m;
    uint64_t args[2] = { 0, 0 };
    size_t size = 9, zero = 0;
    primary();
    OK(cuModuleLoad(&m, FAKECUDA_LAYOUTS_PTX));
    CUfunction f = function(m, "lay_tail"), none = function(m, "lay_none");
    /* "If CU_LAUNCH_PARAM_BUFFER_SIZE is not also specified ... BUFFER_POINTER will have no effect." */
    void *no_size[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, args, CU_LAUNCH_PARAM_END };
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, no_size));
    OK(cuLaunchKernel(none, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, no_size));
    /* "It is required that BUFFER_POINTER also be specified ... if the value associated with BUFFER_SIZE is not zero." */
    void *no_pointer[] = { CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END };
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, no_pointer));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuLaunchKernel(none, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, no_pointer));
    void *zero_size[] = { CU_LAUNCH_PARAM_BUFFER_SIZE, &zero, NULL }; /* NULL ends the list too */
    OK(cuLaunchKernel(none, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, zero_size));
    void *null_size[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, args, CU_LAUNCH_PARAM_BUFFER_SIZE, NULL,
                          CU_LAUNCH_PARAM_END };
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuLaunchKernel(none, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, null_size));
    void *unknown[] = { (void *)(uintptr_t)7, args, CU_LAUNCH_PARAM_END };
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuLaunchKernel(none, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, unknown));
    OK(cuCtxSynchronize());
}

Test(fakecuda, kernel_params_need_a_pointer_for_each_declared_parameter)
{
    CUmodule m;
    uint64_t a = 1;
    uint8_t b = 2;
    primary();
    OK(cuModuleLoad(&m, FAKECUDA_LAYOUTS_PTX));
    CUfunction f = function(m, "lay_tail"); /* no host implementation: runs as a no-op */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, (void *[]){ &a, NULL }, NULL));
    OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, (void *[]){ &a, &b }, NULL));
    OK(cuLaunchKernel(function(m, "lay_none"), 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    OK(cuCtxSynchronize());
}

Test(fakecuda, an_entry_named_like_a_fake_kernel_with_other_parameters_runs_as_a_no_op)
{
    static const char other_fill[] =
        ".version 8.0\n.target sm_90\n.address_size 64\n"
        ".visible .entry gg_fill(.param .u64 p, .param .u64 n)\n{\n\tret;\n}\n";
    CUmodule m;
    size_t off, size;
    primary();
    OK(cuModuleLoadData(&m, other_fill));
    CUfunction f = function(m, "gg_fill");
    OK(cuFuncGetParamInfo(f, 1, &off, &size));
    cr_assert_eq(off, 8);
    cr_assert_eq(size, 8);
    CUdeviceptr p = alloc(16);
    unsigned char zero[16] = { 0 };
    uint64_t n = 16;
    cr_assert_eq(fakecuda_write(p, zero, sizeof zero), 0);
    OK(cuLaunchKernel(f, 1, 1, 1, 16, 1, 1, 0, NULL, (void *[]){ &p, &n }, NULL));
    OK(cuCtxSynchronize());
    cr_assert_eq(byte_at(p), 0); /* not the fake's gg_fill, which would read n as its value */
    cr_assert_eq(func_attr(f, CU_FUNC_ATTRIBUTE_NUM_REGS), 16); /* nor its registers */
}

/* Zero n bytes at p, reaching its whole extent (fakecuda_write). */
static void zero_bytes(CUdeviceptr p, size_t n)
{
    unsigned char zero[512] = { 0 };
    cr_assert_leq(n, sizeof zero);
    cr_assert_eq(fakecuda_write(p, zero, n), 0);
}

static CUresult overrun_second(CUfunction f, CUdeviceptr a, uint64_t na, CUdeviceptr b, uint64_t nb,
                               uint64_t extra)
{
    void *params[] = { &a, &na, &b, &nb, &extra };
    return cuLaunchKernel(f, 2, 1, 1, 64, 1, 1, 0, NULL, params, NULL);
}

Test(fakecuda, gg_overrun_second_fills_both_buffers_and_overruns_only_the_second)
{
    primary();
    CUfunction f = function(kernels(), "gg_overrun_second");
    CUdeviceptr a = alloc(100), b = alloc(100);
    zero_bytes(a, 256);
    zero_bytes(b, 256);
    OK(overrun_second(f, a, 100, b, 100, 156)); /* to the end of b's extent */
    cr_assert_eq(byte_at(b), 0);                /* queued */
    OK(cuCtxSynchronize());
    cr_assert_eq(byte_at(a), 0x41);
    cr_assert_eq(byte_at(a + 99), 0x41);
    cr_assert_eq(byte_at(a + 100), 0); /* a is not overrun */
    cr_assert_eq(byte_at(b), 0x41);
    cr_assert_eq(byte_at(b + 255), 0x41);
    expect_params(f, 5, (size_t[]){ 0, 8, 16, 24, 32 }, (size_t[]){ 8, 8, 8, 8, 8 });
    cr_assert_eq(func_attr(f, CU_FUNC_ATTRIBUTE_NUM_REGS), 14); /* ptxas -arch=sm_90 -v */
}

Test(fakecuda, gg_overrun_second_past_the_second_extent_is_an_illegal_address)
{
    primary();
    CUfunction f = function(kernels(), "gg_overrun_second");
    CUdeviceptr a = alloc(64), b = alloc(100), gap = alloc(256);
    OK(cuMemFree_v2(gap)); /* nothing lives right after b's extent */
    zero_bytes(a, 256);
    OK(overrun_second(f, a, 64, b, 100, 157));
    EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
    cr_assert_eq(byte_at(a + 63), 0x41); /* the first buffer was written */
    cr_assert_eq(byte_at(a + 64), 0);
    cr_assert_eq(byte_at(b + 255), 0x41); /* and the second up to the fault */
    EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
}

/* Two consecutive small allocations lie end to end, 256 bytes apart: the
 * bytes right below the second are the first's extent (what an underflow of
 * the second writes on a GPU that sub-allocates so). */
Test(fakecuda, gg_underrun_writes_the_bytes_below_its_pointer_into_the_extent_below)
{
    primary();
    CUfunction f = function(kernels(), "gg_underrun");
    CUdeviceptr a = alloc(100), b = alloc(100);
    uint64_t n = 4;
    cr_assert_eq(b, a + 256);
    zero_bytes(a, 256);
    zero_bytes(b, 256);
    OK(cuLaunchKernel(f, 2, 1, 1, 64, 1, 1, 0, NULL, (void *[]){ &b, &n }, NULL));
    OK(cuCtxSynchronize());
    cr_assert_eq(byte_at(a + 251), 0);
    cr_assert_eq(byte_at(a + 252), 0x55);
    cr_assert_eq(byte_at(a + 255), 0x55);
    cr_assert_eq(byte_at(b), 0); /* b itself is not written */
    expect_params(f, 2, (size_t[]){ 0, 8 }, (size_t[]){ 8, 8 });
    cr_assert_eq(func_attr(f, CU_FUNC_ATTRIBUTE_NUM_REGS), 12); /* ptxas -arch=sm_90 -v */
}

Test(fakecuda, gg_underrun_below_every_allocation_is_an_illegal_address)
{
    primary();
    CUfunction f = function(kernels(), "gg_underrun");
    CUdeviceptr gap = alloc(256), b = alloc(100);
    uint64_t n = 1;
    OK(cuMemFree_v2(gap)); /* nothing lives right below b */
    OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, (void *[]){ &b, &n }, NULL));
    EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
}

/* ------------------------------------------------------------------------ */
/* Launch knobs: FAKECUDA_FAIL_LAUNCH and FAKECUDA_STICKY                    */
/* ------------------------------------------------------------------------ */

Test(fakecuda, fail_launch_makes_the_nth_launch_return_its_code_without_running)
{
    setenv("FAKECUDA_FAIL_LAUNCH", "2:701", 1); /* read at cuInit */
    primary();
    CUfunction f = function(kernels(), "gg_fill");
    CUdeviceptr p1 = alloc(16), p2 = alloc(16), p3 = alloc(16);
    zero_bytes(p2, 16);
    /* A launch its checks refuse is not counted. */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 0, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
    OK(fill(f, NULL, p1, 1, 16));
    EXPECT(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, fill(f, NULL, p2, 2, 16));
    OK(fill(f, NULL, p3, 3, 16));
    OK(cuCtxSynchronize()); /* the context is fine */
    cr_assert_eq(byte_at(p1), 1);
    cr_assert_eq(byte_at(p2), 0); /* never ran */
    cr_assert_eq(byte_at(p3), 3);
}

Test(fakecuda, fail_launch_counts_the_launches_of_every_entry_point)
{
    uint64_t n = 8;
    unsigned char v = 9;
    setenv("FAKECUDA_FAIL_LAUNCH", "4:999", 1);
    primary();
    CUfunction f = function(kernels(), "gg_fill");
    CUdeviceptr p = alloc(8);
    void *params[] = { &p, &v, &n };
    CUlaunchConfig cfg = {
        .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 8, .blockDimY = 1, .blockDimZ = 1
    };
    OK(cuLaunchKernel_ptsz(f, 1, 1, 1, 8, 1, 1, 0, NULL, params, NULL));
    OK(cuLaunchCooperativeKernel(f, 1, 1, 1, 8, 1, 1, 0, NULL, params));
    OK(cuLaunchKernelEx_ptsz(&cfg, f, params, NULL));
    EXPECT(CUDA_ERROR_UNKNOWN, cuLaunchKernelEx(&cfg, f, params, NULL));
    OK(cuLaunchCooperativeKernel_ptsz(f, 1, 1, 1, 8, 1, 1, 0, NULL, params));
    OK(cuCtxSynchronize());
}

Test(fakecuda, sticky_runs_the_nth_launch_then_fails_its_context_at_the_next_sync)
{
    CUdeviceptr q;
    CUstream s;
    setenv("FAKECUDA_STICKY", "2:719", 1);
    primary();
    CUfunction f = function(kernels(), "gg_fill");
    CUdeviceptr p1 = alloc(16), p2 = alloc(16);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(fill(f, s, p1, 1, 16));
    OK(fill(f, s, p2, 2, 16)); /* the launch itself succeeds */
    OK(cuCtxGetDevice(&(CUdevice){ 0 }));
    EXPECT(CUDA_ERROR_LAUNCH_FAILED, cuStreamSynchronize(s));
    cr_assert_eq(byte_at(p2), 2); /* it ran */
    /* Sticky: every later call on the context, until it is reset. */
    EXPECT(CUDA_ERROR_LAUNCH_FAILED, cuMemAlloc_v2(&q, 16));
    EXPECT(CUDA_ERROR_LAUNCH_FAILED, cuCtxSynchronize());
    EXPECT(CUDA_ERROR_LAUNCH_FAILED, cuStreamSynchronize(s));
    EXPECT(CUDA_ERROR_LAUNCH_FAILED, fill(f, NULL, p1, 3, 16));
    OK(cuDevicePrimaryCtxReset_v2(0)); /* unloads its modules too */
    q = alloc(16);
    OK(fill(function(kernels(), "gg_fill"), NULL, q, 4, 16)); /* the third launch: no knob left */
    OK(cuCtxSynchronize());
    cr_assert_eq(byte_at(q), 4);
}

Test(fakecuda, a_sticky_error_reaches_event_sync_and_drops_the_work_queued_after_it)
{
    CUevent e;
    setenv("FAKECUDA_STICKY", "1:700", 1);
    primary();
    CUfunction f = function(kernels(), "gg_fill");
    CUdeviceptr p1 = alloc(16), p2 = alloc(16);
    zero_bytes(p2, 16);
    OK(cuEventCreate(&e, CU_EVENT_DEFAULT));
    OK(fill(f, NULL, p1, 1, 16));
    OK(cuEventRecord(e, NULL));
    OK(fill(f, NULL, p2, 2, 16));
    EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuEventSynchronize(e));
    cr_assert_eq(byte_at(p1), 1);
    EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
    cr_assert_eq(byte_at(p2), 0); /* queued after the failed kernel: dropped */
}

Test(fakecuda, a_failed_launch_takes_the_place_of_a_sticky_one)
{
    setenv("FAKECUDA_FAIL_LAUNCH", "1:2", 1);
    setenv("FAKECUDA_STICKY", "1:700", 1);
    primary();
    CUfunction f = function(kernels(), "gg_fill");
    CUdeviceptr p = alloc(16);
    EXPECT(CUDA_ERROR_OUT_OF_MEMORY, fill(f, NULL, p, 1, 16));
    OK(cuCtxSynchronize());
}

/*
 * In a child: the knobs set to `value`, a launch and a synchronisation
 * succeed, and cuInit said it ignores both.  Its exit status: 0 when so.
 */
static int run_with_malformed_knobs(const char *value)
{
    int fds[2];
    char said[512] = "";
    CUcontext c;
    CUmodule m;
    CUfunction f;
    CUdeviceptr p;
    if (pipe(fds) != 0 || dup2(fds[1], STDERR_FILENO) < 0)
        return 2;
    setenv("FAKECUDA_FAIL_LAUNCH", value, 1);
    setenv("FAKECUDA_STICKY", value, 1);
    bool ok = cuInit(0) == CUDA_SUCCESS && cuDevicePrimaryCtxRetain(&c, 0) == CUDA_SUCCESS &&
              cuCtxSetCurrent(c) == CUDA_SUCCESS &&
              cuModuleLoad(&m, FAKECUDA_PTX) == CUDA_SUCCESS &&
              cuModuleGetFunction(&f, m, "gg_fill") == CUDA_SUCCESS &&
              cuMemAlloc_v2(&p, 16) == CUDA_SUCCESS && fill(f, NULL, p, 1, 16) == CUDA_SUCCESS &&
              cuCtxSynchronize() == CUDA_SUCCESS;
    close(fds[1]);
    close(STDERR_FILENO);
    ssize_t n = read(fds[0], said, sizeof said - 1);
    said[n > 0 ? n : 0] = '\0';
    return ok && strstr(said, "ignoring FAKECUDA_FAIL_LAUNCH=") &&
                   strstr(said, "ignoring FAKECUDA_STICKY=")
               ? 0
               : 1;
}

Test(fakecuda, malformed_launch_knobs_are_reported_and_ignored)
{
    static const char *bad[] = { "1",         "x:700",  "0:700", "1:0", "1:123456",
                                 "1:700junk", "-1:700", ":700",  "1:" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pid_t pid = fork();
        cr_assert_neq(pid, -1);
        if (pid == 0)
            _exit(run_with_malformed_knobs(bad[i]));
        int status = 0;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "knobs of '%s': not ignored or not reported", bad[i]);
    }
}

/* ------------------------------------------------------------------------ */
/* cuGetProcAddress                                                          */
/* ------------------------------------------------------------------------ */

/* The address dlsym gives for an exported name, from outside the library. */
static void *exported(const char *name)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(h, "libcuda.so.1 is not loaded");
    void *p = dlsym(h, name);
    dlclose(h);
    cr_assert_not_null(p, "%s is not exported", name);
    return p;
}

static void expect_proc(const char *symbol, int version, cuuint64_t flags, const char *want)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult status = (CUdriverProcAddressQueryResult)-1;
    OK(cuGetProcAddress_v2(symbol, &fn, version, flags, &status));
    cr_assert_eq(status, CU_GET_PROC_ADDRESS_SUCCESS);
    cr_assert_eq(fn, exported(want), "%s@%d/%llu is not %s", symbol, version,
                 (unsigned long long)flags, want);
}

Test(fakecuda, get_proc_address_returns_the_variant_for_the_version_and_flags)
{
    /* Before cuInit, on purpose. */
    expect_proc("cuMemAlloc", 2000, 0, "cuMemAlloc");
    expect_proc("cuMemAlloc", 3020, 0, "cuMemAlloc_v2");
    expect_proc("cuMemAlloc", 12000, 0, "cuMemAlloc_v2");
    expect_proc("cuCtxSynchronize", 12000, 0, "cuCtxSynchronize");
    expect_proc("cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2");
    expect_proc("cuGetProcAddress", 11030, 0, "cuGetProcAddress");
    expect_proc("cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2");
    expect_proc("cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                "cuLaunchKernel_ptsz");
    expect_proc("cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, "cuLaunchKernel");
    expect_proc("cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_DEFAULT, "cuLaunchKernel");
    expect_proc("cuMemAllocAsync", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                "cuMemAllocAsync_ptsz");
    expect_proc("cuMemcpyHtoD", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                "cuMemcpyHtoD_v2_ptds");
    expect_proc("cuMemcpyHtoD", 5000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                "cuMemcpyHtoD_v2");
    expect_proc("cuModuleGetFunction", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                "cuModuleGetFunction");
    expect_proc("cuGetExportTable", 12000, 0, "cuGetExportTable");
    expect_proc("cuDriverGetVersion", 12000, 0, "cuDriverGetVersion");
}

Test(fakecuda, get_proc_address_returns_exactly_what_dlsym_returns)
{
    void *fn = NULL;
    OK(cuGetProcAddress("cuMemAlloc", &fn, 12000, 0));
    cr_assert_eq(fn, exported("cuMemAlloc_v2"));
    cr_assert_eq(fn, (void *)cuMemAlloc_v2);
}

Test(fakecuda, get_proc_address_misses_are_not_found_with_a_status)
{
    void *fn = (void *)1;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    EXPECT(CUDA_ERROR_NOT_FOUND, cuGetProcAddress_v2("cuNoSuchFunction", &fn, 12000, 0, &status));
    cr_assert_null(fn);
    cr_assert_eq(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    fn = (void *)1;
    EXPECT(CUDA_ERROR_NOT_FOUND, cuGetProcAddress_v2("cuMemAllocAsync", &fn, 11000, 0, &status));
    cr_assert_null(fn);
    cr_assert_eq(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    EXPECT(CUDA_ERROR_NOT_FOUND, cuGetProcAddress_v2("cuNoSuchFunction", &fn, 12000, 0, NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGetProcAddress_v2(NULL, &fn, 12000, 0, NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGetProcAddress_v2("cuMemAlloc", NULL, 12000, 0, NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGetProcAddress(NULL, &fn, 11030, 0));
}

Test(fakecuda, get_export_table_has_no_tables)
{
    const void *table = (const void *)1;
    CUuuid id = { { 0 } };
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGetExportTable(NULL, &id));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGetExportTable(&table, NULL));
    EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuGetExportTable(&table, &id));
    cr_assert_null(table);
}

/* ------------------------------------------------------------------------ */
/* Error strings and call counters                                           */
/* ------------------------------------------------------------------------ */

Test(fakecuda, error_names_and_strings_come_from_cuda_h)
{
    const char *s = NULL;
    OK(cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &s));
    cr_assert_str_eq(s, "CUDA_ERROR_ILLEGAL_ADDRESS");
    OK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
    cr_assert_str_eq(s, "out of memory");
    OK(cuGetErrorName(CUDA_ERROR_UNKNOWN, &s));
    cr_assert_str_eq(s, "CUDA_ERROR_UNKNOWN");
    s = "x";
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGetErrorName((CUresult)123456, &s));
    cr_assert_null(s);
    s = "x";
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGetErrorString((CUresult)123456, &s));
    cr_assert_null(s);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGetErrorName(CUDA_SUCCESS, NULL));
}

Test(fakecuda, every_entry_point_call_is_counted)
{
    CUdeviceptr p;
    fakecuda_reset_calls();
    primary();
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAlloc_v2(&p, 0));
    p = alloc(8);
    OK(cuMemFree_v2(p));
    EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemAlloc(NULL, 0));
    cr_assert_eq(fakecuda_calls("cuMemAlloc_v2"), 2);
    cr_assert_eq(fakecuda_calls("cuMemFree_v2"), 1);
    cr_assert_eq(fakecuda_calls("cuMemAlloc"), 1);
    cr_assert_eq(fakecuda_calls("cuInit"), 1);
    cr_assert_eq(fakecuda_calls("cuLaunchKernel"), 0);
    cr_assert_eq(fakecuda_calls("fakecuda_calls"), 0);
    cr_assert_eq(fakecuda_calls(NULL), 0);
    fakecuda_reset_calls();
    cr_assert_eq(fakecuda_calls("cuMemAlloc_v2"), 0);
}

Test(fakecuda, every_entry_point_has_the_census_kind_of_what_it_costs_a_gpu)
{
    static const struct {
        const char *name;
        int kind;
    } cases[] = {
        { "cuStreamSynchronize", FAKECUDA_HOST_WAIT },
        { "cuStreamSynchronize_ptsz", FAKECUDA_HOST_WAIT },
        { "cuEventSynchronize", FAKECUDA_HOST_WAIT },
        { "cuCtxSynchronize", FAKECUDA_HOST_WAIT },
        { "cuCtxSynchronize_v2", FAKECUDA_HOST_WAIT },
        { "cuMemFree_v2", FAKECUDA_HOST_WAIT },
        { "cuMemFreeHost", FAKECUDA_HOST_WAIT },
        { "cuMemcpyDtoH_v2", FAKECUDA_HOST_WAIT },
        { "cuMemcpyHtoD_v2_ptds", FAKECUDA_HOST_WAIT },
        { "cuMemcpy", FAKECUDA_HOST_WAIT },
        { "cuMemcpy3D_v2", FAKECUDA_HOST_WAIT },
        { "cuMemcpyDtoD_v2", FAKECUDA_DEVICE_WORK },
        { "cuMemcpyAtoD_v2", FAKECUDA_DEVICE_WORK },
        { "cuMemcpyPeer", FAKECUDA_DEVICE_WORK },
        { "cuMemsetD8_v2", FAKECUDA_DEVICE_WORK },
        { "cuMemsetD2D32Async_ptsz", FAKECUDA_DEVICE_WORK },
        { "cuMemcpyDtoHAsync_v2", FAKECUDA_DEVICE_WORK },
        { "cuMemcpyBatchAsync", FAKECUDA_DEVICE_WORK },
        { "cuMemAllocAsync", FAKECUDA_DEVICE_WORK },
        { "cuMemFreeAsync_ptsz", FAKECUDA_DEVICE_WORK },
        { "cuLaunchKernel", FAKECUDA_DEVICE_WORK },
        { "cuLaunchKernelEx_ptsz", FAKECUDA_DEVICE_WORK },
        { "cuGraphLaunch", FAKECUDA_DEVICE_WORK },
        { "cuEventRecord", FAKECUDA_DEVICE_WORK },
        { "cuStreamWaitEvent", FAKECUDA_DEVICE_WORK },
        { "cuStreamAddCallback", FAKECUDA_DEVICE_WORK },
        { "cuStreamQuery", FAKECUDA_QUERY },
        { "cuEventQuery", FAKECUDA_QUERY },
        { "cuEventElapsedTime", FAKECUDA_QUERY },
        { "cuPointerGetAttribute", FAKECUDA_QUERY },
        { "cuPointerGetAttributes", FAKECUDA_QUERY },
        { "cuMemGetAddressRange_v2", FAKECUDA_QUERY },
        { "cuDeviceGetAttribute", FAKECUDA_QUERY },
        { "cuStreamIsCapturing", FAKECUDA_QUERY },
        { "cuOccupancyMaxPotentialBlockSize", FAKECUDA_QUERY },
        { "cuEventCreate", FAKECUDA_CREATION },
        { "cuStreamCreateWithPriority", FAKECUDA_CREATION },
        { "cuMemPoolCreate", FAKECUDA_CREATION },
        { "cuGraphCreate", FAKECUDA_CREATION },
        { "cuGraphInstantiateWithFlags", FAKECUDA_CREATION },
        { "cuGraphAddKernelNode_v2", FAKECUDA_CREATION },
        { "cuModuleLoadData", FAKECUDA_CREATION },
        { "cuMemAlloc_v2", FAKECUDA_OTHER },
        { "cuEventDestroy_v2", FAKECUDA_OTHER },
        { "cuStreamDestroy_v2", FAKECUDA_OTHER },
        { "cuInit", FAKECUDA_OTHER },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(fakecuda_call_kind(cases[i].name), cases[i].kind, "%s: kind %d, want %d",
                     cases[i].name, fakecuda_call_kind(cases[i].name), cases[i].kind);
    cr_assert_eq(fakecuda_call_kind("cuNoSuchCall"), -1);
    cr_assert_eq(fakecuda_call_kind("fakecuda_calls"), -1);
    cr_assert_eq(fakecuda_call_kind(NULL), -1);
}

Test(fakecuda, the_census_counts_calls_by_kind_and_an_async_copy_that_waited_as_a_host_wait)
{
    CUstream s;
    CUevent e;
    unsigned char pageable[64], *pinned;
    fakecuda_census c;

    primary();
    CUdeviceptr p = alloc(64);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuMemHostAlloc((void **)&pinned, 64, 0));
    fakecuda_reset_calls();
    fakecuda_get_census(&c);
    cr_assert_eq(c.calls, 0);

    OK(cuMemsetD8Async(p, 1, 64, s));               /* device work */
    OK(cuMemcpyDtoHAsync_v2(pinned, p, 64, s));     /* device work: page-locked */
    OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING)); /* creation */
    OK(cuEventRecord(e, s));                        /* device work */
    cuStreamQuery(s);                             /* query (CUDA_ERROR_NOT_READY on the timeline) */
    OK(cuMemcpyDtoHAsync_v2(pageable, p, 64, s)); /* a host wait: pageable */
    OK(cuMemcpyDtoHAsync_v2(pageable, p, 64, s)); /* again */
    OK(cuStreamSynchronize(s));                   /* host wait */
    OK(cuEventDestroy_v2(e));                     /* other */
    fakecuda_get_census(&c);
    cr_assert_eq(c.calls, 9);
    cr_assert_eq(c.kind[FAKECUDA_HOST_WAIT], 3);
    cr_assert_eq(c.kind[FAKECUDA_DEVICE_WORK], 3);
    cr_assert_eq(c.kind[FAKECUDA_QUERY], 1);
    cr_assert_eq(c.kind[FAKECUDA_CREATION], 1);
    cr_assert_eq(c.kind[FAKECUDA_OTHER], 1);
    cr_assert_eq(pageable[0], 1);

    /* Host to host, async, is fully synchronous: a wait too. */
    OK(cuMemcpyAsync((CUdeviceptr)(uintptr_t)pageable, (CUdeviceptr)(uintptr_t)pinned, 64, s));
    fakecuda_get_census(&c);
    cr_assert_eq(c.kind[FAKECUDA_HOST_WAIT], 4);
    cr_assert_eq(c.kind[FAKECUDA_DEVICE_WORK], 3);

    fakecuda_reset_calls();
    fakecuda_get_census(&c);
    cr_assert_eq(c.calls, 0);
    cr_assert_eq(c.kind[FAKECUDA_HOST_WAIT], 0);
    OK(cuMemFreeHost(pinned));
    OK(cuStreamDestroy_v2(s));
    OK(cuMemFree_v2(p));
}

/*
 * The calls-file child: this binary run again with FAKECUDA_TEST_CALLS_CHILD
 * set makes a few calls and exits before Criterion starts.  A fresh exec
 * (not a fork of a Criterion worker) keeps sanitizers' exit-time checks sane.
 */
__attribute__((constructor)) static void calls_file_child(void)
{
    int v;
    if (!getenv("FAKECUDA_TEST_CALLS_CHILD"))
        return;
    cuInit(0);
    cuDriverGetVersion(&v);
    cuDriverGetVersion(&v);
    exit(0);
}

/* Run the calls-file child with `var` naming a fresh file; its text. */
static void run_exit_file_child(const char *var, char *buf, size_t size)
{
    char path[] = "/tmp/fakecuda-calls-XXXXXX";
    char self[4096];
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    cr_assert_gt(len, 0);
    self[len] = '\0';

    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        setenv(var, path, 1);
        setenv("FAKECUDA_TEST_CALLS_CHILD", "1", 1);
        execl(self, self, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    unlink(path);
    buf[n] = '\0';
}

Test(fakecuda, the_calls_file_is_written_at_exit)
{
    char buf[256];
    run_exit_file_child("FAKECUDA_CALLS_FILE", buf, sizeof buf);
    cr_assert_str_eq(buf, "cuInit 1\ncuDriverGetVersion 2\n");
}

Test(fakecuda, the_census_is_written_as_json_at_exit)
{
    char buf[1024];
    run_exit_file_child("FAKECUDA_CENSUS", buf, sizeof buf);
    cr_assert_str_eq(buf, "{ \"calls\": 3, \"host_waits\": 0, \"device_work\": 0, \"queries\": 2, "
                          "\"creations\": 0, \"other\": 1, \"async_waits\": 0,\n"
                          "  \"entry_points\": {\n"
                          "    \"cuInit\": { \"kind\": \"other\", \"count\": 1 },\n"
                          "    \"cuDriverGetVersion\": { \"kind\": \"queries\", \"count\": 2 }\n"
                          "  }\n}\n");
}

/* ------------------------------------------------------------------------ */
/* The device timeline (FAKECUDA_TIMELINE=1)                                 */
/* ------------------------------------------------------------------------ */

/* An hour: work that has certainly not completed while a test runs. */
#define HOUR_NS "3600000000000"
/* Long enough to see that a wait waited, short enough for a test. */
#define WAIT_NS 5000000ull

/* Each test runs in a process of its own, so cuInit reads these first. */
static CUfunction timeline(const char *kernel_ns)
{
    setenv("FAKECUDA_TIMELINE", "1", 1);
    setenv("FAKECUDA_KERNEL_NS", kernel_ns, 1);
    primary();
    return function(kernels(), "gg_fill");
}

static uint64_t host_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Polls: the device's work completes in time, so this ends. */
static void poll_stream(CUstream s)
{
    CUresult rc;
    while ((rc = cuStreamQuery(s)) == CUDA_ERROR_NOT_READY)
        ;
    OK(rc);
}

Test(fakecuda, timeline_queries_answer_not_ready_while_the_work_runs_and_run_nothing)
{
    CUfunction f = timeline(HOUR_NS);
    CUstream s;
    CUevent before, after;
    CUdeviceptr p = alloc(256);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuEventCreate(&before, 0));
    OK(cuEventCreate(&after, 0));
    OK(cuEventRecord(before, s));
    OK(fill(f, s, p, 1, 256));
    OK(cuEventRecord(after, s));

    EXPECT(CUDA_ERROR_NOT_READY, cuStreamQuery(s));
    EXPECT(CUDA_ERROR_NOT_READY, cuEventQuery(after));
    float ms;
    EXPECT(CUDA_ERROR_NOT_READY, cuEventElapsedTime(&ms, before, after));
    cr_assert_neq(byte_at(p), 1, "a query ran the kernel");
    /* The legacy stream does not wait for a non-blocking stream. */
    OK(cuStreamQuery(CU_STREAM_LEGACY));
    /* The record before the kernel completes: a poll of it ends. */
    CUresult rc;
    while ((rc = cuEventQuery(before)) == CUDA_ERROR_NOT_READY)
        ;
    OK(rc);
    EXPECT(CUDA_ERROR_NOT_READY, cuStreamQuery(s));
    cr_assert_neq(byte_at(p), 1);
    /* The test ends with the hour's kernel still queued: nothing waits. */
}

Test(fakecuda, without_the_timeline_a_query_runs_the_work_it_asks_about)
{
    setenv("FAKECUDA_TIMELINE", "0", 1);
    setenv("FAKECUDA_KERNEL_NS", HOUR_NS, 1);
    primary();
    CUfunction f = function(kernels(), "gg_fill");
    CUstream s;
    CUevent e;
    CUdeviceptr p = alloc(256);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuEventCreate(&e, 0));
    OK(fill(f, s, p, 1, 256));
    OK(cuEventRecord(e, s));
    OK(cuEventQuery(e));
    cr_assert_eq(byte_at(p), 1);
    OK(fill(f, s, p, 2, 256));
    OK(cuStreamQuery(s));
    cr_assert_eq(byte_at(p), 2);
}

Test(fakecuda, timeline_the_legacy_and_blocking_streams_wait_for_each_other_in_queries)
{
    CUfunction f = timeline(HOUR_NS);
    CUstream blocking, nonblocking;
    CUdeviceptr p = alloc(256), q = alloc(256);
    OK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    OK(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING));

    /* An hour on a blocking stream: the legacy stream's next op waits for
     * it, and a blocking stream's op waits for that one. */
    OK(fill(f, blocking, p, 1, 256));
    EXPECT(CUDA_ERROR_NOT_READY, cuStreamQuery(CU_STREAM_LEGACY));
    OK(cuMemsetD8Async(q, 2, 256, CU_STREAM_LEGACY));
    EXPECT(CUDA_ERROR_NOT_READY, cuStreamQuery(CU_STREAM_LEGACY));
    OK(cuMemsetD8Async(q, 3, 256, CU_STREAM_PER_THREAD));
    EXPECT(CUDA_ERROR_NOT_READY, cuStreamQuery(CU_STREAM_PER_THREAD));
    EXPECT(CUDA_ERROR_NOT_READY, cuStreamQuery_ptsz(NULL));
    /* A non-blocking stream does not. */
    OK(cuMemsetD8Async(q, 4, 256, nonblocking));
    poll_stream(nonblocking);
    cr_assert_eq(byte_at(q), 4);
    cr_assert_neq(byte_at(p), 1);
}

Test(fakecuda, timeline_a_stream_waiting_for_an_event_completes_after_the_events_work)
{
    CUfunction f = timeline(HOUR_NS);
    CUstream a, b, c;
    CUevent e;
    CUdeviceptr p = alloc(256), q = alloc(256);
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING));
    OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    OK(fill(f, a, p, 1, 256));
    OK(cuEventRecord(e, a));
    OK(cuStreamWaitEvent(b, e, 0));
    OK(cuMemsetD8Async(q, 5, 256, b));
    EXPECT(CUDA_ERROR_NOT_READY, cuStreamQuery(b));
    cr_assert_neq(byte_at(q), 5);
    /* The same memset on a stream that does not wait completes. */
    OK(cuMemsetD8Async(q, 6, 256, c));
    poll_stream(c);
    cr_assert_eq(byte_at(q), 6);
}

Test(fakecuda, timeline_a_capturing_stream_queues_nothing_on_the_timeline)
{
    CUfunction f = timeline(HOUR_NS);
    CUstream s;
    CUgraph g;
    CUdeviceptr p = alloc(256);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(fill(f, s, p, 1, 256));
    OK(cuStreamEndCapture(s, &g));
    OK(cuStreamQuery(s));
    cr_assert_neq(byte_at(p), 1);
    OK(cuGraphDestroy(g));
}

/* Every kind of host wait lasts until the device has completed the work it
 * waits for: at least the kernel's modelled time after the launch. */
Test(fakecuda, timeline_every_host_wait_lasts_until_the_device_completes_the_work)
{
    char ns[32];
    snprintf(ns, sizeof ns, "%llu", WAIT_NS);
    CUfunction f = timeline(ns);
    CUstream s;
    CUevent e;
    unsigned char host[256];
    CUdeviceptr p = alloc(256), q = alloc(256);
    OK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
    OK(cuEventCreate(&e, 0));

    for (int how = 0; how < 11; how++) {
        unsigned char v = (unsigned char)(10 + how);
        uint64_t t0 = host_ns();
        CUdeviceptr other;
        /* 8 and 9 on the per-thread default stream, the rest on s. */
        CUstream on = how == 8 || how == 9 ? CU_STREAM_PER_THREAD : s;
        OK(fill(f, on, p, v, 256));
        OK(cuEventRecord(e, on));
        switch (how) {
        case 0:
            OK(cuStreamSynchronize(s));
            break;
        case 1:
            OK(cuEventSynchronize(e));
            break;
        case 2:
            OK(cuCtxSynchronize());
            break;
        case 3: /* the legacy stream waits for the blocking stream */
            OK(cuMemcpyDtoH_v2(host, p, sizeof host));
            cr_assert_eq(host[0], v);
            break;
        case 4: /* into pageable memory an async copy waits too */
            OK(cuMemcpyDtoHAsync_v2(host, p, sizeof host, s));
            cr_assert_eq(host[0], v);
            break;
        case 5: /* polling ends once the device is done */
            poll_stream(s);
            break;
        case 6: /* cuMemFree_v2 runs all queued work first */
            other = alloc(16);
            OK(cuMemFree_v2(other));
            break;
        case 7: /* the legacy stream waits for the blocking stream */
            OK(cuStreamSynchronize(CU_STREAM_LEGACY));
            break;
        case 8:
            OK(cuStreamSynchronize_ptsz(NULL));
            break;
        case 9: /* a synchronous memset on the legacy stream, after the
                 * per-thread stream's work (blocking) */
            OK(cuMemsetD8_v2(q, 0, 16));
            break;
        case 10: /* a synchronous device-to-device copy on the legacy stream */
            OK(cuMemcpyDtoD_v2(q, p, 256));
            cr_assert_eq(byte_at(q), v);
            break;
        }
        uint64_t t1 = host_ns();
        cr_assert_geq(t1 - t0, WAIT_NS, "wait %d returned after %llu ns", how,
                      (unsigned long long)(t1 - t0));
        cr_assert_eq(byte_at(p), v, "wait %d", how);
    }
}

struct timeline_thread {
    CUcontext ctx;
    CUfunction f;
    CUdeviceptr p;
    uint64_t waited_ns;
    CUresult rc;
};

static void *timeline_thread_main(void *arg)
{
    struct timeline_thread *t = arg;
    uint64_t t0 = host_ns();
    t->rc = cuCtxSetCurrent(t->ctx);
    if (t->rc == CUDA_SUCCESS)
        t->rc = fill(t->f, CU_STREAM_PER_THREAD, t->p, 7, 256);
    if (t->rc == CUDA_SUCCESS)
        t->rc = cuStreamSynchronize(CU_STREAM_PER_THREAD);
    t->waited_ns = host_ns() - t0;
    return NULL;
}

/* Another thread's wait on its per-thread stream lasts until its own work
 * is done, and neither waits for nor runs a non-blocking stream's hour-long
 * memset (it would hang here for that hour). */
Test(fakecuda, timeline_another_threads_wait_is_for_its_own_stream)
{
    char ns[32];
    snprintf(ns, sizeof ns, "%llu", WAIT_NS);
    setenv("FAKECUDA_TIMELINE", "1", 1);
    setenv("FAKECUDA_KERNEL_NS", ns, 1);
    setenv("FAKECUDA_MEMSET_NS_PER_KIB", HOUR_NS, 1);
    struct timeline_thread t = { .ctx = primary() };
    t.f = function(kernels(), "gg_fill");
    t.p = alloc(256);
    CUstream s;
    CUdeviceptr q = alloc(1024);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuMemsetD8Async(q, 9, 1024, s));

    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, timeline_thread_main, &t), 0);
    pthread_join(th, NULL);
    OK(t.rc);
    cr_assert_geq(t.waited_ns, WAIT_NS);
    cr_assert_eq(byte_at(t.p), 7);
    EXPECT(CUDA_ERROR_NOT_READY, cuStreamQuery(s));
    cr_assert_neq(byte_at(q), 9);
}

struct worker_log {
    atomic_int calls;
    pthread_t thread;
    CUresult status, api_inside;
};

static void CUDA_CB worker_callback(CUstream s, CUresult status, void *user)
{
    struct worker_log *log = user;
    int n;
    (void)s;
    log->thread = pthread_self();
    log->status = status;
    log->api_inside = cuDeviceGetCount(&n);
    atomic_fetch_add(&log->calls, 1);
}

/* Wait for the callback without a driver call: only a thread of the
 * driver's can run it. The bound turns a hang into a failure. */
static bool callback_ran(struct worker_log *log)
{
    for (int i = 0; i < 10000 && !atomic_load(&log->calls); i++) {
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
    return atomic_load(&log->calls) == 1;
}

Test(fakecuda, timeline_a_stream_callback_runs_on_a_driver_thread_with_no_host_wait)
{
    char ns[32];
    snprintf(ns, sizeof ns, "%llu", WAIT_NS);
    CUfunction f = timeline(ns);
    struct worker_log log = { 0 }, second = { 0 };
    CUstream s;
    CUdeviceptr p = alloc(256);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(fill(f, s, p, 3, 256));
    OK(cuStreamAddCallback(s, worker_callback, &log, 0));
    cr_assert(callback_ran(&log), "the callback never ran");
    cr_assert(!pthread_equal(log.thread, pthread_self()));
    cr_assert_eq(log.status, CUDA_SUCCESS);
    cr_assert_eq(log.api_inside, CUDA_ERROR_NOT_PERMITTED, "callbacks must not call the API");
    cr_assert_eq(byte_at(p), 3, "the work before the callback ran first");

    /* The same on the legacy stream, after a blocking stream's work. */
    CUstream b;
    OK(cuStreamCreate(&b, CU_STREAM_DEFAULT));
    OK(fill(f, b, p, 4, 256));
    OK(cuStreamAddCallback(NULL, worker_callback, &second, 0));
    cr_assert(callback_ran(&second), "the callback never ran");
    cr_assert_eq(byte_at(p), 4);
    OK(cuStreamSynchronize(s));
    cr_assert_eq(atomic_load(&log.calls), 1, "a callback runs once");
}

Test(fakecuda, timeline_event_times_are_the_modelled_device_times)
{
    char ns[32];
    snprintf(ns, sizeof ns, "%llu", WAIT_NS);
    CUfunction f = timeline(ns);
    CUstream s;
    CUevent a, b;
    float ms;
    CUdeviceptr p = alloc(256);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuEventCreate(&a, 0));
    OK(cuEventCreate(&b, 0));
    OK(cuEventRecord(a, s));
    OK(fill(f, s, p, 1, 256));
    OK(fill(f, s, p, 2, 256));
    OK(cuEventRecord(b, s));
    OK(cuEventSynchronize(b));
    OK(cuEventElapsedTime(&ms, a, b));
    /* At least two kernels, each WAIT_NS and FAKECUDA_OP_NS (1 us), and the
     * record, back to back on the device (the first may start a little
     * after the first record: when the host queued it). */
    cr_assert_geq(ms, 2 * WAIT_NS / 1e6 + 0.003 - 1e-5, "%f ms", (double)ms);
}

/* ------------------------------------------------------------------------ */
/* Threads and capacity                                                      */
/* ------------------------------------------------------------------------ */

#define THREADS 16
#define PER_THREAD 2000

static atomic_int worker_failures;

/* Counts failures instead of asserting: Criterion asserts only on the test's thread. */
#define WORKER_OK(call)                            \
    do {                                           \
        if ((call) != CUDA_SUCCESS) {              \
            atomic_fetch_add(&worker_failures, 1); \
            return NULL;                           \
        }                                          \
    } while (0)

static void *alloc_free_worker(void *arg)
{
    CUcontext c = arg;
    CUdeviceptr p[64];
    WORKER_OK(cuCtxSetCurrent(c));
    for (int round = 0; round < PER_THREAD / 64; round++) {
        for (int i = 0; i < 64; i++)
            WORKER_OK(cuMemAlloc_v2(&p[i], (size_t)(i + 1) * 8));
        for (int i = 0; i < 64; i++) {
            unsigned char b = (unsigned char)i;
            WORKER_OK(cuMemsetD8_v2(p[i], b, (size_t)(i + 1) * 8));
            b = 0xff;
            WORKER_OK(cuMemcpyDtoH_v2(&b, p[i] + (size_t)i * 8, 1));
            if (b != (unsigned char)i)
                atomic_fetch_add(&worker_failures, 1);
        }
        for (int i = 0; i < 32; i++)
            WORKER_OK(cuMemFree_v2(p[i]));
        for (int i = 32; i < 64; i++)
            WORKER_OK(cuMemFreeAsync(p[i], CU_STREAM_PER_THREAD));
        WORKER_OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
    }
    return NULL;
}

Test(fakecuda, sixteen_threads_allocate_and_free_concurrently_with_exact_counts)
{
    pthread_t t[THREADS];
    CUcontext c = primary();
    fakecuda_reset_calls();
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, alloc_free_worker, c);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(atomic_load(&worker_failures), 0);
    unsigned long rounds = THREADS * (PER_THREAD / 64);
    cr_assert_eq(fakecuda_calls("cuMemAlloc_v2"), rounds * 64);
    cr_assert_eq(fakecuda_calls("cuMemFree_v2"), rounds * 32);
    cr_assert_eq(fakecuda_calls("cuMemFreeAsync"), rounds * 32);
    cr_assert_eq(fakecuda_live_allocations(), 0);
    cr_assert_eq(fakecuda_mem_used(), 0);
}

Test(fakecuda, a_million_live_allocations_of_16_bytes, .timeout = 240)
{
    enum {
        N = 1000000
    };
    CUdeviceptr *p = malloc(N * sizeof *p);
    CUdeviceptr base = 0;
    size_t size = 0;
    cr_assert_not_null(p);
    primary();
    for (size_t i = 0; i < N; i++)
        cr_assert_eq(cuMemAlloc_v2(&p[i], 16), CUDA_SUCCESS, "allocation %zu", i);
    cr_assert_eq(fakecuda_live_allocations(), N);
    cr_assert_eq(fakecuda_mem_used(), (size_t)N * 16);
    for (size_t i = 0; i < N; i += 99991) {
        OK(cuMemGetAddressRange_v2(&base, &size, p[i] + 15));
        cr_assert_eq(base, p[i]);
        cr_assert_eq(size, 16);
    }
    for (size_t i = 0; i < N; i += 2)
        cr_assert_eq(cuMemFree_v2(p[i]), CUDA_SUCCESS);
    for (size_t i = 1; i < N; i += 2)
        cr_assert_eq(cuMemFree_v2(p[i]), CUDA_SUCCESS);
    cr_assert_eq(fakecuda_live_allocations(), 0);
    free(p);
}

/* ------------------------------------------------------------------------ */
/* Devices: compute capability, UUID, peers, profiler                        */
/* ------------------------------------------------------------------------ */

Test(fakecuda, the_deprecated_compute_capability_query_agrees_with_the_attributes)
{
    int major = 0, minor = -1;
    OK(cuInit(0));
    OK(cuDeviceComputeCapability(&major, &minor, 0));
    cr_assert_eq(major, 9);
    cr_assert_eq(minor, 0);
    EXPECT(CUDA_ERROR_INVALID_DEVICE, cuDeviceComputeCapability(&major, &minor, 1));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuDeviceComputeCapability(NULL, &minor, 0));
}

Test(fakecuda, uuids_are_fixed_distinct_per_device_and_the_same_in_both_forms)
{
    CUuuid a, b, c;
    setenv("FAKECUDA_DEVICES", "2", 1);
    OK(cuInit(0));
    OK(cuDeviceGetUuid(&a, 0));
    OK(cuDeviceGetUuid_v2(&b, 0));
    cr_assert_eq(memcmp(a.bytes, b.bytes, sizeof a.bytes), 0);
    OK(cuDeviceGetUuid_v2(&c, 1));
    cr_assert_neq(memcmp(a.bytes, c.bytes, sizeof a.bytes), 0);
    cr_assert_eq((unsigned char)a.bytes[6] >> 4, 4, "a version 4 UUID");
    EXPECT(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetUuid_v2(&c, 2));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuDeviceGetUuid_v2(NULL, 0));
}

Test(fakecuda, devices_have_no_peer_access)
{
    int can = -1;
    CUcontext c0, c1;
    setenv("FAKECUDA_DEVICES", "2", 1);
    OK(cuInit(0));
    OK(cuDeviceCanAccessPeer(&can, 0, 1));
    cr_assert_eq(can, 0);
    can = -1;
    OK(cuDeviceCanAccessPeer(&can, 0, 0));
    cr_assert_eq(can, 0);
    EXPECT(CUDA_ERROR_INVALID_DEVICE, cuDeviceCanAccessPeer(&can, 0, 2));

    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuCtxEnablePeerAccess(NULL, 0)); /* no current context */
    OK(cuCtxCreate_v2(&c1, 0, 1));
    OK(cuCtxCreate_v2(&c0, 0, 0));
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuCtxEnablePeerAccess(c0, 0)); /* itself */
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuCtxEnablePeerAccess((CUcontext)&can, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuCtxEnablePeerAccess(c1, 1));
    EXPECT(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, cuCtxEnablePeerAccess(c1, 0));
}

Test(fakecuda, the_profiler_switches_need_a_current_context)
{
    OK(cuInit(0));
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuProfilerStart());
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuProfilerStop());
    primary();
    OK(cuProfilerStart());
    OK(cuProfilerStart());
    OK(cuProfilerStop());
}

/* ------------------------------------------------------------------------ */
/* Host, managed and IPC memory                                              */
/* ------------------------------------------------------------------------ */

Test(fakecuda, the_attributes_say_what_host_and_managed_memory_can_do)
{
    int v = -1;
    primary();
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 0));
    cr_assert_eq(v, 0);
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 0));
    cr_assert_eq(v, 0);
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 0));
    cr_assert_eq(v, 0);
}

Test(fakecuda, page_locked_memory_is_host_memory_with_its_flags)
{
    unsigned char *h = NULL;
    unsigned int flags = 0;
    CUdeviceptr d, dp;
    primary();
    OK(cuMemHostAlloc((void **)&h, 5000, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    cr_assert_not_null(h);
    memset(h, 0x7e, 5000);
    d = alloc(5000);
    OK(cuMemcpyHtoD_v2(d, h, 5000));
    cr_assert_eq(byte_at(d + 4999), 0x7e);
    OK(cuMemHostGetFlags(&flags, h + 4999)); /* any address inside */
    cr_assert_eq(flags, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemHostGetFlags(&flags, h + 5000));
    /* The device cannot map host memory: the failure DEVICEMAP defers. */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemHostGetDevicePointer_v2(&dp, h, 0));
    EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemHostGetDevicePointer((CUdeviceptr_v1 *)&dp, h, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFreeHost(h + 1));
    OK(cuMemFreeHost(h));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFreeHost(h));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemHostGetFlags(&flags, h));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemHostAlloc((void **)&h, 0, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemHostAlloc((void **)&h, 16, 0x80));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemHostAlloc(NULL, 16, 0));
}

Test(fakecuda, page_locked_memory_goes_with_its_context)
{
    void *h = NULL;
    unsigned int flags;
    CUcontext created;
    OK(cuInit(0));
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuMemHostAlloc(&h, 16, 0));
    OK(cuCtxCreate_v2(&created, 0, 0));
    OK(cuMemHostAlloc(&h, 16, 0));
    OK(cuCtxDestroy_v2(created));
    primary();
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemHostGetFlags(&flags, h));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFreeHost(h));
}

Test(fakecuda, registration_and_managed_memory_are_not_supported)
{
    static char buf[4096];
    CUdeviceptr d;
    primary();
    EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemHostRegister_v2(buf, sizeof buf, 0));
    EXPECT(CUDA_ERROR_NOT_SUPPORTED,
           cuMemHostRegister(buf, sizeof buf, CU_MEMHOSTREGISTER_PORTABLE));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemHostRegister_v2(buf, sizeof buf, 0x100));
    EXPECT(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, cuMemHostUnregister(buf));
    EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemAllocManaged(&d, 64, CU_MEM_ATTACH_GLOBAL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAllocManaged(&d, 0, CU_MEM_ATTACH_GLOBAL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAllocManaged(&d, 64, CU_MEM_ATTACH_SINGLE));
    cr_assert_eq(fakecuda_live_allocations(), 0);
}

Test(fakecuda, ipc_handles_are_made_per_buffer_and_cannot_be_mapped)
{
    CUipcMemHandle a, b, zero;
    CUdeviceptr p, q, r, async;
    primary();
    p = alloc(100);
    OK(cuIpcGetMemHandle(&a, p));
    OK(cuIpcGetMemHandle(&b, p));
    cr_assert_eq(memcmp(&a, &b, sizeof a), 0);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuIpcGetMemHandle(&b, p + 4)); /* not the base */
    OK(cuMemFree_v2(p));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuIpcGetMemHandle(&b, p));
    q = alloc(100);
    cr_assert_eq(q, p, "the fake reuses the address");
    OK(cuIpcGetMemHandle(&b, q));
    cr_assert_neq(memcmp(&a, &b, sizeof a), 0, "a new allocation gets a new handle");
    OK(cuMemAllocAsync(&async, 100, NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuIpcGetMemHandle(&b, async)); /* pool memory */

    memset(&zero, 0, sizeof zero);
    EXPECT(CUDA_ERROR_MAP_FAILED, cuIpcOpenMemHandle_v2(&r, b, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    EXPECT(CUDA_ERROR_INVALID_HANDLE,
           cuIpcOpenMemHandle_v2(&r, zero, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuIpcOpenMemHandle_v2(&r, b, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuIpcCloseMemHandle(q));
}

/* ------------------------------------------------------------------------ */
/* Functions, globals, the linker, occupancy                                 */
/* ------------------------------------------------------------------------ */

static int func_attr(CUfunction f, CUfunction_attribute a)
{
    int v = -12345;
    OK(cuFuncGetAttribute(&v, a, f));
    return v;
}

Test(fakecuda, function_attributes_are_those_of_the_sm_90_build)
{
    CUmodule m;
    primary();
    m = kernels();
    CUfunction fill_fn = function(m, "gg_fill"), sum = function(m, "gg_sum");
    cr_assert_eq(func_attr(fill_fn, CU_FUNC_ATTRIBUTE_NUM_REGS), 14); /* ptxas -arch=sm_90 -v */
    cr_assert_eq(func_attr(sum, CU_FUNC_ATTRIBUTE_NUM_REGS), 18);
    cr_assert_eq(func_attr(fill_fn, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK), 1024);
    cr_assert_eq(func_attr(fill_fn, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES), 0);
    cr_assert_eq(func_attr(fill_fn, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES), 0);
    cr_assert_eq(func_attr(fill_fn, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES), 0);
    cr_assert_eq(func_attr(fill_fn, CU_FUNC_ATTRIBUTE_PTX_VERSION), 80); /* .version 8.0 */
    cr_assert_eq(func_attr(fill_fn, CU_FUNC_ATTRIBUTE_BINARY_VERSION), 90);
    cr_assert_eq(func_attr(fill_fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), 48 * 1024);

    int v;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX, fill_fn));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuFuncGetAttribute(NULL, CU_FUNC_ATTRIBUTE_NUM_REGS, fill_fn));
    EXPECT(CUDA_ERROR_INVALID_HANDLE,
           cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, (CUfunction)m));
    OK(cuFuncSetCacheConfig(fill_fn, CU_FUNC_CACHE_PREFER_L1));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuFuncSetCacheConfig(fill_fn, (CUfunc_cache)7));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuFuncSetCacheConfig(NULL, CU_FUNC_CACHE_PREFER_NONE));
}

Test(fakecuda, the_ptx_version_of_a_function_is_its_modules)
{
    static const char ptx78[] = ".version 7.8\n.target sm_80\n.address_size 64\n"
                                ".visible .entry gg_fill()\n{\n\tret;\n}\n";
    CUmodule m;
    primary();
    OK(cuModuleLoadData(&m, ptx78));
    cr_assert_eq(func_attr(function(m, "gg_fill"), CU_FUNC_ATTRIBUTE_PTX_VERSION), 78);
}

Test(fakecuda, modules_have_no_globals)
{
    CUdeviceptr p;
    size_t n;
    primary();
    CUmodule m = kernels();
    EXPECT(CUDA_ERROR_NOT_FOUND, cuModuleGetGlobal_v2(&p, &n, m, "anything"));
    EXPECT(CUDA_ERROR_NOT_FOUND, cuModuleGetGlobal_v2(NULL, &n, m, "anything"));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuModuleGetGlobal_v2(NULL, NULL, m, "anything"));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuModuleGetGlobal_v2(&p, &n, m, NULL));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuModuleGetGlobal_v2(&p, &n, (CUmodule)&n, "anything"));
    EXPECT(CUDA_ERROR_NOT_SUPPORTED,
           cuModuleGetGlobal((CUdeviceptr_v1 *)&p, (unsigned int *)&n, m, "x"));
}

Test(fakecuda, the_linker_writes_a_cubin_of_its_inputs_kernels)
{
    CUlinkState link;
    CUmodule m;
    CUfunction f;
    void *cubin = NULL;
    size_t size = 0;
    char info[32] = "junk";
    CUjit_option opts[] = { CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES };
    void *vals[] = { info, (void *)(uintptr_t)sizeof info };
    primary();
    OK(cuLinkCreate_v2(2, opts, vals, &link));
    OK(cuLinkAddData_v2(link, CU_JIT_INPUT_PTX, (void *)custom_ptx, sizeof custom_ptx, "custom", 0,
                        NULL, NULL));
    OK(cuLinkAddFile_v2(link, CU_JIT_INPUT_PTX, FAKECUDA_PTX, 0, NULL, NULL));
    OK(cuLinkComplete(link, &cubin, &size));
    cr_assert_str_empty(info);
    cr_assert_gt(size, 4);
    cr_assert_eq(memcmp(cubin, "\177ELF", 4), 0);

    OK(cuModuleLoadData(&m, cubin));
    OK(cuLinkDestroy(link));
    OK(cuModuleGetFunction(&f, m, "my_kernel"));
    CUdeviceptr p = alloc(64);
    unsigned char v = 0x33;
    uint64_t n = 64;
    OK(fill(function(m, "gg_fill"), NULL, p, v, n)); /* runs as the real gg_fill */
    OK(cuCtxSynchronize());
    cr_assert_eq(byte_at(p + 63), 0x33);
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuLinkDestroy(link));
}

Test(fakecuda, linker_argument_errors)
{
    CUlinkState link;
    CUjit_option bad[] = { CU_JIT_WALL_TIME };
    float wall = 0;
    void *bad_vals[] = { &wall };
    OK(cuInit(0));
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuLinkCreate_v2(0, NULL, NULL, &link));
    primary();
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuLinkCreate_v2(0, NULL, NULL, NULL));
    OK(cuLinkCreate(0, NULL, NULL, &link));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuLinkAddData_v2(link, CU_JIT_INPUT_PTX, (void *)custom_ptx,
                                                      sizeof custom_ptx, NULL, 1, bad, bad_vals));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuLinkAddData_v2(link, CU_JIT_INPUT_PTX, NULL, 10, NULL, 0, NULL, NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuLinkAddData_v2(link, (CUjitInputType)99, (void *)custom_ptx,
                                                      sizeof custom_ptx, NULL, 0, NULL, NULL));
    EXPECT(CUDA_ERROR_INVALID_PTX,
           cuLinkAddData_v2(link, CU_JIT_INPUT_PTX, "not ptx", 8, NULL, 0, NULL, NULL));
    EXPECT(CUDA_ERROR_FILE_NOT_FOUND,
           cuLinkAddFile_v2(link, CU_JIT_INPUT_PTX, "/nonexistent/k.ptx", 0, NULL, NULL));
    EXPECT(CUDA_ERROR_INVALID_HANDLE,
           cuLinkComplete((CUlinkState)&wall, (void **)&bad_vals[0], NULL));
    OK(cuLinkDestroy(link));
}

static size_t smem_for_block(int block_size)
{
    return block_size > 256 ? 64 * 1024 : 0; /* more than a block may have */
}

Test(fakecuda, occupancy_follows_the_sm_90_limits)
{
    int blocks = -1, grid = -1, size = -1;
    primary();
    CUfunction f = function(kernels(), "gg_fill"); /* 14 registers */
    OK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 1024, 0));
    cr_assert_eq(blocks, 2); /* 2048 threads per SM */
    OK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 32, 0));
    cr_assert_eq(blocks, 32); /* 32 blocks per SM */
    OK(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, f, 128, 40 * 1024,
                                                            CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE));
    cr_assert_eq(blocks, 5); /* 228 KiB / (40 KiB + 1 KiB reserved) */
    OK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 128, 48 * 1024 + 1));
    cr_assert_eq(blocks, 0); /* more than a block may have without opt-in */
    OK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 1056, 0));
    cr_assert_eq(blocks, 0);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 0, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, NULL, 32, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, f, 32, 0, 2));

    OK(cuOccupancyMaxPotentialBlockSize(&grid, &size, f, NULL, 0, 0));
    cr_assert_eq(size, 1024);
    cr_assert_eq(grid, 2 * 132);
    /* Under a limit of 100 threads, 64-thread blocks fill an SM (32 x 64). */
    OK(cuOccupancyMaxPotentialBlockSizeWithFlags(&grid, &size, f, NULL, 0, 100,
                                                 CU_OCCUPANCY_DEFAULT));
    cr_assert_eq(size, 64);
    cr_assert_eq(grid, 32 * 132);
    /* Blocks above 256 threads would need too much shared memory: 256 x 8. */
    OK(cuOccupancyMaxPotentialBlockSize(&grid, &size, f, smem_for_block, 0, 0));
    cr_assert_eq(size, 256);
    cr_assert_eq(grid, 8 * 132);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuOccupancyMaxPotentialBlockSize(NULL, &size, f, NULL, 0, 0));
}

/* ------------------------------------------------------------------------ */
/* Stream callbacks and event timing                                         */
/* ------------------------------------------------------------------------ */

struct cb_log {
    int calls;
    CUstream stream;
    CUresult status;
    CUresult api_inside;
};

static void CUDA_CB record_callback(CUstream s, CUresult status, void *user)
{
    struct cb_log *log = user;
    int n;
    log->calls++;
    log->stream = s;
    log->status = status;
    log->api_inside = cuDeviceGetCount(&n);
}

Test(fakecuda, a_stream_callback_runs_once_after_the_work_before_it)
{
    struct cb_log log = { 0 };
    CUstream s;
    primary();
    CUdeviceptr p = alloc(64);
    OK(cuStreamCreate(&s, 0));
    OK(fill(function(kernels(), "gg_fill"), s, p, 0x21, 64));
    OK(cuStreamAddCallback(s, record_callback, &log, 0));
    cr_assert_eq(log.calls, 0, "queued until the stream runs");
    OK(cuStreamSynchronize(s));
    cr_assert_eq(log.calls, 1);
    cr_assert_eq(log.stream, s);
    cr_assert_eq(log.status, CUDA_SUCCESS);
    cr_assert_eq(log.api_inside, CUDA_ERROR_NOT_PERMITTED, "callbacks must not call the API");
    OK(cuStreamSynchronize(s));
    cr_assert_eq(log.calls, 1);
    OK(cuStreamAddCallback_ptsz(NULL, record_callback, &log, 0));
    OK(cuCtxSynchronize());
    cr_assert_eq(log.calls, 2);
    cr_assert_null(log.stream);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamAddCallback(s, record_callback, &log, 1));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamAddCallback(s, NULL, &log, 0));
    EXPECT(CUDA_ERROR_INVALID_HANDLE,
           cuStreamAddCallback((CUstream)&log, record_callback, &log, 0));
}

Test(fakecuda, a_stream_callback_after_a_fault_gets_the_error)
{
    struct cb_log log = { 0 };
    uint64_t n = 100, extra = 1000;
    primary();
    CUdeviceptr p = alloc(100);
    OK(launch3(function(kernels(), "gg_overrun"), NULL, &p, &n, &extra));
    OK(cuStreamAddCallback(NULL, record_callback, &log, 0));
    EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
    cr_assert_eq(log.calls, 1);
    cr_assert_eq(log.status, CUDA_ERROR_ILLEGAL_ADDRESS);
}

Test(fakecuda, elapsed_time_needs_two_completed_timing_records)
{
    CUevent a, b, untimed;
    CUstream s;
    float ms = -1;
    primary();
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuEventCreate(&a, 0));
    OK(cuEventCreate(&b, 0));
    OK(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime_v2(&ms, a, b)); /* never recorded */
    OK(cuEventRecord(a, s));
    OK(cuEventRecord(b, s));
    EXPECT(CUDA_ERROR_NOT_READY, cuEventElapsedTime_v2(&ms, a, b)); /* it does not run the stream */
    OK(cuEventSynchronize(b));
    OK(cuEventElapsedTime_v2(&ms, a, b));
    cr_assert_geq(ms, 0.0f, "b ran after a");
    OK(cuEventElapsedTime(&ms, a, b));
    cr_assert_geq(ms, 0.0f);
    OK(cuEventRecord(untimed, s));
    OK(cuStreamSynchronize(s));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime_v2(&ms, a, untimed));
    OK(cuEventRecord(a, s)); /* a new record is pending again */
    EXPECT(CUDA_ERROR_NOT_READY, cuEventElapsedTime_v2(&ms, a, b));
}

Test(fakecuda, get_proc_address_hands_out_the_new_entry_points_by_version)
{
    OK(cuInit(0));
    expect_proc("cuIpcOpenMemHandle", 4010, CU_GET_PROC_ADDRESS_DEFAULT, "cuIpcOpenMemHandle");
    expect_proc("cuIpcOpenMemHandle", 11000, CU_GET_PROC_ADDRESS_DEFAULT, "cuIpcOpenMemHandle_v2");
    expect_proc("cuEventElapsedTime", 12000, CU_GET_PROC_ADDRESS_DEFAULT, "cuEventElapsedTime");
    expect_proc("cuEventElapsedTime", 13000, CU_GET_PROC_ADDRESS_DEFAULT, "cuEventElapsedTime_v2");
    expect_proc("cuStreamAddCallback", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                "cuStreamAddCallback_ptsz");
    expect_proc("cuProfilerStart", 4000, CU_GET_PROC_ADDRESS_DEFAULT, "cuProfilerStart");
}

/* ------------------------------------------------------------------------ */
/* What cuda-bindings, cuda-core and numba-cuda call (tests/clients)         */
/* ------------------------------------------------------------------------ */

Test(fakecuda, kernel_attributes_are_their_functions_and_keep_what_was_set)
{
    CUlibrary lib;
    CUkernel k;
    int v = -7;
    OK(cuInit(0));
    OK(cuLibraryLoadFromFile(&lib, FAKECUDA_PTX, NULL, NULL, 0, NULL, NULL, 0));
    OK(cuLibraryGetKernel(&k, lib, "gg_fill"));
    /* No context is needed: a library's kernel is context-less. */
    OK(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, k, 0));
    cr_assert_eq(v, 14);
    OK(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_PTX_VERSION, k, 0));
    cr_assert_eq(v, 80);
    OK(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, k, 0));
    cr_assert_eq(v, -1);
    OK(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 50, k, 0));
    OK(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, k, 0));
    cr_assert_eq(v, 50);
    OK(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 227 * 1024, k, 0));
    OK(cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k, 0));
    cr_assert_eq(v, 227 * 1024);
    /* Read-only attributes, values the device cannot take, bad arguments. */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS, 1, k, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 227 * 1024 + 1, k,
                                0));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 101, k, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 2, k, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX, k, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuKernelGetAttribute(NULL, CU_FUNC_ATTRIBUTE_NUM_REGS, k, 0));
    EXPECT(CUDA_ERROR_INVALID_HANDLE,
           cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, (CUkernel)lib, 0));
    EXPECT(CUDA_ERROR_INVALID_DEVICE, cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, k, 1));
    EXPECT(CUDA_ERROR_INVALID_DEVICE,
           cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 0, k, 1));
    OK(cuKernelSetCacheConfig(k, CU_FUNC_CACHE_PREFER_SHARED, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuKernelSetCacheConfig(k, (CUfunc_cache)7, 0));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuKernelSetCacheConfig(NULL, CU_FUNC_CACHE_PREFER_NONE, 0));
    EXPECT(CUDA_ERROR_INVALID_DEVICE, cuKernelSetCacheConfig(k, CU_FUNC_CACHE_PREFER_NONE, -1));
    OK(cuLibraryUnload(lib));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, k, 0));
}

/* cuda.h: CUDA_ERROR_NOT_FOUND when the library has no global of that name
 * (the fake's never have one, fakecuda.h), and one of dptr and bytes, not
 * both, may be NULL. */
Test(fakecuda, libraries_have_no_globals)
{
    CUlibrary lib;
    CUdeviceptr p = 1;
    size_t n = 2;
    OK(cuInit(0));
    OK(cuLibraryLoadFromFile(&lib, FAKECUDA_PTX, NULL, NULL, 0, NULL, NULL, 0));
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuLibraryGetGlobal(&p, &n, lib, "anything"));
    primary();
    EXPECT(CUDA_ERROR_NOT_FOUND, cuLibraryGetGlobal(&p, &n, lib, "anything"));
    EXPECT(CUDA_ERROR_NOT_FOUND,
           cuLibraryGetGlobal(&p, &n, lib, "gg_fill")); /* a kernel, no variable */
    cr_assert(p == 1 && n == 2, "a failed lookup wrote its outputs");
    EXPECT(CUDA_ERROR_NOT_FOUND, cuLibraryGetGlobal(&p, NULL, lib, "anything"));
    EXPECT(CUDA_ERROR_NOT_FOUND, cuLibraryGetGlobal(NULL, &n, lib, "anything"));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuLibraryGetGlobal(NULL, NULL, lib, "anything"));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuLibraryGetGlobal(&p, &n, lib, NULL));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuLibraryGetGlobal(&p, &n, (CUlibrary)&n, "anything"));
    OK(cuLibraryUnload(lib));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuLibraryGetGlobal(&p, &n, lib, "anything"));
}

Test(fakecuda, the_default_pool_is_current_and_counts_what_it_hands_out)
{
    CUmemoryPool pool, current;
    CUdeviceptr a, b;
    cuuint64_t v = 1;
    int on = 0;
    primary();
    OK(cuDeviceGetDefaultMemPool(&pool, 0));
    OK(cuDeviceGetMemPool(&current, 0));
    cr_assert_eq(pool, current);
    OK(cuDeviceSetMemPool(0, pool));
    OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
    cr_assert_eq(v, 0);
    OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &on));
    cr_assert_eq(on, 1); /* "(default enabled)" */

    OK(cuMemAllocFromPoolAsync(&a, 1000, pool, NULL));
    OK(cuMemAllocAsync(&b, 100, NULL)); /* the current pool is the same one */
    OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
    cr_assert_eq(v, 1024 + 256); /* extents */
    OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v));
    cr_assert_eq(v, 1024 + 256);
    OK(cuMemFreeAsync(a, NULL));
    OK(cuMemFreeAsync(b, NULL));
    OK(cuCtxSynchronize());
    OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
    cr_assert_eq(v, 0);
    OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v));
    cr_assert_eq(v, 1024 + 256);
    v = 0;
    OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v));
    OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v));
    cr_assert_eq(v, 0);
    v = 1 << 20;
    OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v));
    v = 0;
    OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v));
    cr_assert_eq(v, 1 << 20);
    OK(cuMemPoolTrimTo(pool, 0));

    /* High watermarks reset only to zero; current use is read-only. */
    v = 5;
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &v));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolGetAttribute(pool, (CUmemPool_attribute)99, &v));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemPoolGetAttribute((CUmemoryPool)&v, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolTrimTo(NULL, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAllocFromPoolAsync(&a, 0, pool, NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAllocFromPoolAsync(&a, 16, NULL, NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAllocFromPoolAsync(NULL, 16, pool, NULL));
    EXPECT(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetDefaultMemPool(&pool, 1));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuDeviceGetDefaultMemPool(NULL, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuDeviceGetMemPool(&pool, 1));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuDeviceSetMemPool(0, NULL));
    OK(cuCtxSetCurrent(NULL));
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuMemAllocFromPoolAsync(&a, 16, pool, NULL));
}

Test(fakecuda, a_pool_of_another_device_allocates_there)
{
    CUmemoryPool pool1;
    setenv("FAKECUDA_DEVICES", "2", 1);
    CUdeviceptr p;
    CUdevice dev = -1;
    primary();
    OK(cuDeviceGetDefaultMemPool(&pool1, 1));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuDeviceSetMemPool(0, pool1));
    OK(cuMemAllocFromPoolAsync(&p, 64, pool1, NULL));
    OK(cuPointerGetAttribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
    cr_assert_eq(dev, 1);
    OK(cuMemFreeAsync(p, NULL));
    OK(cuCtxSynchronize());
}

Test(fakecuda, an_async_copy_to_pageable_memory_is_done_when_it_returns)
{
    CUstream s;
    unsigned char *pinned = NULL, pageable[16] = { 0 };
    primary();
    CUdeviceptr p = alloc(16);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuMemsetD8Async(p, 0x42, 16, s));
    /* Into pageable memory: the stream's earlier work, then the copy. */
    OK(cuMemcpyDtoHAsync_v2(pageable, p, 16, s));
    cr_assert_eq(pageable[15], 0x42);
    /* Into page-locked memory: queued until the stream runs. */
    OK(cuMemHostAlloc((void **)&pinned, 16, 0));
    memset(pinned, 0, 16);
    OK(cuMemsetD8Async(p, 0x43, 16, s));
    OK(cuMemcpyDtoHAsync_v2(pinned, p, 16, s));
    cr_assert_eq(pinned[15], 0);
    OK(cuStreamSynchronize(s));
    cr_assert_eq(pinned[15], 0x43);
    OK(cuMemFreeHost(pinned));
}

static void *exported(const char *name);

/* cuMemcpyBatchAsync of CUDA 12.8, the form that gives back the failing copy. */
typedef CUresult (*batch_v1_fn)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t,
                                CUmemcpyAttributes *, size_t *, size_t, size_t *, CUstream);

/* One batch of `n` copies on s, every copy in stream order; *fail: the index given back. */
static CUresult batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t n, CUstream s,
                      size_t *fail)
{
    static batch_v1_fn v1;
    CUmemcpyAttributes attr = { .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM };
    size_t idx = 0;
    if (!v1)
        v1 = (batch_v1_fn)exported("cuMemcpyBatchAsync");
    return v1(dsts, srcs, sizes, n, &attr, &idx, 1, fail, s);
}

Test(fakecuda, a_batched_copy_reads_bands_of_many_allocations_in_any_order)
{
    enum {
        N = 64,
        BAND = 16
    };
    static const int orders[3][2] = { { 0, 1 },
                                      { N - 1, -1 },
                                      { 5, 17 } }; /* start, step (mod N) */
    CUdeviceptr p[N], dsts[2 * N], srcs[2 * N];
    size_t sizes[2 * N], fail = 0;
    unsigned char got[2 * N][BAND];
    CUstream s;
    primary();
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < N; i++) {
        p[i] = alloc(100 + (size_t)i); /* the band: its last 16 bytes, at no alignment */
        OK(cuMemsetD8_v2(p[i], (unsigned char)i, 100 + (size_t)i));
    }
    /* Upwards, downwards, scattered, and each allocation twice running. */
    for (int o = 0; o < 4; o++) {
        size_t n = o < 3 ? N : 2 * N;
        for (size_t k = 0; k < n; k++) {
            int i = o < 3 ? (int)((orders[o][0] + (int)k * orders[o][1] + N * N) % N)
                          : (int)(k / 2);
            srcs[k] = p[i] + 100 + (size_t)i - BAND;
            dsts[k] = (CUdeviceptr)(uintptr_t)got[k];
            sizes[k] = BAND;
        }
        memset(got, 0xee, sizeof(got));
        OK(batch(dsts, srcs, sizes, n, s, &fail));
        cr_assert_eq(fail, SIZE_MAX);
        for (size_t k = 0; k < n; k++) {
            int i = o < 3 ? (int)((orders[o][0] + (int)k * orders[o][1] + N * N) % N)
                          : (int)(k / 2);
            for (int b = 0; b < BAND; b++)
                cr_assert_eq(got[k][b], (unsigned char)i, "order %d, copy %zu, byte %d", o, k, b);
        }
    }
}

Test(fakecuda,
     a_batched_copy_past_an_allocation_is_invalid_value_at_its_index_and_the_copies_before_it_ran)
{
    CUdeviceptr p, q, dsts[3], srcs[3];
    unsigned char a[8], b[8], c[8];
    size_t sizes[3] = { 8, 8, 8 }, fail = 0;
    CUstream s;
    primary();
    p = alloc(64), q = alloc(64);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuMemsetD8_v2(p, 0x11, 64));
    OK(cuMemsetD8_v2(q, 0x22, 64));
    dsts[0] = (CUdeviceptr)(uintptr_t)a, dsts[1] = (CUdeviceptr)(uintptr_t)b,
    dsts[2] = (CUdeviceptr)(uintptr_t)c;
    srcs[0] = p + 56, srcs[1] = q + 57, srcs[2] = p; /* the second reads a byte past q's 64 */
    memset(a, 0, 8), memset(b, 0, 8), memset(c, 0, 8);
    EXPECT(CUDA_ERROR_INVALID_VALUE, batch(dsts, srcs, sizes, 3, s, &fail));
    cr_assert_eq(fail, 1);
    cr_assert_eq(a[7], 0x11);
    cr_assert_eq(b[0], 0);
    cr_assert_eq(c[0], 0);
    /* A copy of no bytes is refused too, at its index. */
    srcs[1] = q;
    sizes[1] = 0;
    EXPECT(CUDA_ERROR_INVALID_VALUE, batch(dsts, srcs, sizes, 3, s, &fail));
    cr_assert_eq(fail, 1);
    sizes[1] = 8;
    OK(batch(dsts, srcs, sizes, 3, s, &fail));
    cr_assert_eq(fail, SIZE_MAX);
    cr_assert_eq(b[7], 0x22);
    cr_assert_eq(c[0], 0x11);
}

Test(fakecuda, a_batched_copys_stream_and_attributes_are_checked_for_no_copy_in_particular)
{
    static batch_v1_fn v1;
    CUdeviceptr p = 0, dsts[2], srcs[2];
    unsigned char a[8], b[8];
    size_t sizes[2] = { 8, 8 }, idx[2] = { 0, 1 }, fail = 0;
    CUmemcpyAttributes attrs[2] = { { .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM },
                                    { .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_ANY } };
    CUstream s;
    primary();
    v1 = (batch_v1_fn)exported("cuMemcpyBatchAsync");
    p = alloc(64);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    dsts[0] = (CUdeviceptr)(uintptr_t)a, dsts[1] = (CUdeviceptr)(uintptr_t)b;
    srcs[0] = srcs[1] = p;
    OK(v1(dsts, srcs, sizes, 2, attrs, idx, 2, &fail, s));
    cr_assert_eq(fail, SIZE_MAX);
    /* "Must not be legacy NULL stream." */
    fail = 0;
    EXPECT(CUDA_ERROR_INVALID_VALUE, v1(dsts, srcs, sizes, 2, attrs, idx, 2, &fail, NULL));
    cr_assert_eq(fail, SIZE_MAX);
    /* Attribute indexes rise, and stay below count; each names an order. */
    idx[1] = 0;
    EXPECT(CUDA_ERROR_INVALID_VALUE, v1(dsts, srcs, sizes, 2, attrs, idx, 2, &fail, s));
    idx[1] = 2;
    EXPECT(CUDA_ERROR_INVALID_VALUE, v1(dsts, srcs, sizes, 2, attrs, idx, 2, &fail, s));
    idx[1] = 1;
    attrs[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
    EXPECT(CUDA_ERROR_INVALID_VALUE, v1(dsts, srcs, sizes, 2, attrs, idx, 2, &fail, s));
    cr_assert_eq(fail, SIZE_MAX);
    /* A stream that is gone is no copy's fault. */
    attrs[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    OK(cuStreamDestroy_v2(s));
    fail = 0;
    cr_assert_neq(v1(dsts, srcs, sizes, 2, attrs, idx, 2, &fail, s), CUDA_SUCCESS);
    cr_assert_eq(fail, SIZE_MAX);
}

Test(fakecuda, a_batched_copy_to_pageable_memory_runs_after_the_copies_its_batch_queued_before_it)
{
    CUdeviceptr p, dsts[3], srcs[3];
    unsigned char before[8], after[8], fresh[8];
    size_t sizes[3] = { 8, 8, 8 }, fail = 0;
    CUstream s;
    primary();
    p = alloc(8);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuMemsetD8_v2(p, 0x01, 8));
    memset(fresh, 0x02, 8);
    /* Read at once; written by a queued (staged) copy; read again: the
     * second read runs the write first, as stream order says. */
    dsts[0] = (CUdeviceptr)(uintptr_t)before, srcs[0] = p;
    dsts[1] = p, srcs[1] = (CUdeviceptr)(uintptr_t)fresh;
    dsts[2] = (CUdeviceptr)(uintptr_t)after, srcs[2] = p;
    OK(batch(dsts, srcs, sizes, 3, s, &fail));
    cr_assert_eq(before[0], 0x01);
    cr_assert_eq(after[0], 0x02);
}

Test(fakecuda, a_batched_copy_from_memory_its_stream_frees_first_is_invalid_value)
{
    CUdeviceptr p, dst, src;
    unsigned char got[8] = { 0 };
    size_t size = 8, fail = 0;
    CUstream s;
    primary();
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuMemAllocAsync(&p, 64, s));
    OK(cuMemsetD8Async(p, 0x33, 64, s));
    OK(cuMemFreeAsync(p, s));
    /* Live when the batch is called; freed by the stream's work it runs first. */
    dst = (CUdeviceptr)(uintptr_t)got, src = p + 8;
    EXPECT(CUDA_ERROR_INVALID_VALUE, batch(&dst, &src, &size, 1, s, &fail));
    cr_assert_eq(fail, 0);
    cr_assert_eq(got[0], 0);
    cr_assert_eq(fakecuda_live_allocations(), 0);
}

/* ------------------------------------------------------------------------ */
/* Pitched allocations                                                       */
/* ------------------------------------------------------------------------ */

Test(fakecuda, pitch_is_at_least_the_width_and_a_multiple_of_512)
{
    static const size_t widths[] = { 1, 100, 511, 512, 513, 1000, 4096, 70000 };
    primary();
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
        CUdeviceptr p = 0, base = 0;
        size_t pitch = 0, size = 0;
        OK(cuMemAllocPitch_v2(&p, &pitch, widths[i], 3, 4));
        cr_assert_geq(pitch, widths[i]);
        cr_assert_lt(pitch, widths[i] + 512, "width %zu: pitch %zu is padded more than needed",
                     widths[i], pitch);
        cr_assert_eq(pitch % 512, 0, "width %zu: pitch %zu", widths[i], pitch);
        OK(cuMemGetAddressRange_v2(&base, &size, p + 2 * pitch + widths[i] - 1));
        cr_assert_eq(base, p);
        cr_assert_eq(size, 3 * pitch);
        OK(cuMemFree_v2(p));
    }
    cr_assert_eq(fakecuda_live_allocations(), 0);
}

Test(fakecuda, a_pitched_allocation_is_device_memory_of_pitch_times_height_bytes)
{
    CUdeviceptr p = 0;
    size_t pitch = 0;
    unsigned char row[100], back[100] = { 0 };
    primary();
    OK(cuMemAllocPitch_v2(&p, &pitch, sizeof row, 4, 16));
    cr_assert_eq(pitch, 512);
    memset(row, 0x5a, sizeof row);
    OK(cuMemsetD8_v2(p, 0, 4 * pitch));
    OK(cuMemcpyHtoD_v2(p + 3 * pitch, row, sizeof row)); /* the last row */
    OK(cuMemcpyDtoH_v2(back, p + 3 * pitch, sizeof back));
    cr_assert_arr_eq(back, row, sizeof row);
    cr_assert_eq(byte_at(p + 3 * pitch - 1), 0);
    /* The allocation ends after Height rows. */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD_v2(p + 4 * pitch - 50, row, sizeof row));
    OK(cuMemFree_v2(p));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFree_v2(p));
}

Test(fakecuda, pitched_allocation_takes_element_sizes_4_8_16_only)
{
    CUdeviceptr p = 0;
    size_t pitch = 0;
    static const unsigned int bad[] = { 0, 1, 2, 3, 5, 12, 32 };
    primary();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAllocPitch_v2(&p, &pitch, 64, 8, bad[i]));
    OK(cuMemAllocPitch_v2(&p, &pitch, 64, 8, 8));
    OK(cuMemFree_v2(p));
    cr_assert_eq(fakecuda_live_allocations(), 0);
}

Test(fakecuda, pitched_allocation_errors_follow_the_documentation)
{
    CUdeviceptr p = 0;
    size_t pitch = 0;
    unsigned int pitch32 = 0;
    CUdeviceptr_v1 p32 = 0;
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuMemAllocPitch_v2(&p, &pitch, 64, 8, 4));
    OK(cuInit(0));
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuMemAllocPitch_v2(&p, &pitch, 64, 8, 4));
    primary();
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAllocPitch_v2(&p, &pitch, 0, 8, 4));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAllocPitch_v2(&p, &pitch, 64, 0, 4));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAllocPitch_v2(NULL, &pitch, 64, 8, 4));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAllocPitch_v2(&p, NULL, 64, 8, 4));
    EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocPitch_v2(&p, &pitch, SIZE_MAX, 8, 4));
    EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocPitch_v2(&p, &pitch, 1 << 20, SIZE_MAX / 2, 4));
    EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemAllocPitch(&p32, &pitch32, 64, 8, 4));
    cr_assert_eq(fakecuda_live_allocations(), 0);
}

/* ------------------------------------------------------------------------ */
/* Created memory pools                                                      */
/* ------------------------------------------------------------------------ */

static CUmemPoolProps pool_props(int dev)
{
    CUmemPoolProps pp;
    memset(&pp, 0, sizeof pp);
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pp.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pp.location.id = dev;
    return pp;
}

static cuuint64_t pool_used(CUmemoryPool pool)
{
    cuuint64_t v = 12345;
    OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
    return v;
}

Test(fakecuda, a_created_pool_hands_out_device_memory_and_counts_it_apart_from_the_default)
{
    CUmemPoolProps pp = pool_props(0);
    CUmemoryPool pool = NULL, dflt = NULL, of = NULL;
    CUdeviceptr p = 0;
    unsigned char back[1000] = { 0 };
    primary();
    OK(cuMemPoolCreate(&pool, &pp));
    OK(cuDeviceGetDefaultMemPool(&dflt, 0));
    cr_assert_neq(pool, dflt);
    OK(cuMemAllocFromPoolAsync(&p, 1000, pool, NULL));
    cr_assert_eq(pool_used(pool), 1024);
    cr_assert_eq(pool_used(dflt), 0);
    OK(cuPointerGetAttribute(&of, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p));
    cr_assert_eq(of, pool);
    OK(cuMemsetD8Async(p, 0x37, 1000, NULL));
    OK(cuMemcpyDtoH_v2(back, p, sizeof back));
    cr_assert_eq(back[999], 0x37);
    OK(cuMemFreeAsync(p, NULL));
    OK(cuCtxSynchronize());
    cr_assert_eq(pool_used(pool), 0);
    OK(cuMemPoolDestroy(pool));
    /* The handle is gone. */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAllocFromPoolAsync(&p, 16, pool, NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolDestroy(pool));
    cr_assert_eq(fakecuda_live_allocations(), 0);
}

Test(fakecuda, destroying_a_pool_with_live_allocations_returns_at_once_and_they_stay_usable)
{
    CUmemPoolProps pp = pool_props(0);
    CUmemoryPool pool = NULL;
    CUdeviceptr a = 0, b = 0;
    cuuint64_t v;
    primary();
    OK(cuMemPoolCreate(&pool, &pp));
    OK(cuMemAllocFromPoolAsync(&a, 256, pool, NULL));
    OK(cuMemAllocFromPoolAsync(&b, 512, pool, NULL));
    OK(cuMemFreeAsync(b, NULL)); /* a free not yet run */
    OK(cuMemPoolDestroy(pool));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
    OK(cuMemsetD8_v2(a, 0x11, 256));
    cr_assert_eq(byte_at(a + 255), 0x11);
    OK(cuCtxSynchronize());
    cr_assert_eq(fakecuda_live_allocations(), 1);
    OK(cuMemFreeAsync(a, NULL));
    OK(cuCtxSynchronize());
    cr_assert_eq(fakecuda_live_allocations(), 0);
}

Test(fakecuda, a_devices_default_pool_cannot_be_destroyed)
{
    CUmemoryPool dflt = NULL;
    CUdeviceptr p;
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuMemPoolDestroy(NULL));
    primary();
    OK(cuDeviceGetDefaultMemPool(&dflt, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolDestroy(dflt));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolDestroy(NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolDestroy((CUmemoryPool)&p));
    OK(cuMemAllocFromPoolAsync(&p, 16, dflt, NULL));
    OK(cuMemFreeAsync(p, NULL));
}

Test(fakecuda, a_created_pool_made_current_serves_alloc_async_until_it_is_destroyed)
{
    CUmemPoolProps pp = pool_props(0);
    CUmemoryPool pool = NULL, dflt = NULL, cur = NULL, of = NULL;
    CUdeviceptr p = 0;
    primary();
    OK(cuDeviceGetDefaultMemPool(&dflt, 0));
    OK(cuMemPoolCreate(&pool, &pp));
    OK(cuDeviceSetMemPool(0, pool));
    OK(cuDeviceGetMemPool(&cur, 0));
    cr_assert_eq(cur, pool);
    OK(cuMemAllocAsync(&p, 100, NULL));
    OK(cuPointerGetAttribute(&of, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p));
    cr_assert_eq(of, pool);
    cr_assert_eq(pool_used(pool), 256);
    OK(cuMemFreeAsync(p, NULL));
    OK(cuMemPoolDestroy(pool));
    /* "sets the default mempool of that device as the current mempool" */
    OK(cuDeviceGetMemPool(&cur, 0));
    cr_assert_eq(cur, dflt);
    OK(cuMemAllocAsync(&p, 100, NULL));
    OK(cuPointerGetAttribute(&of, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p));
    cr_assert_eq(of, dflt);
    OK(cuMemFreeAsync(p, NULL));
    OK(cuCtxSynchronize());
}

Test(fakecuda, a_pool_of_another_device_cannot_be_made_current)
{
    CUmemPoolProps pp = pool_props(1);
    CUmemoryPool pool1 = NULL;
    CUdeviceptr p;
    CUdevice dev = -1;
    setenv("FAKECUDA_DEVICES", "2", 1);
    primary();
    OK(cuMemPoolCreate(&pool1, &pp));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuDeviceSetMemPool(0, pool1));
    OK(cuDeviceSetMemPool(1, pool1));
    OK(cuMemAllocFromPoolAsync(&p, 64, pool1, NULL));
    OK(cuPointerGetAttribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
    cr_assert_eq(dev, 1);
    OK(cuMemFreeAsync(p, NULL));
    OK(cuCtxSynchronize());
    OK(cuMemPoolDestroy(pool1));
}

Test(fakecuda, a_pools_max_size_caps_what_it_hands_out)
{
    CUmemPoolProps pp = pool_props(0);
    CUmemoryPool pool = NULL;
    CUdeviceptr a, b;
    pp.maxSize = 4096;
    primary();
    OK(cuMemPoolCreate(&pool, &pp));
    OK(cuMemAllocFromPoolAsync(&a, 4000, pool, NULL));
    EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocFromPoolAsync(&b, 1, pool, NULL));
    OK(cuMemFreeAsync(a, NULL));
    OK(cuCtxSynchronize());
    OK(cuMemAllocFromPoolAsync(&b, 4096, pool, NULL));
    OK(cuMemFreeAsync(b, NULL));
    OK(cuCtxSynchronize());
    OK(cuMemPoolDestroy(pool));
}

Test(fakecuda, pool_creation_checks_its_properties)
{
    CUmemoryPool pool = NULL;
    CUmemPoolProps pp = pool_props(0);
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuMemPoolCreate(&pool, &pp));
    OK(cuInit(0)); /* no context needed */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(NULL, &pp));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&pool, NULL));
    pp.allocType = CU_MEM_ALLOCATION_TYPE_INVALID;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&pool, &pp));
    pp.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED; /* the device has no managed memory */
    EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemPoolCreate(&pool, &pp));
    pp = pool_props(1); /* one device */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&pool, &pp));
    pp = pool_props(-1);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&pool, &pp));
    pp = pool_props(0);
    pp.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT; /* documented as invalid */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&pool, &pp));
    pp.location.type = CU_MEM_LOCATION_TYPE_HOST; /* HOST_MEMORY_POOLS_SUPPORTED is 0 */
    EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemPoolCreate(&pool, &pp));
    pp = pool_props(0);
    pp.handleTypes =
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR; /* MEMPOOL_SUPPORTED_HANDLE_TYPES is 0 */
    EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemPoolCreate(&pool, &pp));
    pp.handleTypes = (CUmemAllocationHandleType)0x100;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&pool, &pp));
    pp = pool_props(0);
    pp.win32SecurityAttributes = &pp; /* "required to be zero" off Windows */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&pool, &pp));
    pp = pool_props(0);
    pp.reserved[53] = 1; /* "must be 0" */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&pool, &pp));
    pp = pool_props(0);
    pp.usage = CU_MEM_POOL_CREATE_USAGE_HW_DECOMPRESS;
    EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemPoolCreate(&pool, &pp));
    pp = pool_props(0);
    OK(cuMemPoolCreate(&pool, &pp));
    OK(cuMemPoolDestroy(pool));
}

/* ------------------------------------------------------------------------ */
/* Virtual memory management                                                 */
/* ------------------------------------------------------------------------ */

#define GRAN ((size_t)2 << 20)

static CUmemAllocationProp vmm_prop(int dev)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    return prop;
}

static CUmemGenericAllocationHandle vmm_create(size_t size)
{
    CUmemAllocationProp prop = vmm_prop(0);
    CUmemGenericAllocationHandle h = 0;
    OK(cuMemCreate(&h, size, &prop, 0));
    return h;
}

static CUdeviceptr vmm_reserve(size_t size)
{
    CUdeviceptr p = 0;
    OK(cuMemAddressReserve(&p, size, 0, 0, 0));
    return p;
}

static CUresult vmm_access(CUdeviceptr p, size_t size, int dev, CUmemAccess_flags flags)
{
    CUmemAccessDesc d;
    memset(&d, 0, sizeof d);
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = dev;
    d.flags = flags;
    return cuMemSetAccess(p, size, &d, 1);
}

Test(fakecuda, vmm_granularity_is_2_mib_minimum_and_recommended)
{
    CUmemAllocationProp prop = vmm_prop(0);
    size_t g = 0;
    int vmm = 0;
    EXPECT(CUDA_ERROR_NOT_INITIALIZED,
           cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    OK(cuInit(0)); /* no context needed */
    OK(cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
    cr_assert_eq(vmm, 1);
    OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    cr_assert_eq(g, GRAN);
    g = 0;
    OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    cr_assert_eq(g, GRAN);
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemGetAllocationGranularity(NULL, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemGetAllocationGranularity(&g, NULL, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemGetAllocationGranularity(&g, &prop, (CUmemAllocationGranularity_flags)2));
    prop = vmm_prop(1);
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    prop = vmm_prop(0);
    prop.type = CU_MEM_ALLOCATION_TYPE_INVALID;
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    prop = vmm_prop(0);
    prop.location.type =
        CU_MEM_LOCATION_TYPE_HOST; /* HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED is 0 */
    EXPECT(CUDA_ERROR_NOT_SUPPORTED,
           cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
}

Test(fakecuda, a_mapped_range_with_access_is_device_memory_for_copies_memsets_and_kernels)
{
    CUmemGenericAllocationHandle h0, h1;
    CUdeviceptr r, base = 0;
    size_t size = 0;
    unsigned long long flags = 0;
    unsigned int access = 0, ipc = 1;
    CUmemLocation here = { CU_MEM_LOCATION_TYPE_DEVICE, 0 };
    unsigned char buf[64], back[64] = { 0 };
    CUfunction gg_fill;
    primary();
    gg_fill = function(kernels(), "gg_fill");
    r = vmm_reserve(2 * GRAN);
    h0 = vmm_create(GRAN);
    h1 = vmm_create(GRAN);
    cr_assert_eq(fakecuda_live_allocations(), 2);
    cr_assert_eq(fakecuda_mem_used(), 2 * GRAN);
    OK(cuMemMap(r, GRAN, 0, h0, 0));
    OK(cuMemMap(r + GRAN, GRAN, 0, h1, 0));
    OK(vmm_access(r, 2 * GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    OK(cuMemGetAccess(&flags, &here, r + GRAN + 5));
    cr_assert_eq(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);

    /* One range across the two mappings. */
    OK(cuMemsetD8_v2(r, 0x21, 2 * GRAN));
    cr_assert_eq(byte_at(r + 2 * GRAN - 1), 0x21);
    memset(buf, 0x5c, sizeof buf);
    OK(cuMemcpyHtoD_v2(r + GRAN - 32, buf, sizeof buf));
    OK(cuMemcpyDtoH_v2(back, r + GRAN - 32, sizeof back));
    cr_assert_arr_eq(back, buf, sizeof buf);
    OK(cuMemcpyDtoD_v2(r, r + GRAN - 32, sizeof buf));
    cr_assert_eq(byte_at(r + 63), 0x5c);
    OK(fill(gg_fill, NULL, r + GRAN - 100, 0x77, 200));
    OK(cuCtxSynchronize());
    cr_assert_eq(byte_at(r + GRAN - 100), 0x77);
    cr_assert_eq(byte_at(r + GRAN + 99), 0x77);
    cr_assert_eq(byte_at(r + GRAN + 100), 0x21);
    /* Past the mapped range: not memory. */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD_v2(r + 2 * GRAN - 32, buf, sizeof buf));

    /* Lookups see each mapping. */
    OK(cuMemGetAddressRange_v2(&base, &size, r + GRAN + 12345));
    cr_assert_eq(base, r + GRAN);
    cr_assert_eq(size, GRAN);
    OK(cuPointerGetAttribute(&access, CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, r + 1));
    cr_assert_eq(access, CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE);
    OK(cuPointerGetAttribute(&ipc, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, r + 1));
    cr_assert_eq(ipc, 0);
    /* Mapped memory is not cuMemAlloc memory. */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFree_v2(r));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(r, NULL));

    OK(cuMemUnmap(r, 2 * GRAN));
    OK(cuMemRelease(h0));
    OK(cuMemRelease(h1));
    OK(cuMemAddressFree(r, 2 * GRAN));
    cr_assert_eq(fakecuda_live_allocations(), 0);
    cr_assert_eq(fakecuda_mem_used(), 0);
}

Test(fakecuda, a_mapping_has_no_access_until_cuMemSetAccess_grants_it)
{
    CUmemGenericAllocationHandle h;
    CUdeviceptr r;
    unsigned char buf[16] = { 0 };
    unsigned long long flags = 99;
    unsigned int access = 99;
    CUmemLocation here = { CU_MEM_LOCATION_TYPE_DEVICE, 0 };
    primary();
    r = vmm_reserve(GRAN);
    h = vmm_create(GRAN);
    OK(cuMemMap(r, GRAN, 0, h, 0));
    OK(cuMemGetAccess(&flags, &here, r));
    cr_assert_eq(flags, CU_MEM_ACCESS_FLAGS_PROT_NONE);
    OK(cuPointerGetAttribute(&access, CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, r));
    cr_assert_eq(access, CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemsetD8_v2(r, 1, 16));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD_v2(r, buf, sizeof buf));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH_v2(buf, r, sizeof buf));

    /* Read-only: reads work, writes do not. */
    OK(vmm_access(r, GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_READ));
    OK(cuMemcpyDtoH_v2(buf, r, sizeof buf));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemsetD8_v2(r, 1, 16));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD_v2(r, buf, sizeof buf));
    OK(vmm_access(r, GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    OK(cuMemsetD8_v2(r, 1, 16));
    /* Taken away again. */
    OK(vmm_access(r, GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_NONE));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH_v2(buf, r, sizeof buf));
    OK(cuMemUnmap(r, GRAN));
    /* A new mapping starts with no access again. */
    OK(cuMemMap(r, GRAN, 0, h, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH_v2(buf, r, sizeof buf));
    OK(cuMemUnmap(r, GRAN));
    OK(cuMemRelease(h));
    OK(cuMemAddressFree(r, GRAN));
}

Test(fakecuda, a_kernel_touching_a_mapping_without_access_is_an_illegal_address)
{
    CUmemGenericAllocationHandle h;
    CUdeviceptr r;
    CUfunction gg_fill;
    primary();
    gg_fill = function(kernels(), "gg_fill");
    r = vmm_reserve(GRAN);
    h = vmm_create(GRAN);
    OK(cuMemMap(r, GRAN, 0, h, 0));
    OK(fill(gg_fill, NULL, r, 0x11, 16));
    EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
}

Test(fakecuda, a_kernel_touching_a_reserved_but_unmapped_address_is_an_illegal_address)
{
    CUdeviceptr r;
    CUfunction gg_fill;
    primary();
    gg_fill = function(kernels(), "gg_fill");
    r = vmm_reserve(GRAN);
    OK(fill(gg_fill, NULL, r, 0x11, 16));
    EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
}

Test(fakecuda, reserved_but_unmapped_addresses_are_not_memory)
{
    CUmemGenericAllocationHandle h;
    CUdeviceptr r, base;
    size_t size;
    unsigned char buf[16] = { 0 };
    primary();
    r = vmm_reserve(2 * GRAN);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemsetD8_v2(r, 1, 16));
    EXPECT(CUDA_ERROR_NOT_FOUND, cuMemGetAddressRange_v2(&base, &size, r));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFree_v2(r));
    /* A mapping covers only its own part of the reservation. */
    h = vmm_create(GRAN);
    OK(cuMemMap(r, GRAN, 0, h, 0));
    OK(vmm_access(r, GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    OK(cuMemcpyHtoD_v2(r + GRAN - 16, buf, sizeof buf));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD_v2(r + GRAN - 8, buf, sizeof buf));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemsetD8_v2(r + GRAN, 1, 16));
    cr_assert_eq(fakecuda_read(r + GRAN, buf, 1), -EFAULT);
    OK(cuMemUnmap(r, GRAN));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD_v2(r, buf, sizeof buf));
    cr_assert_eq(fakecuda_read(r, buf, 1), -EFAULT);
    OK(cuMemRelease(h));
    OK(cuMemAddressFree(r, 2 * GRAN));
}

Test(fakecuda, a_mapping_must_lie_in_one_reservation_at_granularity_multiples)
{
    CUmemGenericAllocationHandle h, big, gone;
    CUdeviceptr r, other;
    CUdeviceptr plain;
    primary();
    plain = alloc(4 * GRAN);
    r = vmm_reserve(2 * GRAN);
    h = vmm_create(GRAN);
    big = vmm_create(2 * GRAN);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMap(plain, GRAN, 0, h, 0)); /* cuMemAlloc memory */
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemMap(r + 2 * GRAN, GRAN, 0, h, 0));                       /* past the reservation */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMap(r - GRAN, GRAN, 0, h, 0)); /* before it */
    other = vmm_reserve(2 * GRAN);
    if (other == r + 2 * GRAN) /* adjacent reservations: still two */
        EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMap(r + GRAN, 2 * GRAN, 0, big, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemMap(r + GRAN, 2 * GRAN, 0, big, 0));                     /* runs past the end */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMap(r + 4096, GRAN, 0, h, 0)); /* ptr not a multiple */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMap(r, GRAN / 2, 0, h, 0));    /* size not a multiple */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMap(r, 0, 0, h, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMap(r, 2 * GRAN, 0, h, 0)); /* more than the allocation */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMap(r, GRAN, GRAN, big, 0)); /* offset "must be zero" */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMap(r, GRAN, 0, h, 1));      /* flags */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMap(r, GRAN, 0, 0, 0));      /* no handle */
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemMap(r, GRAN, 0, (CUmemGenericAllocationHandle)(uintptr_t)&h, 0));
    OK(cuMemMap(r, GRAN, 0, h, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMap(r, GRAN, 0, h, 0)); /* already mapped */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMap(r, 2 * GRAN, 0, big, 0));
    OK(cuMemMap(r + GRAN, GRAN, 0, big, 0)); /* part of an allocation, in the rest */
    gone = vmm_create(GRAN);
    OK(cuMemRelease(gone));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMap(other, GRAN, 0, gone, 0)); /* released */
    OK(cuMemMap(other, GRAN, 0, h, 0)); /* one allocation, two mappings */
    OK(cuMemUnmap(r, GRAN));
    OK(cuMemUnmap(r + GRAN, GRAN));
    OK(cuMemUnmap(other, GRAN));
    OK(cuMemRelease(h));
    OK(cuMemRelease(big));
    OK(cuMemAddressFree(r, 2 * GRAN));
    OK(cuMemAddressFree(other, 2 * GRAN));
    OK(cuMemFree_v2(plain));
    cr_assert_eq(fakecuda_live_allocations(), 0);
}

Test(fakecuda, cuMemCreate_takes_granularity_multiples_of_a_devices_pinned_memory)
{
    CUmemAllocationProp prop = vmm_prop(0);
    CUmemGenericAllocationHandle h = 0;
    size_t free0, free1, total;
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuMemCreate(&h, GRAN, &prop, 0));
    primary();
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, 0, &prop, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, 4096, &prop, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, GRAN + 4096, &prop, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemCreate(NULL, GRAN, &prop, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, GRAN, NULL, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, GRAN, &prop, 1)); /* "must be zero" */
    prop.type = CU_MEM_ALLOCATION_TYPE_INVALID;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, GRAN, &prop, 0));
    prop = vmm_prop(3);
    EXPECT(CUDA_ERROR_INVALID_DEVICE, cuMemCreate(&h, GRAN, &prop, 0));
    prop = vmm_prop(0);
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT; /* documented as invalid */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, GRAN, &prop, 0));
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
    EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemCreate(&h, GRAN, &prop, 0));
    prop = vmm_prop(0);
    prop.requestedHandleTypes =
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR; /* the device exports none */
    EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemCreate(&h, GRAN, &prop, 0));
    prop = vmm_prop(0);
    prop.win32HandleMetaData = &prop;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, GRAN, &prop, 0));
    prop = vmm_prop(0);
    prop.allocFlags.gpuDirectRDMACapable = 1;
    EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemCreate(&h, GRAN, &prop, 0));
    prop = vmm_prop(0);
    prop.allocFlags.usage = CU_MEM_CREATE_USAGE_TILE_POOL;
    EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuMemCreate(&h, GRAN, &prop, 0));
    cr_assert_eq(fakecuda_live_allocations(), 0);

    /* Device memory, counted as any allocation. */
    prop = vmm_prop(0);
    prop.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC; /* a hint */
    OK(cuMemGetInfo_v2(&free0, &total));
    OK(cuMemCreate(&h, 2 * GRAN, &prop, 0));
    OK(cuMemGetInfo_v2(&free1, &total));
    cr_assert_eq(free0 - free1, 2 * GRAN);
    cr_assert_eq(fakecuda_live_allocations(), 1);
    cr_assert_eq(fakecuda_mem_used(), 2 * GRAN);
    OK(cuMemRelease(h));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemRelease(h));
    cr_assert_eq(fakecuda_live_allocations(), 0);
    fakecuda_set_mem_limit(GRAN);
    EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&h, 2 * GRAN, &prop, 0));
    fakecuda_set_mem_limit(0);
    EXPECT(CUDA_ERROR_OUT_OF_MEMORY,
           cuMemCreate(&h, (size_t)16 << 30, &prop, 0)); /* twice the device */
}

Test(fakecuda, unmap_takes_whole_mappings_with_no_gap)
{
    CUmemGenericAllocationHandle h0, h1;
    CUdeviceptr r;
    primary();
    r = vmm_reserve(4 * GRAN);
    h0 = vmm_create(GRAN);
    h1 = vmm_create(2 * GRAN);
    OK(cuMemMap(r, GRAN, 0, h0, 0));
    OK(cuMemMap(r + GRAN, 2 * GRAN, 0, h1, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(r + GRAN, GRAN));     /* half a mapping */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(r + 2 * GRAN, GRAN)); /* the other half */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(r, 4 * GRAN));        /* runs into unmapped space */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(r + 3 * GRAN, GRAN)); /* nothing mapped */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(r, 0));
    /* Both mappings at once. */
    OK(cuMemUnmap(r, 3 * GRAN));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(r, GRAN));
    OK(cuMemRelease(h0));
    OK(cuMemRelease(h1));
    OK(cuMemAddressFree(r, 4 * GRAN));
}

Test(fakecuda, released_memory_lives_until_its_last_mapping_goes)
{
    CUmemGenericAllocationHandle h, again = 0;
    CUdeviceptr r;
    primary();
    r = vmm_reserve(GRAN);
    h = vmm_create(GRAN);
    OK(cuMemMap(r, GRAN, 0, h, 0));
    OK(vmm_access(r, GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    OK(cuMemsetD8_v2(r, 0x6b, GRAN));
    OK(cuMemRelease(h)); /* still mapped */
    cr_assert_eq(fakecuda_live_allocations(), 1);
    cr_assert_eq(byte_at(r + GRAN - 1), 0x6b);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemRelease(h));
    /* Any address of the mapping gives the handle back, with a reference. */
    OK(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)(r + 4242)));
    cr_assert_eq(again, h);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemRetainAllocationHandle(NULL, (void *)(uintptr_t)r));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)(r + GRAN)));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemRetainAllocationHandle(&again, &again));
    OK(cuMemUnmap(r, GRAN));
    cr_assert_eq(fakecuda_live_allocations(), 1); /* the retained reference */
    OK(cuMemRelease(again));
    cr_assert_eq(fakecuda_live_allocations(), 0);
    cr_assert_eq(fakecuda_mem_used(), 0);
    OK(cuMemAddressFree(r, GRAN));
}

Test(fakecuda, unmap_runs_queued_work_first)
{
    CUmemGenericAllocationHandle h;
    CUdeviceptr r;
    CUstream s;
    primary();
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    r = vmm_reserve(GRAN);
    h = vmm_create(GRAN);
    OK(cuMemMap(r, GRAN, 0, h, 0));
    OK(vmm_access(r, GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    OK(cuMemsetD8Async(r, 0x3d, 64, s));
    OK(cuMemUnmap(r, GRAN));
    OK(cuStreamSynchronize(s)); /* the memset ran before: no fault now */
    OK(cuMemMap(r, GRAN, 0, h, 0));
    cr_assert_eq(byte_at(r + 63), 0x3d);
    OK(cuMemUnmap(r, GRAN));
    OK(cuMemRelease(h));
}

Test(fakecuda, address_reservations_follow_size_alignment_and_hint)
{
    CUdeviceptr r = 0, again = 0, big = 0, plain;
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuMemAddressReserve(&r, GRAN, 0, 0, 0));
    OK(cuInit(0)); /* no context needed */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(NULL, GRAN, 0, 0, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&r, 0, 0, 0, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemAddressReserve(&r, 100, 0, 0, 0)); /* not a page multiple */
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemAddressReserve(&r, GRAN, 3 << 20, 0, 0)); /* not a power of two */
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemAddressReserve(&r, GRAN, 0, 12345, 0)); /* hint not a page multiple */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&r, GRAN, 0, 0, 1));
    EXPECT(CUDA_ERROR_OUT_OF_MEMORY,
           cuMemAddressReserve(&r, (size_t)1 << 40, 0, 0, 0)); /* more than the space */
    OK(cuMemAddressReserve(&r, 4096, 0, 0, 0));                /* a page is enough */
    cr_assert_eq(r % GRAN, 0);
    OK(cuMemAddressReserve(&big, GRAN, (size_t)1 << 30, 0, 0));
    cr_assert_eq(big % ((size_t)1 << 30), 0);
    /* The hint is taken when it is free. */
    OK(cuMemAddressFree(big, GRAN));
    OK(cuMemAddressReserve(&again, GRAN, 0, big, 0));
    cr_assert_eq(again, big);
    /* cuMemAlloc never hands out reserved addresses. */
    primary();
    plain = alloc(64);
    cr_assert(plain + 64 <= r || plain >= r + 4096);
    cr_assert(plain + 64 <= again || plain >= again + GRAN);
    OK(cuMemAddressFree(again, GRAN));
    OK(cuMemAddressFree(r, 4096));
}

Test(fakecuda, address_free_takes_exactly_a_reservation_with_no_mapping_left)
{
    CUmemGenericAllocationHandle h;
    CUdeviceptr r;
    primary();
    r = vmm_reserve(2 * GRAN);
    h = vmm_create(GRAN);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(r, GRAN));        /* the size given */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(r + GRAN, GRAN)); /* the address returned */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(0, GRAN));
    OK(cuMemMap(r + GRAN, GRAN, 0, h, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(r, 2 * GRAN)); /* still mapped */
    OK(cuMemUnmap(r + GRAN, GRAN));
    OK(cuMemAddressFree(r, 2 * GRAN));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(r, 2 * GRAN));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemMap(r, GRAN, 0, h, 0)); /* no longer reserved */
    OK(cuMemRelease(h));
}

Test(fakecuda, set_access_checks_its_range_locations_and_flags)
{
    CUmemGenericAllocationHandle h;
    CUdeviceptr r;
    CUmemAccessDesc d[2];
    CUmemLocation loc = { CU_MEM_LOCATION_TYPE_DEVICE, 1 };
    unsigned long long flags = 99;
    setenv("FAKECUDA_DEVICES", "2", 1);
    primary();
    r = vmm_reserve(2 * GRAN);
    h = vmm_create(GRAN);
    OK(cuMemMap(r, GRAN, 0, h, 0));
    memset(d, 0, sizeof d);
    d[0].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d[0].location.id = 0;
    d[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(r, GRAN, NULL, 1));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(r, GRAN, d, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(r, 2 * GRAN, d, 1)); /* not fully mapped */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(r, GRAN / 2, d, 1)); /* part of a mapping */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(r + GRAN, GRAN, d, 1));
    d[0].flags = (CUmemAccess_flags)2;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(r, GRAN, d, 1));
    d[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    d[0].location.id = 2;
    EXPECT(CUDA_ERROR_INVALID_DEVICE, cuMemSetAccess(r, GRAN, d, 1));
    d[0].location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA; /* documented as not for device memory */
    d[0].location.id = 0;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(r, GRAN, d, 1));
    /* Device 1 cannot reach device 0's memory (no peer access): nothing changes. */
    d[0].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d[1] = d[0];
    d[1].location.id = 1;
    EXPECT(CUDA_ERROR_INVALID_DEVICE, cuMemSetAccess(r, GRAN, d, 2));
    OK(cuMemGetAccess(&flags, &d[0].location, r));
    cr_assert_eq(flags, CU_MEM_ACCESS_FLAGS_PROT_NONE);
    d[1].flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    OK(cuMemSetAccess(r, GRAN, d, 2));
    OK(cuMemGetAccess(&flags, &d[0].location, r));
    cr_assert_eq(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    OK(cuMemGetAccess(&flags, &loc, r));
    cr_assert_eq(flags, CU_MEM_ACCESS_FLAGS_PROT_NONE);

    /* cuMemGetAccess's own errors. */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemGetAccess(NULL, &loc, r));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemGetAccess(&flags, NULL, r));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemGetAccess(&flags, &loc, r + GRAN)); /* not mapped */
    loc.id = 7;
    EXPECT(CUDA_ERROR_INVALID_DEVICE, cuMemGetAccess(&flags, &loc, r));
    loc.type = CU_MEM_LOCATION_TYPE_HOST;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemGetAccess(&flags, &loc, r));
    OK(cuMemUnmap(r, GRAN));
    OK(cuMemRelease(h));
    OK(cuMemAddressFree(r, 2 * GRAN));
}

Test(fakecuda, managed_memory_with_the_knob_is_device_memory_marked_managed)
{
    CUdeviceptr d, plain;
    unsigned int managed = 7;
    unsigned char in[4] = { 1, 2, 3, 4 }, out[4] = { 0 };
    int v = 0;
    setenv("FAKECUDA_MANAGED", "1", 1); /* read at cuInit */
    primary();
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 0));
    cr_assert_eq(v, 1);
    OK(cuMemAllocManaged(&d, 64, CU_MEM_ATTACH_GLOBAL));
    OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, d));
    cr_assert_eq(managed, 1);
    OK(cuMemcpyHtoD_v2(d + 60, in, 4));
    OK(cuMemcpyDtoH_v2(out, d + 60, 4));
    cr_assert_eq(memcmp(in, out, 4), 0);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD_v2(d + 62, in, 4)); /* past its end */
    OK(cuMemAlloc_v2(&plain, 64));
    OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, plain));
    cr_assert_eq(managed, 0);
    OK(cuMemFree_v2(d));
    OK(cuMemFree_v2(plain));
    cr_assert_eq(fakecuda_live_allocations(), 0);
}

static const char one_kernel_ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                                     ".visible .entry only(.param .u64 p)\n{\n\tret;\n}\n";

/* A handle is valid until its module is unloaded: with the knob, the next
 * module of as many functions gets the same handle; without it, the
 * allocator decides. Either way the old handle is no function any more. */
Test(fakecuda, reuse_handles_knob_hands_an_unloaded_modules_function_handle_out_again)
{
    CUmodule m1, m2;
    CUfunction f1, f2;
    const char *name = NULL;
    setenv("FAKECUDA_REUSE_HANDLES", "1", 1); /* read at cuInit */
    primary();
    OK(cuModuleLoadData(&m1, one_kernel_ptx));
    OK(cuModuleGetFunction(&f1, m1, "only"));
    OK(cuModuleUnload(m1));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuFuncGetName(&name, f1));
    OK(cuModuleLoadData(&m2, one_kernel_ptx));
    OK(cuModuleGetFunction(&f2, m2, "only"));
    cr_assert_eq(f1, f2);
    OK(cuFuncGetName(&name, f2));
    cr_assert_str_eq(name, "only");
    OK(cuModuleUnload(m2));
}

/* ------------------------------------------------------------------------ */
/* Stream capture and graphs                                                 */
/* ------------------------------------------------------------------------ */

static CUstreamCaptureStatus capture_status(CUstream s)
{
    CUstreamCaptureStatus st = (CUstreamCaptureStatus)99;
    OK(cuStreamIsCapturing(s, &st));
    return st;
}

static CUgraph end_capture(CUstream s)
{
    CUgraph g = NULL;
    OK(cuStreamEndCapture(s, &g));
    cr_assert_not_null(g);
    return g;
}

static CUgraphExec instantiate(CUgraph g, unsigned long long flags)
{
    CUgraphExec x = NULL;
    OK(cuGraphInstantiateWithFlags(&x, g, flags));
    cr_assert_not_null(x);
    return x;
}

/* The capture ended by an error: a NULL graph and the stream free again. */
static void expect_end(CUresult want, CUstream s)
{
    CUgraph g = (CUgraph)&g;
    EXPECT(want, cuStreamEndCapture(s, &g));
    cr_assert_null(g);
    cr_assert_eq(capture_status(s), CU_STREAM_CAPTURE_STATUS_NONE);
}

/* cuMemFreeAsync during a capture makes a free node, so it "must be passed
 * the address of a graph allocation": any other address is refused and the
 * capture is invalidated, in every mode, and the memory is not freed. */
Test(fakecuda, a_capture_given_a_free_of_memory_no_graph_allocated_is_invalidated)
{
    static const CUstreamCaptureMode modes[] = { CU_STREAM_CAPTURE_MODE_GLOBAL,
                                                 CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                                 CU_STREAM_CAPTURE_MODE_RELAXED };
    primary();
    for (size_t i = 0; i < 3; i++) {
        CUstream s;
        CUdeviceptr p;
        OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
        OK(cuMemAlloc_v2(&p, 64));
        OK(cuStreamBeginCapture_v2(s, modes[i]));
        EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(p, s));
        cr_assert_eq(capture_status(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        expect_end(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, s);
        OK(cuMemFree_v2(p)); /* still allocated */
        OK(cuStreamDestroy_v2(s));
    }
}

Test(fakecuda, is_capturing_reports_active_between_begin_and_end)
{
    CUstream s;
    cuuint64_t id = 0, id2 = 0;
    CUstreamCaptureStatus st;
    primary();
    OK(cuStreamCreate(&s, 0));
    cr_assert_eq(capture_status(s), CU_STREAM_CAPTURE_STATUS_NONE);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    cr_assert_eq(capture_status(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(cuStreamGetCaptureInfo(s, &st, &id));
    cr_assert_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    cr_assert_neq(id, 0);
    /* Already capturing: it may not begin again. */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamIsCapturing(s, NULL));
    CUgraph g = end_capture(s);
    cr_assert_eq(capture_status(s), CU_STREAM_CAPTURE_STATUS_NONE);
    /* A new capture has a new id. */
    OK(cuStreamBeginCapture(s));
    OK(cuStreamGetCaptureInfo(s, &st, &id2));
    cr_assert_neq(id2, id);
    CUgraph g2 = end_capture(s);
    OK(cuGraphDestroy(g));
    OK(cuGraphDestroy(g2));
    /* Not capturing: nothing to end. */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamEndCapture(s, &g));
}

Test(fakecuda, the_per_thread_stream_captures_through_the_ptsz_entry_points)
{
    CUgraph g = NULL;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    primary();
    OK(cuStreamBeginCapture_v2_ptsz(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuStreamIsCapturing_ptsz(NULL, &st));
    cr_assert_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(cuStreamIsCapturing(CU_STREAM_PER_THREAD, &st));
    cr_assert_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(cuStreamEndCapture_ptsz(NULL, &g));
    cr_assert_not_null(g);
    OK(cuStreamBeginCapture_ptsz(NULL));
    OK(cuStreamEndCapture_ptsz(NULL, &g));
    OK(cuGraphDestroy(g));
}

Test(fakecuda, capture_cannot_begin_on_the_legacy_stream)
{
    CUstream s;
    primary();
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
           cuStreamBeginCapture_v2(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
           cuStreamBeginCapture_v2(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_RELAXED));
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamBeginCapture(NULL));
    cr_assert_eq(capture_status(NULL), CU_STREAM_CAPTURE_STATUS_NONE);
    OK(cuStreamCreate(&s, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamBeginCapture_v2(s, (CUstreamCaptureMode)7));
    EXPECT(CUDA_ERROR_INVALID_HANDLE,
           cuStreamBeginCapture_v2((CUstream)&s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    cr_assert_eq(capture_status(s), CU_STREAM_CAPTURE_STATUS_NONE);
}

Test(fakecuda, work_queued_while_capturing_runs_only_when_the_graph_is_launched)
{
    CUstream s, other;
    CUmodule m;
    unsigned char host[16] = { 0 }, back[16] = { 0 };
    primary();
    m = kernels();
    CUfunction gg_fill = function(m, "gg_fill"), gg_copy = function(m, "gg_copy");
    CUdeviceptr p = alloc(16), q = alloc(16);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&other, 0));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemsetD8Async(p, 1, 16, s));
    OK(fill(gg_fill, s, p, 7, 8));                /* p = 7 x8, 1 x8 */
    OK(cuMemcpyHtoDAsync_v2(p + 12, host, 4, s)); /* read when the node runs */
    uint64_t n = 16;
    OK(launch3(gg_copy, s, &q, &p, &n));      /* q = p */
    OK(cuMemcpyDtoHAsync_v2(back, q, 16, s)); /* pageable: written when it runs */
    CUgraph g = end_capture(s);
    /* Nothing ran, and nothing is queued to run. */
    OK(cuStreamSynchronize(s));
    cr_assert_eq(byte_at(p), 0xde);
    cr_assert_eq(byte_at(q), 0xde);
    CUgraphExec x = instantiate(g, 0);
    OK(cuGraphDestroy(g)); /* the executable graph stands alone */
    memset(host, 9, sizeof host);
    OK(cuGraphLaunch(x, other));
    cr_assert_eq(byte_at(q), 0xde); /* queued on `other` */
    OK(cuStreamSynchronize(other));
    unsigned char want[16] = { 7, 7, 7, 7, 7, 7, 7, 7, 1, 1, 1, 1, 9, 9, 9, 9 };
    cr_assert_eq(memcmp(back, want, 16), 0);
    /* Again: the copy node reads the host buffer as it is then. */
    memset(host, 5, sizeof host);
    OK(cuMemsetD8_v2(p, 0, 16));
    OK(cuGraphLaunch(x, s));
    OK(cuGraphLaunch(x, other)); /* ordered behind the launch on s */
    OK(cuStreamSynchronize(other));
    want[12] = want[13] = want[14] = want[15] = 5;
    cr_assert_eq(memcmp(back, want, 16), 0);
    OK(cuGraphExecDestroy(x));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphLaunch(x, s));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphExecDestroy(x));
}

Test(fakecuda, a_launch_is_ordered_behind_its_streams_work_and_the_previous_launch)
{
    CUstream s, cap, other;
    CUevent start, before;
    CUmodule m;
    float ms;
    primary();
    m = kernels();
    CUfunction gg_fill = function(m, "gg_fill");
    CUdeviceptr p = alloc(8);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&cap, 0));
    OK(cuEventCreate(&start, 0));
    OK(cuEventCreate(&before, 0));
    OK(cuStreamBeginCapture_v2(cap, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(fill(gg_fill, cap, p, 2, 4));
    CUgraphExec x = instantiate(end_capture(cap), 0);
    OK(cuMemsetD8Async(p, 6, 8, s));
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    unsigned char b[8];
    cr_assert_eq(fakecuda_read(p, b, 8), 0);
    cr_assert_eq(b[0], 2);
    cr_assert_eq(b[7], 6);
    /* A second launch elsewhere waits for the first, and all before it. */
    OK(cuEventRecord(start, s));
    OK(cuEventRecord(before, s));
    OK(cuGraphLaunch(x, s));
    OK(cuGraphLaunch(x, other));
    OK(cuStreamSynchronize(other));
    OK(cuEventElapsedTime(&ms, start, before)); /* both ran */
}

Test(fakecuda, a_synchronize_during_capture_invalidates_it)
{
    CUstream s;
    primary();
    CUdeviceptr p = alloc(8);
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(cuMemsetD8Async(p, 1, 8, s));
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamSynchronize(s));
    cr_assert_eq(capture_status(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    /* Further work on it fails until the capture ends. */
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuMemsetD8Async(p, 2, 8, s));
    expect_end(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, s);
    /* The stream works again; nothing captured ever ran. */
    OK(cuStreamQuery(s));
    cr_assert_eq(byte_at(p), 0xde);
    OK(cuMemsetD8Async(p, 3, 8, s));
    OK(cuStreamSynchronize(s));
    cr_assert_eq(byte_at(p), 3);
    /* A query is a synchronisation too. */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamQuery(s));
    expect_end(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, s);
}

Test(fakecuda, a_context_synchronize_during_capture_invalidates_it_in_any_mode)
{
    CUstream s;
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    primary();
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuThreadExchangeStreamCaptureMode(&mode));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuCtxSynchronize());
    cr_assert_eq(capture_status(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    expect_end(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, s);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuCtxSynchronize_v2(NULL));
    expect_end(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, s);
    OK(cuCtxSynchronize());
}

Test(fakecuda, the_legacy_stream_cannot_be_used_while_a_blocking_stream_captures)
{
    CUstream s;
    CUstreamCaptureStatus st;
    unsigned char b[4] = { 0 };
    primary();
    CUdeviceptr p = alloc(8);
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    /* Asking is refused, and does no harm. */
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, cuStreamIsCapturing(NULL, &st));
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, cuStreamGetCaptureInfo(CU_STREAM_LEGACY, &st, NULL));
    cr_assert_eq(capture_status(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    /* Using it would make it depend on the capture. */
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, cuMemsetD8Async(p, 1, 8, NULL));
    cr_assert_eq(capture_status(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    expect_end(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, s);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, cuMemcpyHtoD_v2(p, b, 4));
    expect_end(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, s);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, cuStreamSynchronize(NULL));
    expect_end(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, s);
    /* A non-blocking stream's capture leaves the legacy stream alone. */
    OK(cuStreamDestroy_v2(s));
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(cuMemsetD8Async(p, 1, 8, NULL));
    OK(cuMemcpyDtoH_v2(b, p, 4));
    cr_assert_eq(b[0], 1);
    cr_assert_eq(capture_status(NULL), CU_STREAM_CAPTURE_STATUS_NONE);
    CUgraph g = end_capture(s);
    OK(cuGraphDestroy(g));
}

typedef struct thread_call {
    int what; /* 0: cuMemAlloc_v2, 1: cuStreamEndCapture */
    CUcontext ctx;
    CUstream s;
    CUstreamCaptureMode mode;
    CUresult rc;
} thread_call;

static void *call_on_a_thread(void *arg)
{
    thread_call *t = arg;
    CUdeviceptr p = 0;
    CUgraph g = NULL;
    CUstreamCaptureMode mode = t->mode;
    cuCtxSetCurrent(t->ctx);
    cuThreadExchangeStreamCaptureMode(&mode);
    if (t->what == 0) {
        t->rc = cuMemAlloc_v2(&p, 8);
        if (t->rc == CUDA_SUCCESS)
            cuMemFree_v2(p);
    } else {
        t->rc = cuStreamEndCapture(t->s, &g);
    }
    return NULL;
}

static CUresult on_a_thread(int what, CUcontext c, CUstream s, CUstreamCaptureMode mode)
{
    pthread_t t;
    thread_call call = { what, c, s, mode, CUDA_ERROR_UNKNOWN };
    pthread_create(&t, NULL, call_on_a_thread, &call);
    pthread_join(t, NULL);
    return call.rc;
}

Test(fakecuda, unsafe_calls_follow_the_threads_capture_mode)
{
    CUstream s;
    CUdeviceptr p = 0;
    CUstreamCaptureMode mode;
    CUcontext c = primary();
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    /* GLOBAL: prohibited on this thread and, in GLOBAL mode, on others. */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
           on_a_thread(0, c, s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    cr_assert_eq(capture_status(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    expect_end(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, s);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(on_a_thread(0, c, s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    OK(on_a_thread(0, c, s, CU_STREAM_CAPTURE_MODE_RELAXED));
    cr_assert_eq(capture_status(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuMemAlloc_v2(&p, 8));
    expect_end(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, s);

    /* THREAD_LOCAL: only this thread. */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    OK(on_a_thread(0, c, s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    size_t pitch;
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuMemAllocPitch_v2(&p, &pitch, 64, 2, 4));
    expect_end(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, s);

    /* RELAXED: nobody. */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(cuMemAlloc_v2(&p, 8));
    OK(cuMemFree_v2(p));
    OK(on_a_thread(0, c, s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    cuGraphDestroy(end_capture(s));

    /* A thread in RELAXED mode may, even with its own GLOBAL capture. */
    p = alloc(8);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuMemFree_v2(p));
    expect_end(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, s);
    mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    OK(cuThreadExchangeStreamCaptureMode(&mode));
    cr_assert_eq(mode, CU_STREAM_CAPTURE_MODE_GLOBAL); /* the default */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemFree_v2(p));
    cuGraphDestroy(end_capture(s));

    /* The mode exchange's own errors. */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuThreadExchangeStreamCaptureMode(NULL));
    mode = (CUstreamCaptureMode)9;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuThreadExchangeStreamCaptureMode(&mode));
}

Test(fakecuda, the_mode_exchange_needs_init)
{
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuThreadExchangeStreamCaptureMode(&mode));
    EXPECT(CUDA_ERROR_NOT_INITIALIZED,
           cuStreamBeginCapture_v2(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT(CUDA_ERROR_NOT_INITIALIZED, cuGraphDestroy(NULL));
}

Test(fakecuda, a_capture_ends_on_its_own_stream_and_thread)
{
    CUstream s, side;
    CUevent e;
    CUgraph g;
    CUcontext c = primary();
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamCreate(&side, 0));
    OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    /* Not from another thread unless RELAXED. */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
           on_a_thread(1, c, s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    cr_assert_eq(capture_status(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamEndCapture(s, NULL));
    cuGraphDestroy(end_capture(s));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(on_a_thread(1, c, s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    cr_assert_eq(capture_status(s), CU_STREAM_CAPTURE_STATUS_NONE);
    /* Not on a stream that joined it. */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuEventRecord(e, s));
    OK(cuStreamWaitEvent(side, e, 0));
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, cuStreamEndCapture(side, &g));
    expect_end(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, s);
    cr_assert_eq(capture_status(side), CU_STREAM_CAPTURE_STATUS_NONE);
}

Test(fakecuda, events_fork_and_join_a_capture_across_streams)
{
    CUstream s, side;
    CUevent fork, join;
    CUmodule m;
    primary();
    m = kernels();
    CUfunction gg_fill = function(m, "gg_fill");
    CUdeviceptr p = alloc(8), q = alloc(8);
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
    OK(cuEventCreate(&fork, 0));
    OK(cuEventCreate(&join, 0));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(fill(gg_fill, s, p, 1, 8));
    OK(cuEventRecord(fork, s));
    OK(cuStreamWaitEvent(side, fork, 0)); /* side joins the capture */
    cr_assert_eq(capture_status(side), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    OK(cuMemcpyDtoDAsync_v2(q, p, 8, side));
    OK(cuEventRecord(join, side));
    OK(cuStreamWaitEvent(s, join, 0));
    OK(fill(gg_fill, s, p, 2, 4));
    CUgraph g = end_capture(s);
    cr_assert_eq(capture_status(side), CU_STREAM_CAPTURE_STATUS_NONE);
    CUgraphExec x = instantiate(g, 0);
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    cr_assert_eq(byte_at(q), 1); /* copied before the second fill */
    cr_assert_eq(byte_at(p), 2);
    cr_assert_eq(byte_at(p + 7), 1);

    /* A fork never joined back: the capture fails. */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuEventRecord(fork, s));
    OK(cuStreamWaitEvent(side, fork, 0));
    OK(cuMemsetD8Async(q, 5, 8, side));
    expect_end(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, s);
    cr_assert_eq(capture_status(side), CU_STREAM_CAPTURE_STATUS_NONE);
    /* A fork that did nothing needs no join. */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemsetD8Async(q, 5, 8, s));
    OK(cuEventRecord(fork, s));
    OK(cuStreamWaitEvent(side, fork, 0));
    cuGraphDestroy(end_capture(s));
}

Test(fakecuda, a_captured_event_is_for_that_capture_only)
{
    CUstream s, s2;
    CUevent e, plain;
    float ms;
    primary();
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamCreate(&s2, 0));
    OK(cuEventCreate(&e, 0));
    OK(cuEventCreate(&plain, 0));
    OK(cuEventRecord(plain, NULL));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(cuEventRecord(e, s));
    /* It stands for no work that runs: no query, no wait, no timing. */
    EXPECT(CUDA_ERROR_CAPTURED_EVENT, cuEventQuery(e));
    cr_assert_eq(capture_status(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    expect_end(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, s);
    EXPECT(CUDA_ERROR_CAPTURED_EVENT, cuEventSynchronize(e));
    EXPECT(CUDA_ERROR_CAPTURED_EVENT, cuEventElapsedTime(&ms, plain, e));
    EXPECT(CUDA_ERROR_CAPTURED_EVENT, cuStreamWaitEvent(s2, e, 0));
    /* Recorded again outside a capture, it is an ordinary event. */
    OK(cuEventRecord(e, s));
    OK(cuEventSynchronize(e));

    /* An ordinary event from a capturing stream: only an external wait. */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, cuStreamWaitEvent(s, plain, 0));
    expect_end(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, s);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuStreamWaitEvent(s, plain, CU_EVENT_WAIT_EXTERNAL));
    CUgraphExec x = instantiate(end_capture(s), 0);
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    /* ... "This flag is invalid outside of stream capture." */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamWaitEvent(s, plain, CU_EVENT_WAIT_EXTERNAL));

    /* Two captures cannot merge. */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuStreamBeginCapture_v2(s2, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuEventRecord(e, s));
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_MERGE, cuStreamWaitEvent(s2, e, 0));
    expect_end(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, s);
    expect_end(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, s2);
}

Test(fakecuda, an_event_wait_node_waits_for_the_events_record_at_launch)
{
    CUstream s, producer;
    CUevent e;
    primary();
    CUdeviceptr p = alloc(8), q = alloc(8);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&producer, CU_STREAM_NON_BLOCKING));
    OK(cuEventCreate(&e, 0));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuStreamWaitEvent(s, e, CU_EVENT_WAIT_EXTERNAL));
    OK(cuMemcpyDtoDAsync_v2(q, p, 8, s));
    CUgraphExec x = instantiate(end_capture(s), 0);
    OK(cuMemsetD8Async(p, 4, 8, producer));
    OK(cuEventRecord(e, producer));
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s)); /* runs the producer's memset first */
    cr_assert_eq(byte_at(q), 4);
}

Test(fakecuda, callbacks_and_stream_destruction_are_refused_while_capturing)
{
    CUstream s;
    primary();
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamAddCallback(s, record_callback, NULL, 0));
    expect_end(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, s);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    EXPECT(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamDestroy_v2(s));
    expect_end(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, s);
    OK(cuStreamDestroy_v2(s));
}

Test(fakecuda, capture_info_gives_the_graph_and_the_next_nodes_dependencies)
{
    CUstream s;
    CUstreamCaptureStatus st;
    cuuint64_t id = 0;
    CUgraph g = NULL;
    const CUgraphNode *deps = NULL;
    const CUgraphEdgeData *edges = NULL;
    size_t n = 99;
    primary();
    CUdeviceptr p = alloc(8);
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamGetCaptureInfo_v3(s, &st, &id, &g, &deps, &edges, &n));
    cr_assert_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuStreamGetCaptureInfo_v2(s, &st, &id, &g, &deps, &n));
    cr_assert_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    cr_assert_not_null(g);
    cr_assert_eq(n, 0);
    OK(cuMemsetD8Async(p, 1, 8, s));
    OK(cuStreamGetCaptureInfo_v3(s, &st, NULL, NULL, &deps, &edges, &n));
    cr_assert_eq(n, 1);
    cr_assert_not_null(deps[0]);
    cr_assert_eq(edges[0].type, 0);
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuStreamGetCaptureInfo_v3(s, &st, NULL, NULL, NULL, &edges, &n));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuStreamGetCaptureInfo_v2(s, NULL, NULL, NULL, NULL, NULL));
    /* The graph is not instantiable nor destroyable while captured into. */
    CUgraphExec x;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiateWithFlags(&x, g, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphDestroy(g));
    cr_assert_eq(end_capture(s), g);
    OK(cuGraphDestroy(g));
}

Test(fakecuda, graph_entry_points_check_their_arguments)
{
    CUstream s;
    CUgraphExec x;
    CUgraphNode bad = (CUgraphNode)&bad;
    char log[8] = "xxxxxxx";
    primary();
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUgraph g = end_capture(s); /* an empty graph is a graph */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiateWithFlags(NULL, g, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiateWithFlags(&x, NULL, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiateWithFlags(&x, (CUgraph)s, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiateWithFlags(&x, g, 1ull << 40));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuGraphInstantiateWithFlags(&x, g,
                                       CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
                                           CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuGraphInstantiateWithFlags(&x, g, CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH));
    OK(cuGraphInstantiate_v2(&x, g, &bad, log, sizeof log));
    cr_assert_null(bad);
    cr_assert_str_eq(log, "");
    OK(cuGraphLaunch(x, s));
    OK(cuGraphLaunch_ptsz(x, NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphLaunch(NULL, s));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphLaunch((CUgraphExec)g, s));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuGraphLaunch(x, (CUstream)&x));
    OK(cuGraphExecDestroy(x));
    OK(cuGraphInstantiate(&x, g, NULL, NULL, 0));
    OK(cuGraphExecDestroy(x));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphExecDestroy(NULL));
    OK(cuGraphDestroy(g));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphDestroy(g));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphDestroy(NULL));
    /* No context, no instantiation. */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    g = end_capture(s);
    OK(cuCtxSetCurrent(NULL));
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuGraphInstantiateWithFlags(&x, g, 0));
}

Test(fakecuda, a_device_launch_graph_holds_device_work_only)
{
    CUstream s;
    CUgraphExec x;
    unsigned char b[8];
    primary();
    CUdeviceptr p = alloc(8);
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemsetD8Async(p, 1, 8, s));
    CUgraph g = end_capture(s);
    OK(cuGraphInstantiateWithFlags(&x, g, CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemcpyDtoHAsync_v2(b, p, 8, s)); /* pageable host memory */
    g = end_capture(s);
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuGraphInstantiateWithFlags(&x, g, CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH));
    OK(cuGraphInstantiateWithFlags(&x, g, 0)); /* a host launch may copy to the host */
}

Test(fakecuda, an_allocation_captured_is_usable_once_the_graph_ran)
{
    CUstream s, other;
    CUdeviceptr p = 0, again = 0;
    unsigned char b[8];
    primary();
    CUdeviceptr q = alloc(8);
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamCreate(&other, 0));
    size_t live = fakecuda_live_allocations();
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemAllocAsync(&p, 8, s));
    cr_assert_neq(p, 0);
    /* An address, reserved, with nothing behind it yet. */
    cr_assert_eq(fakecuda_read(p, b, 1), -EFAULT);
    cr_assert_eq(fakecuda_live_allocations(), live);
    OK(cuMemsetD8Async(p, 3, 8, s));
    OK(cuMemcpyDtoDAsync_v2(q, p, 8, s));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemsetD8Async(p, 3, 9, s)); /* past its end */
    CUgraphExec x = instantiate(end_capture(s), 0);
    cr_assert_eq(fakecuda_read(p, b, 1), -EFAULT);
    OK(cuGraphLaunch(x, s));
    cr_assert_eq(fakecuda_read(p, b, 1), -EFAULT); /* its allocation node has not run */
    /* Work after the launch, in stream order, may use it. */
    OK(cuMemsetD8Async(p + 4, 9, 4, s));
    OK(cuStreamSynchronize(s));
    cr_assert_eq(fakecuda_live_allocations(), live + 1);
    cr_assert_eq(fakecuda_read(p, b, 8), 0);
    cr_assert_eq(b[0], 3);
    cr_assert_eq(b[4], 9);
    cr_assert_eq(byte_at(q), 3);
    /* Not freed by the graph: a relaunch is refused until it is freed. */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphLaunch(x, s));
    OK(cuMemFreeAsync(p, s));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(p, s));
    OK(cuStreamSynchronize(s));
    cr_assert_eq(fakecuda_read(p, b, 1), -EFAULT);
    cr_assert_eq(fakecuda_live_allocations(), live);
    /* Relaunched, the allocation is at the same address. */
    OK(cuGraphLaunch(x, other));
    OK(cuMemFree_v2(p)); /* runs the launch first, then frees */
    cr_assert_eq(fakecuda_live_allocations(), live);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFree_v2(p));
    /* Nothing else gets its address while the graph lives on. */
    OK(cuMemAlloc_v2(&again, 8));
    cr_assert_neq(again, p);
    OK(cuGraphExecDestroy(x));
}

Test(fakecuda, an_allocation_freed_in_its_graph_is_accessible_only_between_its_nodes)
{
    CUstream s;
    CUdeviceptr p = 0;
    CUmodule m;
    primary();
    m = kernels();
    CUfunction gg_fill = function(m, "gg_fill");
    CUdeviceptr q = alloc(8);
    OK(cuStreamCreate(&s, 0));
    size_t live = fakecuda_live_allocations(), used = fakecuda_mem_used();
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemAllocAsync(&p, 8, s));
    OK(fill(gg_fill, s, p, 6, 8));
    OK(cuMemcpyDtoDAsync_v2(q, p, 8, s));
    OK(cuMemFreeAsync(p, s));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(p, s)); /* once in its graph */
    CUgraph g = end_capture(s);
    CUgraphExec x = instantiate(g, 0);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiateWithFlags(&x, g, 0)); /* one at a time */
    for (int i = 0; i < 3; i++) {
        OK(cuMemsetD8_v2(q, 0, 8));
        OK(cuGraphLaunch(x, s));
        OK(cuStreamSynchronize(s));
        cr_assert_eq(byte_at(q), 6);
        cr_assert_eq(fakecuda_live_allocations(), live);
        cr_assert_eq(fakecuda_mem_used(), used);
    }
    /* It is not freed outside its graph, and after the free node it is no
     * memory: a kernel touching it faults. */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(p, s));
    OK(fill(gg_fill, s, p, 1, 1));
    EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(s));
}

Test(fakecuda, an_allocation_can_escape_to_another_graph_that_frees_it)
{
    CUstream s;
    CUdeviceptr p = 0, r = 0;
    primary();
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemAllocAsync(&p, 8, s));
    CUgraphExec make = instantiate(end_capture(s), CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemsetD8Async(p, 2, 8, s));
    OK(cuMemFreeAsync(p, s)); /* a free node for another graph's allocation */
    CUgraphExec use = instantiate(end_capture(s), 0);
    /* One its own graph frees cannot be freed in another. */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemAllocAsync(&r, 8, s));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(r + 1, s)); /* not an allocation's address */
    OK(cuMemFreeAsync(r, s));
    CUgraph own = end_capture(s);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(r, s));
    cuGraphDestroy(end_capture(s));
    cuGraphDestroy(own);
    /* Not allocated: the free node has nothing to free. */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphLaunch(use, s));
    OK(cuGraphLaunch(make, s));
    OK(cuGraphLaunch(make, s)); /* AUTO_FREE_ON_LAUNCH frees the first one first */
    OK(cuGraphLaunch(use, s));
    OK(cuStreamSynchronize(s));
    cr_assert_eq(fakecuda_read(p, &r, 1), -EFAULT);
    /* An escaped allocation outlives its graphs. */
    OK(cuGraphLaunch(make, s));
    OK(cuGraphExecDestroy(make));
    OK(cuGraphExecDestroy(use));
    OK(cuMemsetD8Async(p, 4, 8, s));
    OK(cuStreamSynchronize(s));
    cr_assert_eq(byte_at(p), 4);
    OK(cuMemFreeAsync(p, s));
    OK(cuStreamSynchronize(s));
    cr_assert_eq(fakecuda_read(p, &r, 1), -EFAULT);
}

Test(fakecuda, memory_nodes_take_only_graph_allocations)
{
    CUstream s;
    CUdeviceptr p = 0;
    primary();
    CUdeviceptr plain = alloc(8);
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAllocAsync(&p, 8, s));
    /* Memory no graph allocated: refused, and the capture invalidated. */
    CUdeviceptr ungraphed[] = { p, plain }; /* a pool's, cuMemAlloc's */
    for (int i = 0; i < 2; i++) {
        OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(ungraphed[i], s));
        expect_end(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, s);
    }
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemAllocAsync(&p, 0, s));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(plain + 1, s));   /* the address of nothing */
    cr_assert_eq(capture_status(s), CU_STREAM_CAPTURE_STATUS_ACTIVE); /* argument errors */
    CUmemoryPool pool;
    OK(cuDeviceGetDefaultMemPool(&pool, 0));
    OK(cuMemAllocFromPoolAsync(&p, 16, pool, s));
    OK(cuMemFreeAsync(p, s));
    cuGraphDestroy(end_capture(s));
    /* Freed before any launch allocated it. */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemAllocAsync(&p, 8, s));
    CUgraph g = end_capture(s);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(p, s));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFree_v2(p));
    /* Its address is the graph's only while the graph lives. */
    OK(cuGraphDestroy(g));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(p, s));
}

Test(fakecuda, a_launch_needs_memory_for_its_allocations)
{
    CUstream s;
    CUdeviceptr p = 0;
    primary();
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemAllocAsync(&p, 4096, s));
    OK(cuMemFreeAsync(p, s));
    CUgraphExec x = instantiate(end_capture(s), 0);
    fakecuda_set_mem_limit(fakecuda_mem_used() + 100);
    EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuGraphLaunch(x, s));
    fakecuda_set_mem_limit(0);
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
}

/* An upload backs the graph's allocations with memory as a launch would,
 * runs nothing and keeps nothing back: out of memory exactly when a launch
 * would be, on either stream form. */
Test(fakecuda, an_upload_needs_memory_for_its_allocations_and_keeps_none)
{
    CUstream s;
    CUdeviceptr p = 0;
    primary();
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemAllocAsync(&p, 4096, s));
    OK(cuMemFreeAsync(p, s));
    CUgraphExec x = instantiate(end_capture(s), 0);
    size_t used = fakecuda_mem_used();
    fakecuda_set_mem_limit(used + 100);
    EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuGraphUpload(x, s));
    EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuGraphUpload_ptsz(x, s));
    fakecuda_set_mem_limit(0);
    OK(cuGraphUpload(x, s));
    OK(cuGraphUpload_ptsz(x, s));
    cr_assert_eq(fakecuda_mem_used(), used);
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
}

/* An allocation node made by hand is a captured cuMemAllocAsync's: its
 * address at once, its memory at each launch. */
Test(fakecuda, an_allocation_node_added_by_hand_takes_its_memory_at_each_launch)
{
    CUstream s;
    CUgraph g;
    CUgraphNode n;
    CUDA_MEM_ALLOC_NODE_PARAMS mp = {
        .poolProps = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                       .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } },
        .bytesize = 4096,
    };
    CUDA_MEM_ALLOC_NODE_PARAMS none = mp;
    primary();
    OK(cuStreamCreate(&s, 0));
    OK(cuGraphCreate(&g, 0));
    none.bytesize = 0;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddMemAllocNode(&n, g, NULL, 0, &none));
    OK(cuGraphAddMemAllocNode(&n, g, NULL, 0, &mp));
    cr_assert_neq(mp.dptr, 0);
    CUgraphExec x = instantiate(g, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
    fakecuda_set_mem_limit(fakecuda_mem_used() + 100);
    EXPECT(CUDA_ERROR_OUT_OF_MEMORY, cuGraphLaunch(x, s));
    fakecuda_set_mem_limit(0);
    OK(cuGraphLaunch(x, s));
    OK(cuMemsetD8Async(mp.dptr, 5, 4096, s));
    OK(cuStreamSynchronize(s));
    cr_assert_eq(byte_at(mp.dptr), 5);
    OK(cuMemFreeAsync(mp.dptr, s));
    OK(cuStreamSynchronize(s));
}

Test(fakecuda, a_graph_launched_into_a_capture_is_captured)
{
    CUstream s, outer;
    CUdeviceptr p = 0;
    primary();
    CUdeviceptr q = alloc(8);
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamCreate(&outer, 0));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemsetD8Async(q, 8, 8, s));
    CUgraphExec inner = instantiate(end_capture(s), 0);
    OK(cuStreamBeginCapture_v2(outer, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuGraphLaunch(inner, outer));
    CUgraphExec x = instantiate(end_capture(outer), 0);
    cr_assert_eq(byte_at(q), 0xde);
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    cr_assert_eq(byte_at(q), 8);
    /* Not a graph with memory nodes. */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemAllocAsync(&p, 8, s));
    OK(cuMemFreeAsync(p, s));
    CUgraphExec mem = instantiate(end_capture(s), 0);
    OK(cuStreamBeginCapture_v2(outer, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphLaunch(mem, outer));
    cuGraphDestroy(end_capture(outer));
}

Test(fakecuda, destroying_a_context_ends_its_captures)
{
    CUcontext c;
    CUstream s;
    CUdeviceptr p = 0;
    OK(cuInit(0));
    OK(cuCtxCreate_v2(&c, 0, 0));
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemAllocAsync(&p, 8, s));
    OK(cuCtxDestroy_v2(c));
    cr_assert_eq(fakecuda_live_allocations(), 0);
    /* The GLOBAL capture is over: nothing is prohibited any more. */
    OK(cuCtxCreate_v2(&c, 0, 0));
    OK(cuMemAlloc_v2(&p, 8));
}

Test(fakecuda, get_proc_address_hands_out_the_capture_entry_points_by_version)
{
    OK(cuInit(0));
    expect_proc("cuStreamBeginCapture", 10000, CU_GET_PROC_ADDRESS_DEFAULT, "cuStreamBeginCapture");
    expect_proc("cuStreamBeginCapture", 10010, CU_GET_PROC_ADDRESS_DEFAULT,
                "cuStreamBeginCapture_v2");
    expect_proc("cuStreamBeginCapture", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                "cuStreamBeginCapture_v2_ptsz");
    expect_proc("cuStreamGetCaptureInfo", 11030, CU_GET_PROC_ADDRESS_DEFAULT,
                "cuStreamGetCaptureInfo_v2");
    expect_proc("cuStreamGetCaptureInfo", 13000, CU_GET_PROC_ADDRESS_DEFAULT,
                "cuStreamGetCaptureInfo_v3");
    expect_proc("cuGraphInstantiate", 11000, CU_GET_PROC_ADDRESS_DEFAULT, "cuGraphInstantiate_v2");
    expect_proc("cuGraphInstantiateWithFlags", 13000, CU_GET_PROC_ADDRESS_DEFAULT,
                "cuGraphInstantiateWithFlags");
    expect_proc("cuGraphLaunch", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                "cuGraphLaunch_ptsz");
}

Test(fakecuda, instantiation_with_params_reports_its_result_and_the_offending_node)
{
    CUstream s;
    CUgraphExec x = NULL;
    unsigned char b[8];
    primary();
    CUdeviceptr p = alloc(8);
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuMemsetD8Async(p, 1, 8, s));
    OK(cuMemcpyDtoHAsync_v2(b, p, 8, s));
    CUgraph g = end_capture(s);
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = { .flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD,
                                         .hUploadStream = s };
    OK(cuGraphInstantiateWithParams(&x, g, &ip));
    cr_assert_eq(ip.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
    cr_assert_null(ip.hErrNode_out);
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    cr_assert_eq(b[0], 1);
    /* A device launch cannot copy to pageable host memory: that node. */
    ip = (CUDA_GRAPH_INSTANTIATE_PARAMS){ .flags = CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH };
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiateWithParams_ptsz(&x, g, &ip));
    cr_assert_eq(ip.result_out, CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED);
    cr_assert_not_null(ip.hErrNode_out);
    ip = (CUDA_GRAPH_INSTANTIATE_PARAMS){ .flags = 1ull << 40 };
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiateWithParams(&x, g, &ip));
    cr_assert_eq(ip.result_out, CUDA_GRAPH_INSTANTIATE_ERROR);
    cr_assert_null(ip.hErrNode_out);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiateWithParams(&x, g, NULL));
    /* The upload flag is for this form only, and needs a stream work can go to. */
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuGraphInstantiateWithFlags(&x, g, CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD));
    ip = (CUDA_GRAPH_INSTANTIATE_PARAMS){ .flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD,
                                          .hUploadStream = (CUstream)&ip };
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuGraphInstantiateWithParams(&x, g, &ip));
}

/* ------------------------------------------------------------------------ */
/* 2D, 3D, peer and array copies, 2D sets (fc_copy3d.c, fc_array.c)          */
/* ------------------------------------------------------------------------ */

static CUDA_MEMCPY2D htod2d(const void *host, size_t hpitch, CUdeviceptr dev, size_t dpitch,
                            size_t w, size_t h)
{
    return (CUDA_MEMCPY2D){ .srcMemoryType = CU_MEMORYTYPE_HOST,
                            .srcHost = host,
                            .srcPitch = hpitch,
                            .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                            .dstDevice = dev,
                            .dstPitch = dpitch,
                            .WidthInBytes = w,
                            .Height = h };
}

Test(fakecuda, a_2d_copy_moves_rows_between_pitched_device_memory_and_host_memory)
{
    unsigned char host[4][8], back[4][8], row[16];
    CUdeviceptr p;
    size_t pitch = 0;
    primary();
    OK(cuMemAllocPitch_v2(&p, &pitch, 8, 4, 4));
    OK(cuMemsetD8_v2(p, 0, pitch * 4));
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 8; x++)
            host[y][x] = (unsigned char)(16 * y + x);
    /* Rows 1..3 of the host, at X 2 of rows 0..2 of the device. */
    CUDA_MEMCPY2D c = htod2d(host[1], 8, p, pitch, 6, 3);
    c.dstXInBytes = 2;
    OK(cuMemcpy2D_v2(&c));
    cr_assert_eq(fakecuda_read(p, row, 16), 0);
    cr_assert_eq(row[0], 0);
    cr_assert_eq(row[2], 16);
    cr_assert_eq(row[7], 21);
    cr_assert_eq(byte_at(p + 2 * pitch + 2), 48);
    cr_assert_eq(byte_at(p + 3 * pitch + 2), 0);
    /* And back, through the _ptds form and unified addressing. */
    memset(back, 0, sizeof back);
    CUDA_MEMCPY2D d = { .srcMemoryType = CU_MEMORYTYPE_UNIFIED,
                        .srcDevice = p,
                        .srcPitch = pitch,
                        .dstMemoryType = CU_MEMORYTYPE_UNIFIED,
                        .dstDevice = (CUdeviceptr)(uintptr_t)back,
                        .dstPitch = 8,
                        .WidthInBytes = 8,
                        .Height = 3 };
    OK(cuMemcpy2D_v2_ptds(&d));
    cr_assert_eq(back[0][2], 16);
    cr_assert_eq(back[2][7], 53);
    cr_assert_eq(back[3][0], 0);
    OK(cuMemcpy2DUnaligned_v2(&d));
    OK(cuMemcpy2DUnaligned_v2_ptds(&d));
}

/* The extent is from the first byte to the last: the last row needs only its width. */
Test(fakecuda,
     a_2d_copy_whose_last_row_runs_past_its_allocation_is_invalid_value_and_copies_nothing)
{
    unsigned char host[64] = { 0 };
    primary();
    CUdeviceptr p = alloc(100);
    OK(cuMemsetD8_v2(p, 0x77, 100));
    memset(host, 0x11, sizeof host);
    CUDA_MEMCPY2D c = htod2d(host, 21, p, 40, 20, 3); /* rows at 0, 40, 80: ends at 100 */
    OK(cuMemcpy2D_v2(&c));
    cr_assert_eq(byte_at(p + 99), 0x11);
    memset(host, 0x22, sizeof host);
    c.WidthInBytes = 21; /* the last row one byte past */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D_v2(&c));
    cr_assert_eq(byte_at(p), 0x11);
    c.WidthInBytes = 20, c.dstY = 1; /* a row more */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D_v2(&c));
    /* The device as the source, too. */
    CUDA_MEMCPY2D d = { .srcMemoryType = CU_MEMORYTYPE_DEVICE,
                        .srcDevice = p,
                        .srcPitch = 40,
                        .dstMemoryType = CU_MEMORYTYPE_HOST,
                        .dstHost = host,
                        .dstPitch = 21,
                        .WidthInBytes = 21,
                        .Height = 3 };
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D_v2(&d));
    d.WidthInBytes = 20;
    OK(cuMemcpy2D_v2(&d));
}

Test(fakecuda, a_2d_copy_checks_its_pitches_memory_types_and_descriptor)
{
    unsigned char host[64];
    primary();
    CUdeviceptr p = alloc(256);
    CUDA_MEMCPY2D c = htod2d(host, 16, p, 16, 16, 2);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D_v2(NULL));
    c.dstXInBytes = 1; /* the pitch is less than width + X */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D_v2(&c));
    c.dstXInBytes = 0, c.srcPitch = 15;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D_v2(&c));
    c.Height = 1; /* one row: no pitch is used */
    OK(cuMemcpy2D_v2(&c));
    c.srcPitch = 16, c.Height = 2, c.srcMemoryType = (CUmemorytype)0;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D_v2(&c));
    c.srcMemoryType = CU_MEMORYTYPE_HOST, c.srcHost = NULL;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D_v2(&c));
    c.WidthInBytes = 0; /* nothing to copy */
    OK(cuMemcpy2D_v2(&c));
    int max = 0;
    OK(cuDeviceGetAttribute(&max, CU_DEVICE_ATTRIBUTE_MAX_PITCH, 0));
    cr_assert_eq(max, 2147483647);
}

Test(fakecuda, an_async_2d_copy_runs_in_stream_order)
{
    unsigned char host[2][8];
    CUstream s;
    primary();
    CUdeviceptr p = alloc(64);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuMemsetD8Async(p, 0x33, 64, s));
    memset(host, 0x44, sizeof host);
    CUDA_MEMCPY2D c = htod2d(host, 8, p, 32, 8, 2);
    OK(cuMemcpy2DAsync_v2(&c, s));
    memset(host, 0x55, sizeof host);     /* staged at the call */
    cr_assert_eq(byte_at(p + 32), 0xde); /* nothing ran yet: fresh memory */
    OK(cuStreamSynchronize(s));
    cr_assert_eq(byte_at(p + 32), 0x44);
    cr_assert_eq(byte_at(p + 40), 0x33);
    c.Height = 3; /* a third row at 64: past the end */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy2DAsync_v2_ptsz(&c, s));
}

Test(fakecuda, a_3d_copy_follows_pitch_and_layer_height_and_checks_its_extent)
{
    unsigned char host[2][2][4], back[2][2][4];
    primary();
    CUdeviceptr p = alloc(2 * 3 * 8);
    OK(cuMemsetD8_v2(p, 0, 48));
    for (int i = 0; i < 16; i++)
        (&host[0][0][0])[i] = (unsigned char)(i + 1);
    /* Device: pitch 8, 3 rows a layer; 2 layers of 2 rows of 4 bytes at (X 4, Y 1). */
    CUDA_MEMCPY3D c = { .srcMemoryType = CU_MEMORYTYPE_HOST,
                        .srcHost = host,
                        .srcPitch = 4,
                        .srcHeight = 2,
                        .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                        .dstDevice = p,
                        .dstPitch = 8,
                        .dstHeight = 3,
                        .dstXInBytes = 4,
                        .dstY = 1,
                        .WidthInBytes = 4,
                        .Height = 2,
                        .Depth = 2 };
    OK(cuMemcpy3D_v2(&c));
    cr_assert_eq(byte_at(p + 8 + 4), 1);
    cr_assert_eq(byte_at(p + 16 + 7), 8);
    cr_assert_eq(byte_at(p + 24 + 8 + 4), 9);
    cr_assert_eq(byte_at(p + 24 + 16 + 7), 16); /* the very last byte of the allocation */
    CUDA_MEMCPY3D d = { .srcMemoryType = CU_MEMORYTYPE_DEVICE,
                        .srcDevice = p,
                        .srcPitch = 8,
                        .srcHeight = 3,
                        .srcXInBytes = 4,
                        .srcY = 1,
                        .dstMemoryType = CU_MEMORYTYPE_HOST,
                        .dstHost = back,
                        .dstPitch = 4,
                        .dstHeight = 2,
                        .WidthInBytes = 4,
                        .Height = 2,
                        .Depth = 2 };
    OK(cuMemcpy3D_v2_ptds(&d));
    cr_assert_eq(memcmp(host, back, sizeof host), 0);
    d.srcZ = 1; /* a layer further: past the end */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy3D_v2(&d));
    d.srcZ = 0, d.srcHeight = 2; /* fewer rows a layer than Y + Height */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy3D_v2(&d));
    d.srcHeight = 3, d.srcLOD = 1;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy3D_v2(&d));
    CUstream s;
    OK(cuStreamCreate(&s, 0));
    c.dstZ = 1;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy3DAsync_v2(&c, s));
    c.dstZ = 0, c.Depth = 1;
    OK(cuMemcpy3DAsync_v2_ptsz(&c, s));
    OK(cuStreamSynchronize(s));
}

Test(fakecuda, peer_copies_check_both_contexts_and_both_ranges)
{
    CUcontext c = primary(), other;
    OK(cuCtxCreate_v4(&other, NULL, 0, 0));
    OK(cuCtxSetCurrent(c));
    CUdeviceptr p = alloc(64), q = alloc(64);
    OK(cuMemsetD8_v2(p, 0x66, 64));
    OK(cuMemcpyPeer(q, other, p, c, 64));
    cr_assert_eq(byte_at(q + 63), 0x66);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyPeer(q + 1, c, p, c, 64));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyPeer_ptds(q, c, p + 1, c, 64));
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuMemcpyPeer(q, NULL, p, c, 8));
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuMemcpyPeer(q, c, p, (CUcontext)&p, 8));
    CUstream s;
    OK(cuStreamCreate(&s, 0));
    OK(cuMemsetD8_v2(p, 0x67, 64));
    OK(cuMemcpyPeerAsync(q, c, p, other, 64, s));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyPeerAsync_ptsz(q, c, p, other, 65, s));
    OK(cuStreamSynchronize(s));
    cr_assert_eq(byte_at(q), 0x67);
    CUDA_MEMCPY3D_PEER d = { .srcMemoryType = CU_MEMORYTYPE_DEVICE,
                             .srcDevice = p,
                             .srcContext = c,
                             .srcPitch = 64,
                             .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                             .dstDevice = q,
                             .dstContext = other,
                             .dstPitch = 64,
                             .WidthInBytes = 64,
                             .Height = 1,
                             .Depth = 1 };
    OK(cuMemcpy3DPeer(&d));
    OK(cuMemcpy3DPeer_ptds(&d));
    OK(cuMemcpy3DPeerAsync(&d, s));
    d.dstXInBytes = 1;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy3DPeerAsync_ptsz(&d, s));
    d.dstXInBytes = 0, d.dstContext = NULL;
    EXPECT(CUDA_ERROR_INVALID_CONTEXT, cuMemcpy3DPeer(&d));
    OK(cuStreamSynchronize(s));
}

Test(fakecuda, an_array_is_created_described_and_destroyed)
{
    CUarray a, b;
    CUDA_ARRAY3D_DESCRIPTOR d3 = { 0 };
    CUDA_ARRAY_DESCRIPTOR d2 = { 0 };
    primary();
    OK(cuArrayCreate_v2(&a, &(CUDA_ARRAY_DESCRIPTOR){
                                .Width = 64, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 2 }));
    OK(cuArray3DGetDescriptor_v2(&d3, a));
    cr_assert_eq(d3.Width, 64);
    cr_assert_eq(d3.Height, 0);
    cr_assert_eq(d3.NumChannels, 2);
    OK(cuArrayGetDescriptor_v2(&d2, a));
    cr_assert_eq(d2.Format, CU_AD_FORMAT_FLOAT);
    OK(cuArray3DCreate_v2(&b, &(CUDA_ARRAY3D_DESCRIPTOR){ .Width = 4,
                                                          .Height = 4,
                                                          .Depth = 2,
                                                          .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                                                          .NumChannels = 1 }));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuArrayGetDescriptor_v2(&d2, b)); /* a 3D array */
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuArrayCreate_v2(&b, &(CUDA_ARRAY_DESCRIPTOR){
                                    .Width = 4, .Format = CU_AD_FORMAT_NV12, .NumChannels = 1 }));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuArrayCreate_v2(&b, &(CUDA_ARRAY_DESCRIPTOR){
                                    .Width = 4, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 3 }));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuArray3DCreate_v2(
               &b, &(CUDA_ARRAY3D_DESCRIPTOR){
                       .Width = 4, .Depth = 2, .NumChannels = 1, .Format = CU_AD_FORMAT_FLOAT }));
    OK(cuArrayDestroy(a));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuArrayDestroy(a));
    EXPECT(CUDA_ERROR_INVALID_HANDLE, cuArray3DGetDescriptor_v2(&d3, a));
}

Test(fakecuda, copies_between_device_memory_and_a_1d_array_check_the_array_and_the_device_range)
{
    CUarray a;
    primary();
    CUdeviceptr p = alloc(64), q = alloc(64);
    OK(cuArrayCreate_v2(&a, &(CUDA_ARRAY_DESCRIPTOR){ .Width = 16,
                                                      .Format = CU_AD_FORMAT_UNSIGNED_INT32,
                                                      .NumChannels = 1 }));
    OK(cuMemsetD8_v2(p, 0x5c, 64));
    OK(cuMemsetD8_v2(q, 0, 64));
    OK(cuMemcpyDtoA_v2(a, 0, p, 64));
    OK(cuMemcpyAtoD_v2(q, a, 8, 56));
    cr_assert_eq(byte_at(q + 55), 0x5c);
    cr_assert_eq(byte_at(q + 56), 0);
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemcpyDtoA_v2(a, 0, p + 1, 64)); /* the source past its end */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoA_v2_ptds(a, 4, p, 64)); /* past the array */
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemcpyAtoD_v2(q + 8, a, 0, 64)); /* the destination past its end */
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemcpyAtoD_v2_ptds(q + 2, a, 0, 8));                  /* not element-aligned */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyAtoD_v2(q, a, 0, 6)); /* not whole elements */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpyAtoD_v2(q, (CUarray)&p, 0, 8));
    OK(cuArrayDestroy(a));
}

Test(fakecuda, a_2d_set_fills_rows_and_checks_alignment_pitch_and_range)
{
    unsigned char b[96];
    CUstream s;
    primary();
    CUdeviceptr p = alloc(96);
    OK(cuMemsetD8_v2(p, 0, 96));
    OK(cuMemsetD2D8_v2(p, 32, 0xab, 8, 3)); /* rows at 0, 32, 64: ends at 72 */
    cr_assert_eq(fakecuda_read(p, b, 96), 0);
    cr_assert_eq(b[7], 0xab);
    cr_assert_eq(b[8], 0);
    cr_assert_eq(b[71], 0xab);
    OK(cuMemsetD2D16_v2_ptds(p + 2, 32, 0x1234, 4, 2));
    cr_assert_eq(byte_at(p + 34), 0x34);
    OK(cuMemsetD2D32_v2(p + 88, 0, 0x01020304u, 2, 1)); /* one row: the pitch is unused */
    cr_assert_eq(byte_at(p + 95), 0x01);
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemsetD2D8_v2(p, 32, 0, 8, 4)); /* a fourth row past the end */
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuMemsetD2D8_v2_ptds(p + 65, 32, 0, 32, 1));                     /* one byte past */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D16_v2(p + 1, 32, 0, 4, 2)); /* unaligned pointer */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D32_v2(p, 30, 0, 4, 2));     /* unaligned pitch */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D32_v2_ptds(p, 8, 0, 4, 2)); /* pitch below a row */
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuMemsetD2D8Async(p, 32, 0xcd, 8, 3, s));
    OK(cuMemsetD2D8Async_ptsz(p + 8, 32, 0xce, 8, 3, NULL));
    OK(cuMemsetD2D16Async(p, 32, 0, 4, 3, s));
    OK(cuMemsetD2D16Async_ptsz(p, 32, 0, 4, 3, NULL));
    OK(cuMemsetD2D32Async(p + 16, 32, 0x0d0d0d0du, 2, 3, s));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D32Async_ptsz(p, 32, 0, 8, 4, NULL));
    OK(cuStreamSynchronize(s));
    OK(cuStreamSynchronize_ptsz(NULL));
    cr_assert_eq(byte_at(p + 64), 0);
    cr_assert_eq(byte_at(p + 64 + 8), 0xce);
    cr_assert_eq(byte_at(p + 64 + 16), 0x0d);
}

typedef CUresult (*batch3d_v1_fn)(size_t, CUDA_MEMCPY3D_BATCH_OP *, size_t *, unsigned long long,
                                  CUstream);

static CUmemcpy3DOperand pointer_operand(CUdeviceptr p)
{
    CUmemcpy3DOperand o = { .type = CU_MEMCPY_OPERAND_TYPE_POINTER };
    o.op.ptr.ptr = p;
    return o;
}

Test(fakecuda, a_batched_3d_copy_moves_pointer_and_array_operands_and_names_the_op_it_refuses)
{
    batch3d_v1_fn v1;
    unsigned char host[32];
    size_t fail = 0;
    CUarray a;
    CUstream s;
    primary();
    v1 = (batch3d_v1_fn)exported("cuMemcpy3DBatchAsync");
    CUdeviceptr p = alloc(32), q = alloc(32);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuArrayCreate_v2(&a, &(CUDA_ARRAY_DESCRIPTOR){ .Width = 8,
                                                      .Format = CU_AD_FORMAT_UNSIGNED_INT16,
                                                      .NumChannels = 1 }));
    memset(host, 0x21, sizeof host);
    CUDA_MEMCPY3D_BATCH_OP ops[3] = {
        { .src = pointer_operand((CUdeviceptr)(uintptr_t)host),
          .dst = pointer_operand(p),
          .extent = { 32, 1, 1 },
          .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM },
        /* 8 elements of 2 bytes into the array, then 16 bytes out of it */
        { .src = pointer_operand(p),
          .extent = { 8, 1, 1 },
          .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM },
        { .dst = pointer_operand(q + 16),
          .extent = { 8, 1, 1 },
          .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM },
    };
    ops[1].dst.type = CU_MEMCPY_OPERAND_TYPE_ARRAY, ops[1].dst.op.array.array = a;
    ops[2].src.type = CU_MEMCPY_OPERAND_TYPE_ARRAY, ops[2].src.op.array.array = a;
    OK(cuMemsetD8_v2(q, 0, 32));
    OK(v1(3, ops, &fail, 0, s));
    OK(cuStreamSynchronize(s));
    cr_assert_eq(fail, SIZE_MAX);
    cr_assert_eq(byte_at(q + 31), 0x21);
    cr_assert_eq(byte_at(q + 15), 0);
    ops[2].dst = pointer_operand(q + 17); /* one byte past q */
    EXPECT(CUDA_ERROR_INVALID_VALUE, v1(3, ops, &fail, 0, s));
    cr_assert_eq(fail, 2);
    EXPECT(CUDA_ERROR_INVALID_VALUE, v1(3, ops, &fail, 1, s)); /* flags */
    cr_assert_eq(fail, SIZE_MAX);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy3DBatchAsync_ptsz(3, ops, &fail, 0, NULL));
    ops[2].dst = pointer_operand(q + 16);
    OK(cuMemcpy3DBatchAsync_v2(3, ops, 0, s));
    OK(cuMemcpy3DBatchAsync_v2_ptsz(3, ops, 0, s));
    ops[0].dst.op.ptr.rowLength = 16; /* shorter than the extent's width */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuMemcpy3DBatchAsync_v2(3, ops, 0, s));
    OK(cuStreamSynchronize(s));
    OK(cuArrayDestroy(a));
}

/* ------------------------------------------------------------------------ */
/* Graphs built node by node; kernel node parameters; updates               */
/* ------------------------------------------------------------------------ */

/* n bytes of device memory, all 0. */
static CUdeviceptr zeroed(size_t n)
{
    CUdeviceptr p = alloc(n);
    OK(cuMemsetD8_v2(p, 0, n));
    return p;
}

/* A kernel node of gg_fill(p, v, n) (kernelParams: copied by the call). */
static CUDA_KERNEL_NODE_PARAMS fill_node(CUfunction gg_fill, void **params)
{
    CUDA_KERNEL_NODE_PARAMS kp = { .func = gg_fill,
                                   .gridDimX = 1,
                                   .gridDimY = 1,
                                   .gridDimZ = 1,
                                   .blockDimX = 128,
                                   .blockDimY = 1,
                                   .blockDimZ = 1,
                                   .kernelParams = params };
    return kp;
}

static CUgraphNode add_fill(CUgraph g, const CUgraphNode *deps, size_t n, CUfunction f,
                            CUdeviceptr p, unsigned char v, uint64_t len)
{
    void *params[] = { &p, &v, &len };
    CUDA_KERNEL_NODE_PARAMS kp = fill_node(f, params);
    CUgraphNode node = NULL;
    OK(cuGraphAddKernelNode_v2(&node, g, deps, n, &kp));
    cr_assert_not_null(node);
    return node;
}

Test(fakecuda, kernel_nodes_run_in_order_when_their_graph_is_launched)
{
    CUgraph g, child;
    CUgraphNode a, c;
    CUstream s;
    primary();
    CUfunction f = function(kernels(), "gg_fill");
    CUdeviceptr p = zeroed(64);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuGraphCreate(&g, 0));
    OK(cuGraphCreate(&child, 0));
    a = add_fill(g, NULL, 0, f, p, 1, 64);
    add_fill(child, NULL, 0, f, p, 2, 32);
    OK(cuGraphAddChildGraphNode(&c, g, &a, 1, child));
    /* The values were copied when the nodes were made; nothing ran yet. */
    cr_assert_eq(byte_at(p), 0);
    CUgraphExec x = instantiate(g, 0);
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    cr_assert_eq(byte_at(p), 2);
    cr_assert_eq(byte_at(p + 40), 1);
    OK(cuGraphExecDestroy(x));
    OK(cuGraphDestroy(child));
    OK(cuGraphDestroy(g));
}

Test(fakecuda, graph_create_and_kernel_nodes_refuse_invalid_values)
{
    CUgraph g;
    CUgraphNode n = NULL, d;
    primary();
    CUfunction f = function(kernels(), "gg_fill");
    CUdeviceptr p = zeroed(64);
    unsigned char v = 0;
    uint64_t len = 64;
    void *params[] = { &p, &v, &len };
    size_t size = 24;
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, params, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                      CU_LAUNCH_PARAM_END };
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphCreate(&g, 1));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphCreate(NULL, 0));
    OK(cuGraphCreate(&g, 0));
    CUDA_KERNEL_NODE_PARAMS kp = fill_node(f, params);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddKernelNode_v2(&n, g, NULL, 0, NULL));
    kp.extra = extra; /* both forms */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddKernelNode_v2(&n, g, NULL, 0, &kp));
    kp = fill_node(NULL, params);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddKernelNode_v2(&n, g, NULL, 0, &kp));
    kp = fill_node((CUfunction)&kp, params); /* not a function */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddKernelNode_v2(&n, g, NULL, 0, &kp));
    kp = fill_node(f, params);
    kp.blockDimX = 2048;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddKernelNode_v2(&n, g, NULL, 0, &kp));
    d = add_fill(g, NULL, 0, f, p, 1, 64);
    kp = fill_node(f, params);
    /* "dependencies may not have any duplicate entries" */
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuGraphAddKernelNode_v2(&n, g, (CUgraphNode[]){ d, d }, 2, &kp));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddKernelNode_v2(&n, (CUgraph)&kp, NULL, 0, &kp));
    size_t count = 0;
    OK(cuGraphGetNodes(g, NULL, &count));
    cr_assert_eq(count, 1);
    OK(cuGraphDestroy(g));
    EXPECT(CUDA_ERROR_INVALID_VALUE,
           cuGraphKernelNodeGetParams_v2(d, &kp)); /* gone with its graph */
}

/* What a captured launch or an added node was given, as the node keeps it:
 * kernelParams (or extra, whichever was set last) owned by the node. */
Test(fakecuda, kernel_node_parameters_are_returned_as_the_node_keeps_them)
{
    CUgraph g;
    CUgraphNode nodes[2];
    CUgraphNodeType type;
    CUstream s;
    primary();
    CUfunction f = function(kernels(), "gg_fill");
    CUdeviceptr p = zeroed(64), q = zeroed(64);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(fill(f, s, p, 7, 64));
    g = end_capture(s);
    size_t n = 2;
    OK(cuGraphGetNodes(g, nodes, &n));
    cr_assert_eq(n, 1);
    cr_assert_null(nodes[1]);
    OK(cuGraphNodeGetType(nodes[0], &type));
    cr_assert_eq(type, CU_GRAPH_NODE_TYPE_KERNEL);
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0xff, sizeof kp);
    OK(cuGraphKernelNodeGetParams_v2(nodes[0], &kp));
    cr_assert_eq(kp.func, f);
    cr_assert_eq(kp.gridDimX, 4);
    cr_assert_eq(kp.blockDimX, 128);
    cr_assert_null(kp.extra);
    cr_assert_eq(*(CUdeviceptr *)kp.kernelParams[0], p);
    cr_assert_eq(*(unsigned char *)kp.kernelParams[1], 7);
    cr_assert_eq(*(uint64_t *)kp.kernelParams[2], 64);
    /* Set through extra: returned as extra. */
    struct {
        CUdeviceptr p;
        uint64_t v;
        uint64_t n;
    } buf = { q, 9, 32 };
    size_t size = sizeof buf;
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                      CU_LAUNCH_PARAM_END };
    CUDA_KERNEL_NODE_PARAMS set = fill_node(f, NULL);
    set.extra = extra;
    OK(cuGraphKernelNodeSetParams_v2(nodes[0], &set));
    memset(&buf, 0, sizeof buf);
    OK(cuGraphKernelNodeGetParams_v2(nodes[0], &kp));
    cr_assert_null(kp.kernelParams);
    cr_assert_eq(kp.extra[0], CU_LAUNCH_PARAM_BUFFER_POINTER);
    cr_assert_eq(*(CUdeviceptr *)kp.extra[1], q);
    cr_assert_eq(*(size_t *)kp.extra[3], 24);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphKernelNodeGetParams_v2(nodes[0], NULL));
    /* The graph's launch runs the node's parameters as set. */
    CUgraphExec x = instantiate(g, 0);
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    cr_assert_eq(byte_at(q), 9);
    cr_assert_eq(byte_at(p), 0);
    OK(cuGraphExecDestroy(x));
    OK(cuGraphDestroy(g));
}

/* An executable graph's node takes new parameters for later launches; the
 * graph's node keeps its own. */
Test(fakecuda, exec_kernel_node_set_params_changes_only_the_executable_graph)
{
    CUgraph g, other;
    CUstream s;
    primary();
    CUfunction f = function(kernels(), "gg_fill");
    CUdeviceptr p = zeroed(64), q = zeroed(64);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuGraphCreate(&g, 0));
    OK(cuGraphCreate(&other, 0));
    CUgraphNode n = add_fill(g, NULL, 0, f, p, 1, 64);
    CUgraphNode foreign = add_fill(other, NULL, 0, f, p, 1, 64);
    CUgraphExec x = instantiate(g, 0);
    unsigned char v = 5;
    uint64_t len = 64;
    void *params[] = { &q, &v, &len };
    CUDA_KERNEL_NODE_PARAMS kp = fill_node(f, params);
    OK(cuGraphExecKernelNodeSetParams_v2(x, n, &kp));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphExecKernelNodeSetParams_v2(x, foreign, &kp));
    kp.blockDimX = 4096;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphExecKernelNodeSetParams_v2(x, n, &kp));
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    cr_assert_eq(byte_at(q), 5);
    cr_assert_eq(byte_at(p), 0);
    OK(cuGraphKernelNodeGetParams_v2(n, &kp));
    cr_assert_eq(*(CUdeviceptr *)kp.kernelParams[0], p);
    OK(cuGraphExecDestroy(x));
    OK(cuGraphDestroy(other));
    OK(cuGraphDestroy(g));
}

/* The generic forms (CUDA 12.2): kernel nodes added and set through a tagged
 * CUgraphNodeParams, whose unused bytes must be zero; the fake builds no
 * other node type (CUDA_ERROR_NOT_SUPPORTED, in their lists). */
Test(fakecuda, generic_node_functions_add_and_set_kernel_nodes)
{
    CUgraph g;
    CUgraphNode n, bad;
    CUstream s;
    primary();
    CUfunction f = function(kernels(), "gg_fill");
    CUdeviceptr p = zeroed(64), q = zeroed(64);
    unsigned char v = 4, w = 6;
    uint64_t len = 64;
    void *pp[] = { &p, &v, &len }, *qp[] = { &q, &w, &len };
    CUgraphNodeParams np = { .type = CU_GRAPH_NODE_TYPE_KERNEL };
    CUDA_KERNEL_NODE_PARAMS kp = fill_node(f, pp);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuGraphCreate(&g, 0));
    memcpy(&np.kernel, &kp, sizeof kp);
    OK(cuGraphAddNode_v2(&n, g, NULL, NULL, 0, &np));
    OK(cuGraphAddNode(&bad, g, &n, 1, &np)); /* the CUDA 12.2 form, without edge data */
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddNode_v2(&bad, g, NULL, NULL, 0, NULL));
    np.reserved2 = 1;
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddNode_v2(&bad, g, NULL, NULL, 0, &np));
    np.reserved2 = 0;
    np.type = CU_GRAPH_NODE_TYPE_EMPTY;
    EXPECT(CUDA_ERROR_NOT_SUPPORTED, cuGraphAddNode_v2(&bad, g, NULL, NULL, 0, &np));
    np.type = CU_GRAPH_NODE_TYPE_KERNEL;
    CUgraphExec x = instantiate(g, 0);
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    cr_assert_eq(byte_at(p), 4);
    /* Set in the executable graph: its launches change, the node does not. */
    np.kernel.kernelParams = qp;
    OK(cuGraphExecNodeSetParams(x, n, &np));
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    cr_assert_eq(byte_at(q), 6);
    OK(cuGraphKernelNodeGetParams_v2(n, &kp));
    cr_assert_eq(*(CUdeviceptr *)kp.kernelParams[0], p);
    /* Set in the graph: the node changes. */
    OK(cuGraphNodeSetParams(n, &np));
    OK(cuGraphKernelNodeGetParams_v2(n, &kp));
    cr_assert_eq(*(CUdeviceptr *)kp.kernelParams[0], q);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphNodeSetParams(n, NULL));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphExecNodeSetParams(x, NULL, &np));
    OK(cuGraphExecDestroy(x));
    OK(cuGraphDestroy(g));
}

Test(fakecuda, exec_update_takes_the_parameters_of_a_graph_of_the_same_shape)
{
    CUgraph g, same, bigger, copy;
    CUgraphNode copy_node;
    CUgraphExecUpdateResultInfo info;
    CUstream s;
    primary();
    CUfunction f = function(kernels(), "gg_fill");
    CUdeviceptr p = zeroed(64), q = zeroed(64);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuGraphCreate(&g, 0));
    OK(cuGraphCreate(&same, 0));
    OK(cuGraphCreate(&bigger, 0));
    add_fill(g, NULL, 0, f, p, 1, 64);
    add_fill(same, NULL, 0, f, q, 3, 64);
    add_fill(bigger, NULL, 0, f, q, 3, 64);
    add_fill(bigger, NULL, 0, f, q, 4, 64);
    /* A graph of one memset node. */
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(cuMemsetD8Async(q, 1, 8, s));
    copy = end_capture(s);
    size_t one = 1;
    OK(cuGraphGetNodes(copy, &copy_node, &one));
    CUgraphExec x = instantiate(g, 0);
    EXPECT(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuGraphExecUpdate_v2(x, bigger, &info));
    cr_assert_eq(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    EXPECT(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuGraphExecUpdate_v2(x, copy, &info));
    cr_assert_eq(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED);
    cr_assert_eq(info.errorNode, copy_node);
    OK(cuGraphExecUpdate_v2(x, same, &info));
    cr_assert_eq(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    cr_assert_eq(byte_at(q), 3);
    cr_assert_eq(byte_at(p), 0);
    OK(cuGraphExecDestroy(x));
    for (CUgraph *it = (CUgraph[]){ g, same, bigger, copy }, *e = it + 4; it < e; it++)
        OK(cuGraphDestroy(*it));
}

/* The child is cloned when the node is made: the node's graph is its own. */
Test(fakecuda, a_child_graph_node_embeds_a_clone)
{
    CUgraph g, child, embedded;
    CUgraphNode c, inner;
    CUgraphNodeType type;
    CUstream s;
    size_t n = 1;
    primary();
    CUfunction f = function(kernels(), "gg_fill");
    CUdeviceptr p = zeroed(64);
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuGraphCreate(&g, 0));
    OK(cuGraphCreate(&child, 0));
    add_fill(child, NULL, 0, f, p, 6, 64);
    OK(cuGraphAddChildGraphNode(&c, g, NULL, 0, child));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddChildGraphNode(&c, g, NULL, 0, g));
    OK(cuGraphNodeGetType(c, &type));
    cr_assert_eq(type, CU_GRAPH_NODE_TYPE_GRAPH);
    OK(cuGraphChildGraphNodeGetGraph(c, &embedded));
    cr_assert_neq(embedded, child);
    OK(cuGraphGetNodes(embedded, &inner, &n));
    cr_assert_eq(n, 1);
    OK(cuGraphNodeGetType(inner, &type));
    cr_assert_eq(type, CU_GRAPH_NODE_TYPE_KERNEL);
    OK(cuGraphDestroy(child)); /* the node keeps its clone */
    CUgraphExec x = instantiate(g, 0);
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    cr_assert_eq(byte_at(p), 6);
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphChildGraphNodeGetGraph(inner, &embedded));
    OK(cuGraphExecDestroy(x));
    OK(cuGraphDestroy(g));
}

/* A graph with memory nodes cannot be a child ("this call will return an error"). */
Test(fakecuda, a_graph_with_memory_nodes_cannot_be_a_child)
{
    CUgraph g, mem;
    CUgraphNode c;
    CUstream s;
    CUdeviceptr p;
    primary();
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(cuMemAllocAsync(&p, 64, s));
    OK(cuMemFreeAsync(p, s));
    mem = end_capture(s);
    OK(cuGraphCreate(&g, 0));
    EXPECT(CUDA_ERROR_INVALID_VALUE, cuGraphAddChildGraphNode(&c, g, NULL, 0, mem));
    OK(cuGraphDestroy(g));
    OK(cuGraphDestroy(mem));
}

/* The CUDA 10 forms (CUDA_KERNEL_NODE_PARAMS_v1, cuGraphExecUpdate with an
 * error node), as a program built against an older cuda.h calls them. */
Test(fakecuda, the_cuda_10_forms_of_the_kernel_node_functions_work)
{
    CUgraph g, bigger;
    CUgraphNode n, err = (CUgraphNode)&err;
    CUgraphExecUpdateResult result;
    CUstream s;
    primary();
    CUfunction f = function(kernels(), "gg_fill");
    CUdeviceptr p = zeroed(64);
    unsigned char v = 8;
    uint64_t len = 64;
    void *params[] = { &p, &v, &len };
    CUDA_KERNEL_NODE_PARAMS_v1 kp = { f, 1, 1, 1, 64, 1, 1, 0, params, NULL }, got;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuGraphCreate(&g, 0));
    OK(cuGraphCreate(&bigger, 0));
    OK(cuGraphAddKernelNode(&n, g, NULL, 0, &kp));
    OK(cuGraphAddKernelNode(&err, bigger, NULL, 0, &kp));
    OK(cuGraphAddKernelNode(&err, bigger, NULL, 0, &kp));
    OK(cuGraphKernelNodeGetParams(n, &got));
    cr_assert_eq(got.func, f);
    cr_assert_eq(got.blockDimX, 64);
    CUgraphExec x = instantiate(g, 0);
    v = 4;
    OK(cuGraphExecKernelNodeSetParams(x, n, &kp));
    EXPECT(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuGraphExecUpdate(x, bigger, &err, &result));
    cr_assert_eq(result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    cr_assert_null(err);
    OK(cuGraphLaunch(x, s));
    OK(cuStreamSynchronize(s));
    cr_assert_eq(byte_at(p), 4);
    OK(cuGraphExecDestroy(x));
    OK(cuGraphDestroy(bigger));
    OK(cuGraphDestroy(g));
}

static volatile sig_atomic_t raised_in;
static void note_raised(int sig)
{
    raised_in = sig;
}

/* fakecuda_raise_in: the next call of the named entry point raises the
 * signal inside it, once; an unknown name is refused. */
Test(fakecuda, raise_in_raises_the_signal_inside_the_next_call_only)
{
    int v;
    signal(SIGUSR2, note_raised);
    cr_assert_eq(fakecuda_raise_in("cuNoSuchCall", SIGUSR2), -1);
    cr_assert_eq(fakecuda_raise_in("cuDriverGetVersion", SIGUSR2), 0);
    cr_assert_eq(cuInit(0), CUDA_SUCCESS);
    cr_assert_eq(raised_in, 0, "another entry point raised it");
    cr_assert_eq(cuDriverGetVersion(&v), CUDA_SUCCESS);
    cr_assert_eq(raised_in, SIGUSR2);
    raised_in = 0;
    cr_assert_eq(cuDriverGetVersion(&v), CUDA_SUCCESS);
    cr_assert_eq(raised_in, 0, "raised twice");
    signal(SIGUSR2, SIG_DFL);
}
