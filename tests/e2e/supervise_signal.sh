# SPDX-License-Identifier: Apache-2.0
# Signals to pmon supervise: SIGTERM during a restart delay ends it at once
# (exiting (signal), 128+15, no further spawn); SIGINT while a child runs
# stops the child's tree first (killed signal=15, 128+2).
. "$(dirname "$0")/common.inc"

wait_for_line() {  # FILE REGEX: up to ~10 s
  for _ in $(seq 1000); do grep -qE "$2" "$1" 2>/dev/null && return 0; sleep 0.01; done
  return 1
}
mask() { sed -E 's/child=[0-9]+/child=N/; s/pidfd=[0-9]+/pidfd=N/' "$1"; }

for engine in pidfd sigchld; do
  if [ "$engine" = pidfd ]; then first='pmon: engine=pidfd child=N pidfd=N'; else first='pmon: engine=sigchld child=N'; fi

  # SIGTERM in the middle of a 60 s backoff: if the delay were not
  # interruptible, a second child would be announced before pmon stopped.
  : > "$t/delay.err"
  "$PMON" supervise --engine "$engine" --restart-delay-ms 60000 --max-restarts 5 -- sh -c 'exit 3' 2> "$t/delay.err" &
  pm=$!
  record_pid "$pm"
  wait_for_line "$t/delay.err" '^pmon: restart 1/5$' || fail "$engine: no restart line: $(cat "$t/delay.err")"
  kill -TERM "$pm"
  rc=0; wait "$pm" || rc=$?
  [ "$rc" = 143 ] || fail "$engine delay: exit $rc, expected 143; $(cat "$t/delay.err")"
  printf '%s\n' "$first" 'pmon: child=N exited status=3' 'pmon: restart 1/5' 'pmon: exiting (signal)' > "$t/want"
  mask "$t/delay.err" | diff -u "$t/want" - || fail "$engine delay: wrong lines"

  # SIGINT while the child runs.
  : > "$t/int.err"
  "$PMON" supervise --engine "$engine" --max-restarts 5 -- sleep 9.94 2> "$t/int.err" &
  pm=$!
  record_pid "$pm"
  wait_for_line "$t/int.err" '^pmon: engine=' || fail "$engine: no engine line"
  child=$(sed -nE 's/^pmon: engine=[a-z]+ child=([0-9]+).*/\1/p' "$t/int.err")
  st=$(start_time_of "$child")
  [ -n "$st" ] || fail "$engine: child $child is not running"
  record_pid "$child"
  kill -INT "$pm"
  rc=0; wait "$pm" || rc=$?
  [ "$rc" = 130 ] || fail "$engine int: exit $rc, expected 130; $(cat "$t/int.err")"
  printf '%s\n' "$first" 'pmon: child=N killed signal=15' 'pmon: exiting (signal)' > "$t/want"
  mask "$t/int.err" | diff -u "$t/want" - || fail "$engine int: wrong lines"
  ! alive "$child" "$st" || fail "$engine: child $child survived SIGINT to pmon"

  # A second signal skips the grace: a TERM-ignoring child under a 120 s
  # grace is KILLed at once (without it, pmon would still be waiting).
  : > "$t/esc.err"
  "$PMON" supervise --engine "$engine" --grace 120s -- sh -c 'trap "" TERM; exec sleep 9.92' 2> "$t/esc.err" &
  pm=$!
  record_pid "$pm"
  wait_for_line "$t/esc.err" '^pmon: engine=' || fail "$engine: no engine line"
  child=$(sed -nE 's/^pmon: engine=[a-z]+ child=([0-9]+).*/\1/p' "$t/esc.err")
  st=$(start_time_of "$child")
  record_pid "$child"
  # Only once the TERM-ignoring sleep runs (trap done, exec'd).
  for _ in $(seq 1000); do
    [ "$(tr '\0' ' ' < "/proc/$child/cmdline" 2>/dev/null)" = "sleep 9.92 " ] && break; sleep 0.01
  done
  kill -TERM "$pm"
  sleep 0.3
  kill -TERM "$pm"
  for _ in $(seq 1000); do [ -n "$(start_time_of "$pm")" ] && [ "$(state_of "$pm")" != Z ] || break; sleep 0.01; done
  ! alive "$pm" "$(start_time_of "$pm")" || fail "$engine: a second SIGTERM did not skip the 120 s grace"
  rc=0; wait "$pm" || rc=$?
  [ "$rc" = 143 ] || fail "$engine escalate: exit $rc; $(cat "$t/esc.err")"
  printf '%s\n' "$first" 'pmon: child=N killed signal=9' 'pmon: exiting (signal)' > "$t/want"
  mask "$t/esc.err" | diff -u "$t/want" - || fail "$engine escalate: wrong lines"
  ! alive "$child" "$st" || fail "$engine: child $child survived"
  echo "ok: $engine"
done
pass
