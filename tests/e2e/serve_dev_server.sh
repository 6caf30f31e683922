# SPDX-License-Identifier: Apache-2.0
# A dev server started as a job (python's http.server behind sh -c, with a
# setsid daemon beside it): terminal/wait_for_port says which port it
# listens on, terminal/list shows it, and terminal/release stops the whole
# tree, the daemon too, so the port can be bound again at once.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
client_open c
script='setsid sh -c "'"$HOSTPID_SH"'; echo \$hp \$(cut -d\" \" -f22 /proc/\$\$/stat) > '"$t"'/daemon.tmp;
          mv '"$t"'/daemon.tmp '"$t"'/daemon; exec sleep 1000" &
        while [ ! -f '"$t"'/daemon ]; do sleep 0.01; done
        exec python3 -m http.server 0 --bind 127.0.0.1'
params=$(jparams name=web -- sh -c "$script")
r=$(call c terminal/create "$params")
id=$(jget "$r" result.terminalId)

r=$(call c terminal/wait_for_port '{"terminalId":"'"$id"'","timeoutMs":20000}')
port=$(jget "$r" result.port)
reply_is -m "wait_for_port" "$r" result.address=127.0.0.1
case $port in ''|*[!0-9]*|0) fail "wait_for_port gave no port: $r" ;; esac
# The port is really the server's: it answers HTTP there.
python3 -c 'import sys,urllib.request; urllib.request.urlopen("http://127.0.0.1:%s/" % sys.argv[1], timeout=10).read()' "$port" ||
  fail "nothing answers HTTP on port $port"
read -r dpid dst < "$t/daemon"
echo "$dpid $dst" >> "$t/pids"; echo "$dpid $dst" >> "$STATE/pids"
main_of c "$id"

r=$(call c terminal/list)
reply_is -m "terminal/list: the job's ports" "$r" "result.terminals[terminalId=$id].ports.*.port=[$port]"
reply_is -m "terminal/list: name" "$r" result.terminals.0.name=web

r=$(call c terminal/release '{"terminalId":"'"$id"'"}')
reply_is -m "release" "$r" result.cleanupVerified=true
! alive "$dpid" "$dst" || fail "the setsid daemon $dpid survived the release"
! alive "$mpid" "$mst" || fail "the dev server $mpid survived the release"
python3 -c 'import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()' "$port" ||
  fail "port $port cannot be bound again after the release"
r=$(call c terminal/output '{"terminalId":"'"$id"'"}')
reply_is -m "a released terminal is still known" "$r" error.code=-32000
client_close c
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
