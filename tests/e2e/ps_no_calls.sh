# SPDX-License-Identifier: Apache-2.0
# pmon ps with no live call says so (an empty screen is no answer), and
# pmon ps --json stays valid JSON with an empty list. The machine may run
# other calls, so pmon looks from a cgroup namespace of this scenario's own:
# a fresh cgroup2 mount there shows only this scenario's cgroup.
. "$(dirname "$0")/common.inc"

[ "$(id -u)" = 0 ] || skip "needs root to make a cgroup and unshare cgroup and mount namespaces"
command -v unshare >/dev/null || skip "unshare is not installed"
command -v python3 >/dev/null || skip "python3 is not installed (to check the JSON)"
CG=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$CG" ] || skip "no cgroup2 file system is mounted"

S=$CG/pmon-test-psnone-$$
mkdir "$S" || fail "cannot create $S"
_ps_cleanup() {
  _cleanup
  find "$S" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null
  rmdir "$S" || echo "warning: could not remove $S" >&2
}
trap _ps_cleanup EXIT

# Runs "$@" with $S as the cgroup root it sees (its own cgroup2 mount).
in_own_cgroupns() {
  sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$S" \
    unshare --cgroup --mount --propagation private sh -c '
      umount -R /sys/fs/cgroup 2>/dev/null || true
      mount -t cgroup2 cgroup2 /sys/fs/cgroup || exit 91
      exec "$@"' sh "$@"
}

rc=0
in_own_cgroupns "$PMON" ps > "$t/ps" 2> "$t/ps.err" || rc=$?
[ "$rc" != 91 ] || skip "cannot mount cgroup2 in a private mount namespace"
[ "$rc" = 0 ] || fail "pmon ps exit $rc: $(cat "$t/ps.err")"
[ ! -s "$t/ps.err" ] || fail "pmon ps wrote to stderr: $(cat "$t/ps.err")"
[ "$(wc -l < "$t/ps")" = 1 ] && grep -q '^no live pmon calls under /sys/fs/cgroup' "$t/ps" ||
  fail "pmon ps with no call: '$(cat "$t/ps")'"

in_own_cgroupns "$PMON" ps -a > "$t/psa" || fail "pmon ps -a exit $?"
grep -q '^no pmon cgroups under /sys/fs/cgroup' "$t/psa" || fail "pmon ps -a with no leaf: '$(cat "$t/psa")'"

in_own_cgroupns "$PMON" ps --json > "$t/ps.json" || fail "pmon ps --json exit $?"
report_is -m "pmon ps --json" "$t/ps.json" 'calls=[]' version=1

# Seen from there, a running call is listed (so the empty answer above was
# not blindness), and once it is over, the answer is "none" again.
in_own_cgroupns sh -c '"$1" run -q --confine cgroup -- sh -c "touch $2/ready; while [ ! -e $2/go ]; do sleep 0.02; done" &
  for _ in $(seq 1500); do [ -e "$2/ready" ] && break; sleep 0.02; done
  "$1" ps > "$2/ps.during"; touch "$2/go"; wait' sh "$PMON" "$t" || fail "the call in the namespace failed"
grep -q '^/sys/fs/cgroup/pmon-' "$t/ps.during" || fail "pmon ps did not list the running call: $(cat "$t/ps.during")"
! grep -q 'no live' "$t/ps.during" || fail "pmon ps said none while a call ran"
in_own_cgroupns "$PMON" ps > "$t/ps2" || fail "pmon ps exit $?"
grep -q '^no live pmon calls' "$t/ps2" || fail "pmon ps after the call: '$(cat "$t/ps2")'"
pass
