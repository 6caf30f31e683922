# SPDX-License-Identifier: Apache-2.0
# pmon serve where the subreaper backend is all there is (as in a container
# with neither cgroup2 nor PID namespaces; here asked for with --confine
# subreaper): each job runs under a pmon of its own, the subreaper of its
# processes, so jobs stay apart. Two jobs each start a setsid daemon that
# ignores TERM: a kill of one stops all of its processes (checked by pid
# and start time) and none of the other's; a third job's main exiting stops
# what it left, and its output and exit status come back as the command
# gave them; a job's command is the client's, and the port a setsid
# grandchild listens on is found below the job's own pmon; a command that
# is not there is refused as on any backend. The service's SIGTERM stops
# the running job, and so does its SIGKILL (each job's pmon sees it go).
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start --confine subreaper --grace 1s
PYTHONPATH="$(dirname "$0")" python3 - "$SOCK" "$HELPERS/escaper" "$t" <<'PY' || fail "see above"
import os, signal, socket, sys, time
from serve_rpc import Rpc
sock, escaper, t = sys.argv[1], sys.argv[2], sys.argv[3]
rpc = Rpc(sock)
call = rpc.call
state = os.environ["PMON_TEST_STATE"] + "/pids"

def procs(path):
    out = []
    for line in open(path):
        pid, st, name = line.split()
        out.append((int(pid), int(st), name))
        with open(state, "a") as f:
            f.write("%s %s\n" % (pid, st))
    return out

def alive(pid, st):
    try:
        s = open("/proc/%d/stat" % pid).read()
    except OSError:
        return False
    f = s[s.rindex(")") + 2:].split()
    return int(f[19]) == st and f[0] != "Z"

def wait_file(path, n):
    end = time.monotonic() + 30
    while time.monotonic() < end:
        if os.path.exists(path) and len(open(path).read().splitlines()) >= n:
            return
        time.sleep(0.02)
    sys.exit("%s never got %d lines" % (path, n))

def own_pmon_of(main):
    return int(open("/proc/%d/stat" % main[0]).read().rsplit(")", 1)[1].split()[1])

def ended_and_reaped(ps, rep, what):
    """Each of ps gone, not even a zombie, and named in the report's leftovers."""
    left = [p for p in ps if alive(p[0], p[1])]
    if left:
        sys.exit("%s: %s still running after its end" % (what, left))
    unreaped = [p for p in ps if os.path.exists("/proc/%d" % p[0]) and
                int(open("/proc/%d/stat" % p[0]).read().rsplit(")", 1)[1].split()[19]) == p[1]]
    if unreaped:
        sys.exit("%s: %s left unreaped" % (what, unreaped))
    named = {l["pid"] for l in rep["leftovers"]}
    if not rep["cleanup_verified"] or not {p[0] for p in ps} <= named:
        sys.exit("%s: verified %s, leftovers %s, want all of %s" % (what, rep["cleanup_verified"], rep["leftovers"], ps))

a_out, b_out, c_out = t + "/a", t + "/b", t + "/c"
spec = "name=d,orphan,setsid,ignore"
a = call("terminal/create", {"command": escaper, "args": [a_out, "-x", "sleep", spec]})["terminalId"]
b = call("terminal/create", {"command": escaper, "args": [b_out, "-x", "sleep", spec]})["terminalId"]
wait_file(a_out, 2)
wait_file(b_out, 2)
pa, pb = procs(a_out), procs(b_out)
with open(t + "/b.procs", "w") as f:
    f.writelines("%d %d\n" % (p[0], p[1]) for p in pb)
commands = sorted(j["command"][0] for j in call("terminal/list", {})["terminals"])
if commands != [escaper, escaper]:
    sys.exit("the jobs' commands are not the client's: %s" % commands)

if not call("terminal/kill", {"terminalId": a})["cleanupVerified"]:
    sys.exit("kill of a job: not verified gone")
left = [p for p in pa if alive(p[0], p[1])]
if left:
    sys.exit("kill of a job left %s" % left)
if not all(alive(p[0], p[1]) for p in pb):
    sys.exit("kill of one job stopped the other's processes")
print("ok: a kill stopped its job's %d processes (a setsid daemon ignoring TERM too), not the other's" % len(pa))

c = call("terminal/create", {"command": "sh", "args": ["-c", '"$0" "$@"; echo done; exit 7', escaper, c_out, "-x", "exit:0", spec]})["terminalId"]
st = call("terminal/wait_for_exit", {"terminalId": c, "timeoutMs": 30000})
if st.get("exitCode") != 7:
    sys.exit("job c: %s, want exit code 7" % st)
out = call("terminal/output", {"terminalId": c})["output"]
if out != "done\n":
    sys.exit("job c's output: %r" % out)
pc = procs(c_out)
end = time.monotonic() + 10
while any(alive(p[0], p[1]) for p in pc) and time.monotonic() < end:
    time.sleep(0.02)
left = [p for p in pc if alive(p[0], p[1])]
if left:
    sys.exit("job c's main exited, and %s still runs" % left)
rep = call("terminal/report", {"terminalId": c})
daemon = [p for p in pc if p[2] == "d"]
if rep["command"] != ["sh", "-c", '"$0" "$@"; echo done; exit 7', escaper, c_out, "-x", "exit:0", spec]:
    sys.exit("job c's report names the command %s" % rep["command"])
if rep["confinement"] != "subreaper" or rep["confinement_weak"] or not rep["job"].get("ownPmon"):
    sys.exit("job c's report: confinement %s, weak %s, job %s" % (rep["confinement"], rep["confinement_weak"], rep["job"]))
