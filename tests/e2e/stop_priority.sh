# SPDX-License-Identifier: Apache-2.0
# While pmon stops a tree it runs under SCHED_RR (pmon run, on every
# backend), or, in the job service, whose one thread stops every job,
# kStopBoost (10) nice levels above its own priority (SCHED_RR where it
# finds the tree by walking /proc: subreaper, pgroup), so that a tree that
# keeps the CPUs busy cannot starve its own stop; the tree keeps the
# priority it was started with, and pmon takes its own back once the stop
# is over. Seen in the kernel's /proc/PID/stat (the nice value is field 19,
# the policy field 41):
#  a. pmon run: during the grace period given to a process that ignores
#     SIGTERM, pmon is raised and that process is not (in a PID namespace
#     the namespace's init, which passes the signals on, is raised as
#     well); a call with a --timeout is raised from its start;
#  b. the job service (its backend here does not walk /proc): while one
#     job's stop waits out its grace, the thread that stops it is raised by
#     nice levels, a job started meanwhile starts at the service's own
#     value, and once the stop is over no thread is raised.
# Raising a priority takes CAP_SYS_NICE or RLIMIT_NICE: without either
# there is nothing to see, and the scenario skips.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/escapes.inc"

nice_of() {  # PID or PID/task/TID: its nice value, or empty
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  s=${s##*) }
  set -- $s
  echo "${17}"
}
ppid_of() {  # PID: its parent's pid, or empty
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  s=${s##*) }
  set -- $s
  echo "$2"
}
policy_of() {  # PID: its scheduling policy (0 SCHED_OTHER, 2 SCHED_RR), or empty
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  s=${s##*) }
  set -- $s
  echo "${39}"
}
before=$(nice_of $$)
want=$(( before - 10 < -20 ? -20 : before - 10 ))
# (Tried in a subshell: this shell keeps $before.)
if ! (renice -n "$want" -p $BASHPID >/dev/null 2>&1 && [ "$(nice_of $BASHPID)" = "$want" ]); then
  skip "this user may not raise a priority (CAP_SYS_NICE or RLIMIT_NICE)"
fi
[ "$(nice_of $$)" = "$before" ] || fail "the scenario's own shell changed its nice value"

# a. pmon run, on every backend: the main exits, a TERM-ignoring process is
# left, the stop gives it 2 s of grace.
for b in $(backends); do
  rm -f "$t/procs"
  "$PMON" run -q --confine "$b" --grace 2s --report "$t/r.json" -- \
    "$ESCAPER" "$t/procs" -x exit:0 name=ign,ignore &
  pmon_pid=$!
  record_pid $pmon_pid
  raised="policy 2 nice $before"
  seen=
  for _ in $(seq 200); do
    [ "policy $(policy_of $pmon_pid) nice $(nice_of $pmon_pid)" = "$raised" ] && { seen=1; break; }
    kill -0 $pmon_pid 2>/dev/null || break
    sleep 0.05
  done
  record_file "$t/procs"
  read -r ign _ < <(proc_named "$t/procs" ign)
  [ -n "$seen" ] ||
    fail "$b: pmon never ran at $raised during the stop (it is at policy $(policy_of $pmon_pid) nice $(nice_of $pmon_pid))"
  [ -n "$ign" ] && [ "policy $(policy_of "$ign") nice $(nice_of "$ign")" = "policy 0 nice $before" ] ||
    fail "$b: the stopped process (pid ${ign:-?}) runs at policy $(policy_of "${ign:-0}") nice $(nice_of "${ign:-0}"), not policy 0 nice $before"
  if [ "$b" = pidns ]; then
    # The namespace's init passes the stop's signals on: it runs at the
    # stop's priority too. The leftover's parent is that init (its own
    # parent exited).
    init=$(ppid_of "$ign")
    [ -n "$init" ] && [ "$(start_time_of "$init")" ] || fail "$b: no parent of the stopped process (pid $ign)"
    seen=
    for _ in $(seq 100); do
      [ "$(policy_of "$init")" = 2 ] && { seen=1; break; }
      sleep 0.05
    done
    [ -n "$seen" ] || fail "$b: the namespace's init (pid $init) never ran at policy 2 during the stop (policy $(policy_of "$init"))"
  fi
  rc=0; wait $pmon_pid || rc=$?
  [ $rc = 0 ] || fail "$b: pmon exit $rc, want 0"
  report_is -m "$b: the leftover was not killed after its grace" "$t/r.json" "leftovers[pid=$ign].action=SIGKILL"
  report_is -m "$b: cleanup not verified" "$t/r.json" cleanup_verified=true
  assert_all_gone "$b" "$t/procs"
  echo "ok: $b (pmon at $raised during the stop, the tree at policy 0 nice $before)"
done

# A call with a deadline to keep is raised from its start, long before
# its stop: here 60 s before it (a cancel ends it).
"$PMON" run -q --confine "$(backends | head -n1)" --timeout 60s -- sleep 600 &
pmon_pid=$!
record_pid $pmon_pid
seen=
for _ in $(seq 200); do
  [ "$(policy_of $pmon_pid)" = 2 ] && { seen=1; break; }
  sleep 0.05
done
kill -INT $pmon_pid
rc=0; wait $pmon_pid || rc=$?
[ -n "$seen" ] || fail "a call with --timeout 60s did not run at policy 2 before its stop"
[ $rc = 130 ] || fail "the cancelled call exited $rc, want 130"

# b. The job service.
. "$(dirname "$0")/serve.inc"
serve_start --grace 3s
PYTHONPATH="$(dirname "$0")" python3 - "$SOCK" "$SERVE_PID" "$before" "$want" <<'PY' || fail "see above"
import glob, os, sys, threading, time
from serve_rpc import Rpc
sock, svc, before, want = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
call = Rpc(sock).call
def nice(path):
    s = open(path).read()
    return s[s.rindex(")") + 2:].split()[16]
def thread_nices():
    out = []
    for p in glob.glob("/proc/%d/task/*/stat" % svc):
        try:
            out.append(nice(p))
        except OSError:
            pass
    return out
def record(pid, start):
    with open(os.environ["PMON_TEST_STATE"] + "/pids", "a") as f:
        f.write("%s %s\n" % (pid, start))
if set(thread_nices()) != {before}:
    sys.exit("the service's threads start at %s, not %s" % (thread_nices(), before))
# A job that ignores SIGTERM: its stop waits out the whole grace.
a = call("terminal/create", {"command": "sh", "args": ["-c", 'trap "" TERM; cut -d" " -f1,22 /proc/$$/stat; exec sleep 60']})["terminalId"]
deadline = time.monotonic() + 10
while not call("terminal/output", {"terminalId": a})["output"]:
    if time.monotonic() > deadline:
        sys.exit("job a printed nothing")
    time.sleep(0.02)
pid, start = call("terminal/output", {"terminalId": a})["output"].split()
record(pid, start)
# terminal/kill answers once the tree is verified gone: asked on a
# connection of its own, while this one looks.
killed = {}
killer = threading.Thread(target=lambda: killed.update(r=Rpc(sock).call("terminal/kill", {"terminalId": a})))
killer.start()
deadline = time.monotonic() + 10
while want not in thread_nices():
    if time.monotonic() > deadline:
        sys.exit("no thread of the service was raised to %s during the stop: %s" % (want, thread_nices()))
    time.sleep(0.02)
# Started while a's stop waits: at the service's own value.
b = call("terminal/create", {"command": "sh", "args": ["-c", 'cut -d" " -f1,19,22 /proc/$$/stat']})["terminalId"]
st = call("terminal/wait_for_exit", {"terminalId": b})
bpid, bnice, bstart = call("terminal/output", {"terminalId": b})["output"].split()
record(bpid, bstart)
if st.get("exitCode") != 0 or bnice != before:
    sys.exit("a job started during another's stop runs at nice %s (exit %s), not %s" % (bnice, st, before))
if want not in thread_nices():
    sys.exit("the raise ended before a's stop did: %s" % thread_nices())
killer.join(30)
if not killed.get("r", {}).get("cleanupVerified"):
    sys.exit("terminal/kill of job a: %s" % killed)
st = call("terminal/wait_for_exit", {"terminalId": a})
if st.get("signal") not in ("SIGKILL", "KILL", 9):
    sys.exit("job a did not end by SIGKILL after its grace: %s" % st)
if not call("terminal/release", {"terminalId": a})["cleanupVerified"]:
    sys.exit("job a: not verified gone")
call("terminal/release", {"terminalId": b})
deadline = time.monotonic() + 10
while set(thread_nices()) != {before}:
    if time.monotonic() > deadline:
        sys.exit("after the stop the service's threads run at %s, not %s" % (thread_nices(), before))
    time.sleep(0.02)
print("ok: the job service (raised during the stop, the job started meanwhile at %s)" % before)
PY
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
