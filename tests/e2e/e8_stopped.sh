# SPDX-License-Identifier: Apache-2.0
# E8: SIGSTOPped processes, where a TERM stays pending, are still dead within
# grace + kill: pmon follows the first signal with SIGCONT (so a stopped
# process with TERM's default action dies of it during the grace: action
# "SIGTERM"), and a stopped one that ignores TERM is SIGKILLed. Also a main
# that stopped itself, when --timeout fires, and a cancel (SIGTERM to pmon);
# on every backend and under --isolate.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/escapes.inc"

wait_lines() { echo "until [ -f $t/procs ] && [ \$(wc -l < $t/procs) -ge $1 ]; do sleep 0.01; done"; }
SPECS=(name=st,stop name=so,orphan,stop name=si,stop,ignore)
for b in $(stop_modes); do
  for mode in exit timeout cancel; do
    rm -f "$t/procs"
    if [ $mode = exit ]; then
      run_probed run -q $(confine_opt "$b") --grace 3s --report "$t/r.json" -- \
        "$ESCAPER" "$t/procs" -x exit:0 "${SPECS[@]}"
      want=0
    elif [ $mode = timeout ]; then
      # The main shell stops itself once everything is recorded and says so
      # ($t/ready). That must come before the deadline (a process made after
      # the first signal meets only the KILL, and is no leftover of the
      # snapshot): on a machine too busy for that, the run proves nothing
      # and is made again with twice the timeout, up to 48 s.
      for timeout in 3 6 12 24 48; do
        rm -f "$t/procs" "$t/ready"
        run_probed run -q $(confine_opt "$b") --timeout "$timeout"s --grace 3s --report "$t/r.json" -- \
          sh -c "\"\$0\" \"\$@\" & $(wait_lines 4); touch $t/ready; kill -STOP \$\$" "$ESCAPER" "$t/procs" -x wait "${SPECS[@]}"
        [ -f "$t/ready" ] && break
        record_file "$t/procs"; assert_nothing_left "$b/$mode (not ready within ${timeout}s)"
        echo "note: $b/$mode: not ready within ${timeout}s on this machine; again with more"
      done
      [ -f "$t/ready" ] || fail "$b/$mode: the call was not in place within 48 s"
      want=124
    else
      cancel_probed "$t/procs" 4 run -q $(confine_opt "$b") --grace 3s --report "$t/r.json" -- \
        "$ESCAPER" "$t/procs" -x wait "${SPECS[@]}"
      want=143
    fi
    record_file "$t/procs"
    [ $rc = $want ] || fail "$b/$mode: pmon exit $rc, want $want"
    [ "$(wc -l < "$t/procs")" = 4 ] || fail "$b/$mode: escaper did not record 4 processes"
    for n in st so si; do
      read -r pid _ < <(proc_named "$t/procs" $n)
      want_action=SIGTERM; [ $n = si ] && want_action=SIGKILL
      report_is -m "$b/$mode: stopped $n (pid $pid)" "$t/r.json" "leftovers[pid=$pid].action=$want_action"
    done
    if [ $mode = timeout ]; then
      report_is -m "$b/$mode: the stopped main died of the TERM" "$t/r.json" outcome=timeout signal=15
    fi
    report_is -m "$b/$mode: emptiness not confirmed" "$t/r.json" "stop.empty_confirmed_ms>=0"
    assert_all_gone "$b/$mode" "$t/procs"
    assert_nothing_left "$b/$mode"
    report_is -m "$b/$mode: cleanup not verified" "$t/r.json" cleanup_verified=true
    echo "ok: $b/$mode"
  done
done
pass
