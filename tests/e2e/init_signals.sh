# SPDX-License-Identifier: Apache-2.0
# SIGTERM, SIGINT, SIGHUP and SIGUSR1 sent to pmon init reach a grandchild
# that left the command's process group and session (--forward tree, the
# default), as a subreaper and as PID 1 of a pidns, where the kernel would
# drop a signal PID 1 has no handler for. --forward group cannot reach it:
# the control that shows the scenario can tell the difference.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/init_lib.inc"

# The command ignores the four itself (so it outlives them) and waits for
# the grandchild, which exits 0 after SIGTERM.
cmd="trap '' TERM INT HUP USR1; setsid $HELPERS/init_sigcatch $t/log $t/ready & echo \$! > $t/gc; wait"

# Waits (up to 10 s) until the log has N lines.
wait_lines() {
  local i=0
  while [ "$(wc -l < "$t/log" 2>/dev/null || echo 0)" -lt "$1" ]; do
    i=$((i + 1)); [ $i -lt 1000 ] || return 1
    sleep 0.01
  done
}

run_case() { # $1: label, $2: prefix (unshare ...) or empty
  rm -f "$t/log" "$t/ready" "$t/gc"
  $2 "$PMON" init -q -- sh -c "$cmd" &
  local root=$! target; record_pid "$root"
  wait_file "$t/ready" || fail "$1: the grandchild never got ready"
  if [ -n "$2" ]; then
    target=$(host_pid_of "$root" 1)
    [ -n "$target" ] || fail "$1: cannot find pmon init below $root"
  else
    target=$root
  fi
  record_pid "$target"
  local gc; gc=$(host_pid_of "$root" "$(cat "$t/gc")")
  [ -n "$gc" ] && record_pid "$gc"
  local n=0 s
  for s in USR1 HUP INT TERM; do
    n=$((n + 1))
    kill -s "$s" "$target"
    wait_lines $n || fail "$1: SIG$s did not reach the grandchild (log: $(tr '\n' ' ' < "$t/log"))"
    [ "$(sed -n "${n}p" "$t/log")" = "$s" ] || fail "$1: line $n of the log is not $s"
  done
  local rc=0; wait "$root" || rc=$?
  [ "$rc" = 0 ] || fail "$1: pmon init exit $rc, want 0"
  echo "ok: $1"
}

run_case "subreaper/auto" ""
unshare --pid --fork true 2>/dev/null || skip "no PID namespaces here"
run_case "PID 1 (host /proc)" "unshare --pid --fork --kill-child"
run_case "PID 1 (own /proc)" "unshare --pid --fork --kill-child --mount-proc"

# Control: the process group of the command does not hold the grandchild.
rm -f "$t/log" "$t/ready" "$t/gc"
"$PMON" init -q --forward group --grace 200ms -- sh -c "$cmd" &
root=$!
wait_file "$t/ready" || fail "group: the grandchild never got ready"
gc=$(cat "$t/gc"); gst=$(start_time_of "$gc"); record_pid "$gc"
kill -s USR1 "$root"
kill -s TERM "$root"   # the shell ignores it: it goes on waiting
sleep 0.3
[ ! -s "$t/log" ] || fail "group: the grandchild in another session got $(cat "$t/log")"
kill -9 "$gc"          # recorded above; pmon init then returns the shell's 0
rc=0; wait "$root" || rc=$?
[ "$rc" = 0 ] || fail "group: pmon init exit $rc"
echo "ok: --forward group does not reach another session (the control)"
pass
