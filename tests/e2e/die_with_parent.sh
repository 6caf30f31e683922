# SPDX-License-Identifier: Apache-2.0
# pmon run --die-with-parent (and PMON_DIE_WITH_PARENT=1, and pmon-shell):
# a parent shell starts pmon, whose command leaves a setsid daemon and a
# plain child running; the parent is SIGKILLed (a harness crash). The whole
# call, pmon with it, must then be gone, the report saying why. Without the
# flag (the control, killed at the same moment) the call lives on. And when
# pmon is SIGKILLed together with its parent, its crash guard stops the call.
# pmon-shell passes a line's output and exit status through, says nothing of
# its own, and dies with its parent too, and with the reader of its output
# (a harness behind a wrapper shell that outlives it). pmon hook-rewrite blocks
# every call it is asked about, saying what to use instead.
. "$(dirname "$0")/common.inc"

# The call's command: a setsid daemon, a plain child and the main shell each
# append "pid start-time" to $1 once in place, then wait.
{
  echo 'rec=$1'
  echo "setsid sh -c 'rec=\$0; $RECORD_SH; exec sleep 1000' \"\$rec\" &"
  echo "sh -c 'rec=\$0; $RECORD_SH; exec sleep 1000' \"\$rec\" &"
  echo "$RECORD_SH"
  echo 'wait'
} > "$t/work.sh"

SHELL_LINK=$t/bin/pmon-shell
mkdir -p "$t/bin"
ln -s "$PMON" "$SHELL_LINK"

# Up to $2 tenths of a second for "$1" (a command) to succeed.
wait_for() {
  local i
  for i in $(seq "$2"); do
    eval "$1" && return 0
    sleep 0.1
  done
  return 1
}

# Starts a parent shell that runs pmon as "$@" (the call's command appended),
# with the records in $t/$label.*: sets $parent (the parent's pid) and $pm
# (pmon's), both recorded, once the call's three processes are in place.
start_call() {
  label=$1; shift
  local rec=$t/$label.rec
  # The parent forks pmon and waits (the trailing command keeps bash from
  # exec'ing it): pmon's parent is this shell, not the test.
  bash -c '"$@"; echo parent-went-on' parent "$@" bash "$t/work.sh" "$rec" \
    > "$t/$label.out" 2> "$t/$label.err" < /dev/null &
  parent=$!
  record_pid "$parent"
  wait_for '[ -f "$rec" ] && [ "$(wc -l < "$rec")" -ge 3 ]' $((100 * TIME_SCALE)) ||
    fail "$label: the call never got going: $(cat "$t/$label.err")"
  record_file "$rec"
  pm=$(cat "/proc/$parent/task/$parent/children")
  pm=${pm%% *}
  [ -n "$pm" ] || fail "$label: the parent shell has no child"
  record_pid "$pm"
  pm_st=$(start_time_of "$pm")
}

# Up to 10 s for everything $label recorded, and pmon, to be gone.
wait_gone() {
  local label=$1
  wait_for '[ -z "$(alive_in "$t/$label.rec")" ] && ! alive "$pm" "$pm_st"' $((100 * TIME_SCALE)) || {
    echo "still alive: $(alive_in "$t/$label.rec" | tr '\n' ' ') pmon: $(alive "$pm" "$pm_st" && echo "$pm")" >&2
    fail "$label: the call outlived its parent's SIGKILL by 10 s: $(cat "$t/$label.err")"
  }
}

# (a) --die-with-parent, next to (d) the control without it: both parents
# are SIGKILLed at once; when (a)'s call is gone, the control's is running.
start_call ctl "$PMON" run -q --
ctl_pm=$pm ctl_pm_st=$pm_st ctl_parent=$parent
start_call flag "$PMON" run --die-with-parent --report "$t/flag.json" --
kill -KILL "$parent" "$ctl_parent"
wait "$parent" "$ctl_parent" 2>/dev/null || true
wait_gone flag
report_is -m "flag" "$t/flag.json" stop.reason=parent_exited outcome=cancelled cleanup_verified=true
echo "ok: --die-with-parent: the parent's SIGKILL stopped the call (3 processes and pmon gone; report says parent_exited)"
[ "$(alive_in "$t/ctl.rec" | wc -l)" = 3 ] && alive "$ctl_pm" "$ctl_pm_st" ||
  fail "control: without --die-with-parent the call did not outlive its parent: $(alive_in "$t/ctl.rec")"
kill -TERM "$ctl_pm"
pm=$ctl_pm pm_st=$ctl_pm_st wait_gone ctl
echo "ok: control: without it the call outlived its parent (then stopped by its recorded pmon)"

