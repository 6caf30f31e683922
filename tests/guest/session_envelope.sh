# SPDX-License-Identifier: Apache-2.0
# guest: alone
# Guest only (scripts/guest.sh): session envelopes on a pure cgroup v2 host
# with systemd, every figure read back from the cgroup files and the
# reports. Alone: it fills a 256 MiB envelope, and runs `pmon gc`, which
# looks at every cgroup of the guest.
#  1. A named session (memory.max 256M, so memory.high 192M; pids.max 200)
#     with four calls at once, each touching 80 MiB in 4 MiB steps: the
#     session's memory.high events go up, its memory.peak (and memory.current
#     sampled all along) stays within memory.max, each call ends (done,
#     killed whole at memory.max, or held back at memory.high until its
#     --timeout: on Linux 6.1 without swap all four are), and a process
#     outside the session, holding 32 MiB of its own, runs on throughout
#     (pid + start time, its counter going up). The session stays while a fifth call
#     holds it and goes with that call.
#     One call going on past memory.max (memory.high just below it) is
#     killed whole, the session's other call runs on.
#  2. A fork storm in a session with pids.max 64 is held at 64 (the
#     session's pids.current, sampled, but for the instant a refused fork is
#     counted), the refused forks are counted, the
#     scenario itself (the harness's stand-in, outside the session) forks on
#     meanwhile, and nothing of the storm is left.
#  3. A call asking for more memory than the envelope is refused: exit 125,
#     one line naming the envelope and where it was set (a flag, or the
#     environment), and the command never ran.
#  4. A call (root) in a session is in a cgroup namespace of its own: its
#     writes of its pid to the root's, the session's parent's, the session's
#     and a sibling call's cgroup.procs fail, and so does a write to its own
#     leaf's memory.max (cgroup2 mounted with nsdelegate); it is still in its
#     leaf, seen from outside. The hostile helper's cgroup attempts in a
#     session call: none of its processes is ever seen outside the session.
#  5. pmon serve and pmon mcp with --session-memory-max make a session
#     pmon-session-p<pid>-... with that envelope, their jobs run in it, and it
#     is gone when they exit.
#  6. A pmon run --session killed with SIGKILL: its crash guard stops the
#     call and removes its leaf; the session nobody holds any more is removed
#     by `pmon gc`, or by the next session opened beside it.
. "$(dirname "$0")/../e2e/common.inc"
. "$(dirname "$0")/limits.inc"
HOSTILE=$HELPERS/hostile_escape
STORM=$HELPERS/fork_storm
[ -x "$HOSTILE" ] && [ -x "$STORM" ] || fail "helpers missing in $HELPERS"
command -v python3 >/dev/null || fail "python3 is not installed"
MiB=$((1 << 20))

# wait_until SECONDS CMD...: polls CMD every 50 ms (SECONDS scaled).
wait_until() {
  local n=$(( $1 * TIME_SCALE * 20 )) i
  shift
  for ((i = 0; i < n; i++)); do "$@" && return 0; sleep 0.05; done
  "$@"
}
# The cgroup of PID, as the host sees it (a full path), or empty.
leaf_of() {
  local p
  p=$(sed -n 's/^0:://p' "/proc/$1/cgroup" 2>/dev/null) || return 0
  [ -z "$p" ] || echo "$CG${p%/}"
}
# The value of KEY in a "key value" file (memory.events, pids.events).
keyed() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }
none_alive() { [ -z "$(alive_in "$1")" ]; }
# (builtins only: a loop that samples beside a fork storm must not fork)
running() {
  local s
  kill -0 "$1" 2>/dev/null && { read -r s < "/proc/$1/stat"; } 2>/dev/null || return 1
  s=${s##*) }
  [ "${s%% *}" != Z ]
}
sdir() { echo "$LROOT/pmon-session-n-$1"; }
kernel_at_least() {
  local maj min
  IFS=. read -r maj min _ <<< "$(uname -r)"
  [ "$maj" -gt "$1" ] || { [ "$maj" = "$1" ] && [ "${min%%[!0-9]*}" -ge "$2" ]; }
}
echo "kernel $(uname -r); $(grep -w cgroup2 /proc/mounts)"

# A process outside every session, beside them all: it holds 32 MiB and
# counts, ten times a second, in a file.
python3 -c '
import os, sys, time
held = b"\x01" * (32 << 20)
n = 0
while True:
    n += 1
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(n))
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    time.sleep(0.1)' "$t/outside" &
opid=$!
record_pid "$opid"
ost=$(start_time_of "$opid")
wait_until 30 test -s "$t/outside" || fail "the process outside the sessions did not start"
outside_alive() { alive "$opid" "$ost" || fail "the process outside the sessions ($opid, start $ost) died $1"; }

