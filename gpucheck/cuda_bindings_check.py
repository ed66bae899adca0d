"""NVIDIA's cuda-bindings on a real GPU, for scripts/gpu-check.

    python3 cuda_bindings_check.py

A kernel compiled here with NVRTC (cuda.bindings.nvrtc) for the device's
architecture writes 8 bytes past a 1000-byte cuMemAlloc; the module is
loaded with cuModuleLoadData, a kernel it lacks is looked up too
(gc_missing_kernel: CUDA_ERROR_NOT_FOUND), and the memory is freed with
cuMemFree. Every driver entry point comes from cuGetProcAddress_v2. Prints
only what the program itself knows (stdout is compared with and without the
shim); exits 1 when a call fails.
"""
import ctypes
import sys

from cuda.bindings import driver as cu
from cuda.bindings import nvrtc

N = 1000
SOURCE = rb"""
extern "C" __global__ void gc_overrun(unsigned char *p, unsigned long long n, unsigned long long extra)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < n + extra; i += (unsigned long long)blockDim.x * gridDim.x)
        p[i] = 0x41;
}
"""


def ok(what, result):
    err, values = result[0], result[1:]
    if int(err) != 0:
        raise SystemExit(f"{what}: {err.name if hasattr(err, 'name') else err}")
    return values[0] if len(values) == 1 else values


def compile_ptx(major, minor):
    prog = ok("nvrtcCreateProgram", nvrtc.nvrtcCreateProgram(SOURCE, b"gc_overrun.cu", 0, [], []))
    opts = [f"--gpu-architecture=compute_{major}{minor}".encode()]
    err = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0]
    if int(err) != 0:
        size = ok("nvrtcGetProgramLogSize", nvrtc.nvrtcGetProgramLogSize(prog))
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        raise SystemExit("nvrtcCompileProgram: " + log.decode(errors="replace"))
    size = ok("nvrtcGetPTXSize", nvrtc.nvrtcGetPTXSize(prog))
    ptx = b" " * size
    ok("nvrtcGetPTX", nvrtc.nvrtcGetPTX(prog, ptx))
    return ptx


def main():
    ok("cuInit", cu.cuInit(0))
    dev = ok("cuDeviceGet", cu.cuDeviceGet(0))
    A = cu.CUdevice_attribute
    major = ok("cuDeviceGetAttribute", cu.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
    minor = ok("cuDeviceGetAttribute", cu.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
    ctx = ok("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(dev))
    ok("cuCtxSetCurrent", cu.cuCtxSetCurrent(ctx))

    module = ok("cuModuleLoadData", cu.cuModuleLoadData(compile_ptx(major, minor)))
    kernel = ok("cuModuleGetFunction", cu.cuModuleGetFunction(module, b"gc_overrun"))
    missing = cu.cuModuleGetFunction(module, b"gc_missing_kernel")[0]
    print("gc_missing_kernel:", missing.name)

    dptr = ok("cuMemAlloc", cu.cuMemAlloc(N))
    p, n, extra = ctypes.c_uint64(int(dptr)), ctypes.c_uint64(N), ctypes.c_uint64(8)  # the bug: 8 more
    params = (ctypes.c_void_p * 3)(ctypes.addressof(p), ctypes.addressof(n), ctypes.addressof(extra))
    ok("cuLaunchKernel", cu.cuLaunchKernel(kernel, 4, 1, 1, 128, 1, 1, 0, 0, ctypes.addressof(params), 0))
    ok("cuCtxSynchronize", cu.cuCtxSynchronize())
    host = (ctypes.c_uint8 * N)()
    ok("cuMemcpyDtoH", cu.cuMemcpyDtoH(host, dptr, N))
    print("sum", sum(host))
    ok("cuMemFree", cu.cuMemFree(dptr))
    ok("cuModuleUnload", cu.cuModuleUnload(module))
    ok("cuDevicePrimaryCtxRelease", cu.cuDevicePrimaryCtxRelease(dev))
    print("freed")


if __name__ == "__main__":
    sys.exit(main())
