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
  4. gpuguard report groups the findings of those summaries by test.
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
