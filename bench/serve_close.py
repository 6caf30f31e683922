#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""session/close of N idle jobs (`sleep 600`) to every tree verified gone,
against the raw floor of the same run: N `sleep 600`, each in a cgroup leaf
of its own, a write to each leaf's cgroup.kill, until every leaf says
populated 0 and every sleep is reaped (no pmon). Beside it, the floor of a
graceful stop: the same, but each leaf's cgroup.procs read and every process
listed sent SIGTERM and SIGCONT, as a stop begins. With a second binary, the
two services take turns in every round (A, B, raw, graceful), and the table
gives B/A pair by pair, and the CPU each service spent on the close (its own
threads, from /proc/PID/task/*/schedstat). No asserts.

With --confine subreaper each job runs under a pmon of its own (as in a
container with neither cgroup2 nor PID namespaces); the raw floor stays
the cgroup one.

usage: serve_close.py PMON [PMON_B] [--jobs N] [--rounds R] [--confine B]
"""
import argparse, functools, json, os, statistics, tempfile, time

from serve_common import Client, raw_cgroup_kill, start_service

print = functools.partial(print, flush=True)

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("pmon")
ap.add_argument("pmon_b", nargs="?")
ap.add_argument("--jobs", type=int, default=1000)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--confine", default="cgroup", help="the services' backend (cgroup, pidns, subreaper, pgroup)")
a = ap.parse_args()


cpu = {a.pmon: [], a.pmon_b: []}


def cpu_ms(pid):
    """The time process pid's threads have run, in ms."""
    d = "/proc/%d/task" % pid
    return sum(int(open("%s/%s/schedstat" % (d, t)).read().split()[0]) for t in os.listdir(d)) / 1e6


def close_ms(pmon, jobs):
    with tempfile.TemporaryDirectory() as d:
        p, path = start_service(pmon, d, "--confine", a.confine, "--max-jobs", str(max(jobs, 1024)))
        c = Client(path)
        for _ in range(jobs):
            c.call("terminal/create", {"command": "sleep", "args": ["600"], "sessionId": "s"})
        time.sleep(0.5)
        cpu0 = cpu_ms(p.pid)
        t0 = time.monotonic()
        c.call("session/close", {"sessionId": "s"})
        while len(c.exited) < jobs:
            c.note(json.loads(c.f.readline()))
        ms = (time.monotonic() - t0) * 1000
        cpu[pmon].append(cpu_ms(p.pid) - cpu0)
        bad = sum(1 for e in c.exited.values() if not e["cleanupVerified"])
        if bad:
            raise RuntimeError("%d of %d jobs not verified gone" % (bad, jobs))
        p.terminate()
        p.wait()
        return ms


names = ["A"] + (["B"] if a.pmon_b else [])
bins = {"A": a.pmon, "B": a.pmon_b}
rows = []
print("load average before: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
print("A = %s%s" % (a.pmon, "; B = %s" % a.pmon_b if a.pmon_b else ""))
print("%-6s %8s %8s %8s %9s %7s %7s %7s %10s" % (
    "round", "A ms", "B ms", "raw ms", "grace ms", "A/raw", "B/raw", "B/A", "grace/raw"))
for r in range(a.rounds):
    got = {n: close_ms(bins[n], a.jobs) for n in names}
    raw = raw_cgroup_kill(a.jobs)
    grace = raw_cgroup_kill(a.jobs, graceful=True)
    rows.append((got, raw, grace))
    b = got.get("B")
    print("%-6d %8.0f %8s %8.0f %9.0f %7.2f %7s %7s %10.2f" % (
        r + 1, got["A"], "%.0f" % b if b else "-", raw, grace, got["A"] / raw,
        "%.2f" % (b / raw) if b else "-", "%.2f" % (b / got["A"]) if b else "-", grace / raw))


def med(f):
    return statistics.median(f(g, raw, grace) for g, raw, grace in rows)


b = a.pmon_b is not None
print("%-6s %8.0f %8s %8.0f %9.0f %7.2f %7s %7s %10.2f" % (
    "median", med(lambda g, r, q: g["A"]), "%.0f" % med(lambda g, r, q: g["B"]) if b else "-",
    med(lambda g, r, q: r), med(lambda g, r, q: q), med(lambda g, r, q: g["A"] / r),
    "%.2f" % med(lambda g, r, q: g["B"] / r) if b else "-",
    "%.2f" % med(lambda g, r, q: g["B"] / g["A"]) if b else "-", med(lambda g, r, q: q / r)))
print("the service's CPU for the close, median ms: A %.1f%s" % (
    statistics.median(cpu[a.pmon]), "; B %.1f" % statistics.median(cpu[a.pmon_b]) if b else ""))
print("load average after: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
print("(%d jobs a round, --confine %s; the ratios are the figures to quote)" % (a.jobs, a.confine))
