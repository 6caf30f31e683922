# SPDX-License-Identifier: Apache-2.0
# pmon init mirrors the command's status: every exit code 0-255 as is, and
# 128+N for death by signal N; as a subreaper and as PID 1 of a new pidns.
. "$(dirname "$0")/common.inc"

for i in $(seq 0 255); do
  rc=0; "$PMON" init -q -- sh -c "exit $i" || rc=$?
  [ "$rc" = "$i" ] || fail "exit $i came back as $rc"
done
echo "ok: exit codes 0-255"

# Signals whose default action ends the process (not STOP/TSTP/TTIN/TTOU,
# not the ignored CHLD/CONT/URG/WINCH).
sigs="HUP INT QUIT ILL TRAP ABRT BUS FPE KILL USR1 SEGV USR2 PIPE ALRM TERM STKFLT XCPU XFSZ VTALRM PROF IO PWR SYS"
for s in $sigs; do
  n=$(kill -l "$s")
  rc=0; "$PMON" init -q -- sh -c "kill -$n \$\$" || rc=$?
  [ "$rc" = $((128 + n)) ] || fail "SIG$s came back as $rc, want $((128 + n))"
done
echo "ok: signals"

unshare --pid --fork true 2>/dev/null || skip "no PID namespaces here"
for i in 0 1 42 126 127 200 255; do
  rc=0; unshare --pid --fork "$PMON" init -q -- sh -c "exit $i" || rc=$?
  [ "$rc" = "$i" ] || fail "as PID 1: exit $i came back as $rc"
done
for s in HUP INT KILL SEGV TERM USR1; do
  n=$(kill -l "$s")
  rc=0; unshare --pid --fork "$PMON" init -q -- sh -c "kill -$n \$\$" || rc=$?
  [ "$rc" = $((128 + n)) ] || fail "as PID 1: SIG$s came back as $rc"
done
rc=0; unshare --pid --fork "$PMON" init -q -- /nonexistent/cmd 2>/dev/null || rc=$?
[ "$rc" = 127 ] || fail "as PID 1: a missing command gave $rc, want 127"
echo "ok: as PID 1"
pass
