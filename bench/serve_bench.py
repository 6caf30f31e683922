#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""pmon serve figures (no asserts): job throughput against `pmon run` per
call and against the Python package's pmon.run (when importable: run with
PYTHONPATH=BUILD/python), SIGKILL of the service to every job gone, and 1000
idle jobs (RSS, CPU while idle, session/close of all of them to every tree
verified gone, against 1000 `sleep 600` each in a cgroup leaf of its own
killed with raw writes to each leaf's cgroup.kill, in the same run).

usage: serve_bench.py PMON [N_CALLS]
"""
import functools, json, os, select, subprocess, sys, tempfile, time

from serve_common import Client, raw_cgroup_kill, start_service

try:
    import pmon as pmon_py
    if not hasattr(pmon_py, "run"):  # a directory named pmon, not the package
        pmon_py = None
except ImportError:
    pmon_py = None

print = functools.partial(print, flush=True)

PMON = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 200


def cpu_ticks(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def rss_kib(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])


with tempfile.TemporaryDirectory() as d:
    # 1. /bin/true through the socket against pmon run per call and the
    # Python package's pmon.run, in alternating batches (load hits all alike).
    p, path = start_service(PMON, d)
    c = Client(path)

    def serve_one():
        tid = c.call("terminal/create", {"command": "/bin/true"})["terminalId"]
        c.call("terminal/wait_for_exit", {"terminalId": tid})
        c.call("terminal/report", {"terminalId": tid})
        c.call("terminal/release", {"terminalId": tid})
        c.exited.pop(tid, None)

    def serve_notified():
        # The end from terminal/exited; report and release in one write.
        tid = c.call("terminal/create", {"command": "/bin/true"})["terminalId"]
        if not c.exit_of(tid)["cleanupVerified"]:
            raise RuntimeError("cleanup not verified")
        rep = c.send("terminal/report", {"terminalId": tid}, flush=False)
        rel = c.send("terminal/release", {"terminalId": tid})
        c.reply(rep)
        c.reply(rel)

    ways = [("serve", serve_one), ("notified", serve_notified),
            ("run", lambda: subprocess.run([PMON, "run", "-q", "--", "/bin/true"], check=True))]
    if pmon_py is not None:
        ways.append(("py", lambda: pmon_py.run(["/bin/true"])))
    spent = {name: 0.0 for name, _ in ways}
    batch = 20
    for _ in range(max(1, N // batch)):
        for name, fn in ways:
            t0 = time.monotonic()
            for _ in range(batch):
                fn()
            spent[name] += time.monotonic() - t0
    calls = max(1, N // batch) * batch
    rate = {name: calls / t for name, t in spent.items()}
    print("load average %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
    print("job /bin/true start->exit->report->release: %.0f calls/s; pmon run: %.0f calls/s; ratio %.2fx"
          % (rate["serve"], rate["run"], rate["serve"] / rate["run"]))
    print("the same, the end from terminal/exited, report+release in one write: %.0f calls/s; ratio %.2fx"
          % (rate["notified"], rate["notified"] / rate["run"]))
    if pmon_py is not None:
        print("Python pmon.run(['/bin/true']): %.0f calls/s; ratio serve/pmon.run %.2fx"
              % (rate["py"], rate["serve"] / rate["py"]))
    else:
        print("Python pmon.run: not importable (PYTHONPATH=BUILD/python)")

    # 2. 1000 idle jobs.
    jobs = 1000
    t0 = time.monotonic()
    for _ in range(jobs):
        c.call("terminal/create", {"command": "sleep", "args": ["600"], "sessionId": "s"})
    made = time.monotonic() - t0
    time.sleep(1)
    rss = rss_kib(p.pid)
    before = cpu_ticks(p.pid)
    time.sleep(10)
    idle_ms = (cpu_ticks(p.pid) - before) * 1000 / os.sysconf("SC_CLK_TCK")
    t0 = time.monotonic()
    c.call("session/close", {"sessionId": "s"})
    # Jobs that ended at once were announced before the answer came.
    while len(c.exited) < jobs:
        c.note(json.loads(c.f.readline()))
    gone = sum(1 for e in c.exited.values() if e["cleanupVerified"])
    if gone < jobs:
        raise RuntimeError("%d of %d jobs not verified gone" % (jobs - gone, jobs))
    close_ms = (time.monotonic() - t0) * 1000
    print("1000 sleep jobs: started in %.2f s; service RSS %d KiB; CPU over 10 s idle %.0f ms; "
          "session/close to all 1000 verified gone %.0f ms" % (made, rss, idle_ms, close_ms))
    p.terminate()
    p.wait()
    raw_ms = raw_cgroup_kill(jobs)
    if raw_ms is not None:
        print("1000 sleep 600, each in its own cgroup leaf, raw cgroup.kill of each, all populated 0 and reaped: "
              "%.0f ms; session/close / raw = %.2fx (load average %s)"
              % (raw_ms, close_ms / raw_ms, " ".join(open("/proc/loadavg").read().split()[:3])))

    # 3. SIGKILL of the service: every job gone (the cgroup guard).
    p, path = start_service(PMON, d, "--confine", "cgroup")
    c = Client(path)
    pids = []
    for _ in range(50):
        tid = c.call("terminal/create", {"command": "sleep", "args": ["600"], "keep": True})["terminalId"]
    for t in c.call("terminal/list", {})["terminals"]:
        pids.append(t["pid"])
    fds = [os.pidfd_open(x) for x in pids]
    t0 = time.monotonic()
    p.kill()
    p.wait()
    left = set(fds)
    while left:
        r, _, _ = select.select(list(left), [], [], 10)
        if not r:
            break
        left -= set(r)
    print("SIGKILL of the service -> 50 jobs gone: %.1f ms%s" % ((time.monotonic() - t0) * 1000,
                                                              "" if not left else " (%d left!)" % len(left)))
