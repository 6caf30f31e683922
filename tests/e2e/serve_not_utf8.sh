# SPDX-License-Identifier: Apache-2.0
# JSON carries text only. pmon start refuses an argument, a command name,
# a current directory, a --name or an environment variable that is not
# valid UTF-8, in one line that names it (exit 125, like other bad input;
# for a variable, how to leave it out), and sends nothing; logs, stop and
# wait refuse such an id. Nothing aborts. A job's output that is not
# UTF-8 still works (logs gives its bytes), and so does a request line
# with such bytes (a parse error) and a job whose leftover process has
# such a command line (its report).
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
export PMON_SOCKET=$SOCK

# bad WHAT EXPECTED CMD...: exit 125, one line on stderr containing EXPECTED.
bad() {
  local what=$1 expected=$2 rc=0
  shift 2
  "$@" > "$t/out" 2> "$t/err" || rc=$?
  [ $rc = 125 ] || fail "$what: exit $rc, not 125: $(cat "$t/err")"
  [ "$(wc -l < "$t/err")" = 1 ] || fail "$what: not one line: $(cat "$t/err")"
  grep -qF -- "$expected" "$t/err" || fail "$what: '$(cat "$t/err")' does not say '$expected'"
  [ ! -s "$t/out" ] || fail "$what: printed $(cat "$t/out")"
}

bad "an argument" "pmon: start: argument 2 of the command, 'b\\xFF', is not valid UTF-8;" \
  "$PMON" start -- echo a $'b\xff'
bad "a command name" "pmon: start: the command name, 'x\\xFE', is not valid UTF-8;" "$PMON" start -- $'x\xfe'
bad "--name" "pmon: start: --name 'n\\xFF' is not valid UTF-8" "$PMON" start --name $'n\xff' -- true
mkdir "$t/dir"$'\xff'
bad "the current directory" "pmon: start: the current directory $t/dir\\xFF is not valid UTF-8;" \
  sh -c 'cd "$1" && exec "$2" start -- true' sh "$t/dir"$'\xff' "$PMON"
bad "an environment variable" \
  "pmon: start: the environment variable PMON_TEST_BYTES is not valid UTF-8; the service takes text only: leave it out with 'env -u PMON_TEST_BYTES pmon start ...'" \
  env PMON_TEST_BYTES=$'\xc3\x28' "$PMON" start -- true
for verb in logs stop wait; do
  bad "$verb of an id that is not text" "pmon: $verb: 't\\xFF' is not a job id" "$PMON" "$verb" $'t\xff'
done
[ "$("$PMON" jobs --json)" = "[]" ] || fail "a refused start made a job: $("$PMON" jobs --json)"

# Output that is not UTF-8: logs gives the bytes as written; jobs works.
id=$("$PMON" start -- printf 'a\377b\n') || fail "pmon start of a job that writes bytes"
rc=0; "$PMON" wait "$id" || rc=$?
[ $rc = 0 ] || fail "pmon wait: $rc"
[ "$("$PMON" logs "$id" | od -An -tx1 | tr -d ' \n')" = 61ff620a ] || fail "pmon logs: $("$PMON" logs "$id" | od -c)"
"$PMON" jobs > /dev/null && "$PMON" jobs --json > /dev/null || fail "pmon jobs with such a job"

# The service: a request with bytes that are not UTF-8, and a job that
# leaves a process whose command line is not (its report names it).
client_open c
send_raw c "$(printf '{"jsonrpc":"2.0","id":77,"method":"terminal/list","params":{"x":"\377"}}')"
for i in $(seq 200); do grep -q '"code":-32700' "$t/c.out" && break; sleep 0.05; done
grep -q '"code":-32700' "$t/c.out" || fail "no parse error for bytes that are not UTF-8: $(cat "$t/c.out")"
r=$(call c terminal/create '{"command":"bash","args":["-c","(exec -a $'"'"'\\xffleft'"'"' sleep 1000) & until tr '"'"'\\0'"'"' '"'"' '"'"' < /proc/$!/cmdline | grep -q '"'"'left [1]000'"'"'; do sleep 0.01; done"]}')
jid=$(jget "$r" result.terminalId)
r=$(call c terminal/wait_for_exit '{"terminalId":"'"$jid"'"}')
r=$(call c terminal/report '{"terminalId":"'"$jid"'"}')
case $r in *'left 1000'*) ;; *) fail "the report does not name the leftover: $r" ;; esac
"$PMON" jobs > /dev/null || fail "pmon jobs after that"
client_close c
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
