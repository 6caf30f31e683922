#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job, shown: a tool call starts a dev-server-like daemon that
# escapes its process group (double fork + setsid). A process-group kill —
# what agent harnesses do today — leaves it running; `pmon run` does not.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --build
# Only the pmon executable: no tests, benchmarks or Python package (the test
# command turns them on again in the same build directory).
echo "== building pmon in build/ (the first time takes a few minutes; the build's own progress follows)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF -DPMON_BENCH=OFF \
  -DPMON_PYTHON_BINDING=OFF > /dev/null
cmake --build build -j"$(nproc)" --target pmon
echo
PMON=$PWD/build/pmon
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The "tool call": prints, starts a daemon that escapes, then hangs.
cat > "$work/tool.sh" <<'TOOL'
echo "tool: starting a dev server in the background"
setsid sh -c 'echo $$ $(cut -d" " -f22 /proc/$$/stat) > "$1.tmp"; mv "$1.tmp" "$1"; exec sleep 3600' sh "$1" &
sleep 3600
TOOL

stat_start() { s=$(cat /proc/$1/stat 2>/dev/null) || return 0; s=${s##*) }; set -- $s; echo "${20}"; }
alive() { [ -n "$(stat_start "$1")" ] && [ "$(stat_start "$1")" = "$2" ]; }
wait_file() { for _ in $(seq 500); do [ -s "$1" ] && return; sleep 0.01; done; echo "no $1" >&2; exit 1; }

echo "== 1. the usual way: timeout(1) kills the tool call's process group after 1s"
rm -f "$work/pid"
timeout 1 sh "$work/tool.sh" "$work/pid" || echo "timeout exit status: $?"
wait_file "$work/pid"; read -r pid st < "$work/pid"
if alive "$pid" "$st"; then
  echo "   the daemon (pid $pid) is STILL RUNNING: $(tr '\0' ' ' < /proc/$pid/cmdline)"
  kill -9 "$pid"   # clean up by the pid we recorded
  echo "   (demo cleaned it up by pid)"
fi

echo
echo "== 2. pmon run: the same tool call, same 1s timeout"
rm -f "$work/pid"
set +e
"$PMON" run --timeout 1s --report "$work/report.json" -- sh "$work/tool.sh" "$work/pid"
rc=$?
set -e
echo "   pmon exit status: $rc (124 = timed out, like timeout(1))"
read -r pid st < "$work/pid"
if alive "$pid" "$st"; then
  echo "   pid $pid is still running: pmon failed" >&2; exit 1
fi
echo "   the daemon (pid $pid) is gone; the report says:"
python3 - "$work/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"   confinement={r['confinement']} cgroup={r['cgroup']}")
print(f"   outcome={r['outcome']} cleanup_verified={r['cleanup_verified']}")
for p in r["leftovers"]:
    print(f"   stopped pid {p['pid']} ({p['cmdline']}) with {p['action']}")
s = r["stop"]
print(f"   TERM sent at {s['signal_sent_ms']} ms, everything confirmed gone at {s['empty_confirmed_ms']} ms")
PY
