"""When numba-cuda frees a device array, and so when gpuguard checks its band.

numba-cuda (its default memory manager) makes each device array with a
cuMemAlloc of its own and, when Python collects the array, queues the
cuMemFree: the queue is flushed once it holds more than
NUMBA_CUDA_MAX_PENDING_DEALLOCS_COUNT frees (10 unless set) or more than
NUMBA_CUDA_MAX_PENDING_DEALLOCS_RATIO of the device's memory.  This writes 8
bytes past the end of one array, drops it, and says on stderr (where
gpuguard's lines go, in order) when it was dropped and when the queue was
flushed by hand.

usage: PYTHON numba_cuda_frees.py KERNELS_PTX
"""
import gc
import sys

import numpy as np
from cuda.core import LaunchConfig, launch
from numba import cuda
from numba.cuda.cudadrv import driver as drv

N = 1000


def say(what):
    print(what, file=sys.stderr, flush=True)


def main():
    ctx = cuda.current_context()
    stream = cuda.default_stream()
    with open(sys.argv[1]) as f:
        module = ctx.create_module_ptx(f.read())
    overrun = module.get_function("gg_overrun")
    arrays = [cuda.device_array(N, dtype=np.uint8) for _ in range(2)]
    launch(drv._to_core_stream(stream), LaunchConfig(grid=4, block=128), overrun.kernel,
           arrays[0].device_ctypes_pointer.value, np.uint64(N), np.uint64(8))
    stream.synchronize()
    del arrays[0]
    gc.collect()
    queue = ctx.memory_manager.deallocations  # the default memory manager's queue
    say(f"dropped; {len(queue)} frees pending")
    queue.clear()
    say("flushed")
    del arrays, overrun
    module.unload()
    gc.collect()
    return 0


if __name__ == "__main__":
    sys.exit(main())
