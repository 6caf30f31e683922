# SPDX-License-Identifier: Apache-2.0
# 2000 terminal/wait_for_port requests pending on three jobs, 1000 from
# each of two connections (one may have 1024 waiting), each job holding a
# socket that does not listen yet, share the service's port scans: over a
# window of about a second, the kernel's TCP table is read at most about
# once per scan interval (50 ms) for all of them together, not once per
# waiter or per job (seen with strace); another client is answered
# meanwhile; once the jobs listen every waiter gets its job's port.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"
command -v strace > /dev/null || skip "strace is not installed"
strace -qq -e trace=getpid -o /dev/null true 2> /dev/null || skip "strace cannot trace here"
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0

serve_start
# Each job holds an unbound TCP socket (so its tables are looked at) and
# listens on a port of its own once $t/go exists.
job='import os, socket, sys, time
s = socket.socket()
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
s.bind(("127.0.0.1", 0))
s.listen()
time.sleep(1000)'
PYTHONPATH=$(dirname "$0") python3 - "$SOCK" "$t" "$job" <<'EOF' &
import json, os, socket, sys
from serve_rpc import Rpc

sock, t, job = sys.argv[1:4]
c = Rpc(sock)
tids = [c.call("terminal/create", {"command": "python3", "args": ["-c", job, t + "/go"]})["terminalId"]
        for _ in range(3)]
# 1000 waiters in one write on each of two connections, then their
# answers as they come.
conns = [c, Rpc(sock)]
for k, w in enumerate(conns):
    lines = []
    for i in range(1000 * k, 1000 * (k + 1)):
        lines.append(json.dumps({"jsonrpc": "2.0", "id": 1000 + i, "method": "terminal/wait_for_port",
                                 "params": {"terminalId": tids[i % 3], "timeoutMs": 120000}}) + "\n")
    w.f.write("".join(lines).encode())
    w.f.flush()
open(t + "/waiting.tmp", "w").write(" ".join(tids))
os.rename(t + "/waiting.tmp", t + "/waiting")
ports = {}
for i in range(2000):
    m = json.loads(conns[i // 1000].f.readline())
    if "error" in m:
        sys.exit("a waiter was answered with an error: %r" % m)
    tid = tids[(m["id"] - 1000) % 3]
    if ports.setdefault(tid, m["result"]["port"]) != m["result"]["port"]:
        sys.exit("waiters of %s were given two ports: %r" % (tid, m))
if len(ports) != 3:
    sys.exit("not every job's waiters were answered: %r" % ports)
open(t + "/answered", "w").write(json.dumps(ports))
for tid in tids:
    c.call("terminal/release", {"terminalId": tid})
EOF
waiters=$!
record_pid "$waiters"
for _ in $(seq 2400); do [ -f "$t/waiting" ] && break; sleep 0.05; done
[ -f "$t/waiting" ] || fail "the waiters were never sent"

# The window: strace on the service's thread while all 2000 wait.
strace -qq -ttt -p "$SERVE_PID" -e trace=openat -o "$t/trace" 2> "$t/strace.err" &
tracer=$!
for _ in $(seq 200); do
  [ "$(sed -n 's/^TracerPid:\t//p' "/proc/$SERVE_PID/status")" = "$tracer" ] && break
  sleep 0.05
done
[ "$(sed -n 's/^TracerPid:\t//p' "/proc/$SERVE_PID/status")" = "$tracer" ] ||
  fail "strace did not attach: $(cat "$t/strace.err")"
client_open c
r=$(call c terminal/list '{"sessionId":"nobody"}')
reply_is -m "another client's terminal/list" "$r" "result.terminals=[]"
sleep 1
kill -INT "$tracer"
wait "$tracer" 2>/dev/null || true
reads=$(grep -cE 'openat\(AT_FDCWD, "/proc/[0-9]+/net/tcp"' "$t/trace" || true)
first=$(head -1 "$t/trace" | cut -d' ' -f1)
last=$(tail -1 "$t/trace" | cut -d' ' -f1)
# One read per 50 ms interval the window spans, with room for its ends.
allowed=$(python3 -c 'import sys; print(int((float(sys.argv[2]) - float(sys.argv[1])) / 0.05) * 2 + 4)' "$first" "$last")
[ "$reads" -ge 1 ] || fail "the tables were never read while 2000 waited"
[ "$reads" -le "$allowed" ] ||
  fail "2000 waiters on 3 jobs read /proc/PID/net/tcp $reads times between $first and $last (at most $allowed)"
echo "ok: /proc/PID/net/tcp read $reads times between $first and $last (at most $allowed)"

touch "$t/go"
wait "$waiters" || fail "the waiters were not all answered with their job's port"
[ -f "$t/answered" ] || fail "no answers"
client_close c
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass "$(cat "$t/answered")"
