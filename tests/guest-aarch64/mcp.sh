# SPDX-License-Identifier: Apache-2.0
# pmon mcp on aarch64, driven over two fifos: initialize, tools/call of run
# (a command that leaves a setsid daemon: its exit code and the daemon
# stopped) and of start (a job whose tree holds a daemon); when the client
# closes pmon mcp's stdin, the job's whole tree is gone and pmon mcp exits.
. "$(dirname "$0")/common.inc"

mkfifo "$t/in" "$t/out"
"$PMON" mcp < "$t/in" > "$t/out" 2> "$t/err" &
mp=$!
exec 3> "$t/in" 4< "$t/out"

# rpc ID METHOD PARAMS: sends the request; its reply (the line with its id;
# notifications before it are passed over) in $reply.
rpc() {
  echo '{"jsonrpc":"2.0","id":'"$1"',"method":"'"$2"'","params":'"$3"'}' >&3
  while :; do
    read -t 120 -r reply <&4 || fail "no reply to $2 (id $1): $(cat "$t/err")"
    case $reply in *'"id":'"$1"','* | *'"id":'"$1"'}'*) return 0 ;; esac
  done
}
tool() {  # ID NAME ARGUMENTS
  rpc "$1" tools/call '{"name":"'"$2"'","arguments":'"$3"'}'
  case $reply in *'"isError":true'*) fail "$2 answered an error: $reply" ;; esac
}
has() { case $reply in *"$1"*) return 0 ;; esac; fail "$2: no $1 in: $reply"; }
# Stdin as the text of a JSON string (quotes, backslashes and newlines escaped).
json_text() { sed 's/\\/\\\\/g; s/"/\\"/g' | awk '{ printf "%s\\n", $0 }'; }

rpc 1 initialize '{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"guest","version":"1"}}'
has '"serverInfo"' initialize
echo '{"jsonrpc":"2.0","method":"notifications/initialized"}' >&3
ok "initialize"

line=$( (tree_line "$t/a"; echo "exit 7") | json_text)
tool 2 run '{"command":"'"$line"'","timeout_s":120}'
has '"exit_code":7' run; has '"cleanup_verified":true' run
tree_gone "$t/a" "after the run tool returned"
ok "run: exit code 7, its setsid daemon and child stopped"

line=$( (tree_line "$t/b"; echo "sleep 1000") | json_text)
tool 3 start '{"command":"'"$line"'"}'
has '"id":"t' start
wait_until 60 [ -f "$t/b" ] || fail "the started job did not start its tree"
exec 3>&-
rc=0; wait "$mp" || rc=$?
tree_gone "$t/b" "after the client closed pmon mcp's stdin (pmon mcp exit $rc)"
ok "start: the job's tree gone once the client closed, pmon mcp exited $rc"
