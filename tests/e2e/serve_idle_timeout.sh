# SPDX-License-Identifier: Apache-2.0
# An idle timeout stops a job that has printed nothing for that long, and
# only such a job:
# - a job that prints, then hangs silently with a setsid daemon beside it,
#   is stopped by its idleTimeoutMs: its report says stop reason
#   idle_timeout, stoppedBy "idle timeout", exit status 124 (pmon wait
#   too), and its main process and daemon are gone (pid and start time);
# - it was not stopped while it printed: all its lines are there;
# - a job whose writes wait for a reader (outputBackpressure, a small
#   outputByteLimit, nobody reading) is not idle: it still runs well past
#   its idle timeout, then, read to the end, goes quiet and is stopped;
#   the same when it is read as a stream (pmon logs -f), with nothing else
#   asking the service about it;
# - pmon start --idle-timeout does the same from the shell;
# - idleTimeoutMs 0 is refused, naming the field.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
export PMON_SOCKET=$SOCK
client_open a

# 1. Prints 40 lines 50 ms apart (two seconds of output, past its 1.5 s idle
# timeout were the lines not counted), then starts a daemon and hangs. Its
# main process writes down its own pid and start time first: a lookup from
# here, on a loaded machine, could come after the stop.
printer="$HOSTPID_SH"'; echo $hp $(cut -d" " -f22 /proc/$$/stat) > '"$t/m1"'.tmp; mv '"$t/m1"'.tmp '"$t/m1"'
for i in $(seq 40); do echo "line $i"; sleep 0.05; done; echo quiet'
params=$(create_params "$t/d1" '{"idleTimeoutMs": 1500}' "$printer")
r=$(call a terminal/create "$params")
id=$(jget "$r" result.terminalId)
for i in $(seq 200); do [ -f "$t/m1" ] && break; sleep 0.05; done
[ -f "$t/m1" ] || fail "the job's main process never wrote $t/m1"
read -r mpid mst < "$t/m1"
echo "$mpid $mst" >> "$t/pids"; echo "$mpid $mst" >> "$STATE/pids"
daemon_of "$t/d1"
r=$(call a terminal/wait_for_exit "{\"terminalId\":\"$id\",\"timeoutMs\":20000}")
[ "$(jget "$r" result.running false)" = false ] || fail "the silent job was not stopped by its idle timeout: $r"
wait_gone "$mpid" "$mst" || fail "the job's main process $mpid is still running after its idle timeout"
wait_gone "$dpid" "$dst" || fail "the job's daemon $dpid is still running after its idle timeout"
r=$(call a terminal/report "{\"terminalId\":\"$id\"}")
reply_is -m "stop reason is not idle_timeout" "$r" result.stop.reason=idle_timeout
reply_is -m "stoppedBy is not 'idle timeout'" "$r" "result.job.stoppedBy=idle timeout"
reply_is -m "exit status of an idle-timed-out job is not 124" "$r" result.exit_status=124
reply_is -m "cleanup not verified" "$r" result.cleanup_verified=true
r=$(call a terminal/output "{\"terminalId\":\"$id\"}")
out=$(jget "$r" result.output)
echo "$out" | grep -qx 'line 40' || fail "the job was stopped while it still printed: $out"
echo "$out" | grep -qx quiet || fail "the job was stopped before it went quiet: $out"
rc=0; "$PMON" wait "$id" || rc=$?
[ $rc = 124 ] || fail "pmon wait of a job its idle timeout stopped: exit $rc, want 124"
echo "ok: a silent job stopped by its idle timeout, with its daemon; not while it printed"

# held_job SCRIPT WHAT: sh -c SCRIPT as a job with a 4 KiB outputByteLimit,
# backpressure and a 500 ms idle timeout, its id in $hid; nobody reads it
# for three idle timeouts, and it must still run (its output waits unread).
held_job() {
  local r
  r=$(call a terminal/create "$(jparams outputByteLimit:=4096 outputBackpressure:=true idleTimeoutMs:=500 -- sh -c "$1")")
  hid=$(jget "$r" result.terminalId)
  main_of a "$hid"
  r=$(call a terminal/wait_for_exit "{\"terminalId\":\"$hid\",\"timeoutMs\":1500}")
  [ "$(jget "$r" result.running false)" = true ] || fail "$2 was stopped as idle: $r"
}

