# SPDX-License-Identifier: Apache-2.0
# The memory budget bounds the replies being built, not only the bytes
# read: ten connections each ask one terminal/output (maxBytes 16 MiB) of a
# job that wrote 16 MiB of control bytes (six bytes each in JSON) and never
# read their answers. The service's peak RSS (VmHWM) stays within the
# default budget (256 MiB) and 32 MiB of slack (its binary, heap
# fragmentation, one reply being built); it lives, and another client's job
# runs on.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
PYTHONPATH="$(dirname "$0")" python3 - "$SOCK" "$SERVE_PID" <<'PY' || fail "the budget did not hold (see above)"
import json, socket, sys, time
from serve_rpc import Rpc
sock, pid, MiB = sys.argv[1], sys.argv[2], 1 << 20
other = Rpc(sock)
keep = other.call("terminal/create", {"command": "sleep", "args": ["600"]})["terminalId"]
rpc = Rpc(sock)
job = rpc.call("terminal/create", {"command": "sh", "args": ["-c", "head -c 16777216 /dev/zero | tr '\\0' '\\1'"],
                                   "outputByteLimit": 16 * MiB})["terminalId"]
rpc.call("terminal/wait_for_exit", {"terminalId": job})
ask = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "terminal/output",
                  "params": {"terminalId": job, "maxBytes": 16 * MiB}}) + "\n"
idle = []
for _ in range(10):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(ask.encode())
    idle.append(s)
# Each is answered (the service builds its reply) once it has read it: a
# request of the last connection answered means all ten were.
probe = Rpc(sock)
probe.call("terminal/list", {})
hwm = next(int(l.split()[1]) for l in open(f"/proc/{pid}/status") if l.startswith("VmHWM:")) * 1024
jobs = {j["terminalId"]: j["status"] for j in other.call("terminal/list", {})["terminals"]}
print(f"peak RSS {hwm / MiB:.1f} MiB; the other job: {jobs.get(keep)}")
assert hwm <= 288 * MiB, f"peak RSS {hwm / MiB:.1f} MiB is over the budget (256 MiB) and its slack (32 MiB)"
assert jobs.get(keep) == "running", jobs
PY
kill -0 "$SERVE_PID" || fail "the service died"
pass
