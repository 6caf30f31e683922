# SPDX-License-Identifier: Apache-2.0
# idle_timeout: a call that has printed nothing (captured stdout or stderr)
# for that long is stopped with its whole tree, by run and run_async alike;
# one that prints is not; without captured output it is refused.
import asyncio
import time

import pmon
import pytest

from conftest import alive, read_procs, wait_gone

# Records itself ("pid start-time name"), prints 30 lines 100 ms apart (3 s,
# past the 2 s idle timeout), each after noting the time it is printed at (in
# "$0.times"), then records a holder and goes quiet. A loaded machine (CI runs
# this beside the sanitized suite's fork storms) can stall the printer for
# seconds: a stop before the last line is right only when it came an idle
# timeout after the last line printed, which the times say, or, when nothing
# was printed at all (the shell stalled before its first line), an idle
# timeout after the call began.
IDLE = 2.0
SCRIPT = ('echo "$$ $(cut -d" " -f22 /proc/$$/stat) main" >> "$0"; '
          'for i in $(seq 30); do date +%s.%N >> "$0.times"; echo "line $i"; sleep 0.1; done; '
          'sleep 300 & echo "$! $(cut -d" " -f22 /proc/$!/stat) holder" >> "$0"; sleep 300')


def quiet_long_enough(printed, times_file, began, ended):
    """A stop after `printed` lines (of 30) came an idle timeout after the
    last of them at the earliest (`began`, `ended`: time.time() before the
    call and once it returned), or all 30 were printed."""
    if printed == 30:
        return True
    if printed == 0:
        return ended - began >= IDLE
    times = [float(t) for t in times_file.read_text().split()]
    return ended - times[printed - 1] >= IDLE


def check_stopped_when_quiet(r, procs, began, ended):
    assert r.timed_out and r.idle_timed_out and r.cleanup_verified
    assert r.report["stop"]["reason"] == "idle_timeout"
    lines = r.stdout.splitlines()
    assert lines == [b"line %d" % i for i in range(1, len(lines) + 1)]
    assert quiet_long_enough(len(lines), procs.with_name("procs.times"), began, ended), \
        "stopped while it still printed"
    names = [n for _, _, n in read_procs(procs)]
    # (with nothing printed, the stop may have come before main recorded itself)
    assert names == (["main", "holder"] if len(lines) == 30 else ["main"]) or (not lines and names == []), names
    assert [p for p in read_procs(procs) if alive(p[0], p[1])] == [], "still running when run returned"
    assert wait_gone(read_procs(procs)) == []


def test_run_stops_a_quiet_tree(tmp, recorded):
    procs = tmp / "procs"
    recorded.add_file(procs)
    began = time.time()
    r = pmon.run(["sh", "-c", SCRIPT, str(procs)], idle_timeout=IDLE, grace=0.5, capture_output=True)
    check_stopped_when_quiet(r, procs, began, time.time())


def test_run_async_stops_a_quiet_tree(tmp, recorded):
    procs = tmp / "procs"
    recorded.add_file(procs)
    began = time.time()
    r = asyncio.run(pmon.run_async(["sh", "-c", SCRIPT, str(procs)], idle_timeout=IDLE, grace=0.5,
                                   capture_output=True))
    check_stopped_when_quiet(r, procs, began, time.time())


def test_a_printer_is_not_idle(tmp):
    times = tmp / "printer.times"
    line = f'for i in $(seq 30); do date +%s.%N >> {times}; echo "line $i" >&2; sleep 0.1; done'
    for run in (lambda: pmon.run(["sh", "-c", line], idle_timeout=IDLE, stderr=pmon.PIPE),
                lambda: asyncio.run(pmon.run_async(["sh", "-c", line], idle_timeout=IDLE, stderr=pmon.PIPE))):
        times.unlink(missing_ok=True)
        began = time.time()
        r = run()
        printed = len(r.stderr.splitlines())
        # (stopped only where the printer itself stalled an idle timeout)
        assert (r.returncode == 0 and not r.idle_timed_out) or \
            (r.idle_timed_out and quiet_long_enough(printed, times, began, time.time())), (r, printed)


def test_needs_captured_output():
    with pytest.raises(ValueError, match="capture_output=True"):
        pmon.run(["true"], idle_timeout=1)
    with pytest.raises(ValueError, match="idle_timeout must be > 0"):
        pmon.run(["true"], idle_timeout=0, capture_output=True)
