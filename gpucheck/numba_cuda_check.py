"""NVIDIA's numba-cuda on a real GPU, for scripts/gpu-check.

    python3 numba_cuda_check.py

A @cuda.jit kernel writes 8 bytes past a 1000-byte cuda.device_array
(numba does not check indices on the device), the array is copied back
and freed. Prints only what the program itself knows (stdout is compared
with and without the shim).
"""
import gc
import os

# Free at once rather than batch the frees: the free then checks the band.
os.environ["NUMBA_CUDA_MAX_PENDING_DEALLOCS_COUNT"] = "0"
# A grid of 4 blocks is the point here, not a mistake to warn about on stderr.
os.environ["NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS"] = "0"

import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402

N = 1000


@cuda.jit
def overrun(a, n, extra):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n + extra:
        a[i] = 0x41
        i += stride


def main():
    a = cuda.device_array(N, dtype=np.uint8)
    overrun[4, 128](a, N, 8)  # the bug: 8 more than a holds
    cuda.synchronize()
    print("sum", int(a.copy_to_host().sum()))
    del a
    gc.collect()
    cuda.synchronize()
    print("freed")


if __name__ == "__main__":
    main()
