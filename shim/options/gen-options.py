#!/usr/bin/env python3
"""The option docs from shim/options/config.def, the one place an option is
declared: the README's settings table and gpuguard(1)'s OPTIONS and
ENVIRONMENT entries, each between its marker lines.

    python3 shim/options/gen-options.py --check   # exit 1 naming each stale file
    python3 shim/options/gen-options.py --write   # regenerate them in place
    python3 shim/options/gen-options.py --self-test

--check is the meson test "options-docs" (and so CI); after editing config.def,
run --write from the repository's root and commit what it changed.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

FIELDS = ('name', 'store', 'kind', 'default', 'flag', 'alias', 'metavar', 'sets',
          'accepts', 'help', 'doc_default', 'doc', 'man_option', 'man_env')
# The fields this script reads: each must be string literals (or NULL).
READ = ('name', 'flag', 'alias', 'metavar', 'doc_default', 'doc', 'man_option', 'man_env')

README_BEGIN = '<!-- BEGIN generated from shim/options/config.def: do not edit -->'
README_END = '<!-- END generated from shim/options/config.def -->'
MAN_BEGIN = '.\\" BEGIN generated from shim/options/config.def ({}): do not edit'
MAN_END = '.\\" END generated from shim/options/config.def ({})'


class DefError(Exception):
    pass


def tokens(text):
    """C tokens enough for config.def: string literals ('"', value),
    punctuation ('(', ')', ','), other words ('w', text); comments dropped."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            if j < 0:
                raise DefError('unterminated comment')
            i = j + 2
        elif text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
        elif c == '"':
            j, out = i + 1, []
            while j < n and text[j] != '"':
                if text[j] == '\\':
                    e = text[j + 1]
                    out.append({'n': '\n', 't': '\t', '\\': '\\', '"': '"'}.get(e))
                    if out[-1] is None:
                        raise DefError('unknown escape \\%s' % e)
                    j += 2
                else:
                    if text[j] == '\n':
                        raise DefError('newline in a string')
                    out.append(text[j])
                    j += 1
            yield ('"', ''.join(out))
            i = j + 1
        elif c in '(),':
            yield (c, c)
            i += 1
        elif c.isspace():
            i += 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in '(),"' \
                    and not text.startswith('/*', j):
                j += 1
            yield ('w', text[i:j])
            i = j


def parse(text):
    """config.def's entries, each a dict of FIELDS: a string for an argument
    of string literals, None for NULL, else ('expr', its C text)."""
    toks = list(tokens(text))
    entries, i = [], 0
    while i < len(toks):
        if toks[i] != ('w', 'GG_OPTION'):
            raise DefError('expected GG_OPTION, found %r' % (toks[i][1],))
        if i + 1 >= len(toks) or toks[i + 1][0] != '(':
            raise DefError('GG_OPTION without "("')
        args, cur, depth, i = [], [], 0, i + 2
        while True:
            if i >= len(toks):
                raise DefError('GG_OPTION without ")"')
            kind, val = toks[i]
            i += 1
            if kind == ')' and depth == 0:
                args.append(cur)
                break
            if kind == ',' and depth == 0:
                args.append(cur)
                cur = []
                continue
            depth += kind == '('
            depth -= kind == ')'
            cur.append((kind, val))
        if len(args) != len(FIELDS):
            raise DefError('an entry has %d arguments, not %d (%s)'
                           % (len(args), len(FIELDS), args[0]))
        e = {}
        for f, a in zip(FIELDS, args):
            if a == [('w', 'NULL')]:
                e[f] = None
            elif a and all(k == '"' for k, _ in a):
                e[f] = ''.join(v for _, v in a)
            else:
                e[f] = ('expr', ' '.join(v for _, v in a))
        for f in READ:
            if isinstance(e[f], tuple):
                raise DefError('%s: %s must be string literals' % (e['name'], f))
        if not isinstance(e['name'], str) or not e['name'].startswith('GPUGUARD_'):
            raise DefError('an entry without a GPUGUARD_ name: %r' % (e['name'],))
        for f in ('doc_default', 'doc', 'man_env'):
            if not e[f]:
                raise DefError('%s: %s is empty' % (e['name'], f))
        if e['flag'] and not e['man_option']:
            raise DefError('%s: %s has no man_option' % (e['name'], e['flag']))
        for f in ('man_option', 'man_env'):
            if e[f] and not e[f].endswith('\n'):
                raise DefError('%s: %s must end with \\n' % (e['name'], f))
        entries.append(e)
    return entries


def readme_table(entries):
    rows = ['| variable | default | meaning |', '| --- | --- | --- |']
    for e in entries:
        rows.append('| `%s` | %s | %s |' % (e['name'], e['doc_default'], e['doc']))
    return '\n'.join(rows) + '\n'


def roff_flag(flag):
    return flag.replace('-', '\\-')


