#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pmon on the host most users have: pure cgroup v2 with systemd as PID 1, in
# a qemu guest this script boots.
#
#   scripts/guest.sh [--build DIR] [--cache DIR] [--fresh] SCENARIO...
#
# SCENARIO: a scenario script (tests/guest/*.sh or tests/e2e/*.sh), or "all":
# the escape scenarios tests/e2e/e*_*.sh, the service's tests/e2e/serve_*.sh,
# the limits' tests/e2e/limits_*.sh and every tests/guest/*.sh.
# DIR: the pmon build to test (default build/): its static pmon, the helper
# pmon-systemd, tests/helpers and the Python package (python/), if built.
# For tests/guest/node.sh and node_jobs.sh (the Node package's suite, and
# its part that `all` runs) the host's node goes
# into the guest, with the package's npm dependencies installed here from
# node/package-lock.json (npm ci; the guest has no network).
#
# The guest is Debian bookworm: a minbase root made with debootstrap from the
# mirror apt uses here, with systemd, its own kernel and initrd
# (linux-image-cloud-amd64). The root is kept in the cache (default
# ~/.cache/pmon-guest), keyed by its package list and the way it is set up;
# --fresh (and CI=true) builds it again. Each run copies the root and the
# build into an ext4 image (mke2fs -d, no mounts), boots it with
# qemu-system-x86_64 -accel tcg (no KVM needed), and a oneshot systemd unit
# runs the scenarios, writes the results as a tar to a second raw disk and
# powers off. Prints one line per scenario and the logs of those that did not
# pass; exits 0 only when all of them passed. A guest kernel that locks up
# panics and ends the boot: its report is printed, and the scenarios without
# a result run again, once, in a new boot.
#
# Needs root (debootstrap, and the scenarios' files owned by root in the
# image). Environment: PMON_GUEST_TIMEOUT (seconds qemu may run, default
# 2100), PMON_GUEST_MIRROR (a Debian mirror, default: apt's), PMON_GUEST_SMP
# (CPUs, default 2), PMON_GUEST_JOBS (scenarios at a time, default: the
# CPUs), PMON_GUEST_MEM (default 2G), PMON_GUEST_RESULTS (a directory to
# keep every scenario's log, the guest's journal and console in).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

usage() {
  echo "usage: scripts/guest.sh [--build DIR] [--cache DIR] [--fresh] SCENARIO...|all"
}
build=build
cache=${XDG_CACHE_HOME:-$HOME/.cache}/pmon-guest
fresh=0
scen_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) [ $# -ge 2 ] || { usage >&2; exit 2; }; build=$2; shift 2 ;;
    --build=*) build=${1#--build=}; shift ;;
    --cache) [ $# -ge 2 ] || { usage >&2; exit 2; }; cache=$2; shift 2 ;;
    --cache=*) cache=${1#--cache=}; shift ;;
    --fresh) fresh=1; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "guest.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) scen_args+=("$1"); shift ;;
  esac
