# SPDX-License-Identifier: Apache-2.0
# The JSON report of DESIGN §4, field by field, with python3's json module:
# every outcome, leftovers, stop times, cpu_usec on the cgroup backend, null
# where the host does not account something, and the atomic write.
. "$(dirname "$0")/common.inc"

CG=$(awk '$9=="cgroup2"{print $5; exit}' /proc/self/mountinfo)

# check FILE BACKEND PYTHON-ASSERTIONS: the common fields, then the case's own
# (with r = the report).
check() {
  local file=$1 backend=$2 code=$3
  python3 - "$file" "$backend" "$CG" <<PY || fail "$backend: report check failed for $file: $(cat "$file")"
import json, sys, datetime
path, backend, cgmount = sys.argv[1:]
r = json.load(open(path))
def need(cond, what):
    if not cond:
        sys.exit("report: " + what)
def is_ms(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
need(r["version"] == 1, "version")
need(isinstance(r["command"], list) and all(isinstance(a, str) for a in r["command"]), "command")
need(isinstance(r["pid"], int) and r["pid"] > 1, "pid")
need(r["confinement"] == backend, f"confinement {r['confinement']} != {backend}")
if backend == "cgroup":
    need(isinstance(r["cgroup"], str) and r["cgroup"].startswith(cgmount + "/")
         and "/pmon-" in r["cgroup"], f"cgroup path {r['cgroup']}")
else:
    need(r["cgroup"] is None, "cgroup should be null off the cgroup backend")
t = datetime.datetime.fromisoformat(r["started_at"].replace("Z", "+00:00"))
need(t.tzinfo is not None, "started_at has no zone")
now = datetime.datetime.now(datetime.timezone.utc)
need(abs((now - t).total_seconds()) < 120, f"started_at {r['started_at']} is not now")
need(is_ms(r["duration_ms"]), "duration_ms")
need(r["outcome"] in ("exited", "signaled", "timeout", "cancelled"), "outcome")
need(r["exit_code"] is None or isinstance(r["exit_code"], int), "exit_code type")
need(r["signal"] is None or isinstance(r["signal"], int), "signal type")
need(r["exit_code"] is None or r["signal"] is None, "both exit_code and signal")
need(isinstance(r["timed_out"], bool), "timed_out")
need(isinstance(r["leftovers"], list), "leftovers")
for l in r["leftovers"]:
    need(isinstance(l["pid"], int) and isinstance(l["cmdline"], str)
         and isinstance(l["action"], str) and l["action"], f"leftover {l}")
s = r["stop"]
for k in ("signal_sent_ms", "kill_sent_ms", "empty_confirmed_ms"):
    need(k in s and (s[k] is None or is_ms(s[k])), f"stop.{k}")
    need(s[k] is None or s[k] <= r["duration_ms"], f"stop.{k} after the end")
need(r["cpu_usec"] is None or isinstance(r["cpu_usec"], int), "cpu_usec type")
need("memory_peak_bytes" in r, "memory_peak_bytes missing")
mem_accounted = cgmount and backend == "cgroup" and "memory" in open(cgmount + "/cgroup.controllers").read().split()
if not mem_accounted:
    need(r["memory_peak_bytes"] is None, "memory_peak_bytes must be null without a memory controller")
$code
PY
}

for b in $(backends); do
  # exited, with nothing left over.
  "$PMON" run -q --confine "$b" --report "$t/r.json" -- sh -c 'exit 3' || [ $? = 3 ] || fail "$b: exit"
  check "$t/r.json" "$b" '
need(r["command"] == ["sh", "-c", "exit 3"], "command")
need(r["outcome"] == "exited" and r["exit_code"] == 3 and r["signal"] is None, "exited 3")
need(r["timed_out"] is False and r["leftovers"] == [], "no timeout, no leftovers")
need(s["signal_sent_ms"] is None and s["kill_sent_ms"] is None, "nothing was signalled")
need(s["empty_confirmed_ms"] is not None, "emptiness confirmed")'

  # pid is the main process: it writes its own pid.
  "$PMON" run -q --confine "$b" --report "$t/r.json" -- sh -c "$HOSTPID_SH"'; echo $hp > '"$t/mainpid" || fail "$b: pid run"
  check "$t/r.json" "$b" "need(r['pid'] == $(cat "$t/mainpid"), 'pid is not the main process')"

  # signaled.
  "$PMON" run -q --confine "$b" --report "$t/r.json" -- sh -c 'kill -USR1 $$' || [ $? = 138 ] || fail "$b: signaled"
  check "$t/r.json" "$b" '
need(r["outcome"] == "signaled" and r["signal"] == 10 and r["exit_code"] is None, "signaled USR1")'

  # timeout: a leftover and the main process, both stopped by TERM. Each
  # records itself (host pid + start time): both are gone when pmon returns.
  # (1 s: both shells have recorded themselves by then on a loaded machine.)
  rm -f "$t/tree"
  rc=0; "$PMON" run -q --confine "$b" --timeout 1s --report "$t/r.json" -- env rec="$t/tree" sh -c \
    "$RECORD_SH"'; sh -c "$0; exec sleep 101" & exec sleep 102' "$RECORD_SH" || rc=$?
  record_file "$t/tree"
  [ $rc = 124 ] || fail "$b: timeout exit $rc"
  [ "$(grep -c . "$t/tree")" = 2 ] || fail "$b: timeout: the tree did not record itself: $(cat "$t/tree")"
  all_gone "$t/tree" "$b: timeout: once pmon returned"
  check "$t/r.json" "$b" '
need(r["outcome"] == "timeout" and r["timed_out"] is True, "timeout outcome")
need(s["signal_sent_ms"] is not None and s["signal_sent_ms"] >= 950, "TERM sent at %s" % s["signal_sent_ms"])
need(s["kill_sent_ms"] is None, "KILL should not be needed")
need(s["empty_confirmed_ms"] >= s["signal_sent_ms"], "empty before TERM")'

  # exited leaving a child: it is listed with what ended it; a TERM-proof one
  # needs SIGKILL, and the stop times say when.
  # (The shell waits until both children are the sleeps they exec: the
  # report names each by the command line it had when the main exited.)
  rc=0; "$PMON" run -q --confine "$b" --grace 300ms --report "$t/r.json" -- sh -c '
    sleep 103 &
    q=$!
    sh -c "trap \"\" TERM; exec sleep 104" &
    p=$!
    while [ "$(tr "\0" " " < /proc/$p/cmdline)" != "sleep 104 " ] ||
          [ "$(tr "\0" " " < /proc/$q/cmdline)" != "sleep 103 " ]; do sleep 0.01; done' || rc=$?
  [ $rc = 0 ] || fail "$b: leftovers exit $rc"
  check "$t/r.json" "$b" '
by = {l["cmdline"]: l for l in r["leftovers"]}
need(set(by) >= {"sleep 103", "sleep 104"}, "leftovers %s" % r["leftovers"])
need(by["sleep 103"]["action"] == "SIGTERM", "sleep 103: %s" % by["sleep 103"])
need(by["sleep 104"]["action"] == "SIGKILL", "sleep 104: %s" % by["sleep 104"])
need(all(l["pid"] > 1 for l in r["leftovers"]), "leftover pids")
need(r["outcome"] == "exited" and r["exit_code"] == 0, "main exited 0")
need(s["signal_sent_ms"] is not None and s["kill_sent_ms"] is not None, "TERM and KILL times")
need(s["kill_sent_ms"] - s["signal_sent_ms"] >= 250, "KILL before the grace was over")
need(s["empty_confirmed_ms"] >= s["kill_sent_ms"], "empty before KILL")'

  # cancelled: SIGTERM to pmon, once the command and a child of it run;
  # both are gone when pmon returns.
  rm -f "$t/tree"
  "$PMON" run -q --confine "$b" --report "$t/r.json" -- env rec="$t/tree" sh -c \
    "$RECORD_SH"'; sh -c "$0; exec sleep 106" & exec sleep 105' "$RECORD_SH" &
  pp=$!; record_pid "$pp"
  for _ in $(seq 500); do
    [ "$(grep -c . "$t/tree" 2>/dev/null)" = 2 ] && break
    sleep 0.01
  done
  record_file "$t/tree"
  [ "$(grep -c . "$t/tree")" = 2 ] || fail "$b: cancel: the tree did not record itself: $(cat "$t/tree")"
  kill -TERM "$pp"
  rc=0; wait "$pp" || rc=$?
  [ $rc = 143 ] || fail "$b: cancel exit $rc"
  all_gone "$t/tree" "$b: cancel: once pmon returned"
  check "$t/r.json" "$b" '
need(r["outcome"] == "cancelled", "cancelled outcome")
need(r["timed_out"] is False, "not a timeout")
need(s["signal_sent_ms"] is not None, "TERM time")'

  # cpu_usec: about 0.3 s of CPU in the call shows up as that.
  "$PMON" run -q --confine "$b" --report "$t/r.json" -- "$HELPERS/burn_cpu" 300 || fail "$b: burn_cpu"
  if [ "$b" = cgroup ]; then
    check "$t/r.json" "$b" '
need(r["cpu_usec"] is not None and 280_000 <= r["cpu_usec"] <= 5_000_000, "cpu_usec %s for 300 ms of CPU" % r["cpu_usec"])'
  else
    check "$t/r.json" "$b" '
need(r["cpu_usec"] is None or 280_000 <= r["cpu_usec"] <= 5_000_000, "cpu_usec %s for 300 ms of CPU" % r["cpu_usec"])'
  fi
  echo "ok: $b"
done

# Arguments are bytes: a non-UTF-8 one still gives a valid report (and the
# command's own exit status, not an abort of pmon).
rc=0; "$PMON" run -q --report "$t/r.json" -- sh -c 'exit 7' "$(printf 'x\377y')" || rc=$?
[ $rc = 7 ] || fail "non-UTF-8 argument: exit $rc"
report_is -m "non-UTF-8 argument" "$t/r.json" 'command.3^=x'

# Atomic write: an existing (larger) file is replaced by rename, whole, and no
# temp file is left beside it.
mkdir "$t/rep"
head -c 100000 /dev/zero | tr '\0' 'x' > "$t/rep/r.json"
ln "$t/rep/r.json" "$t/old-link"
ino=$(stat -c %i "$t/rep/r.json")
"$PMON" run -q --report "$t/rep/r.json" -- true || fail "atomic: pmon exit $?"
[ "$(stat -c %i "$t/rep/r.json")" != "$ino" ] || fail "atomic: the report was rewritten in place, not renamed over"
[ "$(stat -c %s "$t/old-link")" = 100000 ] || fail "atomic: the old file was modified"
report_is -m "atomic" "$t/rep/r.json"  # one JSON document
[ "$(ls -A "$t/rep")" = r.json ] || fail "atomic: left beside the report: $(ls -A "$t/rep")"
# A relative path (no directory part) works the same.
(cd "$t/rep" && "$PMON" run -q --report r2.json -- true) || fail "relative report path"
[ "$(ls -A "$t/rep" | tr '\n' ' ')" = "r.json r2.json " ] || fail "atomic: left: $(ls -A "$t/rep")"
pass
