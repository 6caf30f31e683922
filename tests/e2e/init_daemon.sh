# SPDX-License-Identifier: Apache-2.0
# A double-forked setsid daemon left by the command is stopped and reaped
# when the command exits (tini's "orphans live forever", dumb-init #191), as
# a subreaper and as PID 1 of a pidns (with and without its own /proc);
# with --wait-all it is waited for instead. pmon init returns the command's
# code either way.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/init_lib.inc"

# Runs pmon init (prefixed by $PREFIX) with a command that starts a daemon
# running $2, records the daemon by host pid + start time, lets the command
# exit 9, and checks pmon init's status.
run_case() { # $1: label, $2: daemon body, $3...: pmon init options
  local label=$1 body=$2; shift 2
  rm -f "$t/daemon" "$t/go"
  $PREFIX "$PMON" init -q "$@" -- sh -c "
    setsid sh -c 'echo \$\$ > $t/daemon.tmp; mv $t/daemon.tmp $t/daemon; $body' &
    while [ ! -f $t/go ]; do sleep 0.01; done; exit 9" &
  local root=$!; record_pid "$root"
  wait_file "$t/daemon" || fail "$label: the daemon never started"
  local host
  host=$(host_pid_of "$root" "$(cat "$t/daemon")")
  [ -n "$host" ] || fail "$label: cannot find the daemon below $root"
  dpid=$host dst=$(start_time_of "$host")
  record_pid "$host"
  touch "$t/go"
  local rc=0; wait "$root" || rc=$?
  [ "$rc" = 9 ] || fail "$label: pmon init exit $rc, want 9"
}

PREFIX=
run_case "auto confinement" 'exec sleep 1000' --grace 1s
! alive "$dpid" "$dst" || fail "auto: daemon $dpid survived"
echo "ok: auto"

for b in subreaper cgroup; do
  have_backend "$b" || continue
  run_case "$b" 'exec sleep 1000' --confine "$b" --grace 1s
  ! alive "$dpid" "$dst" || fail "$b: daemon $dpid survived"
  echo "ok: --confine $b"
done

run_case "TERM ignored" 'trap "" TERM; exec sleep 1000' --grace 300ms
! alive "$dpid" "$dst" || fail "TERM ignored: daemon $dpid survived the KILL"
echo "ok: TERM ignored -> KILL"

# The daemon outlives the command (it starts its last 0.3 s after $t/go) but
# cannot finish before the test has found it.
run_case "--wait-all" "while [ ! -f $t/go ]; do sleep 0.01; done; sleep 0.3; touch $t/finished" --wait-all
[ -f "$t/finished" ] || fail "--wait-all: the daemon was stopped instead of waited for"
! alive "$dpid" "$dst" || fail "--wait-all: pmon init returned while the daemon ran"
echo "ok: --wait-all"

# As PID 1 the kernel kills whatever is left in the namespace once pmon init
# exits, so "the daemon is gone" proves nothing there: the daemon must have
# got pmon's SIGTERM (it notes that in $t/termed) before pmon init returned.
unshare --pid --fork true 2>/dev/null || skip "no PID namespaces here"
for mp in "" --mount-proc; do
  PREFIX="unshare --pid --fork --kill-child $mp"
  rm -f "$t/termed"
  run_case "PID 1 $mp" "trap \"echo TERM > $t/termed; exit 0\" TERM; sleep 1000 & wait" --grace 10s
  ! alive "$dpid" "$dst" || fail "PID 1 $mp: daemon $dpid survived"
  [ "$(cat "$t/termed" 2>/dev/null)" = TERM ] ||
    fail "PID 1 $mp: pmon init returned without stopping the daemon (the namespace's end killed it)"
  echo "ok: as PID 1 ${mp:-(host /proc)}"
done
pass
