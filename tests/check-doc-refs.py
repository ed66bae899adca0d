#!/usr/bin/env python3
"""The documents the code points at are there.

Comments name a section of the documentation as  (README, "Heading"),
README "Heading"  or  (docs/<page>.md, "Heading"),  where Heading is the
exact text of a Markdown heading of that file or of a paragraph's bold lead
("**Underflow.**" is "Underflow"); a heading may run across comment lines.
This checks every such reference under shim/, tools/, tests/, scripts/ and
python/ (and meson.build, pyproject.toml), and every relative link of README.md,
BENCHMARKS.md and docs/*.md: the file it names is in the repository, and so
is the heading an anchor (#red-zones) names; no link leaves the repository.

    tests/check-doc-refs.py [--fix] [ROOT]
    tests/check-doc-refs.py --self-test

Exit 1, naming each broken reference or link with its file and line. With
--fix, a reference whose heading is not in the file it names but is in
exactly one other document (a section moved from the README into docs/) is
rewritten to name that document; running it again changes nothing.
"""

import os
import re
import sys

SOURCE_DIRS = ("shim", "tools", "tests", "scripts", "python")
SOURCE_FILES = ("meson.build", "pyproject.toml")
SELF = os.path.join("tests", "check-doc-refs.py")

# The document a reference names: README, README.md, BENCHMARKS(.md), docs/x.md.
DOC = r"(?P<doc>\bREADME(?:\.md)?|\bBENCHMARKS(?:\.md)?|\bdocs/[A-Za-z0-9_.-]+\.md)"
# A comment's line break inside a reference, with the next line's comment
# marker (" * ", "# ", "// ").
BREAK = r"\n[ \t]*(?:\*(?!/)|#|//)?[ \t]*"
REF = re.compile(DOC + r"(?P<sep>(?:,[ \t]*|[ \t]+)(?:" + BREAK + r")?|," + BREAK + r')"'
                 r'(?P<head>(?:[^"\n\\%]|' + BREAK + r'){1,200}?)"')
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
BOLD_LEAD = re.compile(r"^(?:[-*][ \t]+)?\*\*([^*\n]+?)\*\*", re.M)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def doc_path(name):
    """The file a reference's document name stands for."""
    if name in ("README", "README.md"):
        return "README.md"
    if name in ("BENCHMARKS", "BENCHMARKS.md"):
        return "BENCHMARKS.md"
    return name


def strip_markup(text):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return text.replace("`", "").replace("*", "").strip()


def headings_of(text):
    """The headings and bold leads of a Markdown text, as a reference names them."""
    names = set()
    for m in HEADING.finditer(text):
        name = strip_markup(m.group(2))
        names.add(name)
        names.add(re.sub(r"^[0-9]+\.[ \t]+", "", name))  # "5. Image preflight"
    for m in BOLD_LEAD.finditer(text):
        lead = strip_markup(m.group(1)).rstrip(".:")
        names.add(lead)
    return names


def slug(heading):
    """GitHub's anchor of a heading."""
    s = strip_markup(heading).lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors_of(text):
    seen = {}
    out = set()
    for m in HEADING.finditer(text):
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else "%s-%d" % (base, n))
    return out


def documents(root):
    """Every Markdown document of the repository a reference may name."""
    docs = {}
    for name in ("README.md", "BENCHMARKS.md"):
        if os.path.isfile(os.path.join(root, name)):
            docs[name] = read(os.path.join(root, name))
    ddir = os.path.join(root, "docs")
    if os.path.isdir(ddir):
        for name in sorted(os.listdir(ddir)):
            if name.endswith(".md"):
                docs["docs/" + name] = read(os.path.join(ddir, name))
    return docs


def read(path):
    # Byte for byte: --fix writes back exactly what it read, but the name.
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
        return f.read()


def sources(root):
    for name in SOURCE_FILES:
        if os.path.isfile(os.path.join(root, name)):
            yield name
    for top in SOURCE_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(d for d in dirnames
                                 if not d.startswith(".") and d != "__pycache__")
            for name in sorted(filenames):
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                if rel == SELF:
                    continue
                path = os.path.join(root, rel)
                try:
                    with open(path, "rb") as f:
                        data = f.read()
                except OSError:
                    continue
                if b"\0" in data[:8192]:
                    continue  # not text
                yield rel


def normalize(head):
    return re.sub(r"\s+", " ", re.sub(BREAK, " ", head)).strip()


