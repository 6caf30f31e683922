# SPDX-License-Identifier: Apache-2.0
# pmon run reads its most common line, [--confine B] [-q] [--die-with-parent]
# -- CMD, without building its whole option table. Such a line must mean
# exactly what the table makes of it: each line here is run as it is and
# again with --grace 2s added (the default, which only the table reads), and
# both must give the same exit status, output and error lines, and what
# each says must be what the line asks for (the backend, -q).
. "$(dirname "$0")/common.inc"

# same EXPECTED-RC EXPECTED-STDOUT EXPECTED-STDERR-REGEX|'' -- RUN-ARGS...
# (the stderr regex '' means no stderr at all)
same() {
  local rc_want=$1 out_want=$2 err_want=$3
  shift 3
  [ "$1" = -- ] && shift
  local how rc
  for how in plain table; do
    local args=("$@")
    [ $how = table ] && args=(--grace 2s "$@")
    rc=0
    "$PMON" run "${args[@]}" > "$t/$how.out" 2> "$t/$how.err" < /dev/null || rc=$?
    [ "$rc" = "$rc_want" ] || fail "[$how: run ${args[*]}]: exit $rc, expected $rc_want; stderr: $(cat "$t/$how.err")"
    [ "$(cat "$t/$how.out")" = "$out_want" ] ||
      fail "[$how: run ${args[*]}]: stdout '$(cat "$t/$how.out")', expected '$out_want'"
    if [ -z "$err_want" ]; then
      [ ! -s "$t/$how.err" ] || fail "[$how: run ${args[*]}]: stderr: $(cat "$t/$how.err")"
    else
      grep -Eq "$err_want" "$t/$how.err" || fail "[$how: run ${args[*]}]: stderr does not match /$err_want/: $(cat "$t/$how.err")"
    fi
  done
  cmp -s "$t/plain.err" "$t/table.err" || fail "[run $*]: stderr differs: '$(cat "$t/plain.err")' against '$(cat "$t/table.err")'"
  echo "ok: [run $*] -> $rc_want"
}

# Whether the command runs in a leaf of pmon's: one line of /proc/self/cgroup names it.
IN_LEAF='grep -c "/pmon-[0-9]" /proc/self/cgroup; exit 3'
# A child left running: the line that says it was stopped (not with -q).
LEAVES='sleep 1000 & echo $! $(cut -d" " -f22 /proc/$!/stat) > '"$t"'/left; exit 0'
record_left() { [ -f "$t/left" ] && cat "$t/left" >> "$t/pids" && cat "$t/left" >> "$STATE/pids"; rm -f "$t/left"; }

ran=0
if have_backend cgroup; then
  same 3 1 '' -- --confine cgroup -- sh -c "$IN_LEAF"
  same 3 1 '' -- --confine=cgroup -q -- sh -c "$IN_LEAF"
  ran=1
fi
if have_backend subreaper; then
  same 3 0 '' -- --confine subreaper -- sh -c "$IN_LEAF"
  same 3 0 '' -- -q --confine=subreaper --die-with-parent -- sh -c "$IN_LEAF"
  same 0 '' 'left 1 process running; stopped it' -- --confine subreaper -- sh -c "$LEAVES"
  record_left
  same 0 '' '' -- --confine subreaper --quiet -- sh -c "$LEAVES"
  record_left
  ran=1
fi
# No --confine: auto, whatever it picks here, the same both ways.
same 5 '' '' -- -q -- sh -c 'exit 5'
same 0 ok '' -- --die-with-parent -- sh -c 'echo ok'
# The words after -- are the command's, options or not.
same 0 '--help -x' '' -- -- sh -c 'echo "$*"' sh --help -x
# --die-with-parent takes effect: the program that started pmon exits once
# the command runs, and the command is stopped.
# gone_soon PID START: that process is gone, or goes within 10 s.
gone_soon() {
  for _ in $(seq 200); do
    alive "$1" "$2" || return 0
    sleep 0.05
  done
  ! alive "$1" "$2"
}
parent_exits() {
  local how=$1
  shift
  rm -f "$t/cmd.pid" "$t/pmon.pid"
  sh -c '"$@" > /dev/null 2>&1 & echo $! > "'"$t"'/pmon.pid"
         while [ ! -s "'"$t"'/cmd.pid" ]; do sleep 0.01; done' sh \
    "$PMON" run "$@" -- sh -c 'echo $$ $(cut -d" " -f22 /proc/$$/stat) > '"$t"'/cmd.pid.new; mv '"$t"'/cmd.pid.new '"$t"'/cmd.pid; exec sleep 1000'
  local pp cp cst
  pp=$(cat "$t/pmon.pid")
  read -r cp cst < "$t/cmd.pid"
  echo "$cp $cst" >> "$t/pids"; echo "$cp $cst" >> "$STATE/pids"
  gone_soon "$cp" "$cst" || fail "[$how: run $*]: the command still runs 10 s after the program that started pmon exited"
  local pst
  pst=$(start_time_of "$pp")
  if [ -n "$pst" ]; then
    echo "$pp $pst" >> "$t/pids"; echo "$pp $pst" >> "$STATE/pids"
    gone_soon "$pp" "$pst" || fail "[$how: run $*]: pmon still runs"
  fi
  echo "ok: [$how: run $*]: the command stopped when its starter exited"
}
parent_exits plain --die-with-parent
parent_exits plain -q --die-with-parent
parent_exits table --die-with-parent --grace 2s

[ $ran = 1 ] || skip "neither the cgroup nor the subreaper backend is available here"
pass
