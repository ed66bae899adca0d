"""The pytest plugin, test by test: runs this directory's suite
with pytest and checks what the plugin made of it.

usage: PYTHON check_plugin.py [--command GPUGUARD] [--xdist-only | --no-xdist] [PYTEST_ARGS...]

  --command   the gpuguard command (default: the installed package's); given
              to the plugin as --gpuguard-command
  PYTEST_ARGS given to every pytest run (the build tree's tests pass
              -p gpuguard.pytest_plugin; an installed plugin needs none)

The fake driver must be reachable: LD_LIBRARY_PATH holds its libcuda.so.1,
GG_TEST_PTX names its kernels.ptx. Checks, each run with its own JUnit XML:
  1. without --gpuguard the plugin is inert: every test passes, no property;
  2. with --gpuguard exactly the two planted tests fail, in teardown, with
     gpuguard's ERROR lines (the overrun and the array's allocation stack)
     as message and as JUnit properties; the rest pass; the forked child's
     findings are its own summary's, no test's;
  3. the same with pytest-xdist (-n 2): each worker its own summary;
  4. gpuguard report groups the findings of those summaries by test;
and first, on a small suite of their own (suite_in()):
  5. no --gpuguard-opt ever becomes the program: a stray word, a boolean
     after a switch, "--", an unknown option, a missing value or a bad
     quote is refused before anything runs, and pytest fails;
  6. with --gpuguard in the ini's addopts and a shim that does not load,
     pytest runs again once, then fails saying why (no exec loop);
  7. a test whose label the summary left out (labels_omitted) is told its
     findings could not be attributed (the plugin on a summary of its own);
  8. node ids of any bytes find their own labels (the same).
Prints one line per check; exits 1 at the first that fails.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = "test_numba_arrays.py"
PLANTED = {SUITE + "::test_overrun_bytes": "8 bytes changed at offsets 0..7 past the end",
           SUITE + "::test_overrun_floats": "4 bytes changed at offsets 0..3 past the end"}
ALL = 7


def fail(why, output=""):
    print(f"check_plugin: FAIL: {why}")
    if output:
        print(output[-6000:])
    sys.exit(1)


def pytest_run(args, junit):
    """pytest on the suite, from this directory; (status, output, cases)
    where cases maps each node id to (outcome, message, properties)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           f"--junitxml={junit}"] + args + [SUITE]
    start = time.monotonic()
    r = subprocess.run(cmd, cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=600)
    took = time.monotonic() - start
    if not os.path.exists(junit):
        fail(f"no JUnit XML from {' '.join(cmd)}", r.stdout)
    cases = {}
    for tc in ET.parse(junit).iter("testcase"):
        node = SUITE + "::" + tc.get("name")
        bad = [c for c in tc if c.tag in ("failure", "error")]
        outcome = bad[0].tag if bad else "passed"
        message = "\n".join((c.get("message") or "") + "\n" + (c.text or "") for c in bad)
        props = [(p.get("name"), p.get("value")) for p in tc.iter("property")]
        cases[node] = (outcome, message, props)
    return r.returncode, r.stdout, cases, took


def check_attribution(cases, output, what):
    if len(cases) != ALL:
        fail(f"{what}: {len(cases)} test cases, not {ALL}", output)
    for node, (outcome, message, props) in sorted(cases.items()):
        if node in PLANTED:
            if outcome != "error" or "failed on teardown" not in message:
                fail(f"{what}: {node} did not fail in teardown ({outcome})", output)
            for want in ("gpuguard found 1 error in this test", "] ERROR: red zone violation",
                         PLANTED[node], "] ERROR:   allocation stack:", "] ERROR:     #0 "):
                if want not in message:
                    fail(f"{what}: {node}'s failure lacks '{want}':\n{message}", output)
            names = [n for n, _ in props]
            if ("gpuguard_errors", "1") not in props or names.count("gpuguard") < 3:
                fail(f"{what}: {node}'s JUnit properties: {props}", output)
            lines = [v for n, v in props if n == "gpuguard"]
            if not any(PLANTED[node] in v for v in lines) or not all(v in message for v in lines):
                fail(f"{what}: {node}'s properties are not its ERROR lines: {lines}", output)
        elif outcome != "passed" or props:
            fail(f"{what}: {node} is {outcome} with properties {props}:\n{message}", output)


