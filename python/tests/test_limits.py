# SPDX-License-Identifier: Apache-2.0
# memory_max=, memory_high=, pids_max=, cpu_max= on pmon.run, pmon.start and
# pmon.run_async: set on the call's cgroup leaf where the leaf can get the
# controller (the command sees its own memory.max, pids.max, cpu.max), and
# refused with ConfinementError (the command never runs) where it cannot: a
# hybrid host whose cgroup v2 has none of them, or a backend without a
# cgroup. Bad values raise ValueError or TypeError with the CLI's words.
import asyncio
import os
import pathlib

import pmon
import pytest

from conftest import backend_available, cgroup_available

LIMITS = [
    # keyword, value, controller, file, what the leaf shows, the report's value
    ("memory_max", "100M", "memory", "memory.max", "104857600", 104857600),
    ("memory_high", "80M", "memory", "memory.high", "83886080", 83886080),
    ("pids_max", 50, "pids", "pids.max", "50", 50),
    ("cpu_max", 0.5, "cpu", "cpu.max", "50000 100000", 0.5),
]


def leaves_parent():
    """The cgroup the default cgroup backend makes its leaves in."""
    r = pmon.run(["true"], confine="cgroup")
    return pathlib.Path(r.report["cgroup"]).parent


def enabled_for_leaves(controller):
    try:
        text = (leaves_parent() / "cgroup.subtree_control").read_text()
    except OSError:
        return False
    return controller in text.split()


@pytest.mark.skipif(not cgroup_available(), reason="the cgroup backend is not available here")
@pytest.mark.parametrize("kw,value,controller,file,shown,reported", LIMITS)
def test_limit_is_set_or_refused(tmp_path, kw, value, controller, file, shown, reported):
    ran = tmp_path / "ran"
    script = f'cat /sys/fs/cgroup/unified$(sed -n "s/^0:://p" /proc/self/cgroup)/{file} 2>/dev/null || ' \
             f'cat /sys/fs/cgroup$(sed -n "s/^0:://p" /proc/self/cgroup)/{file}; echo ran > {ran}'
    if enabled_for_leaves(controller):
        r = pmon.run(["sh", "-c", script], capture_output=True, text=True, **{kw: value})
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == shown
        assert r.report["limits"][kw] == reported
        return
    with pytest.raises(pmon.ConfinementError, match=f"cannot set the {controller} limit: the {controller} controller is not") as e:
        pmon.run(["sh", "-c", script], **{kw: value})
    assert "run without the limit" in str(e.value)
    assert not ran.exists(), "the command ran although its limit was refused"
    with pytest.raises(pmon.ConfinementError, match=f"cannot set the {controller} limit"):
        pmon.start(["sh", "-c", script], **{kw: value})
    with pytest.raises(pmon.ConfinementError, match=f"cannot set the {controller} limit"):
        asyncio.run(pmon.run_async(["sh", "-c", script], **{kw: value}))
    assert not ran.exists(), "the command ran although its limit was refused"
    # The refusal leaves the backend as it was: a call without limits runs.
    assert pmon.run(["true"]).returncode == 0


@pytest.mark.skipif(not backend_available("pgroup"), reason="the pgroup backend is not available here")
def test_a_backend_without_a_cgroup_refuses_limits(tmp_path):
    ran = tmp_path / "ran"
    with pytest.raises(pmon.ConfinementError, match="cannot set the memory and cpu limits: limits need a cgroup, "
                                                    "and the pgroup backend has none") as refused:
        pmon.run(["sh", "-c", f"echo ran > {ran}"], confine="pgroup", memory_max=1 << 30, cpu_max=2)
    assert not ran.exists()
    # The fix is named as a Python caller writes it, not as a command-line flag.
    assert 'use the cgroup backend (confine="cgroup")' in str(refused.value)
    assert "--" not in str(refused.value)
    assert isinstance(pmon.ConfinementError("x"), OSError)


