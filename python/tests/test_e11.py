# SPDX-License-Identifier: Apache-2.0
# E11 for a library user: the Python process that runs pmon.run is
# SIGKILLed in the middle of a call. The cgroup backend's guard stops the
# call's whole tree and removes its leaf. The guard shares the interpreter's
# memory and was started by a worker thread that has ended since (its stack
# and thread-local storage are gone): it must not need either.
import os
import pathlib
import signal
import subprocess
import sys
import time

import pmon
import pytest

from conftest import alive, cgroup_available, helper, read_procs

SCRIPT = r"""
import sys, threading, pmon
def first():
    r = pmon.run(["true"], confine="cgroup")
    print("cgroup", r.report["cgroup"], flush=True)
t = threading.Thread(target=first)
t.start()
t.join()
print("second", flush=True)
r = pmon.run(sys.argv[1:], confine="cgroup")
print("returned", r.returncode, flush=True)  # never: we are killed first
"""


@pytest.mark.skipif(not cgroup_available(), reason="the cgroup backend is not available here")
def test_sigkill_of_the_interpreter_stops_the_call(tmp, recorded):
    procs_file = tmp / "procs"
    cmd = [helper("escaper"), str(procs_file), "-x", "sleep",
           "name=daemon,orphan,setsid", "name=stubborn,ignore,kids=2"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    py = subprocess.Popen([sys.executable, "-c", SCRIPT, *cmd], stdout=subprocess.PIPE, text=True,
                          env=env)
    try:
        first = py.stdout.readline().split()
        assert first[:1] == ["cgroup"], first
        base = pathlib.Path(first[1]).parent
        owner = f"pmon-{py.pid}-"
        assert py.stdout.readline().strip() == "second"
        # Every process of the call recorded: the main one, the daemon, the
        # stubborn one and its two children.
        deadline = time.monotonic() + 10
        while len(read_procs(procs_file)) < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        procs = read_procs(procs_file)
        recorded.add_file(procs_file)
        assert len(procs) >= 5, procs
        leaves = [p for p in base.iterdir() if p.name.startswith(owner)]
        assert leaves, f"no leaf of {owner}* under {base}"
    finally:
        os.kill(py.pid, signal.SIGKILL)
        py.wait()
    # Dead within a second (zombies now belong to whoever adopted them).
    deadline = time.monotonic() + 1.0
    while any(alive(p[0], p[1]) for p in procs) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [p for p in procs if alive(p[0], p[1])] == [], "the call outlived its SIGKILLed supervisor"
    deadline = time.monotonic() + 2
    while any(p.name.startswith(owner) for p in base.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not [p.name for p in base.iterdir() if p.name.startswith(owner)], "the guard left a leaf"
