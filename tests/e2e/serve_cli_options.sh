# SPDX-License-Identifier: Apache-2.0
# Options of the shell verbs, on real jobs of a real service:
# - pmon wait --timeout: a job still running then is left running, pmon
#   wait exits 75 with one line on stderr; once the job has ended, pmon wait
#   (with or without --timeout) exits with the job's status.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
export PMON_SOCKET=$SOCK

# job_pid ID: the main process of job ID (from pmon jobs --json), recorded
# by pid and start time; sets $jp $jst.
job_pid() {
  jp=$("$PMON" jobs --json | python3 -c 'import json,sys; print([t["pid"] for t in json.load(sys.stdin) if t["terminalId"]==sys.argv[1]][0])' "$1")
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

kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
