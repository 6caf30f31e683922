# SPDX-License-Identifier: Apache-2.0
# The shell verbs say what happened in the CLI's own words:
# - pmon wait exits as pmon run would: 124 for a job its --timeout stopped;
# - pmon stop of a job that has ended says so (stopped before, by its
#   timeout, or ended by itself), exit 0;
# - pmon jobs shows the ports a job listens on, in columns that line up
#   whatever the status ("killed SIGTERM", "exited 3") or the name;
# - past --max-jobs, pmon start names the verb that makes room, pmon rm,
#   which removes ended jobs, refuses a running one unless -f;
# - an unknown id is "no job", not the protocol's "terminal";
# - serve --listen into a directory that does not exist is refused, and
#   nothing is made.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start --max-jobs 3
export PMON_SOCKET=$SOCK

# A listener on 127.0.0.1 (port 0: the kernel picks), which writes its port.
listener='import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1])); __import__("os").rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(1000)'
web=$("$PMON" start --name web -- python3 -c "$listener" "$t/port") || fail "pmon start web failed"
slow=$("$PMON" start --timeout 300ms -- sleep 1000) || fail "pmon start with --timeout failed"
three=$("$PMON" start --name ünï -- sh -c 'exit 3') || fail "pmon start of exit 3 failed"
for _ in $(seq 200); do [ -s "$t/port" ] && break; sleep 0.05; done
[ -s "$t/port" ] || fail "the listener never wrote its port"
port=$(cat "$t/port")

# pmon wait: the job's own status, or pmon run's 124 for a timeout.
rc=0; "$PMON" wait "$slow" || rc=$?
[ $rc = 124 ] || fail "pmon wait of a job its timeout stopped: exit $rc, want 124 (as pmon run)"
rc=0; "$PMON" wait "$three" || rc=$?
[ $rc = 3 ] || fail "pmon wait of a job that exited 3: exit $rc"

# pmon jobs: the port, and columns that line up (checked against --json).
for _ in $(seq 100); do
  "$PMON" jobs > "$t/jobs" || fail "pmon jobs failed"
  grep -q "^$web .* $port " "$t/jobs" && break
  sleep 0.05
done
"$PMON" jobs --json > "$t/jobs.json" || fail "pmon jobs --json failed"
python3 - "$t/jobs" "$t/jobs.json" "$web" "$slow" "$three" "$port" <<'PY' || fail "pmon jobs: $(cat "$t/jobs")"
import json, shlex, sys
table, js, web, slow, three, port = sys.argv[1:]
lines = open(table, encoding="utf-8").read().splitlines()
head = lines[0]
names = ["ID", "NAME", "STATUS", "PID", "PORTS", "STARTED", "COMMAND"]
assert head.split() == names, head
at = [head.index(n) for n in names]
rows = {}
for line in lines[1:]:
    cells = [line[at[i]:at[i + 1] if i + 1 < len(at) else None] for i in range(len(at))]
    # A column starts after a space in every row: nothing spills over.
    assert all(line[a - 1] == " " for a in at[1:]), f"misaligned: {line!r}"
    cells = [c.strip() for c in cells]
    rows[cells[0]] = cells
want = {web: ("web", "running", port), slow: ("-", "killed SIGTERM", "-"), three: ("ünï", "exited 3", "-")}
for t in json.load(open(js)):
    name, status, ports = want[t["terminalId"]]
    row = rows[t["terminalId"]]
    assert row[1:5] == [name, status, str(t["pid"]), ports], (row, t)
    # The command as a shell reads it back, on one line (-c's newlines as \n).
    assert row[6] == shlex.join(t["command"]).replace("\n", "\\n"), (row, t)
PY
echo "ok: jobs: $(sed -n 2p "$t/jobs")"

# Past --max-jobs (3): the refusal names the verb that makes room.
rc=0; "$PMON" start -- true > /dev/null 2> "$t/err" || rc=$?
[ $rc = 125 ] && [ "$(wc -l < "$t/err")" = 1 ] || fail "a 4th job past --max-jobs 3: exit $rc: $(cat "$t/err")"
grep -q "^pmon: too many jobs (at most 3); remove jobs that have ended with 'pmon rm ID'" "$t/err" ||
  fail "past --max-jobs: $(cat "$t/err")"
