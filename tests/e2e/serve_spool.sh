# SPDX-License-Identifier: Apache-2.0
# A job's whole output in its spool file: every byte, past outputByteLimit,
# byte-exact; terminal/output's head and tail, offset and length, grep,
# stripAnsi and maxLineBytes read from it; a full spool is rotated (two
# files at most, the bytes rotated away said so); the files are 0600 and
# go with the job (release) and with the service (unless the job is kept).
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

export XDG_RUNTIME_DIR=$t/xdg
mkdir -m 700 "$XDG_RUNTIME_DIR"
# What a service killed with SIGKILL left is removed by the next one's first
# spool.
sh -c 'exit 0' & dead=$!
wait "$dead"
mkdir -p -m 700 "$XDG_RUNTIME_DIR/pmon/spool/$dead.0.0000dead.$(stat -L -c %i /proc/self/ns/pid)"
chmod 700 "$XDG_RUNTIME_DIR/pmon" "$XDG_RUNTIME_DIR/pmon/spool"
echo old > "$XDG_RUNTIME_DIR/pmon/spool/$dead.0.0000dead.$(stat -L -c %i /proc/self/ns/pid)/tdead.out"
serve_start
client_open c
job() {  # job PARAMS-JSON -> terminal id
  local r
  r=$(call c terminal/create "$1")
  jf "$r" 'm["result"]["terminalId"]'
}
py_params() {  # py_params PYTHON-CODE [EXTRA-FIELDS]
  python3 -c 'import json,sys; p={"command":"python3","args":["-c",sys.argv[1]]}; p.update(json.loads(sys.argv[2])); print(json.dumps(p))' \
    "$1" "${2:-{\}}"
}
out() {  # out ID EXTRA-FIELDS: terminal/output's reply
  call c terminal/output '{"terminalId":"'"$1"'"'"${2:+,$2}"'}'
}

# 5 MiB of numbered lines of many lengths, exactly 5242880 bytes.
cat > "$t/gen.py" <<'PY'
import sys
def data(size):
    parts, n, i = [], 0, 0
    while n < size:
        line = b"%07d " % i + bytes([97 + i % 26]) * (i % 97) + b"\n"
        parts.append(line); n += len(line); i += 1
    return b"".join(parts)[:size]
if __name__ == "__main__":
    sys.stdout.buffer.write(data(int(sys.argv[1])))
PY
id=$(job '{"command":"python3","args":["'"$t"'/gen.py","5242880"],"outputByteLimit":1048576}')
call c terminal/wait_for_exit '{"terminalId":"'"$id"'"}' > /dev/null
python3 "$t/gen.py" 5242880 > "$t/want"
r=$(call c terminal/report '{"terminalId":"'"$id"'"}')
spool=$(jf "$r" 'm["result"]["job"]["spoolPath"]')
[ -f "$spool" ] || fail "no spool file: $r"
l=$(call c terminal/list '{}')
[ "$(jf "$l" '[x["spoolPath"] for x in m["result"]["terminals"] if x["terminalId"] == "'"$id"'"][0]')" = "$spool" ] ||
  fail "terminal/list does not give the spool's path: $l"
