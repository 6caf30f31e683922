# SPDX-License-Identifier: Apache-2.0
# Under the pidns backend (and --isolate) a job's main process is pmon's
# status relay, and the command runs below the namespace's init: still
# terminal/list and `pmon jobs` show the command's own pid as the host sees
# it (its /proc/PID/cmdline is the command), and terminal/wait_for_port
# finds the port the command itself listens on, naming that pid.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

modes=""
have_backend pidns && modes="pidns"
"$PMON" run -q --isolate -- true 2>/dev/null && modes="$modes isolate"
[ -n "$modes" ] || skip "neither the pidns backend nor --isolate is available here"

for mode in $modes; do
  SOCK=$t/$mode.sock
  if [ "$mode" = isolate ]; then serve_start --isolate; else serve_start --confine pidns; fi
  client_open "c_$mode"
  params='{"command":"python3","args":["-m","http.server","0","--bind","127.0.0.1"],"name":"web"}'
  r=$(call "c_$mode" terminal/create "$params")
  id=$(jget "$r" result.terminalId)
  r=$(call "c_$mode" terminal/list)
  pid=$(jget "$r" "result.terminals[terminalId=$id].pid")
  record_pid "$pid"
  cmdline=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null || true)
  # (python3 may be a wrapper that execs the interpreter by its full path)
  case $cmdline in *python3*" -m http.server 0 --bind 127.0.0.1 ") ;; *) false ;; esac ||
    fail "$mode: terminal/list names pid $pid, whose command line is '$cmdline', not the job's command"

  # pmon jobs prints the same pid.
  PMON_SOCKET=$SOCK "$PMON" jobs > "$t/jobs.$mode" || fail "$mode: pmon jobs failed"
  grep -qE "^$id +web +running +$pid " "$t/jobs.$mode" || fail "$mode: pmon jobs: $(cat "$t/jobs.$mode")"

  # The command is the process that listens.
  r=$(call "c_$mode" terminal/wait_for_port '{"terminalId":"'"$id"'","timeoutMs":20000}')
  port=$(jget "$r" result.port 0)
  [ "$port" != 0 ] || fail "$mode: wait_for_port: $r"
  reply_is -m "$mode: wait_for_port names another pid than $pid" "$r" "result.pid=$pid"
  python3 -c 'import sys,urllib.request; urllib.request.urlopen("http://127.0.0.1:%s/" % sys.argv[1], timeout=10).read()' "$port" ||
    fail "$mode: nothing answers HTTP on port $port"

  r=$(call "c_$mode" terminal/release '{"terminalId":"'"$id"'"}')
  reply_is -m "$mode: release" "$r" result.cleanupVerified=true
  client_close "c_$mode"
  kill -TERM "$SERVE_PID"
  wait "$SERVE_PID" || fail "$mode: pmon serve exited $?"
  echo "ok: $mode: pid $pid is the command, listening on $port"
done
pass "$modes"
