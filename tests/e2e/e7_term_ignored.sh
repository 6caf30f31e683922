# SPDX-License-Identifier: Apache-2.0
# E7: SIGTERM ignored, caught-and-carried-on, or blocked (every blockable
# signal) — pmon escalates to SIGKILL once --grace has passed, never before,
# and the report shows it: stop.kill_sent_ms set, at least --grace after
# stop.signal_sent_ms, and every leftover's action "SIGKILL". When the main
# exits, when --timeout fires on a main that ignores TERM itself, and on a
# cancel (SIGTERM to pmon); on every backend and under --isolate.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/escapes.inc"

GRACE_MS=1000
SPECS=(name=ign,ignore name=trap,trap name=blk,block,kids=1 name=o,orphan,ignore,block)
for b in $(stop_modes); do
  for mode in exit timeout cancel; do
    rm -f "$t/procs"
    if [ $mode = exit ]; then
      run_probed run -q $(confine_opt "$b") --grace ${GRACE_MS}ms --report "$t/r.json" -- \
        "$ESCAPER" "$t/procs" -x exit:6 "${SPECS[@]}"
      want=6
    elif [ $mode = timeout ]; then
      # The main ignores TERM too (an ignored disposition survives exec).
      run_probed run -q $(confine_opt "$b") --timeout 1s --grace ${GRACE_MS}ms --report "$t/r.json" -- \
        sh -c 'trap "" TERM; exec "$0" "$@"' "$ESCAPER" "$t/procs" -x sleep "${SPECS[@]}"
      want=124
    else
      cancel_probed "$t/procs" 6 run -q $(confine_opt "$b") --grace ${GRACE_MS}ms --report "$t/r.json" -- \
        sh -c 'trap "" TERM; exec "$0" "$@"' "$ESCAPER" "$t/procs" -x sleep "${SPECS[@]}"
      want=143
    fi
    record_file "$t/procs"
    [ $rc = $want ] || fail "$b/$mode: pmon exit $rc, want $want"
    [ "$(wc -l < "$t/procs")" = 6 ] || fail "$b/$mode: escaper did not record 6 processes"
    sig=$(rj "$t/r.json" .stop.signal_sent_ms)
    kil=$(rj "$t/r.json" .stop.kill_sent_ms)
    [ "$sig" != null ] && [ "$kil" != null ] || fail "$b/$mode: stop times missing: $(rj "$t/r.json" -c .stop)"
    awk -v s="$sig" -v k="$kil" -v g=$GRACE_MS 'BEGIN { exit !(k - s >= g * 0.98) }' ||
      fail "$b/$mode: SIGKILL at $kil ms, before the grace after TERM at $sig ms"
    for n in ign trap blk blk.kid o; do
      read -r pid _ < <(proc_named "$t/procs" $n)
      report_is -m "$b/$mode: $n (pid $pid)" "$t/r.json" "leftovers[pid=$pid].action=SIGKILL"
    done
    if [ $mode = cancel ]; then
      report_is -m "$b/$mode: outcome not cancelled" "$t/r.json" outcome=cancelled
      report_is -m "$b/$mode: the main did not die by SIGKILL" "$t/r.json" signal=9
    fi
    if [ $mode = timeout ]; then
      report_is -m "$b/$mode: outcome not timeout" "$t/r.json" outcome=timeout
      report_is -m "$b/$mode: the main did not die by SIGKILL" "$t/r.json" signal=9
    fi
    assert_all_gone "$b/$mode" "$t/procs"
    assert_nothing_left "$b/$mode"
    report_is -m "$b/$mode: cleanup not verified" "$t/r.json" cleanup_verified=true
    echo "ok: $b/$mode (TERM at $sig ms, KILL at $kil ms)"
  done
done
pass