if not daemon or daemon[0][0] not in [l["pid"] for l in rep["leftovers"]] or not rep["cleanup_verified"]:
    sys.exit("job c's report does not list its daemon %s among the leftovers stopped: %s" % (daemon, rep["leftovers"]))
print("ok: a job whose main exited: its output and exit status, and what it left (a setsid daemon) stopped and reported")

# A job whose own pmon does not stop its command (held here by SIGSTOP, as
# one that hangs): the service's last step (its SIGKILL after SIGTERM and
# SIGINT went unanswered) kills what is below that pmon too, in sessions of
# their own, and reaps them; the kill is verified only then.
s_out = t + "/s"
sj = call("terminal/create", {"command": escaper, "args": [s_out, "-x", "sleep", spec]})["terminalId"]
wait_file(s_out, 2)
ps_ = procs(s_out)
main = [p for p in ps_ if p[2] == "main"][0]
own = own_pmon_of(main)
with open(state, "a") as fh:
    fh.write("%d %d\n" % (own, int(open("/proc/%d/stat" % own).read().rsplit(")", 1)[1].split()[19])))
os.kill(own, signal.SIGSTOP)
r = call("terminal/kill", {"terminalId": sj})
if not r["cleanupVerified"]:
    sys.exit("a job whose own pmon was stopped: its kill is not verified: %s" % r)
ended_and_reaped(ps_, call("terminal/report", {"terminalId": sj}), "a job whose own pmon was stopped")
print("ok: a job whose own pmon hung: the service's last step killed and reaped its main and setsid daemon, "
      "and the report names them")

# A job whose own pmon is killed from outside (an out-of-memory kill, a
# stray kill -9): what it held is the service's now, orphans in sessions of
# their own. The job's end stops them (the daemon ignores TERM), reaps them
# and names them, and says verified only then; the other job's processes,
# held by a pmon that lives, are left alone.
k_out = t + "/k1"
kj = call("terminal/create", {"command": escaper, "args": [k_out, "-x", "sleep", spec]})["terminalId"]
wait_file(k_out, 2)
pk = procs(k_out)
own = own_pmon_of([p for p in pk if p[2] == "main"][0])
os.kill(own, signal.SIGKILL)
st = call("terminal/wait_for_exit", {"terminalId": kj, "timeoutMs": 30000})
if st.get("signal") != "SIGKILL":
    sys.exit("a job whose own pmon was killed: %s, want signal SIGKILL" % st)
ended_and_reaped(pk, call("terminal/report", {"terminalId": kj}), "a job whose own pmon was killed")
if not all(alive(p[0], p[1]) for p in pb):
    sys.exit("the end of a job whose own pmon was killed stopped another job's processes")
print("ok: a job whose own pmon was killed from outside: its orphans stopped, reaped and named; "
      "the other job's left running")

# Ports: found below the job's own pmon.
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
c = call("terminal/create", {"command": "python3", "args": ["-c", "import os, socket, time\nif os.fork(): time.sleep(300); os._exit(0)\nos.setsid()\ns = socket.socket(); s.bind(('127.0.0.1', %d)); s.listen()\ntime.sleep(300)" % port]})["terminalId"]
found = call("terminal/wait_for_port", {"terminalId": c, "timeoutMs": 20000})
if found.get("port") != port:
    sys.exit("wait_for_port: %s, want port %d" % (found, port))
print("ok: the port a setsid grandchild listens on is the job's")

m = rpc.message("terminal/create", {"command": "/no/such/program"})
if "No such file" not in str(m.get("error")):
    sys.exit("a command that is not there: %s" % m)
m = rpc.message("terminal/create", {"command": "no-such-program-here"})
if "command not found in PATH" not in str(m.get("error")):
    sys.exit("a command that is not in PATH: %s" % m)
print("ok: a command that is not there is refused")
PY
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $? (see $(cat "$t/serve.err"))"
while read -r pid st; do
  ! alive "$pid" "$st" || fail "the service's SIGTERM left process $pid of a running job"
done < "$t/b.procs"
echo "ok: the service's SIGTERM stopped the running job's processes"

# SIGKILL of the service: each job's pmon sees its parent go and stops its job.
rm -f "$SOCK"
serve_start --confine subreaper --grace 1s
PYTHONPATH="$(dirname "$0")" python3 - "$SOCK" "$HELPERS/escaper" "$t/k" <<'PY' || fail "see above"
import os, sys, time
from serve_rpc import Rpc
sock, escaper, out = sys.argv[1:]
rpc = Rpc(sock)
tid = rpc.call("terminal/create", {"command": escaper, "args": [out, "-x", "sleep", "name=d,orphan,setsid,ignore"]})["terminalId"]
end = time.monotonic() + 30
while not (os.path.exists(out) and len(open(out).read().splitlines()) >= 2):
    if time.monotonic() > end:
        sys.exit("the job never started its daemon: %s" % rpc.call("terminal/output", {"terminalId": tid}))
    time.sleep(0.02)
PY
record_file "$t/k"
kill -KILL "$SERVE_PID"
wait "$SERVE_PID" 2> /dev/null || true
for _ in $(seq 200); do
  left=0
  while read -r pid st _; do alive "$pid" "$st" && left=1; done < "$t/k"
  [ $left = 0 ] && break
  sleep 0.05
done
[ $left = 0 ] || fail "a SIGKILLed service's job is still running: $(cat "$t/k")"
echo "ok: SIGKILL of the service: the job's own pmon stopped it (its setsid daemon too)"
pass "each job under a pmon of its own: jobs stay apart, nothing is left"
