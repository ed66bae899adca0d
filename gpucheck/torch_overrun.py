"""PyTorch under gpuguard, for scripts/gpu-check: a kernel writes 8 bytes past
a tensor's data.

    python3 torch_overrun.py KERNELS_PTX

The kernel is gg_overrun of tests/fakecuda/kernels.ptx (p[i] = 0x41 for
i < n + extra), loaded and launched through the driver API (ctypes and
libcuda.so.1, on PyTorch's current stream) on the data_ptr() of a
1000-byte uint8 tensor. With PyTorch's caching allocator the tensor is a
block of a larger segment: the 8 bytes land inside the allocator's own
memory, where no band is. With PYTORCH_NO_CUDA_MEMORY_CACHING=1 the tensor
is one cudaMalloc of its own and `del` is its cudaFree: the 8 bytes land in
gpuguard's band. Prints only what the program itself knows (stdout is
compared with and without the shim).
"""
import ctypes
import gc
import sys

import torch

N = 1000


def check(what, rc):
    if rc != 0:
        raise SystemExit(f"{what}: CUresult {rc}")


def main():
    with open(sys.argv[1], "rb") as f:
        ptx = f.read() + b"\0"
    t = torch.zeros(N, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()  # the runtime made the primary context current

    cu = ctypes.CDLL("libcuda.so.1")
    mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
    check("cuModuleLoadData", cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx)))
    check("cuModuleGetFunction", cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"gg_overrun"))
    p, n, extra = ctypes.c_uint64(t.data_ptr()), ctypes.c_uint64(N), ctypes.c_uint64(8)  # the bug: 8 more
    params = (ctypes.c_void_p * 3)(ctypes.addressof(p), ctypes.addressof(n), ctypes.addressof(extra))
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    check("cuLaunchKernel", cu.cuLaunchKernel(fn, 4, 1, 1, 128, 1, 1, 0, stream, params, None))
    torch.cuda.synchronize()
    print("sum", int(t.sum()))
    del t
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()  # the cached segments go back to the driver
    check("cuModuleUnload", cu.cuModuleUnload(mod))
    print("freed")


if __name__ == "__main__":
    main()
