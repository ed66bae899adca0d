#!/usr/bin/env python3
"""Metrics as a Prometheus fleet reads them: Debian's prometheus-node-exporter,
its textfile collector on a temporary directory, serves the metrics files of
two clients run under gpuguard (one that overruns a buffer, one clean); the
scrape holds both processes' series, told apart by their pid and named by
their exe, with no collector error; and the alert rules
(docs/prometheus/gpuguard.rules.yml), fed what was scraped, fire for the
client that overran and for no other.

    node-exporter.py GPUGUARD APP FAKE_DIR PTX RULES

A missing node exporter or promtool is a failure (scripts/deps.sh installs
them), never a skip.
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

EXPORTER = "prometheus-node-exporter"
# Loopback only: no proxy from the environment.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fail(msg):
    print("node-exporter: " + msg, file=sys.stderr)
    sys.exit(1)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_exporter(textfile_dir, log):
    """The exporter on a free loopback port, answering: (process, url). A port
    taken between the probe and its start is tried again, on another port."""
    for _ in range(5):
        port = free_port()
        proc = subprocess.Popen(
            [shutil.which(EXPORTER), "--web.listen-address=127.0.0.1:%d" % port,
             "--collector.disable-defaults", "--collector.textfile",
             "--collector.textfile.directory=" + textfile_dir],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        url = "http://127.0.0.1:%d/metrics" % port
        deadline = time.monotonic() + 60  # a bound on a hang, not a timing check
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with OPENER.open(url, timeout=5) as r:
                    if r.status == 200:
                        return proc, url
            except OSError:
                time.sleep(0.1)
        if proc.poll() is None:
            proc.terminate()
            proc.wait()
            fail("%s did not answer at %s within 60 s" % (EXPORTER, url))
    fail("%s could not listen on a free port (5 tries)" % EXPORTER)


def main():
    gpuguard, app, fake_dir, ptx, rules = sys.argv[1:6]
    for tool in (EXPORTER, "promtool"):
        if not shutil.which(tool):
            fail("%s not found: install prometheus-node-exporter and prometheus "
                 "(scripts/deps.sh does it)" % tool)
    tmp = tempfile.mkdtemp(prefix="gg-node-exporter-")
    exporter = None
    try:
        textfiles = os.path.join(tmp, "textfile")
        os.mkdir(textfiles)
        env = dict(os.environ, LD_LIBRARY_PATH=fake_dir, GG_TEST_PTX=ptx)
        for k in list(env):
            if k.startswith("GPUGUARD_") or k == "LD_PRELOAD":
                del env[k]
        pids = {}
        for name, steps in (("overran", ["alloc:64", "overrun:0:2", "free:0"]),
                            ("clean", ["alloc:64", "free:0"])):
            # gpuguard execs the program: the pid is the client's.
            p = subprocess.Popen([gpuguard, "--redzone", "16", "--metrics",
                                  os.path.join(textfiles, "gpuguard.%p.prom"), "--", app] + steps,
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            out, err = p.communicate()
            if p.returncode != 0:
                fail("%s client: status %d: %s" % (name, p.returncode, err.decode()))
            pids[name] = str(p.pid)
        files = sorted(os.listdir(textfiles))
        want = sorted("gpuguard.%s.prom" % pid for pid in pids.values())
        if files != want:
            fail("the textfile directory holds %s, not %s" % (files, want))
        for f in files:
            r = subprocess.run(["promtool", "check", "metrics"], stdin=open(os.path.join(textfiles, f)),
                               capture_output=True, text=True)
            if r.returncode:
                fail("promtool check metrics %s: %s%s" % (f, r.stdout, r.stderr))

        with open(os.path.join(tmp, "exporter.log"), "w") as log:
            exporter, url = start_exporter(textfiles, log)
            with OPENER.open(url, timeout=30) as r:
                scrape = r.read().decode()
        samples = {}
        for line in scrape.splitlines():
            m = re.fullmatch(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)', line)
            if m:
                samples[m[1] + (m[2] or "")] = m[3]
        log_text = open(os.path.join(tmp, "exporter.log")).read()

        def value(key):
            if key not in samples:
                fail("the scrape has no %s:\n%s\nexporter log:\n%s" % (key, scrape, log_text))
            return float(samples[key])

        if value("node_textfile_scrape_error") != 0:
            fail("node_textfile_scrape_error is not 0: the collector refused a file:\n" + log_text)
        if value('node_scrape_collector_success{collector="textfile"}') != 1:
            fail("the textfile collector failed:\n" + log_text)
        for f in files:
            value('node_textfile_mtime_seconds{file="%s"}' % os.path.join(textfiles, f))
        # Both processes' series, each its own, with the right figures.
        for name, violations in (("overran", 1), ("clean", 0)):
            labels = '{exe="app-redzone",pid="%s"}' % pids[name]
            if value("gpuguard_redzone_violations_total" + labels) != violations:
                fail("%s: gpuguard_redzone_violations_total%s is not %d" % (name, labels, violations))
            if value("gpuguard_allocations_total" + labels) != 1:
                fail("%s: gpuguard_allocations_total%s is not 1" % (name, labels))
        ours = [k for k in samples if k.startswith("gpuguard_")]
        by_pid = {pid: [k for k in ours if 'pid="%s"' % pid in k] for pid in pids.values()}
        if len(by_pid[pids["overran"]]) != len(by_pid[pids["clean"]]) or \
                len(ours) != 2 * len(by_pid[pids["clean"]]):
            fail("the two processes' series are not each their own: %s" % by_pid)

        # The rules, fed the scraped series (each held for a few minutes, as
        # the scrape would see a file that no longer changes): the violation
        # alert fires for the client that overran, and nothing else fires.
        shutil.copy(rules, os.path.join(tmp, "gpuguard.rules.yml"))
        with open(os.path.join(tmp, "scraped.test.yml"), "w") as t:
            t.write("rule_files:\n  - gpuguard.rules.yml\nevaluation_interval: 1m\ntests:\n"
                    "  - interval: 1m\n    input_series:\n")
            for k in sorted(ours):
                series = k.replace("{", '{instance="node",job="node",', 1)
                t.write("      - series: '%s'\n        values: '%s %s %s'\n" %
                        (series, samples[k], samples[k], samples[k]))
            t.write("    promql_expr_test:\n"
                    "      - expr: ALERTS{alertstate=\"firing\"}\n        eval_time: 2m\n"
                    "        exp_samples:\n"
                    "          - labels: 'ALERTS{alertname=\"GpuguardViolation\",alertstate=\"firing\","
                    "exe=\"app-redzone\",instance=\"node\",job=\"node\",pid=\"%s\","
                    "severity=\"critical\"}'\n            value: 1\n" % pids["overran"])
        r = subprocess.run(["promtool", "test", "rules", "scraped.test.yml"], cwd=tmp,
                           capture_output=True, text=True)
        if r.returncode:
            fail("the alert rules on the scraped series: %s%s" % (r.stdout, r.stderr))
        print("node exporter served %d gpuguard series of pids %s and %s; the rules fired "
              "GpuguardViolation for pid %s only" % (len(ours), pids["overran"], pids["clean"],
                                                     pids["overran"]))
    finally:
        if exporter is not None and exporter.poll() is None:
            exporter.terminate()
            exporter.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
