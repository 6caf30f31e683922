# SPDX-License-Identifier: Apache-2.0
# A job whose tree ignores SIGTERM is killed once its grace is over, and the
# one-thread service keeps serving everybody meanwhile: during the grace
# another client lists the jobs and runs a job to its end, and the kill's
# own answer comes only after that, with the tree verified gone.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start --grace 20s  # long: the other client is served well within it, even on a loaded machine
client_open a
client_open b
params=$(jparams -- sh -c '
  trap "" TERM
  setsid sh -c "'"$HOSTPID_SH"'; echo \$hp \$(cut -d\" \" -f22 /proc/\$\$/stat) > '"$t"'/d.tmp; mv '"$t"'/d.tmp '"$t"'/d; exec sleep 1000" &
  exec sleep 1000')
r=$(call a terminal/create "$params")
id=$(jget "$r" result.terminalId)
daemon_of "$t/d"
main_of b "$id"

# The kill is sent and not waited for here: its answer is owed until the
# tree is gone.
send_raw a '{"jsonrpc":"2.0","id":"kill","method":"terminal/kill","params":{"terminalId":"'"$id"'"}}'
r=$(call b terminal/list)
reply_is -m "list during the grace" "$r" 'result.terminals.*.status=["stopping"]'
r=$(call b terminal/create '{"command":"echo","args":["served meanwhile"]}')
other=$(jget "$r" result.terminalId)
r=$(call b terminal/wait_for_exit '{"terminalId":"'"$other"'"}')
reply_is -m "the other client's job" "$r" result.exitCode=0
r=$(call b terminal/output '{"terminalId":"'"$other"'"}')
reply_is -m "the other client's output" "$r" $'result.output=served meanwhile\n'
! grep -q '"id":"kill"' "$t/a.out" || fail "the kill was answered before the other client was served"
alive "$dpid" "$dst" || fail "the TERM-ignoring daemon died before its grace was over"

for i in $(seq 1000); do
  grep -q '"id":"kill"' "$t/a.out" && break
  sleep 0.05
done
r=$(grep '"id":"kill"' "$t/a.out") || fail "no answer to the kill"
reply_is -m "kill" "$r" result.cleanupVerified=true
! alive "$dpid" "$dst" || fail "the daemon survived the kill"
! alive "$mpid" "$mst" || fail "the job's main process $mpid survived the kill"
r=$(call a terminal/report '{"terminalId":"'"$id"'"}')
reply_is -m "report" "$r" result.outcome=cancelled
reply_is -m "report has no SIGKILL" "$r" 'result.stop.kill_sent_ms>=0'
reply_is -m "report: the daemon's SIGKILL" "$r" "result.leftovers[pid=$dpid].action=SIGKILL"
reply_is -m "report: stoppedBy" "$r" result.job.stoppedBy=kill
# The output of a killed job stays readable.
r=$(call a terminal/output '{"terminalId":"'"$id"'"}')
reply_is -m "output after the kill" "$r" result.exitStatus.signal=SIGKILL
client_close a
client_close b
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
