# SPDX-License-Identifier: Apache-2.0
# The service raises its soft limit of open files to the hard one, so that
# as many jobs fit as --max-jobs says (each holds about six fds); its jobs
# get the limits it was started with. Under a soft limit of 128 (hard
# 1024), 40 jobs run at once, more than 128 / 6; each sees 128 / 1024.
# Where the hard limit itself runs out, terminal/create says so in one
# clear error and the service goes on.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

# serve_under SOFT HARD: a service under those limits, $SERVE_PID.
serve_under() {
  rm -f "$SOCK"
  bash -c 'ulimit -Sn "$2" && ulimit -Hn "$3" && exec "$0" serve -q --listen "$1"' "$PMON" "$SOCK" "$1" "$2" \
    2> "$t/serve.err" &
  SERVE_PID=$!
  record_pid "$SERVE_PID"
  for i in $(seq 200); do [ -S "$SOCK" ] && break; sleep 0.05; done
  [ -S "$SOCK" ] || fail "pmon serve did not listen: $(cat "$t/serve.err")"
}

serve_under 128 1024
PYTHONPATH=$(dirname "$0") python3 - "$SOCK" <<'EOF' || fail "40 jobs under a soft limit of 128"
import sys
from serve_rpc import Rpc
r = Rpc(sys.argv[1])
ids = []
for i in range(40):
    m = r.message("terminal/create", {"command": "sleep", "args": ["1000"]})
    if "error" in m:
        sys.exit("job %d of 40 was refused: %s" % (i + 1, m["error"]["message"]))
    ids.append(m["result"]["terminalId"])
# What a job sees: the limits the service was started with.
t = r.call("terminal/create", {"command": "sh", "args": ["-c", "echo $(ulimit -Sn) $(ulimit -Hn)"]})["terminalId"]
r.call("terminal/wait_for_exit", {"terminalId": t})
out = r.call("terminal/output", {"terminalId": t})["output"]
if out.strip() != "128 1024":
    sys.exit("a job's limits of open files: %r, not '128 1024'" % out)
for i in ids:
    if not r.call("terminal/release", {"terminalId": i})["cleanupVerified"]:
        sys.exit("release of %s not verified" % i)
EOF
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"

# A hard limit of 64: some jobs start, then one is refused for want of
# fds, said as such; the service still answers.
serve_under 64 64
PYTHONPATH=$(dirname "$0") python3 - "$SOCK" <<'EOF' || fail "jobs past a hard limit of 64"
import sys
from serve_rpc import Rpc
r = Rpc(sys.argv[1])
started = []
for i in range(40):
    m = r.message("terminal/create", {"command": "sleep", "args": ["1000"]})
    if "error" in m:
        msg = m["error"]["message"]
        if "the service has no file descriptors left (its limit is 64 open files)" not in msg:
            sys.exit("job %d was refused with: %s" % (i + 1, msg))
        break
    started.append(m["result"]["terminalId"])
else:
    sys.exit("40 jobs started under a limit of 64 open files")
if not started:
    sys.exit("not even one job started")
if len(r.call("terminal/list", {})["terminals"]) != len(started):
    sys.exit("the refused job is listed")
for i in started:
    if not r.call("terminal/release", {"terminalId": i})["cleanupVerified"]:
        sys.exit("release of %s not verified" % i)
print("%d jobs under a hard limit of 64" % len(started))
EOF
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
