# SPDX-License-Identifier: Apache-2.0
"""A JSON-RPC connection to a pmon serve socket, for the serve scenarios'
own Python (import it with the scenario directory on PYTHONPATH)."""
import array
import json
import socket


class Rpc:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.f = self.s.makefile("rwb")
        self.n = 0

    def message(self, method, params):
        """Sends a request and returns its whole answer (result or error);
        notifications before it are passed over."""
        self.n += 1
        self.f.write((json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}) + "\n").encode())
        self.f.flush()
        while True:
            m = json.loads(self.f.readline())
            if m.get("id") == self.n:
                return m

    def call(self, method, params):
        """The result of a request; an error answer ends the scenario."""
        m = self.message(method, params)
        if "error" in m:
            raise SystemExit("%s: %s" % (method, m["error"]))
        return m["result"]


class FdRpc:
    """A connection that keeps the fds that come with answers (a stream's
    pipe, terminal/output with stream)."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
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
