# SPDX-License-Identifier: Apache-2.0
# Terminal ids cannot be guessed: 200 creates give 200 distinct ids, each
# "t" and 16 hex digits, none of them a counter's value (t1, t2, ...) and
# no run of them counting up; terminal/list still shows jobs in the order
# they were created.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
PYTHONPATH=$(dirname "$0") python3 - "$SOCK" <<'EOF' || fail "terminal ids"
import re, sys
from serve_rpc import Rpc
c = Rpc(sys.argv[1])
ids = []
for _ in range(200):
    ids.append(c.call("terminal/create", {"command": "true"})["terminalId"])
for i in ids:
    if not re.fullmatch(r"t[0-9a-f]{16}", i):
        raise SystemExit("id %r is not t and 16 hex digits" % i)
if len(set(ids)) != 200:
    raise SystemExit("%d distinct ids of 200" % len(set(ids)))
counter = {"t%d" % n for n in range(100000)} | {"t%016x" % n for n in range(100000)}
if counter & set(ids):
    raise SystemExit("ids a counter would give: %s" % sorted(counter & set(ids))[:5])
vals = [int(i[1:], 16) for i in ids]
steps = {b - a for a, b in zip(vals, vals[1:])}
if len(steps) < 150:
    raise SystemExit("the ids go up in %d distinct steps only: %s" % (len(steps), ids[:5]))
if vals == sorted(vals) or vals == sorted(vals, reverse=True):
    raise SystemExit("the ids are in order: %s" % ids[:5])
listed = [t["terminalId"] for t in c.call("terminal/list", {})["terminals"]]
if listed != ids:
    raise SystemExit("terminal/list is not in creation order")
for i in ids:
    c.call("terminal/release", {"terminalId": i})
EOF
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
