#!/usr/bin/env python3
"""Check the fake driver's entry-point list (entrypoints.h) against the toolkit.

usage: check_entrypoints.py ENTRYPOINTS_H TYPEDEFS_H... [--stub STUB_SO]
                            [--lib BUILT_LIBCUDA_SO] [--nm NM]

TYPEDEFS_H: cudaTypedefs.h, and the toolkit's other typedef headers for the
entry points it lists (cudaProfilerTypedefs.h for cuProfilerStart/Stop).

For every X(symbol, base, version, per_thread) line it checks that
  * a typedef header has PFN_<base>_v<version>[_ptsz|_ptds] (so the version the
    fake's cuGetProcAddress uses is the one NVIDIA documents),
  * the per-thread flag matches the typedef's suffix and the symbol's suffix,
  * every variant cudaTypedefs.h knows for a listed base is listed too (else
    cuGetProcAddress would return an older variant with another prototype),
  * the toolkit's stub libcuda.so exports the symbol (when --stub is given),
  * the built library exports exactly the listed cu* symbols plus fakecuda_*
    controls and nothing else (when --lib is given).
Exit status 0 when everything holds, 1 otherwise (each problem printed).
"""
import argparse
import re
import subprocess
import sys


def parse_entries(path):
    text = open(path, encoding="utf-8").read().replace("\\\n", " ")  # join continued lines
    entries = []
    for m in re.finditer(r"X\((\w+),\s*(\w+),\s*(\d+),\s*([01])\)", text):
        entries.append((m.group(1), m.group(2), int(m.group(3)), int(m.group(4))))
    return entries


def parse_typedefs(paths):
    """Map base name -> set of (version, per_thread) from PFN typedefs."""
    text = "".join(open(path, encoding="utf-8").read() for path in paths)
    variants = {}
    for m in re.finditer(r"typedef\s+CUresult\s*\(CUDAAPI\s*\*PFN_(\w+?)_v(\d+)(_ptsz|_ptds)?\)", text):
        base, ver, pt = m.group(1), int(m.group(2)), m.group(3)
        variants.setdefault(base, set()).add((ver, 1 if pt else 0))
    return variants


def exported(nm, lib):
    out = subprocess.run([nm, "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TtWiV":
            syms.add(parts[2])
    return syms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("entrypoints")
    ap.add_argument("typedefs", nargs="+")
    ap.add_argument("--stub")
    ap.add_argument("--lib")
    ap.add_argument("--nm", default="nm")
    args = ap.parse_args()

    problems = []
    entries = parse_entries(args.entrypoints)
    if len(entries) < 50:
        problems.append(f"only {len(entries)} entries parsed from {args.entrypoints}")
    variants = parse_typedefs(args.typedefs)

    seen = set()
    listed = {}
    for sym, base, ver, pt in entries:
        if sym in seen:
            problems.append(f"{sym}: listed twice")
        seen.add(sym)
        listed.setdefault(base, set()).add((ver, pt))
        if not sym.startswith(base):
            problems.append(f"{sym}: does not start with its base name {base}")
        suffix_pt = sym.endswith("_ptsz") or sym.endswith("_ptds")
        if suffix_pt != bool(pt):
            problems.append(f"{sym}: per_thread={pt} but the name says otherwise")
        if (ver, pt) not in variants.get(base, set()):
            problems.append(f"{sym}: no PFN_{base}_v{ver}{'_ptsz/_ptds' if pt else ''} in the typedef headers "
                            f"(known: {sorted(variants.get(base, set()))})")
    for base, have in listed.items():
        missing = variants.get(base, set()) - have
        if missing:
            problems.append(f"{base}: variants {sorted(missing)} from the typedef headers are not exported")

    if args.stub:
        stub = exported(args.nm, args.stub)
        for sym, *_ in entries:
            if sym not in stub:
                problems.append(f"{sym}: not exported by the toolkit stub {args.stub}")

    if args.lib:
        lib = exported(args.nm, args.lib)
        for sym, *_ in entries:
            if sym not in lib:
                problems.append(f"{sym}: listed but not exported by {args.lib}")
        for sym in sorted(lib):
            if sym in seen or sym.startswith("fakecuda_"):
                continue
            if sym in ("_init", "_fini"):
                continue
            problems.append(f"{sym}: exported by {args.lib} but not an entry point or control")

    for p in problems:
        print(p)
    print(f"{len(entries)} entry points checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
