#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What clients can make pmon serve hold besides output (no asserts):
  lines  CONNS connections (default 1000) each send a request of almost
         1 MiB without its newline;
  waits  WAITCONNS connections (default 100) each pipeline 1024
         terminal/wait_for_exit on one job that runs on.
Prints, for each pmon binary given, the service's RSS growth (VmRSS, from
before the load to while it is held), and how many connections were told
and closed (lines) or requests refused (waits).

usage: serve_held.py PMON [PMON...] [--conns N] [--waitconns N] [--budget SIZE]
  e.g. serve_held.py /path/to/old/pmon build/pmon
"""
import json, os, resource, select, socket, subprocess, sys, tempfile, time

argv = sys.argv[1:]
CONNS, WAITCONNS, BUDGET, binaries = 1000, 100, None, []
while argv:
    a = argv.pop(0)
    if a == "--conns":
        CONNS = int(argv.pop(0))
    elif a == "--waitconns":
        WAITCONNS = int(argv.pop(0))
    elif a == "--budget":
        BUDGET = argv.pop(0)
    else:
        binaries.append(os.path.abspath(a))
if not binaries:
    sys.exit(__doc__)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
MiB = 1 << 20


def rss_mib(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def start(pmon, d):
    path = os.path.join(d, "s.sock")
    args = [pmon, "serve", "-q", "--listen", path] + (["--memory-budget", BUDGET] if BUDGET else [])
    p = subprocess.Popen(args)
    while not os.path.exists(path):
        if p.poll() is not None:
            sys.exit("%s did not start" % pmon)
        time.sleep(0.02)
    return p, path


def stop(p):
    p.terminate()
    p.wait()


def lines(pmon):
    with tempfile.TemporaryDirectory() as d:
        p, path = start(pmon, d)
        before = rss_mib(p.pid)
        head = b'{"jsonrpc":"2.0","id":1,"method":"terminal/list","params":{"x":"'
        body = head + b"x" * (MiB - 16 - len(head))
        conns = []
        for _ in range(CONNS):
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
            s.settimeout(30)
            try:
                s.sendall(body)
            except OSError:
                pass
            conns.append(s)
        time.sleep(0.5)
        grown = rss_mib(p.pid) - before
        told = 0
        for s in conns:
            r, _, _ = select.select([s], [], [], 0)
            if r:
                told += 1
            s.close()
        stop(p)
        return grown, told


def waits(pmon):
    with tempfile.TemporaryDirectory() as d:
        p, path = start(pmon, d)
        c = socket.socket(socket.AF_UNIX)
        c.connect(path)
        f = c.makefile("rwb")
        f.write(b'{"jsonrpc":"2.0","id":0,"method":"terminal/create","params":{"command":"sleep","args":["1000"]}}\n')
        f.flush()
        tid = json.loads(f.readline())["result"]["terminalId"]
        before = rss_mib(p.pid)
        req = b"".join((json.dumps({"jsonrpc": "2.0", "id": i, "method": "terminal/wait_for_exit",
                                    "params": {"terminalId": tid}}) + "\n").encode() for i in range(1024))
        mark = b'{"jsonrpc":"2.0","id":"mark","method":"terminal/list"}\n'
        refused, keep = 0, []
        for _ in range(WAITCONNS):
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
            s.sendall(req + mark)
            g = s.makefile("rb")
            while True:
                m = json.loads(g.readline())
                if m.get("id") == "mark":
                    break
                refused += "error" in m
            keep.append((s, g))
        grown = rss_mib(p.pid) - before
        stop(p)
        return grown, refused


print("load average %.2f %.2f %.2f" % os.getloadavg())
print("%-6s | %-12s | %-40s | %s" % ("load", "VmRSS growth", "past the budget", "pmon"))
for pmon in binaries:
    g, told = lines(pmon)
    print("%-6s | %8.1f MiB | %-40s | %s" % ("lines", g, "%d of %d connections told, closed" % (told, CONNS), pmon))
    g, refused = waits(pmon)
    print("%-6s | %8.1f MiB | %-40s | %s" % ("waits", g, "%d of %d waits refused" % (refused, WAITCONNS * 1024), pmon))
