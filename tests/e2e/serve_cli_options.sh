# SPDX-License-Identifier: Apache-2.0
# Options of the shell verbs, on real jobs of a real service:
# - pmon wait --timeout: a job still running then is left running, pmon
#   wait exits 75 with one line on stderr; once the job has ended, pmon wait
#   (with or without --timeout) exits with the job's status;
# - pmon start --memory-max, --memory-high, --pids-max, --cpu-max reach the
#   job's cgroup: set where the service's cgroup has the controller (the
#   report says so), else refused with the service's one line, exit 125 and
#   nothing started; a bad value is one line naming the flag, exit 125;
# - pmon logs --offset N --length N prints exactly those bytes of the whole
#   output, also across the service's pages; not with -f.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

# A small memory budget: a reply holds at most 512 KiB of output, so a
# range of 1.2 MB is read in three pages.
serve_start --memory-budget 16M
export PMON_SOCKET=$SOCK

# job_pid ID: the main process of job ID (from pmon jobs --json), recorded
# by pid and start time; sets $jp $jst.
job_pid() {
  jp=$(jget "$("$PMON" jobs --json)" "[terminalId=$1].pid")
  jst=$(start_time_of "$jp")
  [ -n "$jst" ] || fail "the main process $jp of job $1 is not there"
  echo "$jp $jst" >> "$t/pids"; echo "$jp $jst" >> "$STATE/pids"
}

# 1. pmon wait --timeout.
job=$("$PMON" start -- sleep 600) || fail "pmon start sleep 600 failed"
job_pid "$job"
rc=0; "$PMON" wait --timeout 0.3s "$job" > "$t/out" 2> "$t/err" || rc=$?
[ $rc = 75 ] || fail "pmon wait --timeout 0.3s of a running job: exit $rc, want 75: $(cat "$t/err")"
[ "$(cat "$t/err")" = "pmon: job $job is still running after 0.3s; wait again with 'pmon wait $job'" ] ||
  fail "pmon wait --timeout 0.3s said: '$(cat "$t/err")'"
[ ! -s "$t/out" ] || fail "pmon wait --timeout printed on stdout: $(cat "$t/out")"
alive "$jp" "$jst" || fail "pmon wait --timeout stopped the job (its process $jp is gone)"
"$PMON" jobs | grep -q "^$job .* running " || fail "after pmon wait --timeout the job is not running: $("$PMON" jobs)"
echo "ok: wait --timeout 0.3s: exit 75, the job (pid $jp) runs on: $(cat "$t/err")"
# A bad DURATION: one line naming the flag, as pmon run's --timeout.
rc=0; "$PMON" wait --timeout soon "$job" 2> "$t/err" || rc=$?
[ $rc = 125 ] && [ "$(wc -l < "$t/err")" = 1 ] || fail "pmon wait --timeout soon: exit $rc: $(cat "$t/err")"
grep -q "^pmon: wait: --timeout: invalid duration 'soon'" "$t/err" || fail "pmon wait --timeout soon: $(cat "$t/err")"
"$PMON" run --timeout soon -- true 2> "$t/run.err" || true
[ "$(sed 's/^pmon: wait: /pmon: run: /' "$t/err")" = "$(cat "$t/run.err")" ] ||
  fail "pmon wait and pmon run word a bad --timeout differently: '$(cat "$t/err")' / '$(cat "$t/run.err")'"
alive "$jp" "$jst" || fail "the job died"
"$PMON" stop "$job" || fail "pmon stop: exit $?"
wait_gone "$jp" "$jst" || fail "the job's process $jp outlived pmon stop"
rc=0; "$PMON" wait "$job" 2> "$t/err" || rc=$?
[ $rc = 143 ] && [ ! -s "$t/err" ] || fail "pmon wait of the stopped job: exit $rc, want 143: $(cat "$t/err")"
rc=0; "$PMON" wait --timeout 0.3s "$job" 2> "$t/err" || rc=$?
[ $rc = 143 ] && [ ! -s "$t/err" ] || fail "pmon wait --timeout of the stopped job: exit $rc, want 143: $(cat "$t/err")"
"$PMON" wait --help | grep -q -- "--timeout DURATION" || fail "pmon wait --help lacks --timeout"
"$PMON" wait --help | grep -q "goes on running" || fail "pmon wait --help does not say the job goes on running"
"$PMON" rm "$job"
echo "ok: after pmon stop, pmon wait (and wait --timeout) exits 143"

# 2. pmon start with limits. Where the service's jobs get their cgroups
#    (beside pmon run's calls: the service is started from this shell's
#    cgroup), which controllers are enabled? (As limits_fail_closed.sh.)
cg2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
for_leaves=""
if have_backend cgroup; then
  for_leaves=$("$PMON" run -q --confine cgroup -- \
    sh -c 'cg=$(sed -n "s/^0:://p" /proc/self/cgroup); cat "$0${cg%/*}/cgroup.subtree_control"' "$cg2") ||
    fail "a call could not read its cgroup parent's cgroup.subtree_control"
  # not_set CTL: the service's line for a limit its cgroup cannot take.
  not_set() { echo "^pmon: cannot set the $1 limit: the $1 controller is not "; }
