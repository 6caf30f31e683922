# SPDX-License-Identifier: Apache-2.0
# The memory budget: a service under RLIMIT_AS (prlimit --as) survives a
# job writing 128 MiB of control bytes read by one client (each reply is
# bounded: more, next), refuses a 1 GiB outputByteLimit naming it and the
# budget, keeps a job past the budget's output share to what fits
# (truncated), and another client's job is served all along.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

# Address space for the binary, its libraries and the budget (256 MiB).
prlimit --as=$((640 << 20)) "$PMON" serve -q --listen "$SOCK" 2> "$t/serve.err" &
SERVE_PID=$!
record_pid "$SERVE_PID"
for i in $(seq 100); do
  [ -S "$SOCK" ] && break
  kill -0 "$SERVE_PID" 2>/dev/null || { cat "$t/serve.err" >&2; fail "pmon serve did not start"; }
  sleep 0.05
done
[ -S "$SOCK" ] || fail "pmon serve did not listen on $SOCK"

cat > "$t/memory.py" <<'PY'
import json, sys
from serve_rpc import Rpc
sock = sys.argv[1]
MiB = 1 << 20
N = 128 * MiB

def job(rpc, script, limit):
    return rpc.call("terminal/create", {"command": "sh", "args": ["-c", script], "outputByteLimit": limit})["terminalId"]

def written(rpc, tid, n):
    while rpc.call("terminal/output", {"terminalId": tid, "since": n - 1, "waitMs": 5000})["next"] < n:
        pass

other = Rpc(sock)
otid = job(other, "echo ready; exec sleep 1000", 4096)
a = Rpc(sock)
tid = job(a, "head -c %d /dev/zero; exec sleep 1000" % N, N)
written(a, tid, N)
# One client reads it all; no reply carries more than 4 MiB of it.
got, since, replies = 0, 0, 0
while True:
    r = a.call("terminal/output", {"terminalId": tid, "since": since})
    n = len(r["output"])
    if n > 4 * MiB:
        raise SystemExit("a reply carried %d bytes" % n)
    got, since, replies = got + n, r["next"], replies + 1
    if not r["more"]:
        break
if got != N or since != N:
    raise SystemExit("read %d bytes to %d in %d replies, not %d" % (got, since, replies, N))
# A 1 GiB outputByteLimit does not fit: refused, saying why.
m = a.message("terminal/create", {"command": "true", "outputByteLimit": 1 << 30})
msg = m.get("error", {}).get("message", "")
if "outputByteLimit" not in msg or "memory budget" not in msg:
    raise SystemExit("a 1 GiB outputByteLimit was not refused as too much: %s" % m)
# Past the output share (192 MiB of 256, 128 held above) a buffer keeps
# what fits, its newest bytes.
big = job(a, "head -c %d /dev/zero | tr '\\0' y; exec sleep 1000" % N, N)
written(a, big, N)
r = a.call("terminal/output", {"terminalId": big, "maxBytes": 1})
if not r["truncated"]:
    raise SystemExit("a buffer past the budget kept every byte: %s" % r)
kept, since = 0, None
while True:
    r = a.call("terminal/output", {"terminalId": big} if since is None else {"terminalId": big, "since": since})
    kept, since = kept + len(r["output"]), r["next"]
    if not r["more"]:
        break
if kept > 64 * MiB or since != N:
    raise SystemExit("the buffer past the budget kept %d bytes, to %d" % (kept, since))
# The other client and its job are served all along.
if other.call("terminal/output", {"terminalId": otid})["output"] != "ready\n":
    raise SystemExit("the other client's job is not served")
st = {j["terminalId"]: j["status"] for j in other.call("terminal/list", {})["terminals"]}
if st.get(otid) != "running" or st.get(tid) != "running":
    raise SystemExit("jobs not running: %s" % st)
print("ok: %d replies for 128 MiB; the buffer past the budget kept %d MiB" % (replies, kept // MiB))
PY
out=$(PYTHONPATH="$(dirname "$0")" timeout 300 python3 "$t/memory.py" "$SOCK") || {
  cat "$t/serve.err" >&2
  fail "memory budget: $out"
}
echo "$out"
kill -0 "$SERVE_PID" 2>/dev/null || { cat "$t/serve.err" >&2; fail "the service is gone"; }
grep VmHWM "/proc/$SERVE_PID/status"
pass
