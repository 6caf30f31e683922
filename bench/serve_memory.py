#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""pmon serve's peak memory (no asserts): a job writes SIZE MiB of control
bytes (NUL, each one six bytes in a JSON reply: \\u0000) with an
outputByteLimit of as much, and one client reads all of it through
terminal/output from since 0, reading on while a reply says `more` (a
service without `more` answers with all of it at once). Prints, for each
pmon binary given, the service's peak RSS (VmHWM), its RSS at the end,
the crash guard's RSS when there is one, the replies and the largest, and
the time the read took.

usage: serve_memory.py PMON [PMON...] [--size MIB] [--confine B]
  e.g. serve_memory.py /path/to/old/pmon build/pmon
"""
import json, os, socket, subprocess, sys, tempfile, time

argv = sys.argv[1:]
SIZE, CONFINE, binaries = 128, None, []
while argv:
    a = argv.pop(0)
    if a == "--size":
        SIZE = int(argv.pop(0))
    elif a == "--confine":
        CONFINE = argv.pop(0)
    else:
        binaries.append(a)
if not binaries:
    sys.exit(__doc__)
N = SIZE << 20


def status(pid, key):
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def guard_of(pid):
    try:
        kids = open("/proc/%d/task/%d/children" % (pid, pid)).read().split()
    except OSError:
        return None
    for k in kids:
        try:
            if open("/proc/%s/comm" % k).read().strip() == "pmon-guard":
                return int(k)
        except OSError:
            pass
    return None


class Client:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.f = self.s.makefile("rwb", buffering=1 << 20)
        self.id = 0
        self.largest = 0

    def call(self, method, params):
        self.id += 1
        self.f.write((json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method,
                                  "params": params}) + "\n").encode())
        self.f.flush()
        while True:
            line = self.f.readline()
            if not line:
                raise RuntimeError("the service closed the connection (or died)")
            self.largest = max(self.largest, len(line))
            m = json.loads(line)
            if m.get("id") == self.id:
                if "error" in m:
                    raise RuntimeError(m["error"]["message"])
                return m["result"]


def measure(pmon):
    d = tempfile.mkdtemp(prefix="pmon-mem-")
    path = os.path.join(d, "s.sock")
    cmd = [pmon, "serve", "-q", "--listen", path] + (["--confine", CONFINE] if CONFINE else [])
    svc = subprocess.Popen(cmd)
    row = {"binary": pmon}
    try:
        while not os.path.exists(path):
            if svc.poll() is not None:
                raise RuntimeError("the service did not start")
            time.sleep(0.02)
        c = Client(path)
        tid = c.call("terminal/create", {"command": "sh", "args": ["-c", "head -c %d /dev/zero; exec sleep 1000" % N],
                                         "outputByteLimit": N})["terminalId"]
        while c.call("terminal/output", {"terminalId": tid, "since": N - 1, "waitMs": 5000})["next"] < N:
            pass
        c.largest = 0
        t0 = time.monotonic()
        since, got, replies = 0, 0, 0
        try:
            while True:
                r = c.call("terminal/output", {"terminalId": tid, "since": since})
                got, since, replies = got + len(r["output"]), r["next"], replies + 1
                if not r.get("more") or since >= N:
                    break
            row["error"] = ""
        except RuntimeError as e:
            row["error"] = str(e)
        row.update(secs=time.monotonic() - t0, got=got, replies=replies, largest=c.largest)
        row["hwm"] = status(svc.pid, "VmHWM")
        row["rss"] = status(svc.pid, "VmRSS")
        g = guard_of(svc.pid)
        row["guard"] = status(g, "VmRSS") if g else None
        row["alive"] = svc.poll() is None
    finally:
        if svc.poll() is None:
            svc.terminate()
        svc.wait()
        try:
            os.unlink(path)
        except OSError:
            pass
        os.rmdir(d)
    return row


def mib(v):
    return "-" if v is None else "%.1f" % v


rows = [measure(b) for b in binaries]
print("pmon serve, one client reading a job's %d MiB of NUL bytes (outputByteLimit %d MiB)" % (SIZE, SIZE))
print("%-40s %10s %10s %10s %8s %12s %8s %6s %s" % ("binary", "peak MiB", "end MiB", "guard MiB", "replies",
                                                  "largest MB", "secs", "alive", "error"))
for r in rows:
    print("%-40s %10s %10s %10s %8d %12.1f %8.2f %6s %s" % (r["binary"][-40:], mib(r["hwm"]), mib(r["rss"]),
                                                         mib(r["guard"]), r["replies"], r["largest"] / 1e6,
                                                         r["secs"], "yes" if r["alive"] else "no", r["error"]))
