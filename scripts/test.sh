#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test.
#   scripts/test.sh            RelWithDebInfo build in build/
#   PMON_SANITIZE=1 scripts/test.sh   ASan+UBSan build in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
dir=build; flags=()
if [ "${PMON_SANITIZE:-0}" = 1 ]; then dir=build-asan; flags=(-DPMON_SANITIZE=ON); fi
cmake -S . -B "$dir" "${flags[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
ctest --test-dir "$dir" --output-on-failure -j"$(nproc)"
