# An unprivileged user with NO delegated cgroup (its process in the root
# cgroup, or in a cgroup root made and kept): --confine auto falls back to
# pidns (a user namespace) where the kernel allows it, else subreaper, and says so, in exactly one stderr line and in the report's
# confinement_passed_over; the subreaper drain loop still stops an E1 daemon;
# --confine cgroup fails closed with 125 and one line saying what to do.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/unpriv.inc"

acquire_user
u=$t/u
mkdir "$u" && chown "$TEST_UID:$TEST_GID" "$u"
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

  # A quiet command: the only thing on stderr is why cgroup was passed over.
  rc=0
  as_user_in "$where" "$PMON" run --report "$u/r.json" -- true 2> "$u/err" || rc=$?
  [ "$rc" = 0 ] || fail "$name: auto: pmon exit $rc: $(cat "$u/err")"
  [ "$(field "$u/r.json" confinement)" = $fb ] ||
    fail "$name: auto picked $(field "$u/r.json" confinement), not $fb"
  [ "$(wc -l < "$u/err")" = 1 ] || fail "$name: want exactly one line on stderr, got: $(cat "$u/err")"
  grep -q '^pmon: cgroup: .*Permission denied.*; falling back to '"$fb"'$' "$u/err" ||
    fail "$name: the stderr line does not say why cgroup was passed over: $(cat "$u/err")"
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
  echo "ok: $name: auto -> $fb (said once), E1 stopped; --confine cgroup -> 125"
done
pass
