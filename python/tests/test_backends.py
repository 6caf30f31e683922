# SPDX-License-Identifier: Apache-2.0
# One process, several backends: the package keeps one per confine= value,
# and two cgroup backends of one process name their leaves from the same
# prefix (pmon-<pid>-<start time>-). Their leaves must never collide (a
# collision once made the second backend fail and auto fall back to pidns).
import pmon
import pytest

from conftest import cgroup_available


@pytest.mark.skipif(not cgroup_available(), reason="the cgroup backend is not available here")
def test_cgroup_and_auto_backends_share_a_process():
    seen = set()
    for confine in ("cgroup", "auto", "cgroup", "auto"):
        r = pmon.run(["true"], confine=confine)
        assert r.confinement == "cgroup", (confine, r.report)
        assert r.report["confinement_passed_over"] == [], r.report
        seen.add(r.report["cgroup"])
    assert len(seen) >= 2, seen  # the two backends' leaves are different cgroups
