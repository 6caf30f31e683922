# SPDX-License-Identifier: Apache-2.0
# Guest only (scripts/guest.sh): --pids-max on a pure cgroup v2 host. A fork
# storm (tests/helpers/fork_storm: every member ignores SIGTERM and forks
# as fast as it may, its own cap far above the limit) under --pids-max 50
# is held at 50 by the kernel (pids.peak where the kernel has it, never above
# 50; pids.current, sampled while it runs, never above 50 but for the
# instant a refused fork is counted; and it reaches 50),
# stopped at --timeout (exit 124), the report says pids_max_hit true and
# limits.pids_max 50, nothing of it is left and its leaf is gone. A serve
# job with pidsMax, then one without: the second's pids.max is pmon's
# default, 4096, not the first's limit. The default on run: pids.max 4096 in
# the leaf and in the report, and none at all with --pids-max 0.
. "$(dirname "$0")/../e2e/common.inc"
. "$(dirname "$0")/limits.inc"
STORM=$HELPERS/fork_storm
[ -x "$STORM" ] || fail "helper $STORM missing"


# 1. The storm: cap 2000 live, 200000 forks, 20000 a second, for 30 s at
#    most; stopped after 3 s. The call notes its leaf first, so the test can
#    sample it while it runs.
"$PMON" run --cgroup-root "$LROOT" --pids-max 50 --timeout 3s --grace 500ms --report "$t/r.json" -- \
  sh -c 'sed -n "s/^0:://p" /proc/self/cgroup > '"$t/cg"'; exec "$0" "$@"' "$STORM" "$t/storm" 2000 200000 20000 30 \
  > "$t/out" 2> "$t/err" &
pmon_pid=$!
record_pid "$pmon_pid"
max_current=0 samples=0
while kill -0 "$pmon_pid" 2>/dev/null && [ "$(state_of "$pmon_pid")" != Z ]; do
  if [ -s "$t/cg" ] && n=$(cat "$CG$(cat "$t/cg")/pids.current" 2>/dev/null); then
    samples=$((samples + 1))
    [ "$n" -gt "$max_current" ] && max_current=$n
    [ -f "$CG$(cat "$t/cg")/pids.peak" ] && cat "$CG$(cat "$t/cg")/pids.peak" > "$t/peak" 2>/dev/null
  fi
  sleep 0.05
done
rc=0
wait "$pmon_pid" || rc=$?
left=$(alive_naming "$t/storm")
if [ -n "$left" ]; then
  echo "$left" >> "$t/pids"; echo "$left" >> "$STATE/pids"
  fail "storm processes survived: $(echo "$left" | wc -l)"
fi
[ $rc = 124 ] || fail "pmon exit $rc, want 124 (stopped at the deadline): $(cat "$t/err")"
[ "$samples" -gt 0 ] || fail "pids.current of the leaf was never read"
# A refused fork raises pids.current by one for an instant before the kernel
# takes it back (it adds, then compares with pids.max), so a sample may read
# one above the limit for each CPU forking at that moment; pids.peak, where
# the kernel has it, counts only the forks let through.
cpus=$(getconf _NPROCESSORS_ONLN)
[ "$max_current" -le $((50 + cpus)) ] || fail "pids.current reached $max_current under --pids-max 50 ($cpus CPUs)"
[ "$max_current" -ge 45 ] || fail "the storm only reached $max_current processes: not held at the limit"
peak=""
if [ -s "$t/peak" ]; then
  peak=$(cat "$t/peak")
  [ "$peak" -le 50 ] || fail "pids.peak $peak under --pids-max 50"
fi
[ "$(rj "$t/r.json" .pids_max_hit)" = true ] || fail "pids_max_hit is not true: $(cat "$t/r.json")"
[ "$(rj "$t/r.json" -c .limits)" = '{"memory_max":null,"memory_high":null,"pids_max":50,"cpu_max":null}' ] ||
  fail "limits: $(rj "$t/r.json" -c .limits)"
[ "$(rj "$t/r.json" .oom_killed)" = null ] || fail "oom_killed without a memory limit"
[ "$(rj "$t/r.json" .timed_out)" = true ] || fail "not timed out"
[ "$(rj "$t/r.json" .cleanup_verified)" = true ] || fail "cleanup not verified"
assert_leaf_gone "$t/r.json" "pmon run --pids-max"
read -r _ forks speak _ < <(od -An -v -t d8 -w32 "$t/storm")
[ "$forks" -gt 50 ] || fail "the storm tried only $forks forks"
echo "ok: fork storm under --pids-max 50: held at $max_current (pids.current, $samples samples)${peak:+, pids.peak $peak}; $forks forks tried; exit 124, pids_max_hit"

# 2. Under the limit: pids_max_hit false.
"$PMON" run -q --cgroup-root "$LROOT" --pids-max 50 --report "$t/r2.json" -- sh -c 'sleep 0.1 & sleep 0.1 & wait' ||
  fail "a call under the limit failed ($?)"
