#!/usr/bin/env python3
"""The shim's floors: each folder of shim/ may include only the headers of its
own folder and of the floors below it, and its objects may name only symbols
of those floors (docs/hacking.md, "How it is built").

    check-floors.py SHIM_DIR [OBJECT...]
        check the includes of the tree and, given the build's objects (or
        static libraries of them), their undefined symbols (nm); exit 1
        naming each upward include or reference
    check-floors.py --self-test [OBJECT...]
        the check fails on a deliberate upward include and, given the
        objects, on a deliberate upward call (an object compiled with $CC)

FLOORS is the one place the order is written down; shim/meson.build lists the
sources in the same order. INVERSIONS is the one place a lower floor is
called back by a higher one.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # checklib leaves no __pycache__ in the source tree
import checklib  # noqa: E402

# Bottom to top. Folders on one floor do not include each other.
FLOORS = [
    ("base",),              # shared macros, the fatal path
    ("options",),           # the options table and its parsers: pure
    ("report",),            # prints and writes what it is handed
    ("driver",),            # the shim's own driver calls, the real-function table
    ("handles",),           # the driver's handles the shim follows: kernels, graphs
    ("callsite",),          # call sites
    ("audit", "redzone"),   # mechanism
    ("boundary",),          # boundaries, the watcher, the figures they gather
    ("start",),             # set-up on first use, exit, fork
    ("hooks",),             # the exported entry points and the routes to them
]

# Headers generated into the build directory, and the floor they belong to.
GENERATED = {"cu-result-names.h": "driver"}

# The deliberate inversions: a lower floor runs a higher floor's code only
# through a function pointer the higher floor hands down, never by name (so
# none is an undefined reference, and no upward reference is allowed). Each
# entry: (the lower folder, the function that takes the pointer, the higher
# folder that calls it); the link check fails on an entry that no longer
# holds, so the list stays true.
INVERSIONS = [
    # gg_fatal() runs start-up's last words (boundary's final reports) before
    # abort(): set once at set-up (start.c), so a module that must abort
    # calls down only.
    ("base", "gg_fatal_last_words", "start"),
    # The report files walk the findings through gg_report_figures' list
    # functions (rows, violations, leaks ...), which boundary/figures.c
    # fills with audit's and redzone's foreach.
    ("report", "gg_report_write_files", "boundary"),
    # The same walkers at exit: start.c hands the figures to the exit line,
    # the leaks and the unresolved pairs.
    ("report", "gg_report_exit_summary", "start"),
    # The audit's seal WARN lists the unresolved pairs and the modules
    # through walkers the audit hands over (audit.c).
    ("report", "gg_report_seal_table", "audit"),
    # The watcher thread, and ending.c's handler of SIGTERM and SIGINT, run
    # start-up's exit work (end_by_signal in start.c).
    ("boundary", "gg_watcher_start", "start"),
]

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


def folder_of_object(path):
    """The shim folder an object was compiled from: meson names the object of
    shim/FOLDER/FILE.c FOLDER_FILE.c.o."""
    return os.path.basename(path).split("_", 1)[0]


def symbols(objects):
    """(defined, references) of @objects (objects or static libraries), by nm:
    defined {name: folder}, references [(folder, object, name)]."""
    nm = shlex.split(os.environ.get("NM", "nm"))
    defined, refs = {}, []
    run = subprocess.run(nm + ["-P", "-A"] + list(objects), capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"check-floors: {' '.join(nm)} failed: {run.stderr.strip()}")
    for line in run.stdout.splitlines():
        where, _, rest = line.rpartition(": ")
        fields = rest.split()
        if not where or len(fields) < 2:
            continue
        member = re.search(r"\[([^\]]+)\]$", where)
        obj = os.path.basename(member.group(1) if member else where)
        name, kind = fields[0], fields[1]
        folder = folder_of_object(obj)
        if kind == "U" or (kind in "wv" and len(fields) < 3):
            refs.append((folder, obj, name))
        elif kind.isupper() or kind == "u":
            defined.setdefault(name, folder)
    return defined, refs


def check_links(objects):
    problems = []
    defined, refs = symbols(objects)
    for folder, obj, name in refs:
        theirs, own = floor_of(defined.get(name)), floor_of(folder)
        if own is None:
            problems.append(f"{obj}: an object of no folder on a floor (shim/FOLDER/FILE.c "
                            f"compiles to FOLDER_FILE.c.o)")
        elif theirs is not None and defined[name] != folder and theirs >= own:
            what = "the same floor" if theirs == own else "a higher floor"
            problems.append(f"{obj}: calls {name}, of {defined[name]}/ on {what} than "
                            f"{folder}/ ({theirs} vs {own}); call down only (a callback is "
                            f"a function pointer handed down: INVERSIONS)")
    callers = {(folder, name) for folder, _, name in refs}
    for lower, taker, higher in INVERSIONS:
        if defined.get(taker) != lower or (higher, taker) not in callers:
            problems.append(f"INVERSIONS: {lower}/ {taker}() called from {higher}/ no longer "
                            f"holds (edit the list in {os.path.basename(__file__)})")
    return sorted(set(problems))


def upward_call(objects, tmp):
    """An object of report/ that calls a function of hooks/ by name, compiled
    with $CC; None when hooks/ defines no function."""
    defined, _ = symbols(objects)
    target = next((n for n, f in sorted(defined.items())
                   if f == "hooks" and n.startswith("gg_")), None)
    if target is None:
        return None, None
    src = os.path.join(tmp, "report_upward.c")
    with open(src, "w", encoding="utf-8") as f:
        f.write(f"void {target}(void);\nvoid gg_upward(void);\n"
                f"void gg_upward(void) {{ {target}(); }}\n")
    obj = src + ".o"
    subprocess.run(shlex.split(os.environ.get("CC", "cc")) + ["-w", "-c", src, "-o", obj],
                   check=True)
    return obj, target


def self_test(objects):
    """A copy of the tree with one upward include must fail, naming it; given
    the objects, so must they with one object more that calls up."""
    here = os.path.dirname(os.path.abspath(__file__))
    shim = os.path.join(os.path.dirname(here), "shim")
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "shim")
        shutil.copytree(shim, copy)
        victim = os.path.join(copy, "report", "report.c")
        with open(victim, "a", encoding="utf-8") as f:
            f.write('\n#include "audit/audit.h"\n')
        failed = checklib.caught(
            "check-floors", "an upward include", checklib.run(__file__, copy),
            ["shim/report/report.c",
             '"audit/audit.h": audit/ is on a higher floor than report/'],
            checklib.run(__file__, shim))
        if failed or not objects:
            return failed
        obj, target = upward_call(objects, tmp)
        if obj is None:
            print("check-floors --self-test: hooks/ defines no function to call up to")
            return 1
        return checklib.caught(
            "check-floors", "an upward call", checklib.run(__file__, shim, *objects, obj),
            [f"report_upward.c.o: calls {target}, of hooks/ on a higher floor than report/"],
            checklib.run(__file__, shim, *objects))


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--self-test":
        return self_test(sys.argv[2:])
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    problems = check(sys.argv[1])
    objects = sys.argv[2:]
    if objects:
        problems += check_links(objects)
    return checklib.verdict(
        "check-floors", problems, "include(s) or reference(s) against the floors",
        f"every include of {sys.argv[1]} calls down" +
        (f", and every reference of the objects in {len(objects)} file(s)" if objects else ""))


if __name__ == "__main__":
    sys.exit(main())
