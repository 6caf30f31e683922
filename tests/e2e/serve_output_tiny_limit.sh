# SPDX-License-Identifier: Apache-2.0
# A job printing "é€😀" (2, 3 and 4 bytes) with outputBackpressure and an
# outputByteLimit of 1, 2 or 3 bytes, too small for some of its characters:
# a reader that follows with `since` still gets to the end (every one of
# the 9 bytes read, none dropped): a character that fits the limit whole,
# one that does not as U+FFFD.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
for limit in 1 2 3; do
  PYTHONPATH=$(dirname "$0") python3 - "$SOCK" "$limit" <<'EOF' || fail "outputByteLimit $limit"
import re, sys
from serve_rpc import Rpc

sock, limit = sys.argv[1], int(sys.argv[2])
c = Rpc(sock)
tid = c.call("terminal/create", {"command": "printf", "args": ["\u00e9\u20ac\U0001F600"],
                                 "outputBackpressure": True, "outputByteLimit": limit})["terminalId"]
text, since = "", 0
for _ in range(200):
    r = c.call("terminal/output", {"terminalId": tid, "since": since, "waitMs": 2000})
    if r["truncated"]:
        sys.exit("limit %d: a read after %d says bytes were dropped: %r" % (limit, since, r))
    new = r["next"] > since
    text += r["output"]
    since = r["next"]
    if r.get("exitStatus") is not None and not new:
        break
if since != 9:
    sys.exit("limit %d: the reads stopped at byte %d of 9, having %r" % (limit, since, text))
want = "".join(re.escape(ch) if len(ch.encode()) <= limit else "\ufffd+" for ch in "\u00e9\u20ac\U0001F600")
if not re.fullmatch(want, text):
    sys.exit("limit %d: read %r" % (limit, text))
c.call("terminal/release", {"terminalId": tid})
print("ok: limit %d: %r" % (limit, text))
EOF
done
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
