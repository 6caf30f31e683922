# SIGKILL of the service (a harness crash): the crash guard of the cgroup
# backend stops every job's leaf, kept or not, each with its setsid daemon.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

have_backend cgroup || skip "no cgroup backend here"
serve_start --confine cgroup
client_open a
for n in 1 2 3; do
  call a terminal/create "$(create_params "$t/d$n" '{"keep":'"$([ $n = 1 ] && echo true || echo false)"'}')" > /dev/null
done
pids=()
for n in 1 2 3; do
  daemon_of "$t/d$n"
  pids+=("$dpid $dst")
done
kill -KILL "$SERVE_PID"
wait "$SERVE_PID" 2>/dev/null || true
for p in "${pids[@]}"; do
  wait_gone $p || fail "daemon $p outlived the SIGKILLed service"
done
client_close a
leaves=$(ls -d /sys/fs/cgroup/unified/pmon-"$SERVE_PID"-* /sys/fs/cgroup/pmon-"$SERVE_PID"-* 2>/dev/null || true)
[ -z "$leaves" ] || fail "the guard left leaves behind: $leaves"
pass