# 1. Four calls at once against the envelope's memory.high.
S1=mem-$$
SD1=$(sdir "$S1")
ENV1=(--session "$S1" --cgroup-root "$LROOT" --session-memory-max 256M --session-pids-max 200)
rec=$t/holder.rec
"$PMON" run -q "${ENV1[@]}" -- sh -c "rec=$rec; $RECORD_SH; exec sleep 1000" > /dev/null 2> "$t/holder.err" &
holder=$!
record_pid "$holder"
wait_until 30 test -s "$rec" || fail "the holding call did not start: $(cat "$t/holder.err")"
record_file "$rec"
read -r hpid _ < "$rec"
[ -d "$SD1" ] || fail "no session cgroup $SD1: $(ls "$LROOT")"
for f in memory.max:268435456 memory.high:201326592 pids.max:200 memory.oom.group:0; do
  got=$(cat "$SD1/${f%%:*}")
  [ "$got" = "${f#*:}" ] || fail "the session's ${f%%:*} reads '$got', want '${f#*:}'"
done
for c in memory pids; do grep -qw "$c" "$SD1/cgroup.subtree_control" || fail "$c is not passed on to the calls: $(cat "$SD1/cgroup.subtree_control")"; done
hleaf=$(leaf_of "$hpid")
case $hleaf in "$SD1"/pmon-*) ;; *) fail "the holding call is in '$hleaf', not a leaf of $SD1" ;; esac
[ "$(cat "$hleaf/memory.oom.group")" = 1 ] || fail "the call's leaf is not its own OOM group"
[ "$(readlink "/proc/$hpid/ns/cgroup")" != "$(readlink /proc/self/ns/cgroup)" ] ||
  fail "the call is in the scenario's cgroup namespace, not one of its own"
echo "ok: session $SD1: memory.max 268435456, memory.high 201326592, pids.max 200; a call in leaf ${hleaf#"$SD1"/}, in a cgroup namespace of its own"

cat > "$t/alloc.py" <<'PY'
import os, sys, time
print("ready", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.02)
chunks = []
for i in range(1, 21):
    chunks.append(b"\x01" * (4 << 20))
    print("allocated", 4 * i, "MiB", flush=True)
    time.sleep(0.02)
time.sleep(0.5)
print("done", flush=True)
PY
: > "$t/calls.rec"
for i in 1 2 3 4; do
  "$PMON" run "${ENV1[@]}" --timeout $((12 * TIME_SCALE))s --report "$t/m$i.json" -- \
    sh -c "rec=$t/calls.rec; $RECORD_SH; exec python3 $t/alloc.py $t/go" > "$t/m$i.out" 2> "$t/m$i.err" &
  mp[i]=$!
  record_pid "${mp[i]}"
done
all_ready() { local i; for i in 1 2 3 4; do grep -q ready "$t/m$i.out" 2>/dev/null || return 1; done; }
wait_until 30 all_ready || fail "the four calls did not start: $(cat "$t"/m*.err)"
ticks0=$(cat "$t/outside")
touch "$t/go"
maxcur=0 samples=0
while :; do
  busy=0
  for i in 1 2 3 4; do running "${mp[i]}" && busy=1; done
  [ $busy = 1 ] || break
  if cur=$(cat "$SD1/memory.current" 2>/dev/null); then
    samples=$((samples + 1))
    [ "$cur" -gt "$maxcur" ] && maxcur=$cur
  fi
  outside_alive "while the calls filled the session"
  sleep 0.1
