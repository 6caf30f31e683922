# SPDX-License-Identifier: Apache-2.0
# Guest only (scripts/guest.sh): --cpu-max on a pure cgroup v2 host. A busy
# loop (tests/helpers/burn_cpu, which spins until it has used 1 s of CPU)
# under --cpu-max 0.5 gets at most 0.55 of a core: its CPU time over the
# call's wall time (the report's cpu_usec and duration_ms), over at least
# 2 s; its leaf shows cpu.max "50000 100000" and was throttled (cpu.stat
# nr_throttled). The report says limits.cpu_max 0.5. The leaf is gone after;
# a serve job with cpuMax, then one without: the second's cpu.max is max.
. "$(dirname "$0")/../e2e/common.inc"
. "$(dirname "$0")/limits.inc"
BURN=$HELPERS/burn_cpu
[ -x "$BURN" ] || fail "helper $BURN missing"

# 1. One second of CPU under half a core: two seconds of wall time at least.
call='cg=/sys/fs/cgroup$(sed -n "s/^0:://p" /proc/self/cgroup)
  cat "$cg/cpu.max" > '"$t"'/cpu.max
  "$0" 1000 || exit 1
  cat "$cg/cpu.stat" > '"$t"'/cpu.stat'
"$PMON" run --cgroup-root "$LROOT" --cpu-max 0.5 --timeout 120s --report "$t/r.json" -- sh -c "$call" "$BURN" \
  > "$t/out" 2> "$t/err" || fail "pmon run --cpu-max failed ($?): $(cat "$t/out" "$t/err")"
[ "$(cat "$t/cpu.max")" = "50000 100000" ] || fail "the leaf's cpu.max is '$(cat "$t/cpu.max")', want '50000 100000'"
[ "$(rj "$t/r.json" -c .limits)" = '{"memory_max":null,"memory_high":null,"pids_max":4096,"cpu_max":0.5}' ] ||
  fail "limits: $(rj "$t/r.json" -c .limits)"
cpu=$(rj "$t/r.json" .cpu_usec)
wall=$(rj "$t/r.json" .duration_ms)
[ "$cpu" != null ] || fail "cpu_usec is null"
[ "$cpu" -ge 1000000 ] || fail "cpu_usec $cpu: the loop did not use its second of CPU"
throttled=$(sed -n 's/^nr_throttled //p' "$t/cpu.stat")
[ "${throttled:-0}" -gt 0 ] || fail "the leaf was never throttled: $(cat "$t/cpu.stat")"
fraction=$(awk -v c="$cpu" -v w="$wall" 'BEGIN { printf "%.3f", c / (w * 1000) }')
awk -v w="$wall" 'BEGIN { exit !(w >= 2000) }' || fail "1 s of CPU at 0.5 cores took only $wall ms of wall time"
awk -v f="$fraction" 'BEGIN { exit !(f <= 0.55) }' || fail "the loop used $fraction of a core under --cpu-max 0.5"
assert_leaf_gone "$t/r.json" "pmon run --cpu-max"
echo "ok: burn_cpu 1000 under --cpu-max 0.5: $cpu us of CPU in $wall ms: $fraction of a core; throttled $throttled times"

# 2. serve: a job with cpuMax 1.5, then jobs without: theirs is max.
. "$(dirname "$0")/../e2e/serve.inc"
serve_start --cgroup-root "$LROOT"
client_open c
show='cat /sys/fs/cgroup$(sed -n s/^0:://p /proc/self/cgroup)/cpu.max'
r=$(call c terminal/create '{"command":"sh","args":["-c","'"$show"'"],"cpuMax":1.5,"keep":true}')
job=$(jf "$r" 'm["result"]["terminalId"]')
call c terminal/wait_for_exit '{"terminalId":"'"$job"'"}' > /dev/null
r=$(call c terminal/output '{"terminalId":"'"$job"'"}')
[ "$(jf "$r" 'm["result"]["output"].strip()')" = "150000 100000" ] || fail "serve: the job with cpuMax 1.5 saw: $r"
r=$(call c terminal/report '{"terminalId":"'"$job"'"}')
[ "$(jf "$r" 'm["result"]["limits"]["cpu_max"]')" = 1.5 ] || fail "serve: limits: $r"
for i in 1 2 3; do
  r=$(call c terminal/create '{"command":"sh","args":["-c","'"$show"'"],"keep":true}')
  job2=$(jf "$r" 'm["result"]["terminalId"]')
  call c terminal/wait_for_exit '{"terminalId":"'"$job2"'"}' > /dev/null
  r=$(call c terminal/output '{"terminalId":"'"$job2"'"}')
  [ "$(jf "$r" 'm["result"]["output"].strip()')" = "max 100000" ] || fail "serve: a job without cpuMax has cpu.max: $r"
done
client_close c
stop_serve
echo "ok: serve cpuMax 1.5: cpu.max 150000 100000; the next jobs' cpu.max is max"
pass "$fraction of a core under --cpu-max 0.5"
