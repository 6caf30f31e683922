#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The test command: installs what is missing, builds, runs every test.
#   scripts/test.sh            RelWithDebInfo build in build/
#   PMON_SANITIZE=1 scripts/test.sh   ASan+UBSan build in build-asan/ (no bench/)
#   PMON_E2E_IN_SANITIZED=1 scripts/test.sh   as the first, with only the
#       end-to-end CTests that the sanitized build cannot run (CI runs the
#       others there)
# Strict (CI=true, or PMON_EXPECT_BACKENDS set): the backends in
# PMON_EXPECT_BACKENDS (default in CI: all four) must work, and a skipped
# test fails the run unless tests/allowed_skips.txt lists it with a reason.
# What was skipped is printed either way. The last line is the verdict:
# "pmon tests: PASSED: N passed, N failed, N skipped", or FAILED and what
# failed (tests/verdict.py); the exit status is 0 or 1 with it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
strict=0
if [ "${CI:-}" = true ]; then
  strict=1
  export PMON_EXPECT_BACKENDS=${PMON_EXPECT_BACKENDS-cgroup pidns subreaper pgroup}
elif [ -n "${PMON_EXPECT_BACKENDS:-}" ]; then
  strict=1
  export PMON_EXPECT_BACKENDS
fi
# Tests, benchmarks and the Python package on, also in a build directory
# the demo configured without them. The CTests to run: all but the
# artifacts' (label artifact), which install what scripts/release.sh made;
# CI runs them after it (.ci/run).
dir=build; flags=(-DBUILD_TESTING=ON -DPMON_BENCH=ON -DPMON_PYTHON_BINDING=ON); select=(-LE '^artifact$')
if [ "${PMON_SANITIZE:-0}" = 1 ]; then
  dir=build-asan; flags=(-DBUILD_TESTING=ON -DPMON_SANITIZE=ON -DPMON_PYTHON_BINDING=OFF -DPMON_BENCH=OFF)
  # What a sanitized pmon cannot do (the CTests labelled plain_only, in
  # tests/CMakeLists.txt) runs in the plain build only. The service's own
  # memory bounds (serve_bad_input, serve_pipeline) allow for the
  # sanitizers' shadow memory and quarantine.
  select=(-LE '^(artifact|plain_only)$')
  export PMON_TEST_RSS_SCALE=8
elif [ "${PMON_E2E_IN_SANITIZED:-0}" = 1 ]; then
  # PMON_E2E_IN_SANITIZED=1 (CI, which runs the sanitized suite next): of
  # the end-to-end CTests only those the sanitized build cannot run; the
  # others run there, under ASan+UBSan, rather than twice.
  select=(-L '^(unit|plain_only)$')
fi
# Compiled objects are kept by ccache, keyed by what is compiled and not by
# where: a second run, and the Python package that pip builds in a build
# directory of its own (e2e.pip_install), compile only what changed.
if command -v ccache > /dev/null; then
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
  flags+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
results=$PWD/$dir/test-results
rm -rf "$results"; mkdir -p "$results"
# What did not run at all, for the verdict: "suite=why".
not_run=()
built=1
# PMON_PREBUILT=1: the build is there already, made by this script (CI
# builds first; the release lane builds in build/ meanwhile, which a second
# make there could race with).
if [ "${PMON_PREBUILT:-0}" = 1 ] && [ -x "$dir/pmon" ]; then
  echo "pmon tests: the build in $dir as it is (PMON_PREBUILT=1)"
elif ! { cmake -S . -B "$dir" "${flags[@]}" >/dev/null && cmake --build "$dir" -j"$(nproc)"; }; then
  built=0
  not_run+=("build=cmake could not configure or build $dir (its errors are above); no suite ran")
fi
# PMON_BUILD_ONLY=1: the build alone (CI builds first, then runs the suites
# beside the guest and the release, which take the build as it is).
if [ "${PMON_BUILD_ONLY:-0}" = 1 ]; then
  [ $built = 1 ] || { echo "pmon tests: FAILED: ${not_run[*]}" >&2; exit 1; }
  exit 0
fi
# The Node package's SDKs (its tests and the ACP snippet of docs/ use them),
# from the lockfile, before any suite runs.
node_deps=0
if [ $built = 1 ] && [ "${PMON_SANITIZE:-0}" != 1 ]; then
  if (cd node && npm ci --no-audit --no-fund --loglevel=error); then node_deps=1
  else not_run+=("node=npm ci failed (see above)"); fi
fi
if [ $built = 1 ]; then
  ctest --test-dir "$dir" --output-on-failure -j"$(nproc)" --output-junit "$results/ctest.xml" "${select[@]}" ||
    [ -s "$results/ctest.xml" ] || not_run+=("ctest=ctest wrote no results")
  # The Python package (built above with the rest): its pytest suite, with
  # Debian's python3, after the CTests so its 200-call cases run alone.
  if [ -d "$dir/python/pmon" ]; then
    PYTHONPATH="$PWD/$dir/python" PMON_HELPERS="$PWD/$dir/tests/helpers" \
      timeout -k 30 1800 /usr/bin/python3 -m pytest -q -rs -p no:cacheprovider --junitxml="$results/pytest.xml" python/tests ||
      [ -s "$results/pytest.xml" ] || not_run+=("pytest=pytest wrote no results")
  elif [ $strict = 1 ] && [ "${PMON_SANITIZE:-0}" != 1 ]; then
    not_run+=("pytest=the Python package was not built")
  fi
  # The Node package (a client of the pmon just built): its node --test
  # suite, with the SDKs its ACP and MCP tests use installed from the lockfile.
  if [ $node_deps = 1 ]; then
    (cd node && PMON="$PWD/../$dir/pmon" PMON_HELPERS="$PWD/../$dir/tests/helpers" \
      node --test --test-timeout=300000 --test-reporter=spec --test-reporter-destination=stdout \
        --test-reporter=junit --test-reporter-destination="$results/node.xml" test/*.test.mjs) ||
      [ -s "$results/node.xml" ] || not_run+=("node=node --test wrote no results")
    # The real agent harnesses from npm (Claude Code, Codex CLI, Gemini CLI)
    # against a scripted model API on 127.0.0.1, with and without pmon.
    tests/harness/run.sh "$results" "$PWD/$dir/pmon" ||
      [ -s "$results/harness.xml" ] || not_run+=("harness=the harness tests wrote no results (see above)")
  fi
fi
# Every skip with its reason, each suite's count and failures, and last the
# verdict: one line with every suite's count and what failed.
args=()
for n in "${not_run[@]}"; do args+=(--not-run "$n"); done
echo
exec python3 tests/verdict.py "$results" tests/allowed_skips.txt "$strict" "${args[@]}"
