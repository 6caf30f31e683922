# SPDX-License-Identifier: Apache-2.0
# Guest only (scripts/guest.sh): systemd is PID 1 on a pure cgroup2 host.
# pmon runs as root in a service of the system manager that is not
# delegated (the guest runner unit): its own cgroup is writable but the
# manager's, and holds processes, so leaves there could get no controllers.
# pmon asks the system manager for a transient scope with Delegate=yes and
# makes its leaves in it: the report's cgroup is in a pmon-*.scope, the
# unit has Delegate=yes while the call runs, the leaf has the memory, pids
# and cpu controllers, and a call that touches 200 MiB reports a
# memory_peak_bytes of at least 200 MiB. The empty scope goes away after.
# Without its helper pmon-systemd, pmon makes its leaves in the service's
# own cgroup, and refuses a limit there (exit 125, one line).
. "$(dirname "$0")/../e2e/common.inc"

[ "$(id -u)" = 0 ] || skip "runs as root"
[ -d /run/systemd/system ] || skip "systemd is not PID 1 here (this scenario runs in the guest: scripts/guest.sh)"
command -v jq >/dev/null || skip "jq is not installed"
CG=/sys/fs/cgroup
[ "$(stat -f -c %T "$CG")" = cgroup2fs ] || fail "$CG is not a cgroup2 mount (want a pure cgroup2 host)"

# The setting this scenario is about: our own cgroup is a service's,
# writable, and not marked delegated.
own=$(sed -n 's/^0:://p' /proc/self/cgroup)
case $own in
  /system.slice/*.service) ;;
  *) fail "this scenario must run in a system service (it is in $own)" ;;
esac
[ -w "$CG$own/cgroup.procs" ] || fail "own cgroup $own is not writable by root?"
deleg=$(python3 -c 'import os,sys
try: print(os.getxattr(sys.argv[1], "trusted.delegate").decode())
except OSError: print("")' "$CG$own")
[ "$deleg" != 1 ] || fail "own cgroup $own is marked delegated; the scenario wants one that is not"

# The call: notes its cgroup, the scope's Delegate setting and the leaf's
# controllers while it runs, then touches 200 MiB.
call='cg=$(sed -n "s/^0:://p" /proc/self/cgroup); echo "$cg" > '"$t"'/cg
      scope=${cg%/*}; unit=${scope##*/}
      echo "$unit" > '"$t"'/unit
      systemctl show -p Delegate --value "$unit" > '"$t"'/delegate
      python3 -c "import os,sys; print(os.getxattr(sys.argv[1], \"trusted.delegate\").decode())" /sys/fs/cgroup$scope > '"$t"'/xattr 2>&1
      cat /sys/fs/cgroup$cg/cgroup.controllers > '"$t"'/controllers
      exec python3 -c "b = bytes([1]) * (200 << 20); print(len(b))"'
"$PMON" run -v --report "$t/r.json" -- sh -c "$call" > "$t/out" 2> "$t/err" ||
  fail "pmon run failed ($?): $(cat "$t/err")"
grep -qx 209715200 "$t/out" || fail "the call did not run to its end: $(cat "$t/out" "$t/err")"

[ "$(jq -r .confinement "$t/r.json")" = cgroup ] || fail "not the cgroup backend: $(cat "$t/r.json")"
rcg=$(jq -r .cgroup "$t/r.json")
rcg=${rcg#"$CG"}
case $rcg in
  /system.slice/pmon-*.scope/pmon-*) ;;
  *) fail "the report's cgroup $rcg is not a leaf in a pmon-*.scope of the system manager (-v said: $(cat "$t/err"))" ;;
esac
[ "$(cat "$t/cg")" = "$rcg" ] || fail "the call ran in $(cat "$t/cg"), the report says $rcg"
grep -q 'systemd gave no delegated scope' "$t/err" && fail "-v notes a fallback: $(cat "$t/err")"
unit=$(cat "$t/unit")
[ "$(cat "$t/delegate")" = yes ] || fail "$unit: Delegate=$(cat "$t/delegate"), want yes"
[ "$(cat "$t/xattr")" = 1 ] || fail "$unit: trusted.delegate is $(cat "$t/xattr"), want 1"
for c in memory pids cpu; do
  grep -qw "$c" "$t/controllers" || fail "the leaf has no $c controller (it has: $(cat "$t/controllers"))"
done
peak=$(jq -r .memory_peak_bytes "$t/r.json")
[ "$peak" != null ] || fail "memory_peak_bytes is null: $(cat "$t/r.json")"
[ "$peak" -ge $((200 << 20)) ] || fail "memory_peak_bytes $peak is below 200 MiB for a call that touched 200 MiB"
echo "report: cgroup $rcg, memory_peak_bytes $peak; $unit Delegate=yes, trusted.delegate=1"

