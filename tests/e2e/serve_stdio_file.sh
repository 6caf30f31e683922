# SPDX-License-Identifier: Apache-2.0
# pmon serve --stdio and pmon mcp with stdin a regular file or /dev/null,
# which epoll cannot watch: the requests in the file are read to its end
# and answered like those of a pipe, then the end of the file stops the
# service as EOF does; /dev/null is an end at once. Exit 0 each time.
. "$(dirname "$0")/common.inc"

# exits_ok NAME: the pmon started last ($!) exits 0 within 20 s.
exits_ok() {
  local pid=$! st i rc=0
  record_pid "$pid"
  st=$(start_time_of "$pid")
  for i in $(seq 400); do
    alive "$pid" "$st" || break
    sleep 0.05
  done
  alive "$pid" "$st" && fail "$1: pmon still runs after 20 s (stdin at its end)"
  wait "$pid" || rc=$?
  [ $rc = 0 ] || fail "$1: exit $rc: $(cat "$t/err")"
}

# Requests in a file: a job, the list of jobs, a line that is not JSON.
{
  echo '{"jsonrpc":"2.0","id":1,"method":"terminal/create","params":{"command":"sh","args":["-c","echo hi; exec sleep 1000"]}}'
  echo '{"jsonrpc":"2.0","id":2,"method":"terminal/list","params":{}}'
  echo 'not json'
  echo '{"jsonrpc":"2.0","id":3,"method":"terminal/list","params":{}}'
} > "$t/requests"
"$PMON" serve --stdio -q < "$t/requests" > "$t/out" 2> "$t/err" &
exits_ok "serve --stdio < file"
tid=$(jget "lines:$t/out" '[id=1].result.terminalId')
report_is -m "the replies to the file's requests" "lines:$t/out" '[id=1].result.terminalId^=t' '[id=1].result.terminalId.#=17' \
  "[id=2].result.terminals.*.terminalId=[\"$tid\"]" '[id=null].error.code=-32700' '[id=3].result.terminals.#=1'

"$PMON" serve --stdio -q < /dev/null > "$t/out" 2> "$t/err" &
exits_ok "serve --stdio < /dev/null"
[ ! -s "$t/out" ] || fail "serve --stdio < /dev/null said: $(cat "$t/out")"

{
  echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
  echo '{"jsonrpc":"2.0","method":"notifications/initialized"}'
  echo '{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}'
} > "$t/mcp_requests"
"$PMON" mcp < "$t/mcp_requests" > "$t/out" 2> "$t/err" &
exits_ok "mcp < file"
report_is -m "mcp's replies to the file's requests" "lines:$t/out" '[id=1].result.serverInfo!=(absent)' \
  '[id=2].result.tools[name=run]!=(absent)'

"$PMON" mcp < /dev/null > "$t/out" 2> "$t/err" &
exits_ok "mcp < /dev/null"
pass
