# SPDX-License-Identifier: Apache-2.0
# Inside a runc container with its own cgroup namespace and cgroup2 mounted
# read-write at /sys/fs/cgroup, pmon run makes its leaf below the
# container's cgroup (as the host sees it), a call's setsid daemon is
# stopped, the leaf goes, and pmon doctor reports no gap but PID namespaces.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/init_lib.inc"
. "$(dirname "$0")/runc.inc"

make_bundle
id=$(runc_id cgroupns)
write_call_script "-q"
RUNC_JQ="$JQ_CGROUPNS | $(jq_cgroup2 rw)" run_call "$id"

# The container's cgroup (host view) holds the call's leaf.
ccg=$(runc_cgroups "$id" | grep -m1 unified) || true
hostcg=$(sed -n 's/^0:://p' "/proc/$dhost/cgroup")
case $hostcg in
  /"$id"/pmon-*) ;;
  *) fail "the daemon is in $hostcg, not in a leaf below the container's /$id" ;;
esac
leaf=${hostcg#/"$id"}
[ "$(sed -n 's/^0:://p' "$t/shared/cg")" = "$leaf" ] || fail "inside, the call saw $(cat "$t/shared/cg"), want $leaf"
echo "ok: the leaf is $hostcg ($leaf inside)"

finish_call "cgroupns"
[ -n "$ccg" ] && [ ! -d "$ccg$leaf" ] || fail "the leaf $ccg$leaf is still there"
echo "ok: the call's daemon was stopped and its leaf removed"

[ "$(cat "$t/shared/doctor_rc")" = 0 ] || fail "pmon doctor exit $(cat "$t/shared/doctor_rc"): $(cat "$t/shared/doctor")"
grep -q '^auto  *yes  cgroup$' "$t/shared/doctor" || fail "doctor's auto is not cgroup: $(cat "$t/shared/doctor")"
grep -q '^container  *yes .*it offers a writable cgroup2 at /sys/fs/cgroup, its own cgroup namespace' "$t/shared/doctor" ||
  fail "doctor does not say what the container offers: $(cat "$t/shared/doctor")"
! grep -q '^container cgroup' "$t/shared/doctor" || fail "doctor sees a cgroup gap: $(cat "$t/shared/doctor")"
echo "ok: pmon doctor: cgroup, no cgroup gap"
end_container
pass
