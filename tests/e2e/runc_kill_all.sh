# A detached runc container with pmon as PID 1 and daemons inside:
# 'runc kill -a' then 'runc delete', or 'runc delete -f' on a running one,
# leaves no process of it (host pid + start time) and none of its cgroups.
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
pass
