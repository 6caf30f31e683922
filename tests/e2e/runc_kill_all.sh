# SPDX-License-Identifier: Apache-2.0
# A detached runc container with pmon as PID 1 and daemons inside:
# 'runc kill -a' then 'runc delete', or 'runc delete -f' on a running one,
# leaves no process of it (host pid + start time) and none of its cgroups;
# and what only a PID 1 that answers for the whole tree does (any init
# passes the first two): reaping, signals, a daemon stopped, the status.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/init_lib.inc"
. "$(dirname "$0")/runc.inc"

main='setsid sh -c "exec sleep 1000" &
  setsid sh -c "trap \"\" TERM; exec sleep 1000" &
  (sleep 1000 &)
  touch /shared/ready
  exec sleep 1000'

start_case() { # $1: label
  id=$(runc_id "$1")
  rm -f "$t/shared/ready"
  runc_pid=
  runc_start_detached "$id" /bin/pmon -- sh -c "$main" || fail "$1: runc run -d failed: $(cat "$t/$id.err")"
  init=$(runc_init_pid "$id") || fail "$1: the container never ran: $(cat "$t/$id.err")"
  record_pid "$init"
  wait_file "$t/shared/ready" || fail "$1: the container's processes never started"
  # Every process of the container, by host pid + start time.
  procs=$({ runc_ ps -f json "$id" || echo '[]'; } | jq -r '.[]')
  [ "$(echo "$procs" | wc -w)" -ge 5 ] || fail "$1: want 5 or more processes in the container, have: $procs"
  : > "$t/procs"
  for p in $procs; do record_pid "$p"; echo "$p $(start_time_of "$p")" >> "$t/procs"; done
  cgs=$(runc_cgroups "$id")
  [ -n "$cgs" ] || fail "$1: cannot find the container's cgroups"
}

check_gone() { # $1: label
  local pid st
  while read -r pid st; do
    ! alive "$pid" "$st" || fail "$1: pid $pid of the container is still there"
  done < "$t/procs"
  [ -z "$(runc_cgroups "$id")" ] || fail "$1: cgroups left: $(runc_cgroups "$id")"
  [ -z "$(runc_ list -q | grep -Fx "$id")" ] || fail "$1: runc still lists $id"
}

start_case kill-all
runc_ kill -a "$id" KILL
for _ in $(seq 200); do
  [ "$(runc_ state "$id" | jq -r .status)" = stopped ] && break
  sleep 0.05
done
[ "$(runc_ state "$id" | jq -r .status)" = stopped ] || fail "kill -a: the container did not stop"
[ -n "$(runc_cgroups "$id")" ] || fail "kill -a: the cgroups went before delete: the check below cannot tell"
runc_ delete "$id"
check_gone "kill -a"
echo "ok: runc kill -a + delete"

start_case delete-f
runc_ delete -f "$id"
check_gone "delete -f"
echo "ok: runc delete -f"

# What only an init that answers for the whole tree does (runc kill -a and
# delete -f above kill the container's cgroup, whatever its PID 1 is):
# orphans that exit after the main process has become 'sleep' are reaped
# (by PID 1: the main process never waits for them), 'runc kill ID TERM'
# reaches the main process (the kernel gives PID 1 no default action for
# TERM), a setsid daemon that ignores TERM is stopped once the main process
# has gone, and runc run returns the main process's status (killed by TERM:
# 143).
main='setsid sh -c "trap \"\" TERM; echo \$\$ > /shared/d; exec sleep 1000" &
  for i in 1 2 3; do (sh -c "echo \$\$ >> /shared/orphans; exec sleep 2" &); done
  while [ ! -s /shared/d ] || [ "$(wc -l < /shared/orphans)" -lt 3 ]; do sleep 0.01; done
  touch /shared/ready
  exec sleep 1000'
id=$(runc_id init)
rm -f "$t/shared/"*
RUNC_JQ='.process.env += ["PMON_INIT_GRACE=300ms", "PMON_INIT_VERBOSITY=2"]' runc_start "$id" /bin/pmon -- sh -c "$main"
init=$(runc_init_pid "$id") || fail "init: the container never ran: $(cat "$t/$id.err")"
record_pid "$init"
wait_file "$t/shared/ready" || fail "init: the container's processes never started: $(cat "$t/$id.err")"
dhost=$(runc_host_pid "$init" "$(cat "$t/shared/d")") || fail "init: cannot find the daemon"
dst=$(start_time_of "$dhost")
: > "$t/orphans"
for o in $(cat "$t/shared/orphans"); do
  h=$(runc_host_pid "$init" "$o") || fail "init: cannot find orphan $o"
  echo "$h $(start_time_of "$h")" >> "$t/orphans"
done
runc_record_all "$id"
# Each orphan exits after 2 s: then it is a zombie of PID 1 until reaped.
while read -r h st; do
  for _ in $(seq 200); do [ "$(start_time_of "$h")" = "$st" ] || break; sleep 0.05; done
  [ "$(start_time_of "$h")" != "$st" ] || fail "init: orphan $h (state $(state_of "$h")) was not reaped by PID 1"
done < "$t/orphans"
echo "ok: init: orphans reaped"
alive "$dhost" "$dst" || fail "init: the daemon is gone before the container was stopped"
runc_ kill "$id" TERM
for _ in $(seq 400); do kill -0 "$runc_pid" 2> /dev/null || break; sleep 0.05; done
kill -0 "$runc_pid" 2> /dev/null && fail "init: 'runc kill $id TERM' did not stop the container in 20 s"
rc=0; wait "$runc_pid" || rc=$?
[ "$rc" = 143 ] || fail "init: runc run exit $rc, want 143 (the main process killed by TERM): $(cat "$t/$id.err")"
! alive "$dhost" "$dst" || fail "init: the daemon that ignores TERM is still there"
left=$(sed -En 's/^pmon: init: reaped .*; ([0-9]+) (process|processes) left running (was|were) stopped$/\1/p' "$t/$id.err")
[ -n "$left" ] && [ "$left" -ge 1 ] || fail "init: PID 1 did not stop the daemon itself: $(cat "$t/$id.err")"
echo "ok: init: TERM reached the main process, exit 143, the daemon stopped by PID 1"
pass
