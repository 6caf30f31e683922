# SPDX-License-Identifier: Apache-2.0
# A Python process that runs commands through pmon is one session when an
# envelope is configured (PMON_SESSION_* in its environment, or the config
# file): every command is a leaf in the session's cgroup
# pmon-session-p<pid>-..., in a cgroup namespace of its own (as root), the
# report says the session, and the session's cgroup is gone once the
# process has ended. An envelope the host cannot set raises
# ConfinementError and runs nothing. Each case runs in a Python of its own:
# the backend, and so the session, is made once per process.
import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import cgroup_available

CHILD = r"""
import json, os, pmon
r = pmon.run(["sh", "-c", "cat /proc/self/cgroup; echo ran > " + os.environ["RAN"]], capture_output=True,
             confine="cgroup")
print(json.dumps({"out": r.stdout.decode(), "session": r.report.get("session"), "cgroup": r.report["cgroup"],
                  "pid": os.getpid()}))
"""


def child(tmp_path, **env):
    e = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), RAN=str(tmp_path / "ran"), **env)
    e.pop("PMON_CONFIG", None)
    e["XDG_CONFIG_HOME"] = str(tmp_path / "no-config")
    return subprocess.run([sys.executable, "-c", CHILD], env=e, capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(not cgroup_available(), reason="the cgroup backend is not available here")
def test_a_python_process_is_one_session(tmp_path):
    # pids_max 0: an envelope that writes no limit, so any cgroup2 host can
    # make the session (the limits themselves are the guest suite's).
    p = child(tmp_path, PMON_SESSION_PIDS_MAX="0")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    leaf = pathlib.PurePosixPath(r["cgroup"])
    assert leaf.parent.name.startswith("pmon-session-p%d-" % r["pid"]), r
    assert r["session"]["cgroup"] == str(leaf.parent), r
    assert r["session"]["name"] == "pmon %d" % r["pid"], r
    assert r["session"]["envelope_set_by"] == "PMON_SESSION_PIDS_MAX", r
    if os.geteuid() == 0:
        assert "0::/\n" in r["out"], r["out"]  # its own cgroup namespace
    assert not pathlib.Path(r["session"]["cgroup"]).exists(), "the session's cgroup outlived the process"


@pytest.mark.skipif(not cgroup_available(), reason="the cgroup backend is not available here")
def test_an_envelope_is_set_or_runs_nothing(tmp_path):
    # Where this host's leaves go, and whether their controllers are there.
    probe = child(tmp_path)
    assert probe.returncode == 0, probe.stderr
    leaves = pathlib.Path(json.loads(probe.stdout)["cgroup"]).parent
    (tmp_path / "ran").unlink()
    p = child(tmp_path, PMON_SESSION_MEMORY_MAX="1G")
    # It can be set where the leaves' parent has memory enabled for its
    # children already, or offers it and holds no process to stop pmon
    # enabling it (a test process that ran pmon itself sits in its own
    # scope's supervisor cgroup, where this child's leaves go too).
    offered = "memory" in (leaves / "cgroup.controllers").read_text().split()
    enabled = "memory" in (leaves / "cgroup.subtree_control").read_text().split()
    empty = (leaves / "cgroup.procs").read_text().strip() == ""
    if os.geteuid() == 0 and (enabled or (offered and empty)):
        # A host that has it (the guest suite): the session's cgroup holds it.
        assert p.returncode == 0, p.stderr
        r = json.loads(p.stdout)
        assert r["session"]["envelope"]["memory_max"] == 1 << 30, r
        assert r["session"]["envelope"]["memory_high"] == 3 << 28, r
        assert (tmp_path / "ran").exists()
        return
    assert p.returncode != 0
    assert "ConfinementError" in p.stderr, p.stderr
    assert "the session's envelope (memory.max 1 GiB" in p.stderr and "set by PMON_SESSION_MEMORY_MAX" in p.stderr, p.stderr
    assert not (tmp_path / "ran").exists(), "the command ran"