done
record_file "$t/calls.rec"
outcomes=""
for i in 1 2 3 4; do
  rc=0; wait "${mp[i]}" || rc=$?
  r=$t/m$i.json
  [ -s "$r" ] || fail "call $i wrote no report (exit $rc): $(cat "$t/m$i.err")"
  last=$(grep -c '^allocated' "$t/m$i.out" || true)
  case $rc in
    0) grep -qx done "$t/m$i.out" || fail "call $i exited 0 without finishing: $(cat "$t/m$i.out")"
       what="done" ;;
    137) [ "$(rj "$r" .oom_killed)" = true ] || fail "call $i killed (137) but oom_killed is $(rj "$r" .oom_killed): $(cat "$t/m$i.err")"
         [ "$(rj "$r" '.session.call_usage.memory_events.oom_kill // 0')" -gt 0 ] || fail "call $i: its leaf counted no oom_kill"
         what="killed at the envelope (oom_kill $(rj "$r" .session.call_usage.memory_events.oom_kill))" ;;
    124) what="stopped at its timeout (throttled)" ;;
    *) fail "call $i: exit $rc: $(cat "$t/m$i.err")" ;;
  esac
  [ "$(rj "$r" .session.cgroup)" = "$SD1" ] || fail "call $i: session.cgroup $(rj "$r" .session.cgroup)"
  [ "$(rj "$r" .session.name)" = "name $S1" ] || fail "call $i: session.name $(rj "$r" .session.name)"
  [ "$(rj "$r" -c .session.envelope)" = '{"memory_max":268435456,"memory_high":201326592,"pids_max":200,"cpu_max":null}' ] ||
    fail "call $i: session.envelope $(rj "$r" -c .session.envelope)"
  case $(rj "$r" .cgroup) in "$SD1"/pmon-*) ;; *) fail "call $i ran in $(rj "$r" .cgroup), not in the session" ;; esac
  assert_leaf_gone "$r" "call $i"
  speak=$(rj "$r" .session.usage.memory_peak)
  [ "$speak" -le 268435456 ] || fail "call $i: the session's memory_peak $speak is above memory.max"
  outcomes="$outcomes; call $i: exit $rc, $what, $last of 20 steps, call peak $(rj "$r" '(.session.call_usage.memory_peak // 0) / 1048576 | floor') MiB, memory_high_hit $(rj "$r" .memory_high_hit), session high events $(rj "$r" .session.usage.memory_events.high)"
done
assert_none_alive "$t/calls.rec" "the four calls"
outside_alive "after the calls"
ticks1=$(cat "$t/outside")
[ "$ticks1" -gt "$ticks0" ] || fail "the process outside the session stopped counting ($ticks0, then $ticks1)"
# The session is still there (the holding call), with what it went through.
[ -d "$SD1" ] || fail "the session went while a call still held it"
peak=$(cat "$SD1/memory.peak")
high=$(keyed "$SD1/memory.events" high)
mmax=$(keyed "$SD1/memory.events" max)
oomk=$(keyed "$SD1/memory.events" oom_kill)
pressure=$(sed -n 's/^some avg10=\([0-9.]*\).*total=\([0-9]*\)/avg10 \1, total \2 us/p' "$SD1/memory.pressure")
echo "figures: session memory.peak $peak ($((peak / MiB)) MiB), memory.current at most $maxcur ($((maxcur / MiB)) MiB, $samples samples), memory.events high $high max $mmax oom_kill $oomk, memory.pressure some $pressure"
echo "figures:${outcomes#;}"
echo "figures: the process outside counted $ticks0 -> $ticks1 meanwhile"
[ "$high" -gt 0 ] || fail "the session's memory.events high is $high: never throttled"
[ "$peak" -le 268435456 ] || fail "the session's memory.peak $peak is above its memory.max"
[ "$peak" -gt 201326592 ] || fail "the session's memory.peak $peak never went past its memory.high"
[ "$maxcur" -le 268435456 ] || fail "the session's memory.current reached $maxcur"
kill -TERM "$holder"
wait "$holder" 2>/dev/null || true
assert_none_alive "$rec" "the holding call"
[ ! -d "$SD1" ] || fail "the session $SD1 is still there after its last call: $(find "$SD1")"
echo "ok: four calls past memory.high: high events $high, peak $((peak / MiB)) MiB <= 256 MiB; the process outside ran on; the session went with its last call"

# 1b. At memory.max: one call past it is killed whole (its leaf is its own
#     OOM group), not the session's other call. memory.high just below
#     memory.max, so that the call gets there before its timeout.
S1b=max-$$
SD1b=$(sdir "$S1b")
ENV1b=(--session "$S1b" --cgroup-root "$LROOT" --session-memory-max 128M --session-memory-high 120M)
"$PMON" run -q "${ENV1b[@]}" -- sh -c "rec=$t/other.rec; $RECORD_SH; exec sleep 1000" > /dev/null 2> "$t/other.err" &
other=$!
record_pid "$other"
wait_until 30 test -s "$t/other.rec" || fail "the session's other call did not start: $(cat "$t/other.err")"
record_file "$t/other.rec"
[ "$(cat "$SD1b/memory.max")" = $((128 * MiB)) ] && [ "$(cat "$SD1b/memory.high")" = $((120 * MiB)) ] ||
  fail "the session's memory.max $(cat "$SD1b/memory.max"), memory.high $(cat "$SD1b/memory.high")"
cat > "$t/alloc2.py" <<'PY'
chunks = []
for i in range(1, 51):
    chunks.append(b"\x01" * (4 << 20))
    print("allocated", 4 * i, "MiB", flush=True)
