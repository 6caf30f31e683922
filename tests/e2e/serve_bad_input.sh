# SPDX-License-Identifier: Apache-2.0
# Bad input never takes the service down: malformed JSON, a message that is
# no request, an unknown method, missing and ill-typed params (named), an
# unknown terminal, a command that cannot start, a line over the limit, a
# thousand connections opened and dropped, and a client that never reads
# its replies (not read meanwhile, not dropped). Through all of it a job keeps running with its output, and
# the service answers afterwards.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
client_open c
r=$(call c terminal/create '{"command":"sh","args":["-c","echo survivor; exec sleep 1000"],"keep":true}')
job=$(jget "$r" result.terminalId)

expect_error() {  # expect_error CODE MESSAGE-PART REPLY
  reply_error "$3" "$1" "$2"
}
# last_line: the newest line the service sent on connection c.
last_line() { tail -n 1 "$t/c.out"; }
raw() {  # raw TEXT: sends TEXT, waits for one more line on c, prints it
  local n
  n=$(wc -l < "$t/c.out")
  send_raw c "$1"
  for i in $(seq 200); do
    [ "$(wc -l < "$t/c.out")" -gt "$n" ] && { last_line; return 0; }
    sleep 0.05
  done
  fail "no answer to: ${1:0:80}"
}

expect_error -32700 "parse error" "$(raw '{"jsonrpc":"2.0","id":"raw","method":')"
expect_error -32600 "not a JSON object" "$(raw '[1,2,3]')"
expect_error -32600 "'jsonrpc'" "$(raw '{"id":"raw","method":"terminal/list"}')"
expect_error -32600 "'method'" "$(raw '{"jsonrpc":"2.0","id":"raw","method":7}')"
expect_error -32601 "terminal/frobnicate" "$(call c terminal/frobnicate)"
expect_error -32602 "'command' is required" "$(call c terminal/create '{"args":["x"]}')"
expect_error -32602 "'args[1]' must be a string" "$(call c terminal/create '{"command":"ls","args":["a",2]}')"
expect_error -32602 "'env[0].value' must be a string" "$(call c terminal/create '{"command":"ls","env":[{"name":"A"}]}')"
expect_error -32602 "'outputByteLimit' must be a non-negative integer" \
  "$(call c terminal/create '{"command":"ls","outputByteLimit":"big"}')"
expect_error -32602 "'params' must be an object" "$(call c terminal/list '[1]')"
expect_error -32602 "'terminalId' is required" "$(call c terminal/output '{}')"
expect_error -32602 "'since' must be a non-negative integer" "$(call c terminal/output '{"terminalId":"t1","since":-4}')"
expect_error -32000 "unknown terminal 'nope'" "$(call c terminal/kill '{"terminalId":"nope"}')"
# ... and says so as data, for a client to word its own way.
reply_is -m "an unknown terminal's error data" "$(call c terminal/kill '{"terminalId":"nope"}')" \
  error.data.reason=unknownTerminal error.data.terminalId=nope
expect_error -32000 "command not found" "$(call c terminal/create '{"command":"no-such-command-pmon-test"}')"
chmod -x "$t/c.seen"
expect_error -32000 "cannot run '$t/c.seen'" "$(call c terminal/create '{"command":"'"$t/c.seen"'"}')"
expect_error -32000 "cannot change directory" "$(call c terminal/create '{"command":"ls","cwd":"/no/such/dir"}')"

# A line over the limit (1 MiB) is refused; the connection goes on.
long=$(head -c 1200000 /dev/zero | tr '\0' 'x')
expect_error -32600 "line longer than" "$(raw "{\"jsonrpc\":\"2.0\",\"id\":\"raw\",\"method\":\"terminal/list\",\"params\":{\"x\":\"$long\"}}")"
r=$(call c terminal/list)
reply_is -m "the connection did not go on after the long line" "$r" result.terminals.#=1

