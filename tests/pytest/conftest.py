"""The pytest plugin's proof: tests of numba-cuda over the fake
driver (tests/fakecuda), two of which write past an array. Run by
check_plugin.py, which says what must pass and fail; GG_TEST_PTX names the
fake's kernels.ptx and LD_LIBRARY_PATH its libcuda.so.1."""
import os

# numba frees an array when it is collected; at once, not batched (numba's
# documented setting), so a band is checked while its context is current.
os.environ.setdefault("NUMBA_CUDA_MAX_PENDING_DEALLOCS_COUNT", "0")

import numpy as np  # noqa: E402
import pytest  # noqa: E402


class Kernels:
    """The fake's kernels.ptx, loaded through numba-cuda, launched the way
    numba's dispatcher does (cuda.core's launch on numba's stream)."""

    def __init__(self):
        from numba import cuda

        with open(os.environ["GG_TEST_PTX"]) as f:
            self.module = cuda.current_context().create_module_ptx(f.read())

    def run(self, name, *args):
        from cuda.core import LaunchConfig, launch
        from numba import cuda
        from numba.cuda.cudadrv import driver as drv

        stream = cuda.default_stream()
        kernel = self.module.get_function(name)
        launch(drv._to_core_stream(stream), LaunchConfig(grid=4, block=128), kernel.kernel, *args)
        stream.synchronize()


@pytest.fixture(scope="session")
def kernels():
    return Kernels()


def address(array):
    return array.device_ctypes_pointer.value


def u64(n):
    return np.uint64(n)
