#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The aarch64 pmon starting real commands: boots a 64-bit ARM Linux guest
# (qemu-system-aarch64, emulated) with its own kernel and pure cgroup v2, and
# runs the scenarios of tests/guest-aarch64/ there with the given pmon.
#
#   scripts/guest-aarch64.sh [--cache DIR] PMON [SANDBOXD_TARBALL]
#
# PMON: the aarch64 pmon to test, linked statically: the program itself, a
# directory holding pmon or bin/pmon (a cross build such as build-aarch64/,
# an unpacked release), or the release tarball pmon-VERSION-aarch64-linux.tar.gz.
# SANDBOXD_TARBALL: pmon-VERSION-aarch64-linux-sandboxd.tar.gz, to run pmon
# sandboxd in the guest too (the sandboxd scenario; without it, that one is
# not run): pmon-sandboxd and its libraries go into the guest with the arm64
# C library's files it needs (Debian's libc6:arm64, as installed here), the
# guest gets a network card on qemu's user-mode network whose only way in is
# a port of the host's 127.0.0.1 forwarded to the process service, and a
# gRPC client on the host (tests/guest-aarch64/sandboxd_client.py,
# python3-grpcio, stubs generated here with protoc) talks to it.
#
# No Debian root is built and no aarch64 code runs on this host: the arm64
# packages of Debian's kernel (linux-image-cloud-arm64) and of busybox-static
# are downloaded with apt-get (the arm64 architecture must be added, as
# scripts/deps.sh does) and unpacked with dpkg-deb; they are kept in the cache
# (default ~/.cache/pmon-guest-aarch64) while their versions are apt's. The
# guest is an initramfs: busybox, pmon (in /opt/pmon laid out as its
# tarball: bin/pmon, libexec/pmon/...) and the scenarios; its /init
# (tests/guest-aarch64/init.sh) mounts proc, sysfs, devtmpfs and cgroup2 at
# /sys/fs/cgroup, runs each scenario, prints one line per scenario on the
# serial console and powers off. Prints each scenario's log (what it
# checked, or why it failed) and a line with its result, and the time of
# each part; exits 0 only when every
# scenario passed.
#
# Environment: PMON_GUEST_TIMEOUT (seconds qemu may run, default 420),
# PMON_GUEST_SMP (CPUs, default 2), PMON_GUEST_MEM (default 1G),
# PMON_GUEST_RESULTS (a directory to keep the guest's console log in).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

usage() { echo "usage: scripts/guest-aarch64.sh [--cache DIR] PMON|BUILD_DIR|RELEASE_TARBALL [SANDBOXD_TARBALL]"; }
cache=${XDG_CACHE_HOME:-$HOME/.cache}/pmon-guest-aarch64
target=""
sandboxd=""
while [ $# -gt 0 ]; do
  case $1 in
    --cache) [ $# -ge 2 ] || { usage >&2; exit 2; }; cache=$2; shift 2 ;;
    --cache=*) cache=${1#--cache=}; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "guest-aarch64.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) if [ -z "$target" ]; then target=$1
       elif [ -z "$sandboxd" ]; then sandboxd=$1
       else usage >&2; exit 2; fi
       shift ;;
  esac
done
[ -n "$target" ] || { usage >&2; exit 2; }
timeout_s=${PMON_GUEST_TIMEOUT:-420}
smp=${PMON_GUEST_SMP:-2}
mem=${PMON_GUEST_MEM:-1G}

die() { echo "guest-aarch64.sh: $*" >&2; exit 1; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
t_start=$(now)

run=$(mktemp -d "${TMPDIR:-/tmp}/pmon-guest-aarch64.XXXXXX")
qemu_pid=""
client_pid=""
cleanup() {
  if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then kill -9 "$qemu_pid" 2>/dev/null || true; fi
  # (SIGTERM: timeout passes it on to the client)
  if [ -n "$client_pid" ] && kill -0 "$client_pid" 2>/dev/null; then kill -TERM "$client_pid" 2>/dev/null || true; fi
  rm -rf --one-file-system "$run"
}
trap cleanup EXIT

# The pmon to test.
if [ -d "$target" ]; then
  if [ -f "$target/pmon" ]; then pmon=$target/pmon; else pmon=$target/bin/pmon; fi
elif [ "${target%.tar.gz}" != "$target" ]; then
  mkdir "$run/release"
  tar -xzf "$target" -C "$run/release" || die "cannot unpack $target"
  pmon=$(find "$run/release" -path '*/bin/pmon' -type f | head -n1)
  [ -n "$pmon" ] || die "no bin/pmon in $target"
else
  pmon=$target
fi
[ -f "$pmon" ] || die "no pmon at $pmon (build one: see scripts/release.sh's aarch64 build)"
kind=$(file -b "$pmon")
case $kind in *'ARM aarch64'*) ;; *) die "$pmon is not an aarch64 program: $kind" ;; esac
case $kind in *'statically linked'*) ;; *) die "$pmon is not linked statically (the guest has no libraries for it)" ;; esac

