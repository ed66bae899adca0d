"""gpuguard: an LD_PRELOAD sanitizer for CUDA driver-API programs.

The package carries the shim (libgpuguard.so) and the gpuguard command side
by side, the command's launcher (the `gpuguard` console script and
`python -m gpuguard`) and a pytest plugin (`pytest --gpuguard`).
See gpuguard(1) and the project's README.
"""
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def command_path():
    """The gpuguard command installed with this package."""
    return os.path.join(_HERE, "gpuguard")


def shim_path():
    """The libgpuguard.so installed with this package (the command finds it
    beside itself)."""
    return os.path.join(_HERE, "libgpuguard.so")