! grep -q release "$t/err" || fail "past --max-jobs, the protocol's word: $(cat "$t/err")"

# pmon rm: a running job is refused (and keeps running); ended ones go.
rc=0; "$PMON" rm "$web" 2> "$t/err" || rc=$?
[ $rc = 125 ] && grep -q "^pmon: rm: job $web is still running; stop it first ('pmon stop $web') or use 'pmon rm -f'$" "$t/err" ||
  fail "pmon rm of a running job: exit $rc: $(cat "$t/err")"
"$PMON" jobs | grep -q "^$web .* running " || fail "pmon rm stopped a running job it refused"
"$PMON" rm "$slow" "$three" || fail "pmon rm of two ended jobs: exit $?"
"$PMON" jobs > "$t/jobs"
! grep -q "^$slow \|^$three " "$t/jobs" || fail "pmon rm left them listed: $(cat "$t/jobs")"
again=$("$PMON" start -- true) || fail "pmon start after pmon rm made room"
rc=0; "$PMON" rm t0123456789abcdef 2> "$t/err" || rc=$?
[ $rc = 125 ] && grep -q "^pmon: rm: no job 't0123456789abcdef' on this service; 'pmon jobs' lists them$" "$t/err" ||
  fail "pmon rm of an unknown job: exit $rc: $(cat "$t/err")"

# pmon stop, twice: the second time it says the job was already stopped.
"$PMON" stop "$web" 2> "$t/err" || fail "pmon stop: exit $?: $(cat "$t/err")"
[ ! -s "$t/err" ] || fail "pmon stop of a running job said: $(cat "$t/err")"
rc=0; "$PMON" stop "$web" 2> "$t/err" || rc=$?
[ $rc = 0 ] && [ "$(cat "$t/err")" = "pmon: job $web was already stopped; nothing to stop" ] ||
  fail "pmon stop of a stopped job: exit $rc: '$(cat "$t/err")'"
"$PMON" wait "$again" || fail "pmon wait of 'true': exit $?"
"$PMON" stop "$again" 2> "$t/err" || fail "pmon stop of an ended job: exit $?"
[ "$(cat "$t/err")" = "pmon: job $again had already ended (exited 0); nothing to stop" ] ||
  fail "pmon stop of an ended job: '$(cat "$t/err")'"
# -f: a running job is stopped, then removed.
last=$("$PMON" start -- sleep 1000) || fail "pmon start sleep"
main_of_cli() { jget "$("$PMON" jobs --json)" "[terminalId=$1].pid"; }
lp=$(main_of_cli "$last"); lst=$(start_time_of "$lp"); [ -n "$lst" ] && echo "$lp $lst" >> "$t/pids" && echo "$lp $lst" >> "$STATE/pids"
"$PMON" rm -f "$last" || fail "pmon rm -f of a running job: exit $?"
! alive "$lp" "$lst" || fail "pmon rm -f left the job's process $lp running"
! "$PMON" jobs | grep -q "^$last " || fail "pmon rm -f left the job listed"
echo "ok: rm, stop"

# serve --listen PATH in a directory that does not exist: refused, not made.
rc=0; "$PMON" serve --listen "$t/no/such/dir/s.sock" 2> "$t/err" || rc=$?
[ $rc = 125 ] && [ "$(wc -l < "$t/err")" = 1 ] || fail "serve --listen into a missing directory: exit $rc: $(cat "$t/err")"
grep -q "^pmon: serve: the directory $t/no/such/dir does not exist; make it first" "$t/err" || fail "serve --listen: $(cat "$t/err")"
rc=0; "$PMON" serve --listen "$t/no/s.sock" 2> "$t/err" || rc=$?
[ $rc = 125 ] && [ ! -e "$t/no" ] || fail "serve --listen made $t/no (exit $rc: $(cat "$t/err"))"

kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
