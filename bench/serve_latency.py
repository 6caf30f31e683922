#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""pmon serve: how long an idle client waits for the answer to a cheap
request (terminal/list of a session with no jobs) sent every ~5 ms, from a
process of its own, while another client loads the service (no asserts):

  ports    2000 terminal/wait_for_port pending on one job (which holds a
           socket and never listens), until they time out (3 s)
  pidns    session/close of 400 `sleep` jobs on `--confine pidns`
  isolate  the same under `--isolate`
  cgroup   the same on `--confine cgroup`
  output   a job writing flat out (`yes`), read by the load client with
           terminal/output since/waitMs, 3 s
  conns    1000 connections opened (each sends a terminal/list) and
           dropped, three times
  grep     200 grep views of a job's 64 MiB spool, pipelined on one
           connection
  list     100 terminal/list of a job of 2000 processes, pipelined

For each load and each pmon binary given (old and new side by side, the
loads interleaved), the worst, p99 and median answer time of the idle
client, and the time the load took (for the stops: session/close to the
last job's terminal/exited).

usage: serve_latency.py PMON [PMON2] [--loads ports,pidns,...,grep,list] [--jobs 400] [--waiters 2000]
"""
import atexit, functools, json, os, select, signal, socket, subprocess, sys, tempfile, time

print = functools.partial(print, flush=True)

args = sys.argv[1:]
opts = {"--loads": "ports,pidns,isolate,cgroup,output,conns,grep,list", "--jobs": "400", "--waiters": "2000"}
bins = []
while args:
    a = args.pop(0)
    if a in opts:
        opts[a] = args.pop(0)
    else:
        bins.append(os.path.abspath(a))
if not bins or len(bins) > 2:
    sys.exit(__doc__)
LOADS = opts["--loads"].split(",")
JOBS = int(opts["--jobs"])
WAITERS = int(opts["--waiters"])
PROBE_S = 0.005


class Client:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.f = self.s.makefile("rwb")
        self.id = 0
        self.exited = 0  # terminal/exited notifications seen

    def send(self, method, params, flush=True):
        self.id += 1
        self.f.write((json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params}) + "\n").encode())
        if flush:
            self.f.flush()
        return self.id

    def message(self):
        m = json.loads(self.f.readline())
        if m.get("method") == "terminal/exited":
            self.exited += 1
        return m

    def call(self, method, params):
        i = self.send(method, params)
        while True:
            m = self.message()
            if m.get("id") == i:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]["message"]))
                return m["result"]


def start_service(d, pmon, *args):
    path = os.path.join(d, "s.sock")
    p = subprocess.Popen([pmon, "serve", "-q", "--listen", path, *args])
    # A bench that fails half-way does not leave its service running.
    atexit.register(lambda: p.poll() is None and (p.terminate(), p.wait()))
    # (The socket's file appears before it listens.)
    while True:
        if p.poll() is not None:
            raise RuntimeError("pmon serve %s did not start" % " ".join(args))
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(path)
            return p, path
        except OSError:
            time.sleep(0.01)


def start_probe(path):
    """A process of its own sends the cheap request every PROBE_S and
    times each answer until told to stop; returns (pid, stop_w, result_r)."""
    stop_r, stop_w = os.pipe()
    res_r, res_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(stop_w)
        os.close(res_r)
        c = Client(path)
        times = []
        while not select.select([stop_r], [], [], PROBE_S)[0]:
            t0 = time.monotonic()
            c.call("terminal/list", {"sessionId": "probe"})
            times.append(time.monotonic() - t0)
        with os.fdopen(res_w, "w") as f:
            f.write(json.dumps(times))
        os._exit(0)
    os.close(stop_r)
    os.close(res_w)
    time.sleep(0.2)  # (its first answers before the load begins)
    return pid, stop_w, res_r


def stop_probe(probe):
    pid, stop_w, res_r = probe
    os.write(stop_w, b"x")
    with os.fdopen(res_r) as f:
        times = json.loads(f.read() or "[]")
    os.waitpid(pid, 0)
    os.close(stop_w)
    return sorted(times)


def load_ports(path):
    c = Client(path)
    holder = "import socket, time\ns = socket.socket()\ntime.sleep(1000)"
    tid = c.call("terminal/create", {"command": "python3", "args": ["-c", holder]})["terminalId"]
    time.sleep(0.3)  # (the socket is made)
    probe = start_probe(path)
    # At most 1000 a connection (the service lets 1024 wait on one).
    waiters = [c] + [Client(path) for _ in range((WAITERS - 1) // 1000)]
    t0 = time.monotonic()
    for i in range(WAITERS):
        waiters[i // 1000].send("terminal/wait_for_port", {"terminalId": tid, "port": 1, "timeoutMs": 3000},
                                flush=False)
    for w in waiters:
        w.f.flush()
    for k, w in enumerate(waiters):
        answered = 0
        while answered < min(1000, WAITERS - 1000 * k):
            m = w.message()
            if "did not listen" not in m.get("error", {}).get("message", "did not listen"):
                sys.exit("a waiter was refused: %s" % m)
            if "id" in m:
                answered += 1
    took = time.monotonic() - t0
    times = stop_probe(probe)
    c.call("terminal/release", {"terminalId": tid})
    return times, took


def load_stop(path):
    c = Client(path)
    for _ in range(JOBS):
        c.call("terminal/create", {"command": "sleep", "args": ["1000"], "sessionId": "s"})
    probe = start_probe(path)
    t0 = time.monotonic()
    c.exited = 0
    n = c.call("session/close", {"sessionId": "s"})["stopping"]
    while c.exited < n:
        c.message()
    took = time.monotonic() - t0
    return stop_probe(probe), took


def load_output(path):
    c = Client(path)
    tid = c.call("terminal/create", {"command": "yes", "args": ["output flat out " * 4]})["terminalId"]
    probe = start_probe(path)
    t0 = time.monotonic()
    since, got = 0, 0
    while time.monotonic() - t0 < 3:
        r = c.call("terminal/output", {"terminalId": tid, "since": since, "waitMs": 1000})
        got += r["next"] - since
        since = r["next"]
    took = time.monotonic() - t0
    times = stop_probe(probe)
    c.call("terminal/release", {"terminalId": tid})
    return times, took


def load_conns(path):
    probe = start_probe(path)
    t0 = time.monotonic()
    line = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "terminal/list", "params": {}}) + "\n").encode()
    for _ in range(3):
        socks = []
        for _ in range(1000):
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
            s.sendall(line)
            socks.append(s)
        for s in socks:
            s.close()
    took = time.monotonic() - t0
    return stop_probe(probe), took


def pipelined(c, method, params, n):
    """n requests sent at once, then their n answers read."""
    for _ in range(n):
        c.send(method, params, flush=False)
    c.f.flush()
    got = 0
    while got < n:
        if "id" in c.message():
            got += 1


def load_grep(path):
    c = Client(path)
    tid = c.call("terminal/create", {"command": "sh", "args": ["-c", "yes 'a line of output to grep through' | "
                                                                     "head -c 67108864"]})["terminalId"]
    c.call("terminal/wait_for_exit", {"terminalId": tid})
    probe = start_probe(path)
    t0 = time.monotonic()
    pipelined(c, "terminal/output", {"terminalId": tid, "grep": "no such line"}, 200)
    took = time.monotonic() - t0
    times = stop_probe(probe)
    c.call("terminal/release", {"terminalId": tid})
    return times, took


def load_list(path):
    c = Client(path)
    with tempfile.TemporaryDirectory() as d:
        ready = os.path.join(d, "ready")
        tid = c.call("terminal/create", {"command": "sh", "args": ["-c", "for i in $(seq 2000); do sleep 1000 & done; "
                                                                         ": > %s; wait" % ready]})["terminalId"]
        while not os.path.exists(ready):
            time.sleep(0.05)
    probe = start_probe(path)
    t0 = time.monotonic()
    pipelined(c, "terminal/list", {}, 100)
    took = time.monotonic() - t0
    times = stop_probe(probe)
    c.call("terminal/release", {"terminalId": tid})
    return times, took


# Each load: the service's arguments and what drives it.
WAYS = {
    "ports": ([], load_ports),
    "pidns": (["--confine", "pidns"], load_stop),
    "isolate": (["--isolate"], load_stop),
    "cgroup": (["--confine", "cgroup"], load_stop),
    "output": ([], load_output),
    "conns": ([], load_conns),
    "grep": ([], load_grep),
    "list": ([], load_list),
}


def pct(sorted_times, p):
    if not sorted_times:
        return float("nan")
    return sorted_times[min(len(sorted_times) - 1, int(p * len(sorted_times)))]


rows = []
print("load average %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
for load in LOADS:
    serve_args, drive = WAYS[load]
    row = [load]
    for pmon in bins:
        with tempfile.TemporaryDirectory() as d:
            try:
                p, path = start_service(d, pmon, *serve_args)
            except RuntimeError as e:
                row.append(None)
                print("%s, %s: %s" % (load, pmon, e))
                continue
            times, took = drive(path)
            p.send_signal(signal.SIGTERM)
            p.wait()
        row.append((times[-1] * 1000, pct(times, 0.99) * 1000, pct(times, 0.5) * 1000, len(times), took))
    rows.append(row)

head = "%-8s" % "load"
for i, pmon in enumerate(bins):
    head += " | %-44s" % ("%s: worst / p99 / median ms (n), load s" % ("old" if len(bins) == 2 and i == 0 else
                                                                        "new" if len(bins) == 2 else "pmon"))
print(head)
for row in rows:
    line = "%-8s" % row[0]
    for cell in row[1:]:
        line += " | %-44s" % ("not available" if cell is None else
                              "%7.1f / %6.1f / %5.2f (%d), %.2f s" % cell)
    print(line)
for i, pmon in enumerate(bins):
    print("%s: %s" % ("old" if len(bins) == 2 and i == 0 else "new" if len(bins) == 2 else "pmon", pmon))
print("load average %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