[ "$(rj "$t/r2.json" .pids_max_hit)" = false ] || fail "under the limit: pids_max_hit $(rj "$t/r2.json" .pids_max_hit)"
assert_leaf_gone "$t/r2.json" "under the limit"
echo "ok: under the limit: pids_max_hit false"

# 3. serve: a job with pidsMax 5 fails its sixth fork; the next job, without
#    one, has the default pids.max 4096 (no leaf with a limit is reused), and
#    one with pidsMax 0 has none.
. "$(dirname "$0")/../e2e/serve.inc"
serve_start --cgroup-root "$LROOT"
client_open c
r=$(call c terminal/create '{"command":"sh","args":["-c","cat /sys/fs/cgroup$(sed -n s/^0:://p /proc/self/cgroup)/pids.max; for i in 1 2 3 4 5 6 7 8; do sleep 1 & done; wait"],"pidsMax":5,"keep":true}')
job=$(jf "$r" 'm["result"]["terminalId"]')
call c terminal/wait_for_exit '{"terminalId":"'"$job"'"}' > /dev/null
r=$(call c terminal/output '{"terminalId":"'"$job"'"}')
case $(jf "$r" 'm["result"]["output"]') in 5*) ;; *) fail "serve: the job with pidsMax 5 saw: $r" ;; esac
r=$(call c terminal/report '{"terminalId":"'"$job"'"}')
[ "$(jf "$r" 'm["result"]["pids_max_hit"]')" = true ] || fail "serve: pids_max_hit is not true: $r"
[ "$(jf "$r" 'm["result"]["limits"]["pids_max"]')" = 5 ] || fail "serve: limits: $r"
for i in 1 2 3; do
  r=$(call c terminal/create '{"command":"sh","args":["-c","cat /sys/fs/cgroup$(sed -n s/^0:://p /proc/self/cgroup)/pids.max"],"keep":true}')
  job2=$(jf "$r" 'm["result"]["terminalId"]')
  call c terminal/wait_for_exit '{"terminalId":"'"$job2"'"}' > /dev/null
  r=$(call c terminal/output '{"terminalId":"'"$job2"'"}')
  [ "$(jf "$r" 'm["result"]["output"].strip()')" = 4096 ] || fail "serve: a job without pidsMax has pids.max: $r"
done
r=$(call c terminal/create '{"command":"sh","args":["-c","cat /sys/fs/cgroup$(sed -n s/^0:://p /proc/self/cgroup)/pids.max"],"pidsMax":0,"keep":true}')
job3=$(jf "$r" 'm["result"]["terminalId"]')
call c terminal/wait_for_exit '{"terminalId":"'"$job3"'"}' > /dev/null
r=$(call c terminal/output '{"terminalId":"'"$job3"'"}')
[ "$(jf "$r" 'm["result"]["output"].strip()')" = max ] || fail "serve: a job with pidsMax 0 has pids.max: $r"
client_close c
stop_serve
echo "ok: serve pidsMax 5: pids_max_hit; the next jobs' pids.max is the default 4096; pidsMax 0: max"

# 4. The default on run: the leaf's pids.max is 4096 and the report says so;
#    --pids-max 0 leaves none. A leaf is never reused with a pids.max its
#    next call did not want.
for i in 1 2; do
  "$PMON" run -q --cgroup-root "$LROOT" --report "$t/d$i.json" -- \
    sh -c 'cat /sys/fs/cgroup$(sed -n s/^0:://p /proc/self/cgroup)/pids.max' > "$t/d$i.out" ||
    fail "run without --pids-max failed ($?)"
  [ "$(cat "$t/d$i.out")" = 4096 ] || fail "run without --pids-max: the leaf's pids.max is $(cat "$t/d$i.out")"
  [ "$(rj "$t/d$i.json" .limits.pids_max)" = 4096 ] || fail "report limits: $(rj "$t/d$i.json" -c .limits)"
  [ "$(rj "$t/d$i.json" .limits_note)" = null ] || fail "limits_note: $(rj "$t/d$i.json" .limits_note)"
  [ "$(rj "$t/d$i.json" .pids_max_hit)" = false ] || fail "pids_max_hit: $(rj "$t/d$i.json" .pids_max_hit)"
  "$PMON" run -q --cgroup-root "$LROOT" --pids-max 0 --report "$t/z$i.json" -- \
    sh -c 'cat /sys/fs/cgroup$(sed -n s/^0:://p /proc/self/cgroup)/pids.max' > "$t/z$i.out" ||
    fail "run --pids-max 0 failed ($?)"
  [ "$(cat "$t/z$i.out")" = max ] || fail "run --pids-max 0: the leaf's pids.max is $(cat "$t/z$i.out")"
  [ "$(rj "$t/z$i.json" .limits.pids_max)" = 0 ] || fail "report limits: $(rj "$t/z$i.json" -c .limits)"
  [ "$(rj "$t/z$i.json" .limits_note)" = null ] || fail "limits_note: $(rj "$t/z$i.json" .limits_note)"
done
echo "ok: the default pids.max 4096 on run, none with --pids-max 0"
pass "held at $max_current under --pids-max 50"
