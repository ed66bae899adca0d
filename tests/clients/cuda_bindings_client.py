"""A third-party driver client for the test suite: NVIDIA's cuda-bindings.

cuda.bindings.driver (cuda-bindings 13) opens libcuda.so.1 and takes every
entry point it calls from cuGetProcAddress_v2, so under gpuguard it takes the
cuGetProcAddress route (docs/how-it-works.md, "What the shim does").  Nobody here wrote
it; this script only drives it, with the driver API as a C program would
use it:

    cuInit, the device count, name and attributes, the primary context
    retained and made current, cuMemAlloc, cuModuleLoadData of the fake's
    kernels.ptx, cuModuleGetFunction of a kernel it has and of one it lacks,
    cuLaunchKernel of gg_fill and gg_overrun (8 bytes written past the end)
    with their parameters built here, cuMemcpyDtoH, cuMemFree, the module
    unloaded and the primary context released.

usage: PYTHON cuda_bindings_client.py KERNELS_PTX

With CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM=1 in the environment,
cuda-bindings asks cuGetProcAddress_v2 for the per-thread default-stream
entry points (cuLaunchKernel_ptsz, cuMemcpyDtoH_v2_ptds, ...).

Everything it prints goes to stdout and is the same with and without the
shim: the test compares the two byte for byte.  It exits 0 when every call
answered as the driver API documents, 1 otherwise.
"""
import ctypes
import sys

from cuda.bindings import driver as cu

N = 1000  # not a multiple of the fake's 256-byte granule: the overrun stays in its slack
MISSING = "gg_no_such_kernel"
failures = []


def call(what, result, expect=cu.CUresult.CUDA_SUCCESS):
    """The values of a cuda-bindings call (a tuple whose first item is the
    CUresult); a result other than `expect` is printed and counted."""
    err, values = result[0], result[1:]
    if err != expect:
        failures.append(what)
        print(f"{what}: {err.name} (expected {expect.name})")
    if len(values) == 1:
        return values[0]
    return values


def launch(func, args, stream=0):
    """cuLaunchKernel with kernelParams built by hand: an array of pointers,
    each to one argument in a ctypes object, as a C caller builds it."""
    holders = [ctypes.c_uint64(a) if isinstance(a, int) else a for a in args]
    params = (ctypes.c_void_p * len(holders))(*[ctypes.addressof(h) for h in holders])
    call("cuLaunchKernel", cu.cuLaunchKernel(func, 4, 1, 1, 128, 1, 1, 0, stream,
                                             ctypes.addressof(params), 0))


def main():
    if len(sys.argv) != 2:
        print("usage: PYTHON cuda_bindings_client.py KERNELS_PTX", file=sys.stderr)
        return 2
    ptx_path = sys.argv[1]
    call("cuInit", cu.cuInit(0))
    version = call("cuDriverGetVersion", cu.cuDriverGetVersion())
    print("driver version:", version)
    count = call("cuDeviceGetCount", cu.cuDeviceGetCount())
    print("devices:", count)
    dev = call("cuDeviceGet", cu.cuDeviceGet(0))
    name = call("cuDeviceGetName", cu.cuDeviceGetName(64, dev))
    print("name:", name.split(b"\0", 1)[0].decode())
    A = cu.CUdevice_attribute
    for attr in (A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                 A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                 A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                 A.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                 A.CU_DEVICE_ATTRIBUTE_WARP_SIZE):
        print(f"{attr.name}:", call("cuDeviceGetAttribute", cu.cuDeviceGetAttribute(attr, dev)))

    ctx = call("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(dev))
    call("cuCtxSetCurrent", cu.cuCtxSetCurrent(ctx))
    current = call("cuCtxGetCurrent", cu.cuCtxGetCurrent())
    print("primary context current:", int(current) == int(ctx))

    dptr = call("cuMemAlloc", cu.cuMemAlloc(N))
    with open(ptx_path, "rb") as f:
        image = f.read() + b"\0"
    module = call("cuModuleLoadData", cu.cuModuleLoadData(image))
    fill = call("cuModuleGetFunction", cu.cuModuleGetFunction(module, b"gg_fill"))
    overrun = call("cuModuleGetFunction", cu.cuModuleGetFunction(module, b"gg_overrun"))
    # A kernel the module lacks: the driver's answer, passed through unchanged.
    missing = cu.cuModuleGetFunction(module, MISSING.encode())
    print(f"{MISSING}:", missing[0].name)
    if missing[0] != cu.CUresult.CUDA_ERROR_NOT_FOUND:
        failures.append("cuModuleGetFunction of " + MISSING)

    host = (ctypes.c_uint8 * N)()
    launch(fill, [int(dptr), ctypes.c_uint8(0x5A), N])
    call("cuCtxSynchronize", cu.cuCtxSynchronize())
    call("cuMemcpyDtoH", cu.cuMemcpyDtoH(host, dptr, N))
    print("filled:", all(b == 0x5A for b in host))

    # The bug: 8 bytes written past the end of the N-byte allocation.
    launch(overrun, [int(dptr), N, 8])
    call("cuCtxSynchronize", cu.cuCtxSynchronize())
    call("cuMemcpyDtoH", cu.cuMemcpyDtoH(host, dptr, N))
    print("overrun ran:", all(b == 0x41 for b in host))

    call("cuMemFree", cu.cuMemFree(dptr))
    call("cuModuleUnload", cu.cuModuleUnload(module))
    call("cuDevicePrimaryCtxRelease", cu.cuDevicePrimaryCtxRelease(dev))
    print("failures:", len(failures))
    print("done")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
