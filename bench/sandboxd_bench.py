# SPDX-License-Identifier: Apache-2.0
"""pmon sandboxd's process service, measured from a real gRPC client
(python3-grpcio on the stubs generated from pmon's .proto):

1. Execute of /bin/true, one after the answer to the one before, against
   `pmon run -q -- /bin/true` per call and against the same job through
   `pmon serve` (create, wait_for_exit, release), in alternating batches;
   and Execute on a second daemon where each command runs under a pmon of
   its own (--confine subreaper, as in an unprivileged pod);
2. Start -> ExitEvent of /bin/true (median, p90);
3. 100 Start streams at once of `sleep 0.5`: all their exit events, wall time;
4. the daemon's RSS with 100 idle streams (`sleep 600`), per stream;
5. SIGTERM of the daemon with 100 trees (a `sleep 600` and a setsid sleep each)
   -> every tree verified gone and the daemon exited, against the raw
   `cgroup.kill` of 100 leaves (no pmon).

    PYTHONPATH=BUILD/generated/python python3 bench/sandboxd_bench.py BUILD/pmon [N]

Ratios from one run are the figures to quote (the machine is shared)."""
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from process.v1 import process_pb2 as pb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sandboxd_common import start_sandboxd  # noqa: E402
from serve_common import Client, raw_cgroup_kill, start_service  # noqa: E402

PMON = sys.argv[1] if len(sys.argv) > 1 else "build/pmon"
N = int(sys.argv[2]) if len(sys.argv) > 2 else 200


def rss_kib(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def load():
    return " ".join(open("/proc/loadavg").read().split()[:3])


print("load average before: %s" % load())
with tempfile.TemporaryDirectory() as d:
    p, ch, stub = start_sandboxd(PMON, d)
    sp, path = start_service(PMON, d)
    c = Client(path)
    true_cfg = pb.ProcessConfig(command=["/bin/true"])

    def execute():
        r = stub.Execute(pb.ExecuteRequest(config=true_cfg), timeout=30)
        assert r.exit_code == 0

    def serve():
        tid = c.call("terminal/create", {"command": "/bin/true"})["terminalId"]
        c.call("terminal/wait_for_exit", {"terminalId": tid})
        c.call("terminal/release", {"terminalId": tid})
        c.exited.pop(tid, None)

    def run():
        subprocess.run([PMON, "run", "-q", "--", "/bin/true"], check=True)

    # The same daemon where no cgroup or PID namespace is to be had (an
    # unprivileged pod): each command under a pmon of its own.
    op, och, ostub = start_sandboxd(PMON, d, "--confine", "subreaper", name="ws-own")

    def own_pmon():
        r = ostub.Execute(pb.ExecuteRequest(config=true_cfg), timeout=30)
        assert r.exit_code == 0

    ways = [("execute", execute), ("serve", serve), ("run", run), ("own", own_pmon)]
    spent = {n: 0.0 for n, _ in ways}
    batch = 20
    rounds = max(1, N // batch)
    for _ in range(rounds):
        for name, fn in ways:
            t0 = time.monotonic()
            for _ in range(batch):
                fn()
            spent[name] += time.monotonic() - t0
    rate = {n: rounds * batch / t for n, t in spent.items()}
    print("Execute /bin/true: %.0f calls/s; job service (create, wait, release): %.0f calls/s; pmon run: %.0f calls/s"
          % (rate["execute"], rate["serve"], rate["run"]))
    print("  Execute against the job service %.2fx, against pmon run %.2fx"
          % (rate["execute"] / rate["serve"], rate["execute"] / rate["run"]))
    print("Execute /bin/true, each command under a pmon of its own (--confine subreaper): %.0f calls/s, "
          "%.2fx Execute on the host's boundary" % (rate["own"], rate["own"] / rate["execute"]))
    op.terminate()
    op.wait()
    och.close()

    lat = []
    for _ in range(N):
        t0 = time.monotonic()
        for ev in stub.Start(pb.StartRequest(config=true_cfg)):
            pass
        lat.append((time.monotonic() - t0) * 1000)
    lat.sort()
    print("Start -> ExitEvent of /bin/true: median %.2f ms, p90 %.2f ms" % (statistics.median(lat), lat[len(lat) * 9 // 10]))

    def stream_to_end(cmd, out, i):
        for ev in stub.Start(pb.StartRequest(config=pb.ProcessConfig(command=cmd))):
            if ev.WhichOneof("event") == "exit":
                out[i] = ev.exit.exit_code

    codes = [None] * 100
    t0 = time.monotonic()
    ts = [threading.Thread(target=stream_to_end, args=(["sleep", "0.5"], codes, i)) for i in range(100)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print("100 Start streams of sleep 0.5 at once: every exit event in %.0f ms (%d of 100 exit 0)"
          % ((time.monotonic() - t0) * 1000, codes.count(0)))

    base = rss_kib(p.pid)
    streams = [stub.Start(pb.StartRequest(config=pb.ProcessConfig(command=["/bin/sh", "-c", "setsid sleep 600 & exec sleep 600"])))
               for _ in range(100)]
    for s in streams:
        next(s)
    time.sleep(1)
    idle = rss_kib(p.pid)
    print("100 idle streams: daemon RSS %d KiB (was %d): %.1f KiB a stream" % (idle, base, (idle - base) / 100))

    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    ends = [0]

    def finish(s):
        for ev in s:
            if ev.WhichOneof("event") == "exit":
                ends[0] += 1
    ts = [threading.Thread(target=finish, args=(s,)) for s in streams]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    rc = p.wait(120)
    term_ms = (time.monotonic() - t0) * 1000
    ch.close()
    raw_ms = raw_cgroup_kill(100)
    print("SIGTERM of the daemon with 100 trees: %d exit events, exit %d, all verified gone in %.0f ms; "
          "raw cgroup.kill of 100 leaves %s ms%s"
          % (ends[0], rc, term_ms, "%.0f" % raw_ms if raw_ms else "n/a",
             " (%.1fx raw)" % (term_ms / raw_ms) if raw_ms else ""))
    sp.terminate()
    sp.wait()
print("load average after: %s" % load())