print("done", flush=True)
PY
rec=$t/over.rec
cat > "$t/over.sh" <<SH
rec=$rec
$RECORD_SH
(rec=$rec; $RECORD_SH; exec sleep 1000) &
sh -c 'rec=$rec; $RECORD_SH; exec python3 $t/alloc2.py'
echo "the allocator returned \$?"
wait
SH
rc=0
"$PMON" run "${ENV1b[@]}" --timeout $((12 * TIME_SCALE))s --report "$t/over.json" -- sh "$t/over.sh" > "$t/over.out" 2> "$t/over.err" || rc=$?
record_file "$rec"
assert_none_alive "$rec" "the call past memory.max"
[ "$(wc -l < "$rec")" = 3 ] || fail "want the shell, the sleeper and the allocator recorded: $(cat "$rec")"
steps=$(grep -c '^allocated' "$t/over.out" || true)
omax=$(rj "$t/over.json" .session.usage.memory_events.max)
ooom=$(rj "$t/over.json" .session.usage.memory_events.oom_kill)
opeak=$(rj "$t/over.json" .session.usage.memory_peak)
echo "figures: past memory.max 128M (memory.high 120M): exit $rc, oom_killed $(rj "$t/over.json" .oom_killed), $steps of 50 steps; session memory.peak $opeak ($((opeak / MiB)) MiB), memory.events high $(rj "$t/over.json" .session.usage.memory_events.high) max $omax oom_kill $ooom; the call's leaf oom_kill $(rj "$t/over.json" .session.call_usage.memory_events.oom_kill)"
[ $rc = 137 ] || fail "the call past the session's memory.max: exit $rc, want 137 (killed whole): $(cat "$t/over.out" "$t/over.err")"
[ "$(rj "$t/over.json" .oom_killed)" = true ] || fail "oom_killed is $(rj "$t/over.json" .oom_killed)"
! grep -q "the allocator returned" "$t/over.out" || fail "the call's shell lived on after the kill: $(cat "$t/over.out")"
[ "$opeak" -le $((128 * MiB)) ] || fail "the session's memory.peak $opeak is above its memory.max"
[ "$omax" -gt 0 ] && [ "$ooom" -gt 0 ] || fail "the session counted no max ($omax) or oom_kill ($ooom) event"
[ "$(rj "$t/over.json" '.session.call_usage.memory_events.oom_kill // 0')" -gt 0 ] || fail "the call's leaf counted no oom_kill"
assert_leaf_gone "$t/over.json" "the call past memory.max"
[ -n "$(alive_in "$t/other.rec")" ] || fail "the session's other call was killed with the one past memory.max"
outside_alive "after the kill at memory.max"
kill -TERM "$other"
wait "$other" 2>/dev/null || true
assert_none_alive "$t/other.rec" "the session's other call"
[ ! -d "$SD1b" ] || fail "the session $SD1b is still there after its last call"
echo "ok: past the session's memory.max: the call killed whole (137), the session's other call ran on, peak $((opeak / MiB)) MiB <= 128 MiB"

# 2. A fork storm against the session's pids.max 64.
S2=bomb-$$
SD2=$(sdir "$S2")
"$PMON" run --session "$S2" --cgroup-root "$LROOT" --session-pids-max 64 --timeout 10s --grace 500ms \
  --report "$t/b.json" -- "$STORM" "$t/storm" 2000 200000 20000 30 > "$t/b.out" 2> "$t/b.err" &
bp=$!
record_pid "$bp"
maxp=0 psamples=0 forks=0 forks_failed=0 i=0
while running "$bp"; do
  # (read: a builtin, so that the storm cannot slow the sampling down with
  # a fork of its own)
  if { read -r n < "$SD2/pids.current"; } 2>/dev/null; then
    psamples=$((psamples + 1))
    [ "$n" -gt "$maxp" ] && maxp=$n
  fi
  # The harness's stand-in forks on beside the storm.
  if [ $((i++ % 4)) = 0 ]; then
    if x=$(/bin/echo forked) && [ "$x" = forked ]; then forks=$((forks + 1)); else forks_failed=$((forks_failed + 1)); fi
  fi
  sleep 0.02
done
rc=0; wait "$bp" || rc=$?
left=$(alive_naming "$t/storm")
if [ -n "$left" ]; then
  echo "$left" >> "$t/pids"; echo "$left" >> "$STATE/pids"
  fail "storm processes survived: $(echo "$left" | wc -l)"