done
[ ${#scen_args[@]} -gt 0 ] || { usage >&2; exit 2; }
[ "${CI:-}" = true ] && [ -z "${PMON_GUEST_AGAIN:-}" ] && fresh=1
timeout_s=${PMON_GUEST_TIMEOUT:-2100}
smp=${PMON_GUEST_SMP:-2}
jobs=${PMON_GUEST_JOBS:-$smp}
mem=${PMON_GUEST_MEM:-2G}

die() { echo "guest.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, and root-owned files in the guest image)"

# The build to test.
case $build in /*) ;; *) build=$PWD/$build ;; esac
[ -x "$build/pmon" ] || die "no pmon in $build (build it first: cmake -S . -B build && cmake --build build)"
[ -x "$build/pmon-systemd" ] || die "no pmon-systemd in $build (built only with libsystemd-dev installed)"
[ -d "$build/tests/helpers" ] || die "no tests/helpers in $build"
! command -v file >/dev/null || file -b "$build/pmon" | grep -q 'statically linked' ||
  die "$build/pmon is not linked statically (the guest has no matching libraries for it; sanitizer builds cannot run there)"

# The scenarios, as paths relative to the repository (tests/e2e/x.sh).
scenarios=()
for s in "${scen_args[@]}"; do
  if [ "$s" = all ]; then
    for f in "$repo"/tests/e2e/e[0-9]*_*.sh "$repo"/tests/e2e/serve_*.sh "$repo"/tests/e2e/limits_*.sh \
             "$repo"/tests/guest/*.sh; do
      [ -f "$f" ] || continue
      # Three watch the service with strace (its reads of /proc, the order
      # of its replies and signals), which says nothing of the host's
      # cgroups and takes minutes on an emulated CPU: they run on the host
      # only. The Node package's whole suite takes longer than CI can give
      # it under TCG: `all` runs its part that depends on the host's
      # cgroups (tests/guest/node_jobs.sh); the whole one runs when named
      # (scripts/guest.sh tests/guest/node.sh).
      case ${f##*/} in serve_port_waiters.sh | serve_pidns_stop_scan.sh | serve_close_slices.sh | node.sh) continue ;; esac
      # The service's protocol and input handling (framing, pipelining,
      # backpressure, hostile bytes, its socket's trust, running out of
      # fds) is the same code on any host and does not touch cgroups:
      # the host runs those; the guest's minutes go to what the host's
      # cgroups, systemd and controllers change.
      case ${f##*/} in
        serve_bad_input.sh | serve_backpressure.sh | serve_pipeline.sh | serve_line_limit.sh | \
        serve_half_lines.sh | serve_not_utf8.sh | serve_parser_limits.sh | serve_pending_cap.sh | \
        serve_stream.sh | serve_output_tiny_limit.sh | serve_socket_trust.sh | serve_fd_flood.sh) continue ;;
      esac
      # So are the service's own rules for what a job wrote and how it is
      # read (spool files, output views, waiting for input, readiness,
      # terminal ids, names), its memory and reply budgets (RLIMIT_AS, not
      # cgroups), its lock, its timers, its pty, --stdio and the shell
      # verbs' words: they stop jobs the way the scenarios kept here do.
      case ${f##*/} in
        serve_memory.sh | serve_io_budget.sh | serve_reply_budget.sh | serve_spool.sh | serve_spool_limit.sh | \
        serve_output.sh | serve_slow_views.sh | serve_waiting_input.sh | serve_ready.sh | serve_terminal_ids.sh | \
        serve_named_jobs.sh | serve_lock.sh | serve_idle_timeout.sh | serve_pty.sh | serve_stdio.sh | \
        serve_stdio_file.sh | serve_cli_verbs.sh) continue ;;
      esac
      scenarios+=("tests/${f#"$repo"/tests/}")
    done
    continue
  fi
  [ -f "$s" ] || die "no scenario $s"
  abs=$(cd "$(dirname "$s")" && pwd)/$(basename "$s")
  case $abs in
    "$repo"/tests/e2e/*.sh|"$repo"/tests/guest/*.sh) scenarios+=("${abs#"$repo"/}") ;;
    *) die "$s is neither in tests/e2e nor in tests/guest of $repo" ;;
  esac
done

# The Node package's suite runs on the host's node (Debian's in the guest is
# older than the one the package is tested with).
need_node=0
for s in "${scenarios[@]}"; do case $s in tests/guest/node.sh | tests/guest/node_jobs.sh) need_node=1 ;; esac; done
if [ $need_node = 1 ]; then
  command -v node >/dev/null && command -v npm >/dev/null ||
    die "the Node package's scenarios need node and npm on this host (scripts/deps.sh installs them)"
fi

# Host tools, installed when missing.
missing=()
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
command -v mke2fs >/dev/null || missing+=(e2fsprogs)
if [ ${#missing[@]} -gt 0 ]; then
  echo "guest.sh: installing ${missing[*]}"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Debian mirror apt uses here (deb822 .sources or one-line .list).
mirror=${PMON_GUEST_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
           grep -E '^[[:space:]]*(deb|URIs:)[[:space:]]' | grep -oE 'https?://[^[:space:]]+' |
           grep -E '/debian/?$' | head -n1 || true)
  mirror=${mirror:-http://deb.debian.org/debian}
fi
suite=bookworm

# What goes into the root: the guest needs systemd as PID 1 with logind and a
# user manager (libpam-systemd, dbus-user-session), Python with pytest for
# the package's tests, jq for the scenarios, and its kernel.
packages=(systemd systemd-sysv dbus dbus-user-session libpam-systemd python3 python3-pytest
          procps util-linux iproute2 passwd jq linux-image-cloud-amd64)

# Sets up the root in $1 once debootstrap has made it (run on the host).
configure_root() {
  local r=$1
  echo pmon-guest > "$r/etc/hostname"
  printf '127.0.0.1 localhost\n127.0.1.1 pmon-guest\n' > "$r/etc/hosts"
  echo '/dev/vda / ext4 rw,errors=remount-ro 0 1' > "$r/etc/fstab"
  # A fixed machine id: no first-boot setup in every boot.
  od -An -N16 -tx1 /dev/urandom | tr -d ' \n' > "$r/etc/machine-id"
  echo >> "$r/etc/machine-id"
  # Nothing that waits for a login or runs timers while the scenarios run.
  local u
  for u in serial-getty@ttyS0.service getty@tty1.service getty.target apt-daily.timer \
           apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer \
           systemd-timesyncd.service dpkg-db-backup.timer; do
    ln -sfn /dev/null "$r/etc/systemd/system/$u"
  done
  # The runner: a oneshot service of the system manager (not delegated: it
  # is what the system-manager scenario needs), which powers off when done.
  cat > "$r/etc/systemd/system/guest-runner.service" <<'EOF'
[Unit]
Description=pmon guest scenarios
After=multi-user.target
ConditionPathExists=/opt/pmon/runner.sh

[Service]
Type=oneshot
ExecStart=/bin/bash /opt/pmon/runner.sh
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=infinity
SuccessAction=poweroff-force
FailureAction=poweroff-force

[Install]
WantedBy=multi-user.target
EOF
  mkdir -p "$r/etc/systemd/system/multi-user.target.wants"
  ln -sfn ../guest-runner.service "$r/etc/systemd/system/multi-user.target.wants/guest-runner.service"
  # The kernel and initrd go next to the root, for qemu -kernel/-initrd.
  local k i
  k=$(ls "$r"/boot/vmlinuz-* | sort -V | tail -n1)
  i=$(ls "$r"/boot/initrd.img-* | sort -V | tail -n1)
  cp "$k" "$2/vmlinuz"
  cp "$i" "$2/initrd.img"
  rm -f "$r"/boot/vmlinuz-* "$r"/boot/initrd.img-* "$r"/vmlinuz* "$r"/initrd.img*
  rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/lib/apt/lists/* "$r"/usr/share/doc/* "$r"/usr/share/man/*
}

# The cache key: the package list, the mirror and how the root is set up.
root_version=1
key=$( { echo "$root_version $suite $mirror ${packages[*]}"; declare -f configure_root; } | sha256sum | cut -c1-16)
mkdir -p "$cache"
guestdir=$cache/root-$key
t_start=$(date +%s.%N)
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# One root build at a time (concurrent runs share the cache).
exec 8>"$cache/.lock"
flock 8
if [ $fresh = 1 ] || [ ! -f "$guestdir/ok" ]; then
  rm -rf --one-file-system "$guestdir"
  # Roots of other keys are not used any more, nor builds a killed run left.
  # (a build killed during debootstrap leaves its /proc mounted there)
  for old in "$cache"/root-* "$cache"/build.*; do
    [ -d "$old" ] || continue
    awk -v d="$old/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do umount -l "$m"; done
    rm -rf --one-file-system "$old"
  done
  tmpb=$(mktemp -d "$cache/build.XXXXXX")
  trap 'rm -rf --one-file-system "$tmpb"' EXIT
  echo "guest: building the root (debootstrap $suite from $mirror)"
  t0=$(now)
  incl=$(IFS=,; echo "${packages[*]}")
  mkdir -p "$cache/debs"
  if ! debootstrap --variant=minbase --cache-dir="$cache/debs" --include="$incl" "$suite" "$tmpb/root" "$mirror" > "$tmpb/debootstrap.log" 2>&1; then
    tail -n 30 "$tmpb/debootstrap.log" >&2
    [ -f "$tmpb/root/debootstrap/debootstrap.log" ] && tail -n 30 "$tmpb/root/debootstrap/debootstrap.log" >&2
    die "debootstrap failed (log above)"
  fi
  t1=$(now)
  configure_root "$tmpb/root" "$tmpb"
  touch "$tmpb/ok"
  mv "$tmpb" "$guestdir"
  trap - EXIT
  echo "guest: root built in $(secs "$t0" "$t1") s (debootstrap with the kernel), set up in $(secs "$t1" "$(now)") s"
  root_note="built $(secs "$t0" "$(now)") s"
else
  root_note="reused from $guestdir"
fi
# Shared while this run copies the root: no other run replaces it meanwhile.
flock -s 8

# This run's image: a hard-linked copy of the root (same file system as the
# cache; nothing in it is changed, only files added), the build and the
# scenarios.
run=$(mktemp -d "$cache/run.XXXXXX")
qemu_pid=""
cleanup() {
  if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then kill -9 "$qemu_pid" 2>/dev/null || true; fi
  rm -rf --one-file-system "$run"
}
trap cleanup EXIT
t_img0=$(now)
stage=$run/stage
cp -al "$guestdir/root" "$stage"
flock -u 8
o=$stage/opt/pmon
mkdir -p "$o/build/tests" "$o/src/tests" "$o/src/python"
cp "$build/pmon" "$build/pmon-systemd" "$o/build/"
cp -a "$build/tests/helpers" "$o/build/tests/"
[ -d "$build/python/pmon" ] && cp -a "$build/python" "$o/build/"
cp -a "$repo/tests/e2e" "$repo/tests/guest" "$o/src/tests/"
cp -a "$repo/examples" "$o/src/"
cp -a "$repo/python/tests" "$repo/python/pmon" "$o/src/python/"
cp "$repo/README.md" "$o/src/"
if [ $need_node = 1 ]; then
  mkdir "$o/src/node"
  tar -C "$repo/node" --exclude=./node_modules -cf - . | tar -C "$o/src/node" -xf -
  (cd "$o/src/node" && npm ci --no-audit --no-fund --loglevel=error) > "$run/npm.log" 2>&1 ||
    { cat "$run/npm.log" >&2; die "npm ci in node/ failed (log above)"; }
  cp "$(readlink -f "$(command -v node)")" "$stage/usr/local/bin/node"
fi
cp "$repo/scripts/guest-runner.sh" "$o/runner.sh"
printf '%s\n' "${scenarios[@]}" > "$o/scenarios"
echo "${CI:-}" > "$o/ci"
echo "$jobs" > "$o/jobs"
size=$(( $(du -sm "$stage" | cut -f1) + 1536 ))
mke2fs -q -F -t ext4 -L pmon-guest -d "$stage" "$run/root.img" "${size}M" > /dev/null ||
  die "mke2fs -d failed"
rm -rf --one-file-system "$stage"
truncate -s 256M "$run/results.raw"
t_img1=$(now)
echo "guest: image ${size} MiB made in $(secs "$t_img0" "$t_img1") s; booting (qemu, TCG, $smp CPUs, $mem)"

# Boot. The serial console goes to a file; qemu is killed (by the pid it was
# started as) if it runs longer than the timeout. A guest kernel that locks
# up (a CPU held in the kernel for two minutes) panics, and the guest ends
# at once rather than at the timeout; its report is on the console.
qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp "$smp" -m "$mem" \
  -nographic -monitor none -serial "file:$run/console.log" -no-reboot -nic none \
  -kernel "$guestdir/vmlinuz" -initrd "$guestdir/initrd.img" \
  -append "root=/dev/vda rw console=ttyS0 panic=-1 softlockup_panic=1 watchdog_thresh=60 quiet loglevel=3 systemd.show_status=false" \
  -drive "file=$run/root.img,format=raw,if=virtio" \
  -drive "file=$run/results.raw,format=raw,if=virtio" \
  < /dev/null > "$run/qemu.log" 2>&1 &
qemu_pid=$!
timed_out=0
deadline=$(( $(date +%s) + timeout_s ))
# qemu's CPU time (user + system, clock ticks), as last read while it ran:
# how much of the host's two CPUs the emulated guest takes.
qemu_ticks=0
while kill -0 "$qemu_pid" 2>/dev/null; do
  if read -r qstat < "/proc/$qemu_pid/stat" 2>/dev/null; then
    qstat=${qstat##*) }; read -r -a qf <<< "$qstat"
    qemu_ticks=$(( qf[11] + qf[12] ))
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    timed_out=1
    kill -9 "$qemu_pid" 2>/dev/null || true
    break
  fi
  sleep 1
done
qrc=0
wait "$qemu_pid" || qrc=$?
qemu_pid=""
t_boot1=$(now)

mkdir "$run/results"
# A guest that never wrote the disk leaves it all zeros: an empty archive.
# A disk tar cannot read is a failure of its own (results may be missing).
tar_err=""
tar -xf "$run/results.raw" -C "$run/results" 2> "$run/tar.err" || tar_err=$(head -n 3 "$run/tar.err")
res=$run/results
if [ ! -f "$res/system" ]; then
  echo "--- qemu output:"; tail -n 20 "$run/qemu.log"
  echo "--- guest console (last 60 lines):"; tail -n 60 "$run/console.log"; echo
  if [ $timed_out = 1 ]; then
    echo "guest: FAIL: the guest did not boot to its scenario runner within ${timeout_s} s (qemu killed)"
  else
    echo "guest: FAIL: the guest did not boot to its scenario runner (qemu exit $qrc; console above)"
  fi
  exit 1
fi

# One line per scenario (those the guest did not get to as well), then the
# logs of those that did not pass.
echo "guest: $(cat "$res/system")"
touch "$res/summary"
bad=0
while read -r status name took; do
  printf '%-4s %-28s %6s s\n' "$status" "$name" "$took"
  [ "$status" = PASS ] || bad=1
done < "$res/summary"
# A guest kernel that locked up and panicked (an emulated CPU, a kernel of
# its own) ends this boot: the scenarios it did not finish run again, once,
# in a new boot, and the report of the lockup is printed below either way.
again=()
retry=0
if [ $timed_out = 1 ]; then why="qemu was killed after ${timeout_s} s"
elif grep -q 'Kernel panic' "$run/console.log"; then
  why="the guest's kernel panicked (its report is below)"
  [ -n "${PMON_GUEST_AGAIN:-}" ] || { retry=1; why="$why; runs again in a new boot"; }
else why="the guest stopped early (qemu exit $qrc)"; fi
names=(e2e.setup)
for s in "${scenarios[@]}"; do names+=("$(basename "$s" .sh)"); done
names+=(e2e.leak_check)
for i in "${!names[@]}"; do
  grep -q "^[A-Z]* ${names[$i]} " "$res/summary" && continue
  if [ $retry = 1 ]; then
    printf '%-4s %-28s %s\n' ---- "${names[$i]}" "(no result: $why)"
    # (the setup and the leak check run in every boot)
    if [ "$i" -ge 1 ] && [ "$i" -le "${#scenarios[@]}" ]; then again+=("$repo/${scenarios[$((i - 1))]}"); fi
  else
    printf '%-4s %-28s %s\n' FAIL "${names[$i]}" "(no result: $why)"
    bad=1
  fi
done
# Only the leak check without a result: a new boot could not check this one.
if [ $retry = 1 ] && [ ${#again[@]} = 0 ]; then
  echo "guest: FAIL: the guest's kernel panicked before the leak check"
  bad=1
fi
while read -r status name took; do
  [ "$status" = PASS ] && continue
  echo "--- $status $name:"
  cat "$res/logs/$name.log" 2>/dev/null || echo "(no log)"
done < "$res/summary"
if [ -n "$tar_err" ]; then
  echo "guest: FAIL: the results disk could not be read whole: $tar_err"
  bad=1
fi
if [ ! -f "$res/done" ]; then
  # A kernel that locked up or oopsed said where first: that report whole.
  first=$(grep -n -m1 -E 'BUG:|WARNING:|Oops|Kernel panic' "$run/console.log" | cut -d: -f1)
  if [ -n "$first" ]; then
    echo "--- guest console, the kernel's first report (from line $first):"
    tail -n "+$first" "$run/console.log" | head -n 80; echo
  fi
  if [ -z "$first" ] || [ $(( $(wc -l < "$run/console.log") - first )) -ge 80 ]; then
    echo "--- guest console (last 30 lines):"; tail -n 30 "$run/console.log"; echo
  fi
  if [ $retry = 1 ]; then
    echo "guest: the runner did not finish: $why"
  else
    echo "guest: FAIL: the runner did not finish: $why"
    bad=1
  fi
fi
boot=$(cat "$res/boot_seconds" 2>/dev/null || echo "?")
runs=$(cat "$res/run_seconds" 2>/dev/null || echo "?")
echo "guest: times: root ${root_note}; image $(secs "$t_img0" "$t_img1") s; boot to the runner ${boot} s (guest clock);" \
     "scenarios ${runs} s; qemu in all $(secs "$t_img1" "$t_boot1") s (CPU $(( qemu_ticks / $(getconf CLK_TCK) )) s);" \
     "total $(secs "$t_start" "$(now)") s"
if [ -n "${PMON_GUEST_RESULTS:-}" ]; then
  mkdir -p "$PMON_GUEST_RESULTS" && cp -a "$res/." "$PMON_GUEST_RESULTS/" &&
    cp "$run/console.log" "$PMON_GUEST_RESULTS/console.log" &&
    echo "guest: results and logs of every scenario in $PMON_GUEST_RESULTS"
fi
if [ $retry = 1 ] && [ ${#again[@]} -gt 0 ]; then
  # The root as it is (this run built it if it had to), this build, and
  # the scenarios without a result; a second panic fails.
  echo "guest: the guest's kernel panicked; the ${#again[@]} scenarios it did not finish run again in a new boot"
  cleanup; trap - EXIT
  exec 8>&-
  rc=0
  PMON_GUEST_AGAIN=1 PMON_GUEST_RESULTS=${PMON_GUEST_RESULTS:+$PMON_GUEST_RESULTS/again} \
    bash "$0" --build "$build" --cache "$cache" "${again[@]}" || rc=$?
  [ $rc = 0 ] || bad=1
fi
if [ $bad = 0 ]; then echo "guest: all ${#scenarios[@]} scenarios passed"; else echo "guest: FAIL"; fi
exit $bad
