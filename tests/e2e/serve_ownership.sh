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
[ "$(jf "$r" 'm["result"]["stopping"]')" = 1 ] || fail "session/close: $r"
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
[ "$(jf "$r" '[t["name"] for t in m["result"]["terminals"]]')" = '["kept"]' ] || fail "list after the close: $r"
client_close b

kill -TERM "$SERVE_PID"
rc=0; wait "$SERVE_PID" || rc=$?
[ $rc = 0 ] || fail "pmon serve exited $rc after SIGTERM"
! alive $kept || fail "SIGTERM to the service left the kept job's daemon running"
[ ! -e "$SOCK" ] || fail "the socket is still there after the service stopped"
pass