def man_options(entries):
    out = []
    for e in entries:
        if not e['flag']:
            continue
        out.append('.TP\n')
        if e['metavar']:
            out.append('.BI %s " %s"\n' % (roff_flag(e['flag']), e['metavar'].lower()))
        else:
            out.append('.B %s\n' % roff_flag(e['flag']))
        out.append(e['man_option'])
    return ''.join(out)


def man_env(entries):
    return ''.join('.TP\n.B %s\n%s' % (e['name'], e['man_env']) for e in entries)


def splice(text, begin, end, body, path):
    """@text with the lines between the marker lines @begin and @end made @body."""
    lines = text.split('\n')
    if lines.count(begin) != 1 or lines.count(end) != 1:
        raise DefError('%s: needs each marker line once: %s / %s' % (path, begin, end))
    b, e = lines.index(begin), lines.index(end)
    if e < b:
        raise DefError('%s: %s comes before %s' % (path, end, begin))
    return '\n'.join(lines[:b + 1]) + '\n' + body + '\n'.join(lines[e:])


def generate(entries, root):
    """{path relative to root: (what it holds, what it should hold)}."""
    out = {}
    path = 'README.md'
    with open(os.path.join(root, path)) as f:
        old = f.read()
    out[path] = (old, splice(old, README_BEGIN, README_END, readme_table(entries), path))
    path = 'docs/gpuguard.1'
    with open(os.path.join(root, path)) as f:
        old = f.read()
    new = splice(old, MAN_BEGIN.format('OPTIONS'), MAN_END.format('OPTIONS'),
                 man_options(entries), path)
    new = splice(new, MAN_BEGIN.format('ENVIRONMENT'), MAN_END.format('ENVIRONMENT'),
                 man_env(entries), path)
    out[path] = (old, new)
    return out


def stale(defpath, root):
    with open(defpath) as f:
        entries = parse(f.read())
    return [p for p, (old, new) in generate(entries, root).items() if old != new], entries


def self_test(root):
    """An option config.def gains and the docs lack makes both files stale;
    the docs as they are, with the def as it is, are not (that is --check)."""
    import tempfile
    with open(os.path.join(HERE, 'config.def')) as f:
        text = f.read()
    extra = ('GG_OPTION("GPUGUARD_SELF_TEST", GG_FIELD(bool, self_test), OPT_BOOL, "0",\n'
             '\t  "--self-test", NULL, NULL, "1", A_BOOL, "help", "0", "doc",\n'
             '\t  "man option\\n", "man env\\n")\n')
    with tempfile.TemporaryDirectory() as tmp:
        defpath = os.path.join(tmp, 'config.def')
        with open(defpath, 'w') as f:
            f.write(text + extra)
        files, _ = stale(defpath, root)
        if sorted(files) != ['README.md', 'docs/gpuguard.1']:
            print('self-test: a new option left stale %s, not both docs' % files)
            return 1
        # A doc missing its markers is an error, not "fresh".
        with open(defpath, 'w') as f:
            f.write(text)
        os.makedirs(os.path.join(tmp, 'docs'))
        with open(os.path.join(tmp, 'README.md'), 'w') as f:
            f.write('no markers\n')
        with open(os.path.join(tmp, 'docs/gpuguard.1'), 'w') as f:
            f.write('no markers\n')
        try:
            stale(defpath, tmp)
            print('self-test: a README without its markers passed')
            return 1
        except DefError:
            pass
        # A literal the script reads that is a macro is refused.
        with open(defpath, 'w') as f:
            f.write(text + extra.replace('"doc",', 'A_DOC,'))
        try:
            stale(defpath, root)
            print('self-test: a doc field that is no literal passed')
            return 1
        except DefError:
            pass
    print('self-test: ok')
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument('--check', action='store_true', help='exit 1 naming each stale file')
    mode.add_argument('--write', action='store_true', help='regenerate the stale files')
    mode.add_argument('--self-test', action='store_true')
    ap.add_argument('--root', default=ROOT, help='the repository (default: this one)')
    ap.add_argument('--def', dest='defpath', default=os.path.join(HERE, 'config.def'))
    args = ap.parse_args()
    if args.self_test:
        return self_test(args.root)
    try:
        with open(args.defpath) as f:
            entries = parse(f.read())
        out = generate(entries, args.root)
    except (DefError, OSError) as err:
        print('gen-options: %s' % err, file=sys.stderr)
        return 2
    bad = [p for p, (old, new) in out.items() if old != new]
    if args.write:
        for p in bad:
            with open(os.path.join(args.root, p), 'w') as f:
                f.write(out[p][1])
            print('gen-options: wrote %s' % p)
        return 0
    for p in bad:
        print('gen-options: %s is stale against shim/options/config.def; run '
              'python3 shim/options/gen-options.py --write' % p, file=sys.stderr)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
