# SPDX-License-Identifier: Apache-2.0
# Where nothing can keep the E11 promise (pmon and its guard both SIGKILLed):
# the leaf and its tree stay, `pmon gc --dry-run` names the leaf and touches
# nothing, `pmon gc` kills the tree and removes the leaf, one line per leaf,
# exit 0 — and leaves alone a live pmon's leaf and a cgroup that is not a
# pmon leaf.
. "$(dirname "$0")/common.inc"
[ "$(id -u)" = 0 ] || skip "needs root (to see and clean every leaf)"
have_backend cgroup || skip "the cgroup backend is not available here"
CG=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)

# Starts a pmon call ($1 = scratch prefix) with a setsid daemon; sets
# leaf/pmon/guard and records every pid.
start_call() {
  "$PMON" run -v --confine cgroup -- sh -c '
    setsid sh -c "echo \$\$ > '"$1"'.d.tmp; mv '"$1"'.d.tmp '"$1"'.d; exec sleep 1000" &
    sleep 1000 & wait' 2> "$1.err" &
  for _ in $(seq 3000); do [ -f "$1.d" ] && break; sleep 0.02; done
  [ -f "$1.d" ] || fail "the call never got going: $(cat "$1.err")"
  leaf=$(sed -n 's/^pmon: started pid [0-9]* under cgroup in \(.*\)$/\1/p' "$1.err")
  guard=$(sed -n 's/.*crash guard pid \([0-9]*\).*/\1/p' "$1.err")
  pmon=${leaf##*/pmon-}; pmon=${pmon%%-*}
  [ -n "$guard" ] && [ -d "$leaf" ] || fail "no leaf or guard: $(cat "$1.err")"
  record_pid "$pmon"; record_pid "$guard"
  # The call in its final shape: the shell, the daemon (sleep) and the
  # other sleep; not a moment before (the shell may not have forked its
  # second sleep yet, the daemon's shell may still be running its mv), or
  # gc's count would differ from the one recorded here.
  local comms p
  for _ in $(seq 3000); do
    comms=$(for p in $(cat "$leaf/cgroup.procs"); do cat "/proc/$p/comm" 2>/dev/null; done | sort | tr '\n' ' ')
    [ "$comms" = "sh sleep sleep " ] && break
    sleep 0.02
  done
  [ "$comms" = "sh sleep sleep " ] || fail "the call never took its shape: $comms"
  procs=()
  for p in $(cat "$leaf/cgroup.procs"); do record_pid "$p"; procs+=("$p $(start_time_of "$p")"); done
}

start_call "$t/a"
a_leaf=$leaf a_procs=("${procs[@]}")
gst=$(start_time_of "$guard")
kill -KILL "$guard"
for _ in $(seq 3000); do alive "$guard" "$gst" || break; sleep 0.01; done
pst=$(start_time_of "$pmon")
kill -KILL "$pmon"
for _ in $(seq 3000); do alive "$pmon" "$pst" || break; sleep 0.01; done
! alive "$pmon" "$pst" || fail "pmon $pmon outlived SIGKILL for 30 s"
[ -d "$a_leaf" ] || fail "the leaf went away without a guard (test is void)"
for x in "${a_procs[@]}"; do alive $x || fail "process $x died without a guard (test is void)"; done

start_call "$t/b"
b_leaf=$leaf b_pmon=$pmon b_procs=("${procs[@]}")
other=$CG/pmon-test-gc-other-$$
mkdir "$other"
trap 'rmdir "$other" 2>/dev/null; _cleanup' EXIT

"$PMON" gc --dry-run > "$t/dry" || fail "gc --dry-run exit $?"
n=${#a_procs[@]}; counted="$n processes"; [ "$n" != 1 ] || counted="1 process"
grep -qx "would remove $a_leaf (owner [0-9]* is gone, $counted)" "$t/dry" ||
  fail "gc --dry-run does not name $a_leaf: $(cat "$t/dry")"
[ -d "$a_leaf" ] || fail "gc --dry-run removed the leaf"
for x in "${a_procs[@]}"; do alive $x || fail "gc --dry-run killed $x"; done

"$PMON" gc > "$t/gc" || fail "gc exit $?: $(cat "$t/gc")"
grep -qx "removed $a_leaf (owner [0-9]* is gone, $counted killed)" "$t/gc" ||
  fail "gc does not report $a_leaf: $(cat "$t/gc")"
for x in "${a_procs[@]}"; do ! alive $x || fail "process $x survived gc"; done
[ ! -d "$a_leaf" ] || fail "gc left $a_leaf"
! grep -q "$b_leaf" "$t/gc" || fail "gc touched the live $b_leaf"
[ -d "$b_leaf" ] || fail "gc removed a live pmon's leaf"
for x in "${b_procs[@]}"; do alive $x || fail "gc killed $x of a live pmon"; done
[ -d "$other" ] || fail "gc removed $other, which is not a pmon leaf"

# The live pmon ends normally: its tree and leaf go.
kill -TERM "$b_pmon"
wait 2>/dev/null || true
for x in "${b_procs[@]}"; do ! alive $x || fail "$x outlived its pmon"; done
[ ! -d "$b_leaf" ] || fail "$b_leaf left after its pmon stopped"
pass
