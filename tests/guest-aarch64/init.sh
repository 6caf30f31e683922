#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The /init of the aarch64 guest scripts/guest-aarch64.sh boots (busybox sh
# as PID 1, an initramfs, no systemd): mounts what pmon needs, pure cgroup v2
# at /sys/fs/cgroup with its controllers on, runs each scenario of
# /opt/pmon/tests (one at a time, bounded) and prints one line per scenario
# on the serial console after its log (what it checked, or why it failed);
# then powers off.
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
export PATH=/sbin:/bin:/usr/sbin:/usr/bin
mount -t devtmpfs devtmpfs /dev
# The kernel found no /dev/console in the archive to give init: open it now.
exec < /dev/console > /dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=0755 tmpfs /run
# As a host's manager does: every controller the kernel offers, for the leaves.
for c in $(cat /sys/fs/cgroup/cgroup.controllers); do
  echo "+$c" > /sys/fs/cgroup/cgroup.subtree_control 2> /dev/null
done
hostname pmon-aarch64

read -r up _ < /proc/uptime
echo "pmon-aarch64: system: kernel $(uname -r) $(uname -m), $(nproc) CPUs," \
     "cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.subtree_control), booted in ${up} s"
export PMON=/opt/pmon/bin/pmon
echo "pmon-aarch64: $($PMON --version)"

for s in /opt/pmon/tests/*.sh; do
  name=$(basename "$s" .sh)
  [ "$name" = init ] && continue
  read -r t0 _ < /proc/uptime
  # Each in a process group of its own, so that a bounded one is ended whole.
  timeout 180 setsid sh "$s" > "/tmp/$name.log" 2>&1 < /dev/null
  rc=$?
  read -r t1 _ < /proc/uptime
  took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  if [ $rc = 0 ]; then status=PASS; else status=FAIL; fi
  [ $rc = 143 ] && echo "(ended after 180 s)" >> "/tmp/$name.log"
  sed "s/^/pmon-aarch64: | /" "/tmp/$name.log"
  echo "pmon-aarch64: $status $name $took"
done
echo "pmon-aarch64: done"
sync
poweroff -f
