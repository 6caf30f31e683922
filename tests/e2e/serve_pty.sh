# SPDX-License-Identifier: Apache-2.0
# A pty job runs on a new pseudo-terminal, its controlling terminal: tty
# names a /dev/pts/N, stty size follows terminal/resize (SIGWINCH), cat
# echoes what terminal/write sends and ends at eof.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
client_open c
out() { call c terminal/output '{"terminalId":"'"$1"'"}'; }
until_output() {  # until_output ID PYTHON-TEST-ON-TEXT
  local i r
  for i in $(seq 200); do
    r=$(out "$1")
    [ "$(jf "$r" "$2")" = true ] && return 0
    sleep 0.05
  done
  fail "output of $1 never matched $2: $r"
}

# The terminal is the job's own: tty, and the session leader's ctty.
r=$(call c terminal/create '{"command":"sh","args":["-c","tty; [ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo all-tty; stty size; trap \"stty size\" WINCH; while ! read -r x; do :; done"],"pty":{"rows":30,"cols":100}}')
id=$(jf "$r" 'm["result"]["terminalId"]')
until_output "$id" '"30 100" in m["result"]["output"]'
r=$(out "$id")
text=$(jf "$r" 'm["result"]["output"]')
printf '%s\n' "$text" | grep -q '^/dev/pts/[0-9]*' || fail "tty inside: $r"
printf '%s\n' "$text" | grep -q 'all-tty' || fail "stdin/stdout/stderr are not the terminal: $r"
r=$(call c terminal/resize '{"terminalId":"'"$id"'","rows":50,"cols":132}')
[ "$(jf "$r" '"result" in m')" = true ] || fail "resize: $r"
until_output "$id" '"50 132" in m["result"]["output"]'
call c terminal/write '{"terminalId":"'"$id"'","data":"bye\n"}' > /dev/null
r=$(call c terminal/wait_for_exit '{"terminalId":"'"$id"'"}')
[ "$(jf "$r" 'm["result"]["exitCode"]')" = 0 ] || fail "the pty job did not end after its read: $r"

# cat echoes what is written; eof ends it.
r=$(call c terminal/create '{"command":"cat","pty":{"rows":24,"cols":80}}')
id=$(jf "$r" 'm["result"]["terminalId"]')
call c terminal/write '{"terminalId":"'"$id"'","data":"hello pty\n"}' > /dev/null
until_output "$id" 'm["result"]["output"].count("hello pty") == 2'
call c terminal/write '{"terminalId":"'"$id"'","data":"","eof":true}' > /dev/null
r=$(call c terminal/wait_for_exit '{"terminalId":"'"$id"'","timeoutMs":20000}')
[ "$(jf "$r" 'm["result"]["exitCode"]')" = 0 ] || fail "cat did not end at eof: $r"

# A job without a pty cannot be resized.
r=$(call c terminal/create '{"command":"sleep","args":["1000"]}')
id=$(jf "$r" 'm["result"]["terminalId"]')
r=$(call c terminal/resize '{"terminalId":"'"$id"'","rows":5,"cols":5}')
[ "$(jf "$r" 'm["error"]["message"]')" = "terminal '$id' has no pseudo-terminal" ] || fail "resize without a pty: $r"
client_close c
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
