# SPDX-License-Identifier: Apache-2.0
# pmon as PID 1 of a runc container: 'runc kill ID TERM' reaches a setsid
# daemon inside (tini signals its one child only: the control below), runc
# run returns the main process's status, and a leftover that ignores TERM is
# stopped (KILL after PMON_INIT_GRACE) once the main process has exited.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/init_lib.inc"
. "$(dirname "$0")/runc.inc"

main='trap "exit 42" TERM
  setsid sh -c "trap \"touch /shared/daemon_got; exit 0\" TERM; echo \$\$ > /shared/d1; while :; do sleep 0.05; done" &
  setsid sh -c "trap \"\" TERM; echo \$\$ > /shared/d2; exec sleep 1000" &
  while [ ! -s /shared/d1 ] || [ ! -s /shared/d2 ]; do sleep 0.01; done
  touch /shared/ready
  while :; do sleep 0.05; done'

run_case() { # $1: label, $2...: the init and its arguments
  local label=$1; shift
  id=$(runc_id "$label")
  rm -f "$t/shared/"*
  RUNC_JQ='.process.env += ["PMON_INIT_GRACE=300ms", "PMON_INIT_VERBOSITY=2"]' runc_start "$id" "$@" sh -c "$main"
  init=$(runc_init_pid "$id") || fail "$label: the container never ran: $(cat "$t/$id.err")"
  record_pid "$init"
  wait_file "$t/shared/ready" || fail "$label: the daemons never started: $(cat "$t/$id.err")"
  d1=$(runc_host_pid "$init" "$(cat "$t/shared/d1")") || fail "$label: cannot find the first daemon"
  d2=$(runc_host_pid "$init" "$(cat "$t/shared/d2")") || fail "$label: cannot find the second daemon"
  d1st=$(start_time_of "$d1") d2st=$(start_time_of "$d2")
  runc_record_all "$id"
  runc_ kill "$id" TERM
  rc=0; wait "$runc_pid" || rc=$?
  ! alive "$d1" "$d1st" || fail "$label: the daemon that exits on TERM is still there"
  ! alive "$d2" "$d2st" || fail "$label: the daemon that ignores TERM is still there"
}

run_case pmon /bin/pmon --
[ "$rc" = 42 ] || fail "runc run exit $rc, want the main process's 42: $(cat "$t/$id.err")"
[ -e "$t/shared/daemon_got" ] || fail "the setsid daemon never got the TERM"
# That pmon stopped the leftover itself (PID 1's exit would have killed it
# too): its own account, and 42 rather than 125 says it confirmed it gone.
left=$(sed -En 's/^pmon: init: reaped .*; ([0-9]+) (process|processes) left running (was|were) stopped$/\1/p' "$t/$id.err")
[ -n "$left" ] && [ "$left" -ge 1 ] || fail "pmon did not stop the leftover: $(cat "$t/$id.err")"
echo "ok: TERM reached the setsid daemon; leftover stopped; exit 42"

# The control: tini forwards to its child only; the daemon dies with the
# namespace, by SIGKILL, without ever seeing the TERM.
if [ -x /usr/bin/tini-static ]; then
  rootfs_add "$t/bundle/rootfs" /usr/bin/tini-static /bin/tini
  run_case tini /bin/tini --
  [ "$rc" = 42 ] || fail "tini: runc run exit $rc, want 42"
  [ ! -e "$t/shared/daemon_got" ] || fail "tini: the setsid daemon got the TERM: the scenario cannot tell"
  echo "ok: under tini the daemon never saw the TERM (the control)"
fi
pass
