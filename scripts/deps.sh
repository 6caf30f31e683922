#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages pmon builds and tests with (only the missing
# ones; needs root or sudo for that). Safe to run again.
#   scripts/deps.sh           everything the test command needs
#   scripts/deps.sh --build   only what building the pmon executable needs
set -euo pipefail
build_only=0
case ${1:-} in
  --build) build_only=1 ;;
  "") ;;
  *) echo "usage: $0 [--build]" >&2; exit 2 ;;
esac
build_pkgs=(cmake g++ make lld libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libre2-dev pkg-config libsystemd-dev python3 libcpp-httplib-dev)
pkgs=(cmake g++ make lld libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libre2-dev libgtest-dev libgmock-dev
      libbenchmark-dev tini strace hyperfine python3 jq
      libcpp-httplib-dev curl   # pmon sandboxd's REST API, and its scenario's client
      pybind11-dev python3-dev python3-pytest python3-venv util-linux passwd procps
      pkg-config libsystemd-dev runc busybox-static file help2man man-db dpkg-dev
      python3-setuptools python3-wheel
      ccache   # the objects of build/ serve the Python package's own build (e2e pip_install)
      systemd dbus-user-session   # a real user manager for the systemd scope test
      g++-aarch64-linux-gnu qemu-user-static googletest   # scripts/release.sh: the aarch64 pmon and its checks
      qemu-system-arm cpio   # scripts/guest-aarch64.sh: the aarch64 pmon in an arm64 guest
      libre2-dev:arm64    # (its RE2, from Debian's arm64 archive: the architecture is added for it)
      libgrpc++-dev:arm64 libprotobuf-dev:arm64 libcpp-httplib-dev:arm64   # the aarch64 pmon-sandboxd
      python3-build lintian podman containerd             # the artifacts: wheel, .deb check, container scenarios
      libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc   # pmon-sandboxd (gRPC)
      python3-grpcio python3-protobuf   # its tests' gRPC client
      catatonit python3-yaml   # its pod under podman kube play (the pod's infra process; the pod made from the template)
      clang-19 libclang-rt-19-dev)  # scripts/fuzz.sh: libFuzzer (clang 14 cannot compile GCC 12's <expected>)
[ $build_only = 0 ] || pkgs=("${build_pkgs[@]}")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# Node and npm for the Node package's tests: Debian's, unless a node and an
# npm are there already (a NodeSource nodejs carries its own npm, which
# Debian's npm package would conflict with).
if [ $build_only = 0 ]; then
  command -v node >/dev/null || missing+=(nodejs)
  command -v npm >/dev/null || missing+=(npm)
fi
[ ${#missing[@]} -gt 0 ] || exit 0

# On a machine that has just booted, apt's daily jobs (or cloud-init) hold
# apt's locks for minutes, and apt-get fails at once (exit 100) while they
# do. apt-get waits for the dpkg lock itself when given DPkg::Lock::Timeout,
# but apt-get update does not wait for the package lists' lock: so before
# each apt-get, wait until no process holds any of them, and say so.
lock_timeout=${PMON_APT_LOCK_TIMEOUT:-1200}
read -r -a apt_locks <<< "${PMON_APT_LOCKS:-/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock /var/cache/apt/archives/lock}"

# The pid of a process that holds a lock on FILE, from /proc/locks (which
# names a file by device and inode), or nothing.
lock_holder() {
  local dev ino
  read -r dev ino < <(stat -L -c '%d %i' "$1" 2> /dev/null) || return 0
  local want
  want=$(printf '%02x:%02x:%s' $(((dev >> 8) & 0xfff)) $(((dev & 0xff) | ((dev >> 12) & 0xfff00))) "$ino")
  awk -v want="$want" '$2 != "->" && $6 == want { print $5; exit }' /proc/locks
}

wait_for_apt() {
  local waited=0 f pid=""
  for (( ; ; waited++)); do
    pid=""
    for f in "${apt_locks[@]}"; do
      pid=$(lock_holder "$f")
      [ -z "$pid" ] || break
    done
    [ -n "$pid" ] || return 0
    local who="pid $pid"
    [ -r "/proc/$pid/comm" ] && who="$(cat "/proc/$pid/comm") (pid $pid)"
    if [ $waited = 0 ]; then
      echo "pmon: waiting for $who to release $f (apt's daily jobs hold it for minutes after a machine boots; up to ${lock_timeout}s)"
    elif [ $((waited % 30)) = 0 ]; then
      echo "pmon: still waiting for $who to release $f (${waited}s)"
    fi
    if [ "$waited" -ge "$lock_timeout" ]; then
      echo "pmon: $who has held $f for ${lock_timeout}s; let it finish, or stop it, and run $0 again" >&2
      exit 1
    fi
    sleep 1
  done
}

echo "pmon: installing ${missing[*]}"
sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
apt_opts=(-q -o "DPkg::Lock::Timeout=$lock_timeout")
wait_for_apt
# An arm64 package (the aarch64 cross build's libraries): dpkg takes that
# architecture's packages beside the machine's own once it is added.
case " ${missing[*]}" in
  *:arm64*) dpkg --print-foreign-architectures | grep -qx arm64 || $sudo_ dpkg --add-architecture arm64 ;;
esac
$sudo_ apt-get "${apt_opts[@]}" update
wait_for_apt
DEBIAN_FRONTEND=noninteractive $sudo_ apt-get "${apt_opts[@]}" install -y --no-install-recommends "${missing[@]}"
