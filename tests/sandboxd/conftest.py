# SPDX-License-Identifier: Apache-2.0
# The sandboxd tests: a real pmon sandboxd on 127.0.0.1 (a free port), a real
# gRPC client (python3-grpcio on stubs generated from pmon's .proto), real
# processes. Every process a test learns of is checked by pid AND start
# time, and one still there at the end is killed by that pid only after its
# start time matched.
import os
import pathlib
import re
import signal
import subprocess
import time

import grpc
import pytest

from process.v1 import process_pb2 as pb
from process.v1 import process_pb2_grpc as pbg

PMON = os.environ.get("PMON", "pmon")
HELPERS = pathlib.Path(os.environ.get("PMON_HELPERS", ""))


def stat_of(pid):
    """(state, start_time, threads) of pid, or None when there is none."""
    try:
        s = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    f = s[s.rindex(")") + 2:].split()
    return f[0], int(f[19]), int(f[17])


def start_time(pid):
    s = stat_of(pid)
    return None if s is None else s[1]


def alive(pid, st):
    """Not gone and not a zombie (a zombie with threads left still runs)."""
    s = stat_of(pid)
    return s is not None and s[1] == st and (s[0] != "Z" or s[2] > 1)


def wait_until(cond, seconds=20):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def read_procs(path):
    """What escaper (and the tests' shell lines) record: [(pid, start, name)]."""
    out = []
    try:
        text = pathlib.Path(path).read_text()
    except FileNotFoundError:
        return out
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 3:
            out.append((int(f[0]), int(f[1]), f[2]))
    return out


def escaper():
    p = HELPERS / "escaper"
    if not os.access(p, os.X_OK):
        pytest.fail(f"helper {p} missing (set PMON_HELPERS to <build>/tests/helpers)")
    return str(p)


class Recorded:
    """Processes a test learned of: killed (pid and start time checked) if left."""

    def __init__(self):
        self.files = []
        self.procs = []

    def add_file(self, path):
        self.files.append(path)

    def add(self, pid, st):
        self.procs.append((pid, st))

    def cleanup(self):
        left = list(self.procs)
        for f in self.files:
            left += [(p, s) for p, s, _ in read_procs(f)]
        for pid, st in left:
            if alive(pid, st):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


@pytest.fixture
def recorded():
    r = Recorded()
    yield r
    r.cleanup()


class Sandboxd:
    """pmon sandboxd on 127.0.0.1, a free port, a root of its own."""

    def __init__(self, root, recorded, *extra, prefix=()):
        self.root = root
        self.err = root.parent / "sandboxd.err"
        self.proc = subprocess.Popen(
            [*prefix, PMON, "sandboxd", "--listen-host", "127.0.0.1", "--grpc-port", "0", "--rest-port", "0",
             "--root-dir", str(root),
             "--grace", "1s", *extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(self.err, "w"))
        self.st = None
        if wait_until(lambda: start_time(self.proc.pid) is not None, 5):
            self.st = start_time(self.proc.pid)
            recorded.add(self.proc.pid, self.st)
        m = None
        def bound():
            nonlocal m
            m = re.search(r"process service on 127\.0\.0\.1:(\d+), REST API on 127\.0\.0\.1:(\d+)",
                          self.err.read_text())
            return m is not None or self.proc.poll() is not None
        wait_until(bound, 30)
        if not m:
            raise AssertionError(f"pmon sandboxd did not start: {self.err.read_text()}")
        self.port = int(m.group(1))
        self.rest = f"http://127.0.0.1:{m.group(2)}"
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}")
        self.stub = pbg.ProcessServiceStub(self.channel)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(60)
        finally:
            self.channel.close()


# Each test on the host's strongest boundary, and again as in a container
# that has neither cgroup2 nor PID namespaces to give: the subreaper
# backend, where every command runs under a pmon of its own.
HOLDS = {"boundary": (), "own-pmon": ("--confine", "subreaper")}


@pytest.fixture(params=list(HOLDS))
def sandboxd(request, tmp_path, recorded):
    root = tmp_path / "ws"
    root.mkdir()
    s = Sandboxd(root, recorded, *HOLDS[request.param])
    s.holds = request.param
    yield s
    rc = s.stop()
    assert rc == 0, f"pmon sandboxd exit {rc}: {s.err.read_text()}"


def config(*command, env=None, cwd=None):
    c = pb.ProcessConfig(command=list(command), env_vars=env or {})
    if cwd is not None:
        c.cwd = cwd
    return c


def sh(line, **kw):
    return config("/bin/sh", "-c", line, **kw)


def how(pid):
    """Where a process is, for a failure's message: its state, its parent
    (with the parent's command line), its process group and session."""
    try:
        s = pathlib.Path(f"/proc/{pid}/stat").read_text()
        f = s[s.rindex(")") + 2:].split()
        ppid = int(f[1])
        parent = pathlib.Path(f"/proc/{ppid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (OSError, ValueError, IndexError):
        return "gone"
    return f"state {f[0]}, parent {ppid} ({parent.strip()[:120]}), group {f[2]}, session {f[3]}"


def gone(procs, seconds=20):
    """[(pid, start, name, how)] of those still alive after up to `seconds`."""
    wait_until(lambda: not any(alive(p, s) for p, s, _ in procs), seconds)
    return [(*x, how(x[0])) for x in procs if alive(x[0], x[1])]
