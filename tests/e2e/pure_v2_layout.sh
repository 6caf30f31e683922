# SPDX-License-Identifier: Apache-2.0
# A pure cgroup v2 host, emulated: in a private mount namespace the hybrid
# tree under /sys/fs/cgroup is unmounted and cgroup2 is mounted there
# instead (the host's mounts are untouched). pmon must find the mount from
# mountinfo, put its leaf under /sys/fs/cgroup/..., report that path, and stop
# an E1 daemon. From outside, the same leaf is seen at the hybrid path while
# the call runs, and is gone afterwards.
. "$(dirname "$0")/common.inc"

[ "$(id -u)" = 0 ] || skip "needs root to unshare a mount namespace and mount cgroup2"
command -v unshare >/dev/null || skip "unshare is not installed"
CG=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$CG" ] || skip "no cgroup2 file system is mounted"
unshare -m --propagation private true 2>/dev/null || skip "cannot unshare a mount namespace here"

name=pmon-test-purev2-$$
S=$CG/$name
mkdir "$S" || fail "cannot create $S"
runner=""
_pure_cleanup() {
  # A failed check leaves the call waiting for $t/go: cancel it (pmon stops
  # its tree on TERM), then the usual cleanup, then our cgroups.
  if [ -n "$runner" ]; then kill -TERM "$runner" 2>/dev/null; wait "$runner" 2>/dev/null || true; fi
  _cleanup
  find "$S" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null
  rmdir "$S" || echo "warning: could not remove $S" >&2
}
trap _pure_cleanup EXIT

outer_ns=$(readlink /proc/self/ns/mnt)
# Inside: refuse to touch mounts unless this really is another namespace.
unshare -m --propagation private sh -c '
  [ "$(readlink /proc/self/ns/mnt)" != "$1" ] || { echo "not in a new mount namespace" >&2; exit 90; }
  umount -R /sys/fs/cgroup 2>/dev/null || true
  mount -t cgroup2 cgroup2 /sys/fs/cgroup || exit 91
  awk '\''$9 ~ /^cgroup/ { print $5, $9 }'\'' /proc/self/mountinfo > "$2/mounts"
  echo $$ > "/sys/fs/cgroup/$3/cgroup.procs" || exit 92
  shift 3
  exec "$@"' sh "$outer_ns" "$t" "$name" \
  "$PMON" run -q --report "$t/r.json" -- sh -c "$(
    cat <<EOF
setsid sh -c 'echo \$\$ \$(cut -d" " -f22 /proc/\$\$/stat) > $t/daemon.tmp; mv $t/daemon.tmp $t/daemon; exec sleep 1000' &
while [ ! -f $t/daemon ]; do sleep 0.01; done
grep ^0:: /proc/self/cgroup > $t/cg
touch $t/ready
while [ ! -e $t/go ]; do sleep 0.01; done
EOF
  )" &
runner=$!

# Bounded wait for the call to be running (or the namespace setup to fail).
for _ in $(seq 3000); do
  [ -e "$t/ready" ] || ! kill -0 "$runner" 2>/dev/null && break
  sleep 0.01
done
if [ ! -e "$t/ready" ]; then
  rc=0; wait "$runner" || rc=$?
  runner=""
  [ "$rc" = 91 ] && skip "cannot mount cgroup2 in a private mount namespace"
  fail "the call never started (exit $rc)"
fi
read -r dpid dst < "$t/daemon"
echo "$dpid $dst" >> "$t/pids"; echo "$dpid $dst" >> "$STATE/pids"

[ "$(cat "$t/mounts")" = "/sys/fs/cgroup cgroup2" ] ||
  fail "the namespace is not pure v2: $(cat "$t/mounts")"
rel=$(sed 's/^0:://' "$t/cg")
case $rel in
  "/$name"/pmon-*) ;;
  *) fail "the call runs in $rel, not in a leaf under /$name" ;;
esac
# Outside, the leaf is the same cgroup at the hybrid path, daemon included.
grep -qx "$dpid" "$CG$rel/cgroup.procs" || fail "daemon $dpid is not in $CG$rel seen from outside"

touch "$t/go"
rc=0; wait "$runner" || rc=$?
runner=""
[ "$rc" = 0 ] || fail "pmon exit $rc"
report_is "$t/r.json" confinement=cgroup "cgroup=/sys/fs/cgroup$rel" cleanup_verified=true
! alive "$dpid" "$dst" || fail "daemon $dpid survived"
[ ! -d "$CG$rel" ] || fail "leaf $CG$rel is left (seen from outside)"
left=$(find "$S" -mindepth 1 -type d)
[ -z "$left" ] || fail "cgroups left under $S: $left"
# The host's own layout is untouched.
[ "$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)" = "$CG" ] ||
  fail "the host's cgroup2 mount moved"
pass "leaf /sys/fs/cgroup$rel = $CG$rel"
