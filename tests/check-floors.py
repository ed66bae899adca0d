#!/usr/bin/env python3
"""The shim's floors: each folder of shim/ may include only the headers of its
own folder and of the floors below it (README.md, "How it is built").

    check-floors.py SHIM_DIR     check the tree; exit 1 naming each upward include
    check-floors.py --self-test  the check fails on a deliberate upward include

FLOORS is the one place the order is written down; shim/meson.build lists the
sources in the same order.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Bottom to top. Folders on one floor do not include each other.
FLOORS = [
    ("base",),              # shared macros, the fatal path
    ("options",),           # the options table and its parsers: pure
    ("report",),            # prints and writes what it is handed
    ("driver",),            # the shim's own driver calls, the real-function table
    ("callsite",),          # call sites
    ("audit", "redzone"),   # mechanism
    ("boundary",),          # boundaries, the watcher, the figures they gather
    ("start",),             # set-up on first use, exit, fork
    ("hooks",),             # the exported entry points and the routes to them
]

# Headers generated into the build directory, and the floor they belong to.
GENERATED = {"cu-result-names.h": "driver"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def floor_of(folder):
    for i, names in enumerate(FLOORS):
        if folder in names:
            return i
    return None


def check(shim_dir):
    problems = []
    for folder in sorted(os.listdir(shim_dir)):
        path = os.path.join(shim_dir, folder)
        if not os.path.isdir(path):
            continue
        own = floor_of(folder)
        if own is None:
            problems.append(f"shim/{folder}/: a folder on no floor (add it to FLOORS in "
                            f"{os.path.basename(__file__)})")
            continue
        for name in sorted(os.listdir(path)):
            if not name.endswith((".c", ".h", ".def", ".S")):
                continue
            with open(os.path.join(path, name), encoding="utf-8") as f:
                text = f.read()
            for m in INCLUDE.finditer(text):
                target = m.group(1)
                line = text.count("\n", 0, m.start()) + 1
                where = f"shim/{folder}/{name}:{line}"
                if target in GENERATED:
                    dep = GENERATED[target]
                elif "/" in target:
                    dep = target.split("/", 1)[0]
                else:
                    problems.append(f'{where}: #include "{target}" names no folder '
                                    f'(write "FOLDER/{target}")')
                    continue
                theirs = floor_of(dep)
                if theirs is None:
                    problems.append(f'{where}: #include "{target}": {dep}/ is on no floor')
                elif dep != folder and theirs >= own:
                    what = "the same floor" if theirs == own else "a higher floor"
                    problems.append(f'{where}: #include "{target}": {dep}/ is on {what} '
                                    f'than {folder}/ ({theirs} vs {own}); call down only')
    return problems


def self_test():
    """A copy of the tree with one upward include must fail, naming it."""
    here = os.path.dirname(os.path.abspath(__file__))
    shim = os.path.join(os.path.dirname(here), "shim")
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "shim")
        shutil.copytree(shim, copy)
        victim = os.path.join(copy, "report", "report.c")
        with open(victim, "a", encoding="utf-8") as f:
            f.write('\n#include "audit/audit.h"\n')
        run = subprocess.run([sys.executable, __file__, copy], capture_output=True, text=True)
        ok = run.returncode == 1 and 'shim/report/report.c' in run.stdout and \
            '"audit/audit.h": audit/ is on a higher floor than report/' in run.stdout
        clean = subprocess.run([sys.executable, __file__, shim], capture_output=True, text=True)
        if not ok or clean.returncode != 0:
            print("check-floors --self-test: the check did not catch an upward include, or "
                  "failed on the real tree:\n" + run.stdout + run.stderr + clean.stdout)
            return 1
    print("check-floors --self-test: an upward include is caught")
    return 0


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    if problems:
        print(f"check-floors: {len(problems)} include(s) against the floors")
        return 1
    print(f"check-floors: every include of {sys.argv[1]} calls down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
