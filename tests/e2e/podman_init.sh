# SPDX-License-Identifier: Apache-2.0
# pmon as the init podman starts: podman run --init --init-path <pmon>
# (label artifact: the release tarball's pmon). The image comes from a local
# rootfs tarball (podman import). In the container: orphans are reaped (no
# zombie), podman stop's TERM reaches a setsid daemon and the main process,
# a daemon that ignores TERM is stopped too, podman wait gives the main
# process's status (42), and once the container is removed no process of it
# and none of its cgroups is left.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/init_lib.inc"
. "$(dirname "$0")/containers.inc"

make_image
cid=$(podman_ run -d "${PODMAN_RUN_OPTS[@]}" --init --init-path "$CPMON" \
  -e PMON_INIT_GRACE=300ms -e PMON_INIT_VERBOSITY=2 -v "$t/shared:/shared" "$IMAGE" sh -c "$MAIN" 2> "$t/run.err") ||
  fail "podman run failed: $(cat "$t/run.err")"
wait_file "$t/shared/ready" || fail "the container's processes never started: $(podman_ logs "$cid" 2>&1 | tail -5)"
init=$(podman_ inspect --format '{{.State.Pid}}' "$cid")
[ -n "$init" ] && [ "$init" != 0 ] || fail "no pid for the container's init"
# PID 1 is pmon, started the way podman starts an init.
cmd=$(tr '\0' ' ' < "/proc/$init/cmdline")
case $cmd in "/run/podman-init -- sh -c"*) ;; *) fail "the container's PID 1 is '$cmd', not the init podman was given" ;; esac
cmp -s "/proc/$init/exe" "$CPMON" || fail "the container's PID 1 is not the pmon under test"
check_reaped "$init" "podman"
cgs=$(find /sys/fs/cgroup -maxdepth 6 -type d -name "*$cid*" 2> /dev/null)
[ -n "$cgs" ] || fail "cannot find the container's cgroups (named after $cid)"
echo "ok: podman run --init --init-path pmon: PID 1 is pmon, orphans reaped"

podman_ stop -t 10 "$cid" > /dev/null 2> "$t/stop.err" || fail "podman stop failed: $(cat "$t/stop.err")"
rc=$(podman_ wait "$cid")
[ "$rc" = 42 ] || fail "podman wait says $rc, want the main process's 42: $(podman_ logs "$cid" 2>&1 | tail -8)"
check_stopped "podman stop"
podman_ logs "$cid" 2>&1 | grep -Eq '^pmon: init: reaped .*; [0-9]+ process(es)? left running (was|were) stopped$' ||
  fail "pmon did not stop the leftovers itself: $(podman_ logs "$cid" 2>&1 | grep '^pmon' | tail -5)"
echo "ok: podman stop reached the setsid daemons; exit 42 came back; nothing of the container is left running"

podman_ rm "$cid" > /dev/null
left=$(for cg in $cgs; do if [ -d "$cg" ]; then echo "$cg"; fi; done)
check_keeper_gone "podman rm"
[ -z "$left" ] || fail "cgroups left after podman rm: $left"
echo "ok: podman rm: none of its cgroups is left"
pass
