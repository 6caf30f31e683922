# SPDX-License-Identifier: Apache-2.0
# A session/close of many jobs does not hold up other clients: the stops
# begin a few at a time, and another connection's request, sent right
# behind the close, is answered before the last of them has begun. Seen
# with strace, by order only: the reply to the other client is written
# before the service sends the last job its first signal (SIGTERM). The
# close is still answered with how many it stops, every job still ends
# with its terminal/exited, verified, and every process is gone.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"
command -v strace > /dev/null || skip "strace is not installed"
strace -qq -e trace=getpid -o /dev/null true 2> /dev/null || skip "strace cannot trace here"
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0

jobs=100
serve_start
PYTHONPATH=$(dirname "$0") python3 - "$SOCK" "$t" "$jobs" <<'EOF' &
import json, os, sys, time
from serve_rpc import Rpc

sock, base, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
a, b = Rpc(sock), Rpc(sock)
for _ in range(n):
    a.call("terminal/create", {"command": "sleep", "args": ["1000"], "sessionId": "s"})
with open(base + "/pids.tmp", "w") as f:
    for j in a.call("terminal/list", {"sessionId": "s"})["terminals"]:
        f.write("%d\n" % j["pid"])
os.rename(base + "/pids.tmp", base + "/pids.list")
b.call("terminal/list", {})  # (b's connection is set up before the close)
while not os.path.exists(base + "/go"):
    time.sleep(0.01)
line = lambda i, m, p: (json.dumps({"jsonrpc": "2.0", "id": i, "method": m, "params": p}) + "\n").encode()
a.f.write(line(0, "session/close", {"sessionId": "s"}))
a.f.flush()
b.f.write(line(777, "terminal/list", {"sessionId": "other"}))
b.f.flush()
r = json.loads(b.f.readline())
if r.get("id") != 777 or r.get("result") != {"terminals": []}:
    sys.exit("terminal/list during the close: %r" % r)
done, answered = {}, False
while len(done) < n or not answered:
    m = json.loads(a.f.readline())
    if m.get("method") == "terminal/exited":
        done[m["params"]["terminalId"]] = m["params"]["cleanupVerified"]
    elif m.get("id") == 0:
        answered = m.get("result", {}).get("stopping") == n or sys.exit("session/close: %r" % m)
if not all(done.values()):
    sys.exit("not every job was verified gone: %r" % done)
open(base + "/done", "w").close()
EOF
closer=$!
record_pid "$closer"
for _ in $(seq 1200); do [ -f "$t/pids.list" ] && break; sleep 0.05; done
[ -f "$t/pids.list" ] || fail "the jobs did not start"
: > "$t/jobs"
while read -r pid; do
  echo "$pid $(start_time_of "$pid")" >> "$t/jobs"
  record_pid "$pid"
done < "$t/pids.list"
[ "$(grep -c ' [0-9]' "$t/jobs")" = "$jobs" ] || fail "not every job is running: $(cat "$t/jobs")"

strace -qq -p "$SERVE_PID" -e trace=pidfd_send_signal,kill,writev,sendmsg -s 64 -o "$t/trace" 2> "$t/strace.err" &
tracer=$!
for _ in $(seq 200); do
  [ "$(sed -n 's/^TracerPid:\t//p' "/proc/$SERVE_PID/status")" = "$tracer" ] && break
  sleep 0.05
done
[ "$(sed -n 's/^TracerPid:\t//p' "/proc/$SERVE_PID/status")" = "$tracer" ] ||
  fail "strace did not attach: $(cat "$t/strace.err")"
touch "$t/go"
wait "$closer" || fail "session/close did not end every job verified"
kill -INT "$tracer"
wait "$tracer" 2>/dev/null || true

all_gone "$t/jobs" "the jobs after the close"
# (strace shows a reply's quotes as \")
reply=$(grep -nF '\"id\":777,' "$t/trace" | head -1 | cut -d: -f1)
[ -n "$reply" ] || fail "the reply to the other client is not in the trace: $(head -c 2000 "$t/trace")"
sent='^(pidfd_send_signal|kill)\(.*SIGTERM'
terms=$(grep -cE "$sent" "$t/trace" || true)
last=$(grep -nE "$sent" "$t/trace" | tail -1 | cut -d: -f1)
[ "$terms" -ge "$jobs" ] || fail "$terms SIGTERMs in the trace for $jobs jobs"
[ "$reply" -lt "$last" ] ||
  fail "the other client was answered only after all $jobs stops had begun (trace line $reply, last SIGTERM line $last)"
before=$(head -n "$reply" "$t/trace" | grep -cE "$sent" || true)
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass "the other client was answered after $before of $terms SIGTERMs, every job stopped and verified"
