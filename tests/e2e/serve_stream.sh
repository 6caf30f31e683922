# SPDX-License-Identifier: Apache-2.0
# terminal/output with `stream`: the job's bytes, as it wrote them, come
# through a pipe whose read end is passed with the reply. Every byte once
# (with backpressure), raw bytes kept, `follow: false` ends at what was
# there, a reader that falls behind gets an early end and the next read says
# bytes were dropped, a reader that goes away, the job's release and the
# connection's end each end the stream, --stdio streams only on a socket,
# and bad values are refused while the service goes on serving.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start

# stream.py SOCKET: the scenario's socket client, one connection; each
# step prints one JSON line of what it saw.
cat > "$t/stream.py" <<'PY'
import hashlib, json, os, select, sys, time
from serve_rpc import FdRpc
sock_path, step = sys.argv[1], sys.argv[2]

# One connection, the fds that come with answers kept (one at most each).
class Conn(FdRpc):
    def __init__(self):
        super().__init__(sock_path)
    def call(self, method, params):
        m, fd = self.message(method, params)
        assert not self.fds, "more than one fd came with a reply"
        return m, fd

def read_all(fd, h=None, deadline=30):
    got, end = 0, time.monotonic() + deadline
    while True:
        r, _, _ = select.select([fd], [], [], max(0, end - time.monotonic()))
        if not r:
            raise SystemExit("the stream did not end within %d s" % deadline)
        b = os.read(fd, 1 << 20)
        if not b:
            os.close(fd)
            return got
        got += len(b)
        if h:
            h.update(b)

def wait_exit(c, tid):
    return c.call("terminal/wait_for_exit", {"terminalId": tid})[0]["result"]

def stat_of(pid):  # (start time, state) from /proc/PID/stat, or None
    try:
        s = open("/proc/%d/stat" % pid).read()
    except OSError:
        return None
    f = s[s.rindex(")") + 2:].split()
    return f[19], f[0]

def main_of(c, tid):  # the job's main process, (pid, start time), recorded
    m, _ = c.call("terminal/list", {})
    pid = [t["pid"] for t in m["result"]["terminals"] if t["terminalId"] == tid][0]
    st = stat_of(pid)
    if st is None:
        raise SystemExit("the main process %d of job %s is not there" % (pid, tid))
    with open(os.environ["PMON_TEST_STATE"] + "/pids", "a") as f:
        f.write("%d %s\n" % (pid, st[0]))
    return pid, st[0]

def release(c, tid, main=None):
    # The reply, once the job's main process is checked gone by pid and
    # start time (not by cleanupVerified alone).
    pid, start = main or main_of(c, tid)
    m = c.call("terminal/release", {"terminalId": tid})[0]
    now = stat_of(pid)
    if now is not None and now[0] == start and now[1] != "Z":
        raise SystemExit("the main process %d of job %s is still there after its release" % (pid, tid))
    return m

c = Conn()
out = {}
if step == "every-byte":
    # 20 MiB of every byte value through a 1 MiB buffer with backpressure.
    gen = sys.argv[3]
    m, _ = c.call("terminal/create", {"command": "python3", "args": ["-c", gen],
                                       "outputByteLimit": 1 << 20, "outputBackpressure": True})
    tid = m["result"]["terminalId"]
    m, fd = c.call("terminal/output", {"terminalId": tid, "stream": True})
    out["reply"] = m.get("result")
    h = hashlib.md5()
    out["bytes"] = read_all(fd, h)
    out["md5"] = h.hexdigest()
    m, fd2 = c.call("terminal/output", {"terminalId": tid, "since": out["bytes"]})
    out["after"] = m["result"]
    out["fd_with_text"] = fd2 is not None
