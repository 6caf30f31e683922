# SPDX-License-Identifier: Apache-2.0
# An unprivileged user with NO delegated cgroup (its process in the root
# cgroup, or in a cgroup root made and kept): --confine auto falls back to
# pidns (a user namespace) where the kernel allows it, else subreaper; the
# reasons are in the report's confinement_passed_over, under -v and in pmon
# doctor, and on the command's stderr only a fallback to subreaper warns
# (in one short line); the drain loop still stops an E1 daemon; --confine
# cgroup fails closed with 125 and one line saying what to do.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/unpriv.inc"

acquire_user
R=$CG/pmon-test-nodeleg-$$
make_cgroup "$R"  # root-owned, not delegated

for where in "$CG" "$R"; do
  name=${where#"$CG"}; name=${name:-/}
  # auto's next choice after cgroup: pidns in a user namespace where the
  # kernel lets this user make one, subreaper otherwise (DESIGN §2). Asked
  # of the kernel (unshare), not of pmon: a pmon whose pidns broke for
  # users must not pass by expecting subreaper.
  fb=subreaper
  as_user_in "$where" unshare --user --map-root-user --pid --fork --mount --mount-proc true 2>/dev/null && fb=pidns

  # A quiet command. The command's stderr is pmon's too: a fallback to
  # pidns (as strong against escapes as cgroup) adds nothing to it; one to
  # subreaper adds one short warning line. The reasons go to the report,
  # to -v and to pmon doctor.
  rc=0
  as_user_in "$where" "$PMON" run --report "$u/r.json" -- true 2> "$u/err" || rc=$?
  said=$(cat "$u/err")
  [ "$rc" = 0 ] || fail "$name: auto: pmon exit $rc: $(cat "$u/err")"
  [ "$(field "$u/r.json" confinement)" = $fb ] ||
    fail "$name: auto picked $(field "$u/r.json" confinement), not $fb"
  if [ $fb = pidns ]; then
    [ ! -s "$u/err" ] || fail "$name: a fallback to pidns wrote to stderr: $(cat "$u/err")"
  else
    [ "$(wc -l < "$u/err")" = 1 ] || fail "$name: want exactly one line on stderr, got: $(cat "$u/err")"
    [ "$(wc -c < "$u/err")" -le 120 ] || fail "$name: the warning is not short: $(cat "$u/err")"
    grep -Eq '^pmon: warning: cgroup( and pidns)? (is|are) unavailable here; using the weaker subreaper backend' "$u/err" ||
      fail "$name: the stderr line does not warn of the weaker backend: $(cat "$u/err")"
  fi
  as_user_in "$where" "$PMON" run -v -- true 2> "$u/verr" || fail "$name: -v: pmon exit $?: $(cat "$u/verr")"
  grep -q '^pmon: cgroup: .*Permission denied.*; falling back to '"$fb"'$' "$u/verr" ||
    fail "$name: -v does not say why cgroup was passed over: $(cat "$u/verr")"
  as_user_in "$where" "$PMON" doctor > "$u/doctor" 2>&1 || true
  grep -q '^auto  *yes  *'"$fb"' (passed over: cgroup: .*Permission denied' "$u/doctor" ||
    fail "$name: pmon doctor does not explain the fallback: $(grep '^auto' "$u/doctor")"
  over=$(array_items "$u/r.json" confinement_passed_over)
  [ "$(echo "$over" | grep -c .)" = 1 ] || fail "$name: report passed_over: $over"
  case $over in
    "cgroup: "*"Permission denied"*) ;;
    *) fail "$name: report passed_over does not say why cgroup was passed over: $over" ;;
  esac
  [ "$(field "$u/r.json" cgroup)" = null ] || fail "$name: $fb report names a cgroup"

  # E1 under the fallback: the drain loop finds the reparented daemon.
  rc=0
  as_user_in "$where" "$PMON" run -q --report "$u/r1.json" -- sh -c "$(daemon_script "$u/daemon")" ||
    rc=$?
  record_daemon "$u/daemon"
  rm -f "$u/daemon"
  [ "$rc" = 0 ] || fail "$name: E1: pmon exit $rc"
  [ "$(field "$u/r1.json" confinement)" = $fb ] || fail "$name: E1: not $fb"
  ! alive "$dpid" "$dst" || fail "$name: E1: daemon $dpid survived under $fb"
  [ "$(field "$u/r1.json" cleanup_verified)" = true ] || fail "$name: E1: cleanup not verified"
  grep -q "\"pid\": $dpid," "$u/r1.json" || fail "$name: E1: the daemon is not in the leftovers"

  # Naming cgroup fails closed: 125, one line with the reason and the remedy.
  rc=0
  as_user_in "$where" "$PMON" run --confine cgroup -- sh -c "echo ran > $u/ran" 2> "$u/err" || rc=$?
  [ "$rc" = 125 ] || fail "$name: --confine cgroup: exit $rc, want 125"
  [ ! -e "$u/ran" ] || fail "$name: --confine cgroup ran the command anyway"
  [ "$(wc -l < "$u/err")" = 1 ] || fail "$name: --confine cgroup: want one line, got: $(cat "$u/err")"
  grep -q '^pmon: .*cgroup.*Permission denied.*delegated' "$u/err" ||
    fail "$name: --confine cgroup: the line lacks the reason or the remedy: $(cat "$u/err")"
  left=$(find "$where" -maxdepth 1 -type d -name "pmon-[0-9]*" -user "$TEST_UID")
  [ -z "$left" ] || fail "$name: a cgroup owned by $TEST_USER appeared: $left"
  echo "ok: $name: auto -> $fb (stderr: '$said'), E1 stopped; --confine cgroup -> 125"
