# SPDX-License-Identifier: Apache-2.0
# A job blocked reading the stdin nobody writes is told apart from a slow
# one: terminal/list, terminal/output and a terminal/wait_for_exit that
# times out say waitingForInput (on a pipe and on a pty), pmon jobs shows
# "waiting for input", and pmon mcp's list, output and wait say so; a
# sleeping job is never said to wait for input; once written to, the job
# goes on and ends. A job's stdin is /dev/null unless it asks for a pipe
# (stdin "pipe"): its read gets end of file at once, and a write to it is
# refused, saying to ask for the pipe.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
client_open c
export PMON_SOCKET=$SOCK

create() { jget "$(call c terminal/create "$1")" result.terminalId; }
# waiting ID: its waitingForInput in terminal/list.
waiting() { jget "$(call c terminal/list)" "result.terminals[terminalId=$1].waitingForInput"; }
# until_waiting ID WANT: up to 10 s for waitingForInput to be WANT.
until_waiting() {
  local i
  for i in $(seq 200); do
    [ "$(waiting "$1")" = "$2" ] && return 0
    sleep 0.05
  done
  fail "job $1: waitingForInput never became $2"
}

reader=$(create '{"command":"sh","args":["-c","read -r x; echo got $x"],"stdin":"pipe"}')
tty=$(create '{"command":"sh","args":["-c","read -r x; echo tty $x"],"pty":{"rows":24,"cols":80}}')
# A child reads, not the main process: still the job's stdin.
child=$(create '{"command":"sh","args":["-c","cat > /dev/null; echo done"],"stdin":"pipe"}')
sleeper=$(create '{"command":"sleep","args":["1000"],"stdin":"pipe"}')

until_waiting "$reader" true
until_waiting "$tty" true
until_waiting "$child" true
# Running as long as the readers, the sleeper is never said to wait.
[ "$(waiting "$sleeper")" = false ] || fail "a sleeping job is said to wait for input"
echo "ok: terminal/list tells the readers (pipe, pty, a child) from a sleeper"

# terminal/output and a wait_for_exit that times out say it too (and of the
# sleeper, that it does not wait for input).
r=$(call c terminal/output '{"terminalId":"'"$reader"'"}')
reply_is -m "terminal/output does not say waitingForInput" "$r" result.waitingForInput=true
r=$(call c terminal/output '{"terminalId":"'"$reader"'","tail":100}')
reply_is -m "terminal/output's view does not say waitingForInput" "$r" result.waitingForInput=true
r=$(call c terminal/wait_for_exit '{"terminalId":"'"$reader"'","timeoutMs":100}')
reply_is -m "a timed-out terminal/wait_for_exit" "$r" result.running=true result.waitingForInput=true
r=$(call c terminal/output '{"terminalId":"'"$sleeper"'"}')
reply_is -m "terminal/output says a sleeper waits for input" "$r" result.waitingForInput=false
r=$(call c terminal/wait_for_exit '{"terminalId":"'"$sleeper"'","timeoutMs":100}')
reply_is -m "terminal/wait_for_exit says a sleeper waits for input" "$r" result.waitingForInput=false
echo "ok: terminal/output and terminal/wait_for_exit say it"

"$PMON" jobs > "$t/jobs" || fail "pmon jobs failed"
grep -q "^$reader .*waiting for input" "$t/jobs" || fail "pmon jobs does not show the reader waiting for input: $(cat "$t/jobs")"
grep "^$sleeper " "$t/jobs" | grep -q "running" || fail "pmon jobs does not show the sleeper running: $(cat "$t/jobs")"
echo "ok: pmon jobs shows it"

# Written to, it reads, goes on, and ends.
call c terminal/write '{"terminalId":"'"$reader"'","data":"hi\n"}' > /dev/null
r=$(call c terminal/wait_for_exit '{"terminalId":"'"$reader"'"}')
reply_is -m "the reader did not end after the write" "$r" result.exitCode=0
r=$(call c terminal/output '{"terminalId":"'"$reader"'"}')
reply_is -m "the reader's output" "$r" $'result.output=got hi\n'
reply_is -m "an ended job's output says waitingForInput" "$r" 'result.waitingForInput=(absent)'
[ "$(waiting "$reader")" = false ] || fail "an ended job is said to wait for input"
for id in "$tty" "$child" "$sleeper"; do call c terminal/kill '{"terminalId":"'"$id"'"}' > /dev/null; done
echo "ok: written to, it ends"

# Without stdin, a job's stdin is /dev/null: its read gets end of file at
# once, the report says "null", and a write is refused, saying to ask for a
# pipe.
dflt=$(create '{"command":"sh","args":["-c","read x; echo got:$x"]}')
r=$(call c terminal/wait_for_exit '{"terminalId":"'"$dflt"'","timeoutMs":10000}')
[ "$(jget "$r" result.running false)" = false ] || fail "a job without stdin waits for input: $r"
reply_is -m "a job without stdin did not end by itself" "$r" result.exitCode=0
[ "$(jget "$(call c terminal/output '{"terminalId":"'"$dflt"'"}')" result.output)" = "got:" ] ||
  fail "a job without stdin printed something else"
