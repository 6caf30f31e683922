# SPDX-License-Identifier: Apache-2.0
# The CLI verbs on a running service: pmon start (a job that outlives it,
# its id on stdout), jobs, logs (-f follows until the job ends), stop, wait
# (the job's exit status); $PMON_SOCKET or --socket names the service; with
# no service there, one line says how to start one. (serve_cli_verbs.sh:
# rm, timeouts, ports, and what each says.)
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
export PMON_SOCKET=$SOCK
id1=$("$PMON" start --name web -- sh -c "echo hello from \$0; exec sleep 1000" web) || fail "pmon start failed"
printf '%s' "$id1" | grep -Eqx 't[0-9a-f]{16}' || fail "pmon start printed '$id1'"
"$PMON" jobs > "$t/jobs" || fail "pmon jobs failed"
grep -q "^$id1 *web *running " "$t/jobs" || fail "pmon jobs: $(cat "$t/jobs")"
"$PMON" jobs --json > "$t/jobs.json" || fail "pmon jobs --json: exit $?"
report_is -m "pmon jobs --json" "$t/jobs.json" 0.name=web 0.status=running
for i in $(seq 100); do
  [ "$("$PMON" logs "$id1")" = "hello from web" ] && break
  sleep 0.05
done
[ "$("$PMON" logs "$id1")" = "hello from web" ] || fail "pmon logs $id1: $("$PMON" logs "$id1")"

# The job runs in the directory pmon start was called from, with its env.
mkdir "$t/here"
id2=$(cd "$t/here" && PMON_TEST_VAR=42 "$PMON" start -- sh -c 'echo "$PWD $PMON_TEST_VAR"; sleep 0.5; echo two; exit 3')
"$PMON" logs -f "$id2" > "$t/logs" || fail "pmon logs -f failed"
[ "$(cat "$t/logs")" = "$t/here 42
two" ] || fail "pmon logs -f: $(cat "$t/logs")"
rc=0; "$PMON" wait "$id2" || rc=$?
[ $rc = 3 ] || fail "pmon wait: exit $rc, not the job's 3"

"$PMON" stop "$id1" || fail "pmon stop failed"
"$PMON" jobs > "$t/jobs"
grep -q "^$id1 *web *killed SIGTERM " "$t/jobs" || fail "pmon jobs after stop: $(cat "$t/jobs")"
rc=0; "$PMON" wait "$id1" || rc=$?
[ $rc = 143 ] || fail "pmon wait of a stopped job: exit $rc"

rc=0; "$PMON" logs t9 2> "$t/err" || rc=$?
[ $rc = 125 ] && grep -q "^pmon: no job 't9' on this service; 'pmon jobs' lists them$" "$t/err" ||
  fail "logs of an unknown job: $rc $(cat "$t/err")"

# No service on the socket.
rc=0; "$PMON" jobs --socket "$t/none.sock" 2> "$t/err" || rc=$?
[ $rc = 125 ] || fail "pmon jobs with no service: exit $rc"
[ "$(wc -l < "$t/err")" = 1 ] && grep -q "no service answers on $t/none.sock.*pmon serve --listen $t/none.sock" "$t/err" ||
  fail "no-service message: $(cat "$t/err")"

kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
