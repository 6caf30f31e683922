# SPDX-License-Identifier: Apache-2.0
"""A `pmon mcp` on stdin/stdout, for the scenarios' own Python (import it
with the scenario directory on PYTHONPATH): initialized on start, its
tools called one at a time, the log messages it sends kept in `logs`."""
import json
import subprocess


class Mcp:
    def __init__(self, pmon, *flags):
        self.p = subprocess.Popen([pmon, "mcp", *flags], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        self.n = 0
        self.logs = []
        self.req("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "t", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.p.stdin.write(json.dumps(message) + "\n")
        self.p.stdin.flush()

    def req(self, method, params):
        """The result of a request; notifications before it are kept
        (log messages) or passed over."""
        self.n += 1
        self.send({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        while True:
            m = json.loads(self.p.stdout.readline())
            if m.get("method") == "notifications/message":
                self.logs.append(m["params"]["data"])
            if m.get("id") == self.n:
                return m["result"]

    def tool(self, name, args):
        """A tool's result; one that is an error ends the scenario."""
        r = self.req("tools/call", {"name": name, "arguments": args})
        assert not r.get("isError"), r
        return r

    def close(self):
        """Its stdin closed: pmon mcp stops every job and exits."""
        self.p.stdin.close()
        return self.p.wait(timeout=60)
