# SPDX-License-Identifier: Apache-2.0
# What the two request parsers refuse, on a real `pmon serve --stdio` and a
# real `pmon mcp`: a message nested 100000 deep (an error with the request's
# id, never a crash), a NUL byte in a job's command, args, cwd or env (an
# error naming the field), an empty env name or one with '='; notifications
# are never answered, whatever is wrong with them, while a line that is no
# request at all is, with id null. After each bad message the service is
# still there and answers the next request first (replies to requests
# answered at once come in order); at the end each runs a real job.
. "$(dirname "$0")/common.inc"

python3 - "$PMON" "$t/pids" "$STATE/pids" <<'PY' || fail "see above"
import json, os, select, subprocess, sys, time

pmon, pids_files = sys.argv[1], sys.argv[2:]
DEEP = 100000


def record(pid):
    with open("/proc/%d/stat" % pid) as f:
        start = f.read().rsplit(")", 1)[1].split()[19]
    for name in pids_files:
        with open(name, "a") as f:
            f.write("%d %s\n" % (pid, start))


class Peer:
    def __init__(self, *args):
        self.what = "pmon " + " ".join(args)
        self.p = subprocess.Popen([pmon, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        record(self.p.pid)
        self.buf = b""
        self.n = 0

    def send(self, text):
        self.p.stdin.write(text.encode() + b"\n")
        self.p.stdin.flush()

    def line(self):
        deadline = time.monotonic() + 30
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SystemExit("%s: no line in 30 s" % self.what)
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if r:
                chunk = os.read(self.p.stdout.fileno(), 65536)
                if not chunk:
                    raise SystemExit("%s ended (exit status %s)" % (self.what, self.p.wait()))
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def reply(self):
        """The next reply line (the service's own notifications passed over)."""
        while True:
            m = self.line()
            if "method" not in m:
                return m

    def request(self, method, params):
        self.n += 1
        self.send(json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}))
        m = self.reply()
        assert m.get("id") == self.n, "%s: the answer to id %d was not the next line: %s" % (self.what, self.n, m)
        return m

    def error_of(self, text, code, words, id_):
        self.send(text)
        m = self.reply()
        assert "error" in m, "%s: no error for %s: %s" % (self.what, text[:80], m)
        assert m["error"]["code"] == code and words in m["error"]["message"] and m["id"] == id_, \
            "%s: for %s expected %d '%s' id %r, got %s" % (self.what, text[:80], code, words, id_, m)
        self.still_answers()
        print("ok: %s: %s... -> %s" % (self.what, text[:60], m["error"]["message"]))

    def unanswered(self, text):
        """A notification: the next line is the answer to the request after it."""
        self.send(text)
        self.still_answers()
        print("ok: %s: %s... not answered" % (self.what, text[:60]))

    def still_answers(self):
        m = self.request(*self.probe)
        assert "result" in m, "%s: %s" % (self.what, m)

    def close(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=60)
        assert rc == 0, "%s exited %d" % (self.what, rc)


def msg(fields):
    return json.dumps(dict({"jsonrpc": "2.0"}, **fields))


deep = "[" * DEEP + "]" * DEEP

# pmon serve --stdio
s = Peer("serve", "--stdio", "-q")
s.probe = ("terminal/list", {})
create = '{"jsonrpc":"2.0","id":"c1","method":"terminal/create","params":%s}'
s.error_of(create % ('{"command":"ls","args":%s}' % deep), -32600, "nested more than 64 levels deep", "c1")
s.error_of('{"jsonrpc":"2.0","id":%s,"method":"terminal/list"}' % deep, -32600, "", None)
s.unanswered('{"jsonrpc":"2.0","method":"terminal/list","params":{"a":%s}}' % deep)
s.error_of("[" * DEEP, -32700, "parse error", None)
for params, field in [
    ({"command": "ls\0rm"}, "'command' contains a NUL byte"),
    ({"command": "ls", "args": ["-l", "/", "x\0y"]}, "'args[2]' contains a NUL byte"),
    ({"command": "ls", "cwd": "/tmp\0/x"}, "'cwd' contains a NUL byte"),
    ({"command": "ls", "env": [{"name": "A\0B", "value": "1"}]}, "'env[0].name' contains a NUL byte"),
    ({"command": "ls", "env": [{"name": "A", "value": "1\0"}]}, "'env[0].value' contains a NUL byte"),
    ({"command": "ls", "env": [{"name": "", "value": "1"}]}, "'env[0].name' must be a non-empty string without '='"),
    ({"command": "ls", "env": [{"name": "A=B", "value": "1"}]}, "'env[0].name' must be a non-empty string"),
]:
    s.error_of(msg({"id": 7, "method": "terminal/create", "params": params}), -32602, field, 7)
    s.unanswered(msg({"method": "terminal/create", "params": params}))