def summaries_of(folder):
    out = []
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        with open(path) as f:
            out.append((path, json.load(f)))
    return out


def suite_in(folder, files):
    """A small suite of its own in @folder: @files maps names to text. Its
    conftest.py counts the pytest processes that start on it."""
    os.makedirs(folder)
    files = dict(files)
    files["conftest.py"] = ("import os\n"
                            "with open(os.path.join(os.path.dirname(__file__), 'starts'), 'a') as f:\n"
                            "    f.write(f'{os.getpid()}\\n')\n")
    for name, text in files.items():
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)
    return folder


def small_run(folder, args, timeout=120):
    """pytest in @folder: (status, output, processes started)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"] + args
    try:
        r = subprocess.run(cmd, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        fail(f"{' '.join(cmd)} in {folder} did not end in {timeout} s", str(e.output or ""))
    starts_file = os.path.join(folder, "starts")
    starts = 0
    if os.path.exists(starts_file):
        with open(starts_file) as f:
            starts = len(f.read().split())
        os.unlink(starts_file)
    return r.returncode, r.stdout, starts


FAILING = {"test_failing.py": "def test_fails():\n    assert False, 'THE SUITE RAN'\n"}


def check_options_never_become_the_program(work, command, args):
    folder = suite_in(os.path.join(work, "opts"), FAILING)
    base = args + ["--gpuguard", f"--gpuguard-command={command}"]
    refused = {
        "--check-launches true": "--check-launches takes no value, and \"true\" is no option",
        "--leak-check yes": "--leak-check takes no value, and \"yes\" is no option",
        "--redzone 128 true": "\"true\" is no option",
        "true": "\"true\" is no option",
        "/bin/true --redzone 64": "\"/bin/true\" is no option",
        '""': "\"\" is no option",
        "--": "'--' is no gpuguard option",
        "-- /bin/true": "'--' is no gpuguard option",
        "--redzone 64 --": "'--' is no gpuguard option",
        "--bogus": "unknown option '--bogus'",
        "--json": "--json needs a value, and \"--\" is the end of them",
        "--log": "--log needs a value, and \"--\" is the end of them",
        "--log --check-launches": "--log needs a value, and \"--check-launches\" is one of",
        "--redzone lots": "--redzone: \"lots\" is not a valid value",
        "--check-launches=maybe": "--check-launches: \"maybe\" is not a valid value (expected",
        "--redzone '64": "cannot split it as a shell would",
    }
    for opt, why in refused.items():
        status, output, starts = small_run(folder, base + [f"--gpuguard-opt={opt}"])
        if status == 0 or "THE SUITE RAN" in output or why not in output or starts != 1:
            fail(f"--gpuguard-opt={opt!r}: status {status}, {starts} pytest starts, "
                 f"wanted a refusal saying '{why}' before anything ran", output)
    # Twice: one bad word in the second of two.
    status, output, starts = small_run(folder, base + ["--gpuguard-opt=--redzone 64",
                                                       "--gpuguard-opt=--check-launches 1"])
    if status == 0 or "THE SUITE RAN" in output or starts != 1:
        fail(f"two --gpuguard-opt, the second bad: status {status}", output)
    for opt in ("--check-launches=true", "", "--redzone 128 --check-launches",
                "--no-check-on-free=false --leak-check"):
        status, output, starts = small_run(folder, base + [f"--gpuguard-opt={opt}"])
        if status != 1 or "THE SUITE RAN" not in output or starts != 2:
            fail(f"--gpuguard-opt={opt!r}: status {status}, {starts} pytest starts, "
                 "wanted the suite run under gpuguard and failed", output)
    print(f"check_plugin: no --gpuguard-opt becomes the program: {len(refused) + 1} refused "
          "before anything ran, pytest failed; 4 good ones ran the suite")


def check_the_rerun_runs_once(work, command, args):
    bad = os.path.join(work, "not-a-library.so")
    with open(bad, "w") as f:
        f.write("not an ELF file\n")
    libm = "/lib/x86_64-linux-gnu/libm.so.6"
    shims = {bad: "the loader refuses it", libm: "is not gpuguard's shim", work: "the loader refuses it"}
    n = 0
    for shim, why in shims.items():
        addopts = f"--gpuguard --gpuguard-command={command} --gpuguard-opt='--shim {shim}'"
        inis = {"pytest.ini": f"[pytest]\naddopts = {addopts}\n",
                "pyproject.toml": f"[tool.pytest.ini_options]\naddopts = \"{addopts}\"\n"}
        for ini, text in inis.items():
            n += 1
            folder = suite_in(os.path.join(work, f"ini{n}"), dict(FAILING, **{ini: text}))
            status, output, starts = small_run(folder, args, timeout=60)
            if status in (0, 1) or "THE SUITE RAN" in output or starts != 2 or \
                    "gpuguard's shim is not loaded in it" not in output or why not in output:
                fail(f"--gpuguard in {ini}'s addopts, --shim {shim}: status {status}, "
                     f"{starts} pytest starts, wanted 2 and a failure saying '{why}'", output)
    print(f"check_plugin: --gpuguard in addopts with a shim that does not load: pytest ran "
          f"again once and failed saying why ({n} cases)")


class FakeConfig:
    def __init__(self, **options):
        self.options = options

    def getoption(self, name):
        return self.options[name]


def check_a_left_out_label_is_not_clean(work, command, args):
    from gpuguard import pytest_plugin

    path = os.path.join(work, "left-out.json")
    with open(path, "w") as f:
        json.dump({"labels": [{"label": "t.py::kept", "boundary": 1, "errors": 1,
                               "lines_dropped": 0, "lines": ["gpuguard[1] ERROR: kept"]}],
                   "labels_omitted": 3}, f)
    os.environ["GPUGUARD_SUMMARY_JSON"] = path
    try:
        plugin = pytest_plugin._Plugin(FakeConfig(gpuguard_findings="fail"), lambda label: 1)
        kept, left_out = plugin.run("t.py::kept"), plugin.run("t.py::left_out")
    finally:
        del os.environ["GPUGUARD_SUMMARY_JSON"]
    if kept != (1, ["gpuguard[1] ERROR: kept"]):
        fail(f"a kept label's lines: {kept}")
    if left_out[0] != 1 or len(left_out[1]) != 1 or \
            "could not attribute this test's findings" not in left_out[1][0] or \
            "one of 3 (labels_omitted)" not in left_out[1][0]:
        fail(f"a label the summary left out: {left_out}")
    print("check_plugin: a test whose label the summary left out is told its findings could "
          "not be attributed")


def check_labels_match_whatever_their_bytes(work, command, args):
    """Node ids as pytest makes them (a file name that is no UTF-8 gives
    surrogateescape characters) against labels as the shim writes them
    (bytes that are no UTF-8 as \\udcXX): each finds its own lines."""
    from gpuguard import pytest_plugin

    ids = ["t\udcff\udce9.py::a", 'q.py::a"b\\c\x01\x7f', "s.py::\ud800x",
           "u.py::caf\u00e9", "n.py::a\x00b", "t\udcc3\udca9.py::x"]
    sent = []
    plugin = pytest_plugin._Plugin(FakeConfig(gpuguard_findings="fail"),
                                   lambda label: sent.append(label) or 1)
    rows = []
    for k, node in enumerate(ids):
        raw = pytest_plugin._label_bytes(node)
        # As the shim writes a label: valid UTF-8 as it is, each other byte
        # as \udcXX (gg_text_json_escape_bytes), then JSON's escapes.
        text = raw.decode("utf-8", "surrogateescape")
        rows.append('{"label": %s, "boundary": %d, "errors": 1, "lines_dropped": 0, '
                    '"lines": ["line %d"]}' % (json.dumps(text), k + 1, k))
    path = os.path.join(work, "bytes.json")
    with open(path, "w") as f:
        f.write('{"labels": [%s], "labels_omitted": 0}' % ", ".join(rows))
    os.environ["GPUGUARD_SUMMARY_JSON"] = path
    try:
        for k, node in enumerate(ids):
            got = plugin.run(node)
            if got != (1, [f"line {k}"]):
                fail(f"node id {node!r}: {got}, not its own line {k}")
    finally:
        del os.environ["GPUGUARD_SUMMARY_JSON"]
    if sent[0] != b"t\xff\xe9.py::a" or sent[4] != b"n.py::a\\x00b":
        fail(f"the labels given to the shim: {sent}")
    print(f"check_plugin: {len(ids)} node ids of any bytes each find their own label")


def main():
    args = sys.argv[1:]
    command = None
    modes = ["plain", "xdist"]
    while args and args[0] in ("--command", "--xdist-only", "--no-xdist"):
        if args[0] == "--command":
            command = os.path.abspath(args[1])
            args = args[2:]
        else:
            modes = ["xdist"] if args[0] == "--xdist-only" else ["plain"]
            args = args[1:]
    if command is None:
        import gpuguard
        command = gpuguard.command_path()
    work = tempfile.mkdtemp(prefix="gpuguard-check-plugin-")
    check_options_never_become_the_program(work, command, args)
    check_the_rerun_runs_once(work, command, args)
    check_a_left_out_label_is_not_clean(work, command, args)
    check_labels_match_whatever_their_bytes(work, command, args)

    status, output, cases, took = pytest_run(args, os.path.join(work, "inert.xml"))
    if status != 0 or len(cases) != ALL or any(c[0] != "passed" or c[2] for c in cases.values()):
        fail(f"without --gpuguard: status {status}, {cases}", output)
    print(f"check_plugin: without --gpuguard, the plugin is inert: {ALL} passed ({took:.1f} s)")

    for mode in modes:
        folder = os.path.join(work, mode)
        os.mkdir(folder)
        extra = ["--gpuguard", f"--gpuguard-command={command}",
                 f"--gpuguard-opt=--json {folder}/summary.%p.json"]
        if mode == "xdist":
            extra += ["-n", "2"]
        status, output, cases, took = pytest_run(args + extra, os.path.join(work, mode + ".xml"))
        if status != 1:
            fail(f"--gpuguard ({mode}): status {status}, not 1", output)
        check_attribution(cases, output, f"--gpuguard ({mode})")
        summaries = summaries_of(folder)
        labels = [l["label"] for _, j in summaries for l in j.get("labels", [])]
        # Node ids, relative to pytest's rootdir.
        if len(labels) != len(PLANTED) or \
                {p for p in PLANTED if any(l.endswith(p) for l in labels)} != set(PLANTED):
            fail(f"--gpuguard ({mode}): the summaries' labels are {labels}", output)
        # The forked child's set past its allocation: a summary of its own,
        # with its finding and no label.
        children = [j for _, j in summaries if j["errors"] and not j.get("labels")]
        if not any(v.get("kind") == "api_overrun" for j in children for v in j["violations"]):
            fail(f"--gpuguard ({mode}): no summary of the forked child's own finding", output)
        processes = [j for _, j in summaries if j.get("labels") or not j["errors"]]
        if mode == "xdist" and len(processes) < 2:
            fail(f"--gpuguard -n 2: {len(processes)} worker summaries", output)
        print(f"check_plugin: --gpuguard{' -n 2' if mode == 'xdist' else ''}: exactly the two "
              f"planted tests fail, in teardown, with their allocation stacks; "
              f"{len(summaries)} summaries ({took:.1f} s)")

        # gpuguard report: the findings grouped by test.
        r = subprocess.run([command, "report"] + [p for p, _ in summaries],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for node in PLANTED:
            if node not in r.stdout:
                fail(f"gpuguard report ({mode}) does not name {node}", r.stdout)
        print(f"check_plugin: gpuguard report ({mode}) names each planted test")


if __name__ == "__main__":
    main()
