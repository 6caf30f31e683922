# SPDX-License-Identifier: Apache-2.0
# E11 on the cgroup backend, no namespaces: pmon is SIGKILLed mid-call (a
# harness crash). Its guard writes cgroup.kill of the leaf: a setsid daemon,
# a TERM-ignorer and everything else recorded in the leaf are gone within
# 1 s, the leaf is removed, and the guard itself exits. Then the same as an
# unprivileged user in a delegated cgroup. A normal end leaves the guard
# nothing to do: it exits too.
. "$(dirname "$0")/common.inc"
# Part 3 needs root, a test user and a cgroup to delegate: all checked here,
# before part 1, so the scenario runs whole or is skipped whole (never
# "skipped" after two parts passed).
. "$(dirname "$0")/unpriv.inc"

have_backend cgroup || skip "the cgroup backend is not available here"

# The sh script of the call: a double-fork + setsid daemon, a TERM-ignorer,
# a plain child; each writes its pid to $1.<name> once it is in place.
call_script() {
  echo 'setsid sh -c "echo \$\$ > '"$1"'.daemon.tmp; mv '"$1"'.daemon.tmp '"$1"'.daemon; exec sleep 1000" &
        sh -c "trap \"\" TERM; echo \$\$ > '"$1"'.ign.tmp; mv '"$1"'.ign.tmp '"$1"'.ign; exec sleep 1000" &
        sleep 1000 &
        echo $$ > '"$1"'.main; wait'
}

# Checks one running call: $1 label, $2 the scratch prefix (pmon's -v output
# in $2.err). pmon's pid is read from its leaf's name (pmon-<pid>-...), as
# pmon may run below a wrapper shell.
kill_and_check() {
  local label=$1 p=$2 pmon i leaf guard gst pid st pids=()
  # pmon says where it started the call once the spawn returns: the call's
  # processes may be in place before that line is written (a slow pmon).
  for i in $(seq $((500 * TIME_SCALE))); do
    [ -f "$p.daemon" ] && [ -f "$p.ign" ] && [ -f "$p.main" ] && grep -q '^pmon: started pid' "$p.err" && break
    sleep 0.01
  done
  [ -f "$p.daemon" ] && [ -f "$p.ign" ] || fail "$label: the call never got going: $(cat "$p.err")"
  leaf=$(sed -n 's/^pmon: started pid [0-9]* under cgroup in \(.*\)$/\1/p' "$p.err")
  guard=$(sed -n 's/.*crash guard pid \([0-9]*\).*/\1/p' "$p.err")
  [ -n "$leaf" ] && [ -d "$leaf" ] || fail "$label: no leaf in: $(cat "$p.err")"
  pmon=${leaf##*/pmon-}; pmon=${pmon%%-*}
  [ "$(cat /proc/$pmon/comm)" = pmon ] || fail "$label: $pmon is not pmon"
  record_pid "$pmon"
  [ -n "$guard" ] || fail "$label: no E11 guard: $(cat "$p.err")"
  gst=$(start_time_of "$guard"); record_pid "$guard"
  # The guard is outside the leaf and not in pmon's session.
  ! grep -qx "$guard" "$leaf/cgroup.procs" || fail "$label: the guard is inside the leaf"
  [ "$(awk '{print $6}' "/proc/$guard/stat" 2>/dev/null)" = "$guard" ] || fail "$label: the guard does not lead its own session"
  for pid in $(cat "$leaf/cgroup.procs"); do
    st=$(start_time_of "$pid"); [ -n "$st" ] || continue
    record_pid "$pid"; pids+=("$pid $st")
  done
  for f in daemon ign main; do
    grep -qx "$(cat "$p.$f")" "$leaf/cgroup.procs" || fail "$label: $f $(cat "$p.$f") is not in the leaf"
  done
  [ ${#pids[@]} -ge 4 ] || fail "$label: only ${#pids[@]} processes in the leaf"

  kill -KILL "$pmon"
  local gone=0
  for i in $(seq 50); do  # 1 s
    gone=1
    for x in "${pids[@]}"; do alive $x && { gone=0; break; }; done
    [ $gone = 1 ] && [ ! -d "$leaf" ] && break
    gone=0; sleep 0.02
  done
  if [ $gone = 0 ]; then
    for x in "${pids[@]}"; do alive $x && echo "still alive: $x $(tr '\0' ' ' < /proc/${x% *}/cmdline)" >&2; done
    [ -d "$leaf" ] && echo "leaf still there: $leaf" >&2
    fail "$label: the tree or the leaf outlived pmon by more than 1 s"
  fi
  for i in $(seq 50); do alive "$guard" "$gst" || break; sleep 0.02; done
  ! alive "$guard" "$gst" || fail "$label: the guard is still running after its work"
  echo "ok: $label: ${#pids[@]} processes gone and leaf removed after SIGKILL of pmon"
}

# 1. As root.
"$PMON" run -v --confine cgroup -- sh -c "$(call_script "$t/r")" 2> "$t/r.err" &
kill_and_check root "$t/r"
wait 2>/dev/null || true

# 2. A normal end: the guard leaves quietly, nothing is left.
"$PMON" run -v --confine cgroup -- true 2> "$t/n.err" || fail "normal: pmon failed: $(cat "$t/n.err")"
g=$(sed -n 's/.*crash guard pid \([0-9]*\).*/\1/p' "$t/n.err")
[ -n "$g" ] || fail "normal: no guard: $(cat "$t/n.err")"
for i in $(seq 50); do [ "$(state_of "$g")" = S ] || break; sleep 0.02; done
[ "$(cat /proc/$g/comm 2>/dev/null)" != pmon-guard ] || [ "$(state_of "$g")" = Z ] ||
  fail "normal: guard $g still running after pmon exited"
echo "ok: normal end, the guard exits"

# 3. As an unprivileged user in a delegated cgroup.
acquire_user
D=$CG/pmon-test-e11-$$
make_cgroup "$D"; delegate_cgroup "$D"
as_user_in "$D" "$PMON" run -v --confine cgroup -- sh -c "$(call_script "$u/x")" 2> "$t/u.err" &
ln -s "$t/u.err" "$u/x.err"
kill_and_check unprivileged "$u/x"
wait 2>/dev/null || true
left=$(find "$D" -mindepth 1 -type d -name 'pmon-*')
[ -z "$left" ] || fail "unprivileged: leaf left: $left"
pass