fi
[ $rc = 124 ] || fail "the storm's pmon exited $rc, want 124: $(cat "$t/b.err")"
read -r _ tried _ < <(od -An -v -t d8 -w32 "$t/storm")
sev=$(rj "$t/b.json" .session.usage.pids_events_max)
cev=$(rj "$t/b.json" .session.call_usage.pids_events_max)
echo "figures: storm: session pids.current at most $maxp ($psamples samples, a refused fork counted for an instant), $tried forks tried; pids.events max: session $sev, the call's leaf $cev; the scenario forked $forks times meanwhile, $forks_failed failed"
[ "$psamples" -gt 0 ] || fail "the session's pids.current was never read"
# A refused fork raises pids.current by one for an instant before the kernel
# takes it back (it adds, then compares with pids.max), so a sample taken
# beside a storm may read one above the limit for each CPU forking at that
# moment. More than that would be a process the limit let through.
cpus=$(getconf _NPROCESSORS_ONLN)
[ "$maxp" -le $((64 + cpus)) ] || fail "the session's pids.current reached $maxp under pids.max 64 ($cpus CPUs)"
[ "$maxp" -ge 56 ] || fail "the storm only reached $maxp processes: not held at the session's limit"
[ "$forks" -gt 0 ] && [ "$forks_failed" = 0 ] || fail "the scenario's own forks failed ($forks_failed) beside the storm"
[ "$(rj "$t/b.json" .session.envelope.pids_max)" = 64 ] || fail "session.envelope: $(rj "$t/b.json" -c .session.envelope)"
[ "$(rj "$t/b.json" .pids_max_hit)" = true ] || fail "pids_max_hit is $(rj "$t/b.json" .pids_max_hit)"
[ "$cev" -gt 0 ] || fail "the call's leaf counted no refused fork (pids.events max $cev)"
# Before Linux 6.12 a refused fork is counted in pids.events of the cgroup
# the forking process is in (the call's leaf), not of the one whose
# pids.max refused it (the session's); from 6.12 on, in the session's too.
if kernel_at_least 6 12; then
  [ "$sev" -gt 0 ] || fail "the session counted no refused fork (pids.events max $sev) on Linux $(uname -r)"
fi
assert_leaf_gone "$t/b.json" "the storm"
[ ! -d "$SD2" ] || fail "the storm's session $SD2 is still there"
outside_alive "after the storm"
echo "ok: fork storm held at $maxp of the session's pids.max 64; refused forks counted (leaf $cev, session $sev); nothing left"

# 3. More than the envelope: refused before anything runs.
rc=0
"$PMON" run --session "big-$$" --cgroup-root "$LROOT" --session-memory-max 256M --memory-max 512M -- \
  sh -c "touch $t/ran" > "$t/big.out" 2> "$t/big.err" || rc=$?
[ $rc = 125 ] || fail "a call over the envelope: exit $rc, want 125: $(cat "$t/big.err")"
[ ! -e "$t/ran" ] || fail "the call over the envelope ran"
[ "$(wc -l < "$t/big.err")" = 1 ] || fail "want one line, got: $(cat "$t/big.err")"
grep -q 'memory.max 256 MiB' "$t/big.err" && grep -q -- '--session-memory-max' "$t/big.err" && grep -q '512 MiB' "$t/big.err" ||
  fail "the line does not name the envelope and where it was set: $(cat "$t/big.err")"
echo "figures: refused: $(cat "$t/big.err")"
rc=0
PMON_SESSION_MEMORY_MAX=256M "$PMON" run --session "big-$$" --cgroup-root "$LROOT" --memory-max 1G -- \
  sh -c "touch $t/ran" > "$t/big2.out" 2> "$t/big2.err" || rc=$?
[ $rc = 125 ] && [ ! -e "$t/ran" ] && [ "$(wc -l < "$t/big2.err")" = 1 ] || fail "from the environment: exit $rc: $(cat "$t/big2.err")"
grep -q 'PMON_SESSION_MEMORY_MAX' "$t/big2.err" || fail "the line does not name PMON_SESSION_MEMORY_MAX: $(cat "$t/big2.err")"
echo "figures: refused: $(cat "$t/big2.err")"
"$PMON" run -q --session "big-$$" --cgroup-root "$LROOT" --session-memory-max 256M --memory-max 64M --report "$t/small.json" -- \
  sh -c "touch $t/ran" || fail "a call asking for less than the envelope failed ($?)"
[ -e "$t/ran" ] || fail "the call asking for less did not run"
[ "$(rj "$t/small.json" .limits.memory_max)" = $((64 * MiB)) ] || fail "its limits: $(rj "$t/small.json" -c .limits)"
[ -z "$(find "$LROOT" -mindepth 1 -type d)" ] || fail "left in $LROOT: $(find "$LROOT" -mindepth 1 -type d)"
echo "ok: --memory-max above the envelope refused (125, one line, nothing ran); 64M inside it ran"

