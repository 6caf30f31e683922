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
python3 - "$t/out" <<'EOF' || fail "the replies to the file's requests: $(cat "$t/out")"
import json, sys
msgs = [json.loads(l) for l in open(sys.argv[1])]
by_id = {m.get("id"): m for m in msgs if "method" not in m}
tid = by_id[1]["result"]["terminalId"]
assert tid.startswith("t") and len(tid) == 17, by_id
assert [t["terminalId"] for t in by_id[2]["result"]["terminals"]] == [tid], by_id[2]
assert by_id[None]["error"]["code"] == -32700, by_id[None]
assert len(by_id[3]["result"]["terminals"]) == 1, by_id[3]
EOF

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
python3 - "$t/out" <<'EOF' || fail "mcp's replies to the file's requests: $(cat "$t/out")"
import json, sys
by_id = {m.get("id"): m for m in map(json.loads, open(sys.argv[1]))}
assert "serverInfo" in by_id[1]["result"], by_id[1]
assert any(t["name"] == "run" for t in by_id[2]["result"]["tools"]), by_id[2]
EOF

"$PMON" mcp < /dev/null > "$t/out" 2> "$t/err" &
exits_ok "mcp < /dev/null"
pass
