# SPDX-License-Identifier: Apache-2.0
# pmon serve --stdio: the client is whoever holds its stdin and stdout. EOF
# on stdin stops every job (kept ones too) and the service exits 0; with
# --die-with-parent the death of its parent does the same.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

# EOF on stdin.
mkfifo "$t/in"
"$PMON" serve --stdio < "$t/in" > "$t/out" 2> "$t/err" &
spid=$!
record_pid "$spid"
exec {w}> "$t/in"
printf '{"jsonrpc":"2.0","id":1,"method":"terminal/create","params":%s}\n' "$(create_params "$t/d1" '{"keep":true}')" >&"$w"
daemon_of "$t/d1"
grep -Eq '"terminalId":"t[0-9a-f]{16}"' "$t/out" || fail "no terminalId on stdout: $(cat "$t/out")"
exec {w}>&-
rc=0; wait "$spid" || rc=$?
[ $rc = 0 ] || fail "pmon serve --stdio exited $rc at EOF: $(cat "$t/err")"
! alive "$dpid" "$dst" || fail "EOF on stdin left the kept job's daemon running"

# The parent's death with --die-with-parent (the parent is a shell that
# holds the service's stdin open, then is SIGKILLed).
sh -c '"$1" serve --stdio --die-with-parent < "$2" > "$3" 2>&1 & echo $! > "$4"; exec sleep 1000' \
  sh "$PMON" "$t/in" "$t/out2" "$t/spid" &
ppid=$!
record_pid "$ppid"
exec {w}> "$t/in"
for i in $(seq 100); do [ -s "$t/spid" ] && break; sleep 0.05; done
spid=$(cat "$t/spid")
record_pid "$spid"
printf '{"jsonrpc":"2.0","id":1,"method":"terminal/create","params":%s}\n' "$(create_params "$t/d2")" >&"$w"
daemon_of "$t/d2"
st=$(start_time_of "$spid")
kill -KILL "$ppid"
wait "$ppid" 2>/dev/null || true
wait_gone "$spid" "$st" || fail "the service outlived its parent"
! alive "$dpid" "$dst" || fail "the parent's death left the job's daemon running"
exec {w}>&-
pass
