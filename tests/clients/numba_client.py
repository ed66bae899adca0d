"""A third-party driver client for the test suite: Debian's numba.cuda.

numba 0.56 (python3-numba) reaches the driver through ctypes, that is
dlopen("libcuda.so.1") and dlsym() of every cu* name it uses, so under
gpuguard it takes the dlsym route (docs/how-it-works.md, "What the shim does").  Nobody
here wrote its driver layer; this script only drives it:

    cuda.detect(), to_device + copy_to_host, device_array, a driver-level
    module load of the fake's kernels.ptx, get_function, launches, an 8-byte
    overrun through a kernel, the frees, the module unload, cuda.close().

usage: /usr/bin/python3 numba_client.py KERNELS_PTX

Everything it prints goes to stdout and is the same with and without the
shim: the test compares the two byte for byte.  It must run on Debian's
/usr/bin/python3, which has python3-numba; a `python3` earlier on PATH (a
pyenv, a venv) may not.
"""
import ctypes
import gc
import os
import sys

# Free at once rather than batch the frees (numba's documented setting): the
# frees then happen while the context is current, not in cuda.close() after
# numba has popped it, where the driver may refuse them.
os.environ["NUMBA_CUDA_MAX_PENDING_DEALLOCS_COUNT"] = "0"

import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402
from numba.cuda.cudadrv import driver as drv  # noqa: E402

# numba 0.56 predates CUDA 13 and binds every driver function by trying the
# name with "_v2" first.  CUDA 13 reused two such names for new prototypes:
# cuCtxGetDevice_v2(CUdevice *, CUcontext) and cuCtxSynchronize_v2(CUcontext),
# which numba would call with its old one-argument and no-argument forms (an
# uninitialised context argument).  That is numba's incompatibility, not
# gpuguard's; bind those two to the unversioned names, whose prototypes are
# the ones numba means.  Everything else resolves exactly as numba does it.
_CUDA13_REUSED = ("cuCtxGetDevice", "cuCtxSynchronize")
_find_api = drv.Driver._find_api


def _find_api_unversioned(self, fname):
    if fname in _CUDA13_REUSED:
        return getattr(self.lib, fname)
    return _find_api(self, fname)


drv.Driver._find_api = _find_api_unversioned

N = 1000  # not a multiple of the fake's 256-byte granule: the overrun stays in its slack


def launch(func, *args):
    drv.launch_kernel(func.handle, 4, 1, 1, 128, 1, 1, 0, 0, list(args))


def main():
    ptx_path = sys.argv[1]
    print("detect:", cuda.detect())
    ctx = cuda.current_context()

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

    dptr = ctypes.c_void_p(dst.device_ctypes_pointer.value)
    sptr = ctypes.c_void_p(src.device_ctypes_pointer.value)
    launch(fill, dptr, ctypes.c_uint8(0x5A), ctypes.c_uint64(N))
    cuda.synchronize()
    print("filled:", bool((dst.copy_to_host() == 0x5A).all()))

    launch(copy, dptr, sptr, ctypes.c_uint64(N))
    cuda.synchronize()
    print("copied:", np.array_equal(dst.copy_to_host(), host))

    # The bug: 8 bytes written past the end of dst's 1000.
    launch(overrun, dptr, ctypes.c_uint64(N), ctypes.c_uint64(8))
    cuda.synchronize()
    print("overrun ran:", bool((dst.copy_to_host() == 0x41).all()))

    # numba frees an array when it is collected (they sit in reference
    # cycles): collect now, while the context is current (see
    # NUMBA_CUDA_MAX_PENDING_DEALLOCS_COUNT above).
    del src, dst
    gc.collect()
    module.unload()
    cuda.close()
    print("done")


if __name__ == "__main__":
    main()