r=$(call c terminal/report '{"terminalId":"'"$dflt"'"}')
reply_is -m "the report's job.stdin of a job without stdin" "$r" result.job.stdin=null
still=$(create '{"command":"sleep","args":["1000"]}')
r=$(call c terminal/write '{"terminalId":"'"$still"'","data":"x\n"}')
case $r in *'"error"'*'stdin: \"pipe\"'*) ;; *) fail "a write to a job without a pipe does not say to pass stdin \"pipe\": $r" ;; esac
call c terminal/kill '{"terminalId":"'"$still"'"}' > /dev/null
# With stdin "pipe", a write reaches it.
piped=$(create '{"command":"sh","args":["-c","read x; echo got:$x"],"stdin":"pipe"}')
call c terminal/write '{"terminalId":"'"$piped"'","data":"hi\n"}' > /dev/null
r=$(call c terminal/wait_for_exit '{"terminalId":"'"$piped"'","timeoutMs":10000}')
reply_is -m "a job with stdin pipe did not end after the write" "$r" result.exitCode=0
[ "$(jget "$(call c terminal/output '{"terminalId":"'"$piped"'"}')" result.output)" = "got:hi" ] ||
  fail "the write did not reach the job with stdin pipe"
echo "ok: stdin is /dev/null by default; a pipe only when asked for"

# stdin "null": /dev/null, a read gets end of file at once; the report says
# which stdin each job had; pmon start gives /dev/null; a bad value names it.
null=$(create '{"command":"sh","args":["-c","read -r x; echo eof $?"],"stdin":"null"}')
r=$(call c terminal/wait_for_exit '{"terminalId":"'"$null"'","timeoutMs":10000}')
reply_is -m "a job with stdin null did not end" "$r" result.exitCode=0
[ "$(jget "$(call c terminal/output '{"terminalId":"'"$null"'"}')" result.output)" = "eof 1" ] ||
  fail "a job with stdin null did not read end of file"
for pair in "$null:null" "$reader:pipe" "$tty:pty"; do
  r=$(call c terminal/report '{"terminalId":"'"${pair%%:*}"'"}')
  reply_is -m "the report's job.stdin is not ${pair#*:}" "$r" "result.job.stdin=${pair#*:}"
done
r=$(call c terminal/create '{"command":"true","stdin":"tty"}')
case $r in *'"code":-32602'*stdin*) ;; *) fail "a bad stdin is not an invalid-params error naming it: $r" ;; esac
cli=$("$PMON" start -- sh -c 'read -r x; echo cli $?') || fail "pmon start failed"
[ "$("$PMON" wait "$cli"; echo $?)" = 0 ] || fail "pmon start's job did not end on its own"
[ "$("$PMON" logs "$cli")" = "cli 1" ] || fail "pmon start's job did not read end of file: $("$PMON" logs "$cli")"
client_close c
echo "ok: stdin null reads end of file; the report says which stdin"

# pmon mcp: list, output and wait say it of a started job that reads.
PYTHONPATH="$(dirname "$0")" python3 - "$PMON" > "$t/mcp.out" 2>&1 <<'PY' || fail "pmon mcp: $(cat "$t/mcp.out")"
import sys, time
from mcp_stdio import Mcp
mcp = Mcp(sys.argv[1])
tool = mcp.tool
# By default a started job's stdin is /dev/null: its read gets end of file
# at once, and the report says so.
nid = tool("start", {"command": "read -r x; echo got $?"})["structuredContent"]["id"]
w = tool("wait", {"id": nid, "timeout_s": 10})
assert w["structuredContent"]["exit_code"] == 0, w
o = tool("output", {"id": nid})
assert o["structuredContent"]["output"] == "got 1\n", o
# Asked for, a pipe: the read waits, and is told apart from a slow command.
jid = tool("start", {"command": "read -r x; echo got $x", "stdin": "pipe"})["structuredContent"]["id"]
sid = tool("start", {"command": "sleep 1000", "stdin": "pipe"})["structuredContent"]["id"]
for _ in range(200):
    o = tool("output", {"id": jid})
    if o["structuredContent"].get("waiting_for_input"):
        break
    time.sleep(0.05)
else:
    sys.exit("output never said waiting_for_input: %s" % o)
assert "waiting for input" in o["content"][0]["text"], o
w = tool("wait", {"id": jid, "timeout_s": 0.2})
assert w["structuredContent"]["running"] and w["structuredContent"]["waiting_for_input"], w
assert "waiting for input" in w["content"][0]["text"], w
jobs = {j["id"]: j for j in tool("list", {})["structuredContent"]["jobs"]}
assert jobs[jid]["waiting_for_input"] is True and jobs[sid]["waiting_for_input"] is False, jobs
assert tool("output", {"id": sid})["structuredContent"]["waiting_for_input"] is False
tool("write", {"id": jid, "data": "hi\n"})
w = tool("wait", {"id": jid, "timeout_s": 10})
assert w["structuredContent"]["exit_code"] == 0, w
tool("kill", {"id": sid})
mcp.close()
print("mcp ok")
PY
echo "ok: pmon mcp's list, output and wait say it"
pass
