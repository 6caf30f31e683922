#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the three benchmarks from an existing build directory and prints their
# tables. Builds nothing: build first, e.g.
#   cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release && cmake --build build-bench -j2
#   bench/run_all.sh build-bench            # full run, a few minutes
#   bench/run_all.sh build-bench --quick    # fewer rounds, under a minute
# The teardown benchmark needs root (or a delegated cgroup) for its scratch
# cgroup; without it, leftovers are neither counted nor swept.
set -uo pipefail
if [ $# -lt 1 ] || [ ! -d "$1/bench" ]; then
  echo "usage: $0 BUILD_DIR [--quick]   (BUILD_DIR/bench must hold the bench_* programs)" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
quick=${2:-}
pmon="$build/pmon"
b="$build/bench"
for p in "$pmon" "$b/bench_wall_time" "$b/bench_spawn_throughput" "$b/bench_teardown" "$b/bench_tree"; do
  [ -x "$p" ] || { echo "missing $p: build it first" >&2; exit 2; }
done

if [ "$quick" = "--quick" ]; then
  wall=(--rounds 60 --warmup 5)
  spawn=(--batches 6 --batch-size 30)
  tear=(--reps 2)
else
  wall=(--rounds 300 --warmup 20)
  spawn=(--batches 20 --batch-size 50)
  tear=(--reps 5)
fi

echo "pmon benchmarks: $(uname -sr), $(nproc) cpu(s), $("$pmon" --version 2>/dev/null), $(date -u +%FT%TZ)"
echo "loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg)  (others may share the machine: compare ratios, not absolutes)"
status=0
echo; echo "== wall time: pmon run -- /bin/true against bare, timeout, tini -s =="
"$b/bench_wall_time" --pmon "$pmon" "${wall[@]}" || status=1
echo; echo "== spawn throughput: run_call() against posix_spawn, in one process =="
"$b/bench_spawn_throughput" "${spawn[@]}" || status=1
echo; echo "== teardown: deadline to verified empty =="
"$b/bench_teardown" --pmon "$pmon" --tree "$b/bench_tree" "${tear[@]}" || status=1
exit $status
