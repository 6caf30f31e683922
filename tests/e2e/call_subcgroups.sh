# SPDX-License-Identifier: Apache-2.0
# The call owns its leaf (it may write there, as a delegated user may), so it
# can make cgroups of its own below it, move a daemon into one, and - after
# moving itself out of the leaf, as cgroup v2's no-internal-processes rule
# demands - enable controllers in the leaf's cgroup.subtree_control. pmon
# must still stop everything in the whole subtree and remove it, sub-cgroups
# included.
. "$(dirname "$0")/common.inc"

[ "$(id -u)" = 0 ] || skip "needs root to make the cgroup layout"
CG=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$CG" ] || skip "no cgroup2 file system is mounted"
have_backend cgroup || skip "the cgroup backend is not available"

R=$CG/pmon-test-subcg-$$
mkdir "$R" "$R/inner" || fail "cannot create $R"
trap '_cleanup; find "$R" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null; rmdir "$R"' EXIT
# Enable in $R whatever controllers reach it, the way a host hands out a
# subtree: $R then may hold no processes (pmon lives in $R/inner), and the
# leaves pmon makes under $R get those controllers.
for c in $(cat "$R/cgroup.controllers"); do
  echo "+$c" > "$R/cgroup.subtree_control" || fail "cannot enable $c in $R"
done
if [ -n "$(cat "$R/cgroup.subtree_control")" ]; then
  ! sh -c 'echo $$ > "$1/cgroup.procs"' sh "$R" 2>/dev/null ||
    fail "a process entered $R although it has controllers enabled"
fi

rc=0
sh -c 'echo $$ > "$1/inner/cgroup.procs" && shift && exec "$@"' sh "$R" \
  "$PMON" run -q --cgroup-root "$R" --report "$t/r.json" -- sh -c '
  L='"$CG"'$(sed -n "s/^0:://p" /proc/self/cgroup)
  echo "$L" > '"$t"'/leaf
  mkdir "$L/sub" "$L/sub2" || exit 90
  setsid sh -c "echo \$\$ \$(cut -d\" \" -f22 /proc/\$\$/stat) > '"$t"'/daemon.tmp;
                mv '"$t"'/daemon.tmp '"$t"'/daemon; exec sleep 1000" &
  while [ ! -f '"$t"'/daemon ]; do sleep 0.01; done
  read -r d _ < '"$t"'/daemon
  echo "$d" > "$L/sub/cgroup.procs" || exit 91
  # The leaf may not have both processes and controllers for its children.
  ctl=$(cat "$L/cgroup.controllers")
  if [ -n "$ctl" ]; then
    for c in $ctl; do echo "+$c" > "$L/cgroup.subtree_control"; done 2>/dev/null &&
      { echo "enabled while inside" > '"$t"'/ctl; exit 92; }
    echo $$ > "$L/sub2/cgroup.procs" || exit 93
    for c in $ctl; do echo "+$c" > "$L/cgroup.subtree_control" || exit 94; done
    cat "$L/cgroup.subtree_control" > '"$t"'/ctl
  fi
  exit 0' || rc=$?
read -r dpid dst < "$t/daemon"
echo "$dpid $dst" >> "$t/pids"; echo "$dpid $dst" >> "$STATE/pids"
[ "$rc" = 0 ] || fail "pmon exit $rc (90+: the call's own cgroup steps failed)"
leaf=$(cat "$t/leaf")
case $leaf in
  "$R"/pmon-*) ;;
  *) fail "leaf $leaf is not under $R" ;;
esac
! alive "$dpid" "$dst" || fail "daemon $dpid in the call's own sub-cgroup survived"
report_is -m "the report: the leaf, the daemon in $leaf/sub a leftover" "$t/r.json" "cgroup=$leaf" \
  "leftovers[pid=$dpid]!=(absent)" cleanup_verified=true
[ ! -d "$leaf/sub" ] || fail "the call's sub-cgroup $leaf/sub is left"
[ ! -d "$leaf" ] || fail "leaf $leaf is left (it had sub-cgroups)"
[ "$(find "$R" -mindepth 1 -type d)" = "$R/inner" ] || fail "cgroups left: $(find "$R" -mindepth 1 -type d)"
if [ -f "$t/ctl" ]; then
  echo "ok: controllers enabled in the leaf after the call left it: $(cat "$t/ctl")"
else
  echo "note: no controllers reach $R here; the subtree_control part was not exercised"
fi
pass
