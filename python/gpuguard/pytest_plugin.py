"""gpuguard's pytest plugin (entry point pytest11), test by test.

Inert unless the shim is loaded in this process (LD_PRELOAD, or the gpuguard
command) or `--gpuguard` is given: then pytest runs again under the gpuguard
command, with the same arguments and environment, gpuguard's own options
taken from `--gpuguard-opt`:

    pytest --gpuguard --gpuguard-opt='--redzone 128 --check-launches' tests/

With the shim loaded, a boundary labelled with the test's node id runs after
the test's teardown (gpuguard_boundary, the shim's control API). What it
found belongs to that test: the test fails in teardown with gpuguard's ERROR
lines as its message (`--gpuguard-findings=fail`, the default; `warn` makes
them a warning), and its JUnit test case carries them as properties
(`gpuguard_errors`, then one `gpuguard` property per line). Under
pytest-xdist each worker is a process of its own, with its own summary.
"""
import ctypes
import json
import os
import shlex
import sys
import tempfile
import warnings

import pytest

# The plugin's own options: --gpuguard-findings is the re-run's too.
_RERUN_ONLY = ("--gpuguard", "--gpuguard-opt", "--gpuguard-command")


class GpuguardWarning(UserWarning):
    """gpuguard's findings in a test, under --gpuguard-findings=warn."""


def pytest_addoption(parser):
    group = parser.getgroup("gpuguard", "gpuguard (CUDA red zones and kernel-lookup audit)")
    group.addoption("--gpuguard", action="store_true", default=False,
                    help="run the tests under gpuguard: pytest runs again under the "
                         "gpuguard command, with a boundary after each test")
    group.addoption("--gpuguard-opt", action="append", default=[], metavar="OPTIONS",
                    help="gpuguard command options for --gpuguard, split as a shell "
                         "would, e.g. --gpuguard-opt='--redzone 128 --check-launches' "
                         "(may be repeated)")
    group.addoption("--gpuguard-findings", choices=("fail", "warn"), default="fail",
                    help="what a test's findings do: fail it in teardown (default), "
                         "or warn")
    group.addoption("--gpuguard-command", default=None, metavar="PATH",
                    help="the gpuguard command for --gpuguard (default: the one "
                         "installed with this package)")


def _control():
    """The shim's control API when the shim is loaded here, else None."""
    try:
        process = ctypes.CDLL(None)
        boundary = process.gpuguard_boundary
        version = process.gpuguard_version
    except (OSError, AttributeError):
        return None
    boundary.argtypes = [ctypes.c_char_p]
    boundary.restype = ctypes.c_int
    version.argtypes = []
    version.restype = ctypes.c_char_p
    return boundary


def _strip_rerun_options(args):
    """The arguments without the options that ask for the re-run."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in _RERUN_ONLY:
            skip = name != "--gpuguard" and "=" not in arg
            continue
        out.append(arg)
    return out


def _pytest_argv():
    """How this pytest was started: `python -m pytest` or a script."""
    main = sys.argv[0] if sys.argv else ""
    if not main or os.path.basename(main) == "__main__.py" or not os.path.exists(main):
        return [sys.executable, "-m", "pytest"]
    return [sys.executable, main]


def _gpuguard_command(config):
    path = config.getoption("gpuguard_command")
    if path:
        return path
    from . import command_path
    return command_path()


# In the environment of the pytest that _rerun() runs again: its pid (the
# same process after both execs), so that it knows it is the re-run, and a
# pytest it starts in turn (another pid) does not take itself for one.
_RERUN_MARKER = "_GPUGUARD_PYTEST_RERUN"


def _options(config):
    """The words of --gpuguard-opt, split as a shell would; every one must be
    an option of the command or an option's value (the command checks that,
    under --strict-options), and "--" is refused here: after it comes the
    program, which is pytest alone."""
    opts = []
    for text in config.getoption("gpuguard_opt"):
        # argparse takes a value of exactly "--" out, and hands a list.
        words = ["--"] if not isinstance(text, str) else None
        try:
            words = words or shlex.split(text)
        except ValueError as e:
            raise pytest.UsageError(
                f"--gpuguard-opt={text!r}: cannot split it as a shell would: {e}") from None
        if "--" in words:
            raise pytest.UsageError(
                f"--gpuguard-opt={text if isinstance(text, str) else '--'!r}: '--' is no "
                "gpuguard option: the program after it is pytest itself (give gpuguard "
                "options only, e.g. --gpuguard-opt='--redzone 128 --check-launches')")
        opts += words
    return opts


def _rerun(config):
    """pytest again under the gpuguard command, in this process's place."""
    opts = _options(config)
    names = {o.split("=", 1)[0] for o in opts}
    # The summary a test's lines come from, one per process (%p: each
    # pytest-xdist worker, each forked child, its own). First: an option of
    # the user's that lacks its value is then refused, not given ours.
    ours = ["--strict-options"]
    if "--json" not in names and "GPUGUARD_SUMMARY_JSON" not in os.environ:
        where = tempfile.mkdtemp(prefix="gpuguard-pytest-")
        ours += ["--json", os.path.join(where, "summary.%p.json")]
    args = _strip_rerun_options(list(config.invocation_params.args))
    argv = [_gpuguard_command(config)] + ours + opts + ["--"] + _pytest_argv() + args
    # pytest's capture holds stdout and stderr by now: given back first, so
    # the re-run writes where this run would have.
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        capman.stop_global_capturing()
    sys.stdout.flush()
    sys.stderr.flush()
    os.chdir(str(config.invocation_params.dir))
    os.environ[_RERUN_MARKER] = str(os.getpid())
    try:
        os.execv(argv[0], argv)
    except OSError as e:
        del os.environ[_RERUN_MARKER]
        raise pytest.UsageError(f"--gpuguard: cannot run {argv[0]}: {e.strerror}") from None


