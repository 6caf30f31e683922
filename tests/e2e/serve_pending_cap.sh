# SPDX-License-Identifier: Apache-2.0
# Requests waiting for their answer are capped per connection: a client
# that pipelines 1100 terminal/wait_for_exit on one job gets, at once, an
# error for each past the first 1024 (naming the limit and what to do), a
# request answered at once is still answered meanwhile, another connection
# may still wait, and once the job exits every one of the 1024 is answered.
# The same on pmon mcp, as tool errors.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
cat > "$t/pending.py" <<'PY'
import json, sys
from serve_rpc import Rpc
sock = sys.argv[1]
CAP, N = 1024, 1100
a = Rpc(sock)
# A job that ends once a line is written to its stdin (a pipe).
tid = a.call("terminal/create", {"command": "sh", "args": ["-c", "read x; exit 3"], "stdin": "pipe"})["terminalId"]
lines = b"".join((json.dumps({"jsonrpc": "2.0", "id": 1000 + i, "method": "terminal/wait_for_exit",
                              "params": {"terminalId": tid}}) + "\n").encode() for i in range(N))
a.f.write(lines + (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "terminal/list", "params": {}}) + "\n").encode())
a.f.flush()
# The ones over the cap are refused at once, in order, then the list.
for i in range(CAP, N):
    m = json.loads(a.f.readline())
    err = m.get("error", {})
    if m.get("id") != 1000 + i or err.get("code") != -32000 or "1024" not in err.get("message", ""):
        raise SystemExit("wait %d over the cap was answered %s" % (i, str(m)[:300]))
m = json.loads(a.f.readline())
if m.get("id") != 1 or "terminals" not in m.get("result", {}):
    raise SystemExit("a request answered at once, behind the refused ones: %s" % str(m)[:300])
print("refused:", err["message"])
# Another connection may still wait on the same job.
b = Rpc(sock)
b.f.write((json.dumps({"jsonrpc": "2.0", "id": 5, "method": "terminal/wait_for_exit", "params": {"terminalId": tid}}) + "\n").encode())
b.f.flush()
a.call("terminal/write", {"terminalId": tid, "data": "go\n"})
seen = set()
while len(seen) < CAP:
    m = json.loads(a.f.readline())
    if "method" in m:
        continue  # terminal/exited
    if m.get("result", {}).get("exitCode") != 3 or not (1000 <= m.get("id", 0) < 1000 + CAP):
        raise SystemExit("a wait under the cap was answered %s" % str(m)[:300])
    seen.add(m["id"])
m = json.loads(b.f.readline())
if m.get("id") != 5 or m.get("result", {}).get("exitCode") != 3:
    raise SystemExit("the other connection's wait was answered %s" % str(m)[:300])
# The cap counts what waits now: answered, the connection may wait again.
tid2 = a.call("terminal/create", {"command": "sh", "args": ["-c", "read x; exit 4"], "stdin": "pipe"})["terminalId"]
a.f.write(b"".join((json.dumps({"jsonrpc": "2.0", "id": 5000 + i, "method": "terminal/wait_for_exit",
                                "params": {"terminalId": tid2}}) + "\n").encode() for i in range(CAP)))
a.f.flush()
if a.call("terminal/write", {"terminalId": tid2, "data": "go\n"}) != {}:
    raise SystemExit("write refused")
n = 0
while n < CAP:
    m = json.loads(a.f.readline())
    if "method" in m:
        continue
    if m.get("result", {}).get("exitCode") != 4:
        raise SystemExit("a wait after the first ones were answered: %s" % str(m)[:300])
    n += 1
print("ok")
PY
out=$(PYTHONPATH="$(dirname "$0")" timeout 120 python3 "$t/pending.py" "$SOCK") || {
  echo "$out"
  cat "$t/serve.err" >&2
  fail "pending requests: $out"
}
echo "$out"
kill -0 "$SERVE_PID" 2>/dev/null || fail "the service is gone"

