# SPDX-License-Identifier: Apache-2.0
# Requests half read count against the memory budget: 300 connections each
# send a request of almost 1 MiB without its newline. The service holds
# what its share (an eighth of --memory-budget, 32 MiB of the default 256M)
# allows; each connection past it is told so in one line and closed. Its
# size stays bounded (VmRSS), a client with small requests is answered all
# along, a job of another connection runs on (its pid and start time), the
# connections it held get their answers once their lines end, and once they
# are gone the share is free for others again.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
client_open c
r=$(call c terminal/create '{"command":"sh","args":["-c","echo survivor; exec sleep 1000"]}')
job=$(jget "$r" result.terminalId)
main_of c "$job"

cat > "$t/half.py" <<'PY'
import json, os, select, socket, sys, time
from serve_rpc import Rpc
sock, pid = sys.argv[1], sys.argv[2]
MiB = 1 << 20
N = 300
scale = int(os.environ.get("PMON_TEST_RSS_SCALE", "1"))

def rss():
    for l in open("/proc/%s/status" % pid):
        if l.startswith("VmRSS:"):
            return int(l.split()[1]) // 1024

idle = Rpc(sock)
idle.call("terminal/list", {})
before = rss()
head = b'{"jsonrpc":"2.0","id":7,"method":"terminal/list","params":{"x":"'
body = head + b"x" * (MiB - 16 - len(head))
conns, told = [], 0
for i in range(N):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.settimeout(30)
    try:
        s.sendall(body)
    except (BrokenPipeError, ConnectionResetError):
        pass
    conns.append(s)
    if i % 50 == 49:
        # A client with small requests is answered meanwhile.
        idle.call("terminal/list", {})
# Each connection is held (no answer yet) or was told and closed.
held = []
for s in conns:
    s.setblocking(False)
deadline = time.time() + 30
pending = list(conns)
while pending and time.time() < deadline:
    r, _, _ = select.select(pending, [], [], 0.2)
    if not r:
        # Nothing more to read for now: the rest are held.
        break
    for s in r:
        try:
            data = s.recv(65536)
        except (ConnectionResetError, BlockingIOError):
            data = b""
        if data:
            m = json.loads(data.split(b"\n")[0])
            msg = m.get("error", {}).get("message", "")
            if "memory budget" not in msg or "--memory-budget" not in msg:
                raise SystemExit("a connection past the share was told: %s" % data[:300])
            told += 1
            s.setblocking(True)
            s.settimeout(10)
            try:
                rest = data.split(b"\n", 1)[1] + s.recv(65536)
            except ConnectionResetError:
                rest = b""
            if rest:
                raise SystemExit("a connection that was told went on: %s" % rest[:200])
        pending.remove(s)
held = pending
grown = rss() - before
print("%d connections held, %d told and closed; the service grew by %d MiB" % (len(held), told, grown))
if grown > 48 * scale:
    raise SystemExit("the service grew by %d MiB for %d connections with half-read requests" % (grown, N))
if not held or told == 0:
    raise SystemExit("%d held and %d told: the share was not reached, or nothing was held" % (len(held), told))
if idle.call("terminal/list", {})["terminals"][0]["status"] != "running":
    raise SystemExit("the other connection's job is not running")
# The held ones get their answers once their lines end.
for s in held:
    s.setblocking(True)
    s.settimeout(30)
    s.sendall(b'"}}\n')
    m = json.loads(s.makefile("rb").readline())
    if m.get("id") != 7 or "terminals" not in m.get("result", {}):
        raise SystemExit("a held connection's request was answered with %s" % str(m)[:300])
for s in conns:
    s.close()
# The share is free again: a large request on a new connection is answered.
again = Rpc(sock)
big = again.message("terminal/list", {"x": "y" * (MiB - 1000)})
if "terminals" not in big.get("result", {}):
    raise SystemExit("a large request after the others closed: %s" % str(big)[:300])
print("ok")
PY
out=$(PYTHONPATH="$(dirname "$0")" timeout 240 python3 "$t/half.py" "$SOCK" "$SERVE_PID") || {
  echo "$out"
  cat "$t/serve.err" >&2
  fail "half-read requests: $out"
}
echo "$out"
kill -0 "$SERVE_PID" 2>/dev/null || fail "the service is gone"
alive "$mpid" "$mst" || fail "the job of connection c is gone"
r=$(call c terminal/output '{"terminalId":"'"$job"'"}')
reply_is -m "the job's output" "$r" $'result.output=survivor\n'
client_close c
wait_gone "$mpid" "$mst" || fail "the job of connection c outlived it"
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
