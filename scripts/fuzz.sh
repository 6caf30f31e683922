#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fuzzes the two request parsers, the hook's input reader and the config
# file's reader: builds tests/fuzz/ with clang (libFuzzer, ASan, UBSan) in
# build-fuzz/, then runs each target for SECONDS (default 60) on a copy of its seed corpus, tests/fuzz/corpus/TARGET/, which a run
# never changes (what it adds stays in build-fuzz/corpus/TARGET/). An input
# that crashes a target, trips a sanitizer or a check, leaks, or hangs (still
# running after 60 s of wall time: an input takes milliseconds, but CI runs
# this niced beside an emulated guest that can starve it for seconds) is
# saved in build-fuzz/crashes/TARGET/ and printed; then the script
# exits 1. PMON_FUZZ_CXX names the compiler (default clang++-19: an older
# clang cannot compile GCC 12's <expected>).
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
secs=${1:-60}
case $secs in '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, not '$secs'" >&2; exit 2 ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-fuzz
cxx=${PMON_FUZZ_CXX:-clang++-19}
command -v "$cxx" >/dev/null || { echo "fuzz.sh: $cxx not found; scripts/deps.sh installs it" >&2; exit 2; }
targets=(fuzz_serve_request fuzz_mcp_message fuzz_hook_input fuzz_session_config)

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" "${launcher[@]}" -DPMON_FUZZ=ON \
  -DBUILD_TESTING=OFF -DPMON_BENCH=OFF -DPMON_PYTHON_BINDING=OFF > "$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" -j2 --target "${targets[@]}"

# Stack traces with function names and lines.
sym=$(command -v llvm-symbolizer-19 || command -v llvm-symbolizer || true)
[ -z "$sym" ] || export ASAN_SYMBOLIZER_PATH=$sym
failed=0
for target in "${targets[@]}"; do
  corpus=$build/corpus/$target
  crashes=$build/crashes/$target
  rm -rf "$corpus"
  mkdir -p "$corpus" "$crashes"
  cp "$root/tests/fuzz/corpus/$target/"* "$corpus/"
  before=$(ls "$crashes" | wc -l)
  echo "fuzz.sh: $target for ${secs} s ($(ls "$corpus" | wc -l) seed inputs)"
  rc=0
  "$build/tests/fuzz/$target" -max_total_time="$secs" -max_len=16384 -timeout=60 -report_slow_units=60 -print_final_stats=1 \
    -artifact_prefix="$crashes/" "$corpus" > "$build/$target.log" 2>&1 || rc=$?
  grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added)' "$build/$target.log" || true
  if [ "$rc" != 0 ] || [ "$(ls "$crashes" | wc -l)" != "$before" ]; then
    failed=1
    echo "fuzz.sh: $target FAILED (exit $rc); its log: $build/$target.log" >&2
    grep -E -A 30 '^==[0-9]+==|fuzz check failed|runtime error|Slowest unit' "$build/$target.log" | head -60 >&2 || true
    for f in $(ls -t "$crashes" | head -n $(( $(ls "$crashes" | wc -l) - before ))); do
      echo "fuzz.sh: input saved in $crashes/$f (first 300 bytes):" >&2
      head -c 300 "$crashes/$f" | cat -v >&2
      echo >&2
    done
  fi
done
[ "$failed" = 0 ] && echo "fuzz.sh: no crash" || exit 1
