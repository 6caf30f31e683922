# SPDX-License-Identifier: Apache-2.0
# The service watches its crash guard: a guard SIGKILLed is replaced (the
# service says so), and the new one stops every job, each with its setsid
# daemon, when the service is SIGKILLed later: those started before the
# guard died and those started after. A root service that cannot shield its
# guard from the OOM killer says so (pmon doctor too).
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

have_backend cgroup || skip "no cgroup backend here"
serve_start --confine cgroup
serve_guard
[ -n "$guard" ] || fail "no crash guard apart from the service's memory"
client_open a
call a terminal/create "$(create_params "$t/d0")" > /dev/null
daemon_of "$t/d0"; pids=("$dpid $dst")
kill -KILL "$guard"
for i in $(seq 200); do grep -q "crash guard (pid $guard) ended" "$t/serve.err" && break; sleep 0.05; done
grep "crash guard (pid $guard) ended" "$t/serve.err" || fail "the service did not say its guard ended"
for n in 1 2 3 4 5; do
  call a terminal/create "$(create_params "$t/d$n" '{"keep":true}')" > /dev/null
  daemon_of "$t/d$n"; pids+=("$dpid $dst")
done
kill -KILL "$SERVE_PID"
wait "$SERVE_PID" 2>/dev/null || true
for p in "${pids[@]}"; do
  wait_gone $p || fail "daemon $p outlived the SIGKILLed service (its guard had been killed)"
done
client_close a
if [ "$(id -u)" = 0 ] && ! python3 -c 'import sys; sys.exit(0 if open("/proc/self/oom_score_adj", "w").write("-1000") else 1)' 2>/dev/null; then
  "$PMON" doctor | grep "^oom shield  *no  *the crash guard cannot be shielded" || fail "pmon doctor does not say the OOM shield is refused"
  "$PMON" serve --listen "$t/w.sock" 2> "$t/w.err" & w=$!; record_pid $w
  for i in $(seq 100); do grep -q "cannot be shielded" "$t/w.err" && break; sleep 0.05; done
  kill -TERM $w; wait $w || true
  grep "warning: the crash guard cannot be shielded from the OOM killer" "$t/w.err" || fail "pmon serve did not say it"
fi
pass
