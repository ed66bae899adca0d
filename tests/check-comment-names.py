#!/usr/bin/env python3
"""Every file, section and test a comment names is there.

A comment in shim/, tools/ or tests/ that names a source file (`registry.c`,
`redzone/band.h`, `tests/test-docs.c`, `driver/hooks.def`) sends a reader to
it: the name must be a file of this repository, found from the repository
root, from shim/, from the commenting file's own directory, or, for a bare
name, anywhere in the tree, or a file a meson.build generates. Files of other
projects that comments cite on purpose (the toolkit's headers, glibc's
sources) are listed in FOREIGN; a name in capitals (shim/FOLDER/FILE.c,
OUT.map) is a placeholder.

A reference to a man page section, (docs/gpuguard.1, "SECTION"), must name
a .SH/.SS section of it, and (tests/test-x.c, Test(suite, name)) a test
that file has. References to the Markdown pages' headings are
tests/check-doc-refs.py's, which also moves them when a section moves.

    check-comment-names.py ROOT         check ROOT; exit 1 naming each stale name
    check-comment-names.py --self-test  the check fails on a stale file, section and test
"""
import os
import re
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True  # checklib leaves no __pycache__ in the source tree
import checklib  # noqa: E402

DIRS = ("shim", "tools", "tests")
EXTS = ("c", "h", "def", "S", "py", "map")

# Files outside this repository that comments name on purpose.
FOREIGN = {
    "cuda.h", "cuda_runtime.h", "cudaTypedefs.h", "cudaProfilerTypedefs.h", "cuda_occupancy.h",
    "magic.h",
}

# shim/FOLDER/FILE.c, OUT.map: a placeholder, not a name.
PLACEHOLDER = re.compile(r"(?:^|[/_])[A-Z][A-Z0-9]+(?:[._/]|$)")
C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
HASH_COMMENT = re.compile(r"#[^\n!]*")
DOCSTRING = re.compile(r'"""(.*?)"""', re.S)
NAME = re.compile(r"(?<![\w./@<-])((?:[\w.-]+/)*[\w-]+\.(?:%s))(?![\w/])" % "|".join(EXTS))
# (docs/gpuguard.1, "SECTION"), (tests/test-x.c, Test(suite, name))
SECTION = re.compile(r'\((docs/[\w.-]+\.1),\s+"([^"]+)"')
TEST = re.compile(r"\((tests/[\w.-]+\.c),\s+Test\((\w+),\s*(\w+)\)")


def walk(root, top=""):
    """The files under @root/@top, paths from @root; no build or hidden directory."""
    for at, dirs, files in os.walk(os.path.join(root, top)):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and
                         not os.path.isdir(os.path.join(at, d, "meson-private")))
        for name in sorted(files):
            yield os.path.relpath(os.path.join(at, name), root)


def read(root, rel):
    try:
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def comments(rel, text):
    """(line, text) of each comment of @rel."""
    if rel.endswith((".c", ".h", ".S", ".def")):
        patterns = (C_COMMENT,)
    elif rel.endswith(".py"):
        patterns = (HASH_COMMENT, DOCSTRING)
    elif os.path.basename(rel) == "meson.build":
        patterns = (HASH_COMMENT,)
    else:
        return
    for pattern in patterns:
        for m in pattern.finditer(text):
            yield text.count("\n", 0, m.start()) + 1, m.group()


def headings(text):
    """The .SH/.SS sections of a man page."""
    if text is None:
        return set()
    return {h.strip().strip('"') for h in re.findall(r"^\.S[HS] +(.+)$", text, re.M)}


def tests_of(text):
    return set(re.findall(r"^Test\((\w+),\s*(\w+)", text or "", re.M))


def check(root):
    everything = list(walk(root))
    known = {os.path.basename(p) for p in everything}
    for rel in everything:  # what the build generates: output: 'fc_errors.h'
        if os.path.basename(rel) == "meson.build":
            known.update(re.findall(r"['\"]([\w.-]+)['\"]", read(root, rel) or ""))
    cache = {}

    def cached(rel, how):
        if rel not in cache:
            cache[rel] = how(read(root, rel))
        return cache[rel]

    problems, names = [], 0
    for rel in (p for top in DIRS for p in walk(root, top)):
        text = read(root, rel)
        if text is None or rel == os.path.join("tests", "check-comment-names.py"):  # its examples
            continue
        here = os.path.dirname(rel)
        for line, comment in comments(rel, text):
            for m in NAME.finditer(comment):
                name = m.group(1)
                if os.path.basename(name) in FOREIGN or PLACEHOLDER.search(name):
                    continue
                names += 1
                at = "%s:%d" % (rel, line + comment.count("\n", 0, m.start()))
                if "/" in name:
                    if not any(os.path.exists(os.path.join(root, b, name)) for b in ("", "shim", here)):
                        problems.append(f"{at}: {name}: no such file")
                elif name not in known:
                    problems.append(f"{at}: {name}: no such file")
            flat = re.sub(r"\s*\n\s*(?:\*(?!/)|#)?\s*", " ", comment)
            for m in SECTION.finditer(flat):
                names += 1
                page = m.group(1)
                if m.group(2) not in cached(page, headings):
                    problems.append(f'{rel}:{line}: ({m.group(1)}, "{m.group(2)}"): '
                                    f"no such heading in {page}")
            for m in TEST.finditer(flat):
                names += 1
                if (m.group(2), m.group(3)) not in cached(m.group(1), tests_of):
                    problems.append(f"{rel}:{line}: {m.group(1)} has no "
                                    f"Test({m.group(2)}, {m.group(3)})")
    return problems, names


def self_test():
    """A copy of the tree with a comment naming a file, a man page section and
    a test that are not there must fail, naming each."""
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    with tempfile.TemporaryDirectory() as tmp:
        for rel in walk(root):
            os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
            shutil.copy(os.path.join(root, rel), os.path.join(tmp, rel))
        with open(os.path.join(tmp, "shim", "stale.c"), "w", encoding="utf-8") as f:
            f.write('/* Interned by sites.c, read in redzone/bands.c (docs/gpuguard.1, "FILES")\n'
                    ' * (docs/gpuguard.1, "NO\n * SUCH") (tests/test-docs.c, Test(docs, no_such_test)). */\n')
        return checklib.caught(
            "check-comment-names", "a stale file, man page section and test",
            checklib.run(__file__, tmp),
            ["shim/stale.c:1: sites.c: no such file", "shim/stale.c:1: redzone/bands.c: no such file",
             '(docs/gpuguard.1, "NO SUCH"): no such heading', "has no Test(docs, no_such_test)"],
            checklib.run(__file__, root))


def check_root(root):
    problems, names = check(root)
    return checklib.verdict("check-comment-names", problems, "stale name(s) in comments",
                            f"the {names} files, sections and tests comments name are there")


if __name__ == "__main__":
    sys.exit(checklib.main(__doc__, self_test, check_root))
