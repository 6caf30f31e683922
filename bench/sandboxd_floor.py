# SPDX-License-Identifier: Apache-2.0
"""Where `Execute` of /bin/true stands against the job service, and the
floor under each: from Python clients (python3-grpcio on the stubs generated
from pmon's .proto, and the JSON-RPC client of serve_common), in alternating
batches, one call after the answer to the one before:

- the gRPC floor: an `Execute` refused by its handler (an empty command,
  INVALID_ARGUMENT: no command, nothing on the service's thread), and a
  `SendSignal` of no process (NOT_FOUND: one turn of the service's thread);
- the job service's floor: three `terminal/list` round trips (as many as a
  job's create, wait and release);
- `Execute` of /bin/true (and again on a second daemon from another pmon
  binary, --alt, to set two versions side by side), and the job service's
  create, wait_for_exit and release of the same job.

Per way: the median time a call over the rounds, its quartiles, and the
CPU the daemon spent a call (its own threads and its crash guard's, not
the commands'). Then per round, Execute against the job service (the
service's time over Execute's: above 1 is faster).

    PYTHONPATH=BUILD/generated/python python3 bench/sandboxd_floor.py BUILD/pmon [--alt OTHER/pmon] [--rounds R] [--batch N]

Ratios from one run are the figures to quote (the machine is shared)."""
import argparse
import os
import statistics
import sys
import tempfile
import time

import grpc
from process.v1 import process_pb2 as pb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sandboxd_common import start_sandboxd  # noqa: E402
from serve_common import Client, start_service  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("pmon")
ap.add_argument("--alt", help="a second pmon whose sandboxd's Execute is measured beside the first")
ap.add_argument("--rounds", type=int, default=40)
ap.add_argument("--batch", type=int, default=30)
a = ap.parse_args()


def load():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def cpu_ns(pid):
    """CPU of pid's threads and of its pmon children (the crash guard)."""
    total = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            total += int(open("/proc/%d/task/%s/schedstat" % (pid, t)).read().split()[0])
            kids = open("/proc/%d/task/%s/children" % (pid, t)).read().split()
        except OSError:
            continue
        for k in kids:
            try:
                if "pmon" in os.readlink("/proc/%s/exe" % k):
                    total += cpu_ns(int(k))
            except OSError:
                pass
    return total


with tempfile.TemporaryDirectory() as d:
    daemons = [("", a.pmon)] + ([(" (--alt)", a.alt)] if a.alt else [])
    started = [(tag,) + start_sandboxd(pm, d, name="ws%d" % i) for i, (tag, pm) in enumerate(daemons)]
    sp, path = start_service(a.pmon, d)
    c = Client(path)
    true_cfg = pb.ProcessConfig(command=["/bin/true"])
    _, p, _, stub = started[0]

    def refused():
        try:
            stub.Execute(pb.ExecuteRequest(config=pb.ProcessConfig(command=[])), timeout=30)
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, e.code()
        else:
            raise AssertionError("an empty command was run")

    def not_found():
        try:
            stub.SendSignal(pb.SendSignalRequest(process_id=999999, signal=pb.SIGNAL_SIGTERM), timeout=30)
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.NOT_FOUND, e.code()
        else:
            raise AssertionError("process 999999 was found")

    def list3():
        for _ in range(3):
            c.call("terminal/list", {})

    def execute_on(s):
        def execute():
            r = s.Execute(pb.ExecuteRequest(config=true_cfg), timeout=30)
            assert r.exit_code == 0
        return execute

    def serve():
        tid = c.call("terminal/create", {"command": "/bin/true"})["terminalId"]
        c.call("terminal/wait_for_exit", {"terminalId": tid})
        c.call("terminal/release", {"terminalId": tid})
        c.exited.pop(tid, None)

    ways = [("gRPC floor: Execute refused by its handler", refused, p.pid),
            ("gRPC floor: SendSignal NOT_FOUND", not_found, p.pid),
            ("job service floor: 3 terminal/list", list3, sp.pid)]
    ways += [("Execute /bin/true" + tag, execute_on(s), pp.pid) for tag, pp, _, s in started]
    ways += [("job service: create, wait, release", serve, sp.pid)]
    for _, fn, _ in ways:
        for _ in range(10):
            fn()
    print("load average before: %s" % load())
    wall = {w[0]: [] for w in ways}
    cpu = {w[0]: [] for w in ways}
    for r in range(a.rounds):
        for name, fn, pid in (ways if r % 2 == 0 else ways[::-1]):
            c0, t0 = cpu_ns(pid), time.monotonic()
            for _ in range(a.batch):
                fn()
            wall[name].append((time.monotonic() - t0) / a.batch * 1e6)
            cpu[name].append((cpu_ns(pid) - c0) / a.batch / 1e3)
    print("load average after: %s" % load())
    print("%-44s %9s %13s %14s" % ("", "us a call", "quartiles", "daemon CPU us"))
    for name, _, _ in ways:
        v = sorted(wall[name])
        print("%-44s %9.0f %6.0f-%-6.0f %14.0f" % (name, statistics.median(v), v[len(v) // 4], v[3 * len(v) // 4],
                                                 statistics.median(cpu[name])))
    job = wall["job service: create, wait, release"]
    for tag, _, _, _ in started:
        x = sorted(s / e for s, e in zip(job, wall["Execute /bin/true" + tag]))
        print("Execute%s against the job service, per round: median %.2fx, quartiles %.2f-%.2fx, range %.2f-%.2fx"
              % (tag, statistics.median(x), x[len(x) // 4], x[3 * len(x) // 4], x[0], x[-1]))
    if a.alt:
        x = [n / o for o, n in zip(wall["Execute /bin/true"], wall["Execute /bin/true (--alt)"])]
        print("Execute (--alt), its time over the first's, per round: median %.3f (below 1: faster), faster in %d of %d rounds"
              % (statistics.median(x), sum(1 for v in x if v < 1), len(x)))
    for _, pp, ch, _ in started:
        ch.close()
        pp.terminate()
        pp.wait()
    sp.terminate()
    sp.wait()
