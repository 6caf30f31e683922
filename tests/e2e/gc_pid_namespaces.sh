# SPDX-License-Identifier: Apache-2.0
# pmon gc never kills a live call of another PID namespace, in either
# direction, and still collects a dead call's leaf in its own:
# 1. a container (own PID, mount and cgroup namespaces, cgroup2 mounted
#    anew) runs a call: the host's gc --dry-run leaves it alone and says
#    so, the host's gc kills nothing of it;
# 2. a host call: gc in a container with its own PID namespace but the
#    node's cgroup namespace (it sees every leaf) kills nothing of it;
# 3. in the container, a call whose pmon and guard are SIGKILLed: the
#    container's gc kills its sleep and removes its leaf.
. "$(dirname "$0")/common.inc"
[ "$(id -u)" = 0 ] || skip "needs root (namespaces, cgroups)"
have_backend cgroup || skip "the cgroup backend is not available here"
unshare --pid --fork --mount-proc --cgroup --mount true 2>/dev/null || skip "no PID, cgroup or mount namespaces here"
CG=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
box=$CG/pmon-test-ns-$$
mkdir "$box"
box_pid=""
end_box() {  # (unshare blocks SIGTERM; its --kill-child takes the init, and the namespace, along)
  [ -z "$box_pid" ] || { kill -KILL "$box_pid"; wait "$box_pid"; } 2>/dev/null || true
  for _ in $(seq 500); do grep -q "populated 0" "$box/cgroup.events" && break; sleep 0.02; done
  find "$box" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null; rmdir "$box" 2>/dev/null || true
}
trap 'end_box; _cleanup' EXIT

# call NAME [PREFIX...]: pmon run -v -- sleep 1000 (through PREFIX), in
# the background; sets $leaf (as the host sees it) and records the sleep.
call() {
  local n=$1; shift
  "$@" "$PMON" run -v --confine cgroup -- sleep 1000 2> "$t/$n.err" &
  record_pid $!
  for _ in $(seq 1500); do grep -q "^pmon: started pid" "$t/$n.err" && break; sleep 0.02; done
  leaf=$(sed -n 's/^pmon: started pid [0-9]* under cgroup in \(.*\)$/\1/p' "$t/$n.err")
  [ -n "$leaf" ] || fail "call $n did not start: $(cat "$t/$n.err")"
  [ -d "$leaf" ] || leaf=$box${leaf#"$CG"}  # (the container's own mount)
  sleep_pid=$(cat "$leaf/cgroup.procs"); sleep_st=$(start_time_of "$sleep_pid")
  record_pid "$sleep_pid"
}
# The container: its init is unshare's child, killed with unshare.
sh -c 'echo $$ > "$1/cgroup.procs"; exec unshare --pid --fork --kill-child --mount-proc --cgroup --mount \
  sh -c "umount \"\$0\" && mount -t cgroup2 none \"\$0\" && touch \"\$1\" && exec sleep 1000" "$2" "$3"' \
  - "$box" "$CG" "$t/up" & box_pid=$!
record_pid "$box_pid"
for _ in $(seq 500); do [ -f "$t/up" ] && break; sleep 0.02; done
init=$(cat /proc/"$box_pid"/task/*/children | tr -d ' '); [ -f "$t/up" ] && [ -n "$init" ] || fail "the container did not start"
# in_box CMD...: CMD in the container, from its cgroup.
in_box() { sh -c 'echo $$ > "$0/cgroup.procs" && exec nsenter -t "$@"' "$box" "$init" -p -m -C -- "$@"; }

call a in_box
"$PMON" gc --dry-run > "$t/dry"
grep -qF "left alone $leaf (owner " "$t/dry" && grep -F "$leaf" "$t/dry" | grep -q "of another PID namespace" ||
  fail "the host's gc --dry-run does not say it leaves the container's call alone: $(cat "$t/dry")"
"$PMON" gc > "$t/gc" || true
alive "$sleep_pid" "$sleep_st" && [ -d "$leaf" ] || fail "the host's gc killed the container's live call: $(cat "$t/gc")"
echo "ok: the host's gc leaves the container's live call alone"

call b
unshare --pid --fork --kill-child --mount-proc "$PMON" gc > "$t/gc2" || true
alive "$sleep_pid" "$sleep_st" && [ -d "$leaf" ] || fail "a container's gc killed the host's live call: $(cat "$t/gc2")"
echo "ok: a container's gc (the node's cgroup namespace) leaves the host's live call alone"

call c in_box
guard=$(sed -n 's/.*crash guard pid \([0-9]*\).*/\1/p' "$t/c.err")
pmon=${leaf##*/pmon-}; pmon=${pmon%%-*}
in_box kill -KILL "$guard" "$pmon"
in_box "$PMON" gc > "$t/gc3" || fail "the container's gc exit $?: $(cat "$t/gc3")"
! alive "$sleep_pid" "$sleep_st" && [ ! -d "$leaf" ] || fail "the container's gc left its own dead call: $(cat "$t/gc3")"
echo "ok: the container's gc collects its own dead call"
pass
