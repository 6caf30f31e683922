# SPDX-License-Identifier: Apache-2.0
# A report is written for every call pmon accepted, also when its command
# never ran: not found (127), not executable (126), confinement that failed
# (125). It says "not_started", carries the error line and the exit status,
# and names no pid. Options pmon cannot parse are refused before any call is
# accepted: no report then.
. "$(dirname "$0")/common.inc"

# check STATUS CONFINEMENT WORD: $t/r.json is a not_started report whose
# error line contains WORD, and pmon's stderr ($t/err) is that one line.
check() {
  python3 - "$t/r.json" "$1" "$2" "$3" "$(cat "$t/err")" <<'PY' || fail "report for $3: $(cat "$t/r.json" 2>&1)"
import json, sys
path, status, confinement, word, err = sys.argv[1:]
r = json.load(open(path))
def need(c, what):
    if not c:
        sys.exit("report: " + what)
need(r["version"] == 1, "version")
need(r["outcome"] == "not_started", "outcome %s" % r["outcome"])
need(r["exit_status"] == int(status), "exit_status %s" % r["exit_status"])
need(isinstance(r["error"], str) and word in r["error"] and "\n" not in r["error"], "error %r" % r["error"])
need(err == "pmon: " + r["error"], "stderr %r is not the error line" % err)
need(r["pid"] is None, "pid %s" % r["pid"])
need(r["confinement"] == confinement, "confinement %s" % r["confinement"])
need(r["exit_code"] is None and r["signal"] is None, "an exit of a command that never ran")
need(r["leftovers"] == [] and r["escaped"] == [], "processes of a command that never ran")
need(r["cleanup_verified"] is True, "cleanup_verified")
need(isinstance(r["started_at"], str) and r["duration_ms"] >= 0, "started_at / duration_ms")
PY
}

# Not found (127) and not executable (126), on every backend.
printf '#!/bin/sh\nexit 0\n' > "$t/noexec"
chmod 0644 "$t/noexec"
for b in $(backends); do
  rm -f "$t/r.json"
  rc=0; "$PMON" run --confine "$b" --report "$t/r.json" -- "$t/no-such-command" 2> "$t/err" || rc=$?
  [ $rc = 127 ] || fail "$b: not found: exit $rc"
  check 127 "$b" "No such file"

  rm -f "$t/r.json"
  rc=0; "$PMON" run --confine "$b" --report "$t/r.json" -- "$t/noexec" 2> "$t/err" || rc=$?
  [ $rc = 126 ] || fail "$b: not executable: exit $rc"
  check 126 "$b" "noexec"
  echo "ok: $b"
done

# Confinement that fails once the options are accepted (125): a cgroup root
# that does not exist.
rm -f "$t/r.json"
rc=0; "$PMON" run --confine cgroup --cgroup-root "$t/no-such-cgroup" --report "$t/r.json" -- true 2> "$t/err" || rc=$?
[ $rc = 125 ] || fail "confinement: exit $rc"
check 125 cgroup "confinement"

# --report - prints the same report on stdout.
rc=0; "$PMON" run --report - -- "$t/no-such-command" > "$t/r.json" 2> "$t/err" || rc=$?
[ $rc = 127 ] || fail "report to stdout: exit $rc"
check 127 "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["confinement"])' "$t/r.json")" "No such file"

# A bad option is refused before the call: 125, one line, no report.
rm -f "$t/r.json"
rc=0; "$PMON" run --timeout bogus --report "$t/r.json" -- true 2> "$t/err" || rc=$?
[ $rc = 125 ] || fail "bad option: exit $rc"
[ ! -e "$t/r.json" ] || fail "bad option: a report was written: $(cat "$t/r.json")"
[ "$(wc -l < "$t/err")" = 1 ] || fail "bad option: stderr: $(cat "$t/err")"

pass
