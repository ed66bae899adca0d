#!/usr/bin/env python3
"""Write a C table of every CUresult name in cuda.h: gen-result-names.py CUDA_H OUT."""
import re
import sys

src, out = sys.argv[1], sys.argv[2]
names = []
with open(src, encoding="utf-8", errors="replace") as f:
    in_enum = False
    for line in f:
        if "enum cudaError_enum" in line:
            in_enum = True
        elif in_enum and line.startswith("}"):
            break
        elif in_enum:
            m = re.match(r"\s*(CUDA_(?:SUCCESS|ERROR_\w+))\s*=\s*(\d+)", line)
            if m:
                names.append((m.group(1), int(m.group(2))))
if not names:
    sys.exit(f"no CUresult values found in {src}")
with open(out, "w", encoding="utf-8") as f:
    f.write("/* Generated from cuda.h by gen-result-names.py. */\n")
    for name, value in names:
        f.write(f"GG_RESULT({name}, {value})\n")
