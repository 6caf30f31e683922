# SPDX-License-Identifier: Apache-2.0
# Seed 004's second canonical run, on both engines:
#   pmon supervise --timeout-ms 400 -- sleep 9.99
# prints "killed signal=15" (TERM reached the sleep: its blocked mask was
# reset) and "exiting (timeout)", exits 124, and the sleep is gone (checked
# by pid). A longer run also checks that pidfd=N is the real fd of the child.
. "$(dirname "$0")/common.inc"

wait_for_line() {  # FILE REGEX: up to ~10 s
  for _ in $(seq 1000); do grep -qE "$2" "$1" 2>/dev/null && return 0; sleep 0.01; done
  return 1
}

for engine in pidfd sigchld; do
  rc=0
  "$PMON" supervise --engine "$engine" --timeout-ms 400 -- sleep 9.99 2> "$t/err" || rc=$?
  [ "$rc" = 124 ] || fail "$engine: exit $rc, expected 124; stderr: $(cat "$t/err")"
  child=$(sed -nE 's/^pmon: engine=[a-z]+ child=([0-9]+).*/\1/p' "$t/err")
  [ -n "$child" ] || fail "$engine: no engine line: $(cat "$t/err")"
  if [ "$engine" = pidfd ]; then
    fd=$(sed -nE 's/^pmon: engine=pidfd child=[0-9]+ pidfd=([0-9]+)$/\1/p' "$t/err")
    first="pmon: engine=pidfd child=$child pidfd=$fd"
  else
    first="pmon: engine=sigchld child=$child"
  fi
  printf '%s\n' "$first" "pmon: child=$child killed signal=15" 'pmon: exiting (timeout)' > "$t/want"
  diff -u "$t/want" "$t/err" || fail "$engine: the lines differ from seed 004's"
  # No `sleep 9.99` survives: the pid is gone, or belongs to someone else now.
  if [ -r "/proc/$child/cmdline" ] && [ "$(tr '\0' ' ' < "/proc/$child/cmdline")" = "sleep 9.99 " ] &&
     [ "$(state_of "$child")" != Z ]; then
    fail "$engine: sleep 9.99 (pid $child) survived"
  fi
  echo "ok: $engine canonical"

  # Live: pidfd=N names the child in pmon's fd table (fdinfo "Pid:").
  : > "$t/live.err"
  "$PMON" supervise --engine "$engine" --timeout-ms 5000 -- sleep 9.97 2> "$t/live.err" &
  pm=$!
  record_pid "$pm"
  wait_for_line "$t/live.err" '^pmon: engine=' || fail "$engine: no engine line"
  child=$(sed -nE 's/^pmon: engine=[a-z]+ child=([0-9]+).*/\1/p' "$t/live.err")
  st=$(start_time_of "$child")
  [ -n "$st" ] || fail "$engine: child $child is not running"
  record_pid "$child"
  [ "$(tr '\0' ' ' < "/proc/$child/cmdline")" = "sleep 9.97 " ] || fail "$engine: child $child is not the sleep"
  if [ "$engine" = pidfd ]; then
    fd=$(sed -nE 's/^pmon: engine=pidfd child=[0-9]+ pidfd=([0-9]+)$/\1/p' "$t/live.err")
    grep -qE "^Pid:[[:space:]]+$child\$" "/proc/$pm/fdinfo/$fd" ||
      fail "pidfd=$fd is not a pidfd of child $child: $(cat "/proc/$pm/fdinfo/$fd")"
  fi
  # The child must not see a blocked TERM (the supervisor's mask is reset).
  sigblk=$(awk '/^SigBlk/{print $2}' "/proc/$child/status")
  [ "$sigblk" = 0000000000000000 ] || fail "$engine: child's blocked mask is $sigblk"
  rc=0; wait "$pm" || rc=$?
  [ "$rc" = 124 ] || fail "$engine live: exit $rc; $(cat "$t/live.err")"
  ! alive "$child" "$st" || fail "$engine: child $child survived"
  echo "ok: $engine live"
done
pass
