# SPDX-License-Identifier: Apache-2.0
# A service that died together with its crash guard (both SIGKILLed: the
# guard cannot stop anything) leaves its jobs running in their leaves. The
# next service stops them as it starts, and says which job each was (its
# id, its name, its command); so does `pmon gc`. Without a next service
# they run on (checked first: that is what a dead guard leaves). A next
# service started with -q says them all the same (what it found running
# and stopped), and nothing else. Each dead service's pid is taken by a
# stranger at once: the service is told gone by its start time.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

have_backend cgroup || skip "no cgroup backend here"
# A runtime directory of this scenario's own: the services' spools (and
# their jobs' records) are there, apart from other services on the host.
export XDG_RUNTIME_DIR=$t/run
mkdir -m 700 "$XDG_RUNTIME_DIR"
spool=$XDG_RUNTIME_DIR/pmon/spool

# guard_of PID: the service's crash guard (the child named pmon-guard that
# does not share its memory: the first one, which does, is replaced as the
# service starts serving).
guard_of() {
  local i k g
  for i in $(seq 100); do
    for k in $(cat "/proc/$1/task/$1/children" 2>/dev/null); do
      [ "$(cat "/proc/$k/comm" 2>/dev/null)" = pmon-guard ] || continue
      python3 -c 'import ctypes, sys
sys.exit(0 if ctypes.CDLL(None, use_errno=True).syscall(312, int(sys.argv[1]), int(sys.argv[2]), 1, 0, 0) != 0 else 1)' \
        "$1" "$k" && g=$k
    done
    [ -n "$g" ] && { echo "$g"; return 0; }
    sleep 0.05
  done
  return 1
}

# kill_both: the service stopped first (so it cannot start another guard),
# its guard SIGKILLed, then the service. Then a stranger of the scenario's
# own takes the dead service's pid (clone3 with set_tid, root only): a
# check of the pid alone would find the service alive and leave its jobs.
kill_both() {
  local g st _i
  g=$(guard_of "$SERVE_PID") || fail "no crash guard of the service $SERVE_PID"
  st=$(start_time_of "$SERVE_PID")
  kill -STOP "$SERVE_PID"
  kill -KILL "$g"
  kill -KILL "$SERVE_PID"
  wait "$SERVE_PID" 2> /dev/null || true
  rm -f "$t/stranger"
  "$HELPERS/pid_recycler" "$SERVE_PID" "$st" "$t/stranger" 5000 &
  local rec=$!
  record_pid $rec
  for _i in $(seq 200); do [ -f "$t/stranger" ] || ! kill -0 $rec 2> /dev/null && break; sleep 0.05; done
  stranger=
  if [ -f "$t/stranger" ]; then
    read -r spid sst _ < "$t/stranger"
    stranger="$spid $sst"; echo "$stranger" >> "$t/pids"; echo "$stranger" >> "$STATE/pids"
    [ "$spid" = "$SERVE_PID" ] && [ "$sst" != "$st" ] || fail "the recycler made $stranger, not pid $SERVE_PID anew"
  elif [ "$(id -u)" = 0 ]; then fail "no stranger took the dead service's pid $SERVE_PID"
  else echo "note: not root: the dead service's pid $SERVE_PID is not reused"; fi
}

# left OLD MESSAGE: a round failed with the dead service OLD's jobs still
# running: their leaves are stopped and removed, then the scenario fails.
left() {
  local l
  for l in $(find /sys/fs/cgroup -maxdepth 5 -type d -regextype posix-extended -regex ".*/pmon-$1-[0-9]+-[0-9]+" 2> /dev/null); do
    echo 1 > "$l/cgroup.kill" 2> /dev/null || true
    for _ in $(seq 200); do grep -q "populated 0" "$l/cgroup.events" && break; sleep 0.05; done
    rmdir "$l" 2> /dev/null || true
  done
  fail "$2"
}

