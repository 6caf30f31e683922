# SPDX-License-Identifier: Apache-2.0
"""The scenarios' JSON-RPC client of a pmon serve socket.

From Python (the scenario directory on PYTHONPATH): Rpc, FdRpc.
From shell (serve.inc):
  serve_rpc.py pipe SOCKET      forwards each stdin line to the socket and
                                each line the service sends to stdout; exits
                                (closing the connection) at EOF on stdin or
                                when the service hangs up
  serve_rpc.py reply FILE ID    prints the first whole line of FILE (lines
                                the pipe wrote) that answers request ID;
                                exit 1: none yet
  serve_rpc.py call SOCKET METHOD PARAMS-JSON
                                one request on a connection of its own:
                                prints the whole answer (result or error)
"""
import array
import json
import os
import selectors
import socket
import subprocess
import sys


def connect(path):
    """A socket connected to PATH (a socket given is taken as it is)."""
    if isinstance(path, socket.socket):
        return path
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    return s


class Rpc:
    """A connection to a socket path (or a connected socket). The
    notifications it reads are kept in `notes`."""

    def __init__(self, path):
        self.s = connect(path)
        self.f = self.s.makefile("rwb")
        self.n = 0
        self.notes = []

    @classmethod
    def stdio(cls, pmon, *flags):
        """A `pmon serve -q --stdio` of its own, on pipes; close() ends it
        and returns its exit status."""
        self = cls.__new__(cls)
        self.p = subprocess.Popen([pmon, "serve", "-q", "--stdio", *flags],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.f = _Pipes(self.p.stdout, self.p.stdin)
        self.n = 0
        self.notes = []
        return self

    def close(self, timeout=30):
        self.f.close()
        return self.p.wait(timeout) if hasattr(self, "p") else None

    def read(self):
        """The next message (a notification is kept in `notes` too)."""
        line = self.f.readline()
        if not line:
            raise SystemExit("the service closed the connection")
        m = json.loads(line)
        if "method" in m and "id" not in m:
            self.notes.append(m)
        return m

    def message(self, method, params):
        """Sends a request and returns its whole answer (result or error);
        notifications before it are kept."""
        self.n += 1
        self.f.write((json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}) + "\n").encode())
        self.f.flush()
        while True:
            m = self.read()
            if m.get("id") == self.n and "method" not in m:
                return m

    def notified(self, method, match, timeout=20):
        """The params of the first notification METHOD whose params MATCH
        (a function) holds, read for up to TIMEOUT seconds (on a socket)."""
        def seen():
            return [n["params"] for n in self.notes if n["method"] == method and match(n["params"])]
        self.s.settimeout(timeout)
        try:
            while not seen():
                self.read()
        except socket.timeout:
            raise SystemExit("no %s within %d s" % (method, timeout))
        finally:
            self.s.settimeout(None)
        return seen()[0]

    def call(self, method, params):
        """The result of a request; an error answer ends the scenario."""
        m = self.message(method, params)
        if "error" in m:
            raise SystemExit("%s: %s" % (method, m["error"]))
        return m["result"]


class _Pipes:
    """A read pipe and a write pipe as one file."""

    def __init__(self, r, w):
        self.r, self.w = r, w
        self.readline = r.readline
        self.write = w.write
        self.flush = w.flush

    def close(self):
        self.w.close()


class FdRpc:
    """A connection (a socket path or a connected socket) that keeps the
    fds that come with answers (a stream's pipe, terminal/output with
    stream)."""

    def __init__(self, path):
        self.s = connect(path)
        self.buf, self.fds, self.n = b"", [], 0

    def message(self, method, params):
        """Sends a request; its whole answer and the fd that came with it (or None)."""
        self.n += 1
        self.s.sendall((json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}) + "\n").encode())
        while True:
            while b"\n" not in self.buf:
                data, anc, _, _ = self.s.recvmsg(1 << 20, socket.CMSG_SPACE(4 * 4))
                if not data:
                    raise SystemExit("the service closed the connection")
                for level, kind, raw in anc:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                        a = array.array("i")
                        a.frombytes(raw[:len(raw) - len(raw) % 4])
                        self.fds += list(a)
                self.buf += data
            line, self.buf = self.buf.split(b"\n", 1)
            m = json.loads(line)
            if m.get("id") == self.n:
                return m, (self.fds.pop(0) if self.fds else None)


def pipe(path):
    # Other clients' fifo ends the shell handed down: holding them would
    # keep their connections from seeing EOF.
    os.closerange(3, 1024)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    sel = selectors.DefaultSelector()
    sel.register(s, selectors.EVENT_READ)
    sel.register(sys.stdin.fileno(), selectors.EVENT_READ)
    out = sys.stdout.buffer
    pending = b""
    while True:
        for key, _ in sel.select():
            if key.fileobj is s:
                data = s.recv(1 << 20)
                if not data:
                    return 0
                # Whole lines only, so a reader of the output never sees
                # half a message.
                pending += data
                cut = pending.rfind(b"\n") + 1
                if cut:
                    out.write(pending[:cut])
                    out.flush()
                    pending = pending[cut:]
            else:
                data = os.read(sys.stdin.fileno(), 1 << 20)
                if not data:
                    s.close()
                    return 0
                s.sendall(data)


def reply(path, n):
    # A line still being written does not parse: not the reply yet.
    for line in open(path, encoding="utf-8"):
        try:
            m = json.loads(line)
        except ValueError:
            continue
        if m.get("id") == n and "method" not in m:
            sys.stdout.write(line)
            return 0
    return 1


if __name__ == "__main__":
    if sys.argv[1] == "pipe":
        sys.exit(pipe(sys.argv[2]))
    if sys.argv[1] == "reply":
        sys.exit(reply(sys.argv[2], int(sys.argv[3])))
    if sys.argv[1] == "call":
        print(json.dumps(Rpc(sys.argv[2]).message(sys.argv[3], json.loads(sys.argv[4]))))
        sys.exit(0)
    sys.exit("serve_rpc.py: pipe SOCKET | reply FILE ID | call SOCKET METHOD PARAMS")
