# SPDX-License-Identifier: Apache-2.0
# Services started at once on one socket path with a stale socket there
# (a service that was SIGKILLed leaves one): exactly one runs and answers;
# each other one exits 125 with the line "a service already runs on PATH".
# The lock next to the socket (PATH.lock) is what makes it so; the one
# service removes it with its socket when it stops. Three rounds of eight.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

for round in 1 2 3; do
  python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$SOCK"
  [ -S "$SOCK" ] || fail "no stale socket made"
  pids=()
  for i in 1 2 3 4 5 6 7 8; do
    "$PMON" serve -q --listen "$SOCK" 2> "$t/err.$i" &
    pids+=("$!")
    record_pid "$!"
  done
  sts=()
  for pid in "${pids[@]}"; do sts+=("$(start_time_of "$pid")"); done
  # Until all but one have gone (10 s at most).
  for _ in $(seq 200); do
    left=0
    for i in 0 1 2 3 4 5 6 7; do alive "${pids[i]}" "${sts[i]}" && left=$((left + 1)); done
    [ $left -le 1 ] && break
    sleep 0.05
  done
  running=()
  for i in 0 1 2 3 4 5 6 7; do alive "${pids[i]}" "${sts[i]}" && running+=("$i"); done
  [ ${#running[@]} = 1 ] || fail "round $round: ${#running[@]} services run on $SOCK (of the 8 started at once)"
  for i in 0 1 2 3 4 5 6 7; do
    [ "$i" = "${running[0]}" ] && continue
    rc=0; wait "${pids[i]}" || rc=$?
    n=$((i + 1))
    [ $rc = 125 ] || fail "round $round: service $n exited $rc: $(cat "$t/err.$n")"
    [ "$(cat "$t/err.$n")" = "pmon: serve: a service already runs on $SOCK" ] ||
      fail "round $round: service $n said: $(cat "$t/err.$n")"
  done
  one=${running[0]}
  "$PMON" jobs --socket "$SOCK" > "$t/jobs" || fail "round $round: the service that runs does not answer"
  [ -e "$SOCK.lock" ] || fail "round $round: no lock file while the service runs"
  kill -TERM "${pids[one]}"
  wait "${pids[one]}" || fail "round $round: the service exited $?"
  [ ! -e "$SOCK" ] && [ ! -e "$SOCK.lock" ] || fail "round $round: the service left $(ls "$t" | grep serve.sock)"
done
pass