elif step == "rotating":
    # The same 20 MiB while the job's spool rotates every 192 KiB and the
    # buffer keeps 256 KiB: the stream's bytes come from the spool's files
    # (two of them) where they hold them, from the buffer where the reader
    # is further behind. A reader that waits now and then falls behind.
    gen = sys.argv[3]
    m, _ = c.call("terminal/create", {"command": "python3", "args": ["-c", gen], "outputByteLimit": 256 << 10,
                                       "spoolByteLimit": 192 << 10, "outputBackpressure": True})
    tid = m["result"]["terminalId"]
    m, fd = c.call("terminal/output", {"terminalId": tid, "stream": True})
    h, got = hashlib.md5(), 0
    while True:
        b = os.read(fd, 200000)
        if not b:
            break
        h.update(b)
        got += len(b)
        if got % 7 == 0:
            time.sleep(0.01)
    out["bytes"] = got
    out["md5"] = h.hexdigest()
    out["after"] = c.call("terminal/output", {"terminalId": tid, "since": got})[0]["result"]
elif step == "now":
    m, _ = c.call("terminal/create", {"command": "sh", "args": ["-c", "printf 'abc\\377'; exec sleep 600"]})
    tid = m["result"]["terminalId"]
    c.call("terminal/output", {"terminalId": tid, "since": 0, "waitMs": 10000})
    t0 = time.monotonic()
    m, fd = c.call("terminal/output", {"terminalId": tid, "stream": True, "follow": False})
    b = os.read(fd, 100)
    out["text"] = b.hex()
    out["ended"] = read_all(fd, deadline=10) == 0
    # since beyond what was written: the stream starts at the end.
    m, fd = c.call("terminal/output", {"terminalId": tid, "stream": True, "since": 10 ** 9, "follow": False})
    out["beyond"] = m["result"]
    out["beyond_bytes"] = read_all(fd, deadline=10)
    # A stream of the running job; its release ends it, after the bytes.
    m, fd = c.call("terminal/output", {"terminalId": tid, "stream": True, "since": 1})
    r = release(c, tid)
    out["released"] = r["result"]["cleanupVerified"]
    out["after_release"] = os.read(fd, 100).hex()
    out["release_ended"] = read_all(fd, deadline=10) == 0
elif step == "behind":
    # No backpressure, 64 KiB kept: a reader that does not read while the
    # job writes 8 MiB is ended early, and the next read says bytes were
    # dropped; what it got is the job's first bytes, in order.
    gen = "import sys, time\ntime.sleep(0.3)\nfor i in range(524288): sys.stdout.write('%015d\\n' % i)"
    m, _ = c.call("terminal/create", {"command": "python3", "args": ["-c", gen], "outputByteLimit": 65536})
    tid = m["result"]["terminalId"]
    m, fd = c.call("terminal/output", {"terminalId": tid, "stream": True})
    out["reply"] = m["result"]
    wait_exit(c, tid)
    h = hashlib.md5()
    out["bytes"] = read_all(fd, h)
    out["md5"] = h.hexdigest()
    written = b"".join(b"%015d\n" % i for i in range(524288))
    out["want_md5"] = hashlib.md5(written[:out["bytes"]]).hexdigest()
    m, _ = c.call("terminal/output", {"terminalId": tid, "since": out["bytes"]})
    out["after"] = {k: v for k, v in m["result"].items() if k != "output"}
    out["after_bytes"] = len(m["result"]["output"])
    # A stream asked for after the job is over, from 0: the kept bytes,
    # and the reply says the older ones were dropped.
    m, fd = c.call("terminal/output", {"terminalId": tid, "stream": True, "since": 0})
    out["late"] = m["result"]
    out["late_bytes"] = read_all(fd)
elif step == "reader-gone":
    # A reader that closes its end: the service goes on, the job too.
    m, _ = c.call("terminal/create", {"command": "yes", "args": ["stream"], "outputByteLimit": 1 << 20,
                                       "outputBackpressure": True})
    tid = m["result"]["terminalId"]
    m, fd = c.call("terminal/output", {"terminalId": tid, "stream": True})
    got = 0
    while got < (4 << 20):
        got += len(os.read(fd, 1 << 20))
    os.close(fd)
    time.sleep(0.2)
    m, _ = c.call("terminal/list", {})
    out["status"] = [t["status"] for t in m["result"]["terminals"] if t["terminalId"] == tid]
    # A new stream goes on from where the reader stopped (the bytes the
    # closed pipe held count as read: with backpressure the buffer may have
    # let them go, and the reply says so).
    m, fd = c.call("terminal/output", {"terminalId": tid, "stream": True, "since": got})
    out["again"] = m["result"]
    out["again_bytes"] = len(os.read(fd, 1 << 16))
    os.close(fd)
    out["released"] = release(c, tid)["result"]["cleanupVerified"]
