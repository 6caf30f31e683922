# SPDX-License-Identifier: Apache-2.0
# The client side of sandboxd_pod.sh: pmon sandboxd in a pod that podman kube
# play runs, driven through its ports on 127.0.0.1 (the pod shares the
# host's network) by a real gRPC client. Every process a command starts is
# found from the host below the container's first process and checked gone
# by host pid and start time; every port its processes listened on is
# checked free.
#   sandboxd_pod.py GRPC_PORT REST_PORT INIT_PID END_COMMAND [sigkill]
# END_COMMAND: a shell line that ends the pod. With sigkill, only this: a
# SIGKILL of pmon sandboxd while a command runs leaves nothing of the
# command or the pod, and then END_COMMAND cleans up.
import json
import os
import pathlib
import queue
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import grpc

from process.v1 import process_pb2 as pb
from process.v1 import process_pb2_grpc as pbg

# (the sandboxd tests' own: a process by pid and start time, waiting on a condition)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "sandboxd"))
from conftest import alive, start_time, wait_until  # noqa: E402

grpc_port, rest_port, init_pid, down = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
sigkill = sys.argv[5:] == ["sigkill"]
REST = f"http://127.0.0.1:{rest_port}"


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def ok(msg):
    print(f"ok: {msg}", flush=True)


def ps_row(pid):
    """(parent, start time, name) of pid, or None when there is none."""
    try:
        s = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(s[s.rindex(")") + 2:].split()[1]), start_time(pid), s[s.index("(") + 1:s.rindex(")")]


