# SPDX-License-Identifier: Apache-2.0
# The engines make the syscalls seed 004 claims, seen under strace:
#   pidfd   — clone3 with CLONE_PIDFD (or pidfd_open), waitid(P_PIDFD, fd)
#             for the child's status, pidfd_send_signal(fd, SIGTERM) on stop;
#   sigchld — the child's status from wait4(-1, ..., WNOHANG), no waitid on
#             its pidfd.
. "$(dirname "$0")/common.inc"
command -v strace > /dev/null || skip "strace is not installed"
strace -f -qq -e trace=getpid -o /dev/null true 2> /dev/null || skip "strace cannot trace here"

trace_set=clone3,pidfd_open,waitid,wait4,pidfd_send_signal

# Stop path, pidfd engine.
rc=0
strace -f -qq -e trace=$trace_set -o "$t/stop.trace" \
  "$PMON" supervise --timeout-ms 500 -- sleep 9.93 2> "$t/stop.err" || rc=$?
[ "$rc" = 124 ] || fail "pidfd stop: exit $rc; $(cat "$t/stop.err")"
fd=$(sed -nE 's/^pmon: engine=pidfd child=[0-9]+ pidfd=([0-9]+)$/\1/p' "$t/stop.err")
child=$(sed -nE 's/^pmon: engine=pidfd child=([0-9]+).*/\1/p' "$t/stop.err")
[ -n "$fd" ] || fail "no engine line: $(cat "$t/stop.err")"
grep -qE "(clone3\(\{[^}]*CLONE_PIDFD.*= $child\$|pidfd_open\($child, [^)]*\) += $fd\$)" "$t/stop.trace" ||
  fail "child $child was not given a pidfd by clone3(CLONE_PIDFD) or pidfd_open"
grep -qE "pidfd_send_signal\($fd, SIGTERM," "$t/stop.trace" || fail "no pidfd_send_signal($fd, SIGTERM) on stop"
grep -qE "waitid\(P_PIDFD, $fd, \{[^}]*si_pid=$child.*CLD_KILLED|waitid\(P_PIDFD, $fd, \{[^}]*CLD_KILLED[^}]*si_pid=$child" "$t/stop.trace" ||
  fail "child $child was not reaped with waitid(P_PIDFD, $fd)"
echo "ok: pidfd stop path"

# Exit path, pidfd engine: the status comes from waitid(P_PIDFD).
rc=0
strace -f -qq -e trace=$trace_set -o "$t/exit.trace" \
  "$PMON" supervise --max-restarts 0 -- sh -c 'exit 1' 2> "$t/exit.err" || rc=$?
[ "$rc" = 1 ] || fail "pidfd exit: exit $rc"
fd=$(sed -nE 's/^pmon: engine=pidfd child=[0-9]+ pidfd=([0-9]+)$/\1/p' "$t/exit.err")
grep -qE "waitid\(P_PIDFD, $fd, \{.*CLD_EXITED.*si_status=1" "$t/exit.trace" ||
  fail "the exit status did not come from waitid(P_PIDFD, $fd)"
! grep -qE "wait4\(-1," "$t/exit.trace" || fail "the pidfd engine reaped with wait4(-1)"
echo "ok: pidfd exit path"

# sigchld engine: wait4(-1, WNOHANG) returns the child, no waitid on a pidfd.
rc=0
strace -f -qq -e trace=$trace_set -o "$t/chld.trace" \
  "$PMON" supervise --engine sigchld --max-restarts 0 -- sh -c 'exit 1' 2> "$t/chld.err" || rc=$?
[ "$rc" = 1 ] || fail "sigchld exit: exit $rc"
child=$(sed -nE 's/^pmon: engine=sigchld child=([0-9]+)$/\1/p' "$t/chld.err")
grep -qE "wait4\(-1, \[\{WIFEXITED\(s\) && WEXITSTATUS\(s\) == 1\}\], WNOHANG, NULL\) = $child" "$t/chld.trace" ||
  fail "sigchld engine: child $child not reaped by wait4(-1, WNOHANG)"
# (pmon reaps its own E11 guard, a __WALL clone child, through its pidfd at
# the end: that is not the engine collecting a child of the call.)
! grep "waitid(P_PIDFD" "$t/chld.trace" | grep -v "__WALL" | grep -q . ||
  fail "sigchld engine used waitid(P_PIDFD)"
echo "ok: sigchld exit path"
pass