else
  echo "note: no cgroup backend here: every limit is refused"
  not_set() { echo "^pmon: cannot set the $1 limit: limits need a cgroup"; }
fi
enabled() { case " $for_leaves " in *" $1 "*) return 0 ;; esac; return 1; }
job_ids() { jget "$("$PMON" jobs --json)" '*.terminalId' | tr -d '[]" ' | tr , '\n' | sort; }
# expect_refused WHAT PATTERN ARGS...: pmon start ARGS exits 125 with one
# line matching PATTERN, and no job is started.
expect_refused() {
  local what=$1 pattern=$2 rc=0
  shift 2
  job_ids > "$t/before"
  "$PMON" start "$@" > "$t/out" 2> "$t/err" || rc=$?
  [ "$rc" = 125 ] || fail "$what: exit $rc, want 125: $(cat "$t/out" "$t/err")"
  [ ! -s "$t/out" ] || fail "$what: printed a job id: $(cat "$t/out")"
  [ "$(wc -l < "$t/err")" = 1 ] || fail "$what: want one line on stderr, got: $(cat "$t/err")"
  grep -q -- "$pattern" "$t/err" || fail "$what: '$pattern' not in: $(cat "$t/err")"
  job_ids | cmp -s - "$t/before" || fail "$what: a job was started: $("$PMON" jobs)"
  echo "ok: $what: $(cat "$t/err")"
}
if enabled pids; then
  lim=$("$PMON" start --pids-max 7 -- sleep 600) || fail "pmon start --pids-max 7 failed where pids is enabled"
  job_pid "$lim"
  cg=$(sed -n 's/^0:://p' "/proc/$jp/cgroup")
  [ "$(cat "$cg2$cg/pids.max")" = 7 ] || fail "the job's pids.max reads '$(cat "$cg2$cg/pids.max")', want 7"
  "$PMON" stop "$lim" || fail "pmon stop of the limited job"
  client_open c
  r=$(call c terminal/report '{"terminalId":"'"$lim"'"}')
  reply_is -m "the job's report: limits" "$r" result.limits.pids_max=7
  client_close c
  "$PMON" rm "$lim"
  echo "ok: start --pids-max 7: pids.max 7 in the job's cgroup, limits.pids_max 7 in its report"
elif have_backend cgroup; then
  # The service's words, for a host whose cgroup v2 lacks the controller
  # (a hybrid host), with the fix in pmon start's terms.
  line="$(not_set pids).* start the service with --cgroup-root set to an empty delegated cgroup where it is enabled, or start the job without it$"
  expect_refused "start --pids-max 7 (pids is not enabled here)" "$line" --pids-max 7 -- sleep 600
else
  expect_refused "start --pids-max 7 (no cgroup backend)" "$(not_set pids)" --pids-max 7 -- sleep 600
