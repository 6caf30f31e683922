# SPDX-License-Identifier: Apache-2.0
# A job's output: one stream for stdout and stderr; past outputByteLimit the
# newest bytes are kept, cut where a character starts; reads with `since`
# return every byte once; what a job wrote just before it was killed is
# there; invalid UTF-8 reads as U+FFFD.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
client_open c
job() {  # job PARAMS-JSON -> terminal id
  local r
  r=$(call c terminal/create "$1")
  jget "$r" result.terminalId
}
py_params() { jparams "${2:-{\}}" -- python3 -c "$1"; }  # py_params PYTHON-CODE [EXTRA-FIELDS]

# 10 MiB of one-, two- and three-byte characters; the limit falls inside one.
gen='import sys
chunk = ("a\u00e9\u20ac" * 1000).encode()   # 6000 bytes
out = sys.stdout.buffer
for i in range(1748):                        # 10488000 bytes
    out.write(chunk)
out.write(b"\xff tail\n")                  # an invalid byte near the end
out.flush()'
limit=1000001
id=$(job "$(py_params "$gen" '{"outputByteLimit":'$limit'}')")
call c terminal/wait_for_exit '{"terminalId":"'"$id"'"}' > /dev/null
call c terminal/output '{"terminalId":"'"$id"'"}' > "$t/big"
python3 - "$gen" "$limit" "$t/big" <<'PY' || fail "the kept output is not the newest bytes on a character boundary"
import json, subprocess, sys
gen, limit, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
full = subprocess.run([sys.executable, "-c", gen], capture_output=True, check=True).stdout
m = json.loads(open(path).read())["result"]
assert m["truncated"] is True, "not truncated"
kept = full[-limit:]
while kept[0] & 0xC0 == 0x80:   # a cut character goes whole
    kept = kept[1:]
want = kept.decode("utf-8", errors="replace")
assert m["output"] == want, "output differs (%d vs %d chars)" % (len(m["output"]), len(want))
assert len(m["output"].encode()) <= limit + 2   # U+FFFD is 3 bytes for the one invalid byte
assert m["next"] == len(full), (m["next"], len(full))
PY

# Reads with `since` while the job writes: every byte once, in order.
gen2='import sys, time
for i in range(3000):
    sys.stdout.write("line %d \u00e9\n" % i)
    if i % 100 == 0:
        sys.stdout.flush(); time.sleep(0.01)
    if i % 7 == 0: sys.stderr.write("err %d\n" % i)'
id=$(job "$(py_params "$gen2")")
: > "$t/got"
since=0
for i in $(seq 10000); do
  r=$(call c terminal/output '{"terminalId":"'"$id"'","since":'"$since"'}')
  jget "$r" result.output | head -c -1 >> "$t/got"  # jget adds a newline
  reply_is -m "a since read was truncated" "$r" result.truncated=false
  since=$(jget "$r" result.next)
  json_holds "$r" 'result.exitStatus!=null' 'result.exitStatus!=(absent)' result.output= && break
done
python3 - "$gen2" "$t/got" <<'PY' || fail "since reads did not return each byte once"
import sys
gen, path = sys.argv[1], sys.argv[2]
got = open(path, encoding="utf-8").read()
lines = got.splitlines()
out = [l for l in lines if l.startswith("line ")]
err = [l for l in lines if l.startswith("err ")]
assert out == ["line %d \u00e9" % i for i in range(3000)], "stdout lines lost, repeated or reordered"
assert err == ["err %d" % i for i in range(0, 3000, 7)], "stderr lines lost, repeated or reordered"
assert len(lines) == len(out) + len(err)
PY

# Written just before the kill: all of it is kept (300 KB through a 64 KiB pipe).
id=$(job "$(jparams -- sh -c \
  'head -c 300000 /dev/zero | tr "\0" x; echo END; touch '"$t"'/ready; exec sleep 1000')")
for i in $(seq 400); do [ -f "$t/ready" ] && break; sleep 0.05; done
main_of c "$id"
r=$(call c terminal/kill '{"terminalId":"'"$id"'"}')
reply_is -m "kill" "$r" result.cleanupVerified=true
! alive "$mpid" "$mst" || fail "kill: the job's main process $mpid is still there"
r=$(call c terminal/output '{"terminalId":"'"$id"'"}')
reply_is -m "bytes written before the kill" "$r" 'result.output.#=300004' $'result.output$=xEND\n'

client_close c
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
pass
