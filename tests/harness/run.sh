#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/harness/run.sh RESULTS_DIR PMON
# The real agent harnesses from npm (each pinned in tests/harness/<name>/'s
# lockfile), driven by a scripted stand-in for their model API on 127.0.0.1:
# each test runs a harness's own shell tool with and without pmon and counts
# what is left. Writes RESULTS_DIR/harness.xml (JUnit).
set -euo pipefail
results=$1 pmon=$2
cd "$(dirname "$0")"
tests=()
for d in */; do
  [ -f "$d/package.json" ] || continue
  (cd "$d" && npm ci --no-audit --no-fund --loglevel=error)
  tests+=("$d"*.test.mjs)
done
[ ${#tests[@]} -gt 0 ] || exit 0
PMON=$pmon PMON_SHELL="$(dirname "$pmon")/pmon-shell" \
  node --test --test-concurrency=1 --test-timeout=300000 --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=junit --test-reporter-destination="$results/harness.xml" "${tests[@]}"
