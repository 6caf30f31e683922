# SPDX-License-Identifier: Apache-2.0
# systemd: an unprivileged pmon whose own cgroup is not writable asks a
# systemd manager for a Delegate=yes scope. With no manager reachable (no
# bus, no private socket) it says so in the one line that explains why
# cgroup is unavailable: --confine cgroup fails closed (125), auto falls
# back and says why under -v. (The D-Bus message itself is covered by the unit test
# Systemd.StartTransientUnitMessage.)
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/unpriv.inc"
acquire_user

rc=0
as_user_in "$CG" env -u DBUS_SESSION_BUS_ADDRESS XDG_RUNTIME_DIR="$u" \
  "$PMON" run --confine cgroup -- true 2> "$u/err" || rc=$?
[ $rc = 125 ] || fail "--confine cgroup without delegation or systemd: exit $rc, want 125"
[ "$(wc -l < "$u/err")" = 1 ] || fail "want one line: $(cat "$u/err")"
grep -q "asked systemd for a delegated scope: no systemd manager reachable (sd_bus_open_user: .*; no $u/systemd/private)" "$u/err" ||
  fail "the line does not say systemd was tried and why it failed: $(cat "$u/err")"

rc=0
as_user_in "$CG" env -u DBUS_SESSION_BUS_ADDRESS XDG_RUNTIME_DIR="$u" \
  "$PMON" run -v -- true 2> "$u/err" || rc=$?
[ $rc = 0 ] || fail "auto: exit $rc: $(cat "$u/err")"
grep -q '^pmon: cgroup: .*asked systemd for a delegated scope: no systemd manager reachable.*; falling back to ' "$u/err" ||
  fail "auto does not say it fell back and why: $(cat "$u/err")"
# Without its helper pmon-systemd (how the static pmon reaches systemd) the
# line says where it was looked for.
mkdir "$u/alone" && cp "$PMON" "$u/alone/pmon" && chmod 755 "$u/alone" "$u/alone/pmon"
rc=0
as_user_in "$CG" "$u/alone/pmon" run --confine cgroup -- true 2> "$u/err" || rc=$?
[ $rc = 125 ] || fail "--confine cgroup without the helper: exit $rc, want 125"
[ "$(wc -l < "$u/err")" = 1 ] || fail "want one line: $(cat "$u/err")"
grep -q "asked systemd for a delegated scope: no systemd manager reachable (pmon-systemd, the helper that talks to systemd for pmon, is neither in $u/alone nor in $u/alone/../libexec/pmon)" "$u/err" ||
  fail "the line does not say the helper is missing and where it was looked for: $(cat "$u/err")"
pass