# The same on pmon mcp, where one over the cap is a tool error.
cat > "$t/mcp.py" <<'PY'
import json, subprocess, sys
CAP, N = 1024, 1030
p = subprocess.Popen([sys.argv[1], "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def send(i, method, params):
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
def reply():
    while True:
        m = json.loads(p.stdout.readline())
        if "id" in m:
            return m
def tool(i, name, args):
    send(i, "tools/call", {"name": name, "arguments": args})
send(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
p.stdin.flush()
reply()
tool(1, "start", {"command": "read x; exit 3", "stdin": "pipe"})
p.stdin.flush()
jid = reply()["result"]["structuredContent"]["id"]
for i in range(N):
    tool(1000 + i, "wait", {"id": jid})
p.stdin.flush()
for i in range(CAP, N):
    m = reply()
    r = m.get("result", {})
    if m.get("id") != 1000 + i or not r.get("isError") or "1024" not in r["content"][0]["text"]:
        raise SystemExit("mcp: wait %d over the cap was answered %s" % (i, str(m)[:300]))
tool(2, "write", {"id": jid, "data": "go\n"})
p.stdin.flush()
n = 0
while n < CAP:
    m = reply()
    if m["id"] == 2:
        continue
    if m.get("result", {}).get("structuredContent", {}).get("exit_code") != 3:
        raise SystemExit("mcp: a wait under the cap was answered %s" % str(m)[:300])
    n += 1
p.stdin.close()
sys.exit(p.wait())
PY
timeout 120 python3 "$t/mcp.py" "$PMON" || fail "pmon mcp: waits past the cap"
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"

# All connections together: under --memory-budget 16M (a sixteenth, 1 MiB,
# for requests waiting) five connections of 1024 waits each do not all
# fit; the ones past the share are refused naming the budget, the rest are
# answered when the job exits, and then the share is free again.
serve_start --memory-budget 16M
cat > "$t/share.py" <<'PY'
import json, sys
from serve_rpc import Rpc
sock = sys.argv[1]
CAP = 1024
a = Rpc(sock)
tid = tid0 = a.call("terminal/create", {"command": "sh", "args": ["-c", "read x; exit 5"], "stdin": "pipe"})["terminalId"]
lines = b"".join((json.dumps({"jsonrpc": "2.0", "id": 1000 + i, "method": "terminal/wait_for_exit",
                              "params": {"terminalId": tid}}) + "\n").encode() for i in range(CAP))
mark = (json.dumps({"jsonrpc": "2.0", "id": "mark", "method": "terminal/list", "params": {}}) + "\n").encode()
conns, refused, admitted, msg = [], [], 0, ""
for k in range(5):
    c = Rpc(sock)
    c.f.write(lines + mark)
    c.f.flush()
    n = 0
    while True:
        m = json.loads(c.f.readline())
        if m.get("id") == "mark":
            break
        msg = m.get("error", {}).get("message", "")
        if m.get("error", {}).get("code") != -32000 or "memory budget" not in msg or "--memory-budget" not in msg:
            raise SystemExit("connection %d: a wait was answered %s" % (k, str(m)[:300]))
        n += 1
    refused.append(n)
    admitted += CAP - n
    conns.append((c, CAP - n))
print("refused per connection:", refused, msg)
if refused[0] != 0 or sum(refused) == 0:
    raise SystemExit("refused per connection: %s" % refused)
a.call("terminal/write", {"terminalId": tid, "data": "go\n"})
for c, want in conns:
    for _ in range(want):
        m = json.loads(c.f.readline())
        if m.get("result", {}).get("exitCode") != 5:
            raise SystemExit("an admitted wait was answered %s" % str(m)[:300])
# Given back: as many may wait again.
tid = a.call("terminal/create", {"command": "sh", "args": ["-c", "read x; exit 6"], "stdin": "pipe"})["terminalId"]
c, _ = conns[-1]
c.f.write(lines.replace(tid0.encode(), tid.encode()) + mark)
c.f.flush()
m = json.loads(c.f.readline())
if m.get("id") != "mark":
    raise SystemExit("after the answers, a wait was refused: %s" % str(m)[:300])
print("ok: %d admitted in all" % admitted)
PY
out=$(PYTHONPATH="$(dirname "$0")" timeout 120 python3 "$t/share.py" "$SOCK") || {
  echo "$out"
  cat "$t/serve.err" >&2
  fail "waiting requests past the budget's share: $out"
}
echo "$out"
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
