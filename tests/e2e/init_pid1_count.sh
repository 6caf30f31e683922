# SPDX-License-Identifier: Apache-2.0
# As PID 1 of a PID namespace, pmon init -v says how many processes the
# command left running, stopped or (--wait-all) waited for — also when the
# /proc it sees is the host's (unshare --pid --fork without --mount-proc),
# where every number in /proc is the host's: the count then comes from the
# namespace's own view (its processes are pmon's descendants, each with its
# namespace pid in NSpid). The leftovers are stopped by pmon (they see its
# TERM), not by the namespace's end.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/init_lib.inc"

unshare --pid --fork true 2>/dev/null || skip "no PID namespaces here"

# run_case LABEL MOUNT-PROC PMON-INIT-OPTIONS...: the command leaves two
# setsid daemons, one process each, that log a TERM to $t/term.N (with
# --wait-all: that end by themselves), then exits 0. Both are recorded by
# host pid.
run_case() {
  local label=$1 mp=$2; shift 2
  rm -f "$t"/daemon.* "$t"/term.* "$t"/ready.* "$t/go"
  local body
  if [ "$1" = --wait-all ]; then
    body="exec python3 -c 'import os, sys, time
while not os.path.exists(sys.argv[1]): time.sleep(0.01)
time.sleep(0.3)' $t/go"
  else
    body="exec $HELPERS/init_sigcatch $t/term.\$n $t/ready.\$n"
  fi
  unshare --pid --fork --kill-child $mp "$PMON" init -v "$@" -- sh -c "
    for n in 1 2; do
      setsid sh -c \"echo \\\$\\\$ > $t/daemon.tmp.\$n; mv $t/daemon.tmp.\$n $t/daemon.\$n; $body\" &
    done
    while [ ! -f $t/go ]; do sleep 0.01; done; exit 0" 2> "$t/err" &
  local root=$! n host
  record_pid "$root"
  hosts=
  for n in 1 2; do
    wait_file "$t/daemon.$n" || fail "$label: daemon $n never started"
    host=$(host_pid_of "$root" "$(cat "$t/daemon.$n")")
    [ -n "$host" ] || fail "$label: cannot find daemon $n below $root"
    record_pid "$host"
    hosts="$hosts $host:$(start_time_of "$host")"
  done
  touch "$t/go"
  local rc=0; wait "$root" || rc=$?
  [ "$rc" = 0 ] || fail "$label: pmon init exit $rc: $(cat "$t/err")"
  local h
  for h in $hosts; do
    ! alive "${h%:*}" "${h#*:}" || fail "$label: daemon ${h%:*} outlived pmon init"
  done
}

for mp in "" --mount-proc; do
  view=${mp:-host /proc}

  run_case "stop ($view)" "$mp" --grace 2s
  grep -q "stopping 2 process" "$t/err" || fail "stop ($view): the count is wrong: $(cat "$t/err")"
  grep -q "; 2 processes left running" "$t/err" || fail "stop ($view): the summary is wrong: $(cat "$t/err")"
  [ "$(cat "$t"/term.* 2>/dev/null | grep -c TERM)" = 2 ] || fail "stop ($view): pmon did not TERM both daemons"
  echo "ok: stop, $view"

  run_case "wait-all ($view)" "$mp" --wait-all
  grep -q "waiting for 2 process" "$t/err" || fail "wait-all ($view): the count is wrong: $(cat "$t/err")"
  grep -q "; 2 processes left running" "$t/err" || fail "wait-all ($view): the summary is wrong: $(cat "$t/err")"
  echo "ok: wait-all, $view"
done
pass