# 4. Out of the leaf, as root.
mnt=$(mount | grep -w cgroup2)
echo "figures: mount: $mnt"
echo "$mnt" | grep -qw nsdelegate || fail "cgroup2 is not mounted with nsdelegate here: $mnt"
S4=esc-$$
SD4=$(sdir "$S4")
ENV4=(--session "$S4" --cgroup-root "$LROOT" --session-memory-max 256M --session-pids-max 200)
"$PMON" run -q "${ENV4[@]}" -- sh -c "rec=$t/sib.rec; $RECORD_SH; exec sleep 1000" > /dev/null 2> "$t/sib.err" &
sibp=$!
record_pid "$sibp"
wait_until 30 test -s "$t/sib.rec" || fail "the sibling call did not start: $(cat "$t/sib.err")"
record_file "$t/sib.rec"
read -r sibpid _ < "$t/sib.rec"
sib=$(leaf_of "$sibpid")
cat > "$t/esc.py" <<'PY'
import errno, os, sys, time
out, targets = sys.argv[1], sys.argv[2]
while not os.path.exists(targets):
    time.sleep(0.02)
with open(out, "w") as o:
    o.write("view " + open("/proc/self/cgroup").read().strip() + "\n")
    for line in open(targets).read().splitlines():
        what, path, value = line.split(" ")
        value = str(os.getpid()) if value == "PID" else value
        try:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, value.encode())
                result = "ok"
            finally:
                os.close(fd)
        except OSError as e:
            result = errno.errorcode.get(e.errno, str(e.errno))
        o.write(what + " " + result + "\n")
    o.write("done\n")
while not os.path.exists(targets + ".end"):
    time.sleep(0.02)
PY
"$PMON" run -q "${ENV4[@]}" --report "$t/e.json" -- \
  sh -c "rec=$t/esc.rec; $RECORD_SH; exec python3 $t/esc.py $t/esc.out $t/targets" > /dev/null 2> "$t/esc.err" &
escp=$!
record_pid "$escp"
wait_until 30 test -s "$t/esc.rec" || fail "the escaping call did not start: $(cat "$t/esc.err")"
record_file "$t/esc.rec"
read -r epid _ < "$t/esc.rec"
eleaf=$(leaf_of "$epid")
case $eleaf in "$SD4"/pmon-*) ;; *) fail "the escaping call starts in '$eleaf', not in $SD4" ;; esac
[ "$eleaf" != "$sib" ] || fail "two calls share the leaf $eleaf"
smax=$(cat "$SD4/memory.max")
{
  echo "root-cgroup.procs $CG/cgroup.procs PID"
  echo "session-parent-cgroup.procs $LROOT/cgroup.procs PID"
  echo "session-cgroup.procs $SD4/cgroup.procs PID"
  echo "sibling-cgroup.procs $sib/cgroup.procs PID"
  echo "own-leaf-memory.max $eleaf/memory.max 1073741824"
  echo "session-memory.max $SD4/memory.max $smax"
} > "$t/targets.tmp"
mv "$t/targets.tmp" "$t/targets"
wait_until 30 grep -qx done "$t/esc.out" || fail "the escaping call did not finish its attempts: $(cat "$t/esc.out" "$t/esc.err")"
now=$(leaf_of "$epid")
echo "figures: escape attempts from $eleaf: $(tr '\n' ';' < "$t/esc.out")"
echo "figures: after them it is in $now, seen from outside"
# Not a way out, but worth knowing: nsdelegate guards the files of the
# namespace's root (the leaf) and moves between cgroups, not an ancestor's
# files. A root call may write the session's memory.max (the same value
# here), as any root process may.
echo "figures: the session's memory.max written by the call (the same value): $(sed -n 's/^session-memory.max //p' "$t/esc.out")"
[ "$now" = "$eleaf" ] || fail "the call moved from $eleaf to '$now': $(cat "$t/esc.out")"
grep -qx 'view 0::/' "$t/esc.out" || fail "the call sees its cgroup as $(sed -n 's/^view //p' "$t/esc.out"), not the root of a namespace of its own"
for w in root-cgroup.procs session-parent-cgroup.procs session-cgroup.procs sibling-cgroup.procs; do
  r=$(sed -n "s/^$w //p" "$t/esc.out")
  [ "$r" = ENOENT ] || fail "writing its pid to $w: $r, want ENOENT (not in its cgroup namespace): $(cat "$t/esc.out")"
