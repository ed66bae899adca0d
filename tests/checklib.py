"""What the tree's checks in tests/ (check-floors.py, check-guards.py,
check-comment-names.py) share: the command line, running themselves again for
--self-test, and ending with a verdict."""
import subprocess
import sys


def run(script, *args):
    """@script run again with @args: (its exit status, all it printed)."""
    r = subprocess.run([sys.executable, script, *args], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def caught(name, what, broken, wanted, clean):
    """--self-test's verdict: @broken, a run over a broken copy, must fail and
    print each of @wanted; @clean, a run over the real tree, must pass.
    Says which; 0 or 1."""
    if broken[0] == 1 and all(w in broken[1] for w in wanted) and clean[0] == 0:
        print(f"{name} --self-test: {what} is caught")
        return 0
    print(f"{name} --self-test: {what} was not caught, or the real tree failed:\n" +
          broken[1] + clean[1])
    return 1


def verdict(name, problems, failed, passed):
    """Each of @problems on a line, then a summary: '@name: N @failed' (exit
    status 1) or '@name: @passed' (0)."""
    for p in problems:
        print(p)
    print(f"{name}: {len(problems)} {failed}" if problems else f"{name}: {passed}")
    return 1 if problems else 0


def main(doc, self_test, check_root):
    """The command line of a check of one tree: 'ROOT' runs @check_root(ROOT),
    '--self-test' @self_test(); anything else prints @doc. The exit status."""
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        return self_test()
    if len(sys.argv) != 2:
        print(doc.strip(), file=sys.stderr)
        return 2
    return check_root(sys.argv[1])
