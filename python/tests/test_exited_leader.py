# SPDX-License-Identifier: Apache-2.0
# A process whose main thread has exited while another thread runs (state Z,
# more than one thread, still in its cgroup) survives cgroup.kill on some
# kernels. pmon.run stops it all the same when the main process exits and at
# a timeout, and removes the leaf; so does the crash guard after SIGKILL of
# the interpreter. The process ignores SIGTERM, so only the kill step can end
# it. (The cgroup backend: under pidns the helper could not name itself by
# host pid, and the package has no subreaper backend.)
import os
import pathlib
import time

import pmon
import pytest

from conftest import alive, cgroup_available, helper, read_procs, threads_of, stat_of

SHELL = 'trap "" TERM; "$0" "$1" ignore-term daemon & until [ -s "$1" ]; do sleep 0.01; done; ' \
        '[ "$2" = exit ] && exit 0; while :; do sleep 0.05; done'


def gone_soon(pid, st, within=1.0):
    deadline = time.monotonic() + within
    while alive(pid, st) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not alive(pid, st)


@pytest.mark.skipif(not cgroup_available(), reason="the cgroup backend is not available here")
@pytest.mark.parametrize("end", ["exit", "timeout"])
def test_exited_main_thread_is_stopped(tmp, recorded, end):
    confine = "cgroup"
    out = tmp / "procs"
    args = ["sh", "-c", SHELL, helper("exited_leader"), str(out), "exit" if end == "exit" else "pause"]
    r = pmon.run(args, confine=confine, grace=0.3, timeout=1.0 if end == "timeout" else None)
    recorded.add_file(out)
    procs = read_procs(out)
    assert procs, "the helper never got going"
    pid, st, _ = procs[0]
    assert r.confinement == confine
    if end == "timeout":
        assert r.timed_out
    else:
        assert r.returncode == 0
    assert r.cleanup_verified, r.report
    assert gone_soon(pid, st), f"{pid} survived: {stat_of(pid)}, {threads_of(pid)} threads"
    actions = {l["pid"]: l["action"] for l in r.report["leftovers"]}
    assert actions.get(pid) == "SIGKILL", r.report["leftovers"]
    leaf = r.report["cgroup"]
    if confine == "cgroup":
        assert leaf and not pathlib.Path(leaf).exists(), f"leaf {leaf} left behind"


GUARDED = r"""
import sys, pmon
pmon.run(sys.argv[1:], confine="cgroup")
"""


@pytest.mark.skipif(not cgroup_available(), reason="the cgroup backend is not available here")
def test_sigkill_of_the_interpreter_stops_it(tmp, recorded):
    import signal
    import subprocess
    import sys
    out = tmp / "procs"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    py = subprocess.Popen([sys.executable, "-c", GUARDED, "sh", "-c", SHELL, helper("exited_leader"),
                           str(out), "pause"], env=env)
    try:
        deadline = time.monotonic() + 10
        while not read_procs(out) and time.monotonic() < deadline:
            time.sleep(0.02)
        recorded.add_file(out)
        procs = read_procs(out)
        assert procs, "the helper never got going"
        pid, st, _ = procs[0]
        cg = pathlib.Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        rel = [l[3:] for l in cg if l.startswith("0::")][0]
        assert rel.rsplit("/", 1)[-1].startswith(f"pmon-{py.pid}-"), rel
        assert stat_of(pid)[0] == "Z" and threads_of(pid) > 1, "not an exited-leader process (test is void)"
    finally:
        os.kill(py.pid, signal.SIGKILL)
        py.wait()
    assert gone_soon(pid, st, within=5.0), f"{pid} survived the guard: {stat_of(pid)}, {threads_of(pid)} threads"
    mount = [l.split()[4] for l in pathlib.Path("/proc/self/mountinfo").read_text().splitlines()
             if " - cgroup2 " in l][0]
    leaf = pathlib.Path(mount + rel)
    deadline = time.monotonic() + 5
    while leaf.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not leaf.exists(), f"leaf {leaf} left behind"