elif step == "conn-gone":
    # The connection that asked for a stream ends: so does the stream.
    m, _ = c.call("terminal/create", {"command": "sleep", "args": ["600"], "keep": True})
    tid = m["result"]["terminalId"]
    m, fd = c.call("terminal/output", {"terminalId": tid, "stream": True})
    main = main_of(c, tid)
    c.s.close()
    out["ended"] = read_all(fd, deadline=10) == 0
    c = Conn()
    out["released"] = release(c, tid, main)["result"]["cleanupVerified"]
elif step == "pty":
    # A job on a pseudo-terminal streams what its master reads (the line
    # discipline's \r\n), to the end of the job.
    m, _ = c.call("terminal/create", {"command": "sh", "args": ["-c", "echo from-pty; sleep 0.2; echo again"],
                                       "pty": {"rows": 24, "cols": 80}})
    tid = m["result"]["terminalId"]
    m, fd = c.call("terminal/output", {"terminalId": tid, "stream": True})
    h = []
    while True:
        b = os.read(fd, 1 << 16)
        if not b:
            break
        h.append(b)
    os.close(fd)
    out["bytes"] = b"".join(h).decode("latin-1")
    out["exit"] = c.call("terminal/output", {"terminalId": tid, "since": len(b"".join(h))})[0]["result"]["exitStatus"]
elif step == "bad":
    m, _ = c.call("terminal/create", {"command": "sleep", "args": ["600"], "separateStderr": True})
    tid = m["result"]["terminalId"]
    out["not_bool"] = c.call("terminal/output", {"terminalId": tid, "stream": "yes"})[0].get("error")
    out["follow_not_bool"] = c.call("terminal/output", {"terminalId": tid, "stream": True, "follow": 1})[0].get("error")
    out["stderr"] = c.call("terminal/output", {"terminalId": tid, "stream": True, "stderrSince": 0})[0].get("error")
    out["unknown"] = c.call("terminal/output", {"terminalId": "nope", "stream": True})[0].get("error")
    fds = []
    for i in range(64):
        m, fd = c.call("terminal/output", {"terminalId": tid, "stream": True})
        assert fd is not None and "result" in m, m
        fds.append(fd)
    m, fd = c.call("terminal/output", {"terminalId": tid, "stream": True})
    out["too_many"] = m.get("error")
    out["too_many_fd"] = fd is not None
    # The streams are the service's to end: the job's release ends all 64.
    out["released"] = release(c, tid)["result"]["cleanupVerified"]
    out["all_ended"] = all(read_all(fd, deadline=10) == 0 for fd in fds)
    m, _ = c.call("terminal/list", {})
    out["still_serving"] = "result" in m
print(json.dumps(out))
PY

# Every byte value, 20 MiB, with backpressure: each byte once, in order.
gen='import sys
b = bytes(range(256)) * 4096
for i in range(20):
    sys.stdout.buffer.write(b)'
want=$(python3 -c "$gen" | md5sum | cut -d' ' -f1)
stream() { PYTHONPATH="$(dirname "$0")" python3 "$t/stream.py" "$SOCK" "$@"; }
r=$(stream every-byte "$gen")
reply_is -m every-byte "$r" 'reply={"since": 0, "stream": true, "truncated": false}' "bytes=$((20 << 20))" \
  "md5=$want" 'after.output=' 'after.exitStatus.exitCode=0' 'after.truncated=false' 'fd_with_text=false'

r=$(stream rotating "$gen")
reply_is -m rotating "$r" "bytes=$((20 << 20))" "md5=$want" 'after.output=' 'after.truncated=false' \
  'after.exitStatus.exitCode=0'

# follow: false ends at what was there; the raw byte is kept as is; a
# since past the end starts there; the release ends a following stream.
r=$(stream now)
reply_is -m now "$r" 'text=616263ff' 'ended=true' 'beyond.since=4' 'beyond_bytes=0' \
  'released=true' 'after_release=6263ff' 'release_ended=true'