case $spool in "$XDG_RUNTIME_DIR"/pmon/spool/*) ;; *) fail "the spool is not in the runtime directory: $spool" ;; esac
[ ! -e "$XDG_RUNTIME_DIR/pmon/spool/$dead.0.0000dead.$(stat -L -c %i /proc/self/ns/pid)" ] || fail "a dead service's spool directory was not removed"
[ "$(stat -c %a "$spool")" = 600 ] || fail "the spool file is mode $(stat -c %a "$spool")"
[ "$(stat -c %a "$(dirname "$spool")")" = 700 ] || fail "the spool directory is mode $(stat -c %a "$(dirname "$spool")")"
# The buffer keeps 1 MiB (its plain read is cut); the spool has all 5 MiB.
r=$(out "$id")
[ "$(jf "$r" 'm["result"]["truncated"]')" = true ] || fail "control: the buffer was not cut at its limit"
[ "$(sha256sum < "$spool")" = "$(sha256sum < "$t/want")" ] ||
  fail "the spool is not the job's output byte for byte ($(stat -c %s "$spool") bytes)"

# head and tail: the first and last bytes, the middle marked with its count.
out "$id" '"head":1000,"tail":2000' > "$t/ht"
python3 - "$t/want" "$t/ht" <<'PY' || fail "head and tail are not the first and last bytes with the marker"
import json, sys
want = open(sys.argv[1], "rb").read()
m = json.loads(open(sys.argv[2]).read())["result"]
left = len(want) - 3000
head = want[:1000].decode()
exp = head + ("" if head.endswith("\n") else "\n") + "[... %d bytes left out ...]\n" % left + want[-2000:].decode()
assert m["output"] == exp, repr(m["output"][:200])
assert m["leftOut"] == left and m["total"] == len(want) and m["truncated"] is False, m
PY

# Pages by offset and length read back exact bytes, and all of them.
r=$(out "$id" '"offset":123457,"length":65536')
python3 - "$t/want" "$r" <<'PY' || fail "a page is not the bytes at its offset"
import json, sys
want = open(sys.argv[1], "rb").read()
m = json.loads(sys.argv[2])["result"]
assert m["output"].encode() == want[123457:123457 + 65536]
assert m["from"] == 123457 and m["next"] == 123457 + 65536 and m["more"] is False, m
PY
: > "$t/paged"
off=0
while [ "$off" -lt 5242880 ]; do
  r=$(out "$id" '"offset":'"$off"',"length":1048576')
  jf "$r" 'm["result"]["output"]' | head -c -1 >> "$t/paged"
  off=$(jf "$r" 'm["result"]["next"]')
done
cmp -s "$t/paged" "$t/want" || fail "paging through the spool does not give back the whole output"

# grep: the matching lines with their line numbers (the first is line 1).
r=$(out "$id" '"grep":"^004321[0-2] "')
python3 - "$t/want" "$r" <<'PY' || fail "grep: wrong lines or line numbers: $(jf "$r" 'm["result"]["output"][:300]')"
import json, sys
lines = open(sys.argv[1], "rb").read().decode().split("\n")
m = json.loads(sys.argv[2])["result"]
exp = "".join("%d:%s\n" % (n + 1, lines[n]) for n in (43210, 43211, 43212))
assert m["output"] == exp and m["matches"] == 3, (m["output"], exp)
PY
r=$(out "$id" '"grep":"("')
[ "$(jf "$r" 'm["error"]["code"]')" = -32602 ] && jf "$r" 'm["error"]["message"]' | grep -q "'grep'" ||
  fail "a bad regular expression is not an invalid-params error naming grep: $r"
r=$(out "$id" '"maxLineBytes":0')
[ "$(jf "$r" 'm["error"]["code"]')" = -32602 ] && jf "$r" 'm["error"]["message"]' | grep -q "'maxLineBytes'" ||
  fail "maxLineBytes 0 is not an invalid-params error naming it: $r"
r=$(out "$id" '"head":10,"since":3')
[ "$(jf "$r" 'm["error"]["code"]')" = -32602 ] || fail "head with since: $r"

# pmon logs reads the same views.
PMON_SOCKET=$SOCK "$PMON" logs --head 16 --tail 8 "$id" > "$t/logs_ht"
python3 - "$t/want" "$t/logs_ht" <<'PY' || fail "pmon logs --head --tail: $(cat "$t/logs_ht")"
import sys
want, got = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
head = want[:16]
exp = head + (b"" if head.endswith(b"\n") else b"\n") + b"[... %d bytes left out ...]\n" % (len(want) - 24) + want[-8:]
assert got == exp, got
PY
PMON_SOCKET=$SOCK "$PMON" logs --grep '^0000003 ' "$id" > "$t/logs_grep"
[ "$(cat "$t/logs_grep")" = "4:0000003 ddd" ] || fail "pmon logs --grep: $(cat "$t/logs_grep")"
PMON_SOCKET=$SOCK "$PMON" logs "$id" | cmp -s - <(tail -c 1048576 "$t/want") ||
  fail "pmon logs without a view is no longer the buffer's bytes"

# Rotation: a spool limit of 100000 and 350000 bytes: two files at most,
# the newest 150000 bytes kept, the rest said to be rotated away.
rid=$(job '{"command":"python3","args":["'"$t"'/gen.py","350000"],"spoolByteLimit":100000}')
call c terminal/wait_for_exit '{"terminalId":"'"$rid"'"}' > /dev/null
python3 "$t/gen.py" 350000 > "$t/want2"
r=$(call c terminal/report '{"terminalId":"'"$rid"'"}')
rspool=$(jf "$r" 'm["result"]["job"]["spoolPath"]')
[ "$(ls "$(dirname "$rspool")" | grep -c "^$(basename "$rspool")")" = 2 ] ||
  fail "rotation left other than 2 files: $(ls "$(dirname "$rspool")")"
[ "$(stat -c %s "$rspool.1")" = 100000 ] && [ "$(stat -c %s "$rspool")" = 50000 ] ||
  fail "rotated files of $(stat -c %s "$rspool.1") and $(stat -c %s "$rspool") bytes"
cat "$rspool.1" "$rspool" | cmp -s - <(tail -c 150000 "$t/want2") || fail "the rotated files are not the newest bytes"
r=$(out "$rid" '"offset":0,"length":1000')
[ "$(jf "$r" '[m["result"]["truncated"], m["result"]["from"], m["result"]["next"], m["result"]["output"]]')" = \
  '[true, 200000, 200000, ""]' ] ||
  fail "a read of bytes rotated away does not say so: $(jf "$r" '{k: v for k, v in m["result"].items() if k != "output"}')"
r=$(out "$rid" '"offset":0')
[ "$(jf "$r" '[m["result"]["truncated"], m["result"]["from"], m["result"]["next"]]')" = '[true, 200000, 350000]' ] ||
  fail "a read from a rotated-away offset: $(jf "$r" '{k: v for k, v in m["result"].items() if k != "output"}')"
[ "$(jf "$r" 'm["result"]["output"]')" = "$(tail -c 150000 "$t/want2")" ] || fail "the read after rotation"
# Line numbers still count from the job's first line.
last=$(tail -n 1 "$t/want2" | cut -c1-7)
r=$(out "$rid" '"grep":"^'"$last"' "')
python3 - "$t/want2" "$r" <<'PY' || fail "grep after rotation: line numbers moved: $(jf "$r" 'm["result"]["output"][:80]')"
import json, sys
lines = open(sys.argv[1], "rb").read().decode().split("\n")
if lines[-1] == "":
    lines.pop()
m = json.loads(sys.argv[2])["result"]
assert m["output"] == "%d:%s\n" % (len(lines), lines[-1]), m["output"]
PY

# stripAnsi: colours, a title and \r progress go; maxLineBytes cuts a 100k line.
aid=$(job '{"command":"sh","args":["-c","printf '"'"'\\033[1;31mred\\033[0m plain\\n50%%\\r75%%\\r100%%\\n\\033]0;title\\007after\\r\\n'"'"'"]}')
bid=$(job "$(py_params 'print("x" * 100000); print("short")')")
call c terminal/wait_for_exit '{"terminalId":"'"$aid"'"}' > /dev/null
call c terminal/wait_for_exit '{"terminalId":"'"$bid"'"}' > /dev/null
r=$(out "$aid")
jf "$r" 'm["result"]["output"]' | grep -q $'\033\\[1;31m' || fail "control: the raw output has no colour codes: $r"
r=$(out "$aid" '"stripAnsi":true')
[ "$(jf "$r" 'm["result"]["output"] == "red plain\n100%\nafter\n"')" = true ] || fail "stripAnsi: $r"
r=$(out "$bid" '"maxLineBytes":100')
[ "$(jf "$r" 'm["result"]["output"] == "x" * 100 + "[... 99900 bytes]\nshort\n"')" = true ] ||
  fail "maxLineBytes: $(jf "$r" 'm["result"]["output"][-60:]')"

# grep answers at most the cap in bytes, the lines that fit whole and
# `more` for the rest: 5000 matching lines of 1.5 KB (7.5 MB) give at most
# maxBytes to terminal/output, at most 64 KiB to pmon mcp's output.
long_py='import sys
for i in range(5000): sys.stdout.write("match %04d %s\n" % (i, "x" * 1490))'
lid=$(job "$(py_params "$long_py")")
call c terminal/wait_for_exit '{"terminalId":"'"$lid"'"}' > /dev/null
r=$(out "$lid" '"grep":"^match","maxBytes":65536')
[ "$(jf "$r" 'len(m["result"]["output"].encode()) <= 65536 and m["result"]["more"] and m["result"]["matches"] == 5000')" = true ] ||
  fail "grep with maxBytes 65536: $(jf "$r" '[len(m["result"]["output"].encode()), m["result"].get("more"), m["result"].get("matches")]')"
PYTHONPATH="$(dirname "$0")" python3 - "$PMON" "$long_py" > "$t/mcp.out" 2>&1 <<'PY' || fail "pmon mcp's grep: $(cat "$t/mcp.out")"
import shlex, sys
from mcp_stdio import Mcp
mcp = Mcp(sys.argv[1])
jid = mcp.tool("start", {"command": "exec python3 -c " + shlex.quote(sys.argv[2])})["structuredContent"]["id"]
assert mcp.tool("wait", {"id": jid, "timeout_s": 60})["structuredContent"]["exit_code"] == 0
o = mcp.tool("output", {"id": jid, "grep": "^match"})["structuredContent"]
assert len(o["output"].encode()) <= 65536 and o["more"] and o["matches"] == 5000, (len(o["output"]), o["more"], o["matches"])
mcp.close()
PY
echo "ok: grep of 7.5 MB of matching lines: at most 64 KiB, more: true"

# Release removes the job's files (and the rotated one).
for j in "$id" "$rid"; do
  r=$(call c terminal/release '{"terminalId":"'"$j"'"}')
  [ "$(jf "$r" 'm["result"]["cleanupVerified"]')" = true ] || fail "release: $r"
done
[ ! -e "$spool" ] && [ ! -e "$rspool" ] && [ ! -e "$rspool.1" ] || fail "release left spool files: $(ls "$(dirname "$spool")")"

# The service's end removes every job's files, a kept job's too (it stops them all).
kid=$(job '{"command":"sh","args":["-c","echo kept; exec sleep 1000"],"keep":true}')
sid=$(job '{"command":"sh","args":["-c","echo gone; exec sleep 1000"]}')
l=$(call c terminal/list '{}')
kspool=$(jf "$l" '[x["spoolPath"] for x in m["result"]["terminals"] if x["terminalId"] == "'"$kid"'"][0]')
sspool=$(jf "$l" '[x["spoolPath"] for x in m["result"]["terminals"] if x["terminalId"] == "'"$sid"'"][0]')
for i in $(seq 200); do [ -s "$kspool" ] && [ -s "$sspool" ] && break; sleep 0.05; done
[ -s "$kspool" ] && [ -s "$sspool" ] || fail "the running jobs' spool files did not fill"
client_close c
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
[ ! -e "$sspool" ] && [ ! -e "$kspool" ] || fail "the service's end left a job's spool file"
[ ! -e "$(dirname "$kspool")" ] || fail "the service's end left its spool directory"
pass
