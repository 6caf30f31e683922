# SPDX-License-Identifier: Apache-2.0
# The default pids limit: a call that asks for no pids limit gets pids.max
# 4096 where its leaf can have it; where it cannot (no pids controller for
# the leaf, a backend without a cgroup) the call runs all the same and the
# report's limits_note says why. --pids-max 0 asks for none: no default, no
# note. On run and on a serve job (JSON-RPC; Python: test_limits.py). (The guest, where
# the controller exists, checks the leaf's pids.max itself:
# tests/guest/limits_pids.sh.)
. "$(dirname "$0")/common.inc"

# The leaf's pids.max as the command sees it ("" where there is none).
CG=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
LEAF_PIDS='cat "'"$CG"'$(sed -n s/^0:://p /proc/self/cgroup)/pids.max" 2>/dev/null || true'

# check_default FILE SEEN WHAT: SEEN is the leaf's pids.max the command printed.
check_default() {
  local f=$1 seen=$2 what=$3
  if [ "$seen" = 4096 ]; then
    report_is -m "$what: pids.max 4096 in the leaf" "$f" limits.pids_max=4096 limits_note=null pids_max_hit=false
    echo "ok: $what: pids.max 4096 in the leaf and the report"
  else
    [ -z "$seen" ] || [ "$seen" = max ] || fail "$what: the leaf's pids.max is '$seen'"
    report_is -m "$what: not set" "$f" limits.pids_max=null pids_max_hit=null
    note=$(jget "$f" limits_note)
    case $note in "the default pids_max (4096) is not set: "?*) ;; *) fail "$what: limits_note is '$note'" ;; esac
    echo "ok: $what: not set here; the note: $note"
  fi
}

# 1. run, cgroup: exit 0 whatever the host offers.
rc=0
"$PMON" run -q --confine cgroup --report "$t/r1.json" -- sh -c "$LEAF_PIDS" > "$t/o1" 2> "$t/e1" || rc=$?
[ $rc = 0 ] || fail "run without --pids-max: exit $rc: $(cat "$t/e1")"
[ ! -s "$t/e1" ] || fail "run without --pids-max printed: $(cat "$t/e1")"
check_default "$t/r1.json" "$(cat "$t/o1")" "run --confine cgroup"

# 2. A backend without a cgroup: runs, and the note names the backend.
for b in pgroup subreaper; do
  rc=0
  "$PMON" run -q --confine $b --report "$t/r-$b.json" -- true 2> "$t/e-$b" || rc=$?
  [ $rc = 0 ] || fail "run --confine $b: exit $rc: $(cat "$t/e-$b")"
  report_is -m "run --confine $b" "$t/r-$b.json" limits.pids_max=null \
    "limits_note=the default pids_max (4096) is not set: the $b backend has no cgroup"
done
echo "ok: pgroup and subreaper: run, with the note"

# 3. --pids-max 0: none, no note.
"$PMON" run -q --confine cgroup --pids-max 0 --report "$t/r0.json" -- sh -c "$LEAF_PIDS" > "$t/o0" ||
  fail "run --pids-max 0: exit $?"
report_is -m "--pids-max 0" "$t/r0.json" limits.pids_max=0 limits_note=null
case $(cat "$t/o0") in ""|max) ;; *) fail "--pids-max 0: the leaf's pids.max is $(cat "$t/o0")" ;; esac
echo "ok: --pids-max 0: no limit, no note"

# 4. A serve job: its report says the same.
. "$(dirname "$0")/serve.inc"
serve_start --confine cgroup
client_open c
r=$(call c terminal/create '{"command":"sh","args":["-c","'"$(printf '%s' "$LEAF_PIDS" | sed 's/\\/\\\\/g; s/"/\\"/g')"'"]}')
job=$(jget "$r" result.terminalId)
call c terminal/wait_for_exit '{"terminalId":"'"$job"'"}' > /dev/null
seen=$(jget "$(call c terminal/output '{"terminalId":"'"$job"'"}')" result.output | tr -d ' \t\n')
jget "$(call c terminal/report '{"terminalId":"'"$job"'"}')" result > "$t/rs.json"
check_default "$t/rs.json" "$seen" "a serve job"
client_close c
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"

pass
