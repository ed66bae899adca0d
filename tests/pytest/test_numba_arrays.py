"""numba-cuda device arrays over the fake driver. Two tests write past the
end of an array, as a kernel with an off-by-a-few bound does: both pass on
their own, and gpuguard's plugin fails exactly them (check_plugin.py)."""
import ctypes
import gc
import os

import numpy as np
from numba import cuda

from conftest import address, u64

N = 1000  # not a multiple of the fake's 256-byte granule: an overrun stays in its slack


def test_round_trip():
    host = (np.arange(N) % 251).astype(np.uint8)
    device = cuda.to_device(host)
    assert np.array_equal(device.copy_to_host(), host)


def test_fill_kernel(kernels):
    array = cuda.device_array(N, dtype=np.uint8)
    kernels.run("gg_fill", address(array), np.uint8(0x5A), u64(N))
    assert (array.copy_to_host() == 0x5A).all()


def test_copy_kernel(kernels):
    host = (np.arange(N) % 7).astype(np.uint8)
    src = cuda.to_device(host)
    dst = cuda.device_array(N, dtype=np.uint8)
    kernels.run("gg_copy", address(dst), address(src), u64(N))
    assert np.array_equal(dst.copy_to_host(), host)


def test_overrun_bytes(kernels):
    """Planted: 8 bytes past the end of a 1000-byte array."""
    array = cuda.device_array(N, dtype=np.uint8)
    kernels.run("gg_overrun", address(array), u64(N), u64(8))
    assert (array.copy_to_host() == 0x41).all()
    del array
    gc.collect()


def test_overrun_floats(kernels):
    """Planted: 4 bytes past the end of an array of 250 float32."""
    array = cuda.device_array(N // 4, dtype=np.float32)
    kernels.run("gg_overrun", address(array), u64(N), u64(4))
    assert array.copy_to_host().shape == (N // 4,)


def test_zeros_stay_zeros():
    array = cuda.to_device(np.zeros(N // 8, dtype=np.float64))
    assert not array.copy_to_host().any()


def forked_child_overruns():
    """In a forked child, straight on the driver (numba-cuda refuses to run
    in a child of a process it initialised): a set 8 bytes past the end of
    a 1000-byte allocation. Its findings are the child's own."""
    drv = ctypes.CDLL("libcuda.so.1")
    ctx = ctypes.c_void_p()
    ptr = ctypes.c_uint64()
    ok = drv.cuInit(0) == 0
    ok = ok and drv.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
    ok = ok and drv.cuCtxSetCurrent(ctx) == 0
    ok = ok and drv.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(N)) == 0
    if ok:
        drv.cuMemsetD8_v2(ptr, ctypes.c_ubyte(0x42), ctypes.c_size_t(N + 8))
        drv.cuMemFree_v2(ptr)
    return 0 if ok else 3


def test_forked_child_has_its_own_findings(kernels):
    array = cuda.device_array(N, dtype=np.uint8)
    kernels.run("gg_fill", address(array), np.uint8(1), u64(N))
    pid = os.fork()
    if pid == 0:
        status = 4
        try:
            status = forked_child_overruns()
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert (array.copy_to_host() == 1).all()
