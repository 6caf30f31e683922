# SPDX-License-Identifier: Apache-2.0
# A job asked for from inside pmon supervise or pmon init belongs to the
# call that asked, as one asked for from inside pmon run does: under a
# backend whose boundary cannot hold the job (subreaper, pgroup) the
# service leaves that pmon a record of it, and the pmon stops it through
# the service as the call ends. The command `pmon start`s a sleeper (a kept
# job) and waits until it runs; then init's exits 0, and supervise's exits
# 1, so that it is restarted: the second child finds the first one's job
# gone already, and exits 0. Once supervise or init returns the sleeper is
# gone, no record is left, -v said it was stopped, and the job's report
# says "owner call ended". Checked by pid and start time.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

owner_call_service
# init's command: starts the kept job, waits until it runs, exits 0 (1 with
# a fourth argument: supervise's first child). $1 pmon, $2 sleeper record,
# $3 id file.
cat > "$t/outer.sh" <<EOF
sh "$t/start_sleeper.sh" "\$1" "\$2" "\$3" || exit
[ -z "\$4" ] || exit 1
EOF
# supervise's command: the first child runs outer.sh (and exits 1); the
# second writes to $4 whether the first one's job still runs.
# $1 pmon, $2 sleeper record, $3 id file, $4 what the second child found.
cat > "$t/restarted.sh" <<EOF
if [ -f "\$2" ]; then
  read -r p s < "\$2"
  if [ -d /proc/\$p ] && [ "\$(cut -d' ' -f22 /proc/\$p/stat)" = "\$s" ]; then echo alive; else echo gone; fi > "\$4"
  exit 0
fi
exec sh "$t/outer.sh" "\$@"
EOF

ran=0
for b in subreaper pgroup; do
  have_backend "$b" || continue
  for sub in supervise init; do
    rec=$t/$sub.$b.sleeper
    rc=0
    if [ $sub = supervise ]; then
      "$PMON" supervise -v --confine "$b" --max-restarts 1 --timeout-ms 20000 -- \
        sh "$t/restarted.sh" "$PMON" "$rec" "$t/$sub.$b.id" "$t/$sub.$b.found" 2> "$t/$sub.$b.err" || rc=$?
    else
      "$PMON" init -v --confine "$b" -- sh "$t/outer.sh" "$PMON" "$rec" "$t/$sub.$b.id" 2> "$t/$sub.$b.err" || rc=$?
    fi
    [ -f "$rec" ] || fail "$sub $b: the kept job never ran (exit $rc; $(cat "$t/$sub.$b.err" "$t/serve.err"))"
    read -r spid sst < "$rec"
    echo "$spid $sst" >> "$STATE/pids"
    [ $rc = 0 ] || fail "$sub $b: exited $rc, not 0: $(cat "$t/$sub.$b.err")"
    alive "$spid" "$sst" && fail "$sub $b: the kept job's sleeper $spid outlived the pmon $sub that started it"
    if [ $sub = supervise ]; then
      [ "$(cat "$t/$sub.$b.found")" = gone ] ||
        fail "$sub $b: the restarted child found the first child's job $(cat "$t/$sub.$b.found")"
    fi
    grep -q '^pmon: stopping 1 job a service started for this call$' "$t/$sub.$b.err" ||
      fail "$sub $b: -v did not say the job was stopped: $(cat "$t/$sub.$b.err")"
    [ -z "$(ls -A "$XDG_RUNTIME_DIR/pmon/calls" 2>/dev/null)" ] ||
      fail "$sub $b: records left behind: $(ls -R "$XDG_RUNTIME_DIR/pmon/calls")"
    id=$(cat "$t/$sub.$b.id")
    r=$(call_once terminal/wait_for_exit '{"terminalId":"'"$id"'","timeoutMs":10000}')
    reply_is -m "$sub $b: job $id is over" "$r" 'result.running!=true'
    r=$(call_once terminal/report '{"terminalId":"'"$id"'"}')
    reply_is -m "$sub $b: the job's report" "$r" "result.job.stoppedBy=owner call ended" result.cleanup_verified=true
    ran=$((ran + 1))
  done
done
[ $ran -gt 0 ] || skip "neither the subreaper nor the pgroup backend is available"

kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
