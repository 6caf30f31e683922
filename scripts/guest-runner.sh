#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Runs in the guest scripts/guest.sh boots, as the oneshot system service
# guest-runner.service (root, systemd as PID 1): the e2e fixture's setup, each
# scenario of /opt/pmon/scenarios, the fixture's leak check; then it writes
# the results as a tar to the second disk (/dev/vdb) and the unit powers the
# guest off. One line per scenario goes to the console as it ends.
set -u
o=/opt/pmon
res=/run/pmon-results
mkdir -p "$res/logs"
# The results so far, as a tar on the second disk: a guest that is killed
# later (the host's timeout) still hands back what finished.
# (One writer at a time: scenarios end in parallel.)
save() {
  flock /run/pmon-results.lock sh -c 'tar -cf /dev/vdb -C "$1" . && sync' sh "$res"
}
read -r up _ < /proc/uptime
echo "$up" > "$res/boot_seconds"
echo "pmon-guest: runner started ${up} s after boot"

export PMON=$o/build/pmon
export PMON_HELPERS=$o/build/tests/helpers
export PMON_TEST_STATE=/var/tmp/pmon-e2e-state
export PMON_BUILD_DIR=$o/build
# The escape scenarios run on the cgroup backend here (the host's suite runs
# them on every backend); it must work, and so must pidns for the scenario
# of its own (a scenario that misses one fails, it does not shrink).
export PMON_TEST_BACKENDS=cgroup
export PMON_EXPECT_BACKENDS="cgroup pidns"
export PMON_GUEST=1
# An emulated CPU: a call that must get going before a timeout gets 10 times
# as long (common.inc).
export PMON_TEST_TIME_SCALE=10
ci=$(cat "$o/ci" 2>/dev/null)
[ -n "$ci" ] && export CI=$ci
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
cd "$o/src" || exit 1

{
  echo "kernel $(uname -r), systemd $(systemctl --version | awk 'NR==1 {print $2}')," \
       "cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers), $(nproc) CPUs"
} > "$res/system"
cat "$res/system"
save

# run_one NAME COMMAND...: its output in logs/NAME.log, "STATUS NAME SECONDS"
# in the summary (77 is a skip, as for ctest).
run_one() {
  local name=$1; shift
  local t0 t1 rc=0 status
  t0=$(date +%s.%N)
  timeout -k 10 600 "$@" > "$res/logs/$name.log" 2>&1 < /dev/null || rc=$?
  t1=$(date +%s.%N)
  case $rc in
    0) status=PASS ;;
    77) status=SKIP ;;
    124|137) status=FAIL; echo "(killed after 600 s)" >> "$res/logs/$name.log" ;;
    *) status=FAIL ;;
  esac
  local took
  took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  echo "$status $name $took" >> "$res/summary"
  echo "pmon-guest: $status $name ${took} s"
  save
}


# Scenarios run $jobs at a time (the guest has as many CPUs; the host's
# ctest runs the e2e scenarios in parallel as well); one that says
# "# guest: alone" in its first lines runs by itself after them (as the
# host's test command runs the Python suite after the CTests).
jobs=$(cat "$o/jobs" 2>/dev/null || echo 1)
r0=$(date +%s.%N)
run_one e2e.setup bash tests/e2e/fixture.sh setup
alone=()
running=0
while read -r s; do
  [ -n "$s" ] || continue
  if head -n 20 "$s" | grep -q '^# guest: alone'; then alone+=("$s"); continue; fi
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
  run_one "$(basename "$s" .sh)" bash "$s" &
  running=$((running + 1))
done < "$o/scenarios"
wait
for s in "${alone[@]}"; do run_one "$(basename "$s" .sh)" bash "$s"; done
run_one e2e.leak_check bash tests/e2e/fixture.sh check
awk -v a="$r0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f\n", b - a }' > "$res/run_seconds"

journalctl -b --no-pager > "$res/logs/journal.log" 2>&1
touch "$res/done"
save
echo "pmon-guest: results written"
# The unit's SuccessAction powers off too; this does not wait for it.
systemctl poweroff --force --force
exit 0
