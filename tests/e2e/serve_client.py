#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A line pipe between stdin/stdout and a pmon serve socket (the tests' client).

serve_client.py SOCKET   forwards each stdin line to the socket and each line
                         the service sends to stdout; exits (closing the
                         connection) at EOF on stdin or when the service hangs up.
"""
import os
import selectors
import socket
import sys

# Other clients' fifo ends the shell handed down: holding them would keep
# their connections from seeing EOF.
os.closerange(3, 1024)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
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
                sys.exit(0)
            # Whole lines only, so a reader of the output never sees half a message.
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
                sys.exit(0)
            s.sendall(data)
