# SPDX-License-Identifier: Apache-2.0
"""reply_flood.py SOCKET STREAMS: the load of the memory budget's scenarios.
Another client starts a job that runs on; a job writes 16 MiB of control
bytes (six bytes each in JSON) on stdout, and on stderr too when STREAMS is
2; ten connections each ask one terminal/output of it (maxBytes 16 MiB)
and never read their answers. Exits non-zero unless every request was read
and answered (a later connection's request answered) and the other job
still runs; that job is then killed."""
import json
import socket
import sys

from serve_rpc import Rpc

sock, streams, MiB = sys.argv[1], int(sys.argv[2]), 1 << 20
other = Rpc(sock)
keep = other.call("terminal/create", {"command": "sleep", "args": ["600"]})["terminalId"]
rpc = Rpc(sock)
cmd = "head -c 16777216 /dev/zero | tr '\\0' '\\1'"
line = cmd if streams == 1 else f"{cmd}; {cmd} >&2"
job = rpc.call("terminal/create", {"command": "sh", "args": ["-c", line], "outputByteLimit": 16 * MiB})["terminalId"]
rpc.call("terminal/wait_for_exit", {"terminalId": job})
ask = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "terminal/output",
                  "params": {"terminalId": job, "maxBytes": 16 * MiB}}) + "\n"
idle = []
for _ in range(10):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(ask.encode())
    idle.append(s)
# Each is answered (the service builds its reply) once it has read it: a
# request of a later connection answered means all ten were.
Rpc(sock).call("terminal/list", {})
jobs = {j["terminalId"]: j["status"] for j in other.call("terminal/list", {})["terminals"]}
print(f"the other client's job: {jobs.get(keep)}")
assert jobs.get(keep) == "running", jobs
other.call("terminal/kill", {"terminalId": keep})
