# SPDX-License-Identifier: Apache-2.0
# A named session (no envelope: a cgroup shared by its calls, on any cgroup2
# host) whose pmon is killed with SIGKILL: the crash guard stops the call
# and removes its leaf, and the session's cgroup, held by nobody, stays
# until `pmon gc` removes it (--dry-run names it and touches nothing) or
# the next session opened beside it does. A session a live pmon holds is
# left alone by both, and goes with its last call.
# (Every `pmon gc` looks at the whole host: another scenario's may remove
# the crashed session first. A round it happened to is made again, up to
# three times.)
. "$(dirname "$0")/common.inc"
[ "$(id -u)" = 0 ] || skip "needs root (pmon gc looks at every cgroup)"
have_backend cgroup || skip "the cgroup backend is not available here"
CG=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
# (Named pmon-...: a --cgroup-root so named is no call's leaf, and the
# sessions below it are found as well.)
BASE=$CG/pmon-test-sessions-$$
mkdir "$BASE" || fail "cannot create $BASE"
# (On a failure: the live call's pmon stops it and removes its session
# first; then what is left, empty, goes.)
_sessions_cleanup() {
  [ -z "${live:-}" ] || { kill -TERM "$live" 2>/dev/null || true; wait "$live" 2>/dev/null || true; }
  find "$BASE" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null
  rmdir "$BASE" 2>/dev/null
}
trap 'rc_=$?; _sessions_cleanup; (exit $rc_); _cleanup' EXIT
sess() { echo "$BASE/pmon-session-n-$1"; }

# start NAME: a call in session NAME; sets $p (its pmon), $cpid, $leaf.
start() {
  local i
  rm -f "$t/$1.rec"
  "$PMON" run -q --session "$1" --cgroup-root "$BASE" -- sh -c "rec=$t/$1.rec; $RECORD_SH; exec sleep 1000" 2> "$t/$1.err" &
  p=$!
  record_pid "$p"
  for i in $(seq 1500); do [ -s "$t/$1.rec" ] && break; sleep 0.02; done
  [ -s "$t/$1.rec" ] || fail "the call of session $1 did not start: $(cat "$t/$1.err")"
  record_file "$t/$1.rec"
  read -r cpid _ < "$t/$1.rec"
  leaf=$CG$(sed -n 's/^0:://p' "/proc/$cpid/cgroup")
  case $leaf in "$(sess "$1")"/pmon-*) ;; *) fail "the call of session $1 is in $leaf" ;; esac
}

# crash NAME: a call in session NAME whose pmon is SIGKILLed: the call and
# its leaf go, the session stays. Returns 1 when another scenario's gc
# removed the session before it was looked at.
crash() {
  local i
  start "$1"
  kill -KILL "$p"
  wait "$p" 2>/dev/null || true
  for i in $(seq 1500); do [ -z "$(alive_in "$t/$1.rec")" ] && [ ! -d "$leaf" ] && break; sleep 0.02; done
  [ -z "$(alive_in "$t/$1.rec")" ] || fail "the call of session $1 outlived its pmon's SIGKILL"
  [ ! -d "$leaf" ] || fail "the crash guard left the leaf $leaf"
  [ -d "$(sess "$1")" ]
}

start "live-$$"
live=$p live_rec=$t/live-$$.rec

# pmon gc.
for try in 1 2 3; do
  S=crash-$$-$try
  crash "$S" || continue
  "$PMON" gc --dry-run -v > "$t/dry" || fail "pmon gc --dry-run exit $?: $(cat "$t/dry")"
  [ -d "$(sess "$S")" ] || continue
  grep -qx "would remove $(sess "$S") (session of name $S, no pmon holds it)" "$t/dry" ||
    fail "pmon gc --dry-run does not name the session left: $(cat "$t/dry")"
  grep -qx "kept $(sess "live-$$") (session of name live-$$, a pmon runs calls in it)" "$t/dry" ||
    fail "pmon gc --dry-run -v does not list the live session as kept: $(cat "$t/dry")"
  "$PMON" gc > "$t/gc" || fail "pmon gc exit $?: $(cat "$t/gc")"
  grep -qx "removed $(sess "$S") (session of name $S, no pmon holds it)" "$t/gc" || {
    [ -d "$(sess "$S")" ] || continue
    fail "pmon gc does not report the session left: $(cat "$t/gc")"
  }
  gc_done=1
  break
done
[ "${gc_done:-0}" = 1 ] || fail "three times another scenario's gc removed the crashed session first"
[ ! -d "$(sess "$S")" ] || fail "pmon gc left $(sess "$S")"
! grep -q "live-$$" "$t/gc" || fail "pmon gc touched the live session: $(cat "$t/gc")"
[ -d "$(sess "live-$$")" ] && [ -n "$(alive_in "$live_rec")" ] || fail "pmon gc removed the live session or its call"

# The next session opened beside.
for try in 1 2 3; do
  S=crash2-$$-$try
  crash "$S" || continue
  "$PMON" run -q --session "beside-$$" --cgroup-root "$BASE" -- true || fail "a call in a session beside failed"
  sweep_done=1
  break
done
[ "${sweep_done:-0}" = 1 ] || fail "three times another scenario's gc removed the crashed session first"
[ ! -d "$(sess "$S")" ] || fail "the next session opened beside left $(sess "$S")"
[ ! -d "$(sess "beside-$$")" ] || fail "the session beside is left after its call"
[ -d "$(sess "live-$$")" ] && [ -n "$(alive_in "$live_rec")" ] || fail "the session beside removed the live session or its call"

# The live one goes with its call.
kill -TERM "$live"
wait "$live" 2>/dev/null || true
[ -z "$(alive_in "$live_rec")" ] || fail "the live call outlived its pmon's SIGTERM"
[ ! -d "$(sess "live-$$")" ] || fail "the live session is left after its last call"
[ -z "$(find "$BASE" -mindepth 1 -type d)" ] || fail "left in $BASE: $(find "$BASE" -mindepth 1 -type d)"
pass
