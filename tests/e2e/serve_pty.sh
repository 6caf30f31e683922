# SPDX-License-Identifier: Apache-2.0
# A pty job runs on a new pseudo-terminal, its controlling terminal: tty
# names a /dev/pts/N, stty size follows terminal/resize (SIGWINCH), cat
# echoes what terminal/write sends and ends at eof.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
client_open c
out() { call c terminal/output '{"terminalId":"'"$1"'"}'; }
until_output() {  # until_output ID TEXT [N]: until the output holds TEXT (N times)
  local i r
  for i in $(seq 200); do
    r=$(out "$1")
    if [ -n "${3:-}" ]; then
      [ "$(jget "$r" result.output | grep -o -F -- "$2" | wc -l)" = "$3" ] && return 0
    else
      json_holds "$r" "result.output~$2" && return 0
    fi
    sleep 0.05
  done
  fail "output of $1 never matched $2: $r"
}

# The terminal is the job's own: tty, and the session leader's ctty.
r=$(call c terminal/create '{"command":"sh","args":["-c","tty; [ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo all-tty; stty size; trap \"stty size\" WINCH; while ! read -r x; do :; done"],"pty":{"rows":30,"cols":100}}')
id=$(jget "$r" result.terminalId)
until_output "$id" "30 100"
r=$(out "$id")
text=$(jget "$r" result.output)
printf '%s\n' "$text" | grep -q '^/dev/pts/[0-9]*' || fail "tty inside: $r"
printf '%s\n' "$text" | grep -q 'all-tty' || fail "stdin/stdout/stderr are not the terminal: $r"
r=$(call c terminal/resize '{"terminalId":"'"$id"'","rows":50,"cols":132}')
reply_is -m "resize" "$r" 'result!=(absent)'
until_output "$id" "50 132"
call c terminal/write '{"terminalId":"'"$id"'","data":"bye\n"}' > /dev/null
r=$(call c terminal/wait_for_exit '{"terminalId":"'"$id"'"}')
reply_is -m "the pty job did not end after its read" "$r" result.exitCode=0

# cat echoes what is written; eof ends it.
r=$(call c terminal/create '{"command":"cat","pty":{"rows":24,"cols":80}}')
id=$(jget "$r" result.terminalId)
call c terminal/write '{"terminalId":"'"$id"'","data":"hello pty\n"}' > /dev/null
until_output "$id" "hello pty" 2
call c terminal/write '{"terminalId":"'"$id"'","data":"","eof":true}' > /dev/null
r=$(call c terminal/wait_for_exit '{"terminalId":"'"$id"'","timeoutMs":20000}')
reply_is -m "cat did not end at eof" "$r" result.exitCode=0

# A job without a pty cannot be resized.
r=$(call c terminal/create '{"command":"sleep","args":["1000"]}')
id=$(jget "$r" result.terminalId)
r=$(call c terminal/resize '{"terminalId":"'"$id"'","rows":5,"cols":5}')
reply_is -m "resize without a pty" "$r" "error.message=terminal '$id' has no pseudo-terminal"
client_close c
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
