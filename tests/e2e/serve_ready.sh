# SPDX-License-Identifier: Apache-2.0
# terminal/create with a readiness probe answers once the job is ready, or
# says why it is not, and never holds up another client meanwhile:
# - ready.http: a server that listens at once but answers 503 to its first
#   three GETs is ready only once it answers 200 (the answer comes after
#   its fourth GET, not when it starts to listen); terminal/list says
#   ready: true;
# - ready.line: ready once a line of the job's output matches, printed
#   after a delay (not before it); meanwhile another connection is served;
# - a job that exits 1 first: ready false, "exited with status 1 before it
#   was ready", promptly (not at the probe's timeout);
# - a timeout: ready false naming what it waited for, and the job still
#   runs (then stopped here); with stopOnTimeout it is stopped, its report
#   says so;
# - a named job asked for again: existing, with its ready state;
# - a bad pattern: -32602 naming 'ready.line';
# - pmon start --ready-line exits 0 and prints the id; --ready-port not
#   ready in time exits 1 with the reason on stderr.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
export PMON_SOCKET=$SOCK

# A server that listens at once and answers 503 to its first 3 GETs, then
# 200; it writes how many GETs it had answered each time.
server='import http.server, os, sys
count = 0
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        global count
        count += 1
        with open(sys.argv[1] + ".tmp", "w") as f:
            f.write(str(count))
        os.rename(sys.argv[1] + ".tmp", sys.argv[1])
        self.send_response(503 if count <= 3 else 200)
        self.end_headers()
        self.wfile.write(b"x")
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", 0), H).serve_forever()'

PYTHONPATH=$(dirname "$0") python3 - "$SOCK" "$t" "$server" <<'EOF'
import json, os, socket, sys, time
from serve_rpc import Rpc

sock, t, server = sys.argv[1:4]
c = Rpc(sock)

def check(cond, what):
    if not cond:
        raise SystemExit("FAIL: " + what)

def listed(tid):
    return [x for x in c.call("terminal/list", {})["terminals"] if x["terminalId"] == tid][0]

def stop(tid):
    r = c.call("terminal/kill", {"terminalId": tid})
    check(r["cleanupVerified"] is True, "job %s not verified gone: %s" % (tid, r))

# 1. HTTP: ready only on a 2xx answer.
count = t + "/count"
r = c.call("terminal/create", {"command": "python3", "args": ["-c", server, count],
                               "ready": {"http": "/health", "timeoutMs": 20000}})
tid = r["terminalId"]
check(r.get("ready") is True and isinstance(r.get("readyMs"), int), "http probe: %s" % r)
n = int(open(count).read())
check(n == 4, "the create was answered after %d GETs, not after the fourth (the first 2xx)" % n)
check(listed(tid).get("ready") is True, "terminal/list does not say ready: %s" % listed(tid))
stop(tid)
print("ok: ready.http waits for a 2xx answer (answered after GET %d), list says ready" % n)

# 2. A line, printed after a delay; another connection is served meanwhile.
line_job = ["-c", "sleep 1; echo 'server listening on 1234'; exec sleep 1000"]
c.f.write((json.dumps({"jsonrpc": "2.0", "id": 900, "method": "terminal/create",
                       "params": {"command": "sh", "args": line_job, "name": "lines",
                                  "ready": {"line": "listening on [0-9]+$"}}}) + "\n").encode())
c.f.flush()
t0 = time.monotonic()
other = Rpc(sock)
other.call("terminal/list", {})
served = time.monotonic() - t0
m = json.loads(c.f.readline())
waited = time.monotonic() - t0
check(m.get("id") == 900 and m["result"].get("ready") is True, "line probe: %s" % m)
check(served < 0.5, "another connection waited %.2f s while a create waited for ready" % served)
check(waited >= 0.8 and m["result"]["readyMs"] >= 800, "ready before the line came: %.2f s, %s" % (waited, m))
tid = m["result"]["terminalId"]
out = c.call("terminal/output", {"terminalId": tid})["output"]
check("listening on 1234" in out, "the job's output when ready: %r" % out)
r = c.call("terminal/create", {"command": "sh", "args": line_job, "name": "lines",
                               "ready": {"line": "listening"}})
check(r["terminalId"] == tid and r["existing"] is True and r.get("ready") is True,
      "a named job asked for again: %s" % r)
stop(tid)
print("ok: ready.line after %.2f s (another client served in %.3f s); existing job says ready" % (waited, served))

# 3. It exits first: promptly, and why.
t0 = time.monotonic()
r = c.call("terminal/create", {"command": "sh", "args": ["-c", "echo starting; sleep 0.2; exit 1"],
                               "ready": {"line": "never said", "timeoutMs": 20000}})
