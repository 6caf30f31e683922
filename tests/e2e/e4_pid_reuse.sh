# SPDX-License-Identifier: Apache-2.0
# E4: pmon never signals a stranger. A leftover of the call ("victim") dies of
# the first signal and is reaped; an outside process (not in the boundary,
# not a descendant of pmon) immediately takes over its pid number — and,
# with setsid, its process group and session number too. Another leftover
# ignores SIGTERM, so the stop goes on to SIGKILL after --grace. A stop path
# that addressed processes by a remembered number (kill(pid) or killpg of a
# recycled group) would kill the stranger; pidfds and cgroup membership
# cannot. The stranger must survive, on every backend.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/escapes.inc"
RECYCLER=$HELPERS/pid_recycler
[ -x "$RECYCLER" ] || fail "helper $RECYCLER missing"

# One attempt; returns 2 when the stranger did not get the number before
# SIGKILL was sent (inconclusive: someone else took the pid, or too slow).
attempt() {
  local b=$1 pmon_pid rec_pid vpid vst spid sst sns method kill_ns
  rm -f "$t/procs" "$t/stranger" "$t/r.json"
  "$PROBE" "$t/probe" -- "$PMON" run -q --confine "$b" --grace 4s --report "$t/r.json" -- \
    "$ESCAPER" "$t/procs" -x exit:0 name=stubborn,ignore name=victim,orphan &
  pmon_pid=$!
  for _ in $(seq 1000); do
    [ -f "$t/procs" ] && [ "$(wc -l < "$t/procs")" -ge 3 ] && break
    sleep 0.01
  done
  read -r vpid vst < <(proc_named "$t/procs" victim)
  [ -n "$vpid" ] || fail "$b: the victim was not recorded"
  "$RECYCLER" "$vpid" "$vst" "$t/stranger" 3500 &
  rec_pid=$!
  rc=0; wait $pmon_pid || rc=$?
  record_file "$t/procs"
  # The recycler is done once the stranger exists or its deadline passed.
  for _ in $(seq 500); do
    [ -f "$t/stranger" ] && break
    kill -0 $rec_pid 2>/dev/null || break
    sleep 0.01
  done
  if [ ! -f "$t/stranger" ]; then
    wait $rec_pid || true
    return 2
  fi
  read -r spid sst sns method < "$t/stranger"
  echo "$spid $sst" >> "$t/pids"; echo "$spid $sst" >> "$STATE/pids"
  [ "$spid" = "$vpid" ] || fail "$b: recycler made pid $spid, not $vpid"
  if [ "$sst" = "$vst" ]; then
    # Recycled within the same clock tick: pid + start time cannot tell the
    # two apart, so the report cannot be checked — but pmon must still not
    # have signalled the stranger (it also checks the parent). Try again.
    alive "$spid" "$sst" || fail "$b: pmon killed the same-tick stranger that recycled pid $spid"
    kill -9 "$spid"; wait $rec_pid || true
    return 2
  fi
  kill_ns=$(( $(date -d "$(rj "$t/r.json" .started_at)" +%s%N) +
              $(rj "$t/r.json" '.stop.kill_sent_ms * 1000000 | floor') ))
  if [ "$sns" -ge "$kill_ns" ]; then
    kill -9 "$spid"; wait $rec_pid || true
    return 2
  fi

  [ $rc = 0 ] || fail "$b: pmon exit $rc"
  alive "$spid" "$sst" || fail "$b: pmon killed the stranger that recycled pid $spid ($method)"
  report_is -m "$b: the report lists the stranger as the call's" "$t/r.json" "leftovers{start_time=$sst}.#=0" \
    "escaped{start_time=$sst}.#=0"
  report_is -m "$b: victim not reported as ended by SIGTERM" "$t/r.json" "leftovers[pid=$vpid].action=SIGTERM"
  read -r spid2 _ < <(proc_named "$t/procs" stubborn)
  report_is -m "$b: stubborn leftover not reported SIGKILL" "$t/r.json" "leftovers[pid=$spid2].action=SIGKILL"
  report_is -m "$b: cleanup not verified" "$t/r.json" cleanup_verified=true
  assert_all_gone "$b" "$t/procs"
  assert_nothing_left "$b"
  kill -9 "$spid"
  wait $rec_pid || true
  echo "ok: $b (stranger $spid via $method, $(( (kill_ns - sns) / 1000000 )) ms before SIGKILL)"
  return 0
}

for b in $(backends); do
  for try in 1 2 3; do
    r=0; attempt "$b" || r=$?
    [ $r = 0 ] && break
    [ $try = 3 ] && skip "$b: could not recycle the victim's pid before SIGKILL in 3 tries"
    echo "retry: $b: the stranger came too late"
  done
done
pass
