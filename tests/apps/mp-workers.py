"""Forked Python workers (docs/how-it-works.md, "Boundaries, signals, exit": a forked
child is a process of its own): a multiprocessing pool and single
processes, started with fork, over the driver through ctypes.

    mp-workers.py PTX

The parent overruns a buffer of its own, then a pool of clean workers runs,
then one clean and one overrunning worker run as single processes, whose exit
statuses are printed. Workers end as multiprocessing's do: with os._exit().
"""
import ctypes
import multiprocessing
import sys

cu = ctypes.CDLL("libcuda.so.1")
u64 = ctypes.c_uint64


def check(rc, what):
    if rc != 0:
        print(f"{what} failed: {rc}", file=sys.stderr)
        sys.exit(2)


def setup(ptx):
    ctx, mod = ctypes.c_void_p(), ctypes.c_void_p()
    check(cu.cuInit(0), "cuInit")
    check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    check(cu.cuModuleLoad(ctypes.byref(mod), ptx.encode()), "cuModuleLoad")
    return mod


def work(mod, overrun):
    """64 bytes, filled or written 8 bytes past the end, then freed."""
    ptr, fn = u64(), ctypes.c_void_p()
    check(cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(64)), "cuMemAlloc_v2")
    name = b"gg_overrun" if overrun else b"gg_fill"
    check(cu.cuModuleGetFunction(ctypes.byref(fn), mod, name), "cuModuleGetFunction")
    size, extra, value = u64(64), u64(8), ctypes.c_uint8(7)
    args = (ptr, size, extra) if overrun else (ptr, value, size)
    params = (ctypes.c_void_p * 3)(*[ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in args])
    check(cu.cuLaunchKernel(fn, 1, 1, 1, 128, 1, 1, 0, None, params, None), "cuLaunchKernel")
    check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    check(cu.cuMemFree_v2(ptr), "cuMemFree_v2")


MOD = None


def pool_task(i):
    work(MOD, False)
    return i * i


def main():
    global MOD
    MOD = setup(sys.argv[1])
    work(MOD, True)
    fork = multiprocessing.get_context("fork")
    pool = fork.Pool(2)
    print("pool:", pool.map(pool_task, range(4)))
    pool.close()  # the workers end with os._exit(), not the SIGTERM of terminate()
    pool.join()
    for overrun in (False, True):
        p = fork.Process(target=work, args=(MOD, overrun))
        p.start()
        p.join()
        print("overrunning" if overrun else "clean", "worker exited", p.exitcode)


if __name__ == "__main__":
    main()