took = time.monotonic() - t0
check(r.get("ready") is False and "exited with status 1 before it was ready" in r.get("readyError", ""),
      "a job that exits 1: %s" % r)
check(took < 5, "the answer took %.1f s for a job that exited after 0.2 s" % took)
check("starting" in c.call("terminal/output", {"terminalId": r["terminalId"]})["output"], "its output")
print("ok: exited first: %s (%.2f s)" % (r["readyError"], took))

# 4. Timeouts: the job runs on, unless stopOnTimeout.
s = socket.socket()
s.bind(("127.0.0.1", 0))
free = s.getsockname()[1]
s.close()
r = c.call("terminal/create", {"command": "sleep", "args": ["1000"], "ready": {"port": free, "timeoutMs": 600}})
tid = r["terminalId"]
check(r.get("ready") is False and r.get("readyError") ==
      "not ready after 0.6 s: no process of the job listens on port %d" % free, "port timeout: %s" % r)
info = listed(tid)
check(info["status"] == "running" and info.get("ready") is False, "after a timeout the job: %s" % info)
stop(tid)
r = c.call("terminal/create", {"command": "sleep", "args": ["1000"],
                               "ready": {"http": "/", "timeoutMs": 300, "stopOnTimeout": True}})
tid = r["terminalId"]
check(r.get("ready") is False and "not ready after 0.3 s" in r.get("readyError", ""), "stopOnTimeout: %s" % r)
w = c.call("terminal/wait_for_exit", {"terminalId": tid, "timeoutMs": 10000})
check(not w.get("running"), "stopOnTimeout left the job running: %s" % w)
rep = c.call("terminal/report", {"terminalId": tid})
check(rep["job"]["stoppedBy"] == "not ready" and rep["job"]["ready"] is False and rep["cleanup_verified"],
      "the report of a job stopped for not being ready: %s" % rep["job"])
print("ok: a timeout leaves the job running; stopOnTimeout stops it")

# 5. Bad probes are the caller's fault, named.
m = c.message("terminal/create", {"command": "true", "ready": {"line": "(unclosed"}})
check(m.get("error", {}).get("code") == -32602 and "'ready.line'" in m["error"]["message"], "bad regex: %s" % m)
m = c.message("terminal/create", {"command": "true", "ready": {"line": "x", "port": 80}})
check(m.get("error", {}).get("code") == -32602 and "'ready.line'" in m["error"]["message"], "line with port: %s" % m)
m = c.message("terminal/create", {"command": "true", "ready": {"http": "no-slash"}})
check(m.get("error", {}).get("code") == -32602 and "'ready.http'" in m["error"]["message"], "bad path: %s" % m)
m = c.message("terminal/create", {"command": "true", "ready": {}})
check(m.get("error", {}).get("code") == -32602 and "'ready.port'" in m["error"]["message"], "empty ready: %s" % m)
print("ok: bad probes are -32602 naming the field: " + m["error"]["message"])
EOF

# 6. The shell verb.
id=$("$PMON" start --ready-line '^up$' -- sh -c 'sleep 0.3; echo up; exec sleep 1000') ||
  fail "pmon start --ready-line exited $?"
case $id in t*) ;; *) fail "pmon start --ready-line printed '$id'" ;; esac
"$PMON" jobs --json | grep -q '"ready": *true' || fail "pmon jobs --json does not say ready: $("$PMON" jobs --json)"
"$PMON" stop "$id" > /dev/null || fail "pmon stop $id"
free=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
rc=0
id=$("$PMON" start --ready-port "$free" --ready-timeout 300ms -- sleep 1000 2> "$t/e") || rc=$?
[ "$rc" = 1 ] || fail "pmon start not ready exited $rc, not 1: $(cat "$t/e")"
[ "$(wc -l < "$t/e")" = 1 ] && grep -q "is not ready: not ready after 0.3 s: no process of the job listens on port $free" "$t/e" ||
  fail "pmon start not ready said: $(cat "$t/e")"
"$PMON" stop "$id" > /dev/null || fail "pmon start not ready: its job $id was not running"
rc=0
"$PMON" start --ready-line '(' -- true 2> "$t/e" || rc=$?
[ "$rc" = 125 ] && grep -q "^pmon: start: --ready-line is not a valid regular expression: missing ): ($" "$t/e" || fail "pmon start --ready-line '(' exited $rc: $(cat "$t/e")"
echo "ok: pmon start --ready-line exits 0, not ready exits 1 and says why"

kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
