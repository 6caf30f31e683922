# SPDX-License-Identifier: Apache-2.0
# E6: the main process exits normally while its children keep running.
# By default pmon stops them (TERM) and lists each in the report's leftovers
# with the action that ended it; the exit status is the main's own. With
# --wait-tree pmon waits until they are all gone by themselves, returns only
# after them, and still lists them (action "waited"); --timeout still bounds
# that wait and then stops them. Always reported, on every backend.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/escapes.inc"

check_reported() {  # check_reported LABEL ACTION NAME...
  local label=$1 want=$2 n pid st
  shift 2
  for n in "$@"; do
    read -r pid st < <(proc_named "$t/procs" "$n")
    [ -n "$pid" ] || fail "$label: $n was not recorded"
    report_is -m "$label: $n (pid $pid) in the report's leftovers" "$t/r.json" "leftovers[pid=$pid].start_time=$st" \
      "leftovers[pid=$pid].action=$want"
  done
}

for b in $(backends); do
  # Default: stopped.
  rm -f "$t/procs"
  run_probed run -q --confine "$b" --grace 2s --report "$t/r.json" -- \
    "$ESCAPER" "$t/procs" -x exit:4 name=s,kids=1 name=o,orphan
  record_file "$t/procs"
  [ $rc = 4 ] || fail "$b/stop: pmon exit $rc, want the main's 4"
  report_is -m "$b/stop" "$t/r.json" outcome=exited exit_code=4 stop.reason=leftovers
  check_reported "$b/stop" SIGTERM s s.kid o
  report_is -m "$b/stop: leftovers are not exactly the 3" "$t/r.json" "leftovers.#=3"
  assert_all_gone "$b/stop" "$t/procs"
  assert_nothing_left "$b/stop"
  report_is -m "$b/stop: cleanup not verified" "$t/r.json" cleanup_verified=true
  echo "ok: $b/stop"

  # --wait-tree: pmon returns after them; they ended on their own.
  rm -f "$t/procs"
  run_probed run -q --confine "$b" --wait-tree --grace 2s --report "$t/r.json" -- \
    "$ESCAPER" "$t/procs" -x exit:0 name=w1,life=1200 name=w2,orphan,life=1500
  record_file "$t/procs"
  [ $rc = 0 ] || fail "$b/wait: pmon exit $rc"
  for n in w1 w2; do
    grep -q " $n.done\$" "$t/procs" || fail "$b/wait: $n did not end by itself before pmon returned"
  done
  check_reported "$b/wait" waited w1 w2
  report_is -m "$b/wait: pmon signalled the tree" "$t/r.json" stop.signal_sent_ms=null
  report_is -m "$b/wait: pmon killed the tree" "$t/r.json" stop.kill_sent_ms=null
  assert_all_gone "$b/wait" "$t/procs"
  assert_nothing_left "$b/wait"
  report_is -m "$b/wait: cleanup not verified" "$t/r.json" cleanup_verified=true
  echo "ok: $b/wait-tree"

  # --wait-tree bounded by --timeout: then stopped, and reported so.
  rm -f "$t/procs"
  run_probed run -q --confine "$b" --wait-tree --timeout 1500ms --grace 2s --report "$t/r.json" -- \
    "$ESCAPER" "$t/procs" -x exit:0 name=s,kids=1 name=o,orphan
  record_file "$t/procs"
  [ $rc = 124 ] || fail "$b/wait+timeout: pmon exit $rc, want 124"
  report_is -m "$b/wait+timeout" "$t/r.json" outcome=timeout stop.reason=timeout
  check_reported "$b/wait+timeout" SIGTERM s s.kid o
  assert_all_gone "$b/wait+timeout" "$t/procs"
  assert_nothing_left "$b/wait+timeout"
  echo "ok: $b/wait-tree+timeout"
done
pass
