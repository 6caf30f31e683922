# SPDX-License-Identifier: Apache-2.0
# Shared by the pmon Python tests. Real processes only; every process a test
# learns about is recorded by pid AND start time and, if still there at the
# end of the test, killed by that pid only after the start time matched.
import os
import pathlib
import signal
import time

import pytest

HERE = pathlib.Path(__file__).resolve().parent
HELPERS = pathlib.Path(os.environ.get("PMON_HELPERS", HERE.parent.parent / "build-py" / "tests" / "helpers"))


def helper(name):
    p = HELPERS / name
    if not os.access(p, os.X_OK):
        pytest.fail(f"helper {p} missing (set PMON_HELPERS to <build>/tests/helpers)")
    return str(p)


def stat_of(pid):
    """(state, ppid, start_time) of pid, or None when there is no such process."""
    try:
        s = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    f = s[s.rindex(")") + 2:].split()
    return f[0], int(f[1]), int(f[19])


def start_time(pid):
    s = stat_of(pid)
    return None if s is None else s[2]


def present(pid, st):
    """The process (pid, start time) still exists, alive or a zombie."""
    s = stat_of(pid)
    return s is not None and s[2] == st


def threads_of(pid):
    """Threads of pid (field 20 of its stat), 0 when there is no such process."""
    try:
        s = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return 0
    return int(s[s.rindex(")") + 2:].split()[17])


def alive(pid, st):
    """The process (pid, start time) is alive: not gone, not a zombie. State Z
    with more than one thread is alive (its main thread exited, others run)."""
    s = stat_of(pid)
    return s is not None and s[2] == st and (s[0] != "Z" or threads_of(pid) > 1)


def read_procs(path):
    """escaper's file: [(pid, start_time, name)]."""
    out = []
    try:
        for line in pathlib.Path(path).read_text().splitlines():
            pid, st, name = line.split()[:3]
            out.append((int(pid), int(st), name))
    except FileNotFoundError:
        pass
    return out


def our_zombies():
    """Zombies whose parent is this test process (ours to reap: a leak)."""
    me = os.getpid()
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            s = stat_of(int(d))
            if s and s[0] == "Z" and s[1] == me:
                out.append(int(d))
    return out


def wait_gone(procs, within=3.0):
    """Waits until none of [(pid, st, ...)] exists (init may still be reaping
    a reparented zombie); returns the ones still there."""
    deadline = time.monotonic() + within
    while True:
        left = [p for p in procs if present(p[0], p[1])]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.02)


class Recorder:
    def __init__(self):
        self.procs = []

    def add(self, pid, st):
        self.procs.append((pid, st))

    def add_file(self, path):
        for pid, st, _ in read_procs(path):
            self.add(pid, st)

    def cleanup(self):
        left = []
        for pid, st in self.procs:
            if alive(pid, st):
                left.append((pid, st))
                os.kill(pid, signal.SIGKILL)
        return left


def expected_backends():
    """The backends this machine must offer (PMON_EXPECT_BACKENDS, set in CI)."""
    return os.environ.get("PMON_EXPECT_BACKENDS", "").split()


def backend_available(name):
    """Whether pmon.run can use backend NAME here (for skipif). A backend the
    machine is declared to offer counts as there: its tests run, and fail
    with the real error, instead of being skipped."""
    import pmon
    if name in expected_backends():
        return True
    try:
        return pmon.run(["true"], confine=name).confinement == name
    except OSError:  # the backend cannot confine here; anything else is a bug
        return False


def cgroup_available():
    return backend_available("cgroup")


@pytest.fixture
def recorded():
    r = Recorder()
    yield r
    left = r.cleanup()
    assert not left, f"processes survived the test (killed now by pid+start time): {left}"


@pytest.fixture
def tmp(tmp_path):
    tmp_path.chmod(0o755)
    return tmp_path
