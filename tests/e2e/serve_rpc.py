# SPDX-License-Identifier: Apache-2.0
"""A JSON-RPC connection to a pmon serve socket, for the serve scenarios'
own Python (import it with the scenario directory on PYTHONPATH)."""
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
