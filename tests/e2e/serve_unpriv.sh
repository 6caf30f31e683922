# SPDX-License-Identifier: Apache-2.0
# pmon serve as an unprivileged user in a cgroup subtree delegated to it:
# its jobs get leaves under that subtree, run as the user and are stopped
# with their setsid daemons. Only the service's own uid and root are
# served: another user who can reach the socket gets one error and is
# closed, root's service refuses the test user, and the 0600 socket keeps
# others from connecting at all.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/unpriv.inc"
. "$(dirname "$0")/serve.inc"

acquire_user
D=$CG/pmon-test-serve-$$
make_cgroup "$D"
delegate_cgroup "$D"
OTHER_UID=65534

# rpc_as UID SOCK METHOD PARAMS: one request on a fresh connection as UID;
# prints the first line the service sends back (or "refused: ERRNO").
rpc_as() {
  setpriv --reuid="$1" --regid="$1" --clear-groups /usr/bin/python3 -c '
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("refused: %s" % e.strerror)
    sys.exit(0)
try:
    s.sendall((json.dumps({"jsonrpc": "2.0", "id": 1, "method": sys.argv[2], "params": json.loads(sys.argv[3])}) + "\n").encode())
except OSError:
    pass  # a refused peer may be closed before it has sent: the answer is there

f = s.makefile("rb")
print(f.readline().decode().rstrip("\n"))
' "$2" "$3" "$4"
}

# The user's service, inside the delegated subtree.
usock=$u/serve.sock
# (as_user_in's steps inline, so that $! is the service itself)
sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec setpriv --reuid="$0" --regid="$0" --clear-groups --inh-caps=-all -- "$@"' \
  "$TEST_UID" "$D" "$PMON" serve -q --listen "$usock" 2> "$t/userve.err" &
upid=$!
record_pid "$upid"
for i in $(seq 100); do [ -S "$usock" ] && break; sleep 0.05; done
[ -S "$usock" ] || fail "the user's service did not listen: $(cat "$t/userve.err")"
[ "$(stat -c '%u %a' "$usock")" = "$TEST_UID 600" ] || fail "socket owner/mode: $(stat -c '%u %a' "$usock")"

r=$(rpc_as "$TEST_UID" "$usock" terminal/create "$(create_params "$u/d" '{"keep":true}')")
id=$(jget "$r" result.terminalId)
daemon_of "$u/d"
r=$(rpc_as "$TEST_UID" "$usock" terminal/list '{}')
mpid=$(jget "$r" "result.terminals[terminalId=$id].pid")
mst=$(start_time_of "$mpid"); record_pid "$mpid"
[ "$(stat -c %u "/proc/$dpid")" = "$TEST_UID" ] || fail "the job does not run as $TEST_USER"
leaf=$(grep ^0:: "/proc/$dpid/cgroup" | cut -d: -f3)
case $CG$leaf in
  "$D"/pmon-*) ;;
  *) fail "the job's leaf $leaf is not under the delegated $D" ;;
esac

# Root may talk to the user's service; another user cannot connect to the
# 0600 socket, and when the socket is opened up, is refused by uid.
r=$(rpc_as 0 "$usock" terminal/list '{}')
reply_is -m "root was not served" "$r" result.terminals.#=1
r=$(rpc_as "$OTHER_UID" "$usock" terminal/list '{}')
case $r in "refused: "*) ;; *) fail "another user connected to the 0600 socket: $r" ;; esac
chmod 666 "$usock"
r=$(rpc_as "$OTHER_UID" "$usock" terminal/list '{}')
case $(jget "$r" error.message) in
  "permission denied"*) ;;
  *) fail "another uid was served: $r" ;;
esac

# The user's pmon logs -f reads its job's output through a stream.
chmod 600 "$usock"
r=$(rpc_as "$TEST_UID" "$usock" terminal/create '{"command":"sh","args":["-c","echo one; sleep 0.2; echo two"],"keep":true}')
lid=$(jget "$r" result.terminalId)
r=$(rpc_as "$TEST_UID" "$usock" terminal/list '{}')
lpid=$(jget "$r" "result.terminals[terminalId=$lid].pid")
lst=$(start_time_of "$lpid"); record_pid "$lpid"
[ "$(setpriv --reuid="$TEST_UID" --regid="$TEST_UID" --clear-groups "$PMON" logs -f --socket "$usock" "$lid")" = "one
two" ] || fail "the user's pmon logs -f did not print its job's output"
r=$(rpc_as "$TEST_UID" "$usock" terminal/release '{"terminalId":"'"$lid"'"}')
reply_is -m "release of the logs job" "$r" result.cleanupVerified=true
[ -z "$lst" ] || ! alive "$lpid" "$lst" || fail "release of the logs job: its main process $lpid is still there"

r=$(rpc_as "$TEST_UID" "$usock" terminal/release '{"terminalId":"'"$id"'"}')
reply_is -m "release" "$r" result.cleanupVerified=true
! alive "$dpid" "$dst" || fail "the release left the daemon running"
! alive "$mpid" "$mst" || fail "the release left the job's main process $mpid running"
kill -TERM "$upid"
wait "$upid" || fail "the user's service exited $?"
left=$(find "$D" -mindepth 1 -type d -name 'pmon-*')
[ -z "$left" ] || fail "the user's service left leaves behind: $left"

# Root's service refuses the test user, even on an open socket.
serve_start
chmod 666 "$SOCK"
r=$(rpc_as "$TEST_UID" "$SOCK" terminal/list '{}')
case $(jget "$r" error.message) in
  "permission denied"*) ;;
  *) fail "root's service served $TEST_USER: $r" ;;
esac
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