def _not_loaded_why():
    """Why the shim's control API is not in this process, as far as can be
    told after the fact: what LD_PRELOAD holds, and what the loader says of
    each entry now (its own words at start-up went to stderr)."""
    preload = os.environ.get("LD_PRELOAD", "")
    if not preload.strip():
        return "LD_PRELOAD is empty here (something between gpuguard and pytest cleared it)"
    said = []
    for entry in preload.replace(":", " ").split():
        try:
            lib = ctypes.CDLL(entry)
        except OSError as e:
            said.append(f"{entry}: the loader refuses it: {e}")
            continue
        if hasattr(lib, "gpuguard_boundary"):
            said.append(f"{entry}: loads now, but was not preloaded (a secure-execution "
                        "program ignores LD_PRELOAD)")
        else:
            said.append(f"{entry}: loads, but is not gpuguard's shim (no gpuguard_boundary)")
    return f"LD_PRELOAD={preload}: " + "; ".join(said)


def _label_bytes(text):
    """A label's bytes, the one encoding both ways: UTF-8, where a lone
    surrogate U+DC80..U+DCFF is the byte it stands for (surrogateescape: a
    file name that is no UTF-8 gives pytest such a node id, and the shim
    writes a label's bytes that are no UTF-8 so, docs/summary.schema.json),
    any other lone surrogate as surrogatepass writes it; a NUL, which a C
    string cannot hold, as pytest writes one in an id: \\x00."""
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = b"".join(bytes([ord(c) - 0xDC00]) if 0xDC80 <= ord(c) <= 0xDCFF
                        else c.encode("utf-8", "surrogatepass") for c in text)
    return data.replace(b"\0", b"\\x00")


class _Plugin:
    def __init__(self, config, boundary):
        self.config = config
        self.boundary = boundary
        self.findings = config.getoption("gpuguard_findings")

    def _summary_path(self):
        pattern = os.environ.get("GPUGUARD_SUMMARY_JSON")
        if not pattern:
            return None
        return pattern.replace("%p", str(os.getpid()))

    def _lines(self, label):
        """The ERROR lines of the last labelled boundary named @label, from
        this process's summary; None when there is no summary to read."""
        path = self._summary_path()
        if not path:
            return None
        try:
            with open(path) as f:
                summary = json.load(f)
        except (OSError, ValueError):
            return None
        want = _label_bytes(label)
        for entry in reversed(summary.get("labels", [])):
            if isinstance(entry.get("label"), str) and _label_bytes(entry["label"]) == want:
                lines = list(entry.get("lines", []))
                if entry.get("lines_dropped"):
                    lines.append(f"({entry['lines_dropped']} more ERROR lines in gpuguard's log)")
                return lines
        omitted = summary.get("labels_omitted", 0)
        if omitted:
            # The summary keeps so many labels: this test's was left out.
            return [f"(gpuguard could not attribute this test's findings: the summary keeps "
                    f"{len(summary.get('labels', []))} labels and left this test's out, one "
                    f"of {omitted} (labels_omitted); its ERROR lines are in gpuguard's log)"]
        return None

    def run(self, label):
        """A boundary labelled @label: (errors, lines); errors is -1 when
        the shim is not set up in this process (no driver call yet)."""
        found = self.boundary(_label_bytes(label))
        if found <= 0:
            return found, []
        lines = self._lines(label)
        if lines is None:
            lines = ["(gpuguard's ERROR lines are in its log: give it a summary, "
                     "--json or GPUGUARD_SUMMARY_JSON, to see them here)"]
        return found, lines

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session):
        # What the process found before the first test (imports, collection)
        # is no test's.
        found, lines = self.run("pytest collection")
        if found > 0:
            warnings.warn(GpuguardWarning(_message(found, "during collection", lines)))

    def _after(self, item, may_fail):
        found, lines = self.run(item.nodeid)
        if found <= 0:
            return
        item.user_properties.append(("gpuguard_errors", found))
        item.user_properties += [("gpuguard", line) for line in lines]
        text = _message(found, "in this test", lines)
        if self.findings == "warn" or not may_fail:
            warnings.warn(GpuguardWarning(text))
        else:
            pytest.fail(text, pytrace=False)

    # Outermost: the boundary runs after every fixture's teardown.
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item, nextitem):
        try:
            result = yield
        except BaseException:
            self._after(item, may_fail=False)  # the teardown's own error is the failure
            raise
        self._after(item, may_fail=True)
        return result


def _message(found, where, lines):
    head = f"gpuguard found {found} error{'s' if found != 1 else ''} {where}:"
    return "\n".join([head] + lines)


def pytest_configure(config):
    config.addinivalue_line("filterwarnings", "default::gpuguard.pytest_plugin.GpuguardWarning")
    boundary = _control()
    if boundary is None:
        if os.environ.get(_RERUN_MARKER) == str(os.getpid()):
            # This is the re-run, and the shim is still not here: run once
            # more and it would not be either (an exec loop).
            raise pytest.UsageError(
                "--gpuguard: pytest ran again under gpuguard, but gpuguard's shim is not "
                "loaded in it, so nothing would be checked: " + _not_loaded_why())
        if config.getoption("gpuguard"):
            _rerun(config)
        return
    config.pluginmanager.register(_Plugin(config, boundary), "gpuguard-boundaries")
