# SPDX-License-Identifier: Apache-2.0
# Why a job ended is in its status, not only in its report, with the
# report's words: terminal/exited, terminal/list and terminal/wait_for_exit
# carry timedOut, stoppedBy, oomKilled and pidsMaxHit:
# - a job killed with terminal/kill: stoppedBy "kill" (in terminal/list
#   from the moment its stop begins), timedOut false;
# - a job its idleTimeoutMs stopped: stoppedBy "idle timeout", timedOut as
#   the report's timed_out (true);
# - a job that exited by itself: stoppedBy null, timedOut false;
# - in each, oomKilled and pidsMaxHit are the report's oom_killed and
#   pids_max_hit (null where no such limit was set).
# pmon mcp's wait and list say stopped_by of a killed job too; start's
# timeout_s stops the job and its daemon, and timeout_s 0 is no timeout.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
cat > "$t/status.py" <<'PY'
import json, socket, sys, time
from serve_rpc import Rpc

FACTS = ("timedOut", "stoppedBy", "oomKilled", "pidsMaxHit")


class Conn(Rpc):
    """A connection, and the terminal/exited notifications it reads."""

    def notified(self, tid):
        """The job's terminal/exited params (20 s at most)."""
        return super().notified("terminal/exited", lambda p: p["terminalId"] == tid)

    def listed(self, tid):
        return [t for t in self.call("terminal/list", {})["terminals"] if t["terminalId"] == tid][0]


def same_as_report(where, got, rep):
    want = {"timedOut": rep["timed_out"], "stoppedBy": rep["job"]["stoppedBy"],
            "oomKilled": rep["oom_killed"], "pidsMaxHit": rep["pids_max_hit"]}
    have = {k: got.get(k, "(missing)") for k in FACTS}
    if have != want:
        raise SystemExit("%s says %s, the report %s" % (where, have, want))


c = Conn(sys.argv[1])

# Killed: stoppedBy "kill" while it stops or once it is over, and at its end
# in the notification, the list and the wait, as the report says.
tid = c.call("terminal/create", {"command": "sleep", "args": ["1000"]})["terminalId"]
running = c.listed(tid)
if running["stoppedBy"] is not None or running["timedOut"] is not False:
    raise SystemExit("a running job's list entry says it was stopped: %s" % running)
c.call("terminal/kill", {"terminalId": tid})
note = c.notified(tid)
rep = c.call("terminal/report", {"terminalId": tid})
if note["stoppedBy"] != "kill" or note["timedOut"] is not False:
    raise SystemExit("terminal/exited of a killed job: %s" % note)
same_as_report("terminal/exited", note, rep)
same_as_report("terminal/list", c.listed(tid), rep)
w = c.call("terminal/wait_for_exit", {"terminalId": tid})
if w["signal"] != "SIGTERM":
    raise SystemExit("wait_for_exit of a killed job: %s" % w)
same_as_report("terminal/wait_for_exit", w, rep)
print("ok: killed: stoppedBy kill in terminal/exited, terminal/list, terminal/wait_for_exit")

# Stopped by its idle timeout: "idle timeout", timed out as the report says.
tid = c.call("terminal/create", {"command": "sh", "args": ["-c", "echo hi; exec sleep 1000"],
                                 "idleTimeoutMs": 300})["terminalId"]
w = c.call("terminal/wait_for_exit", {"terminalId": tid, "timeoutMs": 20000})
if w.get("running"):
    raise SystemExit("the idle job was not stopped: %s" % w)
rep = c.call("terminal/report", {"terminalId": tid})
if w["stoppedBy"] != "idle timeout" or w["timedOut"] is not True or rep["timed_out"] is not True:
    raise SystemExit("wait_for_exit of an idle-timed-out job: %s (report timed_out %s)" % (w, rep["timed_out"]))
same_as_report("terminal/wait_for_exit", w, rep)
same_as_report("terminal/exited", c.notified(tid), rep)
same_as_report("terminal/list", c.listed(tid), rep)
print("ok: idle timeout: stoppedBy 'idle timeout', timedOut true")

# Ended by itself: nothing stopped it; the limits' facts are the report's
# (false where a limit was set, as the default pids limit, and not hit;
# null where none was).
tid = c.call("terminal/create", {"command": "sh", "args": ["-c", "exit 3"]})["terminalId"]
w = c.call("terminal/wait_for_exit", {"terminalId": tid, "timeoutMs": 20000})
rep = c.call("terminal/report", {"terminalId": tid})
if w["exitCode"] != 3 or w["stoppedBy"] is not None or w["timedOut"] is not False:
    raise SystemExit("wait_for_exit of a job that exited: %s" % w)
