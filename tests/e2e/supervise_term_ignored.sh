# SPDX-License-Identifier: Apache-2.0
# A child that ignores SIGTERM: the stop escalates to SIGKILL after --grace,
# both for the main child on the deadline and for a grandchild left behind
# by a failing child before a restart (give-up).
. "$(dirname "$0")/common.inc"

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

for engine in pidfd sigchld; do
  # The main child ignores TERM (SIG_IGN survives exec): killed signal=9.
  rc=0
  "$PMON" supervise --engine "$engine" --timeout-ms 1000 --grace 700ms -- \
    sh -c 'trap "" TERM; exec sleep 9.96' 2> "$t/err" || rc=$?
  [ "$rc" = 124 ] || fail "$engine: exit $rc; $(cat "$t/err")"
  child=$(sed -nE 's/^pmon: engine=[a-z]+ child=([0-9]+).*/\1/p' "$t/err")
  [ "$(sed -n 2,3p "$t/err")" = "$(printf '%s\n' "pmon: child=$child killed signal=9" 'pmon: exiting (timeout)')" ] ||
    fail "$engine: $(cat "$t/err")"
  [ "$(wc -l < "$t/err")" = 3 ] || fail "$engine: $(cat "$t/err")"

  # A grandchild that ignores TERM outlives its failing parent: before pmon
  # gives up (or restarts), it is stopped, and only after the grace.
  rm -f "$t/gc"
  start=$(now_ms)
  rc=0
  "$PMON" supervise --engine "$engine" --max-restarts 0 --grace 1s -- sh -c '
    sh -c "trap \"\" TERM; echo \$\$ \$(cut -d\" \" -f22 /proc/\$\$/stat) > '"$t"'/gc.tmp; mv '"$t"'/gc.tmp '"$t"'/gc; exec sleep 9.95" &
    while [ ! -f '"$t"'/gc ]; do sleep 0.01; done
    exit 4' 2> "$t/err2" || rc=$?
  elapsed=$(( $(now_ms) - start ))
  read -r pid st < "$t/gc"
  echo "$pid $st" >> "$t/pids"; echo "$pid $st" >> "$STATE/pids"
  [ "$rc" = 1 ] || fail "$engine leftover: exit $rc; $(cat "$t/err2")"
  [ "$(wc -l < "$t/err2")" = 3 ] && sed -n 2p "$t/err2" | grep -qE '^pmon: child=[0-9]+ exited status=4$' &&
    [ "$(sed -n 3p "$t/err2")" = 'pmon: giving up after 0 restarts' ] || fail "$engine leftover: $(cat "$t/err2")"
  ! alive "$pid" "$st" || fail "$engine: the TERM-ignoring grandchild $pid survived"
  # It ignored TERM, so it can only have died by the KILL after the grace.
  [ "$elapsed" -ge 1000 ] || fail "$engine: SIGKILL came before the 1s grace (${elapsed}ms)"
  echo "ok: $engine"
done
pass
