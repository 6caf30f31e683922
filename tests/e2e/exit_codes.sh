# SPDX-License-Identifier: Apache-2.0
# The exit-status contract (timeout(1)-compatible): the command's own code for
# every 0..255, 128+N when it died by signal N, and the report's outcome,
# exit_code and signal fields agree. Every available backend.
. "$(dirname "$0")/common.inc"
ulimit -c 0  # SIGQUIT/ILL/ABRT/FPE/SEGV would dump core otherwise

# name:number pairs; numbers are Linux x86/arm generic.
SIGNALS="HUP:1 INT:2 QUIT:3 ILL:4 ABRT:6 FPE:8 KILL:9 SEGV:11 PIPE:13 ALRM:14 TERM:15 USR1:10 USR2:12"


for b in $(backends); do
  # All 256 codes (each call is a few ms). 256 and up wrap like the shell's.
  # (What pmon said of the first wrong one is kept: a machine out of pids
  # makes pmon say so, with 125, rather than the command's code.)
  bad="" said=""
  for n in $(seq 0 255); do
    rc=0; "$PMON" run -q --confine "$b" -- sh -c "exit $n" 2> "$t/err" || rc=$?
    [ "$rc" = "$n" ] && continue
    bad="$bad $n->$rc"
    [ -n "$said" ] || said=$(cat "$t/err")
  done
  [ -z "$bad" ] || fail "$b: wrong exit status for:$bad (the first time, pmon said: $said)"

  # A sample through the report too.
  for n in 0 1 2 77 124 125 126 127 128 200 255; do
    rc=0; "$PMON" run -q --confine "$b" --report "$t/r.json" -- sh -c "exit $n" || rc=$?
    [ "$rc" = "$n" ] || fail "$b: exit $n gave $rc with --report"
    report_is -m "$b: report for exit $n" "$t/r.json" outcome=exited "exit_code=$n" signal=null timed_out=false
  done

  for pair in $SIGNALS; do
    name=${pair%:*}; num=${pair#*:}
    [ "$(kill -l "$name")" = "$num" ] || fail "this shell numbers SIG$name as $(kill -l "$name"), not $num"
    rc=0; "$PMON" run -q --confine "$b" --report "$t/r.json" -- sh -c "kill -$name \$\$" || rc=$?
    [ "$rc" = $((128 + num)) ] || fail "$b: SIG$name: exit $rc, expected $((128 + num))"
    report_is -m "$b: report for SIG$name" "$t/r.json" outcome=signaled exit_code=null "signal=$num" timed_out=false \
      "signal_name=SIG$name"
  done
  echo "ok: $b"
done
pass
