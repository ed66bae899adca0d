"""A third-party driver client for the test suite: NVIDIA's numba-cuda.

numba-cuda (the numba.cuda that NVIDIA maintains, over cuda-bindings and
cuda-core) takes every driver entry point from cuGetProcAddress_v2, loads
modules as libraries (cuLibraryLoadData, cuLibraryGetKernel) and launches
CUkernel handles through cuda.core.  Nobody here wrote it; this script only
drives it, the way numba's own launch path does:

    cuda.detect(), to_device + copy_to_host, device_array, a driver-level
    module of the fake's kernels.ptx (Context.create_module_ptx), its
    kernels, launches, an 8-byte overrun through a kernel, the frees, the
    module unloaded, cuda.close().

usage: PYTHON numba_cuda_client.py KERNELS_PTX

Everything it prints goes to stdout and is the same with and without the
shim: the test compares the two byte for byte.
"""
import gc
import os
import sys

# Free at once rather than batch the frees (numba's documented setting): the
# frees then happen while the context is current, not in cuda.close().
os.environ["NUMBA_CUDA_MAX_PENDING_DEALLOCS_COUNT"] = "0"

import numpy as np  # noqa: E402
from cuda.core import LaunchConfig, launch  # noqa: E402  (what numba's dispatcher launches with)
from numba import cuda  # noqa: E402
from numba.cuda.cudadrv import driver as drv  # noqa: E402

N = 1000  # not a multiple of the fake's 256-byte granule: the overrun stays in its slack


def run(stream, kernel, *args):
    """Launch as numba's dispatcher does (cuda.core's launch on numba's
    stream, converted the dispatcher's way), then wait for it."""
    launch(drv._to_core_stream(stream), LaunchConfig(grid=4, block=128), kernel, *args)
    stream.synchronize()


def main():
    if len(sys.argv) != 2:
        print("usage: PYTHON numba_cuda_client.py KERNELS_PTX", file=sys.stderr)
        return 2
    ptx_path = sys.argv[1]
    print("detect:", cuda.detect())
    ctx = cuda.current_context()
    stream = cuda.default_stream()

    host = (np.arange(N) % 251).astype(np.uint8)
    src = cuda.to_device(host)
    print("round trip:", np.array_equal(src.copy_to_host(), host))

    dst = cuda.device_array(N, dtype=np.uint8)
    with open(ptx_path) as f:
        module = ctx.create_module_ptx(f.read())
    fill = module.get_function("gg_fill")
    copy = module.get_function("gg_copy")
    overrun = module.get_function("gg_overrun")
    print("gg_fill:", fill.attrs)

    run(stream, fill.kernel, dst.device_ctypes_pointer.value, np.uint8(0x5A), np.uint64(N))
    print("filled:", bool((dst.copy_to_host() == 0x5A).all()))

    run(stream, copy.kernel, dst.device_ctypes_pointer.value, src.device_ctypes_pointer.value,
        np.uint64(N))
    print("copied:", np.array_equal(dst.copy_to_host(), host))

    # The bug: 8 bytes written past the end of dst's 1000.
    run(stream, overrun.kernel, dst.device_ctypes_pointer.value, np.uint64(N), np.uint64(8))
    print("overrun ran:", bool((dst.copy_to_host() == 0x41).all()))

    # numba frees an array when it is collected: collect now, while the
    # context is current (see NUMBA_CUDA_MAX_PENDING_DEALLOCS_COUNT above).
    del src, dst
    gc.collect()
    del fill, copy, overrun
    module.unload()
    gc.collect()
    cuda.close()
    print("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
