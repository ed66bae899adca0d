"""A peer's own test suite as a client: numba-cuda's driver tests.

numba-cuda ships its tests in its wheel (numba.cuda.tests); the driver tests,
numba.cuda.tests.cudadrv, are run here with pytest, over whatever
libcuda.so.1 the environment gives (the test suite points LD_LIBRARY_PATH at
the fake driver, and adds LD_PRELOAD=libgpuguard.so for the second run).
This script records the outcome of every test and compares two runs.

usage:
    PYTHON peer_suite.py run OUT.json [--timeout SECONDS] [--total SECONDS]
        run the suite; write {"tests": {test id: outcome}, ...} to OUT.json.
        Each test gets SECONDS (default 60): a test still running then ends
        its pytest process (faulthandler, with every thread's stack on
        stderr) and is recorded as "timeout"; a test whose process dies under
        it is "crash".  Either way the run goes on with the tests not yet
        run, in a new process.  --total (default 900) bounds the whole run:
        the tests not reached by then are "not run".
    PYTHON peer_suite.py compare PLAIN.json SHIM.json
        print the outcomes of both runs, the tests that do not pass without
        the shim (where the fake driver is not a faithful GPU), and every
        test whose outcome differs; exit 1 when one differs or a run is
        unusable (nothing collected, a timeout, a crash, tests not run).

Outcomes: pass, fail (the test's assertion or code failed), error (its
set-up or tear-down failed, or its module could not be collected), skip,
xfail, xpass, timeout, crash, not run.

It needs pytest and the test-only packages numba-cuda's suite imports
(filecheck, cffi): tests/clients/requirements.txt pins them.  numba-cuda's
own conftest.py (in its repository, not its wheel) only defines the
initialize_from_pytest_config fixture; the plugin below does the same.
"""
import faulthandler
import json
import os
import subprocess
import sys
import tempfile
import time
import types

SUITE = "numba.cuda.tests.cudadrv"
# Worst first: a test's outcome is the worst of its reports (set-up, call,
# tear-down, subtests).
SEVERITY = ["crash", "timeout", "error", "fail", "xpass", "xfail", "skip", "pass"]


def worse(a, b):
    if a is None:
        return b
    return a if SEVERITY.index(a) <= SEVERITY.index(b) else b


# ---- the child: one pytest process ------------------------------------------


def child(events_path, done_path, timeout, timeout_log_path, rootdir):
    import pytest

    class Recorder:
        """A pytest plugin: one JSON line per event in the events file, flushed
        at once, so a process that dies still leaves what it saw."""

        def __init__(self, events, done, timeout, timeout_log):
            self.events = events
            self.done = done
            self.timeout = timeout
            self.timeout_log = timeout_log

        def emit(self, **kv):
            self.events.write(json.dumps(kv) + "\n")
            self.events.flush()

        def pytest_collection_modifyitems(self, session, config, items):
            keep = [it for it in items if it.nodeid not in self.done]
            deselected = [it for it in items if it.nodeid in self.done]
            if deselected:
                config.hook.pytest_deselected(items=deselected)
            items[:] = keep
            self.emit(event="collected", ids=[it.nodeid for it in keep])

        def pytest_collectreport(self, report):
            if report.failed:
                self.emit(event="outcome", id=report.nodeid, outcome="error", when="collect")

        def pytest_runtest_logstart(self, nodeid, location):
            self.emit(event="start", id=nodeid)
            faulthandler.dump_traceback_later(self.timeout, exit=True, file=self.timeout_log)

        def pytest_runtest_logfinish(self, nodeid, location):
            faulthandler.cancel_dump_traceback_later()
            self.emit(event="finish", id=nodeid)

        def pytest_runtest_logreport(self, report):
            if hasattr(report, "wasxfail"):
                outcome = "xfail" if report.skipped else "xpass"
            elif report.skipped:
                outcome = "skip"
            elif report.failed:
                outcome = "fail" if report.when == "call" else "error"
            else:
                outcome = "pass"
            self.emit(event="outcome", id=report.nodeid, outcome=outcome, when=report.when)

    # numba-cuda's CUDATestCase uses this fixture (its conftest.py defines it).
    @pytest.fixture(scope="class")
    def initialize_from_pytest_config(request):
        request.cls._dump_failed_filechecks = False

    fixtures = types.ModuleType("gg_peer_fixtures")
    fixtures.initialize_from_pytest_config = initialize_from_pytest_config

    with open(done_path) as f:
        done = set(json.load(f))
    with open(events_path, "a") as events, open(timeout_log_path, "a") as tlog:
        rec = Recorder(events, done, timeout, tlog)
        args = ["-p", "no:cacheprovider", "-o", "consider_namespace_packages=true",
                "--rootdir", rootdir, "-q", "-rN", "--tb=line", "--pyargs", SUITE]
        return pytest.main(args, plugins=[rec, fixtures])


# ---- the parent: runs pytest until every test has an outcome ----------------


def read_events(path):
    collected, outcomes, started = None, {}, []
    finished = set()
    with open(path) as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue  # a line cut short by a process that died
            if e["event"] == "collected":
                collected = e["ids"]
            elif e["event"] == "start":
                started.append(e["id"])
            elif e["event"] == "finish":
                finished.add(e["id"])
            elif e["event"] == "outcome":
                outcomes[e["id"]] = worse(outcomes.get(e["id"]), e["outcome"])
    return collected, outcomes, [t for t in started if t not in finished]


