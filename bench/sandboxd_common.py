# SPDX-License-Identifier: Apache-2.0
"""What the sandboxd benchmarks share: a `pmon sandboxd` on 127.0.0.1 with
ports of its own choosing, and a gRPC stub of its process service (stubs
generated from pmon's .proto: PYTHONPATH=BUILD/generated/python)."""
import atexit
import os
import re
import subprocess
import time

import grpc
from process.v1 import process_pb2_grpc as pbg


def start_sandboxd(pmon, d, *extra, name="ws"):
    """Starts PMON sandboxd with its root in D/NAME and EXTRA flags; returns
    (process, channel, stub) once it says where it listens."""
    root = os.path.join(d, name)
    os.mkdir(root)
    err = open(os.path.join(d, name + ".err"), "w+")
    p = subprocess.Popen([pmon, "sandboxd", "--listen-host", "127.0.0.1", "--grpc-port", "0", "--rest-port", "0",
                          "--root-dir", root, *extra], stderr=err)
    # A bench that fails half-way (another daemon that does not start) does
    # not leave this one running.
    atexit.register(lambda: p.poll() is None and (p.terminate(), p.wait()))
    for _ in range(3000):
        err.seek(0)
        m = re.search(r"on 127\.0\.0\.1:(\d+)", err.read())
        if m or p.poll() is not None:
            break
        time.sleep(0.01)
    if not m:
        p.kill()
        p.wait()
        raise RuntimeError("pmon sandboxd did not say where it listens: " + open(err.name).read())
    ch = grpc.insecure_channel("127.0.0.1:%s" % m.group(1))
    return p, ch, pbg.ProcessServiceStub(ch)
