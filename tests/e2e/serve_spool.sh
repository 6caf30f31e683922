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
  jget "$r" result.terminalId
}
spool_of() {  # spool_of ID: the path of a running job's spool file, once its first output made it
  local l p i
  for i in $(seq 200); do
    l=$(call c terminal/list '{}')
    p=$(jget "$l" "result.terminals[terminalId=$1].spoolPath")
    [ "$p" != null ] && break
    sleep 0.05
  done
  [ "$p" != null ] || fail "job $1 wrote, and has no spool file 10 s later: $l"
  printf '%s\n' "$p"
}
out() {  # out ID EXTRA-FIELDS: terminal/output's reply
  call c terminal/output '{"terminalId":"'"$1"'"'"${2:+,$2}"'}'
}
ht_want() {  # ht_want FILE HEAD TAIL: the head and tail view of FILE
  head -c "$2" "$1"
  head -c "$2" "$1" | tail -c 1 | grep -q . && echo
  echo "[... $(($(stat -c %s "$1") - $2 - $3)) bytes left out ...]"
  tail -c "$3" "$1"
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
spool=$(jget "$r" result.job.spoolPath)
[ -f "$spool" ] || fail "no spool file: $r"
l=$(call c terminal/list '{}')
reply_is -m "terminal/list: the spool's path" "$l" "result.terminals[terminalId=$id].spoolPath=$spool"
case $spool in "$XDG_RUNTIME_DIR"/pmon/spool/*) ;; *) fail "the spool is not in the runtime directory: $spool" ;; esac
[ ! -e "$XDG_RUNTIME_DIR/pmon/spool/$dead.0.0000dead.$(stat -L -c %i /proc/self/ns/pid)" ] || fail "a dead service's spool directory was not removed"
[ "$(stat -c %a "$spool")" = 600 ] || fail "the spool file is mode $(stat -c %a "$spool")"
[ "$(stat -c %a "$(dirname "$spool")")" = 700 ] || fail "the spool directory is mode $(stat -c %a "$(dirname "$spool")")"
# The buffer keeps 1 MiB (its plain read is cut); the spool has all 5 MiB.
r=$(out "$id")
reply_is -m "control: the buffer cut at its limit" "$r" result.truncated=true
[ "$(sha256sum < "$spool")" = "$(sha256sum < "$t/want")" ] ||
  fail "the spool is not the job's output byte for byte ($(stat -c %s "$spool") bytes)"

# head and tail: the first and last bytes, the middle marked with its count.
out "$id" '"head":1000,"tail":2000' > "$t/ht"
ht_want "$t/want" 1000 2000 > "$t/ht.want"
report_is -m "head and tail" "$t/ht" "result.output=@$t/ht.want" "result.leftOut=$((5242880 - 3000))" \
  result.total=5242880 result.truncated=false

# Pages by offset and length read back exact bytes, and all of them.
r=$(out "$id" '"offset":123457,"length":65536')
tail -c +123458 "$t/want" | head -c 65536 > "$t/page.want"
reply_is -m "a page" "$r" "result.output=@$t/page.want" result.from=123457 "result.next=$((123457 + 65536))" result.more=false
: > "$t/paged"
off=0
while [ "$off" -lt 5242880 ]; do
  r=$(out "$id" '"offset":'"$off"',"length":1048576')
  jget "$r" result.output | head -c -1 >> "$t/paged"
  off=$(jget "$r" result.next)
done
cmp -s "$t/paged" "$t/want" || fail "paging through the spool does not give back the whole output"

# grep: the matching lines with their line numbers (the first is line 1).
r=$(out "$id" '"grep":"^004321[0-2] "')
awk 'NR >= 43211 && NR <= 43213 { print NR ":" $0 }' "$t/want" > "$t/grep.want"
reply_is -m grep "$r" "result.output=@$t/grep.want" result.matches=3
r=$(out "$id" '"grep":"("')
reply_error "$r" -32602 "'grep'"
r=$(out "$id" '"maxLineBytes":0')
reply_error "$r" -32602 "'maxLineBytes'"
r=$(out "$id" '"head":10,"since":3')
reply_error "$r" -32602

# pmon logs reads the same views.
PMON_SOCKET=$SOCK "$PMON" logs --head 16 --tail 8 "$id" > "$t/logs_ht"
cmp -s "$t/logs_ht" <(ht_want "$t/want" 16 8) || fail "pmon logs --head --tail: $(cat "$t/logs_ht")"
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
rspool=$(jget "$r" result.job.spoolPath)
[ "$(ls "$(dirname "$rspool")" | grep -c "^$(basename "$rspool")")" = 2 ] ||
  fail "rotation left other than 2 files: $(ls "$(dirname "$rspool")")"
[ "$(stat -c %s "$rspool.1")" = 100000 ] && [ "$(stat -c %s "$rspool")" = 50000 ] ||
  fail "rotated files of $(stat -c %s "$rspool.1") and $(stat -c %s "$rspool") bytes"
cat "$rspool.1" "$rspool" | cmp -s - <(tail -c 150000 "$t/want2") || fail "the rotated files are not the newest bytes"
r=$(out "$rid" '"offset":0,"length":1000')
reply_is -m "a read of bytes rotated away" "$r" result.truncated=true result.from=200000 result.next=200000 result.output=
r=$(out "$rid" '"offset":0')
tail -c 150000 "$t/want2" > "$t/rotated.want"
reply_is -m "a read from a rotated-away offset" "$r" result.truncated=true result.from=200000 result.next=350000 \
  "result.output=@$t/rotated.want"
# Line numbers still count from the job's first line.
last=$(tail -n 1 "$t/want2" | cut -c1-7)
r=$(out "$rid" '"grep":"^'"$last"' "')
reply_field "$r" result.output "$(awk 'END { print NR }' "$t/want2"):$(tail -n 1 "$t/want2")
"

# stripAnsi: colours, a title and \r progress go; maxLineBytes cuts a 100k line.
aid=$(job '{"command":"sh","args":["-c","printf '"'"'\\033[1;31mred\\033[0m plain\\n50%%\\r75%%\\r100%%\\n\\033]0;title\\007after\\r\\n'"'"'"]}')
bid=$(job "$(jparams -- python3 -c 'print("x" * 100000); print("short")')")
call c terminal/wait_for_exit '{"terminalId":"'"$aid"'"}' > /dev/null
call c terminal/wait_for_exit '{"terminalId":"'"$bid"'"}' > /dev/null
r=$(out "$aid")
reply_has "$r" result.output $'\033[1;31m'
r=$(out "$aid" '"stripAnsi":true')
reply_is -m stripAnsi "$r" $'result.output=red plain\n100%\nafter\n'
r=$(out "$bid" '"maxLineBytes":100')
reply_is -m maxLineBytes "$r" "result.output=$(head -c 100 /dev/zero | tr '\0' x)[... 99900 bytes]"$'\nshort\n'

# grep answers at most the cap in bytes, the lines that fit whole and
# `more` for the rest: 5000 matching lines of 1.5 KB (7.5 MB) give at most
# maxBytes to terminal/output, at most 64 KiB to pmon mcp's output.
long_py='import sys
for i in range(5000): sys.stdout.write("match %04d %s\n" % (i, "x" * 1490))'
lid=$(job "$(jparams -- python3 -c "$long_py")")
call c terminal/wait_for_exit '{"terminalId":"'"$lid"'"}' > /dev/null
r=$(out "$lid" '"grep":"^match","maxBytes":65536')
reply_is -m "grep with maxBytes 65536" "$r" 'result.output.#b<=65536' result.more=true result.matches=5000
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
  reply_true "$r" result.cleanupVerified
done
[ ! -e "$spool" ] && [ ! -e "$rspool" ] && [ ! -e "$rspool.1" ] || fail "release left spool files: $(ls "$(dirname "$spool")")"

# A job that writes nothing has no spool file: none is made, its spoolPath
# is null; its first byte makes it.
mkfifo "$t/quiet.fifo"
qid=$(job '{"command":"sh","args":["-c","read -r _ < '"$t"'/quiet.fifo; echo late"]}')
l=$(call c terminal/list '{}')
reply_is -m "a job that has written nothing" "$l" "result.terminals[terminalId=$qid].spoolPath=null"
[ ! -e "$(dirname "$spool")/$qid.out" ] || fail "a job that wrote nothing has a spool file"
echo go > "$t/quiet.fifo"
call c terminal/wait_for_exit '{"terminalId":"'"$qid"'"}' > /dev/null
r=$(call c terminal/report '{"terminalId":"'"$qid"'"}')
[ "$(cat "$(jget "$r" result.job.spoolPath)")" = late ] || fail "the spool file made by the first output: $r"
r=$(call c terminal/release '{"terminalId":"'"$qid"'"}')
reply_true "$r" result.cleanupVerified
echo "ok: a job's spool file is made with its first output"

# A spool file that cannot be made (the directory made immutable before the
# job's first output): the job runs on, its views read its buffer, and
# spoolError says why.
sdir=$(dirname "$spool")
mkfifo "$t/imm.fifo"
iid=$(job '{"command":"sh","args":["-c","read -r _ < '"$t"'/imm.fifo; echo kept in memory"]}')
if chattr +i "$sdir" 2> /dev/null; then
  echo go > "$t/imm.fifo"
  call c terminal/wait_for_exit '{"terminalId":"'"$iid"'"}' > /dev/null
  chattr -i "$sdir"
  r=$(out "$iid" '"tail":100')
  reply_is -m "the view of a job whose spool file could not be made" "$r" "result.output=kept in memory
"
  r=$(call c terminal/report '{"terminalId":"'"$iid"'"}')
  reply_is -m "the report of a job whose spool file could not be made" "$r" result.job.spoolPath=null "result.job.spoolError~cannot make"
  echo "ok: a spool file that cannot be made: the output is read from memory, spoolError says why"
else
  echo go > "$t/imm.fifo"  # (a file system without the immutable flag)
  call c terminal/wait_for_exit '{"terminalId":"'"$iid"'"}' > /dev/null
  echo "note: $sdir cannot be made immutable here; a spool file that cannot be made was not tried"
fi
r=$(call c terminal/release '{"terminalId":"'"$iid"'"}')
reply_true "$r" result.cleanupVerified

# A closed session's jobs are stopped and said gone first; their files are
# removed when the service has time, while it runs on.
ids=()
for i in 1 2 3; do ids+=("$(job '{"command":"sh","args":["-c","echo closing; exec sleep 1000"],"sessionId":"closing"}')"); done
cspools=()
for j in "${ids[@]}"; do cspools+=("$(spool_of "$j")"); done
for f in "${cspools[@]}"; do [ -e "$f" ] || fail "a session's job has no spool file at $f"; done
r=$(call c session/close '{"sessionId":"closing"}')
reply_is -m "session/close" "$r" result.stopping=3
for i in $(seq 200); do
  left=0
  for f in "${cspools[@]}"; do [ -e "$f" ] && left=$((left + 1)); done
  [ "$left" = 0 ] && break
  sleep 0.05
done
[ "$left" = 0 ] || fail "$left of a closed session's spool files were left while the service ran: $(ls "$(dirname "${cspools[0]}")" | tr "\n" " ")"
kill -0 "$SERVE_PID" || fail "the service ended"
echo "ok: a closed session's spool files removed while the service runs"

# The service's end removes every job's files, a kept job's too (it stops them all).
kid=$(job '{"command":"sh","args":["-c","echo kept; exec sleep 1000"],"keep":true}')
sid=$(job '{"command":"sh","args":["-c","echo gone; exec sleep 1000"]}')
kspool=$(spool_of "$kid")
sspool=$(spool_of "$sid")
for i in $(seq 200); do [ -s "$kspool" ] && [ -s "$sspool" ] && break; sleep 0.05; done
[ -s "$kspool" ] && [ -s "$sspool" ] || fail "the running jobs' spool files did not fill"
client_close c
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" || fail "pmon serve exited $?"
[ ! -e "$sspool" ] && [ ! -e "$kspool" ] || fail "the service's end left a job's spool file"
[ ! -e "$(dirname "$kspool")" ] || fail "the service's end left its spool directory"
pass
