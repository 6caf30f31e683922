# SPDX-License-Identifier: Apache-2.0
# The memory budget counts what else clients make the service (and the
# kernel, for it) hold: stdin written to jobs that do not read it, and the
# pipes of streams nobody reads. 40 jobs are each written 8 MiB of stdin:
# past a sixteenth of the budget (16 MiB) a write is refused in words that
# say so, and the service's peak RSS (VmHWM) stays low. Then 8 connections
# each open 64 streams they never read: the pipes' sizes together fit that
# sixteenth, and a stream past it is refused. The service lives, and
# another client's job runs on.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
PYTHONPATH="$(dirname "$0")" python3 - "$SOCK" "$SERVE_PID" <<'PY' || fail "the budget did not hold (see above)"
import fcntl, os, sys
from serve_rpc import FdRpc, Rpc
sock, pid, MiB = sys.argv[1], sys.argv[2], 1 << 20
F_GETPIPE_SZ = 1032
other = Rpc(sock)
keep = other.call("terminal/create", {"command": "sleep", "args": ["600"]})["terminalId"]
rpc = Rpc(sock)
jobs = [rpc.call("terminal/create", {"command": "sleep", "args": ["600"], "stdin": "pipe"})["terminalId"]
        for _ in range(40)]
written = refused = 0
for j in jobs:
    for _ in range(8):
        m = rpc.message("terminal/write", {"terminalId": j, "data": "x" * (MiB - 4096)})
        if "error" in m:
            assert "memory budget" in m["error"]["message"], m
            refused += 1
        else:
            written += 1
hwm = next(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmHWM:")) * 1024
print(f"stdin: {written} MiB writes taken, {refused} refused; peak RSS {hwm / MiB:.1f} MiB")
# (The sanitizers' shadow memory and quarantine: PMON_TEST_RSS_SCALE.)
scale = int(os.environ.get("PMON_TEST_RSS_SCALE", "1"))
assert refused > 0 and hwm <= 64 * MiB * scale, "stdin not yet read is not bounded by the budget"
for j in jobs:  # (what they held is given back)
    rpc.call("terminal/release", {"terminalId": j})

out = rpc.call("terminal/create", {"command": "sh", "args": ["-c", "head -c 1048576 /dev/zero | tr '\\0' a"]})
rpc.call("terminal/wait_for_exit", {"terminalId": out["terminalId"]})
conns, pipes, refused = [FdRpc(sock) for _ in range(8)], [], 0
for c in conns:
    for _ in range(64):
        m, fd = c.message("terminal/output", {"terminalId": out["terminalId"], "stream": True, "follow": False})
        if "error" in m:
            assert "memory budget" in m["error"]["message"], m
            refused += 1
        else:
            pipes.append(fcntl.fcntl(fd, F_GETPIPE_SZ))
print(f"streams: {len(pipes)} opened, pipes of {sum(pipes) / MiB:.1f} MiB in all; {refused} refused")
assert pipes and refused > 0 and sum(pipes) <= 16 * MiB, "unread streams are not bounded by the budget"
jobs = {j["terminalId"]: j["status"] for j in other.call("terminal/list", {})["terminals"]}
assert jobs.get(keep) == "running", jobs
PY
kill -0 "$SERVE_PID" || fail "the service died"
pass
