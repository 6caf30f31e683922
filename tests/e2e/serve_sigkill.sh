# SPDX-License-Identifier: Apache-2.0
# SIGKILL of the service (a harness crash, or the OOM killer's pick): the
# crash guard of the cgroup backend stops every job's leaf, kept or not,
# each with its setsid daemon.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

have_backend cgroup || skip "no cgroup backend here"
serve_start --confine cgroup
# The OOM order: the guard is a fork with memory of its own, so an OOM
# kill of the service does not take it along (the kernel kills every
# process that shares the victim's memory), and has the lowest score
# allowed: -1000 with CAP_SYS_RESOURCE, else the one it inherited; the
# service keeps its own.
inherited=$(cat /proc/self/oom_score_adj)
want=$(python3 -c 'import sys; caps = [l for l in open("/proc/self/status") if l.startswith("CapEff:")][0]
print(-1000 if int(caps.split()[1], 16) >> 24 & 1 else sys.argv[1])' "$inherited")
serve_guard "$want"
[ -n "$guard" ] || fail "no crash guard apart from the service's memory with oom_score_adj $want"
[ "$(cat "/proc/$SERVE_PID/oom_score_adj")" = "$inherited" ] ||
  fail "the service's oom_score_adj changed: $(cat "/proc/$SERVE_PID/oom_score_adj")"
echo "guard $guard: oom_score_adj $(cat "/proc/$guard/oom_score_adj"), $(grep VmRSS "/proc/$guard/status")"
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
