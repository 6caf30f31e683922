# SPDX-License-Identifier: Apache-2.0
# A grep of a large spool is made in slices of the service's loop: the
# requests pipelined after it on its connection are answered after it, in
# order, with what each asked; a job released (from another connection)
# while a grep of it goes on ends that grep with an error, and the
# service goes on.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
PYTHONPATH="$(dirname "$0")" python3 - "$SOCK" <<'PY' || fail "pipelined slow views went wrong (see above)"
import json, socket, sys
from serve_rpc import Rpc
sock = sys.argv[1]
rpc = Rpc(sock)
line = "a line of output to grep through\n"
tid = rpc.call("terminal/create", {"command": "sh", "args": ["-c", "yes '%s' | head -c 67108864" % line[:-1]]})
tid = tid["terminalId"]
rpc.call("terminal/wait_for_exit", {"terminalId": tid})

def pipelined(reqs):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(b"".join((json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": m, "params": p}) + "\n").encode()
                       for i, (m, p) in enumerate(reqs)))
    f = s.makefile("rb")
    return s, [json.loads(f.readline()) for _ in reqs]

lines = 67108864 // len(line) + 1
s, got = pipelined([("terminal/output", {"terminalId": tid, "grep": "no such line"}),
                    ("terminal/list", {}),
                    ("terminal/output", {"terminalId": tid, "grep": "^a line", "maxBytes": 100}),
                    ("terminal/output", {"terminalId": tid, "tail": 10})])
print("ids in the order answered:", [m["id"] for m in got])
assert [m["id"] for m in got] == [1, 2, 3, 4], got
assert got[0]["result"]["matches"] == 0 and got[0]["result"]["output"] == "", got[0]
assert any(t["terminalId"] == tid for t in got[1]["result"]["terminals"]), got[1]
assert got[2]["result"]["matches"] == lines and got[2]["result"]["more"], got[2]["result"]["matches"]
assert got[3]["result"]["output"].endswith((line * lines)[:67108864][-10:]), got[3]

s = socket.socket(socket.AF_UNIX)
s.connect(sock)
s.sendall((json.dumps({"jsonrpc": "2.0", "id": 7, "method": "terminal/output",
                       "params": {"terminalId": tid, "grep": "no such line"}}) + "\n").encode())
rpc.call("terminal/release", {"terminalId": tid})
m = json.loads(s.makefile("rb").readline())
print("the grep of a job released meanwhile:", m.get("error", {}).get("message") or "answered whole")
assert m["id"] == 7 and ("result" in m or "unknown terminal" in m["error"]["message"]), m
assert rpc.call("terminal/list", {})["terminals"] == []
PY
kill -0 "$SERVE_PID" || fail "the service died"
pass