# (b) PMON_DIE_WITH_PARENT=1.
start_call env env PMON_DIE_WITH_PARENT=1 "$PMON" run --
kill -KILL "$parent"; wait "$parent" 2>/dev/null || true
wait_gone env
echo "ok: PMON_DIE_WITH_PARENT=1: the same"
rc=0; PMON_DIE_WITH_PARENT=maybe "$PMON" run -- true 2> "$t/bad.err" || rc=$?
[ $rc = 125 ] && grep -q "PMON_DIE_WITH_PARENT: 'maybe'" "$t/bad.err" || fail "PMON_DIE_WITH_PARENT=maybe: $rc $(cat "$t/bad.err")"

# (c) pmon-shell: the line's output and status pass through, nothing of
# pmon's own; what the line leaves running is stopped and said in one line.
rc=0; "$SHELL_LINK" 'echo out; echo err >&2; exit 7' > "$t/sh.out" 2> "$t/sh.err" || rc=$?
[ $rc = 7 ] && [ "$(cat "$t/sh.out")" = out ] && [ "$(cat "$t/sh.err")" = err ] ||
  fail "pmon-shell: exit $rc, stdout '$(cat "$t/sh.out")', stderr '$(cat "$t/sh.err")'"
rc=0; "$PMON" shell 'kill -TERM $$' 2> "$t/sh2.err" || rc=$?
[ $rc = 143 ] && [ ! -s "$t/sh2.err" ] || fail "pmon shell (killed line): exit $rc, stderr '$(cat "$t/sh2.err")'"
rc=0; "$SHELL_LINK" -- sh -c 'exit 3' || rc=$?
[ $rc = 3 ] || fail "pmon-shell -- CMD: exit $rc"
rc=0; "$SHELL_LINK" 'sleep 1000 & echo $! > '"$t/bg"'; echo started' > "$t/sh3.out" 2> "$t/sh3.err" || rc=$?
[ $rc = 0 ] && [ "$(cat "$t/sh3.out")" = started ] || fail "pmon-shell with a background job: exit $rc $(cat "$t/sh3.err")"
[ "$(cat "$t/sh3.err")" = "pmon: the command exited and left 1 process running; stopped it" ] ||
  fail "pmon-shell with a background job: stderr '$(cat "$t/sh3.err")'"
[ ! -d "/proc/$(cat "$t/bg")" ] || [ "$(state_of "$(cat "$t/bg")")" = Z ] || fail "pmon-shell: the background sleep lives on"
echo "ok: pmon-shell: output and exit status pass through; a background job is stopped and said"

start_call shell "$SHELL_LINK" 
kill -KILL "$parent"; wait "$parent" 2>/dev/null || true
wait_gone shell
[ ! -s "$t/shell.err" ] || fail "pmon-shell: said '$(cat "$t/shell.err")'"
echo "ok: pmon-shell: the parent's SIGKILL stopped the call"

# (f) A harness that wraps each command in a shell of its own, in a session
# of its own, reading the output through a pipe: SIGKILL of the harness
# leaves the wrapper waiting, so pmon's parent lives on. pmon-shell sees the
# pipe lose its reader and stops the call; the control (pmon run
# --die-with-parent, which watches only its parent) lives on.
harness_call() {
  label=$1; shift
  python3 -c '
import subprocess, sys
out, args = sys.argv[1], sys.argv[2:]
p = subprocess.Popen(["setsid", "bash", "-c", "\"$@\"; echo wrapper-went-on", "wrapper"] + args,
                     stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
open(out, "w").write(str(p.pid))
for line in p.stdout:
    pass
' "$t/$label.wrapper" "$@" bash "$t/work.sh" "$t/$label.rec" 2> "$t/$label.err" &
  parent=$!
  record_pid "$parent"
  wait_for '[ -f "$t/$label.rec" ] && [ "$(wc -l < "$t/$label.rec")" -ge 3 ]' $((100 * TIME_SCALE)) ||
    fail "$label: the call never got going: $(cat "$t/$label.err")"
  record_file "$t/$label.rec"
  wrapper=$(cat "$t/$label.wrapper")
  record_pid "$wrapper"
  pm=$(cat "/proc/$wrapper/task/$wrapper/children")
  pm=${pm%% *}
  [ -n "$pm" ] || fail "$label: the wrapper shell has no child"
  record_pid "$pm"
  pm_st=$(start_time_of "$pm")
}
harness_call rctl "$PMON" run --die-with-parent -q --
rctl_pm=$pm rctl_pm_st=$pm_st rctl_parent=$parent
harness_call reader "$SHELL_LINK"
kill -KILL "$parent" "$rctl_parent"
wait "$parent" "$rctl_parent" 2>/dev/null || true
wait_gone reader
echo "ok: pmon-shell behind a wrapper shell: the harness's SIGKILL (its pipe's reader gone) stopped the call"
[ "$(alive_in "$t/rctl.rec" | wc -l)" = 3 ] && alive "$rctl_pm" "$rctl_pm_st" ||
  fail "control: pmon run --die-with-parent behind a wrapper did not outlive the harness: $(alive_in "$t/rctl.rec")"
kill -TERM "$rctl_pm"
pm=$rctl_pm pm_st=$rctl_pm_st wait_gone rctl
echo "ok: control: pmon run --die-with-parent behind the same wrapper outlived the harness (then stopped by its recorded pmon)"

# The parent and pmon SIGKILLed at once: pmon's crash guard stops the call
# (the backends that have one).
for b in $(backends); do
  case $b in cgroup | pidns) ;; *) continue ;; esac
  start_call "both-$b" "$PMON" run --die-with-parent --confine "$b" --
  kill -KILL "$parent" "$pm"
  wait "$parent" 2>/dev/null || true
  wait_gone "both-$b"
  echo "ok: $b: parent and pmon SIGKILLed at once: the guard stopped the call"
