#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""pmon serve output throughput (no asserts): a job writes SIZE bytes of
text to stdout, read back through terminal/output with `since` (and
`waitMs`, so no reader spins) until the job has ended and every byte is
read, by two readers:

  logs -f   the C++ client, `pmon logs -f ID` into a pipe this process reads
            (it asks for a stream: the raw bytes through a pipe the service
            writes, passed with the reply)
  stream    this process, asking for the stream itself and reading its pipe
  json      this process, JSON over the socket (json.loads per reply)

Baseline, in the same run: the same writer piped into `cat`, read from
cat's stdout pipe by this process; and beside it `tee FILE` (a whole copy
kept in a file in this run's scratch directory, as the service keeps its
spool; `tee` reads 8 KiB at a time), read the same way. Prints MB/s of each, the ratio against
cat, and how many bytes the job's buffer dropped because its reader fell
behind (outputByteLimit LIMIT; with --backpressure the job is created with
outputBackpressure and should drop none).

usage: serve_output_bench.py PMON [SIZE_MIB] [ROUNDS] [LIMIT_MIB] [--backpressure]
"""
import array, json, os, socket, subprocess, sys, tempfile, time

args = [a for a in sys.argv[1:] if not a.startswith("--")]
BACKPRESSURE = "--backpressure" in sys.argv
PMON = args[0]
SIZE = int(args[1] if len(args) > 1 else 1024) << 20
ROUNDS = int(args[2]) if len(args) > 2 else 3
LIMIT = int(args[3] if len(args) > 3 else 16) << 20
LINE = "0123456789abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ\n"
WRITER = "yes '%s' | head -c %d" % (LINE.rstrip("\n"), SIZE)


class Client:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.f = self.s.makefile("rwb", buffering=1 << 20)
        self.id = 0

    def call(self, method, params):
        self.id += 1
        self.f.write((json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method,
                                  "params": params}) + "\n").encode())
        self.f.flush()
        while True:
            m = json.loads(self.f.readline())
            if m.get("id") == self.id:
                if "error" in m:
                    raise RuntimeError(m["error"]["message"])
                return m["result"]


def create(c):
    p = {"command": "sh", "args": ["-c", WRITER], "outputByteLimit": LIMIT}
    if BACKPRESSURE:
        p["outputBackpressure"] = True
    return c.call("terminal/create", p)["terminalId"]


def through_python(c):
    t0 = time.perf_counter()
    tid = create(c)
    since, got, dropped = 0, 0, False
    while True:
        r = c.call("terminal/output", {"terminalId": tid, "since": since, "waitMs": 1000})
        got += len(r["output"].encode())
        dropped = dropped or r["truncated"]
        since = r["next"]
        if r["exitStatus"] is not None and not r["output"]:
            break
    dt = time.perf_counter() - t0
    c.call("terminal/release", {"terminalId": tid})
    return dt, got


def through_stream(c, path):
    t0 = time.perf_counter()
    tid = create(c)
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall((json.dumps({"jsonrpc": "2.0", "id": 1, "method": "terminal/output",
                           "params": {"terminalId": tid, "stream": True}}) + "\n").encode())
    buf, fds = b"", []
    while b"\n" not in buf:
        data, anc, _, _ = s.recvmsg(1 << 16, socket.CMSG_SPACE(4))
        if not data:
            raise RuntimeError("the service closed the connection")
        for _, _, raw in anc:
            fds += list(array.array("i", raw))
        buf += data
    r = json.loads(buf.split(b"\n", 1)[0])["result"]
    f = os.fdopen(fds[0], "rb", buffering=0)
    got = 0
    while True:
        b = f.read(1 << 20)
        if not b:
            break
        got += len(b)
    f.close()
    s.close()
    # The end of the stream: the job's output is over (or bytes were dropped).
    r = c.call("terminal/output", {"terminalId": tid, "since": r["since"] + got})
    got += len(r["output"].encode())
    dt = time.perf_counter() - t0
    c.call("terminal/release", {"terminalId": tid})
    return dt, got


def read_pipe(f):
    got = 0
    while True:
        b = f.read1(1 << 20)
        if not b:
            return got
        got += len(b)


def through_logs(c, path):
    t0 = time.perf_counter()
    tid = create(c)
    p = subprocess.Popen([PMON, "logs", "-f", "--socket", path, tid], stdout=subprocess.PIPE)
    got = read_pipe(p.stdout)
    p.wait()
    dt = time.perf_counter() - t0
    c.call("terminal/release", {"terminalId": tid})
    return dt, got


def through_cat(tee_file=None):
    t0 = time.perf_counter()
    into = "cat" if tee_file is None else "tee " + tee_file
    p = subprocess.Popen(["sh", "-c", WRITER + " | " + into], stdout=subprocess.PIPE)
    got = read_pipe(p.stdout)
    p.wait()
    dt = time.perf_counter() - t0
    if tee_file is not None:
        os.unlink(tee_file)
    return dt, got


def main():
    d = tempfile.mkdtemp()
    path = os.path.join(d, "s.sock")
    svc = subprocess.Popen([PMON, "serve", "-q", "--listen", path])
    try:
        while not os.path.exists(path):
            time.sleep(0.01)
        c = Client(path)
        print("%d MiB of text per round, outputByteLimit %d MiB, outputBackpressure %s; load average %s"
              % (SIZE >> 20, LIMIT >> 20, "on" if BACKPRESSURE else "off",
                 " ".join(open("/proc/loadavg").read().split()[:3])))
        cols = ("logs -f", "stream", "json")
        print("%-6s %9s %9s %6s" % ("round", "cat MB/s", "tee MB/s", "ratio") +
              "".join(" | %9s %7s %10s" % (n, "ratio", "lost bytes") for n in cols))
        for i in range(ROUNDS):
            ct, cg = through_cat()
            cr = cg / ct / 1e6
            tt, tg = through_cat(os.path.join(d, "tee.out"))
            line = "%-6d %9.1f %9.1f %5.2fx" % (i + 1, cr, tg / tt / 1e6, tg / tt / 1e6 / cr)
            for fn in (lambda: through_logs(c, path), lambda: through_stream(c, path), lambda: through_python(c)):
                t, g = fn()
                line += " | %9.1f %6.2fx %10d" % (g / t / 1e6, g / t / 1e6 / cr, SIZE - g)
            print(line)
        print("load average after: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
    finally:
        svc.terminate()
        svc.wait()
        try:
            os.unlink(path)
        except OSError:
            pass
        os.rmdir(d)


main()
