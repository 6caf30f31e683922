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
    [ "$(rj "$t/r.json" .pid)" = "$main" ] || fail "$b/$mode: report pid is not the main"
    assert_all_gone "$b/$mode" "$t/procs"
    assert_nothing_left "$b/$mode"
    [ "$(rj "$t/r.json" .cleanup_verified)" = true ] || fail "$b/$mode: cleanup not verified"
    if [ "$b" = pgroup ]; then
      # killpg misses them, but they are below pmon (a subreaper): found
      # there and stopped, listed as escaped with what ended them.
      for n in grp grp.kid orphan; do
        read -r pid st < <(proc_named "$t/procs" $n)
        [ "$(rj "$t/r.json" ".escaped[] | select(.pid == $pid) | .start_time")" = "$st" ] ||
          fail "pgroup/$mode: report does not list escaped $n (pid $pid)"
        [ "$(rj "$t/r.json" ".escaped[] | select(.pid == $pid) | .action")" = SIGTERM ] ||
          fail "pgroup/$mode: escaped $n (pid $pid) not reported as stopped by SIGTERM: $(rj "$t/r.json" .escaped)"
      done
      [ "$(rj "$t/r.json" .confinement_weak)" = true ] || fail "pgroup/$mode: report does not flag weakness"
    else
      [ "$(rj "$t/r.json" '.escaped | length')" = 0 ] || fail "$b/$mode: report claims escapees"
      [ "$(rj "$t/r.json" .confinement_weak)" = false ] || fail "$b/$mode: strong backend flagged weak"
      for pid in $gpid $opid; do
        [ "$(action_of "$t/r.json" "$pid")" = SIGTERM ] ||
          fail "$b/$mode: leftover $pid not reported as stopped by SIGTERM: $(rj "$t/r.json" .leftovers)"
      done
    fi
    [ $mode = timeout ] && { [ "$(rj "$t/r.json" .outcome)" = timeout ] || fail "$b/$mode: outcome not timeout"; }
    echo "ok: $b/$mode"
  done
done
pass
