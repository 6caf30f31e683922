# SPDX-License-Identifier: Apache-2.0
# pmon as a containerd container's entrypoint (label artifact: the release
# tarball's pmon): an image from a local rootfs tarball (podman import, then
# podman save into containerd's ctr images import; no registry), run with
# ctr run with pmon as its command (["/bin/sh", "-c", "exec /bin/pmon -- ..."]:
# its stderr into a file), on a containerd of
# this scenario's own (its state, sockets and cgroup namespace in the
# scratch dir). Orphans are reaped (no zombie), ctr task kill's TERM reaches
# a setsid daemon and the main process, ctr run returns the main process's
# status (42), and afterwards no process of it and no cgroup is left.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/init_lib.inc"
. "$(dirname "$0")/containers.inc"
command -v containerd > /dev/null && command -v ctr > /dev/null || skip "containerd is not installed (scripts/deps.sh installs it)"
command -v containerd-shim-runc-v2 > /dev/null || skip "containerd-shim-runc-v2 is not installed"

ns=pmon-e2e-$$
id=pmon-e2e-$$
c=$t/ctd
mkdir -p "$c"
cat > "$c/config.toml" <<CONFIG
version = 2
root = "$c/root"
state = "$c/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$c/sock"
[ttrpc]
  address = "$c/sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$c/opt"
CONFIG
ctr_() { ctr --address "$c/sock" --namespace "$ns" "$@"; }

stop_containerd() {
  ctr_ task kill -s SIGKILL "$id" > /dev/null 2>&1 || true
  ctr_ task delete "$id" > /dev/null 2>&1 || true
  ctr_ container delete "$id" > /dev/null 2>&1 || true
  ctr_ images rm "$IMAGE" > /dev/null 2>&1 || true
  if [ -n "${ctd_pid:-}" ]; then
    kill -TERM "$ctd_pid" 2> /dev/null || true
    wait "$ctd_pid" 2> /dev/null || true
  fi
  # The namespace's parent cgroups containerd made (empty by now).
  find /sys/fs/cgroup -maxdepth 3 -depth -type d -name "$ns" -exec rmdir {} + 2> /dev/null || true
}
CONTAINERS_EXTRA_CLEANUP=stop_containerd

containerd --config "$c/config.toml" > "$c/log" 2>&1 &
ctd_pid=$!
record_pid "$ctd_pid"
for _ in $(seq 200); do [ -S "$c/sock" ] && break; sleep 0.05; done
[ -S "$c/sock" ] || fail "containerd did not start: $(tail -5 "$c/log")"

make_image
podman_ save --format docker-archive -o "$t/image.tar" "$IMAGE" > /dev/null 2>&1 || fail "podman save failed"
ctr_ images import --snapshotter native "$t/image.tar" > "$t/import.log" 2>&1 || fail "ctr images import failed: $(cat "$t/import.log")"

# pmon's stderr goes to a file on the shared mount (sh execs pmon, which is
# PID 1 from then on): what the container writes last can be lost between
# containerd's FIFOs and ctr as the task exits, and pmon's last line is
# what this scenario reads.
ctr_ run --snapshotter native --env PMON_INIT_GRACE=300ms --env PMON_INIT_VERBOSITY=2 \
  --mount "type=bind,src=$t/shared,dst=/shared,options=rbind:rw" \
  "$IMAGE" "$id" /bin/sh -c 'exec /bin/pmon -- sh -c "$0" 2> /shared/pmon.err' "$MAIN" \
  > "$t/ctr.out" 2> "$t/ctr.err" < /dev/null &
ctr_pid=$!
record_pid "$ctr_pid"
wait_file "$t/shared/ready" || fail "the container's processes never started: $(cat "$t/ctr.err" "$t/shared/pmon.err" 2> /dev/null)"
init=$(ctr_ task ls | awk -v id="$id" '$1 == id { print $2 }')
[ -n "$init" ] && [ "$init" != 0 ] || fail "no pid for the container's init"
cmp -s "/proc/$init/exe" "$CPMON" || fail "the container's PID 1 is not the pmon under test"
check_reaped "$init" "containerd"
cgs=$(find /sys/fs/cgroup -maxdepth 6 -type d -path "*/$ns/$id" 2> /dev/null)
[ -n "$cgs" ] || fail "cannot find the container's cgroups ($ns/$id)"
echo "ok: ctr run with pmon as the entrypoint: orphans reaped"

ctr_ task kill -s SIGTERM "$id"
for _ in $(seq 400); do kill -0 "$ctr_pid" 2> /dev/null || break; sleep 0.05; done
kill -0 "$ctr_pid" 2> /dev/null && fail "ctr task kill TERM did not end the container in 20 s"
rc=0; wait "$ctr_pid" || rc=$?
[ "$rc" = 42 ] || fail "ctr run exit $rc, want the main process's 42: $(tail -5 "$t/ctr.err")"
check_stopped "ctr task kill"
grep -Eq '^pmon: init: reaped .*; [0-9]+ process(es)? left running (was|were) stopped$' "$t/shared/pmon.err" ||
  fail "pmon did not stop the leftovers itself: $(grep '^pmon' "$t/shared/pmon.err" | tail -5)"
echo "ok: ctr task kill TERM reached the setsid daemons; ctr run exit 42; nothing of the container is left running"

ctr_ task delete "$id" > /dev/null 2>&1 || true
ctr_ container delete "$id" > /dev/null
left=$(for cg in $cgs; do if [ -d "$cg" ]; then echo "$cg"; fi; done)
check_keeper_gone "ctr container delete"
[ -z "$left" ] || fail "cgroups left after the container was deleted: $left"
echo "ok: none of its cgroups is left"
pass
