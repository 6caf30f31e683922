# SPDX-License-Identifier: Apache-2.0
# E2: a descendant that moves to a new process group with setpgid() (no
# setsid) is stopped with the call, both when the main process exits and when
# --timeout fires. killpg misses it, so under pgroup it is found below pmon
# (its subreaper) once the group is empty, stopped all the same, and listed
# as escaped (with confinement_weak) instead of as a leftover.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/escapes.inc"

for b in $(backends); do
  for mode in exit timeout; do
    rm -f "$t/procs"
    if [ $mode = exit ]; then
      args=(--grace 2s); act=exit:0; want=0
    else
      args=(--timeout 1s --grace 2s); act=sleep; want=124
    fi
    # A setpgid child with a kid in its new group, and a setpgid orphan.
    run_probed run -q --confine "$b" "${args[@]}" --report "$t/r.json" -- \
      "$ESCAPER" "$t/procs" -x $act name=grp,setpgid,kids=1 name=orphan,orphan,setpgid
    record_file "$t/procs"
    [ $rc = $want ] || fail "$b/$mode: pmon exit $rc, want $want"
    [ "$(wc -l < "$t/procs")" = 4 ] || fail "$b/$mode: escaper did not record 4 processes"
    read -r gpid _ < <(proc_named "$t/procs" grp)
    read -r opid _ < <(proc_named "$t/procs" orphan)
    read -r main _ < <(proc_named "$t/procs" main)
    report_is -m "$b/$mode: report pid is not the main" "$t/r.json" "pid=$main"
    assert_all_gone "$b/$mode" "$t/procs"
    assert_nothing_left "$b/$mode"
    report_is -m "$b/$mode: cleanup not verified" "$t/r.json" cleanup_verified=true
    if [ "$b" = pgroup ]; then
      # killpg misses them, but they are below pmon (a subreaper): found
      # there and stopped, listed as escaped with what ended them.
      for n in grp grp.kid orphan; do
        read -r pid st < <(proc_named "$t/procs" $n)
        report_is -m "pgroup/$mode: report does not list escaped $n (pid $pid)" "$t/r.json" "escaped[pid=$pid].start_time=$st"
        report_is -m "pgroup/$mode: escaped $n (pid $pid) not reported as stopped by SIGTERM" "$t/r.json" "escaped[pid=$pid].action=SIGTERM"
      done
      report_is -m "pgroup/$mode: report does not flag weakness" "$t/r.json" confinement_weak=true
    else
      report_is -m "$b/$mode: report claims escapees" "$t/r.json" "escaped.#=0"
      report_is -m "$b/$mode: strong backend flagged weak" "$t/r.json" confinement_weak=false
      for pid in $gpid $opid; do
        report_is -m "$b/$mode: leftover $pid not reported as stopped by SIGTERM" "$t/r.json" "leftovers[pid=$pid].action=SIGTERM"
      done
    fi
    [ $mode = timeout ] && { [ "$(rj "$t/r.json" .outcome)" = timeout ] || fail "$b/$mode: outcome not timeout"; }
    echo "ok: $b/$mode"
  done
done
pass