def run(out_path, timeout, total):
    work = tempfile.mkdtemp(prefix="gg-peer-")
    results = {}
    order = []
    deadline = time.monotonic() + total
    procs = 0
    while True:
        procs += 1
        events = os.path.join(work, f"events.{procs}")
        done = os.path.join(work, f"done.{procs}")
        tlog = os.path.join(work, f"timeouts.{procs}")
        with open(done, "w") as f:
            json.dump(sorted(results), f)
        open(events, "w").close()
        open(tlog, "w").close()
        left = deadline - time.monotonic()
        status = None
        if left > 0:
            try:
                status = subprocess.run([sys.executable, __file__, "_child", events, done, str(timeout),
                                         tlog, work], timeout=left).returncode
            except subprocess.TimeoutExpired:
                status = "killed"
        collected, outcomes, unfinished = read_events(events)
        if collected is not None:
            order += [t for t in collected if t not in order]
        for t, o in outcomes.items():
            results[t] = o
            if t not in order:
                order.append(t)  # a module that failed to collect
        for t in unfinished:
            timed_out = os.path.getsize(tlog) > 0
            results[t] = "timeout" if timed_out else "crash"
            print(f"peer_suite: {t}: {results[t]} (pytest process {procs}, status {status})",
                  file=sys.stderr)
            with open(tlog) as f:
                sys.stderr.write(f.read())
        if status == "killed" or left <= 0:
            break
        if not unfinished:
            break  # the process ended on its own with no test in flight: all ran
        if procs >= 50:
            print("peer_suite: 50 pytest processes; giving up", file=sys.stderr)
            break
    for t in order:
        results.setdefault(t, "not run")
    with open(out_path, "w") as f:
        # pytest's own status of its last process: 0 all passed, 1 some did
        # not; anything else (a signal, an internal error) is a run to look at.
        json.dump({"suite": SUITE, "processes": procs, "status": status,
                   "tests": {t: results[t] for t in order}}, f, indent=1)
    counts = {}
    for o in results.values():
        counts[o] = counts.get(o, 0) + 1
    print("peer_suite:", len(results), "tests:", ", ".join(f"{n} {o}" for o, n in sorted(counts.items())))
    return 0 if results else 1


# ---- compare -------------------------------------------------------------------


def summary(tests):
    counts = {}
    for o in tests.values():
        counts[o] = counts.get(o, 0) + 1
    return ", ".join(f"{counts[o]} {o}" for o in SEVERITY + ["not run"] if o in counts)


def load_run(path):
    """A run's JSON, or None (said on stderr) when it is not one."""
    try:
        with open(path) as f:
            run = json.load(f)
        if isinstance(run, dict) and isinstance(run.get("tests"), dict):
            return run
        why = "no 'tests' object"
    except (OSError, ValueError) as e:
        why = str(e)
    print(f"peer_suite: {path} is not a run's outcomes: {why}", file=sys.stderr)
    return None


def compare(plain_path, shim_path):
    plain_run, shim_run = load_run(plain_path), load_run(shim_path)
    if plain_run is None or shim_run is None:
        return 2
    plain, shim = plain_run["tests"], shim_run["tests"]
    print(f"{SUITE}: {len(plain)} tests without the shim: {summary(plain)}")
    print(f"{SUITE}: {len(shim)} tests with the shim:    {summary(shim)}")
    notpass = [t for t, o in plain.items() if o in ("fail", "error", "crash", "timeout", "xpass")]
    print(f"not passing on the fake driver without the shim ({len(notpass)}):")
    for t in notpass:
        print(f"  {plain[t]:7} {t}")
    bad = 0
    for t in sorted(set(plain) | set(shim)):
        a, b = plain.get(t, "absent"), shim.get(t, "absent")
        if a != b:
            bad += 1
            print(f"DIFFERS: {t}: {a} without the shim, {b} with it")
    unusable = [t for t in plain if plain[t] in ("timeout", "crash", "not run")]
    unusable += [t for t in shim if shim[t] in ("timeout", "crash", "not run")]
    if not plain or not shim:
        print("a run collected no test")
        bad += 1
    for name, r in (("without", plain_run), ("with", shim_run)):
        if r.get("status") not in (0, 1):
            print(f"UNUSABLE: pytest's last process {name} the shim ended with status {r['status']}")
            bad += 1
    for t in unusable:
        print(f"UNUSABLE: {t} timed out, crashed or did not run")
    print(f"{bad} tests differ" if bad else "every test has the same outcome with and without the shim")
    return 1 if bad or unusable else 0


def main(argv):
    if len(argv) >= 7 and argv[1] == "_child":
        return child(argv[2], argv[3], float(argv[4]), argv[5], argv[6])
    if len(argv) >= 3 and argv[1] == "run":
        timeout, total, i = 60.0, 900.0, 3
        while i < len(argv):
            try:
                if argv[i] == "--timeout" and i + 1 < len(argv):
                    timeout = float(argv[i + 1])
                elif argv[i] == "--total" and i + 1 < len(argv):
                    total = float(argv[i + 1])
                else:
                    break
            except ValueError:
                break
            if not (timeout > 0 and total > 0):
                break
            i += 2
        else:
            return run(argv[2], timeout, total)
    if len(argv) == 4 and argv[1] == "compare":
        return compare(argv[2], argv[3])
    print("usage:" + __doc__.split("usage:", 1)[1].split("Outcomes:", 1)[0].rstrip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