same_as_report("terminal/wait_for_exit", w, rep)
same_as_report("terminal/exited", c.notified(tid), rep)
same_as_report("terminal/list", c.listed(tid), rep)
print("ok: exited by itself: stoppedBy null; oomKilled %s, pidsMaxHit %s as the report" % (w["oomKilled"], w["pidsMaxHit"]))
PY
out=$(PYTHONPATH="$(dirname "$0")" timeout 120 python3 "$t/status.py" "$SOCK") || {
  echo "$out"
  cat "$t/serve.err" >&2
  fail "job status: $out"
}
echo "$out"

# pmon mcp: wait and list of a killed job say stopped_by, as its log message.
PYTHONPATH="$(dirname "$0")" python3 - "$PMON" > "$t/mcp.out" 2>&1 <<'PY' || fail "pmon mcp: $(cat "$t/mcp.out")"
import sys
from mcp_stdio import Mcp
mcp = Mcp(sys.argv[1])
tool = mcp.tool
jid = tool("start", {"command": "sleep 1000"})["structuredContent"]["id"]
tool("kill", {"id": jid})
w = tool("wait", {"id": jid})
s = w["structuredContent"]
assert s["running"] is False and s["stopped_by"] == "kill" and s["timed_out"] is False, s
assert "stopped: kill" in w["content"][0]["text"], w
assert "oom_killed" in s and "pids_max_hit" in s, s
job = [j for j in tool("list", {})["structuredContent"]["jobs"] if j["id"] == jid][0]
assert job["stopped_by"] == "kill" and job["timed_out"] is False, job
# The log message of its end says so too (it came before kill's answer).
ended = [d for d in mcp.logs if d.get("id") == jid]
assert ended and ended[0]["stopped_by"] == "kill", mcp.logs


def alive(pid, start):
    try:
        with open("/proc/%s/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    return fields[19] == str(start) and fields[0] not in ("Z", "X")


def start_of(pid):
    with open("/proc/%s/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[19]


# timeout_s 0 on start is no timeout (docs/mcp.md): the job (by pid and
# start time) still runs once a job beside it, started after it with
# timeout_s 1, has been stopped by its timeout.
zid = tool("start", {"command": "sleep 1000", "timeout_s": 0})["structuredContent"]["id"]
zpid = [j["pid"] for j in tool("list", {})["structuredContent"]["jobs"] if j["id"] == zid][0]
zstart = start_of(zpid)
# A total timeout on start: the job and its setsid daemon (its pid and start
# time printed first) are stopped by it. The timeout leaves a loaded machine
# seconds to start the daemon; the job is over only by its timeout.
daemon_sh = 'setsid sh -c \'echo $$ $(cut -d" " -f22 /proc/$$/stat); exec sleep 1000\' & exec sleep 1000'
tid = tool("start", {"command": daemon_sh, "timeout_s": 4})["structuredContent"]["id"]
w = tool("wait", {"id": tid, "timeout_s": 60})["structuredContent"]
assert w["running"] is False and w["timed_out"] is True and w["stopped_by"] == "timeout", w
printed = tool("output", {"id": tid})["structuredContent"]["output"].split()
assert len(printed) >= 2, "the daemon printed no pid and start time before the timeout: %r" % printed
dpid, dstart = printed[:2]
assert not alive(dpid, dstart), "the daemon %s of a timed-out job still runs" % dpid
z = [j for j in tool("list", {})["structuredContent"]["jobs"] if j["id"] == zid][0]
assert alive(zpid, zstart) and z["status"] == "running", "a start with timeout_s 0 was stopped: %s" % z
tool("kill", {"id": zid})
assert not alive(zpid, zstart), "the job with timeout_s 0 still runs after its kill was answered"
done = tool("start", {"command": "exit 0"})["structuredContent"]["id"]
w = tool("wait", {"id": done, "timeout_s": 20})["structuredContent"]
assert w["exit_code"] == 0 and w["stopped_by"] is None, w
mcp.close()
print("mcp ok")
PY
echo "ok: pmon mcp's wait, list and log message say stopped_by"

# pmon mcp at its job limit: a start past it is refused in MCP's words (a
# model stops jobs, it never releases them), and once the running job is
# killed, a new one starts in its place.
PYTHONPATH="$(dirname "$0")" python3 - "$PMON" > "$t/limit.out" 2>&1 <<'PY' || fail "pmon mcp --max-jobs 1: $(cat "$t/limit.out")"
import sys
from mcp_stdio import Mcp
mcp = Mcp(sys.argv[1], "--max-jobs", "1")
jid = mcp.tool("start", {"command": "sleep 1000"})["structuredContent"]["id"]
r = mcp.req("tools/call", {"name": "start", "arguments": {"command": "sleep 1000"}})
text = r["content"][0]["text"]
assert r.get("isError") and "too many running jobs (at most 1); stop some with kill first" in text, r
mcp.tool("kill", {"id": jid})
mcp.tool("start", {"command": "exit 0"})
mcp.close()
print("limit ok")
PY
echo "ok: pmon mcp at its job limit says so in its words, and kill makes room"
pass
