# SPDX-License-Identifier: Apache-2.0
# Guest only (scripts/guest.sh): --memory-max on a pure cgroup v2 host. A
# call that allocates past --memory-max 100M is killed whole by the kernel
# (memory.oom.group): the shell at its top and a sleeping child that uses
# no memory die with the allocator, pmon exits 137, the report says
# oom_killed true, limits.memory_max 104857600 and a memory_peak_bytes
# within the limit, nothing of the call is left (pid + start time) and its
# leaf is gone. A call under the limit runs to its end with oom_killed
# false. A serve job with memoryMax and a Python call with memory_max= are
# killed the same way.
. "$(dirname "$0")/../e2e/common.inc"
. "$(dirname "$0")/limits.inc"
MAX=$((100 << 20))
# Its last part is the Python package's (the guest runs the package's suite
# too: a build without it fails there as well).
[ -d "${PMON_BUILD_DIR:-}/python/pmon" ] ||
  fail "no Python package in ${PMON_BUILD_DIR:-the build} (build with the Python binding): pmon.run(memory_max=) is part of this scenario"

# 1. pmon run: a shell, a sleeping child, and an allocator touching 300 MiB
#    in 10 MiB steps. Each records itself (pid + start time) first.
rec=$t/rec
cat > "$t/alloc.py" <<'PY'
chunks = []
for i in range(30):
    chunks.append(bytes([1]) * (10 << 20))
print("allocated", len(chunks) * 10, "MiB", flush=True)
PY
# The shell at the top, a sleeper, the allocator.
cat > "$t/call.sh" <<SH
rec=$rec
$RECORD_SH
(rec=$rec; $RECORD_SH; exec sleep 1000) &
sh -c 'rec=$rec; $RECORD_SH; exec python3 $t/alloc.py'
echo "the allocator returned \$?"
wait
SH
rc=0
"$PMON" run --cgroup-root "$LROOT" --timeout 60s --memory-max 100M --report "$t/r.json" -- sh "$t/call.sh" > "$t/out" 2> "$t/err" || rc=$?
[ -s "$rec" ] || fail "the call recorded no process: $(cat "$t/out" "$t/err")"
assert_none_alive "$rec" "pmon run --memory-max"
[ "$(wc -l < "$rec")" = 3 ] || fail "want the shell, the sleeper and the allocator recorded: $(cat "$rec")"
[ $rc = 137 ] || fail "pmon exit $rc, want 137 (the whole call killed): $(cat "$t/out" "$t/err")"
! grep -q allocated "$t/out" || fail "the allocator got its 300 MiB under a 100 MiB limit"
! grep -q "the allocator returned" "$t/out" || fail "the shell lived on after the out-of-memory kill: $(cat "$t/out")"
[ "$(rj "$t/r.json" .oom_killed)" = true ] || fail "oom_killed is not true: $(cat "$t/r.json")"
[ "$(rj "$t/r.json" .signal_name)" = SIGKILL ] || fail "the main process did not die by SIGKILL: $(cat "$t/r.json")"
[ "$(rj "$t/r.json" -c .limits)" = '{"memory_max":104857600,"memory_high":null,"pids_max":4096,"cpu_max":null}' ] ||
  fail "limits: $(rj "$t/r.json" -c .limits)"
[ "$(rj "$t/r.json" .pids_max_hit)" = false ] || fail "pids_max_hit under the default pids limit: $(rj "$t/r.json" .pids_max_hit)"
[ "$(rj "$t/r.json" .cleanup_verified)" = true ] || fail "cleanup not verified"
peak=$(rj "$t/r.json" .memory_peak_bytes)
[ "$peak" != null ] || fail "memory_peak_bytes is null"
[ "$peak" -le "$MAX" ] || fail "memory_peak_bytes $peak is above the limit $MAX"
[ "$peak" -ge $((50 << 20)) ] || fail "memory_peak_bytes $peak: the allocator never came near the limit"
assert_leaf_gone "$t/r.json" "pmon run --memory-max"
echo "ok: run --memory-max 100M: exit 137, oom_killed, peak $peak bytes ($((peak >> 20)) MiB), 3 processes gone"

# 2. Under the limit: runs to its end, oom_killed false, exit 0.
"$PMON" run -q --cgroup-root "$LROOT" --memory-max 100M --report "$t/r2.json" -- \
  python3 -c 'b = bytes([1]) * (20 << 20); print(len(b))' > "$t/out2" ||
  fail "a call under the limit failed ($?): $(cat "$t/out2")"
grep -qx 20971520 "$t/out2" || fail "the call under the limit did not finish: $(cat "$t/out2")"
[ "$(rj "$t/r2.json" .oom_killed)" = false ] || fail "under the limit: oom_killed $(rj "$t/r2.json" .oom_killed)"
peak2=$(rj "$t/r2.json" .memory_peak_bytes)
[ "$peak2" -ge $((20 << 20)) ] || fail "under the limit: memory_peak_bytes $peak2 < 20 MiB"
assert_leaf_gone "$t/r2.json" "under the limit"
echo "ok: under the limit: exit 0, oom_killed false, peak $peak2 bytes"

