# SPDX-License-Identifier: Apache-2.0
# An unprivileged user inside a cgroup subtree delegated to it (the way
# systemd's Delegate=yes or a chowned directory hands one out): --confine auto
# picks cgroup, its leaf sits under the delegated directory, an E1 daemon and
# E6 leftovers are stopped and verified, exit codes pass through, and no leaf
# is left. Then --cgroup-root names the delegated directory from a cgroup
# inside it.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/unpriv.inc"

acquire_user
D=$CG/pmon-test-deleg-$$
make_cgroup "$D"
delegate_cgroup "$D"

# No pmon-* cgroup below $1 (the leaves are gone).
no_leaves_under() {
  local left
  left=$(find "$1" -mindepth 1 -type d -name 'pmon-*')
  [ -z "$left" ] || fail "$2: leaf left behind: $left"
}

# 1. auto -> cgroup; a double-fork + setsid daemon dies with the call.
rc=0
as_user_in "$D" "$PMON" run -q --report "$u/r1.json" -- sh -c '
  id -u > '"$u"'/uid; grep ^0:: /proc/self/cgroup > '"$u"'/cg
  '"$(daemon_script "$u/daemon1")" || rc=$?
record_daemon "$u/daemon1"
[ "$rc" = 0 ] || fail "auto: pmon exit $rc"
[ "$(cat "$u/uid")" = "$TEST_UID" ] || fail "the command did not run as $TEST_USER"
[ "$(field "$u/r1.json" confinement)" = cgroup ] ||
  fail "auto picked $(field "$u/r1.json" confinement), not cgroup"
[ -z "$(array_items "$u/r1.json" confinement_passed_over)" ] || fail "auto passed something over"
leaf=$(field "$u/r1.json" cgroup)
case $leaf in
  "$D"/pmon-*) ;;
  *) fail "auto: leaf $leaf is not directly under the delegated $D" ;;
esac
# The command really ran in that leaf (cgroup paths are relative to the mount).
[ "$(cat "$u/cg")" = "0::${leaf#"$CG"}" ] || fail "the command ran in $(cat "$u/cg"), not in $leaf"
! alive "$dpid" "$dst" || fail "auto: daemon $dpid survived"
[ "$(field "$u/r1.json" cleanup_verified)" = true ] || fail "auto: cleanup not verified"
grep -q "\"pid\": $dpid," "$u/r1.json" || fail "auto: the daemon is not in the report's leftovers"
[ ! -d "$leaf" ] || fail "auto: leaf $leaf left behind"
no_leaves_under "$D" auto
echo "ok: auto picks cgroup under $D, E1 daemon stopped"

# 2. E6: the main process exits 7 leaving a child running; it is stopped,
# reported, and the exit code passes through.
rc=0
as_user_in "$D" "$PMON" run -q --report "$u/r2.json" -- sh -c '
  sleep 1000 & echo $! $(cut -d" " -f22 /proc/$!/stat) > '"$u"'/left; exit 7' || rc=$?
read -r lpid lst < "$u/left"
echo "$lpid $lst" >> "$t/pids"; echo "$lpid $lst" >> "$STATE/pids"
[ "$rc" = 7 ] || fail "E6: pmon exit $rc, want the command's 7"
! alive "$lpid" "$lst" || fail "E6: leftover $lpid survived"
grep -q "\"pid\": $lpid," "$u/r2.json" || fail "E6: leftover $lpid not in the report"
[ "$(field "$u/r2.json" exit_code)" = 7 ] || fail "E6: report exit_code is not 7"
[ "$(field "$u/r2.json" cleanup_verified)" = true ] || fail "E6: cleanup not verified"
no_leaves_under "$D" E6
echo "ok: E6 leftover stopped, exit 7 passed through"

# A death by signal maps to 128+N.
rc=0
as_user_in "$D" "$PMON" run -q -- sh -c 'kill -USR1 $$' || rc=$?
[ "$rc" = $((128 + 10)) ] || fail "signal: pmon exit $rc, want 138 (SIGUSR1)"
no_leaves_under "$D" signal
echo "ok: death by SIGUSR1 -> 138"

# 3. The user makes a cgroup of its own inside the delegated one, moves
# itself there, and names the delegated directory with --cgroup-root: the
# leaf goes under $D, not under pmon's own cgroup $D/work.
_cgroups+=("$D/work")  # made by the user below; removed like ours
rc=0
as_user_in "$D" sh -c 'mkdir "$1/work" && echo $$ > "$1/work/cgroup.procs" && shift &&
  exec "$@"' sh "$D" \
  "$PMON" run -q --cgroup-root "$D" --report "$u/r3.json" -- sh -c "$(daemon_script "$u/daemon3")" ||
  rc=$?
record_daemon "$u/daemon3"
[ "$rc" = 0 ] || fail "--cgroup-root: pmon exit $rc"
[ "$(stat -c %u "$D/work")" = "$TEST_UID" ] || fail "$D/work was not made by $TEST_USER"
leaf=$(field "$u/r3.json" cgroup)
case $leaf in
  "$D"/work/*) fail "--cgroup-root: leaf $leaf is under pmon's own cgroup, not under $D" ;;
  "$D"/pmon-*) ;;
  *) fail "--cgroup-root: leaf $leaf is not under $D" ;;
esac
! alive "$dpid" "$dst" || fail "--cgroup-root: daemon $dpid survived"
[ "$(field "$u/r3.json" cleanup_verified)" = true ] || fail "--cgroup-root: cleanup not verified"
no_leaves_under "$D" --cgroup-root

# Without it, the same process gets its leaf under its own cgroup.
rc=0
as_user_in "$D/work" "$PMON" run -q --report "$u/r4.json" -- true || rc=$?
[ "$rc" = 0 ] || fail "own cgroup $D/work: pmon exit $rc"
case $(field "$u/r4.json" cgroup) in
  "$D"/work/pmon-*) ;;
  *) fail "own cgroup: leaf $(field "$u/r4.json" cgroup) is not under $D/work" ;;
esac
no_leaves_under "$D" "own cgroup"
echo "ok: --cgroup-root $D from $D/work"
pass