done
r=$(sed -n "s/^own-leaf-memory.max //p" "$t/esc.out")
[ "$r" = EPERM ] || fail "writing its own leaf's memory.max: $r, want EPERM (the root of its cgroup namespace): $(cat "$t/esc.out")"
[ "$(cat "$eleaf/memory.max")" = max ] || fail "its leaf's memory.max changed: $(cat "$eleaf/memory.max")"
[ "$(leaf_of "$sibpid")" = "$sib" ] || fail "the sibling moved to $(leaf_of "$sibpid")"
[ "$(cat "$SD4/memory.max")" = "$smax" ] || fail "the session's memory.max changed: $(cat "$SD4/memory.max")"
touch "$t/targets.end"
rc=0; wait "$escp" || rc=$?
[ $rc = 0 ] || fail "the escaping call's pmon exited $rc: $(cat "$t/esc.err")"
assert_none_alive "$t/esc.rec" "the escaping call"
assert_leaf_gone "$t/e.json" "the escaping call"
echo "ok: cgroup.procs of the root, the session's parent, the session and a sibling: ENOENT; its own memory.max: EPERM; still in its leaf"

# The hostile helper, watched from outside while it runs.
"$PMON" run -q "${ENV4[@]}" --timeout $((2 * TIME_SCALE))s --report "$t/h.json" -- env HOSTILE_CGROUP2="$CG" \
  sh -c "rec=$t/h.rec; $RECORD_SH; exec \"\$0\" cgroup $t/hcg" "$HOSTILE" > /dev/null 2> "$t/h.err" &
hp=$!
record_pid "$hp"
wait_until 30 test -s "$t/h.rec" || fail "the hostile call did not start: $(cat "$t/h.err")"
record_file "$t/h.rec"
read -r hpid hst < "$t/h.rec"
hsamples=0 hleaf=""
while alive "$hpid" "$hst"; do
  w=$(leaf_of "$hpid")
  [ -n "$w" ] || break
  case $w in "$SD4"/pmon-*) ;; *) fail "the hostile call was seen in $w: $(cat "$t/hcg" 2>/dev/null)" ;; esac
  [ -n "$hleaf" ] || hleaf=$w
  [ "$w" = "$hleaf" ] || fail "the hostile call moved from $hleaf to $w"
  for p in $(cat "$hleaf/cgroup.procs" 2>/dev/null || true); do
    case $(leaf_of "$p") in "$SD4"/pmon-* | "") ;; *) fail "process $p of the hostile call is in $(leaf_of "$p")" ;; esac
  done
  hsamples=$((hsamples + 1))
  sleep 0.02
done
rc=0; wait "$hp" || rc=$?
[ $rc = 124 ] || fail "the hostile call's pmon exited $rc, want 124 (stopped at its timeout): $(cat "$t/h.err")"
grep -q '^done' "$t/hcg" || fail "the hostile call did not finish its attempts: $(cat "$t/hcg")"
grep -q "^write $CG/cgroup.procs " "$t/hcg" || fail "the hostile call never tried $CG/cgroup.procs: $(cat "$t/hcg")"
! grep -q "^write $CG/cgroup.procs ok" "$t/hcg" || fail "the hostile call wrote itself to $CG/cgroup.procs: $(cat "$t/hcg")"
! grep -q hostile-cg /proc/mounts || fail "the hostile call's cgroup2 mount is left: $(grep hostile-cg /proc/mounts)"
echo "figures: hostile cgroup attempts: $(tr '\n' ';' < "$t/hcg") ($hsamples samples, always in ${hleaf#"$LROOT"/})"
assert_none_alive "$t/h.rec" "the hostile call"
kill -TERM "$sibp"
wait "$sibp" 2>/dev/null || true
assert_none_alive "$t/sib.rec" "the sibling call"
[ ! -d "$SD4" ] || fail "the session $SD4 is still there after its calls: $(find "$SD4")"
outside_alive "after the escape attempts"
echo "ok: the hostile call stayed in its leaf of the session ($hsamples samples)"

# 5. A service's session: pmon serve, then pmon mcp.
. "$(dirname "$0")/../e2e/serve.inc"
serve_start --cgroup-root "$LROOT" --session-memory-max 128M
SP=$(find "$LROOT" -mindepth 1 -maxdepth 1 -name "pmon-session-p$SERVE_PID-*")
[ -n "$SP" ] || fail "pmon serve made no session: $(ls "$LROOT")"
[ "$(cat "$SP/memory.max")" = $((128 * MiB)) ] && [ "$(cat "$SP/memory.high")" = $((96 * MiB)) ] ||
  fail "the service's session: memory.max $(cat "$SP/memory.max"), memory.high $(cat "$SP/memory.high")"