def tree():
    """{(host pid, start time): name} of every process below the container's first one, and it."""
    parent, info = {}, {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            s = ps_row(int(d))
            if s and s[1] is not None:
                parent[int(d)] = s[0]
                info[int(d)] = (s[1], s[2])
    below, grew = {init_pid}, True
    while grew:
        grew = False
        for p, pp in parent.items():
            if p not in below and pp in below:
                below.add(p)
                grew = True
    return {(p, info[p][0]): info[p][1] for p in below if p in info}


def listening(port):
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_released(port):
    """Nothing listens on it and it can be bound again."""
    if listening(port):
        return False
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def http(method, path):
    req = urllib.request.Request(REST + path, method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
stub = pbg.ProcessServiceStub(channel)
own = tree()  # pmon sandboxd's own processes
print(f"pmon sandboxd's own processes: {sorted(own.values())}")

code, body = http("GET", "/v1/health")
health = json.loads(body)
if code != 200 or health.get("status") != "ok":
    fail(f"/v1/health: {code} {body!r}")
ok(f"/v1/health from outside the pod: {body.decode().strip()}")

# What the SDKs' commands.run is: an Execute of /bin/sh -c with a deadline.
r = stub.Execute(pb.ExecuteRequest(config=pb.ProcessConfig(command=["/bin/sh", "-c", "echo hello; id -u; pwd"])),
                 timeout=60)
if (r.exit_code, r.stdout) != (0, b"hello\n1000\n/workspace\n"):
    fail(f"Execute: exit {r.exit_code}, stdout {r.stdout!r}, stderr {r.stderr!r}")
ok("Execute: the command's output and exit status, as user 1000 in /workspace")


class Stream:
    """A Start stream read on a thread of its own: its events in a queue."""

    def __init__(self, port):
        self.port = port
        line = f"setsid sleep 1000 & setsid busybox httpd -f -p 127.0.0.1:{port} -h /workspace & echo started; wait"
        self.call = stub.Start(pb.StartRequest(config=pb.ProcessConfig(command=["/bin/sh", "-c", line])))
        self.events = queue.Queue()
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()
        self.pid = None
        out = b""
        end = time.monotonic() + 60
        while b"started" not in out:
            kind, value = self.events.get(timeout=max(0.1, end - time.monotonic()))
            if kind == "init":
                self.pid = value
            elif kind == "stdout":
                out += value
            else:
                fail(f"the command ended before it started: {kind} {value}")
        if not wait_until(lambda: listening(port), 30):
            fail(f"nothing listens on {port}")
        self.procs = {k: v for k, v in tree().items() if k not in own}
        if len(self.procs) < 3:
            fail(f"the command's processes were not found below the container's first one: {self.procs}")

    def read(self):
        try:
            for ev in self.call:
                which = ev.WhichOneof("event")
                if which == "init":
                    self.events.put(("init", ev.init.process_id))
                elif which == "stdout":
                    self.events.put(("stdout", ev.stdout))
                elif which == "exit":
                    self.events.put(("exit", ev.exit.exit_code))
            self.events.put(("end", None))
        except grpc.RpcError as e:
            self.events.put(("error", e.code()))

    def exit_code(self, seconds=60):
        end = time.monotonic() + seconds
        while True:
            kind, value = self.events.get(timeout=max(0.1, end - time.monotonic()))
            if kind in ("exit", "error"):
                return kind, value
            if kind == "end":
                fail("the stream ended without an ExitEvent")

    def check_gone(self, what):
        left = [f"{p} ({name})" for (p, st), name in self.procs.items() if alive(p, st)]
        if left:
            fail(f"{what}: still running: {left}")
        if not port_released(self.port):
            fail(f"{what}: port {self.port} is still held")


if sigkill:
    # SIGKILL of pmon sandboxd (not of the container's first process, pmon
    # init, which holds PID 1): every command's processes are stopped, and
    # the container ends (pmon init ends when the daemon it runs does).
    e = Stream(free_port())
    everything = tree()
    daemon = [p for (p, st), name in own.items() if name == "pmon-sandboxd"]
    if len(daemon) != 1:
        fail(f"cannot tell pmon sandboxd among {own}")
    os.kill(daemon[0], 9)
    kind, code = e.exit_code()
    if kind != "error":
        fail(f"a SIGKILLed daemon's stream got {kind} {code}")
    if not wait_until(lambda: not any(alive(p, st) for p, st in everything), 30):
        fail(f"SIGKILL of pmon sandboxd left {[(p, n) for (p, st), n in everything.items() if alive(p, st)]}")
    e.check_gone("SIGKILL of pmon sandboxd")
    ok(f"SIGKILL of pmon sandboxd: the stream ended ({code}); all {len(everything)} processes of the container "
       f"are gone, port {e.port} released")
    r = subprocess.run(down, shell=True, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        fail(f"podman kube down: {r.stderr.strip()}")
    sys.exit(0)

# SendSignal SIGTERM: pmon's stop of the whole tree, then the ExitEvent.
a = Stream(free_port())
stub.SendSignal(pb.SendSignalRequest(process_id=a.pid, signal=pb.SIGNAL_SIGTERM), timeout=30)
kind, code = a.exit_code()
if (kind, code) != ("exit", 143):
    fail(f"SendSignal SIGTERM: the stream ended with {kind} {code}, want the ExitEvent 143")
a.check_gone("SendSignal SIGTERM")
ok(f"SendSignal SIGTERM: ExitEvent 143; {len(a.procs)} processes gone by pid and start time "
   f"(setsid daemons included), port {a.port} released")

# POST /v1/reset: every command any client started, stopped and verified.
b, c = Stream(free_port()), Stream(free_port())
code, body = http("POST", "/v1/reset")
reset = json.loads(body)
if code != 200 or not reset.get("cleanup_verified") or not reset.get("ports_released") or len(reset["stopped"]) != 2:
    fail(f"POST /v1/reset: {code} {body!r}")
ports = sorted(p for s in reset["stopped"] for p in s["ports"])
if ports != sorted([b.port, c.port]):
    fail(f"POST /v1/reset names the ports {ports}, want {sorted([b.port, c.port])}")
for s in (b, c):
    kind, code = s.exit_code()
    if kind != "exit":
        fail(f"a stream the reset ended got {kind} {code}, not its ExitEvent")
    s.check_gone("POST /v1/reset")
ok(f"POST /v1/reset: two commands stopped, {len(b.procs) + len(c.procs)} processes gone, ports {ports} released")

# The pod's end (podman pod stop, as the kubelet stops a pod, then kube
# down): pmon sandboxd stops what runs, every open stream gets its
# ExitEvent, and nothing of the pod is left.
d = Stream(free_port())
everything = tree()
keeper = ps_row(init_pid)[0]  # conmon, which holds the container
keeper_st = start_time(keeper)
r = subprocess.run(down, shell=True, capture_output=True, text=True, timeout=120)
if r.returncode != 0:
    fail(f"podman pod stop, kube down: {r.stderr.strip()}")
kind, code = d.exit_code()
if kind != "exit":
    fail(f"the pod's end: the open stream got {kind} {code}, not its ExitEvent")
d.check_gone("the pod's end")
if not wait_until(lambda: not any(alive(p, st) for p, st in everything) and not alive(keeper, keeper_st), 30):
    fail(f"the pod's end: left {[(p, n) for (p, st), n in everything.items() if alive(p, st)]}")
ok(f"the pod's end: the open stream got its ExitEvent ({code}); all {len(everything)} processes of the pod "
   f"and conmon are gone, port {d.port} released")
channel.close()
