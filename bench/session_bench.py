#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What a session envelope costs, measured side by side in alternating
rounds (no asserts):

1. a call in a session: `pmon run --session S -- /bin/true` while another
   pmon holds the session S (as a harness's calls find it), against the same
   `pmon run -- /bin/true` in no session;
2. closing a session of N jobs (`sleep 600`): a `pmon serve` whose jobs are
   in an envelope session of its own, `session/close` of its N jobs until
   every one is verified gone, against the same service without an envelope
   and against the raw floor (N `sleep 600` in leaves of their own, a write
   to each cgroup.kill until every leaf is empty; no pmon).

ENVELOPE: the service's envelope flags (default --session-pids-max 0: a
session cgroup with no limit written, which any cgroup2 host can make; on a
host with controllers use e.g. --session-memory-max 8G).

usage: session_bench.py PMON [--calls N] [--jobs N] [--rounds R] [--envelope "FLAGS"]
"""
import argparse, functools, json, os, shlex, statistics, subprocess, tempfile, time

from serve_common import Client, raw_cgroup_kill, start_service

print = functools.partial(print, flush=True)

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("pmon")
ap.add_argument("--calls", type=int, default=200, help="calls of each kind per round")
ap.add_argument("--jobs", type=int, default=100)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--envelope", default="--session-pids-max 0")
a = ap.parse_args()
envelope = shlex.split(a.envelope)
devnull = subprocess.DEVNULL


def call_ms(argv):
    t0 = time.perf_counter()
    subprocess.run(argv, stdin=devnull, stdout=devnull, check=True)
    return (time.perf_counter() - t0) * 1000


def calls_round():
    """Medians of plain and in-session calls, taking turns one by one."""
    name = "bench-%d" % os.getpid()
    holder = subprocess.Popen([a.pmon, "run", "-q", "--session", name, *envelope, "--", "sleep", "600"],
                              stdin=devnull)
    try:
        # The holder's call runs once its leaf is in the session.
        root = None
        for line in open("/proc/self/mountinfo"):
            f = line.split()
            if f[f.index("-") + 1] == "cgroup2":
                root = f[4]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(
                d == "pmon-session-n-" + name for _, ds, _ in os.walk(root) for d in ds):
            time.sleep(0.01)
        plain, inside = [], []
        for _ in range(a.calls):
            plain.append(call_ms([a.pmon, "run", "-q", "--", "/bin/true"]))
            inside.append(call_ms([a.pmon, "run", "-q", "--session", name, "--", "/bin/true"]))
        return statistics.median(plain), statistics.median(inside)
    finally:
        holder.terminate()
        holder.wait()


def close_ms(extra):
    with tempfile.TemporaryDirectory() as d:
        p, path = start_service(a.pmon, d, "--confine", "cgroup", *extra)
        c = Client(path)
        for _ in range(a.jobs):
            c.call("terminal/create", {"command": "sleep", "args": ["600"], "sessionId": "s"})
        time.sleep(0.3)
        t0 = time.monotonic()
        c.call("session/close", {"sessionId": "s"})
        while len(c.exited) < a.jobs:
            c.note(json.loads(c.f.readline()))
        ms = (time.monotonic() - t0) * 1000
        bad = sum(1 for e in c.exited.values() if not e["cleanupVerified"])
        if bad:
            raise RuntimeError("%d of %d jobs not verified gone" % (bad, a.jobs))
        p.terminate()
        p.wait()
        return ms


print("load average before: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
print("pmon = %s; envelope: %s" % (a.pmon, " ".join(envelope)))
print()
print("1. pmon run -- /bin/true, %d calls of each kind a round (medians)" % a.calls)
print("%-6s %12s %12s %10s" % ("round", "plain ms", "session ms", "ratio"))
ratios = []
for r in range(a.rounds):
    plain, inside = calls_round()
    ratios.append(inside / plain)
    print("%-6d %12.2f %12.2f %10.3f" % (r + 1, plain, inside, inside / plain))
print("in a session / plain: %.3f-%.3f (median %.3f)" % (min(ratios), max(ratios), statistics.median(ratios)))
print()
print("2. session/close of %d jobs -> all verified gone" % a.jobs)
print("%-6s %10s %12s %10s %10s %12s" % ("round", "plain ms", "session ms", "raw ms", "plain/raw", "session/raw"))
s_raw = []
for r in range(a.rounds):
    plain = close_ms([])
    inside = close_ms(envelope)
    raw = raw_cgroup_kill(a.jobs)
    s_raw.append(inside / raw)
    print("%-6d %10.0f %12.0f %10.0f %10.2f %12.2f" % (r + 1, plain, inside, raw, plain / raw, inside / raw))
print("session close / raw: %.2f-%.2f (median %.2f)" % (min(s_raw), max(s_raw), statistics.median(s_raw)))
print("load average after: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