# 3. A serve job with memoryMax, then one without: the second runs in a leaf
#    with no memory limit (a leaf that had one is never pooled again).
. "$(dirname "$0")/../e2e/serve.inc"
serve_start --cgroup-root "$LROOT"
client_open c
r=$(call c terminal/create '{"command":"python3","args":["-c","b = bytes([1]) * (300 << 20)"],"memoryMax":"100M","keep":true}')
job=$(jf "$r" 'm["result"]["terminalId"]')
r=$(call c terminal/wait_for_exit '{"terminalId":"'"$job"'"}')
[ "$(jf "$r" 'm["result"]["signal"]')" = SIGKILL ] || fail "serve: the job was not killed: $r"
r=$(call c terminal/report '{"terminalId":"'"$job"'"}')
[ "$(jf "$r" 'm["result"]["oom_killed"]')" = true ] || fail "serve: oom_killed is not true: $r"
[ "$(jf "$r" 'm["result"]["limits"]["memory_max"]')" = $MAX ] || fail "serve: limits: $r"
speak=$(jf "$r" 'm["result"]["memory_peak_bytes"]')
[ "$speak" -le "$MAX" ] || fail "serve: memory_peak_bytes $speak above the limit"
r=$(call c terminal/create '{"command":"sh","args":["-c","cat /sys/fs/cgroup$(sed -n s/^0:://p /proc/self/cgroup)/memory.max"],"keep":true}')
job2=$(jf "$r" 'm["result"]["terminalId"]')
call c terminal/wait_for_exit '{"terminalId":"'"$job2"'"}' > /dev/null
r=$(call c terminal/output '{"terminalId":"'"$job2"'"}')
[ "$(jf "$r" 'm["result"]["output"].strip()')" = max ] || fail "serve: a job without memoryMax has memory.max: $r"
r=$(call c terminal/report '{"terminalId":"'"$job2"'"}')
[ "$(jf "$r" 'm["result"]["oom_killed"]')" = null ] || fail "serve: oom_killed without a limit: $r"
client_close c
stop_serve
echo "ok: serve memoryMax \"100M\": SIGKILL, oom_killed, peak $speak bytes; the next job's memory.max is max"

# 4. --memory-high 32M: a call that writes 160 MiB to a file (page cache,
#    which reclaim can take back) goes past it, is slowed and reclaimed, and
#    runs to its end: exit 0, memory_high_hit true, oom_killed false, the
#    leaf's memory.high what was asked.
rc=0
"$PMON" run -q --cgroup-root "$LROOT" --timeout 120s --memory-high 32M --memory-max 512M --report "$t/r5.json" -- \
  sh -c 'cg=$(sed -n "s/^0:://p" /proc/self/cgroup); cat "/sys/fs/cgroup${cg%/}/memory.high" > "$0.high";
         dd if=/dev/zero of="$0" bs=1M count=160 2>/dev/null; sync; echo written' "$t/big" > "$t/out5" 2> "$t/err5" || rc=$?
[ $rc = 0 ] || fail "--memory-high: exit $rc, want 0 (slowed, never killed): $(cat "$t/out5" "$t/err5")"
grep -qx written "$t/out5" || fail "--memory-high: the writer did not finish: $(cat "$t/out5")"
[ "$(cat "$t/big.high")" = $((32 << 20)) ] || fail "--memory-high: the leaf's memory.high reads $(cat "$t/big.high")"
[ "$(rj "$t/r5.json" .limits.memory_high)" = $((32 << 20)) ] || fail "--memory-high: limits: $(rj "$t/r5.json" -c .limits)"
[ "$(rj "$t/r5.json" .memory_high_hit)" = true ] || fail "--memory-high: memory_high_hit is not true: $(cat "$t/r5.json")"
[ "$(rj "$t/r5.json" .oom_killed)" = false ] || fail "--memory-high: oom_killed: $(rj "$t/r5.json" .oom_killed)"
rm -f "$t/big"
assert_leaf_gone "$t/r5.json" "--memory-high"
echo "ok: --memory-high 32M: 160 MiB written through the page cache, memory_high_hit, exit 0"

# 5. Python: pmon.run(memory_max=...).
PYTHONPATH=$PMON_BUILD_DIR/python python3 - "$LROOT" <<'PY' || fail "python memory_max: see above"
import sys, pmon
root = sys.argv[1]
r = pmon.run(["python3", "-c", "b = bytes([1]) * (300 << 20)"], memory_max="100M", cgroup_root=root)
assert r.returncode == -9, r.returncode
rep = r.report
assert rep["oom_killed"] is True, rep
assert rep["limits"]["memory_max"] == 100 << 20, rep["limits"]
assert rep["memory_peak_bytes"] <= 100 << 20, rep["memory_peak_bytes"]
r = pmon.run(["true"], memory_max=64 << 20, cgroup_root=root)
assert r.returncode == 0 and r.report["oom_killed"] is False, r.report
print("ok: python memory_max='100M': killed (-9), oom_killed, peak", rep["memory_peak_bytes"], "bytes")
PY
pass "peak $peak bytes under a 100 MiB limit"
