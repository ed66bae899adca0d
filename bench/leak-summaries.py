#!/usr/bin/env python3
"""Summaries with many distinct leak stacks, for timing gpuguard report
(BENCHMARKS.md, "gpuguard report"): bench/leak-summaries.py N DIR [FILES]
writes FILES summaries (default 1), DIR/leaks.PID.json, each of which leaked
from the same N distinct allocation stacks of 8 frames (so that with several
files each stack is one entry seen in FILES processes). Stack i leaks i+1
allocations of 256 bytes each, so the report's order (the most bytes first)
is known: stack N-1 first."""
import os
import sys

DEPTH = 8


def frame(i, depth):
    # Distinct stacks differ in their innermost frame only: every key shares
    # the same long tail, as the stacks of one program's allocator do.
    address = 0x55d0c0000000 + (i * 64 if depth == 0 else 0x100000 + depth * 0x40)
    offset = address - 0x55d0c0000000
    symbol = ("alloc_%d+0x1c" % i) if depth == 0 else ("caller_%d+0x2a" % depth)
    return ('{ "address": "0x%x", "object": "/path/app", "offset": "0x%x", '
            '"symbol": "%s" }' % (address, offset, symbol))


def write(path, pid, n):
    with open(path, "w") as f:
        w = f.write
        w('{ "schema": 1, "pid": %d, "exe": "/path/app", "sealed": true, "seals": 1,\n'
          '  "config": { "redzone": 64, "fill": 238, "leak_check": false },\n'
          '  "lookups": { "total": 0, "resolved": 0, "unresolved_required": 0,\n'
          '               "unresolved_expected": 0, "late_misses": 0, "unresolved": 0 },\n'
          '  "unresolved": [],\n'
          '  "allocations": { "calls": %d, "failed": 0, "padded": %d, "unpadded_fallbacks": 0,\n'
          '                   "live": %d, "live_bytes": %d },\n'
          '  "redzones": { "scans": 1, "checked": %d, "unchecked": 0 },\n'
          '  "violations": [],\n  "leaks": [\n' % (pid, n, n, n, n * 256, n))
        for i in range(n):
            stack = ", ".join(frame(i, d) for d in range(DEPTH))
            w('%s    { "count": %d, "bytes": %d, "site": %s,\n      "stack": [ %s ] }\n'
              % ("," if i else " ", i + 1, (i + 1) * 256, frame(i, 0), stack))
        w('  ],\n  "errors": 0 }\n')


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    n, out = int(sys.argv[1]), sys.argv[2]
    files = int(sys.argv[3]) if len(sys.argv) == 4 else 1
    os.makedirs(out, exist_ok=True)
    for k in range(files):
        write(os.path.join(out, "leaks.%d.json" % (4711 + k)), 4711 + k, n)


main()