# 2. Writes 256 KiB through a 4 KiB outputByteLimit with backpressure, then
# hangs. Nobody reads for three idle timeouts: its writes wait, it is not idle.
held_job 'head -c 262144 /dev/zero | tr "\0" x; echo; echo written; exec sleep 1000' "a job waiting for its reader"
id2=$hid
# Read it all (one connection, since + waitMs); then it is quiet, and stopped.
cat > "$t/read_all.py" <<'PY'
import sys
from serve_rpc import Rpc
rpc, tid, nxt = Rpc(sys.argv[1]), sys.argv[2], 0
for _ in range(5000):
    r = rpc.call("terminal/output", {"terminalId": tid, "since": nxt, "waitMs": 2000})
    nxt = r["next"]
    if "written\n" in r["output"]:
        print(nxt)
        sys.exit(0)
sys.exit("the output never ended with 'written' (next %d)" % nxt)
PY
PYTHONPATH="$(dirname "$0")" python3 "$t/read_all.py" "$SOCK" "$id2" > /dev/null ||
  fail "the backpressured job's output was not read to its end"
r=$(call a terminal/wait_for_exit "{\"terminalId\":\"$id2\",\"timeoutMs\":20000}")
[ "$(jget "$r" result.running false)" = false ] || fail "the quiet job was not stopped by its idle timeout: $r"
wait_gone "$mpid" "$mst" || fail "the backpressured job's main process $mpid is still running"
r=$(call a terminal/report "{\"terminalId\":\"$id2\"}")
reply_is -m "stop reason is not idle_timeout" "$r" result.stop.reason=idle_timeout
echo "ok: a job waiting for its reader is not idle; once read and quiet it is stopped"

# 2b. The same, read as a stream (pmon logs -f: the bytes through a pipe the
# service writes as its reader makes room). The job writes exactly its
# outputByteLimit, then nothing: its buffer is full and unread, so it is not
# idle. Once the stream has taken it, its idle timeout runs again.
held_job 'head -c 4095 /dev/zero | tr "\0" x; echo; exec sleep 1000' "a job waiting for its stream reader"
id2b=$hid
# pmon logs -f follows the job to its end; nothing else asks the service
# about it meanwhile (a request waiting on the job would have it looked at
# in every round).
"$PMON" logs -f "$id2b" > "$t/stream2b" 2> "$t/stream2b.err" & logs_pid=$!
for i in $(seq 400); do kill -0 "$logs_pid" 2> /dev/null || break; sleep 0.05; done
if kill -0 "$logs_pid" 2> /dev/null; then
  kill "$logs_pid"
  fail "the job read as a stream, then quiet, was not stopped by its idle timeout within 20 s: pmon logs -f still follows it"
fi
wait "$logs_pid" || true
[ "$(wc -c < "$t/stream2b")" = 4096 ] || fail "the stream did not carry the job's 4096 bytes: $(wc -c < "$t/stream2b")"
wait_gone "$mpid" "$mst" || fail "the stream-read job's main process $mpid is still running"
r=$(call a terminal/report "{\"terminalId\":\"$id2b\"}")
reply_is -m "stop reason is not idle_timeout" "$r" result.stop.reason=idle_timeout
echo "ok: a job read as a stream is not idle while it waits; once read and quiet it is stopped"

# 3. The shell verb.
id3=$("$PMON" start --idle-timeout 5s -- sleep 1000) || fail "pmon start --idle-timeout failed"
main_of a "$id3"
rc=0; "$PMON" wait "$id3" || rc=$?
[ $rc = 124 ] || fail "pmon wait of a job pmon start --idle-timeout stopped: exit $rc, want 124"
wait_gone "$mpid" "$mst" || fail "the main process $mpid of the pmon start job is still running"
"$PMON" stop "$id3" > "$t/stop.out" 2>&1 || true
grep -q 'idle timeout' "$t/stop.out" || fail "pmon stop does not say the idle timeout stopped it: $(cat "$t/stop.out")"
rc=0; "$PMON" start --idle-timeout 0 -- true 2> "$t/e" || rc=$?
[ $rc = 125 ] && grep -q -- '--idle-timeout' "$t/e" || fail "pmon start --idle-timeout 0: exit $rc, $(cat "$t/e")"
echo "ok: pmon start --idle-timeout"

# 4. idleTimeoutMs 0 is refused by name.
r=$(call a terminal/create '{"command":"true","idleTimeoutMs":0}')
reply_is -m "idleTimeoutMs 0 not refused by name" "$r" "error.message~idleTimeoutMs"
echo "ok: idleTimeoutMs 0 refused"

client_close a
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