client_open c
r=$(call c terminal/create '{"command":"sleep","args":["1000"],"keep":true}')
job=$(jf "$r" 'm["result"]["terminalId"]')
in_leaves() { cat "$1"/pmon-*/cgroup.procs 2>/dev/null | grep -q .; }
wait_until 30 in_leaves "$SP" || fail "the job is not in the service's session: $(find "$SP")"
jpid=$(cat "$SP"/pmon-*/cgroup.procs | head -n1)
echo "$jpid $(start_time_of "$jpid")" >> "$t/pids"
case $(leaf_of "$jpid") in "$SP"/pmon-*) ;; *) fail "the job is in $(leaf_of "$jpid")" ;; esac
call c terminal/kill '{"terminalId":"'"$job"'"}' > /dev/null
client_close c
stop_serve
[ ! -d "$SP" ] || fail "the service's session $SP is still there after it exited"
echo "ok: pmon serve --session-memory-max 128M: session ${SP#"$LROOT"/} (memory.high 96 MiB) held its job, gone with the service"

PYTHONPATH=$(dirname "$0")/../e2e python3 - "$PMON" "$LROOT" <<'PY' || fail "pmon mcp: see above"
import glob, os, sys, time
from mcp_stdio import Mcp
pmon, root = sys.argv[1:3]
m = Mcp(pmon, "--cgroup-root", root, "--session-memory-max", "128M")
sessions = glob.glob(os.path.join(root, "pmon-session-p%d-*" % m.p.pid))
assert len(sessions) == 1, os.listdir(root)
s = sessions[0]
assert open(os.path.join(s, "memory.max")).read().strip() == str(128 << 20)
m.tool("start", {"command": "sleep 1000"})
for _ in range(600):
    procs = "".join(open(f).read() for f in glob.glob(os.path.join(s, "pmon-*", "cgroup.procs")))
    if procs.strip():
        break
    time.sleep(0.05)
assert procs.strip(), "the job is not in the session"
rc = m.close()
assert rc == 0, rc
assert not os.path.exists(s), s + " is still there after pmon mcp exited"
print("ok: pmon mcp --session-memory-max 128M: session %s held its job (pid %s), gone with it" % (os.path.basename(s), procs.split()[0]))
PY
set +e

# 6. pmon killed: its crash guard stops the call; what is left of the
#    session is removed by `pmon gc`, then by the next session opened beside.
crash() {
  "$PMON" run -q --session "$1" --cgroup-root "$LROOT" --session-memory-max 128M -- \
    sh -c "rec=$t/$1.rec; $RECORD_SH; exec sleep 1000" > /dev/null 2> "$t/$1.err" &
  local p=$! cpid leaf
  record_pid "$p"
  wait_until 30 test -s "$t/$1.rec" || fail "the call of $1 did not start: $(cat "$t/$1.err")"
  record_file "$t/$1.rec"
  read -r cpid _ < "$t/$1.rec"
  leaf=$(leaf_of "$cpid")
  case $leaf in "$(sdir "$1")"/pmon-*) ;; *) fail "the call of $1 is in $leaf" ;; esac
  kill -KILL "$p"
  wait "$p" 2>/dev/null || true
  wait_until 30 none_alive "$t/$1.rec" || fail "the call of $1 outlived its pmon's SIGKILL"
  wait_until 30 test ! -d "$leaf" || fail "the leaf of $1 is left after its pmon's SIGKILL: $leaf"
  [ -d "$(sdir "$1")" ] || fail "the session of $1 went with its pmon (nobody was left to remove it)"
  echo "crash $1: the call stopped, its leaf removed by the crash guard; the session is left, held by nobody"
}
S6=crash-$$
crash "$S6"
"$PMON" gc > "$t/gc.out" 2>&1 || fail "pmon gc failed: $(cat "$t/gc.out")"
echo "figures: pmon gc: $(tr '\n' ';' < "$t/gc.out")"
[ ! -d "$(sdir "$S6")" ] || fail "pmon gc left the crashed session $(sdir "$S6"): $(cat "$t/gc.out")"
grep -q "removed $(sdir "$S6") " "$t/gc.out" || fail "pmon gc did not say it removed $(sdir "$S6"): $(cat "$t/gc.out")"
S7=crash2-$$
crash "$S7"
"$PMON" run -q --session "beside-$$" --cgroup-root "$LROOT" --session-memory-max 128M -- true ||
  fail "a call in a session beside the crashed one failed"
[ ! -d "$(sdir "$S7")" ] || fail "the next session opened beside it left the crashed session $(sdir "$S7")"
[ -z "$(find "$LROOT" -mindepth 1 -type d)" ] || fail "left in $LROOT: $(find "$LROOT" -mindepth 1 -type d)"
echo "ok: after a SIGKILL: the call stopped, the session removed by pmon gc, and by the next session beside"

outside_alive "at the end"
kill -TERM "$opid"
wait "$opid" 2>/dev/null || true
pass "peak $((peak / MiB)) MiB under a 256 MiB envelope, $high high events; storm held at $maxp of 64"
