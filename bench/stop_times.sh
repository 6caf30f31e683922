#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stop times for trees that make the stop work hard, per backend and under
# --isolate, from pmon's own report: the --timeout deadline to the boundary
# verified empty (stop.empty_confirmed_ms - timeout), with --grace G:
#   term-ignoring  a shell and a child of it, both ignoring SIGTERM
#   exited-main    a daemon whose main thread has exited while another thread
#                  runs (tests/helpers/exited_leader), ignoring SIGTERM
# and, for the crash guard (cgroup backend) and the namespace init's
# parent-death signal (pidns, --isolate): SIGKILL of pmon to every process
# of the call gone (and, on cgroup, its leaf removed), polled every 1 ms.
#
#   bench/stop_times.sh BUILD_DIR [REPS=5] [GRACE=500ms]
# Prints median / max in ms. Root only (pidns needs the host's /proc to name
# the call's processes by host pid; --isolate needs a cgroup leaf).
set -uo pipefail
build=$(cd "${1:?usage: $0 BUILD_DIR [REPS] [GRACE]}" && pwd)
reps=${2:-5}
grace=${3:-500ms}
pmon=$build/pmon
helper=$build/tests/helpers/exited_leader
for p in "$pmon" "$helper"; do [ -x "$p" ] || { echo "missing $p: build it first" >&2; exit 2; }; done
command -v jq >/dev/null || { echo "needs jq" >&2; exit 2; }
tmp=$(mktemp -d /tmp/pmon-bench-stop.XXXXXX)
chmod 755 "$tmp"
hostproc=$tmp/hostproc
mkdir "$hostproc" && mount --bind /proc "$hostproc" || { echo "cannot bind-mount /proc" >&2; exit 2; }
export PMON_TEST_HOSTPROC=$hostproc
trap 'umount "$hostproc"; rm -rf --one-file-system "$tmp"' EXIT
cg=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)

opt_of() { if [ "$1" = isolate ]; then echo --isolate; else echo --confine "$1"; fi; }
stats() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit } printf "%8.1f %8.1f", v[int((NR + 1) / 2)], v[NR] }'; }

TERM_TREE='trap "" TERM; sh -c "trap \"\" TERM; exec sleep 1000" & while :; do sleep 0.05; done'
EXITED='trap "" TERM; "$0" "$1" ignore-term daemon & until [ -s "$1" ]; do sleep 0.01; done; while :; do sleep 0.05; done'

modes="cgroup pidns subreaper pgroup isolate"
echo "stop times, --timeout 1s --grace $grace, $reps runs each: median / max ms after the deadline (load $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-10s %-15s %17s %s\n' backend tree "deadline->empty" "(failed runs)"
for b in $modes; do
  "$pmon" run -q $(opt_of "$b") -- true 2>/dev/null || { printf '%-10s not available here\n' "$b"; continue; }
  for tree in term-ignoring exited-main; do
    : > "$tmp/times"; bad=0
    for _ in $(seq "$reps"); do
      rm -f "$tmp/out" "$tmp/r.json"
      script=$TERM_TREE; [ $tree = exited-main ] && script=$EXITED
      [ $tree = exited-main ] && [ $b = pgroup ] && script=${script/ daemon/}  # a daemon escapes pgroup
      rc=0; "$pmon" run -q $(opt_of "$b") --timeout 1s --grace "$grace" --report "$tmp/r.json" -- \
        sh -c "$script" "$helper" "$tmp/out" || rc=$?
      e=$(jq -r '.stop.empty_confirmed_ms' "$tmp/r.json" 2>/dev/null)
      if [ $rc = 124 ] && [ "$e" != null ] && [ -n "$e" ]; then
        awk -v e="$e" 'BEGIN { printf "%.1f\n", e - 1000 }' >> "$tmp/times"
      else
        bad=$((bad + 1))
      fi
    done
    printf '%-10s %-15s %17s %s\n' "$b" "$tree" "$(stats < "$tmp/times")" "$([ $bad = 0 ] || echo "($bad failed)")"
  done
done

echo
echo "SIGKILL of pmon -> the call's processes gone (cgroup: and its leaf removed), exited-main tree: median / max ms"
for b in cgroup pidns isolate; do
  "$pmon" run -q $(opt_of "$b") -- true 2>/dev/null || continue
  : > "$tmp/times"; bad=0
  for _ in $(seq "$reps"); do
    rm -f "$tmp/out"
    "$pmon" run -q $(opt_of "$b") -- sh -c "$EXITED" "$helper" "$tmp/out" &
    pp=$!
    for _ in $(seq 2000); do [ -s "$tmp/out" ] && break; sleep 0.005; done
    read -r pid st _ < "$tmp/out"
    t0=$(date +%s%N)
    kill -KILL "$pp"
    wait "$pp" 2>/dev/null
    gone=0
    for _ in $(seq 10000); do
      s=$(cat "/proc/$pid/stat" 2>/dev/null) && [ "$(echo "${s##*) }" | cut -d' ' -f20)" = "$st" ] &&
        [ "$(echo "${s##*) }" | cut -d' ' -f18)" -gt 1 ] && { sleep 0.001; continue; }
      [ $b = cgroup ] && [ -n "$(find "$cg" -maxdepth 1 -name "pmon-$pp-*")" ] && { sleep 0.001; continue; }
      gone=1; break
    done
    if [ $gone = 1 ]; then echo $(( ($(date +%s%N) - t0) / 1000 )) | awk '{ printf "%.1f\n", $1 / 1000 }' >> "$tmp/times"
    else bad=$((bad + 1)); kill -KILL "$pid" 2>/dev/null; fi
  done
  printf '%-10s %-15s %17s %s\n' "$b" exited-main "$(stats < "$tmp/times")" "$([ $bad = 0 ] || echo "($bad failed)")"
done
