#!/usr/bin/env python3
"""Every header's include guard is GG_ and its path from the repository root,
upper-case, each other character as '_' (shim/report/report.h:
GG_SHIM_REPORT_REPORT_H), so no two headers can share one.

    check-guards.py ROOT         check ROOT's headers; exit 1 naming each wrong guard
    check-guards.py --self-test  the check fails on a guard another header has
"""
import os
import re
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True  # checklib leaves no __pycache__ in the source tree
import checklib  # noqa: E402

# A preprocessor directive: its name and its first word.
DIRECTIVE = re.compile(r'^[ \t]*#[ \t]*(\w+)[ \t]*(\w*)', re.M)


def guard_of(rel):
    """The guard the scheme gives the header at @rel (a path from the root)."""
    return "GG_" + re.sub(r'[^A-Z0-9]', '_', rel.replace(os.sep, "/").upper())


def headers(root):
    for top, dirs, files in os.walk(root):
        # Build directories (meson's) and hidden ones hold no sources.
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and
                         not os.path.isdir(os.path.join(top, d, "meson-private")))
        for name in sorted(files):
            if name.endswith(".h"):
                yield os.path.relpath(os.path.join(top, name), root)


def check(root):
    problems, seen = [], {}
    for rel in headers(root):
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text = f.read()
        want = guard_of(rel)
        first = DIRECTIVE.findall(text)[:2]
        if len(first) < 2 or first[0][0] != "ifndef" or first[1][0] != "define":
            problems.append(f"{rel}: no include guard first (#ifndef {want} / #define {want})")
            continue
        name = first[0][1]
        if first[1][1] != name:
            problems.append(f"{rel}: #ifndef {name} but #define {first[1][1]}")
        if name != want:
            problems.append(f"{rel}: guard {name}, the scheme says {want}")
        if name in seen:
            problems.append(f"{rel}: guard {name} is also {seen[name]}'s")
        seen.setdefault(name, rel)
    return problems, len(seen)


def self_test():
    """A copy of shim/ where one header takes another's guard must fail, naming both."""
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(os.path.join(root, "shim"), os.path.join(tmp, "shim"))
        victim = os.path.join(tmp, "shim", "start", "start.h")
        with open(victim, encoding="utf-8") as f:
            text = f.read()
        with open(victim, "w", encoding="utf-8") as f:
            f.write(text.replace("GG_SHIM_START_START_H", "GG_SHIM_REPORT_REPORT_H"))
        return checklib.caught(
            "check-guards", "a shared guard", checklib.run(__file__, tmp),
            ["shim/start/start.h: guard GG_SHIM_REPORT_REPORT_H, the scheme says "
             "GG_SHIM_START_START_H", "is also shim/report/report.h's"],
            checklib.run(__file__, root))


def check_root(root):
    problems, count = check(root)
    return checklib.verdict("check-guards", problems, "guard(s) off the scheme or shared",
                            f"the {count} headers of {root} each have their own guard")


if __name__ == "__main__":
    sys.exit(checklib.main(__doc__, self_test, check_root))
