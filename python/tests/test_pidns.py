# The pidns backend and isolate=True through the Python API: the namespace's
# init is the pmon executable installed beside the package (never python),
# the call sees its own pid namespace, and an escaped daemon is stopped.
import os

import pytest

import pmon
from conftest import backend_available, present


pytestmark = pytest.mark.skipif(os.geteuid() != 0 and not backend_available("pidns"),
                                reason="no pid namespaces for this user here")


def test_pidns_call_is_pid_1s_child_and_its_daemon_is_stopped(tmp_path):
    ready = tmp_path / "ready"
    script = (f"echo $$; setsid sh -c 'touch {ready}; exec sleep 100' & "
              f"while [ ! -f {ready} ]; do sleep 0.01; done; exit 3")
    r = pmon.run(["sh", "-c", script], confine="pidns", capture_output=True, text=True)
    assert r.confinement == "pidns"
    assert r.returncode == 3
    # The shell is the init's first child in its own pid namespace.
    assert r.stdout.strip() == "2"
    assert r.cleanup_verified
    daemons = [l for l in r.leftovers if "sleep 100" in l["cmdline"]]
    assert len(daemons) == 1 and daemons[0]["action"] == "SIGTERM"
    # Host pid and start time from the report: that process is gone.
    rep = {(l["pid"], l["start_time"]) for l in r.report["leftovers"]}
    assert rep and not any(present(pid, st) for pid, st in rep)


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
