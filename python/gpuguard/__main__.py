"""python -m gpuguard ARGS: the package's gpuguard command."""
import sys

from ._command import main

sys.exit(main())
