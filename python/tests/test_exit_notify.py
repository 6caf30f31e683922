# SPDX-License-Identifier: Apache-2.0
# The end of a pmon.start call, told without polling: Process.on_exit(callback)
# and the awaitable Process.wait_async(). Each is told only once the tree is
# verified gone.
import asyncio
import threading
import time

import pmon

from conftest import alive, helper, our_zombies, read_procs, wait_gone


def wait_for_procs(path, n, within=10.0):
    deadline = time.monotonic() + within
    while len(read_procs(path)) < n:
        assert time.monotonic() < deadline, f"{path}: fewer than {n} processes recorded"
        time.sleep(0.01)
    return read_procs(path)


def test_on_exit_is_called_once_the_tree_is_gone(tmp, recorded):
    procs = tmp / "procs"
    # The main process exits 3 once a setsid daemon is recorded.
    p = pmon.start([helper("escaper"), str(procs), "-x", "exit:3", "name=d,orphan,setsid"], grace=0.5)
    seen = []
    told = threading.Event()

    def on_exit(result):
        # At the moment we are told, nothing of the call is alive.
        seen.append((result, [x for x in read_procs(procs) if alive(x[0], x[1])]))
        told.set()

    assert p.on_exit(on_exit) is p
    ps = wait_for_procs(procs, 2)
    recorded.add_file(procs)
    assert told.wait(20), "on_exit was not called after the main process exited"
    result, alive_then = seen[0]
    assert result.returncode == 3 and result.cleanup_verified
    assert alive_then == []
    assert [x[2] for x in ps] == ["main", "d"] or {x[2] for x in ps} == {"main", "d"}
    assert wait_gone(ps) == []
    assert len(seen) == 1 and p.returncode == 3
    # Asked for after the end: called at once, on this thread.
    again = []
    p.on_exit(lambda r: again.append((r, threading.current_thread())))
    assert again == [(p.result, threading.current_thread())]
    assert our_zombies() == []


def test_on_exit_after_stop_from_another_thread(tmp, recorded):
    procs = tmp / "procs"
    p = pmon.start([helper("escaper"), str(procs), "-x", "sleep", "name=d,orphan,setsid,ignore"], grace=0.3)
    told = threading.Event()
    got = []
    p.on_exit(lambda r: (got.append(r), told.set()))
    ps = wait_for_procs(procs, 2)
    recorded.add_file(procs)
    assert not told.wait(0.3), "on_exit was called while the call still ran"
    r = p.stop()
    assert told.wait(20)
    assert got == [r] or (got[0].returncode == r.returncode and got[0].outcome == "cancelled")
    assert got[0].cleanup_verified
    assert wait_gone(ps) == []


def test_wait_async_does_not_block_the_loop(tmp, recorded):
    procs = tmp / "procs"

    async def main():
        p = pmon.start([helper("escaper"), str(procs), "-x", "sleep", "name=d,orphan,setsid"], grace=0.5)
        ps = await asyncio.get_running_loop().run_in_executor(None, wait_for_procs, procs, 2)
        recorded.add_file(procs)
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        t = asyncio.create_task(ticker())
        waiting = asyncio.create_task(p.wait_async())
        await asyncio.sleep(0.3)
        assert not waiting.done(), "wait_async returned while the call still ran"
        assert ticks > 5, "the event loop was blocked"
        main_pid = next(x for x in ps if x[2] == "main")
        import os
        import signal
        if alive(main_pid[0], main_pid[1]):
            os.kill(main_pid[0], signal.SIGTERM)
        code = await asyncio.wait_for(waiting, 20)
        t.cancel()
        return p, ps, code

    p, ps, code = asyncio.run(main())
    assert code == -15 and p.result.cleanup_verified
    assert wait_gone(ps) == []
    # Over already: at once.
    assert asyncio.run(p.wait_async()) == -15
