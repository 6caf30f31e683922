# SPDX-License-Identifier: Apache-2.0
# pmon doctor: as root it finds cgroup2, probes clone3 into a leaf, pidfd and
# cgroup.kill for real, picks cgroup, exits 0, and --json parses and agrees.
# As an unprivileged user without a delegated cgroup, auto is not cgroup and
# the reason is given (own cgroup not writable; systemd not reachable).
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/unpriv.inc"

"$PMON" doctor > "$t/out" || fail "doctor as root: exit $?: $(cat "$t/out")"
for line in '^cgroup2 +yes +mounted at ' '^own cgroup +yes ' '^delegated +yes ' \
            '^clone3 into cgroup +yes +probed' '^cgroup.kill +yes +probed' \
            '^pidfd +yes +probed: pidfd_open, pidfd_send_signal, waitid\(P_PIDFD\)' \
            '^subreaper +yes ' '^systemd +(yes|no) +.' '^pid namespaces +(yes|no) ' \
            '^user namespaces +(yes|no) ' '^controllers +(yes|no) +leaves get: ' '^auto +yes +cgroup'; do
  grep -Eq "$line" "$t/out" || fail "doctor as root: no line /$line/ in: $(cat "$t/out")"
done
"$PMON" doctor --json > "$t/j" || fail "doctor --json as root: exit $?"
report_is -m "doctor --json as root" "$t/j" version=1 ok=true auto.backend=cgroup backends.cgroup.available=true \
  'checks[name=cgroup.kill,ok=true]!=(absent)'

acquire_user
rc=0
as_user_in "$CG" env -u DBUS_SESSION_BUS_ADDRESS XDG_RUNTIME_DIR="$u" "$PMON" doctor > "$u/out" || rc=$?
[ $rc = 0 ] || fail "doctor unprivileged: exit $rc (subreaper works): $(cat "$u/out")"
grep -Eq '^delegated +no +.*Permission denied' "$u/out" || fail "doctor unprivileged: no reason why cgroup is out: $(cat "$u/out")"
grep -Eq '^systemd +no +no systemd manager reachable' "$u/out" || fail "doctor unprivileged: systemd line: $(cat "$u/out")"
grep -Eq '^auto +yes +(pidns|subreaper) \(passed over: cgroup: .*Permission denied' "$u/out" ||
  fail "doctor unprivileged: auto line: $(cat "$u/out")"
as_user_in "$CG" env -u DBUS_SESSION_BUS_ADDRESS XDG_RUNTIME_DIR="$u" "$PMON" doctor --json > "$u/j" || true
report_is -m "doctor --json unprivileged" "$u/j" ok=true auto.backend!=cgroup backends.cgroup.available=false \
  'auto.passed_over.0^=cgroup: '
pass
