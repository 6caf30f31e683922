# SPDX-License-Identifier: Apache-2.0
# pmon ps lists a running call: its leaf, its owner and its process tree
# (a setsid daemon included), in text and in --json; once the call is over
# it is no longer listed.
. "$(dirname "$0")/common.inc"
have_backend cgroup || skip "the cgroup backend is not available here"

"$PMON" run -v --confine cgroup -- sh -c '
  setsid sh -c "echo \$\$ > '"$t"'/d.tmp; mv '"$t"'/d.tmp '"$t"'/d; exec sleep 1000" &
  sleep 1000 & echo $! > '"$t"'/s; wait' 2> "$t/err" &
for _ in $(seq 500); do [ -f "$t/d" ] && [ -f "$t/s" ] && break; sleep 0.01; done
[ -f "$t/d" ] || fail "the call never got going: $(cat "$t/err")"
leaf=$(sed -n 's/^pmon: started pid [0-9]* under cgroup in \(.*\)$/\1/p' "$t/err")
main=$(sed -n 's/^pmon: started pid \([0-9]*\) under.*/\1/p' "$t/err")
pmon=${leaf##*/pmon-}; pmon=${pmon%%-*}
record_pid "$pmon"
for p in $(cat "$leaf/cgroup.procs"); do record_pid "$p"; done
d=$(cat "$t/d") s=$(cat "$t/s")

"$PMON" ps > "$t/ps" || fail "pmon ps exit $?"
grep -qx "$leaf" "$t/ps" || fail "ps does not list $leaf: $(cat "$t/ps")"
grep -q "^  owner $pmon (.*pmon run" "$t/ps" || fail "ps does not name the owner $pmon: $(cat "$t/ps")"
for p in "$main" "$d" "$s"; do
  grep -Eq "^ +$p +[SR] +.*(sh -c|sleep 1000)" "$t/ps" || fail "ps does not list pid $p: $(cat "$t/ps")"
done
# The child is indented below its parent (the main sh), the daemon is a root.
grep -Eq "^ +$s +S +  sleep 1000" "$t/ps" || fail "ps: sleep $s is not shown under the main sh: $(cat "$t/ps")"
grep -Eq "^ +$d +S +sleep 1000" "$t/ps" || fail "ps: daemon $d is not a root: $(cat "$t/ps")"

"$PMON" ps --json > "$t/ps.json" || fail "pmon ps --json exit $?"
report_is -m "ps --json" "$t/ps.json" version=1 "calls[leaf=$leaf].owner.pid=$pmon" "calls[leaf=$leaf].owner.alive=true" \
  "calls[leaf=$leaf].processes[pid=$d,state=S]!=(absent)"

kill -TERM "$pmon"; wait 2>/dev/null || true
"$PMON" ps > "$t/ps2"
! grep -qx "$leaf" "$t/ps2" || fail "ps still lists $leaf after the call ended"
pass