# pmon-sandboxd, its libraries, and what its client needs here.
if [ -n "$sandboxd" ]; then
  mkdir "$run/sandboxd"
  tar -xzf "$sandboxd" -C "$run/sandboxd" || die "cannot unpack $sandboxd"
  sbx=$(find "$run/sandboxd" -path '*/libexec/pmon/pmon-sandboxd' -type f | head -n1)
  [ -n "$sbx" ] || die "no libexec/pmon/pmon-sandboxd in $sandboxd"
  case $(file -b "$sbx") in *'ARM aarch64'*) ;; *) die "$sbx is not an aarch64 program: $(file -b "$sbx")" ;; esac
  /usr/bin/python3 -c 'import grpc' 2>/dev/null || die "python3-grpcio is missing (scripts/deps.sh installs it)"
  for tool in protoc grpc_python_plugin; do
    command -v "$tool" >/dev/null || die "$tool is missing (protobuf-compiler, protobuf-compiler-grpc: scripts/deps.sh)"
  done
  [ -d /usr/lib/aarch64-linux-gnu ] || die "no arm64 C library here (libc6:arm64: scripts/deps.sh installs it)"
fi

missing=()
command -v qemu-system-aarch64 >/dev/null || missing+=(qemu-system-arm)
command -v cpio >/dev/null || missing+=(cpio)
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "${missing[*]} missing (scripts/deps.sh installs them)"
  echo "guest-aarch64: installing ${missing[*]}"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
dpkg --print-foreign-architectures | grep -qx arm64 ||
  die "apt has no arm64 packages here: dpkg --add-architecture arm64 && apt-get update (scripts/deps.sh does)"

# The arm64 packages, downloaded once per version (the kernel's metapackage
# names the versioned image package).
t0=$(now)
mkdir -p "$cache/debs"
exec 8>"$cache/.lock"
flock 8
kernel_pkg=$(apt-cache depends linux-image-cloud-arm64:arm64 2>/dev/null |
             sed -n 's/^ *Depends: \(linux-image-[0-9].*-cloud-arm64\).*/\1/p' | head -n1)