done

# No namespaces either: in a user namespace of the user's whose limits
# allow no further user or PID namespace, auto comes down to subreaper, and
# the command's stderr gets one short warning line (the reasons in full
# under -v).
nons='echo 0 > /proc/sys/user/max_user_namespaces && echo 0 > /proc/sys/user/max_pid_namespaces && exec "$@"'
if as_user_in "$CG" unshare --user --map-root-user sh -c "$nons" sh true 2>/dev/null; then
  rc=0
  as_user_in "$CG" unshare --user --map-root-user sh -c "$nons" sh "$PMON" run --report "$u/rs.json" -- true \
    2> "$u/err" || rc=$?
  [ "$rc" = 0 ] || fail "no namespaces: pmon exit $rc: $(cat "$u/err")"
  [ "$(field "$u/rs.json" confinement)" = subreaper ] || fail "no namespaces: auto picked $(field "$u/rs.json" confinement)"
  [ "$(wc -l < "$u/err")" = 1 ] || fail "no namespaces: want one line on stderr, got: $(cat "$u/err")"
  [ "$(wc -c < "$u/err")" -le 120 ] || fail "no namespaces: the warning is not short: $(cat "$u/err")"
  [ "$(cat "$u/err")" = "pmon: warning: cgroup and pidns are unavailable here; using the weaker subreaper backend (see 'pmon doctor')" ] ||
    fail "no namespaces: $(cat "$u/err")"
  [ "$(array_items "$u/rs.json" confinement_passed_over | grep -c .)" = 2 ] || fail "no namespaces: report: $(cat "$u/rs.json")"
  as_user_in "$CG" unshare --user --map-root-user sh -c "$nons" sh "$PMON" run -v -- true 2> "$u/verr" ||
    fail "no namespaces: -v: exit $?"
  grep -q '^pmon: pidns: .*; falling back to subreaper$' "$u/verr" || fail "no namespaces: -v: $(cat "$u/verr")"
  as_user_in "$CG" unshare --user --map-root-user sh -c "$nons" sh "$PMON" run -q -- true 2> "$u/qerr" ||
    fail "no namespaces: -q: exit $?"
  [ ! -s "$u/qerr" ] || fail "no namespaces: -q still warned: $(cat "$u/qerr")"
  echo "ok: no namespaces: auto -> subreaper, stderr: '$(cat "$u/err")'"
elif [ "$fb" != subreaper ]; then
  # (Without user namespaces the loop above had subreaper and checked it.)
  fail "cannot limit the namespaces of a user namespace here, so the subreaper warning goes unchecked"
fi
pass
