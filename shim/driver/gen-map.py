#!/usr/bin/env python3
"""Write libgpuguard.so's version script from the hook list:
gen-map.py HOOKS_DEF OUT. Each GG_HOOK(name, ...) of hooks.def is exported in
the hidden version node GPUGUARD_HOOK; nothing else of the shim's is, but for
the unversioned exports named in the script's comment (they are defined with
default visibility where they live)."""
import re
import sys

HEADER = """\
/* Generated from shim/driver/hooks.def by shim/driver/gen-map.py: do not edit.
   Exports of libgpuguard.so: the hooked driver entry points, dlsym, _exit,
   _Exit and the control API. Nothing else; tests/test-symbols.c checks nm -D.
   The hooks carry the hidden version GPUGUARD_HOOK (hooks.c's .symver): the
   unversioned references of a program linked with libcuda bind to them, while
   dlsym() skips them, so no lookup answers differently, or leaves another
   dlerror(), because the shim is there. dlsym itself is in no version node:
   unversioned, it takes every glibc version's callers; so are _exit, _Exit and
   the control API (hooks/control.c: gpuguard_boundary, gpuguard_version),
   which a process finds with dlsym or ctypes. */
GPUGUARD_HOOK {
  global:
"""
FOOTER = """\
  local:
    gg_export_*;
};
"""

src, out = sys.argv[1], sys.argv[2]
with open(src, encoding="utf-8") as f:
    names = re.findall(r"^GG_HOOK\((\w+),", f.read(), re.M)
if not names:
    sys.exit(f"gen-map.py: no GG_HOOK(name, ...) entries found in {src}")
dups = sorted({n for n in names if names.count(n) > 1})
if dups:
    sys.exit(f"gen-map.py: {src} names these hooks twice: {', '.join(dups)}")
with open(out, "w", encoding="utf-8") as f:
    f.write(HEADER + "".join(f"    {n};\n" for n in names) + FOOTER)
