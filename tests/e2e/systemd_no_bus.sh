# systemd: an unprivileged pmon whose own cgroup is not writable asks a
# systemd manager for a Delegate=yes scope. With no manager reachable (no
# bus, no private socket) it says so in the one line that explains why
# cgroup is unavailable: --confine cgroup fails closed (125), auto falls
# back loudly. (The D-Bus message itself is covered by the unit test
# Systemd.StartTransientUnitMessage.)
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/unpriv.inc"
acquire_user
u=$t/u; mkdir "$u"; chown "$TEST_UID:$TEST_GID" "$u"

rc=0
as_user_in "$CG" env -u DBUS_SESSION_BUS_ADDRESS XDG_RUNTIME_DIR="$u" \
  "$PMON" run --confine cgroup -- true 2> "$u/err" || rc=$?
[ $rc = 125 ] || fail "--confine cgroup without delegation or systemd: exit $rc, want 125"
[ "$(wc -l < "$u/err")" = 1 ] || fail "want one line: $(cat "$u/err")"
grep -q "asked systemd for a delegated scope: no systemd manager reachable (sd_bus_open_user: .*; no $u/systemd/private)" "$u/err" ||
  fail "the line does not say systemd was tried and why it failed: $(cat "$u/err")"

rc=0
as_user_in "$CG" env -u DBUS_SESSION_BUS_ADDRESS XDG_RUNTIME_DIR="$u" \
  "$PMON" run -- true 2> "$u/err" || rc=$?
[ $rc = 0 ] || fail "auto: exit $rc: $(cat "$u/err")"
grep -q '^pmon: cgroup: .*asked systemd for a delegated scope: no systemd manager reachable.*; falling back to ' "$u/err" ||
  fail "auto does not say it fell back and why: $(cat "$u/err")"
pass
