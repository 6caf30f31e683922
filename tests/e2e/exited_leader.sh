# SPDX-License-Identifier: Apache-2.0
# A process whose main thread has exited while another thread runs (state Z
# in /proc/PID/stat, more than one thread, still in its cgroup): a kernel may
# not kill it through cgroup.kill alone. Every path that kills a tree ends
# it all the same, and says so: the stop after the main process exited, the
# stop at --timeout and on cancel (every backend, and --isolate), the crash
# guard after SIGKILL of pmon, `pmon gc` after a crashed owner, supervise
# and init. Each checks the process gone by pid and start time, and no leaf
# left. The process ignores SIGTERM, so only the kill step can end it.
. "$(dirname "$0")/common.inc"
H=$HELPERS/exited_leader
[ -x "$H" ] || fail "helper $H missing"
CG=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)

# Records every "pid start_time ..." line of FILE as started by the scenario.
record_lines() {
  local pid st rest
  [ -f "$1" ] || return 0
  while read -r pid st rest; do
    echo "$pid $st" >> "$t/pids"
    echo "$pid $st" >> "$STATE/pids"
  done < "$1"
}

# Waits until FILE has N lines (the helper's processes are in place).
wait_lines() {
  for _ in $(seq 3000); do [ -f "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ] && return 0; sleep 0.02; done
  fail "$3: the helper did not get going within 60 s: $(cat "$1" 2>/dev/null)"
}

# Fails unless every process of FILE is gone (by pid and start time). Under
# LABEL; the processes were alive in state Z with threads when recorded.
all_gone() {
  local pid st rest
  while read -r pid st rest; do
    for _ in $(seq 500); do alive "$pid" "$st" || break; sleep 0.02; done  # init may be reaping it
    ! alive "$pid" "$st" || fail "$2: $rest (pid $pid, state $(state_of "$pid"), $(threads_of "$pid") threads) survived"
  done < "$1"
}

# No leaf of owner pid $1 is left under the cgroup2 mount.
no_leaf_of() {
  [ -n "$CG" ] || return 0
  local left
  left=$(find "$CG" -maxdepth 3 -type d -name "pmon-$1-*" 2>/dev/null)
  [ -z "$left" ] || fail "$2: leaf left behind: $left"
}

opt_of() { if [ "$1" = isolate ]; then echo --isolate; else echo --confine "$1"; fi; }

modes=$(backends)
[ -n "$PMON_TEST_HOSTPROC" ] && "$PMON" run -q --isolate -- true 2>/dev/null && modes="$modes isolate"

# The call: a shell that starts the helper and, once it is in place, exits 0
# (exit) or waits forever ignoring TERM (pause). The helper is a daemon of
# its own session, except under pgroup (which by design misses those).
call() {  # OUT END BACKEND
  local d=daemon; [ "$3" = pgroup ] && d=
  echo 'trap "" TERM; "$0" "$1" ignore-term '"$d"' & until [ -s "$1" ]; do sleep 0.01; done
        [ "$2" = exit ] && exit 0; while :; do sleep 0.05; done'
}

for b in $modes; do
  # 1. The main process exits: the helper is a leftover, stopped; 2. --timeout.
  for mode in exit timeout; do
    out=$t/$b.$mode; rm -f "$out"
    end=exit; extra=(); want=0
    [ $mode = timeout ] && { end=pause; extra=(--timeout 1s); want=124; }
    rc=0
    "$PMON" run -q $(opt_of "$b") "${extra[@]}" --grace 300ms --report "$t/r.json" -- \
      sh -c "$(call "$out" $end "$b")" "$H" "$out" $end || rc=$?
    record_lines "$out"
    [ -s "$out" ] || fail "$b/$mode: the helper never got going"
    [ $rc = $want ] || fail "$b/$mode: pmon exit $rc, want $want"
    all_gone "$out" "$b/$mode"
    read -r pid _ < "$out"
    report_is -m "$b/$mode" "$t/r.json" cleanup_verified=true "leftovers[pid=$pid].action=SIGKILL"
    leaf=$(jget "$t/r.json" cgroup)
    [ "$leaf" = null ] || [ ! -d "$leaf" ] || fail "$b/$mode: leaf $leaf left behind"
    echo "ok: $b/$mode"
  done

  # 3. Cancel: SIGTERM to pmon.
  out=$t/$b.cancel; rm -f "$out"
  "$PMON" run -q $(opt_of "$b") --grace 300ms --report "$t/r.json" -- \
    sh -c "$(call "$out" pause "$b")" "$H" "$out" pause &
  pp=$!; record_pid "$pp"
  wait_lines "$out" 1 "$b/cancel"
  record_lines "$out"
  kill -TERM "$pp"
  rc=0; wait "$pp" || rc=$?
  [ $rc = 143 ] || fail "$b/cancel: pmon exit $rc, want 143"
  all_gone "$out" "$b/cancel"
  report_is -m "$b/cancel" "$t/r.json" cleanup_verified=true
  no_leaf_of "$pp" "$b/cancel"
  echo "ok: $b/cancel"
done

if have_backend cgroup; then
  # 4. SIGKILL of pmon: the crash guard ends the helper and removes the leaf.
  out=$t/guard; rm -f "$out"
  "$PMON" run -v --confine cgroup -- sh -c "$(call "$out" pause cgroup)" "$H" "$out" pause 2> "$t/guard.err" &
  pp=$!; record_pid "$pp"
  wait_lines "$out" 1 guard
  record_lines "$out"
  guard=$(sed -n 's/.*guard pid \([0-9]*\).*/\1/p' "$t/guard.err")
  [ -n "$guard" ] || fail "guard: pmon has no crash guard: $(cat "$t/guard.err")"
  record_pid "$guard"
  read -r pid st _ < "$out"
  alive "$pid" "$st" && [ "$(state_of "$pid")" = Z ] || fail "guard: the helper is not an exited-leader process (test is void)"
  kill -KILL "$pp"
  wait "$pp" 2>/dev/null || true
  for _ in $(seq 1500); do  # the guard works on its own: up to 30 s on a busy machine
    alive "$pid" "$st" || [ -n "$(find "$CG" -maxdepth 3 -type d -name "pmon-$pp-*")" ] || break
    sleep 0.02
  done
  all_gone "$out" guard
  no_leaf_of "$pp" guard
  echo "ok: guard"

  # 5. pmon gc after an owner that crashed with its guard.
  out=$t/gc; rm -f "$out"
  "$PMON" run -v --confine cgroup -- sh -c "$(call "$out" pause cgroup)" "$H" "$out" pause 2> "$t/gc.err" &
  pp=$!; record_pid "$pp"
  wait_lines "$out" 1 gc
  record_lines "$out"
  guard=$(sed -n 's/.*guard pid \([0-9]*\).*/\1/p' "$t/gc.err")
  [ -n "$guard" ] || fail "gc: pmon has no crash guard: $(cat "$t/gc.err")"
  record_pid "$guard"
  gst=$(start_time_of "$guard")
  kill -KILL "$guard"
  for _ in $(seq 3000); do alive "$guard" "$gst" || break; sleep 0.01; done
  kill -KILL "$pp"
  wait "$pp" 2>/dev/null || true
  read -r pid st _ < "$out"
  alive "$pid" "$st" || fail "gc: the helper died without gc (test is void)"
  leaf=$(find "$CG" -maxdepth 3 -type d -name "pmon-$pp-*")
  [ -n "$leaf" ] || fail "gc: no leaf of pmon $pp (test is void)"
  rc=0; "$PMON" gc > "$t/gc.out" || rc=$?
  [ $rc = 0 ] || fail "gc: exit $rc: $(cat "$t/gc.out")"
  grep -q "^removed $leaf " "$t/gc.out" || fail "gc: does not report $leaf: $(cat "$t/gc.out")"
  all_gone "$out" gc
  no_leaf_of "$pp" gc
  echo "ok: gc"
fi

# 6. supervise: the first child leaves the helper running and fails; before
# the restart it is stopped. The second child exits 0.
for b in $modes; do
  [ $b = pgroup ] || [ $b = isolate ] && continue
  out=$t/sup.$b; rm -f "$out"
  rc=0
  "$PMON" supervise --confine "$b" --max-restarts 1 --grace 300ms -- sh -c '
    [ -s "$1" ] && exit 0
    "$0" "$1" ignore-term daemon & until [ -s "$1" ]; do sleep 0.01; done; exit 3' "$H" "$out" 2> "$t/sup.err" &
  pp=$!; record_pid "$pp"
  rc=0; wait "$pp" || rc=$?
  record_lines "$out"
  [ -s "$out" ] || fail "supervise/$b: the helper never got going: $(cat "$t/sup.err")"
  [ $rc = 0 ] || fail "supervise/$b: exit $rc, want 0: $(cat "$t/sup.err")"
  grep -q "restart 1/1" "$t/sup.err" || fail "supervise/$b: no restart: $(cat "$t/sup.err")"
  all_gone "$out" "supervise/$b"
  no_leaf_of "$pp" "supervise/$b"
  echo "ok: supervise/$b"
done

# 7. init (not PID 1): the command exits and leaves the helper; it is stopped.
for b in cgroup subreaper; do
  have_backend "$b" || continue
  out=$t/init.$b; rm -f "$out"
  "$PMON" init -q --confine "$b" --grace 300ms -- sh -c '
    "$0" "$1" ignore-term daemon & until [ -s "$1" ]; do sleep 0.01; done; exit 0' "$H" "$out" &
  pp=$!; record_pid "$pp"
  rc=0; wait "$pp" || rc=$?
  record_lines "$out"
  [ -s "$out" ] || fail "init/$b: the helper never got going"
  [ $rc = 0 ] || fail "init/$b: exit $rc, want 0"
  all_gone "$out" "init/$b"
  no_leaf_of "$pp" "init/$b"
  echo "ok: init/$b"
done
pass
