# SPDX-License-Identifier: Apache-2.0
"""What the pmon serve benchmarks share: a JSON-RPC client of the service's
socket, starting a service, and the raw cgroup.kill baseline."""
import atexit, json, os, select, signal, socket, subprocess, time


class Client:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.f = self.s.makefile("rwb")
        self.id = 0
        self.exited = {}  # terminal/exited params by terminal, until taken

    def send(self, method, params, flush=True):
        self.id += 1
        self.f.write((json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params}) + "\n").encode())
        if flush:
            self.f.flush()
        return self.id

    def note(self, m):
        if m.get("method") == "terminal/exited":
            self.exited[m["params"]["terminalId"]] = m["params"]

    def reply(self, i):
        while True:
            m = json.loads(self.f.readline())
            if m.get("id") == i:
                if "error" in m:
                    raise RuntimeError(m["error"]["message"])
                return m["result"]
            self.note(m)

    def exit_of(self, tid):
        while tid not in self.exited:
            self.note(json.loads(self.f.readline()))
        return self.exited.pop(tid)

    def call(self, method, params):
        return self.reply(self.send(method, params))


def start_service(pmon, d, *args):
    path = os.path.join(d, "s.sock")
    p = subprocess.Popen([pmon, "serve", "-q", "--listen", path, *args])
    # A bench that fails half-way does not leave its service running.
    atexit.register(lambda: p.poll() is None and (p.terminate(), p.wait()))
    while not os.path.exists(path):
        time.sleep(0.01)
    return p, path


def cgroup2_root():
    for line in open("/proc/self/mountinfo"):
        f = line.split()
        if f[f.index("-") + 1] == "cgroup2":
            return f[4]
    return None


def raw_cgroup_kill(n, graceful=False):
    """n `sleep 600`, each moved into a leaf of its own below a scratch
    cgroup of ours (as pmon's jobs are), then timed: a write of 1 to every
    leaf's cgroup.kill, then until every leaf's cgroup.events says
    populated 0 and every sleep is reaped. No pmon. ms, or None when there
    is no cgroup2 to write in. graceful: instead of the kill, each leaf's
    cgroup.procs is read and every process listed is sent SIGTERM and
    SIGCONT, as a graceful stop begins (the sleeps end on the TERM)."""
    root = cgroup2_root()
    if root is None:
        print("raw cgroup.kill: no cgroup2 mounted")
        return None
    own = next((l[3:] for l in open("/proc/self/cgroup").read().splitlines() if l.startswith("0::")), "/")
    base = os.path.join(root, own.lstrip("/"), "pmon-bench-%d" % os.getpid())
    try:
        os.mkdir(base)
    except OSError as e:
        print("raw cgroup.kill: cannot make %s (%s)" % (base, e.strerror))
        return None
    leaves, procs, events = [], [], []
    try:
        for i in range(n):
            leaf = os.path.join(base, "l%d" % i)
            os.mkdir(leaf)
            leaves.append(leaf)
            procs_file = os.path.join(leaf, "cgroup.procs")
            procs.append(subprocess.Popen(["sleep", "600"], preexec_fn=lambda f=procs_file: open(f, "w").write("0")))
            events.append(open(os.path.join(leaf, "cgroup.events"), "rb", buffering=0))
        poller = select.poll()
        for e in events:
            poller.register(e, select.POLLPRI)
        by_fd = {e.fileno(): e for e in events}
        t0 = time.monotonic()
        for leaf in leaves:
            if graceful:
                with open(os.path.join(leaf, "cgroup.procs"), "rb") as listing:
                    for pid in listing.read().split():
                        os.kill(int(pid), signal.SIGTERM)
                        os.kill(int(pid), signal.SIGCONT)
                continue
            with open(os.path.join(leaf, "cgroup.kill"), "w") as k:
                k.write("1")
        left = set(by_fd)

        def populated(e):
            e.seek(0)
            return b"populated 1" in e.read()
        left = {fd for fd in left if populated(by_fd[fd])}
        while left:
            for fd, _ in poller.poll(10000):
                if fd in left and not populated(by_fd[fd]):
                    left.discard(fd)
        for p in procs:
            p.wait()
        return (time.monotonic() - t0) * 1000
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for e in events:
            e.close()
        for leaf in leaves:
            try:
                os.rmdir(leaf)
            except OSError:
                pass
        os.rmdir(base)
