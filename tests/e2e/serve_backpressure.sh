# SPDX-License-Identifier: Apache-2.0
# outputBackpressure: a job writing 50 MiB through a 1 MiB outputByteLimit
# is read back byte for byte with `since` (its writes wait for the reader),
# by a socket client and by `pmon logs -f`; without it the old semantics
# hold (newest bytes kept, truncated); a reader that stops reading blocks
# only its own job, never the service.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
# 50 MiB of numbered lines with two- and three-byte characters in them.
gen='import sys
out = sys.stdout.buffer
for i in range(50 * 1024 * 1024 // 32):
    out.write(b"%08d \xc3\xa9\xe2\x82\xac abcdefghijklmnop\n" % i)   # 32 bytes
out.flush()'
python3 -c "$gen" | md5sum | cut -d' ' -f1 > "$t/want.md5"

# reader.py SOCKET MODE: creates the job and reads it (MODE since: with
# since + waitMs until over and nothing new; MODE end: waits for its exit,
# then one read) and writes {"md5", "bytes", "truncated", "next", "id"}.
cat > "$t/reader.py" <<'PY'
import hashlib, json, sys
from serve_rpc import Rpc
sock, mode, gen, backpressure = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "on"
call = Rpc(sock).message
p = {"command": "python3", "args": ["-c", gen], "outputByteLimit": 1 << 20}
if backpressure:
    p["outputBackpressure"] = True
tid = call("terminal/create", p)["result"]["terminalId"]
h, got, truncated, since = hashlib.md5(), 0, False, 0
if mode == "end":
    call("terminal/wait_for_exit", {"terminalId": tid})
    r = call("terminal/output", {"terminalId": tid, "since": 0})["result"]
    b = r["output"].encode()
    h.update(b)
    got, truncated, since = len(b), r["truncated"], r["next"]
else:
    while True:
        r = call("terminal/output", {"terminalId": tid, "since": since, "waitMs": 5000})["result"]
        b = r["output"].encode()
        h.update(b)
        got += len(b)
        truncated = truncated or r["truncated"]
        since = r["next"]
        if r["exitStatus"] is not None and not b:
            break
call("terminal/release", {"terminalId": tid})
print(json.dumps({"md5": h.hexdigest(), "bytes": got, "truncated": truncated, "next": since, "id": tid}))
PY

# With backpressure, read with since: every byte, none dropped.
r=$(PYTHONPATH="$(dirname "$0")" python3 "$t/reader.py" "$SOCK" since "$gen" on)
reply_is -m "backpressure: every byte, untruncated, as written" "$r" "bytes=$((50 * 1024 * 1024))" truncated=false \
  "md5=$(cat "$t/want.md5")"

# Without it, the same reader after the job's end gets the newest 1 MiB.
r=$(PYTHONPATH="$(dirname "$0")" python3 "$t/reader.py" "$SOCK" end "$gen" off)
reply_is -m "no backpressure: truncated, the newest 1 MiB up to the end" "$r" truncated=true "next=$((50 * 1024 * 1024))" \
  'bytes<=1048576' "bytes>$((1048576 - 4))"

# pmon logs -f of a job made with backpressure: every byte, in order.
client_open c
py_job=$(jparams outputByteLimit:=1048576 outputBackpressure:=true keep:=true -- python3 -c "$gen")
r=$(call c terminal/create "$py_job")
id=$(jget "$r" result.terminalId)
"$PMON" logs -f --socket "$SOCK" "$id" | md5sum | cut -d' ' -f1 > "$t/logs.md5"
[ "$(cat "$t/logs.md5")" = "$(cat "$t/want.md5")" ] || fail "pmon logs -f did not print every byte the job wrote"

# A reader that stops: its job waits, the service goes on serving others.
r=$(call c terminal/create "$py_job")
id=$(jget "$r" result.terminalId)
for i in $(seq 200); do
  r=$(call c terminal/list '{}')
  reply_is -m "the job whose output nobody reads ended" "$r" "result.terminals[terminalId=$id].status=running"
  [ $i -ge 20 ] && break
  sleep 0.05
done
r=$(call c terminal/output '{"terminalId":"'"$id"'","since":0}')
reply_is -m "the unread job's buffer holds no more than its limit, all kept" "$r" result.truncated=false 'result.output.#b<=1048576'
main_of c "$id"
r=$(call c terminal/release '{"terminalId":"'"$id"'"}')
reply_is -m "release of the waiting job" "$r" result.cleanupVerified=true
! alive "$mpid" "$mst" || fail "release of the waiting job: its main process $mpid is still there"

# Bad values are refused, naming the field.
r=$(call c terminal/create '{"command":"true","outputBackpressure":"yes"}')
reply_error "$r" -32602 outputBackpressure
r=$(call c terminal/create '{"command":"true","outputBackpressure":true,"outputByteLimit":0}')
reply_error "$r" -32602

client_close c
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