# A reader that falls behind: an early end, then the read says so.
r=$(stream behind)
reply_is -m behind "$r" 'bytes<8388608' "md5=$(jget "$r" want_md5)" 'after.truncated=true' 'after.next=8388608' \
  'after_bytes>0' 'after_bytes<=65536' 'late.truncated=true' "late.since=$((8388608 - 65536))" 'late_bytes=65536'

r=$(stream reader-gone)
reply_is -m reader-gone "$r" 'status=["running"]' 'again.stream=true' 'again_bytes>0' 'released=true'

r=$(stream conn-gone)
reply_is -m conn-gone "$r" 'ended=true' 'released=true'

r=$(stream pty)
reply_is -m pty "$r" $'bytes=from-pty\r\nagain\r\n' 'exit.exitCode=0'

r=$(stream bad)
reply_is -m bad "$r" 'not_bool.code=-32602' 'not_bool.message~stream' 'follow_not_bool.code=-32602' \
  'follow_not_bool.message~follow' 'stderr.code=-32602' 'stderr.message~stderr' 'unknown.message~unknown terminal' \
  'too_many.message~too many streams' 'too_many_fd=false' 'released=true' 'all_ended=true' 'still_serving=true'

# pmon logs -f prints the raw bytes too, and ends with the job.
client_open c
r=$(call c terminal/create '{"command":"sh","args":["-c","printf \"a\\377\\n\"; sleep 0.3; printf \"b\\n\""],"keep":true}')
id=$(jget "$r" result.terminalId)
[ "$("$PMON" logs -f --socket "$SOCK" "$id" | od -An -tx1 | tr -d ' \n')" = 61ff0a620a ] || fail "pmon logs -f did not print the raw bytes"
# Into a pipe it writes in steps of 1 MiB (the most a pipe may hold here).
want=$(( $(cat /proc/sys/fs/pipe-max-size) < 1048576 ? $(cat /proc/sys/fs/pipe-max-size) : 1048576 ))
size=$("$PMON" logs -f --socket "$SOCK" "$id" | python3 -c 'import fcntl, sys; sys.stdin.buffer.read(); print(fcntl.fcntl(0, fcntl.F_GETPIPE_SZ))')
[ "$size" -ge "$want" ] || fail "pmon logs -f left its stdout pipe at $size bytes, not $want"
call c terminal/release '{"terminalId":"'"$id"'"}' > /dev/null
client_close c

kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"

# --stdio: on pipes a stream is refused (and the next request served); on a
# socket it works.
# (Each request after the create's answer: ids are random.)
PYTHONPATH="$(dirname "$0")" python3 - "$PMON" > "$t/pipes.json" <<'PY'
import json, sys
from serve_rpc import Rpc
c = Rpc.stdio(sys.argv[1])
tid = c.call("terminal/create", {"command": "echo", "args": ["hi"]})["terminalId"]
out = {"stream": c.message("terminal/output", {"terminalId": tid, "stream": True}),
       "list": c.message("terminal/list", {})}
c.close()
print(json.dumps(out))
PY
report_is -m "--stdio on pipes" "$t/pipes.json" 'stream.error.code=-32602' 'stream.error.message~Unix socket' 'list.result!=(absent)'
PYTHONPATH="$(dirname "$0")" python3 - "$PMON" <<'PY' || fail "--stdio on a socket: no stream"
import os, socket, subprocess, sys
from serve_rpc import FdRpc
a, b = socket.socketpair()
p = subprocess.Popen([sys.argv[1], "serve", "-q", "--stdio"], stdin=b, stdout=b)
b.close()
c = FdRpc(a)
tid = c.message("terminal/create", {"command": "echo", "args": ["through a socket"]})[0]["result"]["terminalId"]
c.message("terminal/wait_for_exit", {"terminalId": tid})
m, fd = c.message("terminal/output", {"terminalId": tid, "stream": True})
assert m["result"]["stream"] and fd is not None and not c.fds, m
assert os.read(fd, 100) == b"through a socket\n"
assert os.read(fd, 100) == b""
a.close()
assert p.wait(30) == 0
PY
pass
