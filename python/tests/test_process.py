# SPDX-License-Identifier: Apache-2.0
# pmon.start: a handle for long-lived calls.
import os
import time

import pmon
import pytest

from conftest import alive, helper, our_zombies, read_procs, wait_gone


def test_server_like_lifecycle(tmp, recorded):
    procs = tmp / "procs"
    p = pmon.start([helper("escaper"), str(procs), "-x", "sleep", "name=w,kids=2", "name=d,orphan,setsid"])
    while len(read_procs(procs)) < 5:
        time.sleep(0.01)
    recorded.add_file(procs)
    assert p.pid > 0 and p.poll() is None
    with pytest.raises(pmon.TimeoutExpired):
        p.wait(timeout=0.2)
    live = {x["pid"] for x in p.processes()}
    assert {pid for pid, _, _ in read_procs(procs)} <= live
    r = p.stop(grace=1)
    assert r.cleanup_verified and p.returncode == -15 and r.outcome == "cancelled"
    assert wait_gone(read_procs(procs)) == []
    assert p.processes() == []
    assert our_zombies() == []


def test_context_manager_stops_tree(tmp, recorded):
    procs = tmp / "procs"
    with pmon.start([helper("escaper"), str(procs), "-x", "sleep", "name=d,orphan,setsid,ignore"],
                    grace=0.3) as p:
        while len(read_procs(procs)) < 2:
            time.sleep(0.01)
        recorded.add_file(procs)
    assert p.result.cleanup_verified
    assert wait_gone(read_procs(procs)) == []


def test_wait_and_poll_and_capture():
    p = pmon.start(["sh", "-c", "echo out; sleep 0.2; exit 3"], stdout=pmon.PIPE)
    assert p.wait(timeout=10) == 3
    assert p.poll() == 3 and p.result.stdout == b"out\n"
    p = pmon.start(["sh", "-c", "exit 2"])
    while p.poll() is None:
        time.sleep(0.01)
    assert p.returncode == 2


def test_dropped_handle_still_stops_tree(tmp, recorded):
    procs = tmp / "procs"
    p = pmon.start([helper("escaper"), str(procs), "-x", "sleep", "name=d,orphan,setsid"], grace=0.5)
    while len(read_procs(procs)) < 2:
        time.sleep(0.01)
    recorded.add_file(procs)
    del p
    assert wait_gone(read_procs(procs)) == []


def test_stop_from_another_thread_interrupts_wait():
    import threading
    p = pmon.start(["sleep", "300"])
    threading.Timer(0.3, p.stop).start()
    t0 = time.monotonic()
    rc = p.wait()
    assert rc == -15 and time.monotonic() - t0 < 5


@pytest.mark.parametrize("with_asyncio,runs", [(False, 8), (True, 4)])
def test_interpreter_exit_stops_live_handles(tmp, recorded, with_asyncio, runs):
    # Handles still referenced when the interpreter exits (a global): their
    # trees are stopped at exit, before the backends they use go away, and
    # the interpreter exits cleanly. (It used to abort freeing them in about
    # one exit of three, and could leave a tree running: hence several runs.)
    for run in range(runs):
        exit_with_live_handles(tmp / f"run{run}", recorded, with_asyncio)


def exit_with_live_handles(tmp, recorded, with_asyncio):
    import subprocess
    import sys
    tmp.mkdir()
    files = [tmp / f"procs{i}" for i in range(3)]
    script = (
        "import asyncio, os, sys, time, pmon\n"
        "keep = []\n"
        "for f in sys.argv[2:]:\n"
        "    keep.append(pmon.start([sys.argv[1], f, '-x', 'sleep', 'name=d,orphan,setsid'], grace=0.5))\n"
        "    while not os.path.exists(f) or len(open(f).read().splitlines()) < 2:\n"
        "        time.sleep(0.01)\n"
        + ("asyncio.run(asyncio.sleep(0.01))\n" if with_asyncio else "")
        + "print('started', flush=True)\n"
    )
    (tmp / "exit.py").write_text(script)
    try:
        # (A tree left running holds the pipes open: the run then times out.)
        r = subprocess.run([sys.executable, str(tmp / "exit.py"), helper("escaper")] + [str(f) for f in files],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30,
                           env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    except subprocess.TimeoutExpired:
        pytest.fail("a tree outlived the interpreter that started it (its pipes stayed open)")
    finally:
        for f in files:
            recorded.add_file(f)
    assert r.returncode == 0 and "started" in r.stdout, r.stderr
    procs = [p for f in files for p in read_procs(f)]
    assert len(procs) == 6
    assert wait_gone(procs) == []
