# SPDX-License-Identifier: Apache-2.0
# Guest only (scripts/guest.sh): systemd is PID 1 on a pure cgroup2 host.
# A pmon that ends just as the manager moves it into the scope it asked for
# leaves that scope empty, and systemd 252 keeps such a scope running for
# good (it waits to see it empty out). pmon's helper stops it when it can;
# when the helper was killed too, `pmon gc` does: it stops an empty
# pmon-<pid>-<start>.scope whose pmon is gone, and keeps one whose pmon is
# alive, and one that still holds a process.
#
# A scope whose only process is a zombie starts that way every time (the
# kernel moves no process that has exited), so this scenario makes its
# scopes so, through the manager's own D-Bus call, named as pmon names them.
# guest: alone (another scenario's pmon gc would stop its scope first)
. "$(dirname "$0")/../e2e/common.inc"

[ "$(id -u)" = 0 ] || skip "runs as root"
[ -d /run/systemd/system ] || skip "systemd is not PID 1 here (this scenario runs in the guest: scripts/guest.sh)"
command -v busctl > /dev/null || skip "no busctl"
slice=/sys/fs/cgroup/system.slice

# A zombie, its parent keeping it unreaped until told to go: sets $par and $z.
zombie() {
  python3 -c 'import os, sys, time
pid = os.fork()
if pid == 0: os._exit(0)
print(pid, flush=True)
time.sleep(300)' > "$t/z.$1" &
  par=$!
  z=""
  record_pid "$par"
  for _ in $(seq 200); do
    z=$(cat "$t/z.$1")
    [ -n "$z" ] && [ "$(state_of "$z")" = Z ] && break
    sleep 0.05
  done
  [ -n "$z" ] && [ "$(state_of "$z")" = Z ] || fail "no zombie made"
}

# Starts the transient scope $1 holding pid $2, as pmon's helper asks for it.
start_scope() {
  busctl call org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager \
    StartTransientUnit 'ssa(sv)a(sa(sv))' "$1" fail 3 PIDs au 1 "$2" Delegate b true \
    CollectMode s inactive-or-failed 0 > /dev/null || fail "systemd did not start $1"
  echo "$1" >> "$t/units"
  for _ in $(seq 100); do
    [ "$(systemctl show -P ActiveState "$1")" = active ] && return 0
    sleep 0.05
  done
  fail "$1 is $(systemctl show -P ActiveState "$1"), not active"
}
_stop_units() { if [ -f "$t/units" ]; then xargs -r systemctl stop < "$t/units" 2> /dev/null || true; fi; }
trap '_stop_units; _cleanup' EXIT

# 1. The scope of a pmon that is gone: the zombie named as its owner, then reaped.
zombie 1; par1=$par z1=$z
st1=$(start_time_of "$z1")
gone=pmon-$z1-$st1.scope
start_scope "$gone" "$z1"
# 2. The scope of a live pmon (this scenario's sleep), empty as well.
sleep 300 & live=$!
record_pid "$live"
zombie 2; par2=$par z2=$z
alive_unit=pmon-$live-$(start_time_of "$live").scope
start_scope "$alive_unit" "$z2"
# 3. A scope named after a gone pmon that still holds a process.
sleep 300 & held=$!
record_pid "$held"
held_unit=pmon-$z1-1.scope
start_scope "$held_unit" "$held"

for u in "$gone" "$alive_unit"; do
  grep -qx 'populated 0' <(cat "$slice/$u/cgroup.events") || fail "$u is not empty"
done
kill "$par1" "$par2"
wait "$par1" "$par2" 2> /dev/null || true
for _ in $(seq 100); do
  [ -z "$(start_time_of "$z1")" ] && break
  sleep 0.05
done
[ -z "$(start_time_of "$z1")" ] || fail "the zombie $z1 was not reaped"
# The manager keeps the empty scope running: nothing else would stop it.
[ "$(systemctl show -P SubState "$gone")" = running ] || fail "$gone: $(systemctl show -P SubState "$gone")"

out=$("$PMON" gc --dry-run 2>&1) || fail "pmon gc --dry-run failed: $out"
grep -q "would stop .*/$gone (empty scope, owner $z1 is gone)" <<< "$out" || fail "gc --dry-run: $out"
grep -q "$alive_unit\|$held_unit" <<< "$out" && fail "gc --dry-run would touch a scope to keep: $out"
[ -d "$slice/$gone" ] || fail "--dry-run stopped $gone"

out=$("$PMON" gc -v 2>&1) || fail "pmon gc failed: $out"
grep -q "stopped .*/$gone (empty scope, owner $z1 is gone)" <<< "$out" || fail "gc: $out"
grep -q "kept .*/$alive_unit (owner $live is alive)" <<< "$out" || fail "gc did not keep $alive_unit: $out"
grep -q "kept .*/$held_unit (not empty" <<< "$out" || fail "gc did not keep $held_unit: $out"
[ ! -d "$slice/$gone" ] || fail "$gone is still there"
[ "$(systemctl show -P ActiveState "$gone")" != active ] || fail "$gone is still active"
[ -d "$slice/$alive_unit" ] && [ -d "$slice/$held_unit" ] || fail "gc removed a scope it had to keep"
alive "$held" "$(start_time_of "$held")" || fail "gc stopped the process of $held_unit"
pass "the empty scope of a gone pmon stopped; a live pmon's and one holding a process kept"
