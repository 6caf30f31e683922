# SPDX-License-Identifier: Apache-2.0
# Named jobs are one of a kind, and found by name or port among the
# caller's own jobs only:
# - terminal/create with the name of a running job of the caller's returns
#   that job (existing: true); nothing new starts;
# - with replace: true the old job's whole tree (its main process and a
#   setsid daemon) is gone, by pid and start time, when the reply comes,
#   its report says stoppedBy "replaced", and the new job runs;
# - terminal/find by name and by listening port gives the job; another
#   connection's job of the same name is neither found nor returned (a
#   create there starts its own); a process listening on a port that is
#   not a job of the service is never found, and pmon stop --port leaves
#   it alone;
# - pmon start --name prints the running job's id and says so; pmon stop
#   --name and --port stop the job.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
export PMON_SOCKET=$SOCK
client_open a
client_open b

# 1. One of a kind.
r=$(call a terminal/create "$(create_params "$t/d1" '{"name": "web"}')")
id1=$(jget "$r" result.terminalId)
reply_is -m "a new job said existing" "$r" result.existing=false
daemon_of "$t/d1"; d1pid=$dpid; d1st=$dst
main_of a "$id1"; m1pid=$mpid; m1st=$mst
r=$(call a terminal/create '{"command":"sleep","args":["1000"],"name":"web"}')
reply_is -m "a second create named web did not return the running job" "$r" "result.terminalId=$id1"
reply_is -m "the running job was not said to be existing" "$r" result.existing=true
r=$(call a terminal/list)
reply_is -m "not one job named web" "$r" 'result.terminals[name=web]!=(absent)'
echo "ok: a create with a running job's name returns it"

# 2. Replace: the old tree is gone when the reply comes.
listener='import os, socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1])); os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(1000)'
params=$(jparams name=web replace:=true -- python3 -c "$listener" "$t/port")
r=$(call a terminal/create "$params")
id2=$(jget "$r" result.terminalId)
[ "$id2" != "$id1" ] && [ "$(jget "$r" result.existing)" = false ] || fail "replace did not start a new job: $r"
! alive "$m1pid" "$m1st" || fail "the replaced job's main process $m1pid was alive when the reply came"
! alive "$d1pid" "$d1st" || fail "the replaced job's daemon $d1pid was alive when the reply came"
r=$(call a terminal/report "{\"terminalId\":\"$id1\"}")
reply_is -m "the replaced job's stoppedBy" "$r" result.job.stoppedBy=replaced
reply_is -m "the replaced job not verified gone" "$r" result.cleanup_verified=true
main_of a "$id2"; m2pid=$mpid; m2st=$mst
echo "ok: replace stops the old tree, verified gone, before the new job starts"

# 3. Found by name and by port; only the caller's own.
for _ in $(seq 200); do [ -s "$t/port" ] && break; sleep 0.05; done
port=$(cat "$t/port")
r=$(call a terminal/find '{"name":"web"}')
reply_is -m "find by name" "$r" "result.terminalId=$id2"
found=""
for _ in $(seq 100); do
  r=$(call a terminal/find "{\"port\":$port}")
  found=$(jget "$r" result.terminalId "")
  [ "$found" = "$id2" ] && break
  sleep 0.05
done
[ "$found" = "$id2" ] || fail "find by port $port: $r"
r=$(call b terminal/find '{"name":"web"}')
reply_is -m "another connection found a job not its own" "$r" "error.message~no running terminal of yours is named 'web'"
r=$(call b terminal/create '{"command":"sleep","args":["1000"],"name":"web"}')
idb=$(jget "$r" result.terminalId)
[ "$idb" != "$id2" ] && [ "$(jget "$r" result.existing)" = false ] ||
  fail "another connection's create named web returned a job not its own: $r"
main_of b "$idb"; mbpid=$mpid; mbst=$mst
r=$(call a terminal/find '{}')
reply_is -m "find with neither name nor port" "$r" "error.message~name"
r=$(call a terminal/create '{"command":"true","replace":true}')
reply_is -m "replace without a name" "$r" "error.message~'replace'"
echo "ok: find by name and port, among the caller's own jobs only"

# 4. A listener that is no job of the service is never found nor stopped.
python3 -c "$listener" "$t/port_other" &
other=$!
record_pid "$other"
ost=$(start_time_of "$other")
for _ in $(seq 200); do [ -s "$t/port_other" ] && break; sleep 0.05; done
oport=$(cat "$t/port_other")
rc=0; "$PMON" stop --port "$oport" 2> "$t/e" || rc=$?
[ $rc = 125 ] && grep -q "no running job listens on TCP port $oport" "$t/e" ||
  fail "pmon stop --port of a port no job holds: exit $rc, $(cat "$t/e")"
alive "$other" "$ost" || fail "pmon stop --port touched a process that is not a job"
kill "$other"; wait "$other" 2>/dev/null || true
echo "ok: a port no job listens on: nothing found, nothing stopped"

# 5. The shell verbs: kept jobs are the service's, so any client finds them.
k1=$("$PMON" start --name svc -- sleep 1000) || fail "pmon start --name svc failed"
k2=$("$PMON" start --name svc -- sleep 2000 2> "$t/e") || fail "pmon start --name svc again failed"
[ "$k2" = "$k1" ] && grep -q "already running" "$t/e" || fail "pmon start of a running name: '$k2' vs '$k1', $(cat "$t/e")"
main_of a "$k1"
"$PMON" stop --name svc || fail "pmon stop --name svc failed"
wait_gone "$mpid" "$mst" || fail "pmon stop --name left the job's main process $mpid"
"$PMON" stop --port "$port" 2> "$t/e" && fail "pmon stop --port found a job of another connection: $(cat "$t/e")"
echo "ok: pmon start --name, pmon stop --name"

client_close b
wait_gone "$mbpid" "$mbst" || fail "connection b's job is still running after it closed"
client_close a
wait_gone "$m2pid" "$m2st" || fail "connection a's job is still running after it closed"
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
