# SPDX-License-Identifier: Apache-2.0
# The hot path of the cgroup backend never walks /proc: a call whose main
# process exits with nothing left behind is started, waited for and reaped
# through its pidfd and the leaf's cgroup.events alone. (The main process's
# exit wakes pmon by its pidfd and by SIGCHLD together; the reaping that
# SIGCHLD triggers once scanned all of /proc for the main zombie's siblings.
# A full strace slows pmon enough that both are pending at once in most
# runs: the old code listed /proc in some of every ten.)
. "$(dirname "$0")/common.inc"
command -v strace > /dev/null || skip "strace is not installed"
strace -f -qq -e trace=getpid -o /dev/null true 2> /dev/null || skip "strace cannot trace here"
have_backend cgroup || skip "the cgroup backend is not available here"
# A sanitizer build's LeakSanitizer cannot work under ptrace.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0

for i in $(seq 30); do
  rc=0
  strace -f -qq -o "$t/trace.$i" "$PMON" run --confine cgroup -- true || rc=$?
  [ $rc = 0 ] || fail "run $i: exit $rc"
  if grep -E 'openat\(AT_FDCWD, "/proc", ' "$t/trace.$i" > "$t/scan"; then
    fail "run $i listed /proc: $(head -3 "$t/scan")"
  fi
  # Beyond pmon's own stat (its leaves are named by its start time), no
  # process's /proc entry is read.
  self=$(grep -oE '^[0-9]+' "$t/trace.$i" | head -1)
  if grep -E 'openat\(AT_FDCWD, "/proc/[0-9]+/' "$t/trace.$i" | grep -v "\"/proc/$self/" > "$t/other"; then
    fail "run $i read /proc of another process: $(head -3 "$t/other")"
  fi
done
pass "30 runs, no /proc walk"