def check_refs(root, fix):
    docs = documents(root)
    heads = {name: headings_of(text) for name, text in docs.items()}
    broken = []
    fixed = 0
    for rel in sources(root):
        path = os.path.join(root, rel)
        text = read(path)
        out = []
        last = 0
        for m in REF.finditer(text):
            doc = doc_path(m.group("doc"))
            head = normalize(m.group("head"))
            if doc in heads and head in heads[doc]:
                continue
            homes = [d for d in sorted(heads) if head in heads[d]]
            line = text.count("\n", 0, m.start()) + 1
            if fix and len(homes) == 1 and doc in heads:
                out.append(text[last:m.start("doc")])
                out.append(homes[0])
                last = m.end("doc")
                fixed += 1
                continue
            if doc not in heads:
                why = "%s is not a document of the repository" % doc
            elif len(homes) == 1:
                why = "it is in %s now (--fix rewrites it)" % homes[0]
            elif homes:
                why = "it is in %s" % ", ".join(homes)
            else:
                why = "no document has it"
            broken.append('%s:%d: %s, "%s": %s' % (rel, line, m.group("doc"), head, why))
        if out:
            out.append(text[last:])
            with open(path, "w", encoding="utf-8", errors="surrogateescape", newline="") as f:
                f.write("".join(out))
    return broken, fixed


def check_links(root):
    docs = documents(root)
    broken = []
    real_root = os.path.realpath(root)
    for name, text in sorted(docs.items()):
        base = os.path.dirname(name)
        in_code = False
        for lineno, line in enumerate(text.split("\n"), 1):
            if line.startswith("```"):
                in_code = not in_code
            if in_code or line.startswith("    ") or line.startswith("\t"):
                continue
            for m in LINK.finditer(line):
                target = m.group(1)
                where = "%s:%d: %s" % (name, lineno, target)
                if re.match(r"[a-z][a-z0-9+.-]*:", target):
                    broken.append(where + ": points outside the repository")
                    continue
                file, _, anchor = target.partition("#")
                rel = os.path.normpath(os.path.join(base, file)) if file else name
                full = os.path.realpath(os.path.join(root, rel))
                if not (full == real_root or full.startswith(real_root + os.sep)):
                    broken.append(where + ": points outside the repository")
                elif not os.path.exists(full):
                    broken.append(where + ": no such file")
                elif anchor and rel.endswith(".md"):
                    if anchor not in anchors_of(read(full)):
                        broken.append(where + ": %s has no heading #%s" % (rel, anchor))
    return broken


def self_test():
    """The check fails on what it is for, and --fix mends it once."""
    import shutil
    import tempfile

    tmp = tempfile.mkdtemp(prefix="check-doc-refs.")
    try:
        os.makedirs(os.path.join(tmp, "docs"))
        os.makedirs(os.path.join(tmp, "shim", "a"))
        with open(os.path.join(tmp, "README.md"), "w") as f:
            f.write("# t\n\n## Kept\n\nSee [moved](docs/page.md#moved-here).\n")
        with open(os.path.join(tmp, "docs", "page.md"), "w") as f:
            f.write("# p\n\n## Moved here\n\n**Bold lead.** text\n")
        src = os.path.join(tmp, "shim", "a", "a.c")
        good = '/* (README, "Kept") and (docs/page.md, "Bold lead") */\n'
        moved = '/* x (README, "Moved\n * here"): y; README "Bold lead" */\n'
        with open(src, "w") as f:
            f.write(good)
        assert check_refs(tmp, False) == ([], 0), "a good reference is reported"
        assert check_links(tmp) == [], "a good link is reported"
        with open(src, "w") as f:
            f.write(good + moved + '/* (README, "Nowhere") */\n')
        broken, _ = check_refs(tmp, False)
        assert len(broken) == 3, broken
        broken, fixed = check_refs(tmp, True)
        assert fixed == 2 and len(broken) == 1 and "Nowhere" in broken[0], (broken, fixed)
        assert read(src) == (good + moved.replace("README", "docs/page.md")
                             + '/* (README, "Nowhere") */\n'), read(src)
        assert check_refs(tmp, True)[1] == 0, "--fix is not idempotent"
        with open(os.path.join(tmp, "docs", "page.md"), "a") as f:
            f.write("[a](../README.md#gone) [b](nofile.md) [c](https://example.com)"
                    " [d](../../outside.md)\n")
        links = check_links(tmp)
        assert len(links) == 4, links
    finally:
        shutil.rmtree(tmp)
    print("check-doc-refs: self-test passed")
    return 0


def main(argv):
    if "--self-test" in argv:
        return self_test()
    fix = "--fix" in argv
    args = [a for a in argv if a != "--fix"]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    refs, fixed = check_refs(root, fix)
    links = check_links(root)
    if fixed:
        print("check-doc-refs: rewrote %d reference(s) to the document that holds the heading"
              % fixed)
    for b in refs:
        print("broken reference: " + b, file=sys.stderr)
    for b in links:
        print("broken link: " + b, file=sys.stderr)
    return 1 if refs or links else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
