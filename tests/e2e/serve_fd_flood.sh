# SPDX-License-Identifier: Apache-2.0
# A service out of file descriptors does not spin. Under a hard limit of
# 64 open files it is flooded with 200 connections: it takes what fits,
# then leaves the others waiting (a listener it kept watching would wake it
# at once, for ever, each accept failing with EMFILE). Its CPU time over
# two seconds of that must stay far below what a spin takes; once the flood
# is gone, a client is served as ever.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

bash -c 'ulimit -n 64 && exec "$0" serve -q --listen "$1"' "$PMON" "$SOCK" 2> "$t/serve.err" &
SERVE_PID=$!
record_pid "$SERVE_PID"
for i in $(seq 200); do [ -S "$SOCK" ] && break; sleep 0.05; done
[ -S "$SOCK" ] || fail "pmon serve did not listen: $(cat "$t/serve.err")"
[ "$(sed -n 's/^Max open files *\([0-9]*\).*/\1/p' "/proc/$SERVE_PID/limits")" = 64 ] || fail "not under a limit of 64"

# The flood: 200 connections, held until the fifo closes.
mkfifo "$t/hold"
python3 -c '
import socket, sys
conns = []
for _ in range(200):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    conns.append(s)
print("connected", flush=True)
sys.stdin.read()
' "$SOCK" < "$t/hold" > "$t/flood.out" &
flood=$!
record_pid "$flood"
exec {hold}> "$t/hold"
for i in $(seq 200); do grep -q connected "$t/flood.out" && break; sleep 0.05; done
grep -q connected "$t/flood.out" || fail "the flood did not connect"
# Until the service holds all it may (64 fds): then it is out of them.
for i in $(seq 200); do
  [ "$(ls "/proc/$SERVE_PID/fd" | wc -l)" -ge 64 ] && break
  sleep 0.05
done
[ "$(ls "/proc/$SERVE_PID/fd" | wc -l)" -ge 64 ] || fail "the service never ran out of fds: $(ls "/proc/$SERVE_PID/fd" | wc -l) open"

# utime + stime, in clock ticks, over a two-second window.
cpu() { local s; s=$(cat "/proc/$SERVE_PID/stat"); s=${s##*) }; set -- $s; echo $(( ${12} + ${13} )); }
hz=$(getconf CLK_TCK)
before=$(cpu)
sleep 2
used=$(( $(cpu) - before ))
# A spin takes most of a core (here, on a loaded machine, at least a
# quarter of one); waiting takes next to nothing.
[ "$used" -lt $((hz / 5)) ] || fail "the service out of fds used $used ticks of CPU in 2 s (at $hz a second): it spins"
echo "CPU out of fds: $used ticks in 2 s (at $hz a second)"

# The flood goes; a client is served.
exec {hold}>&-
wait "$flood" || true
timeout 30 "$PMON" jobs --socket "$SOCK" > "$t/jobs" || fail "no answer once the flood was gone: $?"
grep -q '^ID ' "$t/jobs" || fail "pmon jobs: $(cat "$t/jobs")"
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