# A thousand connections, opened and dropped at once (some mid-request):
# the service survives them, closes every one (its open files come back to
# what they were), and the jobs of its other clients run on untouched.
client_open e
r=$(call e terminal/create '{"command":"sh","args":["-c","echo other; exec sleep 1000"],"keep":true}')
other=$(jget "$r" result.terminalId)
r=$(call e terminal/list)
pid_job=$(jget "$r" "result.terminals[terminalId=$job].pid")
pid_other=$(jget "$r" "result.terminals[terminalId=$other].pid")
st_job=$(start_time_of "$pid_job"); st_other=$(start_time_of "$pid_other")
record_pid "$pid_job"; record_pid "$pid_other"
for _ in $(seq 200); do  # its output is in before the count is taken
  [ "$(jget "$(call e terminal/output '{"terminalId":"'"$other"'"}')" result.output)" = other ] && break
  sleep 0.05
done
fds() { ls "/proc/$SERVE_PID/fd" | wc -l; }
fds_before=$(fds)
python3 - "$SOCK" <<'PY'
import socket, sys
socks = []
for i in range(1000):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    if i % 3 == 0:
        s.send(b'{"jsonrpc":"2.0","id":1,"method":"terminal/li')
    socks.append(s)
for s in socks:
    s.close()
PY
kill -0 "$SERVE_PID" 2>/dev/null || fail "pmon serve is gone after a thousand dropped connections: $(cat "$t/serve.err")"
# Answered on a connection it had before, so it has read every drop by then.
r=$(call c terminal/list)
reply_is -m "terminal/list after a thousand dropped connections" "$r" result.terminals.#=2
for _ in $(seq 200); do [ "$(fds)" -le "$fds_before" ] && break; sleep 0.05; done
[ "$(fds)" -le "$fds_before" ] ||
  fail "pmon serve holds $(fds) open files after a thousand dropped connections, $fds_before before: they were not all closed"
alive "$pid_job" "$st_job" || fail "the job of connection c is gone after a thousand dropped connections"
alive "$pid_other" "$st_other" || fail "the job of connection e is gone after a thousand dropped connections"
r=$(call e terminal/output '{"terminalId":"'"$other"'"}')
reply_is -m "the output of connection e's job after the dropped connections" "$r" $'result.output=other\n'
[ "$(jget "$r" result.exitStatus null)" = null ] || fail "connection e's job has ended: $r"

# A client that asks over and over and never reads its replies: once they
# pile up it is not read any more (its sends block, it is not dropped), it
# holds little of the service's memory, and nobody else waits for it.
# (Within a minute, stretched by PMON_TEST_TIME_SCALE on an emulated CPU.)
PYTHONPATH="$(dirname "$0")" python3 - "$SOCK" "$SERVE_PID" "$TIME_SCALE" <<'PY'
import os, socket, sys, time
from serve_rpc import Rpc
s = socket.socket(socket.AF_UNIX)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(sys.argv[1])
s.settimeout(2)
line = b'{"jsonrpc":"2.0","id":1,"method":"terminal/list"}\n'
req = line * 2000
deadline = time.time() + 60 * int(sys.argv[3])
sent = 0
while True:
    if time.time() > deadline:
        sys.exit("the service read a client that never reads for 60 s")
    try:
        sent += s.send(req[sent % len(line):])
    except socket.timeout:
        break  # not read any more
    except (BrokenPipeError, ConnectionResetError):
        sys.exit("a client that never reads was dropped")
# Meanwhile another client is answered, and the service stays small.
if "terminals" not in Rpc(sys.argv[1]).call("terminal/list", {}):
    sys.exit("another client was not answered")
rss = [int(l.split()[1]) for l in open("/proc/%s/status" % sys.argv[2]) if l.startswith("VmRSS:")][0]
if rss > 64 * 1024 * int(os.environ.get("PMON_TEST_RSS_SCALE", "1")):
    sys.exit("the service holds %d KiB for a client that never reads" % rss)
# Once it reads, it gets a reply to each whole line it sent.
s.settimeout(30)
f = s.makefile("rb")
for i in range(sent // len(line)):
    if b'"terminals"' not in f.readline():
        sys.exit("reply %d of %d to a client that did not read is missing" % (i, sent // len(line)))
PY
[ $? = 0 ] || fail "a client that never reads"

# The service still answers, the job and its output are still there.
client_open d
r=$(call d terminal/output '{"terminalId":"'"$job"'"}')
reply_is -m "the job's output after the bad input" "$r" $'result.output=survivor\n'
r=$(call d terminal/list)
reply_is -m "list" "$r" 'result.terminals.*.status=["running", "running"]'
client_close d
client_close e
client_close c
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