done

# (e) pmon hook-rewrite blocks every call (exit 2, one line, nothing on
# stdout), naming what to use instead; unusable input too, never exit 0 or 1.
hook() {  # hook WANT INPUT [ARG...]
  local want=$1 in=$2 rc=0; shift 2
  printf '%s' "$in" | "$PMON" hook-rewrite "$@" > "$t/hook.out" 2> "$t/hook.err" || rc=$?
  [ $rc = 2 ] || fail "hook-rewrite exit $rc for $(head -c 80 <<< "$in")"
  [ ! -s "$t/hook.out" ] || fail "hook-rewrite printed: $(cat "$t/hook.out")"
  [ "$(wc -l < "$t/hook.err")" = 1 ] && grep -q -- "$want" "$t/hook.err" || fail "hook-rewrite said: $(cat "$t/hook.err")"
}
hook CLAUDE_CODE_SHELL_PREFIX=pmon-shell '{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"pmon-shell true; setsid sleep 1000 &"}}' --decision allow
hook 'pmon mcp' '{"turn_id":"t","hook_event_name":"PreToolUse","tool_input":{"command":"ls"}}' --decision allow --shell /x/pmon-shell
hook 'pmon mcp' '{"hook_event_name":"BeforeTool","tool_input":{"command":"ls"}}'
hook 'pmon mcp' '{"hook_event_name":5,"tool_input":{"command":"ls"}}' --bogus
hook 'not a JSON object' '{"hook_event_name":"PreToolUse","tool_input":{"command":"\ud800"}}'
hook 'not a JSON object' "{\"hook_event_name\":\"PreToolUse\",\"x\":$(printf '%*s' 100000 '' | tr ' ' '[')"
hook 'not a JSON object' 'not json'
echo "ok: hook-rewrite: every call blocked with one line (each harness, bad input)"
rc=0; "$SHELL_LINK" -c 2> "$t/usage.err" || rc=$?
[ $rc = 125 ] && grep -q 'no shell line given' "$t/usage.err" || fail "pmon-shell -c: exit $rc, $(cat "$t/usage.err")"
rc=0; PMON_DIE_WITH_PARENT=bogus "$SHELL_LINK" true 2> "$t/env.err" || rc=$?
[ $rc = 125 ] && grep -q 'true, yes, on' "$t/env.err" || fail "PMON_DIE_WITH_PARENT=bogus: exit $rc, $(cat "$t/env.err")"
echo "ok: pmon-shell -c with no line is the usage error; PMON_DIE_WITH_PARENT names its words"
# A reader that quits early while the harness lives: the line (and its
# daemon) stopped, and the status a shell gives for SIGPIPE.
st=$( { "$SHELL_LINK" "bash $t/work.sh $t/pipe.rec & until [ \"\$(wc -l < $t/pipe.rec)\" -ge 3 ] 2> /dev/null; do sleep 0.05; done; echo first; wait" | head -1 > /dev/null; echo "${PIPESTATUS[0]}"; } )
record_file "$t/pipe.rec"
[ "$st" = 141 ] || fail "pmon-shell LINE | head -1: exit $st, want 141"
all_gone "$t/pipe.rec" "pmon-shell LINE | head -1"
echo "ok: pmon-shell LINE | head -1: exit 141, its tree gone"
pass
