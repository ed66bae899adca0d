"""The `gpuguard` console script and `python -m gpuguard`: the package's own
command, run in this process's place with the same arguments."""
import os
import sys

from . import command_path


def main():
    exe = command_path()
    if not os.access(exe, os.X_OK):
        sys.stderr.write(f"gpuguard: the package's command {exe} is missing or not executable\n")
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(exe, [exe] + sys.argv[1:])
    return 127  # not reached: execv raises on failure
