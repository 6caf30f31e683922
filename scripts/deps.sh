#!/usr/bin/env bash
# Installs the Debian packages pmon builds and tests with (only the missing
# ones; needs root or sudo for that). Safe to run again.
set -euo pipefail
pkgs=(cmake g++ make libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev
      libbenchmark-dev tini strace hyperfine python3 jq
      pybind11-dev python3-dev python3-pytest python3-venv util-linux passwd procps
      pkg-config libsystemd-dev runc busybox-static file help2man man-db dpkg-dev
      python3-setuptools python3-wheel
      systemd dbus-user-session   # a real user manager for the systemd scope test
      g++-aarch64-linux-gnu qemu-user-static googletest   # scripts/release.sh: the aarch64 pmon and its checks
      python3-build lintian podman containerd             # the artifacts: wheel, .deb check, container scenarios
      clang-19 libclang-rt-19-dev)  # scripts/fuzz.sh: libFuzzer (clang 14 cannot compile GCC 12's <expected>)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# Node and npm for the Node package's tests: Debian's, unless a node and an
# npm are there already (a NodeSource nodejs carries its own npm, which
# Debian's npm package would conflict with).
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "pmon: installing ${missing[*]}"
  sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
  $sudo_ apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
