# SPDX-License-Identifier: Apache-2.0
# Two jobs of one service listen on 127.0.0.1, each on a port of its own:
# in one the listener is the main process, in the other a child of the
# main process (a shell that starts it and waits). terminal/wait_for_port
# and terminal/list answer, for each job, its own listener's port and pid,
# the pid checked by start time as well (the listener writes both itself).
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

# The listener: binds port 0, then writes "host-pid start-time port" of
# itself to the file it is given, and sleeps.
listener='import os, socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
l = open((os.environ.get("PMON_TEST_HOSTPROC") or "/proc") + "/self/stat").read()
f = l[l.rindex(")") + 2:].split()
open(sys.argv[1] + ".tmp", "w").write("%s %s %d\n" % (l.split()[0], f[19], s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(1000)'

serve_start
client_open c
pa=$(jparams name=main-listens -- python3 -c "$listener" "$t/a")
pb=$(jparams name=child-listens -- sh -c 'python3 -c "$0" "$1" & wait' "$listener" "$t/b")
r=$(call c terminal/create "$pa"); ida=$(jget "$r" result.terminalId)
r=$(call c terminal/create "$pb"); idb=$(jget "$r" result.terminalId)
r=$(call c terminal/list)
mainb=$(jget "$r" "result.terminals[terminalId=$idb].pid")
record_pid "$mainb"

for f in a b; do
  for _ in $(seq 400); do [ -f "$t/$f" ] && break; sleep 0.05; done
  [ -f "$t/$f" ] || fail "the listener of job $f never wrote $t/$f"
  read -r pid st port < "$t/$f"
  echo "$pid $st" >> "$t/pids"; echo "$pid $st" >> "$STATE/pids"
  eval "pid_$f=$pid st_$f=$st port_$f=$port"
done
[ "$port_a" != "$port_b" ] || fail "both listeners have port $port_a: the scenario cannot tell them apart"
[ "$pid_b" != "$mainb" ] || fail "job b's listener is its main process: the scenario wants a child"

# Asked for both jobs while both listen, in both orders.
for f in b a b a; do
  eval "id=\$id$f pid=\$pid_$f st=\$st_$f port=\$port_$f"
  r=$(call c terminal/wait_for_port '{"terminalId":"'"$id"'","timeoutMs":20000}')
  reply_is -m "wait_for_port of job $f ($id) answered another port, want its own $port" "$r" "result.port=$port"
  got=$(jget "$r" result.pid)
  [ "$got" = "$pid" ] || fail "wait_for_port of job $f ($id) answered pid $got, want its listener $pid: $r"
  [ "$(start_time_of "$got")" = "$st" ] || fail "wait_for_port of job $f: pid $got is not the listener (start time)"
  reply_is -m "wait_for_port of job $f: address" "$r" result.address=127.0.0.1
  # The port it was asked for: its own is found, the other job's is not.
  r=$(call c terminal/wait_for_port '{"terminalId":"'"$id"'","port":'"$port"',"timeoutMs":20000}')
  reply_is -m "wait_for_port of job $f on port $port" "$r" "result.pid=$pid"
done
r=$(call c terminal/wait_for_port '{"terminalId":"'"$ida"'","port":'"$port_b"',"timeoutMs":300}')
reply_is -m "job a was said to listen on job b's port $port_b" "$r" 'error!=(absent)'

r=$(call c terminal/list)
for f in a b; do
  eval "id=\$id$f pid=\$pid_$f port=\$port_$f"
  reply_is -m "terminal/list: the ports of job $f: just its listener's" "$r" "result.terminals[terminalId=$id].ports.#=1" \
    "result.terminals[terminalId=$id].ports.0.port=$port" "result.terminals[terminalId=$id].ports.0.pid=$pid"
done

for id in "$ida" "$idb"; do call c terminal/release '{"terminalId":"'"$id"'"}' > /dev/null; done
for f in a b; do
  eval "pid=\$pid_$f st=\$st_$f"
  wait_gone "$pid" "$st" || fail "the listener $pid of job $f survived its release"
done
client_close c
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