def test_bad_values_are_refused_before_anything_runs(tmp_path):
    ran = tmp_path / "ran"
    cmd = ["sh", "-c", f"echo ran > {ran}"]
    cases = [
        (dict(memory_max="100X"), ValueError, "'100X' is not a size"),
        (dict(memory_max="1.5G"), ValueError, "is not a size"),
        (dict(memory_max=0), ValueError, "'0' must be more than 0"),
        (dict(memory_max=-1), ValueError, "is not a size"),
        (dict(memory_max=1.5), TypeError, "memory_max must be a number of bytes"),
        (dict(memory_max=True), TypeError, "memory_max must be a number of bytes"),
        (dict(memory_high="1Q"), ValueError, "'1Q' is not a size"),
        (dict(memory_high=1.5), TypeError, "memory_high must be a number of bytes"),
        (dict(memory_high="200M", memory_max="100M"), ValueError, "memory_high must be below memory_max"),
        (dict(pids_max=-1), ValueError, "'-1' is not a whole number of processes"),
        (dict(pids_max=1 << 40), ValueError, "is too large"),
        (dict(pids_max="50"), TypeError, "pids_max must be a whole number"),
        (dict(cpu_max=0), ValueError, "out of range"),
        (dict(cpu_max=0.001), ValueError, "out of range"),
        (dict(cpu_max=float("nan")), ValueError, "out of range"),
        (dict(cpu_max="1"), TypeError, "cpu_max must be a number of cores"),
    ]
    for kwargs, exc, words in cases:
        with pytest.raises(exc, match=words):
            pmon.run(cmd, **kwargs)
        with pytest.raises(exc, match=words):
            pmon.start(cmd, **kwargs)
    assert not ran.exists()


def test_sizes_take_powers_of_1024():
    # As the CLI: K, M, G, T and lower case; a bare number is bytes.
    from pmon import _pmon
    assert _pmon.parse_size("1K") == 1024
    assert _pmon.parse_size("512m") == 512 << 20
    assert _pmon.parse_size("2G") == 2 << 30
    assert _pmon.parse_size("4096") == 4096
    assert _pmon.check_cores(1.5) == 1.5
    assert _pmon.parse_pids("50") == 50


@pytest.mark.skipif(not cgroup_available(), reason="the cgroup backend is not available here")
def test_cgroup_root_outside_the_mount_is_refused(tmp_path):
    with pytest.raises(pmon.ConfinementError, match="is not below the cgroup2 mount") as refused:
        pmon.run(["true"], confine="cgroup", cgroup_root=str(tmp_path))
    assert f"the cgroup root {tmp_path} (cgroup_root=)" in str(refused.value)
    assert os.path.isdir(tmp_path)


def test_default_pids_limit_or_a_note_in_python_words():
    # No pids_max: pids.max 4096 where the leaf can have it, else the call
    # runs anyway and the report's limits_note says why (in Python's words).
    leaf_pids = ('cg=$(awk \'$9 == "cgroup2" { print $5; exit }\' /proc/self/mountinfo); '
                 'cat "$cg$(sed -n s/^0:://p /proc/self/cgroup)/pids.max" 2>/dev/null || true')
    r = pmon.run(["sh", "-c", leaf_pids], capture_output=True, text=True, confine="cgroup")
    assert r.returncode == 0, r.stderr
    seen = r.stdout.strip()
    if seen == "4096":
        assert r.report["limits"]["pids_max"] == 4096 and r.report["limits_note"] is None
        assert r.report["pids_max_hit"] is False
    else:
        assert seen in ("", "max"), seen
        note = r.report["limits_note"]
        assert note.startswith("the default pids_max (4096) is not set: "), note
        assert "--" not in note, note
        assert r.report["limits"]["pids_max"] is None
    r = pmon.run(["true"], confine="pgroup")
    assert r.returncode == 0
    assert r.report["limits_note"] == "the default pids_max (4096) is not set: the pgroup backend has no cgroup"
    r = pmon.run(["sh", "-c", leaf_pids], capture_output=True, text=True, confine="cgroup", pids_max=0)
    assert r.returncode == 0 and r.stdout.strip() in ("", "max")
    assert r.report["limits"]["pids_max"] == 0 and r.report["limits_note"] is None
