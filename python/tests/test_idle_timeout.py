# SPDX-License-Identifier: Apache-2.0
# idle_timeout: a call that has printed nothing (captured stdout or stderr)
# for that long is stopped with its whole tree, by run and run_async alike;
# one that prints is not; without captured output it is refused.
import asyncio

import pmon
import pytest

from conftest import alive, read_procs, wait_gone

# Prints 30 lines 100 ms apart (3 s, past the 2 s idle timeout), then records
# itself and a holder ("pid start-time name") and goes quiet. The idle timeout
# is 20 times the gap between lines: a loaded machine (CI runs this beside the
# sanitized suite) can stall a shell for a good part of a second.
IDLE = 2.0
SCRIPT = ('for i in $(seq 30); do echo "line $i"; sleep 0.1; done; '
          'echo "$$ $(cut -d" " -f22 /proc/$$/stat) main" >> "$0"; sleep 300 & '
          'echo "$! $(cut -d" " -f22 /proc/$!/stat) holder" >> "$0"; sleep 300')


def check_stopped_when_quiet(r, procs):
    assert r.timed_out and r.idle_timed_out and r.cleanup_verified
    assert r.report["stop"]["reason"] == "idle_timeout"
    assert r.stdout.splitlines()[-1] == b"line 30", "stopped while it still printed"
    assert [n for _, _, n in read_procs(procs)] == ["main", "holder"]
    assert [p for p in read_procs(procs) if alive(p[0], p[1])] == [], "still running when run returned"
    assert wait_gone(read_procs(procs)) == []


def test_run_stops_a_quiet_tree(tmp, recorded):
    procs = tmp / "procs"
    recorded.add_file(procs)
    r = pmon.run(["sh", "-c", SCRIPT, str(procs)], idle_timeout=IDLE, grace=0.5, capture_output=True)
    check_stopped_when_quiet(r, procs)


def test_run_async_stops_a_quiet_tree(tmp, recorded):
    procs = tmp / "procs"
    recorded.add_file(procs)
    r = asyncio.run(pmon.run_async(["sh", "-c", SCRIPT, str(procs)], idle_timeout=IDLE, grace=0.5,
                                   capture_output=True))
    check_stopped_when_quiet(r, procs)


def test_a_printer_is_not_idle():
    line = "for i in $(seq 30); do echo $i >&2; sleep 0.1; done"
    r = pmon.run(["sh", "-c", line], idle_timeout=IDLE, stderr=pmon.PIPE)
    assert r.returncode == 0 and not r.timed_out and not r.idle_timed_out
    r = asyncio.run(pmon.run_async(["sh", "-c", line], idle_timeout=IDLE, stderr=pmon.PIPE))
    assert r.returncode == 0 and not r.idle_timed_out


def test_needs_captured_output():
    with pytest.raises(ValueError, match="capture_output=True"):
        pmon.run(["true"], idle_timeout=1)
    with pytest.raises(ValueError, match="idle_timeout must be > 0"):
        pmon.run(["true"], idle_timeout=0, capture_output=True)
