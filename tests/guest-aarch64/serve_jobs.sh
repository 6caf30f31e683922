# SPDX-License-Identifier: Apache-2.0
# The job service on aarch64: pmon serve on a socket, and the shell verbs.
# A job whose tree holds a setsid daemon is listed, its output read, then
# stopped: the tree gone, pmon wait says 143; a job that exits by itself is
# waited for (its status); a job still running when the service gets SIGTERM
# is stopped with it, its tree gone.
. "$(dirname "$0")/common.inc"

export PMON_SOCKET=$t/serve.sock
"$PMON" serve -q --listen "$PMON_SOCKET" 2> "$t/serve.err" &
svc=$!
wait_until 60 [ -S "$PMON_SOCKET" ] || fail "the service made no socket: $(cat "$t/serve.err")"

id=$("$PMON" start --name tree -- sh -c "$(tree_line "$t/a"); echo tree is up; sleep 1000") ||
  fail "pmon start failed"
wait_until 60 [ -f "$t/a" ] || fail "job $id did not start its tree"
"$PMON" jobs > "$t/jobs" || fail "pmon jobs failed"
grep -q "^$id  *tree  *running " "$t/jobs" || fail "pmon jobs does not list $id as running: $(cat "$t/jobs")"
wait_until 30 sh -c '"$PMON" logs "$1" | grep -qx "tree is up"' sh "$id" || fail "pmon logs $id: $("$PMON" logs "$id")"
"$PMON" stop "$id" || fail "pmon stop $id: exit $?"
tree_gone "$t/a" "after pmon stop"
rc=0; "$PMON" wait "$id" || rc=$?
[ $rc = 143 ] || fail "pmon wait of the stopped job: exit $rc, want 143"
ok "a job's setsid daemon and child stopped with pmon stop; pmon wait: 143"

id=$("$PMON" start -- sh -c 'echo done; exit 3') || fail "pmon start failed"
rc=0; "$PMON" wait "$id" || rc=$?
[ $rc = 3 ] || fail "pmon wait: exit $rc, want 3"
ok "pmon wait of a job that exited 3: 3"

id=$("$PMON" start -- sh -c "$(tree_line "$t/b"); sleep 1000") || fail "pmon start failed"
wait_until 60 [ -f "$t/b" ] || fail "job $id did not start its tree"
kill -TERM "$svc"
rc=0; wait "$svc" || rc=$?
tree_gone "$t/b" "after SIGTERM of the service (exit $rc)"
[ ! -e "$PMON_SOCKET" ] || fail "the service left its socket"
ok "SIGTERM of the service: its running job's tree gone"
