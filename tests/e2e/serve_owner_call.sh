# SPDX-License-Identifier: Apache-2.0
# A job asked for from inside a pmon call belongs to that call, `keep` or
# not: the service is never a way out. (1) `pmon run --timeout` of a shell
# that `pmon start`s a sleeper (a kept job): once the run returns it is
# gone and the run's report lists it (its leaf was made inside the run's);
# (2) a job of the service that starts a kept job itself: stopping the
# outer job stops the inner one; (3) the same run under --confine pidns,
# subreaper and pgroup, whose boundary cannot hold the job: the service
# leaves the run a record of it, and the run stops it through the service
# as it ends and lists it in its report; the job's report says "owner call
# ended". Processes are checked by pid and start time.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

owner_call_service
# The call's command: starts a kept job running the sleeper, waits until it
# runs, then waits for its own timeout. $1 pmon, $2 sleeper record, $3 id file.
cat > "$t/outer.sh" <<EOF
sh "$t/start_sleeper.sh" "\$@" || exit
exec sleep 1000
EOF

# wait_record FILE: the sleeper's record, recorded for the leak check; sets $spid $sst.
wait_record() {
  local i
  for i in $(seq 400); do
    [ -f "$1" ] && break
    sleep 0.05
  done
  [ -f "$1" ] || fail "the sleeper never wrote $1"
  read -r spid sst < "$1"
  echo "$spid $sst" >> "$t/pids"; echo "$spid $sst" >> "$STATE/pids"
}

# job_report ID: the job's terminal/report, once it is over (10 s at most).
job_report() {
  local r
  r=$(call_once terminal/wait_for_exit '{"terminalId":"'"$1"'","timeoutMs":10000}')
  json_holds "$r" 'result!=(absent)' 'result.running!=true' || { echo "job $1: $r" >&2; return 1; }
  r=$(call_once terminal/report '{"terminalId":"'"$1"'"}')
  json_holds "$r" 'result!=(absent)' || { echo "job $1: $r" >&2; return 1; }
  jget "$r" result
}

# (1) and (3): a run on each backend that can; cgroup first.
for b in cgroup pidns subreaper pgroup; do
  have_backend "$b" || continue
  rec=$t/$b.sleeper
  rc=0
  "$PMON" run -q --confine "$b" --timeout 3s --grace 1s --report "$t/$b.json" -- \
    sh "$t/outer.sh" "$PMON" "$rec" "$t/$b.id" || rc=$?
  [ -f "$rec" ] || fail "$b: the kept job never ran (run exit $rc; $(cat "$t/serve.err"))"
  wait_record "$rec"
  [ $rc = 124 ] || cat "$t/$b.json" >&2; [ $rc = 124 ] || fail "$b: pmon run exited $rc, not 124 (its timeout)"
  id=$(cat "$t/$b.id")
  # Its leaf is inside the run's (cgroup), or the run stopped it through
  # the service: gone when the run returns, and listed.
  alive "$spid" "$sst" && fail "$b: the kept job's sleeper $spid outlived the pmon run that started it"
  report_is -m "$b: the run's report: the kept job's sleeper" "$t/$b.json" cleanup_verified=true \
    "leftovers[pid=$spid,start_time=$sst].action^=SIG"
  # Nothing is left for a later process with the run's pid.
  [ -z "$(ls -A "$XDG_RUNTIME_DIR/pmon/calls" 2>/dev/null)" ] || fail "$b: records left behind: $(ls -R "$XDG_RUNTIME_DIR/pmon/calls")"
  job_report "$id" > "$t/$b.job.json" || fail "$b: no report of job $id"
  report_is -m "$b: the job's report" "$t/$b.job.json" "job.stoppedBy=owner call ended" cleanup_verified=true
done

# (2) A job of the service that starts a kept job itself.
client_open c
params=$(jparams -- sh "$t/outer.sh" "$PMON" "$t/inner.sleeper" "$t/inner.id")
r=$(call c terminal/create "$params")
outer=$(jget "$r" result.terminalId)
wait_record "$t/inner.sleeper"
for i in $(seq 200); do [ -f "$t/inner.id" ] && break; sleep 0.05; done
inner=$(cat "$t/inner.id")
[ -n "$inner" ] && [ "$inner" != "$outer" ] || fail "the inner job's id: '$inner'"
r=$(call c terminal/kill '{"terminalId":"'"$outer"'"}')
reply_is -m "kill of the outer job" "$r" result.cleanupVerified=true
alive "$spid" "$sst" && fail "the inner kept job's sleeper $spid outlived the job that started it"
r=$(call c terminal/report '{"terminalId":"'"$outer"'"}')
reply_is -m "the outer job's report: the inner job's sleeper" "$r" "result.leftovers[pid=$spid,start_time=$sst]!=(absent)"
job_report "$inner" > "$t/inner.job.json" || fail "no report of the inner job"
report_is -m "the inner job's report" "$t/inner.job.json" "job.stoppedBy=owner call ended"
client_close c

kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
