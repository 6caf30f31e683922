# SPDX-License-Identifier: Apache-2.0
# pmon sandboxd's pod, as Kubernetes agent-sandbox would run it (label
# artifact: the release's tarballs, PMON_DIST): the image is built from
# deploy/agent-sandbox/Containerfile with podman build and no network, on a
# local base (busybox and the C library's files, nothing else: the
# pmon-sandboxd tarball must bring every other library it needs), and the
# pod is deploy/agent-sandbox/sandbox-template.yaml's pod template, played
# with podman kube play. Changed for this machine only: the image's name,
# the host's network (ports of this run's choosing on 127.0.0.1, through
# pmon sandboxd's own flags, in place of the declared ports) and no readiness probe: /v1/health is read
# from outside, as the kubelet would. Then a real gRPC client
# (sandboxd_pod.py) runs commands in it: Execute; SendSignal SIGTERM, a
# reset and the pod's end (podman pod stop, as the kubelet stops a pod, then
# podman kube down) each leave nothing of what the commands started (setsid
# daemons and listening servers included), checked from the host by pid and
# start time, and every port free; an open Start stream gets its ExitEvent;
# after kube down nothing of the pod is left either. Then the pod is played
# again and pmon sandboxd is SIGKILLed while a command runs: nothing of the
# command or of the pod is left.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/containers.inc"

src=$(cd "$(dirname "$0")/../.." && pwd)
[ -n "${PMON_DIST:-}" ] || skip "the pod is built from the release's tarballs (PMON_DIST)"
main_tgz=$(ls "$PMON_DIST"/pmon-*-"$(uname -m)"-linux.tar.gz)
sbx_tgz=$(ls "$PMON_DIST"/pmon-*-"$(uname -m)"-linux-sandboxd.tar.gz 2> /dev/null) ||
  fail "the release has no pmon-sandboxd tarball for $(uname -m)"
command -v catatonit > /dev/null || skip "catatonit (the pod's infra process) is not installed (scripts/deps.sh installs it)"
py=$(dirname "$PMON")/generated/python
[ -f "$py/process/v1/process_pb2_grpc.py" ] || skip "no Python stubs of the process service in $py"

# podman kube play takes no --ulimit: the same limits as the other
# container scenarios, from a containers.conf of this run's.
printf '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=%s:%s"]\n' "$nproc_max" "$nproc_max" > "$t/containers.conf"
export CONTAINERS_CONF=$t/containers.conf

