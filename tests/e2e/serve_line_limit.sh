# SPDX-License-Identifier: Apache-2.0
# A request line may be 1 MiB (1048576 bytes, its newline not counted):
# one of exactly that is answered, one a byte longer is refused with an
# error that says so, and the connection goes on.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
cat > "$t/lines.py" <<'PY'
import json, sys
from serve_rpc import Rpc
rpc = Rpc(sys.argv[1])
LIMIT = 1 << 20

def line(id, size):
    # A request padded with spaces (JSON allows them) to `size` bytes.
    head = json.dumps({"jsonrpc": "2.0", "id": id, "method": "terminal/list", "params": {}})
    return (head + " " * (size - len(head))).encode() + b"\n"

def answer():
    return json.loads(rpc.f.readline())

# Sent whole, so the newline comes in the same read as the last bytes.
rpc.f.write(line(1, LIMIT))
rpc.f.flush()
m = answer()
if m.get("id") != 1 or "result" not in m:
    raise SystemExit("a line of exactly %d bytes was not answered: %s" % (LIMIT, str(m)[:300]))
rpc.f.write(line(2, LIMIT + 1))
rpc.f.flush()
m = answer()
if "error" not in m or "line longer than 1048576 bytes" not in m["error"]["message"]:
    raise SystemExit("a line of %d bytes was not refused: %s" % (LIMIT + 1, str(m)[:300]))
rpc.f.write(line(3, 3 * LIMIT))
rpc.f.flush()
m = answer()
if "error" not in m or "line longer than" not in m["error"]["message"]:
    raise SystemExit("a line of %d bytes was not refused: %s" % (3 * LIMIT, str(m)[:300]))
# The connection goes on.
if "terminals" not in rpc.call("terminal/list", {}):
    raise SystemExit("no answer after the refused lines")
print("ok")
PY
out=$(PYTHONPATH="$(dirname "$0")" timeout 60 python3 "$t/lines.py" "$SOCK") || fail "line limit: $out"
pass