# jobs_of ROUND: two jobs with a setsid daemon each (one named; the other
# with no spool files, which has its record all the same), and one that has
# ended (kept): its record goes as it ends. Sets $ids, $daemons.
jobs_of() {
  local r
  client_open "a$1"
  r=$(call "a$1" terminal/create "$(create_params "$t/d$1-1" '{"name":"dev-'"$1"'"}')")
  id1=$(jget "$r" result.terminalId)
  r=$(call "a$1" terminal/create "$(create_params "$t/d$1-2" '{"spoolByteLimit":0}')")
  id2=$(jget "$r" result.terminalId)
  r=$(call "a$1" terminal/create '{"command":"true","keep":true}')
  id3=$(jget "$r" result.terminalId)
  call "a$1" terminal/wait_for_exit '{"terminalId":"'"$id3"'"}' > /dev/null
  daemon_of "$t/d$1-1"; d1="$dpid $dst"
  daemon_of "$t/d$1-2"; d2="$dpid $dst"
  local log
  log=$(cat "$spool"/*/jobs.log 2> /dev/null || true)
  grep -q '"id":"'"$id1"'"' <<< "$log" || fail "no record of job $id1 in $spool/*/jobs.log: $log"
  grep -q '"id":"'"$id2"'"' <<< "$log" || fail "no record of job $id2 (no spool files) in $spool/*/jobs.log: $log"
  [ ! -e "$spool"/*/"$id2.out" ] || fail "job $id2 has a spool file with spoolByteLimit 0"
  grep -q '"ended":"'"$id3"'"' <<< "$log" || fail "the ended job $id3's record is not marked ended: $log"
  [ "$(ls "$spool"/*/ | grep -c '\.job$' || true)" = 0 ] || fail "a record file of its own: $(ls -R "$spool")"
}

# 1. A next service.
serve_start --confine cgroup
jobs_of 1
old=$SERVE_PID
kill_both
client_close a1
# What a dead guard leaves: the daemons run on, their leaves are there.
alive $d1 && alive $d2 || fail "a daemon died with its service and guard: nothing would be left to stop"
# (Leaves are pmon-PID-START-PIDNS-N, at the cgroup root or below: on a systemd
# host in the service's scope, pmon-PID-START.scope.)
leaves=$(find /sys/fs/cgroup -maxdepth 5 -type d -regextype posix-extended -regex ".*/pmon-$old-[0-9]+-[0-9]+-[0-9]+" 2> /dev/null || true)
[ -n "$leaves" ] || fail "the dead service left no leaf"
echo "ok: the service and its guard SIGKILLed: both daemons alive, leaves $(echo $leaves); records: $(cat "$spool/$old".*/jobs.log | tr '\n' ' ')"

# A record in the dead service's directory that names a leaf not of that
# service (a live pmon run's): it must not be touched, whether a line of its
# log or a file of its own (as an older pmon wrote them).
"$PMON" run -q --confine cgroup -- sh -c 'echo $$ > "$0.tmp"; mv "$0.tmp" "$0"; exec sleep 1000' "$t/other" &
other_run=$!
record_pid "$other_run"
for _ in $(seq 200); do [ -s "$t/other" ] && break; sleep 0.05; done
other=$(cat "$t/other"); other="$other $(start_time_of "$other")"
record_pid ${other% *}
other_leaf=$(sed -n 's/^0:://p' "/proc/${other% *}/cgroup")
dead_dir=$(ls -d "$spool/$old".*)
printf '{"id":"tforged","name":"","command":["sleep"],"cgroup":"%s"}\n' "/sys/fs/cgroup/unified$other_leaf" > "$dead_dir/tforged.job"
printf '{"id":"tforged2","name":"","command":["sleep"],"cgroup":"%s"}\n' "/sys/fs/cgroup$other_leaf" > "$dead_dir/tforged2.job"
printf 'not json\n' > "$dead_dir/tbad.job"
# (the same in the log of records; an older pmon's records were files)
printf '{"id":"tforged3","name":"","command":["sleep"],"cgroup":"%s"}\nnot json\n' "/sys/fs/cgroup/unified$other_leaf" >> "$dead_dir/jobs.log"

"$PMON" serve --listen "$SOCK" --confine cgroup 2> "$t/serve2.err" &
SERVE_PID=$!
record_pid "$SERVE_PID"
for _ in $(seq 100); do [ -S "$SOCK" ] && grep -q "serving on" "$t/serve2.err" && break; sleep 0.05; done
wait_gone $d1 || left $old "the named job's daemon outlived the next service's start: $(cat "$t/serve2.err")"
wait_gone $d2 || left $old "the second job's daemon outlived the next service's start: $(cat "$t/serve2.err")"
for l in $leaves; do [ ! -d "$l" ] || fail "the leaf $l is still there"; done
[ -z "$stranger" ] || alive $stranger || fail "the next service stopped the stranger that has the dead service's pid"
grep -q "job '$id1' (name 'dev-1'), sh -c .* of a pmon service that is gone (pid $old) was still running: stopped its [0-9]* process" "$t/serve2.err" ||
  fail "the next service did not say it stopped job $id1: $(cat "$t/serve2.err")"
grep -q "job '$id2', sh -c .* was still running" "$t/serve2.err" || fail "the next service did not name job $id2: $(cat "$t/serve2.err")"
! grep -q "job '$id3'" "$t/serve2.err" || fail "the next service named the job that had ended: $(cat "$t/serve2.err")"
[ -z "$(ls -d "$spool/$old".* 2> /dev/null)" ] || fail "the dead service's spool directory is still there"
alive $other || fail "the next service stopped a live pmon run's call that a forged record named"
! grep -q "tforged\|tbad" "$t/serve2.err" || fail "the next service acted on a forged record: $(cat "$t/serve2.err")"
kill -TERM "$other_run"
wait "$other_run" 2> /dev/null || true
wait_gone $other || fail "pmon run did not stop its call on SIGTERM"
echo "ok: the next service stopped both and said so (and left alone a live call that a forged record named):"
sed 's/^/  /' "$t/serve2.err"

# 2. pmon gc, with the next service's jobs left the same way.
jobs_of 2
old=$SERVE_PID
kill_both
client_close a2
alive $d1 && alive $d2 || fail "round 2: a daemon died with its service and guard"
"$PMON" gc > "$t/gc.out" 2>&1 || fail "pmon gc failed: $(cat "$t/gc.out")"
wait_gone $d1 && wait_gone $d2 || left $old "a daemon outlived pmon gc: $(cat "$t/gc.out")"
[ -z "$stranger" ] || alive $stranger || fail "pmon gc stopped the stranger that has the dead service's pid"
grep -q "job '$id1' (name 'dev-2'), .* of a pmon service that is gone (pid $old) was still running: stopped its" "$t/gc.out" ||
  fail "pmon gc did not name job $id1: $(cat "$t/gc.out")"
grep -q "job '$id2'" "$t/gc.out" || fail "pmon gc did not name job $id2: $(cat "$t/gc.out")"
[ -z "$(ls -d "$spool/$old".* 2> /dev/null)" ] || fail "pmon gc left the dead service's spool directory"
echo "ok: pmon gc stopped the second service's jobs and named them:"; sed 's/^/  /' "$t/gc.out"

# 3. A next service with -q: the jobs it stopped are said, nothing else.
rm -f "$SOCK"  # (the dead service's)
serve_start --confine cgroup
jobs_of 3
old=$SERVE_PID
kill_both
client_close a3
alive $d1 && alive $d2 || fail "round 3: a daemon died with its service and guard"
rm -f "$SOCK"
"$PMON" serve -q --listen "$SOCK" --confine cgroup 2> "$t/serve3.err" &
SERVE_PID=$!
record_pid "$SERVE_PID"
wait_gone $d1 && wait_gone $d2 || left $old "a daemon outlived the start of the next service (-q): $(cat "$t/serve3.err")"
for _ in $(seq 200); do [ "$(grep -c "was still running" "$t/serve3.err")" = 2 ] && break; sleep 0.05; done
grep -q "^pmon: job '$id1' (name 'dev-3'), sh -c .* of a pmon service that is gone (pid $old) was still running: stopped its [0-9]* process" "$t/serve3.err" ||
  fail "the next service, with -q, did not say it stopped job $id1: $(cat "$t/serve3.err")"
grep -q "^pmon: job '$id2', sh -c .* was still running" "$t/serve3.err" ||
  fail "the next service, with -q, did not name job $id2: $(cat "$t/serve3.err")"
[ "$(wc -l < "$t/serve3.err")" = 2 ] || fail "with -q the next service said more than the two jobs: $(cat "$t/serve3.err")"
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.05; done
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "the next service (-q) exited $?"
[ "$(wc -l < "$t/serve3.err")" = 2 ] || fail "with -q the next service said more as it stopped: $(cat "$t/serve3.err")"
echo "ok: with -q the next service said only the jobs it stopped:"; sed 's/^/  /' "$t/serve3.err"
pass
