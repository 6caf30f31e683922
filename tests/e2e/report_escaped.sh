# SPDX-License-Identifier: Apache-2.0
# What escapes the boundary is still the call's: pmon is its subreaper, finds
# it below itself once the boundary is empty, and stops it like a leftover
# (TERM, --grace, KILL, until gone). The report lists it under `escaped` with
# what ended it, `cleanup_verified` is true only because it is gone, and no
# process is listed both as a leftover and as escaped.
. "$(dirname "$0")/common.inc"

CG=$(awk '$9=="cgroup2"{print $5; exit}' /proc/self/mountinfo)

# wait_file FILE: until the call's process has written its pid there.
wait_file() {
  for _ in $(seq 1000); do
    [ -s "$1" ] && return 0
    sleep 0.01
  done
  fail "no pid in $1"
}

# check_report PID=KIND:ACTION...: each pid is listed under KIND (leftovers
# or escaped) with ACTION; none is in both; the call is verified clean.
check_report() {
  python3 - "$t/r.json" "$@" <<'PY' || fail "report: $(cat "$t/r.json")"
import json, os, sys
r = json.load(open(sys.argv[1]))
want = {}  # pid -> expected action, from "pid=action" arguments
for a in sys.argv[2:]:
    pid, action = a.split("=")
    want[int(pid)] = action
def need(c, what):
    if not c:
        sys.exit("report: " + what)
left = {(l["pid"], l["start_time"]) for l in r["leftovers"]}
esc = {(e["pid"], e["start_time"]) for e in r["escaped"]}
need(not (left & esc), "listed both as leftover and as escaped: %s" % (left & esc))
where = {}
for kind in ("leftovers", "escaped"):
    for l in r[kind]:
        where[l["pid"]] = (kind, l["action"])
for pid, spec in want.items():
    kind, action = spec.split(":")
    need(where.get(pid) == (kind, action), "pid %d: %s, want %s %s" % (pid, where.get(pid), kind, action))
need(r["cleanup_verified"] is True, "cleanup_verified")
need(r["exit_status"] == 0 and r["outcome"] == "exited" and r["exit_code"] == 0, "exit")
need(r["stop"]["empty_confirmed_ms"] is not None, "empty_confirmed_ms")
PY
}

# Each process of a call that must end writes "PID START-TIME" to $t/p.N
# (a shell: the line of ME below; no fork between it and the exec).
ME='s=$(cat /proc/$$/stat); set -- ${s##*) }; echo "$$ ${20}"'
export ME

# record_files: every such process goes into the leak check's list.
record_files() {
  local f pid st
  for f in "$t"/p.*; do
    read -r pid st < "$f"
    echo "$pid $st" >> "$t/pids"
    echo "$pid $st" >> "$STATE/pids"
  done
}

# gone FILE WHAT: the process named in FILE is dead.
gone() {
  local pid st
  read -r pid st < "$1"
  alive "$pid" "$st" && fail "$2: pid $pid is still running"
  return 0
}

pid_of() { cut -d' ' -f1 "$1"; }

# 1. pgroup: a setsid daemon. It is found below pmon and stopped by TERM.
rm -f "$t"/p.*
rc=0
"$PMON" run -q --confine pgroup --report "$t/r.json" -- sh -c '
  setsid sh -c "$ME > $1/p.1; exec sleep 300" &
  while [ ! -s $1/p.1 ]; do sleep 0.01; done' sh "$t" 2> "$t/err" || rc=$?
record_files
[ $rc = 0 ] || fail "setsid daemon: exit $rc: $(cat "$t/err")"
gone "$t/p.1" "setsid daemon"
check_report "$(pid_of "$t/p.1")=escaped:SIGTERM"

# 2. pgroup: a TERM-proof setsid daemon needs the SIGKILL after the grace.
rm -f "$t"/p.*
rc=0
"$PMON" run -q --confine pgroup --grace 300ms --report "$t/r.json" -- sh -c '
  setsid sh -c "trap \"\" TERM; $ME > $1/p.1; exec sleep 301" &
  while [ ! -s $1/p.1 ]; do sleep 0.01; done' sh "$t" 2> "$t/err" || rc=$?
record_files
[ $rc = 0 ] || fail "TERM-proof daemon: exit $rc: $(cat "$t/err")"
gone "$t/p.1" "TERM-proof daemon"
check_report "$(pid_of "$t/p.1")=escaped:SIGKILL"

# 3. pgroup: a leftover that leaves the group when the stop's TERM reaches
# it, and ignores TERM from then on. The group is empty at once, but the
# process is alive: it stays a leftover (never also escaped), and what
# ended it is the SIGKILL of the second stop.
rm -f "$t"/p.*
rc=0
"$PMON" run -q --confine pgroup --grace 300ms --report "$t/r.json" -- sh -c '
  python3 -c "
import os, signal, sys, time
def leave(*_):
    if os.getsid(0) != os.getpid():
        os.setsid()
signal.signal(signal.SIGTERM, leave)
st = open(\"/proc/self/stat\").read().rsplit(\")\", 1)[1].split()[19]
open(sys.argv[1], \"w\").write(\"%d %s\\n\" % (os.getpid(), st))
while True:
    time.sleep(1)
" $1/p.1 &
  while [ ! -s $1/p.1 ]; do sleep 0.01; done' sh "$t" 2> "$t/err" || rc=$?
record_files
[ $rc = 0 ] || fail "leaves during the stop: exit $rc: $(cat "$t/err")"
gone "$t/p.1" "leaves during the stop"
check_report "$(pid_of "$t/p.1")=leftovers:SIGKILL"

# 4. cgroup (root): a process that moves itself out of its leaf (possible
# where the call can write the hierarchy) is still below pmon: stopped too.
if [ "$(id -u)" = 0 ] && [ -n "$CG" ] && have_backend cgroup; then
  rm -f "$t"/p.*
  rc=0
  "$PMON" run -q --confine cgroup --report "$t/r.json" -- sh -c '
    sh -c "echo \$\$ > $2/cgroup.procs; $ME > $1/p.1; exec sleep 302" &
    while [ ! -s $1/p.1 ]; do sleep 0.01; done' sh "$t" "$CG" 2> "$t/err" || rc=$?
  record_files
  [ $rc = 0 ] || fail "moved out of its leaf: exit $rc: $(cat "$t/err")"
  gone "$t/p.1" "moved out of its leaf"
  check_report "$(pid_of "$t/p.1")=escaped:SIGTERM"
  echo "ok: cgroup"
fi

pass
