# SPDX-License-Identifier: Apache-2.0
# Input backpressure: a client that pipelines many terminal/output requests
# on a job with a large output and reads as fast as it can gets every reply,
# in order, and its job goes on; a client that sends 400 and reads nothing
# is not read meanwhile (the service's memory stays bounded), stalls nobody,
# and once it reads it gets every reply too.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
cat > "$t/pipeline.py" <<'PY'
import json, os, socket, sys, time
from serve_rpc import Rpc
sock, mode = sys.argv[1], sys.argv[2]
MiB = 1 << 20

def job(rpc, size):
    # `size` bytes of x, then it runs on.
    tid = rpc.call("terminal/create", {"command": "sh", "args": ["-c", "head -c %d /dev/zero | tr '\\0' x; exec sleep 1000" % size],
                                       "outputByteLimit": 16 * MiB})["terminalId"]
    while rpc.call("terminal/output", {"terminalId": tid, "since": size - 1, "waitMs": 5000})["next"] < size:
        pass
    return tid

def pipeline(rpc, tid, count, params, base):
    lines = b"".join((json.dumps({"jsonrpc": "2.0", "id": base + i, "method": "terminal/output",
                                  "params": dict(params, terminalId=tid)}) + "\n").encode() for i in range(count))
    rpc.f.write(lines)
    rpc.f.flush()

def replies(rpc, count, base, want_len):
    for i in range(count):
        m = json.loads(rpc.f.readline())
        if m.get("id") != base + i:
            raise SystemExit("reply %d of %d is %s, not id %d" % (i, count, str(m)[:200], base + i))
        n = len(m["result"]["output"])
        if n != want_len:
            raise SystemExit("reply %d has %d bytes, not %d" % (i, n, want_len))

def rss(pid):
    for l in open("/proc/%s/status" % pid):
        if l.startswith("VmRSS:"):
            return int(l.split()[1]) // 1024

pid = sys.argv[3]
# A client that never reads: 400 requests for 64 KiB each of its job.
quiet = Rpc(sock)
qtid = job(quiet, 2 * MiB)
pipeline(quiet, qtid, 400, {"since": 0, "maxBytes": 65536}, 1000)
# A client that reads flat out: 40 reads of 4 MiB (the default bound),
# then 400 of 256 KiB, each answered in order.
fast = Rpc(sock)
tid = job(fast, 8 * MiB)
pipeline(fast, tid, 40, {"since": 0}, 100)
replies(fast, 40, 100, 4 * MiB)
pipeline(fast, tid, 400, {"since": 0, "maxBytes": 262144}, 2000)
replies(fast, 400, 2000, 262144)
st = fast.call("terminal/list", {})["terminals"]
if [j["status"] for j in st if j["terminalId"] == tid] != ["running"]:
    raise SystemExit("the fast client's job is not running: %s" % st)
# The quiet one held the service's memory down meanwhile, and still is
# a client: it reads now and gets all 400.
print("service VmRSS with a client that does not read: %d MiB" % rss(pid))
if rss(pid) > 160 * int(os.environ.get("PMON_TEST_RSS_SCALE", "1")):
    raise SystemExit("the service grew to %d MiB with a client that does not read" % rss(pid))
replies(quiet, 400, 1000, 65536)
if [j["status"] for j in quiet.call("terminal/list", {})["terminals"] if j["terminalId"] == qtid] != ["running"]:
    raise SystemExit("the quiet client's job is not running")
print("ok")
PY
out=$(PYTHONPATH="$(dirname "$0")" timeout 120 python3 "$t/pipeline.py" "$SOCK" run "$SERVE_PID") ||
  fail "pipelined reads: $out"
echo "$out"
kill -0 "$SERVE_PID" || fail "the service is gone"

# The same on --stdio, whose requests read meanwhile are held, in order.
cat > "$t/stdio.py" <<'PY'
import json, subprocess, sys, threading
MiB = 1 << 20
p = subprocess.Popen([sys.argv[1], "serve", "--stdio", "-q"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def send(o):
    p.stdin.write((json.dumps(o) + "\n").encode())
    p.stdin.flush()
def answer(want):
    while True:
        m = json.loads(p.stdout.readline())
        if m.get("id") == want:
            return m["result"]
send({"jsonrpc": "2.0", "id": 0, "method": "terminal/create", "params": {"command": "sh", "args": ["-c",
      "head -c %d /dev/zero | tr '\\0' x; exec sleep 1000" % (8 * MiB)], "outputByteLimit": 16 * MiB}})
tid = answer(0)["terminalId"]
while True:
    send({"jsonrpc": "2.0", "id": 1, "method": "terminal/output", "params": {"terminalId": tid, "since": 8 * MiB - 1, "waitMs": 5000}})
    if answer(1)["next"] >= 8 * MiB:
        break
lines = b"".join((json.dumps({"jsonrpc": "2.0", "id": 100 + i, "method": "terminal/output",
                              "params": {"terminalId": tid, "since": 0, "maxBytes": MiB}}) + "\n").encode() for i in range(400))
def write_all():
    p.stdin.write(lines)
    p.stdin.flush()
threading.Thread(target=write_all, daemon=True).start()
for i in range(400):
    line = p.stdout.readline()
    if not line:
        raise SystemExit("--stdio: the service ended after %d replies" % i)
    m = json.loads(line)
    if m.get("id") != 100 + i or len(m["result"]["output"]) != MiB:
        raise SystemExit("--stdio: reply %d is %s" % (i, str(m)[:200]))
p.stdin.close()
sys.exit(p.wait())
PY
timeout 120 python3 "$t/stdio.py" "$PMON" || fail "--stdio: pipelined reads"
pass
