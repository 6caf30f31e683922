# SPDX-License-Identifier: Apache-2.0
# scripts/deps.sh waits while another process holds apt's locks (apt's
# daily jobs do, for minutes after a machine boots) instead of failing at
# once, and says what it waits for; each apt-get it runs is given
# DPkg::Lock::Timeout too. Run with stand-ins for dpkg-query (everything is
# missing), apt-get (records its arguments) and sudo, and with the lock files
# in this scenario's directory (PMON_APT_LOCKS): nothing is installed, and
# the machine's own apt locks are never touched.
. "$(dirname "$0")/common.inc"
src=$(cd "$(dirname "$0")/../.." && pwd)

mkdir "$t/bin"
printf '#!/bin/sh\nexit 1\n' > "$t/bin/dpkg-query"
printf '#!/bin/sh\necho "$*" >> "%s"\n' "$t/apt-get.args" > "$t/bin/apt-get"
printf '#!/bin/sh\nexec "$@"\n' > "$t/bin/sudo"
chmod +x "$t/bin/"*
: > "$t/lists.lock"; : > "$t/dpkg.lock"

# A process that holds an fcntl lock on lists.lock (as apt-get update
# does) until the file "$t/release" appears.
python3 -c '
import fcntl, os, sys, time
f = open(sys.argv[1], "r+")
fcntl.lockf(f, fcntl.LOCK_EX)
open(sys.argv[2] + ".tmp", "w").close(); os.rename(sys.argv[2] + ".tmp", sys.argv[2])
while not os.path.exists(sys.argv[3]):
    time.sleep(0.02)' "$t/lists.lock" "$t/locked" "$t/release" &
holder=$!
record_pid "$holder"
for _ in $(seq 500); do [ -f "$t/locked" ] && break; sleep 0.02; done
[ -f "$t/locked" ] || fail "the lock holder never took the lock"

PATH="$t/bin:$PATH" PMON_APT_LOCKS="$t/dpkg.lock $t/lists.lock" PMON_APT_LOCK_TIMEOUT=120 \
  "$src/scripts/deps.sh" > "$t/out" 2>&1 &
deps=$!
record_pid "$deps"
for _ in $(seq 500); do grep -q 'waiting for' "$t/out" && break; sleep 0.02; done
grep -q "^pmon: waiting for python3 (pid $holder) to release $t/lists.lock" "$t/out" ||
  fail "deps.sh does not say what it waits for: $(cat "$t/out")"
[ ! -e "$t/apt-get.args" ] || fail "deps.sh ran apt-get while the lock was held: $(cat "$t/apt-get.args")"
touch "$t/release"
wait "$holder"
rc=0; wait "$deps" || rc=$?
[ $rc = 0 ] || fail "deps.sh exit $rc: $(cat "$t/out")"
[ "$(wc -l < "$t/apt-get.args")" = 2 ] || fail "apt-get runs: $(cat "$t/apt-get.args")"
grep -q 'DPkg::Lock::Timeout=120 update$' "$t/apt-get.args" || fail "apt-get update: $(cat "$t/apt-get.args")"
grep -q 'DPkg::Lock::Timeout=120 install -y --no-install-recommends cmake ' "$t/apt-get.args" ||
  fail "apt-get install: $(cat "$t/apt-get.args")"
echo "ok: $(head -1 "$t/out")"

# Held past the timeout: one line that says by whom, and a failure.
rm -f "$t/release" "$t/locked" "$t/apt-get.args"
python3 -c '
import fcntl, os, sys, time
f = open(sys.argv[1], "r+")
fcntl.lockf(f, fcntl.LOCK_EX)
open(sys.argv[2], "w").close()
while not os.path.exists(sys.argv[3]):
    time.sleep(0.02)' "$t/dpkg.lock" "$t/locked" "$t/release" &
holder=$!
record_pid "$holder"
for _ in $(seq 500); do [ -f "$t/locked" ] && break; sleep 0.02; done
rc=0
PATH="$t/bin:$PATH" PMON_APT_LOCKS="$t/dpkg.lock" PMON_APT_LOCK_TIMEOUT=1 "$src/scripts/deps.sh" > "$t/out" 2>&1 || rc=$?
touch "$t/release"
wait "$holder"
[ $rc = 1 ] || fail "deps.sh with the lock held past its timeout: exit $rc: $(cat "$t/out")"
grep -q "^pmon: python3 (pid $holder) has held $t/dpkg.lock for 1s" "$t/out" || fail "past the timeout: $(cat "$t/out")"
[ ! -e "$t/apt-get.args" ] || fail "deps.sh ran apt-get past the timeout"
pass
