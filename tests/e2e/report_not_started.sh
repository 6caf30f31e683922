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
  [ "$(wc -l < "$t/err")" = 1 ] || fail "report for $3: stderr is not one line: $(cat "$t/err")"
  report_is -m "report for $3" "$t/r.json" version=1 outcome=not_started "exit_status=$1" "error~$3" \
    "error=$(sed -n 's/^pmon: //p' "$t/err")" pid=null "confinement=$2" exit_code=null signal=null \
    'leftovers=[]' 'escaped=[]' cleanup_verified=true 'started_at^=' 'duration_ms>=0'
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
check 127 "$(jget "$t/r.json" confinement)" "No such file"

# A bad option is refused before the call: 125, one line, no report.
rm -f "$t/r.json"
rc=0; "$PMON" run --timeout bogus --report "$t/r.json" -- true 2> "$t/err" || rc=$?
[ $rc = 125 ] || fail "bad option: exit $rc"
[ ! -e "$t/r.json" ] || fail "bad option: a report was written: $(cat "$t/r.json")"
[ "$(wc -l < "$t/err")" = 1 ] || fail "bad option: stderr: $(cat "$t/err")"

pass
