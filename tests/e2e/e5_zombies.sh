# SPDX-License-Identifier: Apache-2.0
# E5: parents that never wait make many zombies. Whatever way the call ends —
# the main exits leaving the zombie makers running, or --timeout stops a main
# that is itself a zombie maker — nothing is left in Z state that pmon is
# responsible for: the probe pmon runs under inherits no zombie when pmon
# exits, and no recorded process exists any more, not even as a zombie.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/escapes.inc"

N=150
for b in $(backends); do
  for mode in exit timeout; do
    rm -f "$t/procs"
    if [ $mode = exit ]; then
      # Two makers stay behind (one an orphan); two children of the main
      # itself exit at once and are zombies of a main that exits unwaiting.
      run_probed run -q --confine "$b" --grace 2s --report "$t/r.json" -- \
        "$ESCAPER" "$t/procs" -x exit:7 name=zm,zombies=$N name=zo,orphan,zombies=$N \
        name=z1,life=0 name=z2,life=0
      want=7
    else
      # The timeout must come after all 300 are made: on a loaded machine,
      # under the sanitizers, one second was seen to be too short for it.
      run_probed run -q --confine "$b" --timeout $((3 * TIME_SCALE))s --grace 2s --report "$t/r.json" -- \
        "$ESCAPER" "$t/procs" -x sleep name=zm,zombies=$N name=zo,orphan,zombies=$N,kids=2
      want=124
    fi
    record_file "$t/procs"
    [ $rc = $want ] || fail "$b/$mode: pmon exit $rc, want $want"
    nz=$(grep -c '\.zombie$' "$t/procs" || true)
    [ "$nz" = $((2 * N)) ] || fail "$b/$mode: $nz zombies recorded, want $((2 * N))"
    assert_nothing_left "$b/$mode"
    assert_all_gone "$b/$mode" "$t/procs"
    report_is -m "$b/$mode: cleanup not verified" "$t/r.json" cleanup_verified=true
    echo "ok: $b/$mode ($nz zombies)"
  done
done
pass