s.unanswered(msg({"method": "terminal/frobnicate"}))
s.unanswered(msg({"method": "terminal/output", "params": {}}))
s.unanswered(msg({"method": "terminal/list", "params": [1]}))
s.error_of(msg({"id": None, "method": "terminal/frobnicate"}), -32601, "terminal/frobnicate", None)
s.error_of('{"method":"terminal/list"}', -32600, "'jsonrpc'", None)
s.error_of('{"jsonrpc":"2.0","method":7}', -32600, "'method'", None)
s.error_of("[1]", -32600, "not a JSON object", None)
s.error_of('{"jsonrpc":"2.0","method":', -32700, "parse error", None)
# A notification that succeeds is not answered either, not even later: a
# wait for a job's exit and a kill, sent as notifications, then the same as
# requests; the one answer to the wait is the request's.
job = s.request("terminal/create", {"command": "sleep", "args": ["1000"]})["result"]["terminalId"]
s.unanswered(msg({"method": "terminal/wait_for_exit", "params": {"terminalId": job}}))
s.unanswered(msg({"method": "terminal/kill", "params": {"terminalId": job}}))
m = s.request("terminal/wait_for_exit", {"terminalId": job})
assert "result" in m, m
m = s.request("terminal/release", {"terminalId": job})
assert m["result"]["cleanupVerified"] is True, m
s.still_answers()
# Still a working service: a job runs and its output is read.
job = s.request("terminal/create", {"command": "sh", "args": ["-c", "echo alive"]})["result"]["terminalId"]
s.request("terminal/wait_for_exit", {"terminalId": job})
out = s.request("terminal/output", {"terminalId": job})["result"]["output"]
assert out == "alive\n", out
s.close()

# pmon mcp
c = Peer("mcp")
c.probe = ("ping", {})
m = c.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
assert "result" in m, m
c.send(msg({"method": "notifications/initialized"}))
call = '{"jsonrpc":"2.0","id":"x1","method":"tools/call","params":{"name":"run","arguments":%s}}'
c.error_of(call % deep, -32600, "nested more than 64 levels deep", "x1")
c.error_of('{"jsonrpc":"2.0","id":%s,"method":"ping"}' % deep, -32600, "", None)
c.unanswered('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s}}' % deep)
c.error_of("{" * DEEP, -32700, "parse error", None)
for tool, args, words in [
    ("run", {"command": "echo a\0; echo b"}, "'command' contains a NUL byte"),
    ("start", {"command": "ls", "cwd": "/tmp\0/x"}, "'cwd' contains a NUL byte"),
    ("run", {"command": "ls", "env": {"A": "1\0"}}, "'env.A' contains a NUL byte"),
    ("run", {"command": "ls", "env": {"A\0B": "1"}}, "'env' has a variable name that contains a NUL byte"),
    ("start", {"command": "ls", "env": {"": "1"}}, "'env' has an empty variable name"),
    ("run", {"command": "ls", "env": {"A=B": "1"}}, "'env.A=B' is not a variable name"),
]:
    m = c.request("tools/call", {"name": tool, "arguments": args})
    r = m.get("result", {})
    assert r.get("isError") is True and words in r["content"][0]["text"], "mcp %s %r: %s" % (tool, args, m)
    print("ok: mcp: %s %r -> %s" % (tool, args, r["content"][0]["text"]))
c.unanswered(msg({"method": "notifications/initialized", "params": "x"}))
c.unanswered(msg({"method": "notifications/cancelled", "params": [1]}))
c.unanswered(msg({"method": "tools/call", "params": {"name": "nope"}}))
c.unanswered(msg({"id": 99, "result": {}}))
c.error_of('{"method":"ping"}', -32600, "'jsonrpc'", None)
c.error_of('{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600, "'id'", None)
c.error_of("[]", -32600, "not a JSON object", None)
m = c.request("tools/call", {"name": "run", "arguments": {"command": "echo alive"}})
assert m["result"]["structuredContent"]["output"] == "alive\n", m
c.close()
PY
pass
