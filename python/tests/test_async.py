# SPDX-License-Identifier: Apache-2.0
# pmon.run_async: pidfd and pipes through the event loop; cancellation stops
# the whole tree, verified, before CancelledError propagates.
import asyncio
import time

import pmon
import pytest

from conftest import alive, helper, our_zombies, read_procs, present, wait_gone


def test_basic_and_input():
    r = asyncio.run(pmon.run_async(["cat"], input=b"hello", capture_output=True))
    assert r.stdout == b"hello" and r.returncode == 0


def test_timeout_with_holder(tmp, recorded):
    procs = tmp / "procs"
    # The shell and its holder write "pid start-time name" of themselves.
    script = ('echo "$$ $(cut -d" " -f22 /proc/$$/stat) main" >> "$0"; sleep 300 & '
              'echo "$! $(cut -d" " -f22 /proc/$!/stat) holder" >> "$0"; echo x; sleep 300')

    async def main():
        t0 = time.monotonic()
        # 2 s: the shell has written both records before the timeout on a loaded machine.
        r = await pmon.run_async(["sh", "-c", script, str(procs)], timeout=2.0, grace=0.5,
                                 capture_output=True)
        return r, time.monotonic() - t0

    r, elapsed = asyncio.run(main())
    recorded.add_file(procs)
    assert r.timed_out and r.stdout == b"x\n" and r.cleanup_verified
    assert [n for _, _, n in read_procs(procs)] == ["main", "holder"]
    assert [p for p in read_procs(procs) if alive(p[0], p[1])] == [], "still running when run_async returned"
    assert wait_gone(read_procs(procs)) == []
    assert elapsed < 2.0 + 0.5 + 1.5
    with pytest.raises(pmon.TimeoutExpired):
        asyncio.run(pmon.run_async(["sleep", "5"], timeout=0.2, check=True))


def test_timeout_zero_or_less_has_expired():
    # As subprocess.run: 0 or a negative timeout has already passed.
    for t in (0, -1):
        r = asyncio.run(pmon.run_async(["sleep", "10"], timeout=t))
        assert r.timed_out and r.outcome == "timeout", t
        with pytest.raises(pmon.TimeoutExpired):
            asyncio.run(pmon.run_async(["sleep", "10"], timeout=t, check=True))
    assert asyncio.run(pmon.run_async(["true"], timeout=float("inf"))).returncode == 0


def test_errors_as_subprocess():
    with pytest.raises(FileNotFoundError):
        asyncio.run(pmon.run_async(["pmon-no-such-command"]))
    with pytest.raises(pmon.CalledProcessError):
        asyncio.run(pmon.run_async(["false"], check=True))


@pytest.mark.parametrize("ignore_term", [False, True])
def test_cancel_stops_tree_before_cancelled_error(tmp, recorded, ignore_term):
    procs = tmp / "procs"
    spec = "name=d,orphan,setsid,ignore" if ignore_term else "name=d,orphan,setsid"
    seen = {}

    async def main():
        task = asyncio.create_task(pmon.run_async([helper("escaper"), str(procs), "-x", "sleep", spec],
                                                  grace=0.5))
        deadline = time.monotonic() + 10
        while len(read_procs(procs)) < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        recorded.add_file(procs)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            # Right now, not later: everything is already gone.
            seen["left"] = [p for p in read_procs(procs) if alive(p[0], p[1])]
            seen["cancelled"] = True

    asyncio.run(main())
    assert seen.get("cancelled")
    assert seen["left"] == []
    assert wait_gone(read_procs(procs)) == []
    assert our_zombies() == []


def test_second_cancel_skips_grace(tmp, recorded):
    procs = tmp / "procs"

    async def main():
        task = asyncio.create_task(pmon.run_async(
            [helper("escaper"), str(procs), "-x", "sleep", "name=d,ignore"], grace=30))
        while len(read_procs(procs)) < 2:
            await asyncio.sleep(0.01)
        recorded.add_file(procs)
        t0 = time.monotonic()
        task.cancel()
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - t0

    assert asyncio.run(main()) < 10  # not the 30 s grace
    assert wait_gone(read_procs(procs)) == []