# The empty scope is collected by systemd (CollectMode=inactive-or-failed).
scope_dir=$CG${rcg%/*}
for _ in $(seq 100); do
  [ -d "$scope_dir" ] || break
  sleep 0.1
done
[ ! -d "$scope_dir" ] || fail "the scope $scope_dir is still there 10 s after pmon ended: $(find "$scope_dir" -name cgroup.procs -exec cat {} + | tr '\n' ' ')"

# A pmon started by a call stays in that call's leaf: its own leaves go
# below it, it asks systemd for nothing.
"$PMON" run --report "$t/outer.json" -- "$PMON" run -v --report "$t/inner.json" -- true 2> "$t/nested.err" ||
  fail "nested pmon run failed: $(cat "$t/nested.err")"
outer=$(jq -r .cgroup "$t/outer.json"); inner=$(jq -r .cgroup "$t/inner.json")
case $inner in
  "$outer"/pmon-*) ;;
  *) fail "the inner pmon's leaf $inner is not below the outer call's leaf $outer" ;;
esac

# Without a way to reach systemd (no pmon-systemd next to pmon) the leaves go
# in the service's cgroup as before, and -v says why.
mkdir "$t/alone" && cp "$PMON" "$t/alone/pmon"
"$t/alone/pmon" run -v --report "$t/alone.json" -- true 2> "$t/alone.err" ||
  fail "pmon without its helper failed: $(cat "$t/alone.err")"
grep -q "$own is a systemd manager's (not delegated to pmon), but systemd gave no delegated scope" "$t/alone.err" ||
  fail "-v does not say why the leaves are not in a scope: $(cat "$t/alone.err")"
case $(jq -r .cgroup "$t/alone.json") in
  "$CG$own"/pmon-*|"$own"/pmon-*) ;;
  *) fail "without the helper the leaf is not in $own: $(jq -r .cgroup "$t/alone.json")" ;;
esac

# There a limit cannot be set (the service's cgroup holds processes, so a
# leaf in it gets no controller): pmon refuses it with one line, exit 125,
# and the command never runs.
rc=0
"$t/alone/pmon" run --memory-max 100M -- sh -c "echo ran > $t/alone/ran" > /dev/null 2> "$t/alone-lim.err" || rc=$?
[ $rc = 125 ] || fail "--memory-max without the helper: pmon exit $rc, want 125: $(cat "$t/alone-lim.err")"
[ ! -e "$t/alone/ran" ] || fail "--memory-max without the helper: the command ran although its limit was refused"
[ "$(wc -l < "$t/alone-lim.err")" = 1 ] || fail "--memory-max without the helper: want one line, got: $(cat "$t/alone-lim.err")"
grep -q "cannot set the memory limit: the memory controller is not" "$t/alone-lim.err" ||
  fail "--memory-max without the helper: $(cat "$t/alone-lim.err")"
echo "refused in the service's own cgroup: $(cat "$t/alone-lim.err")"

# Limits through that scope: the manager delegated the controllers, so a
# call gets memory.max, pids.max and cpu.max with no --cgroup-root, and one
# that outgrows its memory is killed whole and says so.
rc=0
"$PMON" run --memory-max 100M --pids-max 64 --cpu-max 1.5 --report "$t/lim.json" -- \
  python3 -c "b = bytes([1]) * (300 << 20)" > /dev/null 2> "$t/lim.err" || rc=$?
[ $rc = 137 ] || fail "a call over --memory-max 100M: pmon exit $rc, want 137: $(cat "$t/lim.err")"
case $(jq -r .cgroup "$t/lim.json") in
  */system.slice/pmon-*.scope/pmon-*) ;;
  *) fail "the limited call's leaf $(jq -r .cgroup "$t/lim.json") is not in a pmon-*.scope" ;;
esac
[ "$(jq -r .oom_killed "$t/lim.json")" = true ] || fail "oom_killed is not true: $(cat "$t/lim.json")"
[ "$(jq -c .limits "$t/lim.json")" = '{"memory_max":104857600,"memory_high":null,"pids_max":64,"cpu_max":1.5}' ] ||
  fail "the report's limits: $(jq -c .limits "$t/lim.json")"
[ "$(jq -r .pids_max_hit "$t/lim.json")" = false ] || fail "pids_max_hit: $(jq -r .pids_max_hit "$t/lim.json"), want false"
echo "limits in the scope: exit 137, oom_killed true, memory_peak_bytes $(jq -r .memory_peak_bytes "$t/lim.json")"

# doctor, as root in the same service, says where the leaves go.
# (Exit 0: the cgroup backend works here.)
"$PMON" doctor > "$t/doctor" 2>&1 || fail "pmon doctor exited $?: $(cat "$t/doctor")"
grep -q "pmon-.*\.scope" "$t/doctor" || fail "doctor does not show the delegated scope: $(cat "$t/doctor")"
grep -q "leaves get: .*memory" "$t/doctor" || fail "doctor says the leaves get no memory controller: $(cat "$t/doctor")"
pass "leaves in $unit, memory_peak_bytes $peak"
