# SPDX-License-Identifier: Apache-2.0
# A long pmon mcp session never reaches a dead end: 5000 short starts (five
# times --max-jobs' default) each leave a job that is over, and run and start
# still answer after them; the spool files of the jobs that are over stay
# within four times --spool-limit (64K here: 256 KiB) all along, and the log
# of the running jobs' records within 64 KiB and a line.
. "$(dirname "$0")/common.inc"

PYTHONPATH="$(dirname "$0")" python3 - "$PMON" <<'PY' || fail "the session ran out (see above)"
import os, sys
from mcp_stdio import Mcp

m = Mcp(sys.argv[1], "--spool-limit", "64K")
bound, line, spool, worst, log_worst = 4 * 64 * 1024, "head -c 20000 /dev/zero | tr '\\0' x", None, 0, 0


def held():
    """Bytes in the session's spool files now, less those of running jobs
    (and the log of records, measured apart)."""
    global log_worst
    running = {j["id"] for j in m.tool("list", {})["structuredContent"]["jobs"] if j["status"] != "exited"}
    total = 0
    for f in os.listdir(spool):
        if f.startswith("jobs.log"):
            try:
                log_worst = max(log_worst, os.stat(os.path.join(spool, f)).st_size)
            except FileNotFoundError:
                pass
            continue
        try:  # (a job that ends meanwhile may make room: its files go)
            total += os.stat(os.path.join(spool, f)).st_size if f.split(".")[0] not in running else 0
        except FileNotFoundError:
            pass
    return total


for i in range(5000):
    job = m.tool("start", {"command": line})["structuredContent"]["id"]
    if spool is None:
        m.tool("wait", {"id": job})
        spool = os.path.dirname(m.tool("output", {"id": job})["structuredContent"]["spool_path"])
    if i % 250 == 0:
        worst = max(worst, held())
m.tool("wait", {"id": job})
worst = max(worst, held())
assert worst <= bound, f"the spool files of ended jobs held {worst} bytes, over {bound}"
assert log_worst <= 65 * 1024, f"the log of records held {log_worst} bytes, over 64 KiB and a line"
r = m.tool("run", {"command": "echo still here"})["structuredContent"]
assert r["output"] == "still here\n" and r["exit_code"] == 0, r
m.tool("start", {"command": "true"})
print(f"5000 starts; ended jobs' spools at most {worst} bytes (bound {bound}); the log of records at most {log_worst}")
assert m.close() == 0
PY
pass
