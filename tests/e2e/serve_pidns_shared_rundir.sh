# SPDX-License-Identifier: Apache-2.0
# A service in a container (its own PID namespace, the node's cgroups) and
# one on the host share a runtime directory: the host service's start-up
# sweep, a host pmon mcp's start-up sweep, and the host's pmon gc, must leave the container's running job and
# its spool alone (its service is alive, in a namespace the host cannot
# judge from its pid). The container's service, SIGKILLed, still takes its
# job along (its crash guard).
. "$(dirname "$0")/common.inc"
[ "$(id -u)" = 0 ] || skip "needs root (PID namespaces, cgroups)"
have_backend cgroup || skip "the cgroup backend is not available here"
unshare --pid --fork --mount-proc true 2> /dev/null || skip "no PID namespaces here"
CG=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
run=$t/run
mkdir -m 700 "$run"
export XDG_RUNTIME_DIR=$run

# The container's service.
unshare --pid --fork --kill-child --mount-proc "$PMON" serve -q --listen "$t/c.sock" 2> "$t/c.err" &
box=$!
record_pid "$box"
for _ in $(seq 500); do [ -S "$t/c.sock" ] && break; sleep 0.02; done
[ -S "$t/c.sock" ] || fail "the container's service did not start: $(cat "$t/c.err")"

# Its job says where it runs (its cgroup, a path the host sees too).
PMON_SOCKET=$t/c.sock "$PMON" start -- sh -c "cat /proc/self/cgroup > $t/cg.tmp && mv $t/cg.tmp $t/cg; exec sleep 1000" \
  > /dev/null || fail "pmon start in the container's service failed"
for _ in $(seq 500); do [ -s "$t/cg" ] && break; sleep 0.02; done
leaf=$CG$(sed -n 's/^0:://p' "$t/cg")
job=$(cat "$leaf/cgroup.procs" 2> /dev/null)
[ -n "$job" ] || fail "no process in the job's leaf $leaf"
job_st=$(start_time_of "$job")
record_pid "$job"
trap '_rc=$?; (exit $_rc); _cleanup; for _ in $(seq 100); do [ ! -d "$leaf" ] || rmdir "$leaf" 2> /dev/null && break; sleep 0.02; done' EXIT
spool=$(ls -d "$run"/pmon/spool/*/)
[ -n "$spool" ] || fail "the container's service has no spool directory in $run/pmon/spool"

# The host's service starts on the same runtime directory, then gc.
"$PMON" serve --listen "$t/h.sock" 2> "$t/h.err" &
host=$!
record_pid "$host"
for _ in $(seq 500); do [ -S "$t/h.sock" ] && break; sleep 0.02; done
[ -S "$t/h.sock" ] || fail "the host's service did not start: $(cat "$t/h.err")"
alive "$job" "$job_st" && [ -d "$spool" ] ||
  fail "the host service's start stopped the container's job or removed its spool: $(cat "$t/h.err")"
echo "ok: the host service's start leaves the container's running job and its spool alone"
# pmon mcp sweeps the same way when it starts (it ends at its stdin's end).
rc=0; timeout -k 5 60 "$PMON" mcp < /dev/null > /dev/null 2> "$t/mcp.err" || rc=$?
[ $rc = 0 ] || fail "pmon mcp on the shared runtime directory: exit $rc: $(cat "$t/mcp.err")"
alive "$job" "$job_st" && [ -d "$spool" ] ||
  fail "pmon mcp's start stopped the container's job or removed its spool: $(cat "$t/mcp.err")"
echo "ok: a pmon mcp's start leaves them alone too"
"$PMON" gc > "$t/gc" 2>&1 || true
alive "$job" "$job_st" && [ -d "$spool" ] || fail "the host's gc stopped the container's job: $(cat "$t/gc")"
echo "ok: the host's gc leaves them alone too"

kill -TERM "$host"
wait "$host" 2> /dev/null || true
kill -KILL "$box"
wait "$box" 2> /dev/null || true
# (Gone when seen gone twice in a row: a read of its /proc entry while the
# kernel tears the namespace down may fail once.)
for _ in $(seq 500); do
  alive "$job" "$job_st" || { sleep 0.02; alive "$job" "$job_st" || break; }
  sleep 0.02
done
! alive "$job" "$job_st" || fail "the container's job outlived its SIGKILLed service"
echo "ok: the container's service SIGKILLed: its guard stopped the job"
# Its leaf is left, empty, named for a PID namespace that is gone: no gc
# outside it judges that (by design), so the scenario removes what it made.
for _ in $(seq 500); do rmdir "$leaf" 2> /dev/null && break; sleep 0.02; done
[ ! -d "$leaf" ] || fail "cannot remove the container job's leaf $leaf: $(cat "$leaf/cgroup.procs")"
pass
