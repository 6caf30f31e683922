# SPDX-License-Identifier: Apache-2.0
# pmon gc never kills a live call of another PID namespace, with real runc
# containers, and still collects a dead call in its own:
# 1. a container made as docs/containers.md says (own PID and cgroup
#    namespaces, cgroup2 read-write) runs a call: the host's gc --dry-run
#    does not list it, the host's gc leaves the sleep and its pmon running;
# 2. a host call: gc in a container with the node's cgroup namespace (it
#    sees every leaf of the node) neither lists nor kills it;
# 3. the control: in the first container, a call whose pmon and guard are
#    SIGKILLed is collected by the container's gc (sleep killed, leaf gone).
# Each gc --dry-run is checked before its gc runs, so an unfixed pmon fails
# there and kills nothing.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/init_lib.inc"
. "$(dirname "$0")/runc.inc"
CG=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$CG" ] || skip "no cgroup2 mounted here"
ccg=""
_gc_cleanup() {  # the first container's cgroup (host view), should a leaf be left in it
  _runc_cleanup
  [ -z "$ccg" ] || find "$ccg" -depth -type d -exec rmdir {} \; 2>/dev/null || true
}
trap _gc_cleanup EXIT

# call_in N: waits for the container's call N (pmon run -v); sets $leaf
# (host path), $sleep_pid/$sleep_st, $pmon_pid/$pmon_st (host pids),
# $guard_ns (the guard's pid in the container), all recorded.
call_in() {
  wait_file "$t/shared/$1.up" || fail "call $1 did not start: $(cat "$t/shared/$1.err")"
  local in; in=$(sed -n 's/^pmon: started pid [0-9]* under cgroup in \(.*\)$/\1/p' "$t/shared/$1.err")
  leaf=$CG$(sed -n 's/^0:://p' "/proc/$init/cgroup")${in#/sys/fs/cgroup}
  [ -d "$leaf" ] || fail "call $1: no leaf $leaf on the host: $(cat "$t/shared/$1.err")"
  sleep_pid=$(cat "$leaf/cgroup.procs"); sleep_st=$(start_time_of "$sleep_pid"); record_pid "$sleep_pid"
  local p=${leaf##*/pmon-}; pmon_pid=$(runc_host_pid "$init" "${p%%-*}") || fail "call $1: no host pid of its pmon"
  pmon_st=$(start_time_of "$pmon_pid"); record_pid "$pmon_pid"
  guard_ns=$(sed -n 's/.*crash guard pid \([0-9]*\).*/\1/p' "$t/shared/$1.err")
}
# A call in the container: pmon run -v -- sleep 300; $1.up once started.
box_call() { echo "{ pmon run -v --confine cgroup -- sleep 300 2> /shared/$1.err; echo \$? > /shared/$1.rc; } &
  while ! grep -q '^pmon: started pid' /shared/$1.err 2>/dev/null; do sleep 0.01; done; touch /shared/$1.up"; }
make_bundle
printf '%s\n%s\n%s\n' "$(box_call a)" "$(box_call c)" 'while [ ! -f /shared/end ]; do sleep 0.01; done' > "$t/shared/box.sh"

id=$(runc_id gc)
RUNC_JQ="$JQ_CGROUPNS | $(jq_cgroup2 rw)" runc_start "$id" /bin/sh /shared/box.sh
box_runc=$runc_pid
init=$(runc_init_pid "$id") || fail "the container never ran: $(cat "$t/$id.err")"
record_pid "$init"
ccg=$CG$(sed -n 's/^0:://p' "/proc/$init/cgroup")
call_in a; a_leaf=$leaf a_sleep=$sleep_pid a_st=$sleep_st a_pmon=$pmon_pid a_pst=$pmon_st
call_in c
a_alive() { alive "$a_sleep" "$a_st" && alive "$a_pmon" "$a_pst" && [ -d "$a_leaf" ] && [ ! -e "$t/shared/a.rc" ]; }

"$PMON" gc --dry-run > "$t/dry1" 2>&1 || true
! grep -qF "would remove $a_leaf " "$t/dry1" || fail "the host's gc --dry-run would remove the container's live call: $(cat "$t/dry1")"
grep -qF "left alone $a_leaf (" "$t/dry1" || fail "the host's gc --dry-run does not say it leaves $a_leaf alone: $(cat "$t/dry1")"
"$PMON" gc > "$t/gc1" 2>&1 || true
a_alive || fail "the host's gc killed the container's live call (pmon run: $(cat "$t/shared/a.rc" 2>/dev/null)): $(cat "$t/gc1")"
echo "ok: the host's gc leaves the container's live call (sleep and pmon run) alone"

# 3. The control: call c's pmon and guard die; the container's own gc collects it.
guard=$(runc_host_pid "$init" "$guard_ns") || fail "call c: no host pid of its guard $guard_ns: $(cat "$t/shared/c.err")"
kill -KILL "$guard" "$pmon_pid"
wait_file "$t/shared/c.rc" || fail "call c's pmon did not die"
alive "$sleep_pid" "$sleep_st" || fail "call c's sleep died with its pmon: nothing left to collect"
runc_ exec "$id" /bin/pmon gc > "$t/gc3" 2>&1 || fail "the container's gc exit $?: $(cat "$t/gc3")"
! alive "$sleep_pid" "$sleep_st" && [ ! -d "$leaf" ] || fail "the container's gc left its own dead call: $(cat "$t/gc3")"
a_alive || fail "the container's gc killed its own live call: $(cat "$t/gc3")"
echo "ok: the container's gc collects its own dead call and leaves its live one"

# 2. A host call, and gc in a container with the node's cgroup namespace.
"$PMON" run -v --confine cgroup -- sleep 300 2> "$t/b.err" & b_pmon=$!
record_pid "$b_pmon"; b_pst=$(start_time_of "$b_pmon")
for _ in $(seq 1500); do grep -q "^pmon: started pid" "$t/b.err" && break; sleep 0.02; done
b_leaf=$(sed -n 's/^pmon: started pid [0-9]* under cgroup in \(.*\)$/\1/p' "$t/b.err")
[ -d "$b_leaf" ] || fail "the host call did not start: $(cat "$t/b.err")"
b_sleep=$(cat "$b_leaf/cgroup.procs"); b_st=$(start_time_of "$b_sleep"); record_pid "$b_sleep"
b_in=/sys/fs/cgroup${b_leaf#"$CG"}
cat > "$t/shared/gc2.sh" <<'SCRIPT'
pmon gc --dry-run > /shared/dry2 2>&1; touch /shared/dry2.done
while [ ! -f /shared/go2 ]; do sleep 0.01; done
pmon gc > /shared/gc2 2>&1; echo $? > /shared/gc2.rc
SCRIPT
id2=$(runc_id gc-nodens)
RUNC_JQ="$(jq_cgroup2 rw)" runc_start "$id2" /bin/sh /shared/gc2.sh
wait_file "$t/shared/dry2.done" || fail "the second container's gc --dry-run did not run: $(cat "$t/$id2.err")"
grep -qF "$b_in" "$t/shared/dry2" || fail "the second container's gc --dry-run does not see the host's leaf $b_in: $(cat "$t/shared/dry2")"
! grep -qF "would remove $b_in " "$t/shared/dry2" || fail "a container's gc --dry-run would remove the host's live call: $(grep -F "$b_in" "$t/shared/dry2")"
touch "$t/shared/go2"
wait_file "$t/shared/gc2.rc" || fail "the second container's gc did not end"
alive "$b_sleep" "$b_st" && alive "$b_pmon" "$b_pst" && [ -d "$b_leaf" ] ||
  fail "a container's gc killed the host's live call: $(cat "$t/shared/gc2")"
echo "ok: a container's gc (the node's cgroup namespace) leaves the host's live call alone"

# The calls end as they should once asked.
kill -TERM "$b_pmon" "$a_pmon"
wait_file "$t/shared/a.rc" || fail "the container's pmon run did not end on TERM"
wait "$b_pmon" 2>/dev/null || true
! alive "$a_sleep" "$a_st" && ! alive "$b_sleep" "$b_st" || fail "a call's sleep outlived its pmon run"
touch "$t/shared/end"
wait "$box_runc" || fail "runc run exit $?: $(cat "$t/$id.err")"
pass
