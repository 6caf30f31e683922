# SPDX-License-Identifier: Apache-2.0
# A job lives as long as its owner says: the end of its connection stops
# it (unless it was created with keep), session/close stops that session's
# jobs, and SIGTERM to the service stops every job, kept ones too, before
# the service exits 0. Each stop reaches the job's setsid daemon.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
client_open a
call a terminal/create "$(create_params "$t/plain")" > /dev/null
call a terminal/create "$(create_params "$t/kept" '{"keep":true,"name":"kept"}')" > /dev/null
call a terminal/create "$(create_params "$t/s1" '{"sessionId":"s1"}')" > /dev/null
call a terminal/create "$(create_params "$t/s2" '{"sessionId":"s2"}')" > /dev/null
daemon_of "$t/plain"; plain="$dpid $dst"
daemon_of "$t/kept"; kept="$dpid $dst"
daemon_of "$t/s1"; s1="$dpid $dst"
daemon_of "$t/s2"; s2="$dpid $dst"

r=$(call a session/close '{"sessionId":"s1"}')
reply_is -m "session/close" "$r" result.stopping=1
wait_gone $s1 || fail "session/close left the daemon of session s1 running"
alive $s2 || fail "session/close of s1 stopped session s2's job"
alive $plain || fail "session/close of s1 stopped a job of no session"

client_close a
wait_gone $plain || fail "the connection's end left a job it owned running"
wait_gone $s2 || fail "the connection's end left session s2's job running"
alive $kept || fail "the connection's end stopped a kept job"

# The kept job is the service's now: another connection sees it.
client_open b
r=$(call b terminal/list)
reply_is -m "list after the close" "$r" 'result.terminals.*.name=["kept"]'
client_close b

# The cgroup leaves of jobs that are over go while the service runs on: of
# 24 closed at once, none is left once the service is idle but the 16 it
# keeps for reuse (and the kept job's, still running).
client_open d
r=$(call d terminal/create '{"command":"true"}')
id=$(jget "$r" result.terminalId)
call d terminal/wait_for_exit '{"terminalId":"'"$id"'"}' > /dev/null
r=$(call d terminal/report '{"terminalId":"'"$id"'"}')
if [ "$(jget "$r" result.confinement)" = cgroup ]; then
  leaf=$(jget "$r" result.cgroup)
  leaves="$(dirname "$leaf")/$(basename "$leaf" | sed 's/-[0-9]*$//')-"
  for i in $(seq 24); do
    call d terminal/create '{"command":"sleep","args":["600"],"sessionId":"many"}' > /dev/null
  done
  n=$(ls -d "$leaves"* | wc -l)
  [ "$n" -ge 25 ] || fail "only $n cgroup leaves for 25 running jobs"
  r=$(call d session/close '{"sessionId":"many"}')
  reply_is -m "session/close" "$r" result.stopping=24
  for i in $(seq 200); do
    n=$(ls -d "$leaves"* 2>/dev/null | wc -l)
    [ "$n" -le 17 ] && break
    sleep 0.05
  done
  [ "$n" -le 17 ] || fail "$n cgroup leaves are still there after 24 jobs ended (at most 17 expected)"
fi
client_close d

kill -TERM "$SERVE_PID"
rc=0; wait "$SERVE_PID" || rc=$?
[ $rc = 0 ] || fail "pmon serve exited $rc after SIGTERM"
! alive $kept || fail "SIGTERM to the service left the kept job's daemon running"
[ ! -e "$SOCK" ] || fail "the socket is still there after the service stopped"
pass
