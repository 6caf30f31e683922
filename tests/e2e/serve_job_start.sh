# SPDX-License-Identifier: Apache-2.0
# A job starts as any command should, however the service starts it: with
# default signal dispositions (the service itself ignores SIGPIPE), an
# empty signal mask, and the service's whole CPU mask, while the service
# keeps its own mask. Twenty jobs, each read by the
# kernel's own /proc/self/status of the command.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
PYTHONPATH="$(dirname "$0")" python3 - "$SOCK" "$SERVE_PID" <<'PY' || fail "see above"
import os, re, sys
from serve_rpc import Rpc
sock, svc = sys.argv[1], int(sys.argv[2])
call = Rpc(sock).call
def svc_mask():
    return re.search(r"^Cpus_allowed_list:\s*(\S+)", open("/proc/%d/status" % svc).read(), re.M).group(1)
before = svc_mask()
for i in range(20):
    # Its first line: "pid start-time" of itself (exec keeps both).
    tid = call("terminal/create", {"command": "sh", "args": ["-c", 'cut -d" " -f1,22 /proc/$$/stat; exec grep -E "^(SigIgn|SigBlk|Cpus_allowed_list):" /proc/self/status']})["terminalId"]
    st = call("terminal/wait_for_exit", {"terminalId": tid})
    if st.get("exitCode") != 0:
        sys.exit("job %d: %s" % (i, st))
    out = call("terminal/output", {"terminalId": tid})["output"]
    first, out = out.split("\n", 1)
    pid, start = first.split()
    with open(os.environ["PMON_TEST_STATE"] + "/pids", "a") as f:
        f.write("%s %s\n" % (pid, start))
    lines = dict(l.split(":", 1) for l in out.splitlines())
    if int(lines["SigIgn"], 16) != 0:
        sys.exit("job %d ignores signals: %s" % (i, out))
    if int(lines["SigBlk"], 16) != 0:
        sys.exit("job %d has signals blocked: %s" % (i, out))
    if lines["Cpus_allowed_list"].strip() != before:
        sys.exit("job %d runs on CPUs %s, the service on %s" % (i, lines["Cpus_allowed_list"].strip(), before))
    if not call("terminal/release", {"terminalId": tid})["cleanupVerified"]:
        sys.exit("release of job %d: not verified gone" % i)
    try:
        now = open("/proc/%s/stat" % pid).read()
        if now[now.rindex(")") + 2:].split()[19] == start and now[now.rindex(")") + 2] != "Z":
            sys.exit("release of job %d: its process %s is still there" % (i, pid))
    except OSError:
        pass
    if svc_mask() != before:
        sys.exit("after job %d the service runs on CPUs %s, not %s" % (i, svc_mask(), before))
PY
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass "20 jobs: default dispositions, no blocked signal, the service's CPU mask"
