"""CuPy under gpuguard, for scripts/gpu-check.

    python3 cupy_check.py audit          RawModule(code=...): one kernel found and
                                         run, get_function() of a name the module lacks
    python3 cupy_check.py overrun        a RawKernel writing 8 bytes past a
                                         1000-byte array, then the array freed;
                                         CuPy's memory pool off
                                         (cupy.cuda.set_allocator(None))
    python3 cupy_check.py overrun-pool   the same with CuPy's default pool

Prints only what the program itself knows (stdout is compared with and
without the shim). Without the pool the array is exactly one cudaMalloc of
1000 bytes and `del` is its cudaFree: the 8 bytes land in gpuguard's band.
With the pool, the array is a block the pool rounds up to 1024 bytes (or
carves from a larger segment): the 8 bytes land inside the pool's own
memory, where no band is, and the pool frees nothing before exit.
"""
import gc
import sys

import cupy as cp

CODE = r"""
extern "C" __global__ void gc_fill(unsigned char *p, unsigned long long n, unsigned char v)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < n; i += (unsigned long long)blockDim.x * gridDim.x)
        p[i] = v;
}
"""

MISSING = "gc_missing_kernel"
N = 1000


def audit():
    mod = cp.RawModule(code=CODE)
    fill = mod.get_function("gc_fill")
    a = cp.zeros(1000, dtype=cp.uint8)
    fill((4,), (128,), (a, cp.uint64(a.size), cp.uint8(3)))
    cp.cuda.Device().synchronize()
    print("gc_fill: sum", int(a.sum()))
    try:
        mod.get_function(MISSING)
        print(MISSING + ": found")
    except Exception as e:  # CUDADriverError: CUDA_ERROR_NOT_FOUND
        print(MISSING + ":", type(e).__name__, e)


def overrun(pool):
    if not pool:
        cp.cuda.set_allocator(None)  # one cudaMalloc per array, no pool
    a = cp.zeros(N, dtype=cp.uint8)
    kernel = cp.RawKernel(CODE, "gc_fill")
    kernel((4,), (128,), (a, cp.uint64(N + 8), cp.uint8(0x41)))  # the bug: N + 8
    cp.cuda.Device().synchronize()
    print("sum", int(a.sum()))
    del a
    gc.collect()
    cp.cuda.Device().synchronize()
    print("freed")


if __name__ == "__main__":
    {"audit": audit, "overrun": lambda: overrun(False), "overrun-pool": lambda: overrun(True)}[sys.argv[1]]()
