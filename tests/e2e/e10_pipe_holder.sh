# SPDX-License-Identifier: Apache-2.0
# E10: a grandchild keeps the call's stdout and stderr open. A reader of
# pmon's stdout/stderr must see EOF promptly once pmon returns (pmon stopped
# the holder: after the main exits, and after --timeout), and every byte
# written before the stop must be there, in order. Under pgroup a holder
# that left the group with setsid is outside the boundary but below pmon (its
# subreaper): stopped too, and listed as escaped (with confinement_weak).
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/escapes.inc"

N=20000   # lines per stream: far more than a pipe buffer, so writes block
mkfifo "$t/out.fifo" "$t/err.fifo"

# Every line "<name> 1" .. "<name> N", then "<name> END", in order, in FILE.
check_stream() {
  awk -v n="$2" -v N=$N '$1 == n { if ($2 == "END") { end = 1; next } if ($2 != ++i) bad = 1 }
       END { exit !(i == N && end && !bad) }' "$1"
}

readers_done() {
  for _ in $(seq 500); do
    kill -0 $rout 2>/dev/null || kill -0 $rerr 2>/dev/null || return 0
    sleep 0.01
  done
}

for b in $(backends); do
  for mode in exit timeout setsid; do
    rm -f "$t/procs" "$t/out" "$t/err"
    case $mode in
      exit) args=(); specs=(name=h,orphan,write=$N); act=exit:0; want=0 ;;
      timeout) args=(--timeout 1s); specs=(name=h,orphan,write=$N); act=sleep; want=124 ;;
      setsid) args=(); specs=(name=h,orphan,setsid,write=$N); act=exit:0; want=0 ;;
    esac
    # Readers of the two streams; they end at EOF (when no writer is left).
    cat "$t/out.fifo" > "$t/out" & rout=$!
    cat "$t/err.fifo" > "$t/err" & rerr=$!
    run_probed run -q --confine "$b" "${args[@]}" --grace 2s --report "$t/r.json" -- \
      "$ESCAPER" "$t/procs" -x $act "${specs[@]}" > "$t/out.fifo" 2> "$t/err.fifo"
    record_file "$t/procs"
    [ $rc = $want ] || fail "$b/$mode: pmon exit $rc, want $want"
    read -r hpid hst < <(proc_named "$t/procs" h)
    # Generous liveness bound: EOF within 5 s of pmon's return.
    readers_done
    if [ $b = pgroup ] && [ $mode = setsid ]; then
      report_is -m "pgroup/setsid: report does not list the escaped holder" "$t/r.json" "escaped[pid=$hpid].start_time=$hst"
      report_is -m "pgroup/setsid: the escaped holder is not reported as stopped" "$t/r.json" "escaped[pid=$hpid].action=SIGTERM"
      report_is -m "pgroup/setsid: report does not flag weakness" "$t/r.json" confinement_weak=true
    fi
    kill -0 $rout 2>/dev/null && fail "$b/$mode: stdout reader still waiting 5 s after pmon returned"
    kill -0 $rerr 2>/dev/null && fail "$b/$mode: stderr reader still waiting 5 s after pmon returned"
    wait $rout $rerr
    check_stream "$t/out" h || fail "$b/$mode: stdout lost bytes: $(wc -l < "$t/out") lines, tail $(tail -1 "$t/out")"
    check_stream "$t/err" h || fail "$b/$mode: stderr lost bytes: $(wc -l < "$t/err") lines, tail $(tail -1 "$t/err")"
    assert_all_gone "$b/$mode" "$t/procs"
    assert_nothing_left "$b/$mode"
    if ! [ $b = pgroup ] || ! [ $mode = setsid ]; then
      report_is -m "$b/$mode: holder not reported as stopped" "$t/r.json" "leftovers[pid=$hpid].action=SIGTERM"
    fi
    echo "ok: $b/$mode"
  done
done
pass