fi
# Each flag reaches the service as its field (a limit the service cannot
# set is refused by name, one it does set holds).
for lim in "memory --memory-max 100M memory.max 104857600" "memory --memory-high 80M memory.high 83886080" \
           "cpu --cpu-max 0.5 cpu.max 50000_100000"; do
  set -- $lim
  ctl=$1 flag=$2 value=$3 file=$4 want=${5//_/ }
  if enabled "$ctl"; then
    id=$("$PMON" start "$flag" "$value" -- sleep 600) || fail "pmon start $flag $value failed where $ctl is enabled"
    job_pid "$id"
    cg=$(sed -n 's/^0:://p' "/proc/$jp/cgroup")
    [ "$(cat "$cg2$cg/$file")" = "$want" ] || fail "start $flag $value: $file reads '$(cat "$cg2$cg/$file")', want '$want'"
    "$PMON" rm -f "$id"
    echo "ok: start $flag $value: $file $want"
  else
    expect_refused "start $flag $value ($ctl is not enabled here)" "$(not_set "$ctl")" "$flag" "$value" -- sleep 600
  fi
done
# Bad values: the flag named, nothing sent.
expect_refused "start --pids-max abc" "^pmon: start: --pids-max: 'abc' is not a whole number of processes" --pids-max abc -- sleep 600
expect_refused "start --memory-max 100X" "^pmon: start: --memory-max: '100X' is not a size" --memory-max 100X -- sleep 600
expect_refused "start --cpu-max 0" "^pmon: start: --cpu-max: '0' is out of range" --cpu-max 0 -- sleep 600
expect_refused "start --memory-high over --memory-max" "^pmon: start: --memory-high must be below --memory-max" \
  --memory-high 200M --memory-max 100M -- sleep 600
"$PMON" start --help > "$t/help"
for f in --memory-max --memory-high --pids-max --cpu-max; do
  grep -q -- "$f" "$t/help" || fail "pmon start --help lacks $f"
done
! grep -E '^ +--(memory|pids|cpu)-' "$t/help" | grep -q "call" ||
  fail "pmon start --help speaks of a call for a job: $(grep -E '^ +--(memory|pids|cpu)-' "$t/help")"

# 3. pmon logs --offset --length: 10000 known bytes; and 1.5 MB, read in
#    pages of at most 512 KiB.
python3 -c 'import sys; sys.stdout.write("".join(chr(33 + (i * 7) % 94) for i in range(10000)))' > "$t/text"
python3 -c 'import sys; sys.stdout.write("".join("line %07d of the big output\n" % i for i in range(54000)))' > "$t/big"
[ "$(wc -c < "$t/text")" = 10000 ] || fail "the text is not 10000 bytes"
small=$("$PMON" start -- cat "$t/text") || fail "pmon start cat text"
big=$("$PMON" start -- cat "$t/big") || fail "pmon start cat big"
"$PMON" wait "$small" && "$PMON" wait "$big" || fail "the cat jobs failed"
# slice FILE OFFSET LENGTH: bytes OFFSET to OFFSET+LENGTH-1 of FILE.
slice() { tail -c +$(($2 + 1)) "$1" | head -c "$3"; }
"$PMON" logs --offset 100 --length 50 "$small" > "$t/got" 2> "$t/err" || fail "pmon logs --offset 100 --length 50: exit $?: $(cat "$t/err")"
slice "$t/text" 100 50 > "$t/want"
cmp "$t/got" "$t/want" || fail "logs --offset 100 --length 50 printed '$(cat "$t/got")', want '$(cat "$t/want")'"
[ ! -s "$t/err" ] || fail "logs --offset said: $(cat "$t/err")"
echo "ok: logs --offset 100 --length 50: $(cat "$t/got")"
"$PMON" logs --offset 9990 "$small" > "$t/got" && slice "$t/text" 9990 10 | cmp -s - "$t/got" ||
  fail "logs --offset 9990: '$(cat "$t/got")'"
"$PMON" logs --length 20 "$small" > "$t/got" && head -c 20 "$t/text" | cmp -s - "$t/got" || fail "logs --length 20: '$(cat "$t/got")'"
"$PMON" logs --offset 20000 "$small" > "$t/got" && [ ! -s "$t/got" ] || fail "logs --offset past the end: '$(cat "$t/got")'"
"$PMON" logs --offset 1000 --length 1200000 "$big" > "$t/got" || fail "logs --offset 1000 --length 1200000: exit $?"
slice "$t/big" 1000 1200000 | cmp - "$t/got" || fail "logs --offset 1000 --length 1200000 of the big output differs ($(wc -c < "$t/got") bytes)"
"$PMON" logs --offset 1400000 "$big" > "$t/got" && slice "$t/big" 1400000 9999999 | cmp -s - "$t/got" ||
  fail "logs --offset 1400000 of the big output differs"
echo "ok: logs --offset/--length of 1.5 MB, across pages"
# With --grep: the lines that reach into the range, numbered as the job's.
# (31 bytes a line: bytes 290 to 309 are the end of line 10, the 10th line)
"$PMON" logs --offset 290 --length 20 --grep big "$big" > "$t/got" || fail "logs --offset --grep: exit $?"
echo "10:line 0000009 of the big output" | cmp -s - "$t/got" ||
  fail "logs --offset 290 --length 20 --grep big: $(cat "$t/got")"
# Refused: one line, exit 125.
refused() {  # refused WHAT LINE ARGS...
  local what=$1 want=$2 rc=0
  shift 2
  "$PMON" logs "$@" > "$t/out" 2> "$t/err" || rc=$?
  [ $rc = 125 ] && [ "$(cat "$t/err")" = "$want" ] && [ ! -s "$t/out" ] || fail "$what: exit $rc: '$(cat "$t/err")'"
  echo "ok: $what: $(cat "$t/err")"
}
refused "logs -f --offset" "pmon: logs: -f goes with none of --head, --tail, --offset, --length, --grep, --strip-ansi, --max-line-bytes" \
  -f --offset 100 --length 50 "$small"
refused "logs --follow --length" "pmon: logs: -f goes with none of --head, --tail, --offset, --length, --grep, --strip-ansi, --max-line-bytes" \
  --follow --length 5 "$small"
refused "logs --length 0" "pmon: logs: --length must be at least 1" --length 0 "$small"
refused "logs --offset --tail" "pmon: logs: --offset and --length go with neither --head nor --tail" --offset 5 --tail 10 "$small"
"$PMON" rm "$small" "$big"

kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
