# SPDX-License-Identifier: Apache-2.0
# The pidns backend and isolate=True through the Python API: the namespace's
# init is the pmon executable installed beside the package (never python),
# the call sees its own pid namespace, and an escaped daemon is stopped.
import os
import pathlib
import threading
import time

import pytest

import pmon
from conftest import backend_available, start_time, wait_gone


pytestmark = pytest.mark.skipif(os.geteuid() != 0 and not backend_available("pidns"),
                                reason="no pid namespaces for this user here")


def _find_by_cmdline(cmdline, within=10.0):
    """(host pid, start time) of the process whose argv is CMDLINE, found
    from outside by a walk of the host's /proc."""
    want = b"\0".join(a.encode() for a in cmdline) + b"\0"
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                if pathlib.Path(f"/proc/{d}/cmdline").read_bytes() == want:
                    st = start_time(int(d))
                    if st is not None:
                        return int(d), st
            except OSError:
                continue
        time.sleep(0.01)
    return None


def test_pidns_call_is_pid_1s_child_and_its_daemon_is_stopped(tmp_path, recorded):
    # The daemon is found by the test itself, from outside (host pid and
    # start time), while the call waits: whether it is gone afterwards must
    # not rest on the pids pmon reports.
    go = tmp_path / "go"
    arg = f"100.{os.getpid()}"
    script = (f"echo $$; setsid sh -c 'exec sleep {arg}' & "
              f"while [ ! -f {go} ]; do sleep 0.01; done; exit 3")
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("r", pmon.run(
        ["sh", "-c", script], confine="pidns", capture_output=True, text=True)))
    t.start()
    daemon = _find_by_cmdline(["sleep", arg])
    if daemon:
        recorded.add(*daemon)
    go.touch()
    t.join()
    r = box["r"]
    assert daemon, "the daemon never showed up in the host's /proc"
    assert r.confinement == "pidns"
    assert r.returncode == 3
    # The shell is the init's first child in its own pid namespace.
    assert r.stdout.strip() == "2"
    assert r.cleanup_verified
    assert wait_gone([daemon], within=1.0) == [], f"the daemon {daemon} outlived the call"
    # The report names it by its host pid and start time.
    daemons = [l for l in r.leftovers if l["cmdline"] == f"sleep {arg}"]
    assert len(daemons) == 1 and daemons[0]["action"] == "SIGTERM", r.leftovers
    assert (daemons[0]["pid"], daemons[0]["start_time"]) == daemon, (daemons[0], daemon)


@pytest.mark.skipif(os.geteuid() != 0, reason="isolate needs a cgroup leaf (root or delegation)")
def test_isolate_sees_its_leaf_as_the_cgroup_root():
    r = pmon.run(["sh", "-c", "sed -n 's/^0:://p' /proc/self/cgroup"], isolate=True,
                 capture_output=True, text=True)
    assert r.returncode == 0 and r.cleanup_verified
    assert r.confinement == "pidns"
    assert r.stdout.strip() == "/"
    assert r.report["cgroup"] and "/pmon-" in r.report["cgroup"]


def test_a_wrong_init_executable_is_never_python():
    # The package must not fall back to /proc/self/exe (the interpreter).
    exe = pmon._find_pmon_executable()
    assert exe and os.path.basename(exe) == "pmon"


def test_pidns_without_the_pmon_executable_says_how_to_get_one(tmp_path):
    """Without a pmon executable for the namespace's init, the refusal says
    where the library looks for one."""
    found = pmon._find_pmon_executable()
    pmon._pmon.set_init_exe("")
    try:
        # A cgroup root no other test asks for: a selection not made before.
        with pytest.raises(pmon.ConfinementError) as err:
            pmon.run(["true"], confine="pidns", cgroup_root=str(tmp_path / "unused"))
    finally:
        pmon._pmon.set_init_exe(found)
    assert "the pmon executable for the namespace's init was not found" in str(err.value)
    assert "install the package with python/install.sh, or set PMON_BINARY" in str(err.value)