# The base: busybox with its applets, and the C library's own files as
# pmon-sandboxd's loader finds them (what the tarball leaves to the system).
base=localhost/pmon-sbx-base-$$:1
r=$t/base
mkdir -p "$r/bin" "$r/etc" "$r/tmp" "$r/shared"
chmod 1777 "$r/tmp"
cp "$BUSYBOX" "$r/bin/busybox"
for a in $("$BUSYBOX" --list); do [ -e "$r/bin/$a" ] || ln -s busybox "$r/bin/$a"; done
mkdir -p "$t/unpacked"
tar -C "$t/unpacked" -xzf "$main_tgz"
tar -C "$t/unpacked" -xzf "$sbx_tgz"
sbx=$(ls -d "$t"/unpacked/pmon-*-linux)/libexec/pmon/pmon-sandboxd
[ -x "$sbx" ] || fail "the tarballs unpacked give no libexec/pmon/pmon-sandboxd"
ldd "$sbx" | grep -q 'not found' && fail "pmon-sandboxd misses libraries: $(ldd "$sbx" | grep 'not found')"
for f in $(ldd "$sbx" | awk '$3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
  case $f in */libexec/pmon/lib/*) continue ;; esac
  mkdir -p "$r$(dirname "$f")"
  cp -L "$f" "$r$f"
done
printf 'root:x:0:0:root:/root:/bin/sh\nsandbox:x:1000:1000:sandbox:/workspace:/bin/sh\n' > "$r/etc/passwd"
printf 'root:x:0:\nsandbox:x:1000:\n' > "$r/etc/group"
tar -C "$r" -cf "$t/base.tar" .
podman_ import "$t/base.tar" "$base" > "$t/import.log" 2>&1 || fail "podman import failed: $(cat "$t/import.log")"
echo "ok: the base: busybox and $(find "$r" -name '*.so*' | wc -l) files of the C library, nothing else"

# The image, from the tarballs, with no network.
mkdir -p "$t/ctx"
cp "$main_tgz" "$sbx_tgz" "$t/ctx/"
image=localhost/pmon-sbx-$$:1
podman_ build --network none --build-arg BASE="$base" -f "$src/deploy/agent-sandbox/Containerfile" -t "$image" "$t/ctx" \
  > "$t/build.log" 2>&1 || fail "podman build failed: $(tail -15 "$t/build.log")"
echo "ok: podman build of deploy/agent-sandbox/Containerfile"

# The pod: the template's pod, changed as said above.
read -r grpc_port rest_port < <(/usr/bin/python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
pod=pmon-sbx-$$
/usr/bin/python3 - "$src/deploy/agent-sandbox/sandbox-template.yaml" "$t/pod.yaml" "$pod" "$image" "$grpc_port" "$rest_port" <<'PY'
import sys, yaml
src, out, name, image, grpc_port, rest_port = sys.argv[1:]
tmpl = yaml.safe_load(open(src))
spec = tmpl["spec"]["podTemplate"]["spec"]
spec["hostNetwork"] = True
c = spec["containers"][0]
c["image"] = image
c["args"] = ["--listen-host", "127.0.0.1", "--grpc-port", grpc_port, "--rest-port", rest_port]
c.pop("readinessProbe")
c.pop("ports")  # (podman maps no ports on the host's network)
pod = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": name, "labels": tmpl["spec"]["podTemplate"]["metadata"]["labels"]}, "spec": spec}
yaml.safe_dump(pod, open(out, "w"))
PY
ctr=$pod-sandboxd
printf -v pm '%q ' podman --root "$t/podman/storage" --runroot "$t/podman/run" --tmpdir "$t/podman/tmp" \
  --storage-driver vfs --cgroup-manager cgroupfs --events-backend none

# play: the pod started, its first process (host pid) in $init, its id in
# $pod_id and its cgroups in $cgs, once /v1/health answers from outside.
play() {
  podman_ kube play "$t/pod.yaml" > "$t/play.log" 2>&1 || fail "podman kube play failed: $(cat "$t/play.log")"
  init=$(podman_ inspect --format '{{.State.Pid}}' "$ctr")
  [ -n "$init" ] && [ "$init" != 0 ] || fail "no pid for the pod's container: $(podman_ logs "$ctr" 2>&1 | tail -5)"
  record_pid "$init"
  pod_id=$(podman_ pod inspect --format '{{.Id}}' "$pod")
  echo "$pod_id" >> "$t/pod_ids"
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$rest_port/v1/health" > /dev/null && break
    sleep 0.05
  done
  curl -sf "http://127.0.0.1:$rest_port/v1/health" > /dev/null ||
    fail "/v1/health never answered: $(podman_ logs "$ctr" 2>&1 | tail -5)"
  cgs=$(find /sys/fs/cgroup -maxdepth 7 -type d -name "*$pod_id*" 2> /dev/null)
  [ -n "$cgs" ] || fail "cannot find the pod's cgroups (named after $pod_id)"
}
# gone: nothing of the pod is left: no process in any of its cgroups, no
# container in podman. (Podman 4.3 with cgroupfs leaves a removed pod's own
# cgroups behind, empty, in every hierarchy: checked empty, then removed.)
gone() {
  local cg d
  [ -z "$(podman_ ps -aq)" ] || fail "podman still has containers: $(podman_ ps -a)"
  for cg in $cgs; do
    [ -d "$cg" ] || continue
    for d in $(find "$cg" -depth -type d); do
      [ -z "$(cat "$d/cgroup.procs" 2> /dev/null)" ] || fail "processes left in the pod's cgroup $d: $(cat "$d/cgroup.procs")"
      rmdir "$d" || fail "cannot remove the pod's empty cgroup $d"
    done
  done
}
# (and if the scenario ends early: the pod's cgroups, once podman is done)
_pod_cgroups() {
  local id cg d
  [ -f "$t/pod_ids" ] || return 0
  podman_ pod rm -a -f -t 0 > /dev/null 2>&1 || true
  for id in $(cat "$t/pod_ids"); do
    for cg in $(find /sys/fs/cgroup -maxdepth 7 -type d -name "*$id*" 2> /dev/null); do
      for d in $(find "$cg" -depth -type d); do rmdir "$d" 2> /dev/null || true; done
    done
  done
}
CONTAINERS_EXTRA_CLEANUP=_pod_cgroups

play
cmd=$(tr '\0' ' ' < "/proc/$init/cmdline")
case $cmd in */opt/pmon/bin/pmon*|pmon-sandboxd*) ;; *) fail "the container's first process is '$cmd'" ;; esac
echo "ok: podman kube play: pmon sandboxd is the container's first process ($cmd), as user $(awk '/^Uid:/ { print $2 }' "/proc/$init/status")"
podman_ logs "$ctr" 2>&1 | grep '^pmon' | head -3

# The pod's end as the kubelet ends it (SIGTERM, then up to
# terminationGracePeriodSeconds: podman pod stop), then kube down.
down="${pm}pod stop -t 30 $pod > /dev/null && ${pm}kube down $(printf %q "$t/pod.yaml") > /dev/null"
PYTHONPATH=$py /usr/bin/python3 "$(dirname "$0")/sandboxd_pod.py" "$grpc_port" "$rest_port" "$init" "$down" ||
  fail "the pod's scenario failed (above); pmon sandboxd said: $(podman_ logs "$ctr" 2>&1 | tail -8)"
gone
echo "ok: nothing of the pod is left"

# Again, and this time pmon sandboxd is SIGKILLed.
play
PYTHONPATH=$py /usr/bin/python3 "$(dirname "$0")/sandboxd_pod.py" "$grpc_port" "$rest_port" "$init" \
  "${pm}kube down $(printf %q "$t/pod.yaml") > /dev/null" sigkill ||
  fail "the SIGKILL scenario failed (above)"
gone
echo "ok: nothing of the pod is left"
pass
