#!/usr/bin/env python3
"""pmon serve output throughput (no asserts): a job writes SIZE bytes of
text to stdout; a client reads them through terminal/output with `since`
(and `waitMs`, so it never spins) until the job has ended and every byte
is read. Baseline, in the same run: the same writer piped into `cat`, read
from cat's stdout pipe by this process. Prints MB/s of each and the ratio,
and how many bytes the job's buffer dropped because the reader fell behind
(outputByteLimit is set to LIMIT).

usage: serve_output_bench.py PMON [SIZE_MIB] [ROUNDS] [LIMIT_MIB]
"""
import json, os, socket, subprocess, sys, tempfile, time

PMON = sys.argv[1]
SIZE = int(sys.argv[2] if len(sys.argv) > 2 else 256) << 20
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 3
LIMIT = int(sys.argv[4] if len(sys.argv) > 4 else 64) << 20
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


def through_pmon(c):
    t0 = time.perf_counter()
    tid = c.call("terminal/create", {"command": "sh", "args": ["-c", WRITER],
                                     "outputByteLimit": LIMIT})["terminalId"]
    since, got, dropped = 0, 0, False
    while True:
        r = c.call("terminal/output", {"terminalId": tid, "since": since, "waitMs": 1000})
        got += len(r["output"].encode())
        dropped = dropped or r["truncated"]
        since = r["next"]
        if r["exitStatus"] is not None and since >= SIZE:
            break
        if r["exitStatus"] is not None and not r["output"]:
            break
    dt = time.perf_counter() - t0
    c.call("terminal/release", {"terminalId": tid})
    return dt, got, SIZE - got if dropped else 0


def through_cat():
    t0 = time.perf_counter()
    p = subprocess.Popen(["sh", "-c", WRITER + " | cat"], stdout=subprocess.PIPE)
    got = 0
    while True:
        b = p.stdout.read1(1 << 20)
        if not b:
            break
        got += len(b)
    p.wait()
    return time.perf_counter() - t0, got


def main():
    d = tempfile.mkdtemp()
    path = os.path.join(d, "s.sock")
    svc = subprocess.Popen([PMON, "serve", "-q", "--listen", path])
    try:
        while not os.path.exists(path):
            time.sleep(0.01)
        c = Client(path)
        print("%d MiB of text per round, outputByteLimit %d MiB" % (SIZE >> 20, LIMIT >> 20))
        print("%-6s %14s %14s %8s %14s" % ("round", "cat MB/s", "serve MB/s", "ratio", "dropped bytes"))
        for i in range(ROUNDS):
            ct, cg = through_cat()
            st, sg, lost = through_pmon(c)
            cr, sr = cg / ct / 1e6, sg / st / 1e6
            print("%-6d %14.1f %14.1f %7.2fx %14d" % (i + 1, cr, sr, sr / cr, lost))
    finally:
        svc.terminate()
        svc.wait()
        try:
            os.unlink(path)
        except OSError:
            pass
        os.rmdir(d)


main()
