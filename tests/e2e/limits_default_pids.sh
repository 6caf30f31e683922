# SPDX-License-Identifier: Apache-2.0
# The default pids limit: a call that asks for no pids limit gets pids.max
# 4096 where its leaf can have it; where it cannot (no pids controller for
# the leaf, a backend without a cgroup) the call runs all the same and the
# report's limits_note says why. --pids-max 0 asks for none: no default, no
# note. On run and on a serve job (JSON-RPC; Python: test_limits.py). (The guest, where
# the controller exists, checks the leaf's pids.max itself:
# tests/guest/limits_pids.sh.)
. "$(dirname "$0")/common.inc"
rj() { local f=$1; shift; jq -r "$@" "$f"; }

# The leaf's pids.max as the command sees it ("" where there is none).
CG=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
LEAF_PIDS='cat "'"$CG"'$(sed -n s/^0:://p /proc/self/cgroup)/pids.max" 2>/dev/null || true'

# check_default FILE SEEN WHAT: SEEN is the leaf's pids.max the command printed.
check_default() {
  local f=$1 seen=$2 what=$3
  if [ "$seen" = 4096 ]; then
    [ "$(rj "$f" .limits.pids_max)" = 4096 ] || fail "$what: the leaf has pids.max 4096 but the report says $(rj "$f" -c .limits)"
    [ "$(rj "$f" .limits_note)" = null ] || fail "$what: set, yet a note: $(rj "$f" .limits_note)"
    [ "$(rj "$f" .pids_max_hit)" = false ] || fail "$what: pids_max_hit $(rj "$f" .pids_max_hit)"
    echo "ok: $what: pids.max 4096 in the leaf and the report"
  else
    [ -z "$seen" ] || [ "$seen" = max ] || fail "$what: the leaf's pids.max is '$seen'"
    [ "$(rj "$f" .limits.pids_max)" = null ] || fail "$what: not set, yet the report says $(rj "$f" -c .limits)"
    note=$(rj "$f" .limits_note)
    case $note in "the default pids_max (4096) is not set: "?*) ;; *) fail "$what: limits_note is '$note'" ;; esac
    [ "$(rj "$f" .pids_max_hit)" = null ] || fail "$what: pids_max_hit $(rj "$f" .pids_max_hit) without a pids limit"
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
  [ "$(rj "$t/r-$b.json" .limits_note)" = "the default pids_max (4096) is not set: the $b backend has no cgroup" ] ||
    fail "run --confine $b: limits_note: $(rj "$t/r-$b.json" .limits_note)"
  [ "$(rj "$t/r-$b.json" .limits.pids_max)" = null ] || fail "run --confine $b: limits $(rj "$t/r-$b.json" -c .limits)"
done
echo "ok: pgroup and subreaper: run, with the note"

# 3. --pids-max 0: none, no note.
"$PMON" run -q --confine cgroup --pids-max 0 --report "$t/r0.json" -- sh -c "$LEAF_PIDS" > "$t/o0" ||
  fail "run --pids-max 0: exit $?"
[ "$(rj "$t/r0.json" .limits.pids_max)" = 0 ] || fail "--pids-max 0: limits $(rj "$t/r0.json" -c .limits)"
[ "$(rj "$t/r0.json" .limits_note)" = null ] || fail "--pids-max 0: a note: $(rj "$t/r0.json" .limits_note)"
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
call c terminal/report '{"terminalId":"'"$job"'"}' | jq '.result' > "$t/rs.json"
check_default "$t/rs.json" "$seen" "a serve job"
client_close c
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"

pass