kernel_pkg=${kernel_pkg%:arm64}
[ -n "$kernel_pkg" ] || die "apt knows no linux-image-cloud-arm64:arm64 (apt-get update after dpkg --add-architecture arm64)"
debs=()
for p in "$kernel_pkg" busybox-static; do
  v=$(apt-cache show --no-all-versions "$p:arm64" | sed -n 's/^Version: //p' | head -n1)
  [ -n "$v" ] || die "apt knows no $p:arm64"
  f=$cache/debs/${p}_${v#*:}_arm64.deb
  if [ ! -f "$f" ]; then
    rm -f "$cache/debs/${p}_"*.deb
    (cd "$run" && apt-get download -q "$p:arm64=$v" >/dev/null 2>"$run/download.err") ||
      { cat "$run/download.err" >&2; die "apt-get download $p:arm64=$v failed (are apt's package lists stale? apt-get update, then run this again)"; }
    mv "$run/${p}_"*"_arm64.deb" "$f"
  fi
  debs+=("$f")
done
# The kernel, unpacked once per package, with the modules of a virtio
# network card (for the sandboxd scenario), in the order they load.
net_modules="virtio_ring virtio virtio_mmio failover net_failover virtio_net"
kdir=$cache/kernel-$(basename "${debs[0]}" .deb)
if [ ! -f "$kdir/vmlinuz" ] || [ ! -f "$kdir/modules/done" ]; then
  rm -rf "$cache"/kernel-*
  mkdir -p "$run/k"
  dpkg-deb -x "${debs[0]}" "$run/k"
  mkdir -p "$kdir/modules"
  for m in $net_modules; do
    f=$(find "$run"/k/lib/modules -name "$m.ko" | head -n1)
    [ -n "$f" ] || die "no $m.ko in ${debs[0]}"
    cp "$f" "$kdir/modules/"
  done
  touch "$kdir/modules/done"
  cp "$run"/k/boot/vmlinuz-* "$kdir/vmlinuz.tmp" && mv "$kdir/vmlinuz.tmp" "$kdir/vmlinuz"
fi
flock -u 8
t1=$(now)
echo "guest-aarch64: packages $(basename "${debs[0]}" .deb), $(basename "${debs[1]}" .deb) ready in $(secs "$t0" "$t1") s"

# The initramfs: busybox, pmon and the scenarios. The kernel is given no
# /dev/console (no device node is made here): init opens it once devtmpfs is
# mounted.
s=$run/stage
mkdir -p "$s/bin" "$s/opt/pmon/bin" "$s/opt/pmon/tests"
dpkg-deb -x "${debs[1]}" "$run/bb"
cp "$run/bb/bin/busybox" "$s/bin/busybox"
ln -s busybox "$s/bin/sh"
cp "$repo/tests/guest-aarch64/init.sh" "$s/init"
chmod 755 "$s/init"
cp "$pmon" "$s/opt/pmon/bin/pmon"
cp "$repo"/tests/guest-aarch64/*.sh "$repo"/tests/guest-aarch64/*.inc "$s/opt/pmon/tests/"
rm "$s/opt/pmon/tests/init.sh"
if [ -n "$sandboxd" ]; then
  # pmon-sandboxd and its lib/ where pmon looks (libexec/pmon beside bin/).
  mkdir -p "$s/opt/pmon/libexec"
  cp -r "$(dirname "$sbx")" "$s/opt/pmon/libexec/"
  # The C library's files it loads (those its tarball leaves to the
  # system), from Debian's libc6:arm64 and where an arm64 Debian has them:
  # the arm64 loader searches that directory without a cache. Only those:
  # a library the tarball lacks stays missing, as on a user's system.
  mkdir -p "$s/lib/aarch64-linux-gnu"
  ln -s aarch64-linux-gnu/ld-linux-aarch64.so.1 "$s/lib/ld-linux-aarch64.so.1"
  libc_files=$(dpkg -L libc6:arm64) || die "libc6:arm64 is not installed (scripts/deps.sh installs it)"
  todo=("$s/opt/pmon/libexec/pmon/pmon-sandboxd" "$s"/opt/pmon/libexec/pmon/lib/*)
  while [ ${#todo[@]} -gt 0 ]; do
    f=${todo[0]}; todo=("${todo[@]:1}")
    for n in $(LC_ALL=C readelf -d "$f" | sed -n 's/^.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
      [ -e "$s/opt/pmon/libexec/pmon/lib/$n" ] || [ -e "$s/lib/aarch64-linux-gnu/$n" ] && continue
      if ! grep -qx "/lib/aarch64-linux-gnu/$n\|/usr/lib/aarch64-linux-gnu/$n" <<< "$libc_files"; then
        echo "guest-aarch64: $n, which ${f#"$s"} needs, is neither in the sandboxd tarball nor the C library's: the guest has none"
        continue
      fi
      cp -L "/usr/lib/aarch64-linux-gnu/$n" "$s/lib/aarch64-linux-gnu/$n"
      todo+=("$s/lib/aarch64-linux-gnu/$n")
    done
  done
  [ -e "$s/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1" ] || die "the arm64 loader is not among the libraries pmon-sandboxd needs"
  mkdir -p "$s/opt/pmon/modules"
  for m in $net_modules; do cp "$kdir/modules/$m.ko" "$s/opt/pmon/modules/"; done
  # The client's stubs, from pmon's .proto.
  mkdir -p "$run/py"
  protoc -I "$repo/src/sandboxd/proto" --python_out="$run/py" --grpc_out="$run/py" \
    --plugin=protoc-gen-grpc="$(command -v grpc_python_plugin)" process/v1/process.proto
  # The host's port forwarded to the guest's process service: a free one.
  port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  net=(-netdev "user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:$port-:9090" -device "virtio-net-device,netdev=n0")
else
  rm "$s/opt/pmon/tests/sandboxd.sh"
  net=(-nic none)
fi
(cd "$s" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | gzip -1) > "$run/initrd.gz"
t2=$(now)
echo "guest-aarch64: initramfs $(( $(stat -c %s "$run/initrd.gz") / 1024 )) KiB made in $(secs "$t1" "$t2") s;" \
     "booting (qemu-system-aarch64, TCG, $smp CPUs, $mem)"

# Boot; qemu is killed (by its pid) when it runs past the timeout.
qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on -accel tcg,thread=multi -smp "$smp" -m "$mem" \
  -nographic -monitor none -serial "file:$run/console.log" -no-reboot "${net[@]}" \
  -kernel "$kdir/vmlinuz" -initrd "$run/initrd.gz" \
  -append "console=ttyAMA0 panic=-1 quiet loglevel=3" \
  < /dev/null > "$run/qemu.log" 2>&1 &
qemu_pid=$!
timed_out=0
deadline=$(( $(date +%s) + timeout_s ))
while kill -0 "$qemu_pid" 2>/dev/null; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    timed_out=1
    kill -9 "$qemu_pid" 2>/dev/null || true
    break
  fi
  # The sandboxd scenario's client, once the guest's service listens.
  if [ -n "$sandboxd" ] && [ -z "$client_pid" ] && [ -f "$run/console.log" ] &&
     root=$(tr -d '\r' < "$run/console.log" | sed -n 's/^pmon-aarch64: sandboxd: listening, root //p' | head -n1) &&
     [ -n "$root" ]; then
    timeout 170 /usr/bin/python3 "$repo/tests/guest-aarch64/sandboxd_client.py" "$run/py" "$port" "$root" \
      > "$run/client.log" 2>&1 &
    client_pid=$!
  fi
  sleep 1
done
qrc=0
wait "$qemu_pid" || qrc=$?
qemu_pid=""
t3=$(now)
# The client, which ends with the guest's network (bounded by its timeout).
client_rc=""
if [ -n "$client_pid" ]; then
  client_rc=0; wait "$client_pid" || client_rc=$?
  client_pid=""
fi
[ -z "${PMON_GUEST_RESULTS:-}" ] || { mkdir -p "$PMON_GUEST_RESULTS" && cp "$run/console.log" "$PMON_GUEST_RESULTS/"; }

# The results: the guest's lines, one per scenario after its log, then those
# it never got to.
c=$run/console.log
tr -d '\r' < "$c" | sed -n 's/^pmon-aarch64: //p' > "$run/lines"
if ! grep -q '^system: ' "$run/lines"; then
  echo "--- qemu output:"; tail -n 20 "$run/qemu.log"
  echo "--- guest console (last 60 lines):"; tail -n 60 "$c"
  if [ $timed_out = 1 ]; then why="within ${timeout_s} s (qemu killed)"; else why="(qemu exit $qrc)"; fi
  echo "guest-aarch64: FAIL: the guest did not get to its scenarios $why"
  exit 1
fi
sed -n 's/^system: /guest-aarch64: guest: /p; s/^pmon /guest-aarch64: pmon /p' "$run/lines"
bad=0
sed -n '/^| /p; /^PASS /p; /^FAIL /p' "$run/lines" | while IFS= read -r l; do
  case $l in
    "| "*) echo "    ${l#| }" ;;
    *) set -- $l; printf '%-4s %-16s %6s s\n' "$1" "$2" "$3" ;;
  esac
done
grep -q '^FAIL ' "$run/lines" && bad=1
if [ $timed_out = 1 ]; then why="qemu was killed after ${timeout_s} s"; else why="the guest stopped early (qemu exit $qrc)"; fi
for f in "$s"/opt/pmon/tests/*.sh; do
  name=$(basename "$f" .sh)
  grep -qE "^(PASS|FAIL) $name " "$run/lines" && continue
  printf '%-4s %-16s %s\n' FAIL "$name" "(no result: $why)"
  bad=1
done
if [ -n "$sandboxd" ]; then
  if [ -z "$client_rc" ]; then
    echo "FAIL sandboxd client     (not started: the guest never said its service listens)"; bad=1
  else
    sed 's/^/    /' "$run/client.log"
    if [ "$client_rc" = 0 ]; then echo "PASS sandboxd client"; else echo "FAIL sandboxd client     (exit $client_rc)"; bad=1; fi
  fi
else
  echo "guest-aarch64: the sandboxd scenario was not run (no sandboxd tarball given)"
fi
if ! grep -qx 'done' "$run/lines"; then
  echo "--- guest console (last 30 lines):"; tail -n 30 "$c"
  echo "guest-aarch64: FAIL: the guest did not finish: $why"
  bad=1
fi
booted=$(sed -n 's/^system: .*booted in \([0-9.]*\) s$/\1/p' "$run/lines")
echo "guest-aarch64: times: packages $(secs "$t0" "$t1") s; initramfs $(secs "$t1" "$t2") s;" \
     "boot to init ${booted:-?} s (guest clock); qemu in all $(secs "$t2" "$t3") s; total $(secs "$t_start" "$(now)") s"
if [ $bad = 0 ]; then echo "guest-aarch64: all scenarios passed"; else echo "guest-aarch64: FAIL"; fi
exit $bad
