# SPDX-License-Identifier: Apache-2.0
# A session/close of 20 jobs on the pidns backend (and under --isolate)
# costs the service per member of the jobs, not per process of the host
# (200 more sleep here beside them): seen with strace, the stop never lists
# /proc and reads fewer /proc/PID/stat files than one walk of /proc would;
# every job and every member is gone, verified.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"
command -v strace > /dev/null || skip "strace is not installed"
strace -qq -e trace=getpid -o /dev/null true 2> /dev/null || skip "strace cannot trace here"
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0

# The jobs' processes name themselves by host pid (RECORD_SH).
[ -n "$PMON_TEST_HOSTPROC" ] || skip "no bind mount of the host's /proc (needs root and mount)"
modes=""
have_backend pidns && modes="pidns"
"$PMON" run -q --isolate -- true 2>/dev/null && modes="$modes isolate"
[ -n "$modes" ] || skip "neither the pidns backend nor --isolate is available here"

# The host's other processes: 200 of ours, recorded, gone at the end.
for _ in $(seq 200); do
  sleep 1000 &
  record_pid $!
done

jobs=20
for mode in $modes; do
  SOCK=$t/$mode.sock
  if [ "$mode" = isolate ]; then serve_start --isolate; else serve_start --confine pidns; fi
  # Each job: its command and a child, both recording themselves.
  PYTHONPATH=$(dirname "$0") python3 - "$SOCK" "$t/$mode" "$jobs" "$RECORD_SH" <<'EOF' &
import json, os, sys, time
from serve_rpc import Rpc

sock, base, n, record = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
c = Rpc(sock)
script = "rec=%s.$1; (%s; exec sleep 1000) & %s; exec sleep 1000" % (base, record, record)
tids = [c.call("terminal/create", {"command": "sh", "args": ["-c", script, "sh", str(i)], "sessionId": "s"})["terminalId"]
        for i in range(n)]
for i in range(n):  # both of each job's processes are there
    while not (os.path.exists("%s.%d" % (base, i)) and len(open("%s.%d" % (base, i)).read().split("\n")) > 2):
        time.sleep(0.01)
open(base + ".ready", "w").close()
while not os.path.exists(base + ".go"):
    time.sleep(0.01)
c.f.write((json.dumps({"jsonrpc": "2.0", "id": 0, "method": "session/close", "params": {"sessionId": "s"}}) + "\n").encode())
c.f.flush()
done, answered = {}, False
while len(done) < n or not answered:
    m = json.loads(c.f.readline())
    if m.get("method") == "terminal/exited":
        done[m["params"]["terminalId"]] = m["params"]["cleanupVerified"]
    elif m.get("id") == 0:
        answered = m.get("result", {}).get("stopping") == n or sys.exit("session/close: %r" % m)
if not all(done.values()):
    sys.exit("not every job was verified gone: %r" % done)
open(base + ".done", "w").close()
EOF
  closer=$!
  record_pid "$closer"
  for _ in $(seq 1200); do [ -f "$t/$mode.ready" ] && break; sleep 0.05; done
  [ -f "$t/$mode.ready" ] || fail "$mode: the jobs did not start"
  for i in $(seq 0 $((jobs - 1))); do record_file "$t/$mode.$i"; done
  host=$(ls -d /proc/[0-9]* 2>/dev/null | wc -l)

  strace -qq -p "$SERVE_PID" -e trace=openat -o "$t/$mode.trace" 2> "$t/$mode.strace.err" &
  tracer=$!
  for _ in $(seq 200); do
    [ "$(sed -n 's/^TracerPid:\t//p' "/proc/$SERVE_PID/status")" = "$tracer" ] && break
    sleep 0.05
  done
  [ "$(sed -n 's/^TracerPid:\t//p' "/proc/$SERVE_PID/status")" = "$tracer" ] ||
    fail "$mode: strace did not attach: $(cat "$t/$mode.strace.err")"
  touch "$t/$mode.go"
  wait "$closer" || fail "$mode: session/close did not end every job verified"
  kill -INT "$tracer"
  wait "$tracer" 2>/dev/null || true

  for i in $(seq 0 $((jobs - 1))); do
    all_gone "$t/$mode.$i" "$mode: the processes of job $i"
  done
  walks=$(grep -cE 'openat\(AT_FDCWD, "/proc", ' "$t/$mode.trace" || true)
  stats=$(grep -cE 'openat\(AT_FDCWD, "/proc/[0-9]+/stat"' "$t/$mode.trace" || true)
  [ "$walks" = 0 ] || fail "$mode: the stop of $jobs jobs listed /proc $walks times"
  [ "$stats" -lt "$host" ] ||
    fail "$mode: the stop of $jobs jobs read $stats /proc/PID/stat files, more than the host's $host processes"
  kill -TERM "$SERVE_PID"
  wait "$SERVE_PID" || fail "$mode: pmon serve exited $?"
  echo "ok: $mode: $jobs jobs stopped reading $stats stat files ($host processes here), no walk of /proc"
done
pass "$modes"
