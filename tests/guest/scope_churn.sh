# SPDX-License-Identifier: Apache-2.0
# Guest only (scripts/guest.sh): systemd is PID 1 on a pure cgroup2 host.
# pmon runs in a service that is not delegated, so each call asks the system
# manager for a transient scope of its own. Once the calls have ended, no
# scope of theirs is left, not even an empty one:
# - short calls, two at a time;
# - calls whose pmon is killed (SIGKILL) while it waits for its scope, and
#   is exiting as the manager moves it into the scope. The manager cannot
#   move a process that is exiting: its scope would start empty, and it
#   would keep it for good, waiting to see it empty out.
. "$(dirname "$0")/../e2e/common.inc"

[ "$(id -u)" = 0 ] || skip "runs as root"
[ -d /run/systemd/system ] || skip "systemd is not PID 1 here (this scenario runs in the guest: scripts/guest.sh)"
CG=/sys/fs/cgroup
N=20 K=20

# Other scenarios may run pmon beside this one: only the scopes of this
# one's pmons count, by name (pmon-<pid>-<start time>.scope), each pmon's
# pid and start time said by the shell that then becomes it.
: > "$t/names"
call() {
  sh -c 'echo "pmon-$$-$(cut -d" " -f22 /proc/$$/stat).scope" >> "$0"; exec "$@"' "$t/names" "$@"
}
for ((i = 0; i < N; i += 2)); do
  call "$PMON" run -q -- true & a=$!
  call "$PMON" run -q -- true & b=$!
  wait "$a" || fail "call $i failed"
  wait "$b" || fail "call $((i + 1)) failed"
done

# pmon asks systemd for its scope through its helper pmon-systemd, found
# next to it: a copy of pmon here, beside a stand-in that waits until the
# watch below is in place, then runs the real helper. The watch kills pmon
# the moment systemd makes the scope's cgroup, so that pmon is exiting as
# systemd moves it in.
real=$(dirname "$PMON")/pmon-systemd
[ -x "$real" ] || real=$(dirname "$PMON")/../libexec/pmon/pmon-systemd
[ -x "$real" ] || fail "no pmon-systemd next to $PMON"
mkdir "$t/bin"
cp "$PMON" "$t/bin/pmon"
printf '#!/bin/sh\nfor i in $(seq 500); do [ -e "%s/ready.$PPID" ] && break; sleep 0.01; done\nexec "%s" "$@"\n' \
  "$t" "$real" > "$t/bin/pmon-systemd"
chmod +x "$t/bin/pmon-systemd"
slice=$CG/system.slice
[ -d "$slice" ] || fail "no $slice"
ulimit -n 40000
killed=0
for ((i = 0; i < K; i++)); do
  # With 30000 open files pmon takes a while to exit (it closes them
  # first): the kill at the scope's making lands as systemd moves it.
  python3 -c 'import os, sys
for _ in range(30000): os.set_inheritable(os.open("/dev/null", os.O_RDONLY), True)
os.execv(sys.argv[1], sys.argv[1:])' "$t/bin/pmon" run -q -- sleep 30 & p=$!
  record_pid "$p"
  for _ in $(seq 500); do
    [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$t/bin/pmon" ] && break
    sleep 0.01
  done
  st=$(start_time_of "$p")
  [ -n "$st" ] || fail "pmon $p ended at once"
  echo "pmon-$p-$st.scope" >> "$t/names"
  if "$HELPERS/kill_on_cgroup" "$slice" "pmon-$p-$st.scope" "$p" "$t/ready.$p" 1 3000 > /dev/null; then
    killed=$((killed + 1))
  fi
  kill -KILL "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
done
# (Where the watch came too late pmon was killed after: no test of this.)
[ "$killed" -ge $((K / 2)) ] || fail "pmon was killed as its scope was made in only $killed of $K calls"

# systemd removes an empty scope after the fact: a moment for the last ones.
left=""
[ "$(wc -l < "$t/names")" = $((N + K)) ] || fail "$(wc -l < "$t/names") scope names noted for $((N + K)) calls"
for _ in $(seq 100); do
  left=$(while read -r name; do if [ -d "$slice/$name" ]; then echo "$slice/$name"; fi; done < "$t/names")
  [ -z "$left" ] && break
  sleep 0.1
done
if [ -n "$left" ]; then
  for d in $left; do
    echo "left: $d ($(tr '\n' ' ' < "$d/cgroup.events" 2>/dev/null)); systemd:" \
      "$(systemctl show -p ActiveState,SubState,Result "${d##*/}" | tr '\n' ' ')"
  done
  fail "$(echo "$left" | wc -l) scope(s) left by $N calls and $K killed as theirs was made"
fi
pass "$N calls, $killed of $K killed as their scope was made: no scope left"
