#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The cgroup backend's graceful stop of a fork storm, with the leaf frozen
# for the SIGTERM pass (the default) against without (PMON_NO_FREEZE=1, a
# benchmarking knob read only by the stop's signal pass). Rounds interleave
# the two modes (alternating which goes first). Per trial, from pmon's
# report: SIGTERM sent -> the leaf verified empty, and whether the SIGKILL
# step was needed. Workloads:
#   storm       bench_tree storm 32: workers fork and exit flat out, SIGTERM
#               at its default (dies)
#   term-forks  tests/helpers/fork_storm ... term-forks: 300 live at most,
#               2000 forks/s; SIGTERM caught, one last child forked, exit
#
#   bench/freeze_stop.sh BUILD_DIR [ROUNDS=7] [GRACE=2s]
set -uo pipefail
build=$(cd "${1:?usage: $0 BUILD_DIR [ROUNDS] [GRACE]}" && pwd)
rounds=${2:-7}
grace=${3:-2s}
pmon=$build/pmon
tree=$build/bench/bench_tree
storm=$build/tests/helpers/fork_storm
for p in "$pmon" "$tree"; do [ -x "$p" ] || { echo "missing $p: build it first" >&2; exit 2; }; done
command -v jq >/dev/null || { echo "needs jq" >&2; exit 2; }
"$pmon" run -q --confine cgroup -- true 2>/dev/null || { echo "the cgroup backend is not available here" >&2; exit 2; }
tmp=$(mktemp -d /tmp/pmon-bench-freeze.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

workloads="storm"
[ -x "$storm" ] && workloads="storm term-forks"

# trial WORKLOAD MODE: appends "ms killed" to $tmp/WORKLOAD.MODE
trial() {
  local w=$1 mode=$2 rc=0 env=()
  [ "$mode" = unfrozen ] && env=(PMON_NO_FREEZE=1)
  rm -f "$tmp/r.json" "$tmp/ready" "$tmp/counters"
  if [ "$w" = storm ]; then
    env "${env[@]}" "$pmon" run -q --confine cgroup --timeout 1s --grace "$grace" --report "$tmp/r.json" -- \
      "$tree" storm 32 "$tmp/ready" 1000000 >/dev/null 2>&1 || rc=$?
  else
    env "${env[@]}" "$pmon" run -q --confine cgroup --timeout 1s --grace "$grace" --report "$tmp/r.json" -- \
      "$storm" "$tmp/counters" 300 40000 2000 30 term-forks >/dev/null 2>&1 || rc=$?
  fi
  [ $rc = 124 ] || { echo "bad" >> "$tmp/$w.$mode"; return; }
  jq -r '[(.stop.empty_confirmed_ms - .stop.signal_sent_ms), (if .stop.kill_sent_ms == null then 0 else 1 end)] | @tsv' \
    "$tmp/r.json" >> "$tmp/$w.$mode"
}

for r in $(seq "$rounds"); do
  for w in $workloads; do
    if [ $((r % 2)) = 1 ]; then trial "$w" frozen; trial "$w" unfrozen; else trial "$w" unfrozen; trial "$w" frozen; fi
  done
done

med() { grep -v bad "$1" | cut -f1 | sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else printf "%.1f", v[int((NR + 1) / 2)] }'; }
mx() { grep -v bad "$1" | cut -f1 | sort -n | tail -1 | awk '{ printf "%.1f", $1 }'; }
kills() { awk -F'\t' '$2 == 1' "$1" | wc -l; }
bads() { grep -c bad "$1"; }

echo "cgroup backend, --timeout 1s --grace $grace, $rounds interleaved rounds (load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "SIGTERM sent -> leaf verified empty, ms"
printf '%-11s %-9s %9s %9s %12s %7s %14s\n' workload mode median max "SIGKILL used" failed "unfrozen/frozen"
for w in $workloads; do
  fm=$(med "$tmp/$w.frozen"); um=$(med "$tmp/$w.unfrozen")
  ratio=$(awk -v u="$um" -v f="$fm" 'BEGIN { if (f + 0 > 0) printf "%.0fx", u / f; else print "-" }')
  for mode in frozen unfrozen; do
    f=$tmp/$w.$mode
    printf '%-11s %-9s %9s %9s %12s %7s %14s\n' "$w" "$mode" "$(med "$f")" "$(mx "$f")" \
      "$(kills "$f")/$rounds" "$(bads "$f")" "$([ $mode = unfrozen ] && echo "$ratio")"
  done
done
