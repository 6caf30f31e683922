#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the checks of a cross-built aarch64 pmon under qemu-aarch64-static
# (user-mode emulation: the aarch64 program runs on this host's kernel):
#   scripts/qemu-aarch64-check.sh BUILD_DIR
# 1. The unit tests (pmon_unit_tests), less those that need what the emulator
#    does not offer (listed, with why, below and in the output).
# 2. pmon mcp: initialize and tools/list (no process started).
# 3. A smoke call: pmon run of a command that leaves a setsid daemon; the
#    daemon must be gone when pmon returns, and the status must be the
#    command's. Where the emulator lacks clone3 (qemu 7.2, Debian 12's), it
#    cannot run, and the output says so.
# The commands pmon starts are this host's own (qemu-user hands execve to the
# kernel), so what is emulated is pmon itself.
set -euo pipefail
b=${1:?usage: scripts/qemu-aarch64-check.sh BUILD_DIR}
qemu=(qemu-aarch64-static -L /usr/aarch64-linux-gnu)
file -b "$b/pmon" | grep -q 'ARM aarch64' || { echo "qemu-aarch64-check: $b/pmon is not an aarch64 program" >&2; exit 1; }
"${qemu[@]}" "$b/pmon" --version

# Unit tests the emulator cannot run, with the reason (gtest patterns).
not_under_qemu=(
  "CloneSpawn.* start children with clone3, which qemu-user (7.2) does not implement (ENOSYS)"
  "SpawnStart.* start children with clone3 (ENOSYS under qemu-user)"
  "Pdeathsig.* start children with clone3 (ENOSYS under qemu-user)"
  "ParentExit.* start calls, whose children are started with clone3 (ENOSYS under qemu-user)"
  "CallFigures.* start calls (/bin/true), whose children are started with clone3 (ENOSYS under qemu-user)"
  "ReadStat.Self compares /proc/self/stat with getpgrp() and getsid(); qemu-user writes 0 for both in its /proc/self/stat"
  "ReadStat.ExitedMainThreadIsAliveAZombieIsNot counts threads; qemu-user runs one of its own in every process"
  "Systemd.StartTransientUnitMessage dlopens libsystemd.so.0, which Debian's aarch64 cross root does not have"
)
filter=""
if [ ${#not_under_qemu[@]} -gt 0 ]; then
  filter="-"
  for entry in "${not_under_qemu[@]}"; do filter+="${entry%% *}:"; done
  filter=${filter%:}
  echo "unit tests not run under qemu-aarch64, and why:"
  for entry in "${not_under_qemu[@]}"; do echo "  ${entry%% *}: ${entry#* }"; done
fi
# Bounded: a test stuck in the emulator fails the check instead of holding
# up the release.
timeout -k 10 900 "${qemu[@]}" "$b/tests/pmon_unit_tests" --gtest_brief=1 ${filter:+"--gtest_filter=$filter"} > "$b/unit-qemu.log" 2>&1 || {
  cat "$b/unit-qemu.log"; echo "qemu-aarch64-check: unit tests failed (or took over 15 minutes) under qemu-aarch64" >&2; exit 1; }
tail -3 "$b/unit-qemu.log"

# The service on aarch64: pmon mcp answers initialize and tools/list (its
# event loop, JSON and MCP code; no process is started).
reply=$(printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"qemu-check","version":"1"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' | timeout 60 "${qemu[@]}" "$b/pmon" mcp)
tools=$(echo "$reply" | jq -r 'select(.id == 2) | .result.tools | length')
[ "$tools" = 8 ] || { echo "qemu-aarch64-check: pmon mcp under qemu-aarch64 listed '$tools' tools, want 8: $reply" >&2; exit 1; }
echo "ok: under qemu-aarch64, pmon mcp answers initialize and tools/list ($tools tools)"

# The smoke call: pmon run of a command that leaves a setsid daemon. pmon
# starts every command with clone3 (for its pidfd, and to enter the cgroup
# as it is created); an emulator without clone3 cannot run it at all.
t=$(mktemp -d /tmp/pmon-qemu.XXXXXX)
trap 'rm -rf "$t"' EXIT
rc=0
"${qemu[@]}" "$b/pmon" run -v -- sh -c "setsid sh -c 'echo \$\$ > $t/d; exec sleep 1000' &
  while [ ! -s $t/d ]; do sleep 0.01; done; exit 7" > "$t/out" 2> "$t/err" || rc=$?
if [ "$rc" = 125 ] && grep -q 'clone3.*Function not implemented' "$t/err"; then
  echo "not run under qemu-aarch64: pmon run (a setsid daemon): $(qemu-aarch64-static --version | head -1) has no clone3 (ENOSYS)," \
    "which pmon starts every command with; nor PR_SET_CHILD_SUBREAPER: $(grep -m1 clone3 "$t/err")"
  exit 0
fi
d=$(cat "$t/d" 2>/dev/null || true)
cat "$t/err"
[ "$rc" = 7 ] || { echo "qemu-aarch64-check: pmon run exited $rc, want 7" >&2; exit 1; }
if [ -e "/proc/$d" ] && [ "$(awk '{print $3}' "/proc/$d/stat" 2>/dev/null)" != Z ]; then
  echo "qemu-aarch64-check: the setsid daemon $d survived pmon run under qemu-aarch64" >&2; exit 1
fi
echo "ok: under qemu-aarch64, pmon run stopped the setsid daemon and exited 7"
