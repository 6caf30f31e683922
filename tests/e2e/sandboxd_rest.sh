#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pmon sandboxd's REST API, driven with curl on 127.0.0.1: every endpoint
# and status of the spec, every way out of the root refused with 403, a
# 1 GiB PUT streamed to disk in bounded memory, GETs during PUTs that see the
# old or the new file whole, and SIGTERM: health 503, the request in flight
# finishes, exit 0.
. "$(dirname "$0")/common.inc"
command -v curl > /dev/null || skip "curl is not installed"
[ -x "$(dirname "$PMON")/pmon-sandboxd" ] || skip "pmon-sandboxd was not built (no cpp-httplib)"

# Its own help in full, and a line in pmon's.
"$PMON" sandboxd --help > "$t/help"
for o in --listen-host --grpc-port --rest-port --root-dir --metadata-env-prefix --shutdown-timeout \
         --http-idle-timeout --stream-chunk-size --version; do
  grep -q -- "$o" "$t/help" || fail "pmon sandboxd --help does not name $o"
done
"$PMON" --help | grep -q "pmon sandboxd" || fail "pmon --help does not list sandboxd"
rc=0; "$PMON" sandboxd --rest-port 9090 --grpc-port 9090 2> "$t/err" || rc=$?
[ $rc = 125 ] && grep -q "must differ" "$t/err" || fail "equal ports: $rc $(cat "$t/err")"

# Starts the daemon on a free port with root $t/ws: $pid, $B (the API's URL).
start_daemon() {
  local try i
  for try in 1 2 3 4 5; do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    SANDBOX_ID=sb-1 SANDBOX_API_TOKEN=hidden NOT_SANDBOX=no "$PMON" sandboxd --listen-host 127.0.0.1 \
      --rest-port "$port" --grpc-port 0 --root-dir "$t/ws" "$@" 2> "$t/err" &
    pid=$!
    record_pid "$pid"
    B=http://127.0.0.1:$port/v1
    for i in $(seq 400); do
      curl -sf "$B/health" > /dev/null 2>&1 && return 0
      kill -0 "$pid" 2> /dev/null || break
      sleep 0.05
    done
    wait "$pid" || true
    grep -q "cannot listen" "$t/err" || fail "the daemon did not start: $(cat "$t/err")"
  done
  fail "no free port in 5 tries: $(cat "$t/err")"
}

# status METHOD PATH [curl args...]: the HTTP status; the body in $t/body.
status() {
  local m=$1 p=$2
  shift 2
  curl -s --path-as-is -X "$m" -o "$t/body" -w '%{http_code}' "$@" "$B$p"
}
# expect CODE ERROR-CODE METHOD PATH [curl args...]: the status, and the spec's error body.
expect() {
  local want=$1 code=$2 got
  shift 2
  got=$(status "$@")
  [ "$got" = "$want" ] || fail "$1 $2: status $got, want $want: $(cat "$t/body")"
  [ "$code" = - ] || report_is -m "$1 $2" "$t/body" "code=$code" 'message^='  # a message, a string
}

start_daemon
grep -Eq "process service on 127\.0\.0\.1:[0-9]+, REST API on 127\.0\.0\.1:$port; sandbox root " "$t/err" ||
  fail "the daemon does not say where it serves: $(cat "$t/err")"

# Health and metadata.
reply_is -m health "$(curl -s "$B/health")" status=ok
curl -s "$B/metadata" > "$t/meta"
report_is -m metadata "$t/meta" 'env={"SANDBOX_ID": "sb-1"}'

# PUT (raw, with parents and a mode; multipart), GET, HEAD, listing.
printf 'print("hi")\n' > "$t/main.py"
expect 204 - PUT "/files/src/main.py?mode=0755" --data-binary @"$t/main.py"
[ "$(stat -c %a "$t/ws/src/main.py")" = 755 ] || fail "mode: $(stat -c %a "$t/ws/src/main.py")"
ct=$(curl -s -o "$t/got" -w '%{content_type}' "$B/files/src/main.py")
cmp -s "$t/got" "$t/main.py" && [ "$ct" = application/octet-stream ] || fail "GET: $ct $(cat "$t/got")"
curl -s -I "$B/files/src/main.py" > "$t/head"
grep -qi '^content-length: 12' "$t/head" && grep -qi '^last-modified: ' "$t/head" || fail "HEAD: $(cat "$t/head")"
[ "$(curl -s -I -o /dev/null -w '%{http_code}' "$B/files/nothing")" = 404 ] || fail "HEAD of a missing file"
expect 204 - PUT /files/src/form.txt -F "file=@$t/main.py" -F "other=x"
cmp -s "$t/ws/src/form.txt" "$t/main.py" || fail "multipart PUT: $(cat "$t/ws/src/form.txt")"
expect 400 INVALID_ARGUMENT PUT /files/src/form2.txt -F "other=x"
[ ! -e "$t/ws/src/form2.txt" ] || fail "a multipart PUT without a file part wrote a file"
expect 200 - GET /files/src
report_is -m listing "$t/body" path=/src 'entries.*.name=["form.txt", "main.py"]' entries.1.type=file entries.1.size=12 \
  entries.1.mode=0755 'entries.1.modified_at=~^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$'
expect 200 - GET /files//src
report_is -m "listing of //src" "$t/body" path=/src
expect 200 - GET /files/
report_is -m "root listing" "$t/body" path=/ entries.0.type=directory entries.0.name=src
for bad in 0999 644 0644x 00644; do
  expect 400 INVALID_ARGUMENT PUT "/files/m?mode=$bad" --data-binary x
done
[ ! -e "$t/ws/m" ] || fail "a PUT with a bad mode wrote a file"
expect 400 INVALID_ARGUMENT PUT /files/src --data-binary x

# DELETE: a file, a non-empty directory (409 without recursive), a tree.
expect 404 NOT_FOUND GET /files/missing
expect 404 NOT_FOUND DELETE /files/missing
expect 409 CONFLICT DELETE /files/src
expect 204 - DELETE /files/src/form.txt
expect 204 - DELETE "/files/src?recursive=true"
[ ! -e "$t/ws/src" ] || fail "recursive DELETE left $(ls "$t/ws/src")"
expect 400 INVALID_ARGUMENT DELETE "/files/x?recursive=maybe"

# Ways out of the root: all 403, nothing outside read, written or removed.
echo outside > "$t/secret"
mkdir -p "$t/ws/d"
ln -s ../secret "$t/ws/rel"
ln -s "$t/secret" "$t/ws/abs"
ln -s "$t" "$t/ws/up"
ln -s ../.. "$t/ws/d/upup"
for p in /files/../secret /files/d/../../secret /files/..%2fsecret /files/%2e%2e/secret /files/rel /files/abs \
         /files/up/secret /files/d/upup/secret /files/up "/files/rel%00" "/files/d%00/../../secret"; do
  expect 403 PERMISSION_DENIED GET "$p"
done
expect 403 PERMISSION_DENIED PUT /files/up/planted --data-binary x
expect 403 PERMISSION_DENIED PUT /files/rel --data-binary overwritten
expect 403 PERMISSION_DENIED PUT /files/d/upup/planted -F "file=@$t/main.py"
expect 403 PERMISSION_DENIED DELETE "/files/up?recursive=true"
expect 403 PERMISSION_DENIED DELETE /files/abs
expect 403 PERMISSION_DENIED DELETE "/files/../secret"
[ "$(cat "$t/secret")" = outside ] && [ ! -e "$t/planted" ] || fail "something outside the root changed"
# An escaping link is left out of its directory's listing.
expect 200 - GET /files/
report_is -m "listing with escaping links" "$t/body" 'entries{name=abs}.#=0' 'entries{name=d}.#>=1'

# Bad requests get 4xx and the service goes on.
long=$(printf 'a/%.0s' $(seq 3000))
got=$(status GET "/files/$long")
case $got in 4*) ;; *) fail "an over-long path: $got" ;; esac
expect 413 - GET /files/ --data-binary @"$t/main.py" -H "Content-Length: 10000000"
exec 3<> "/dev/tcp/127.0.0.1/$port"
printf 'NOT HTTP AT ALL\r\n\r\n' >&3
timeout 10 cat <&3 > "$t/garbage" || true
exec 3>&-
grep -q '^HTTP/1.1 400' "$t/garbage" || fail "a request that is not HTTP: $(cat "$t/garbage")"
reply_is -m "the service after bad requests" "$(curl -s "$B/health")" status=ok

# GETs during PUTs see the old file or the new one whole, never a mix.
head -c 4194304 /dev/zero | tr '\0' A > "$t/A"
head -c 4194304 /dev/zero | tr '\0' B > "$t/B"
curl -sf -T "$t/A" "$B/files/race"
(
  for i in $(seq 15); do
    curl -sf -T "$t/B" "$B/files/race" && curl -sf -T "$t/A" "$B/files/race" || break
  done
  [ "$i" = 15 ] && touch "$t/writer-ok"
  touch "$t/writer-done"
) &
writer=$!
reads=0
while [ ! -e "$t/writer-done" ]; do
  curl -sf -o "$t/read" "$B/files/race" || fail "GET during PUTs failed"
  cmp -s "$t/read" "$t/A" || cmp -s "$t/read" "$t/B" || fail "GET during PUTs saw a partial file ($(wc -c < "$t/read") bytes)"
  reads=$((reads + 1))
done
wait "$writer"
[ $reads -gt 0 ] || fail "no GET ran during the PUTs"
[ -e "$t/writer-ok" ] || fail "a PUT of the writer failed"
[ "$(find "$t/ws" -name '.pmon-sandboxd-*' | wc -l)" = 0 ] || fail "temporary files left: $(ls -a "$t/ws")"

# 1 GiB from a pipe (chunked, no length known), to disk in bounded memory.
size=$((1 << 30))
head -c $size /dev/zero | curl -sf -T - "$B/files/big" || fail "the 1 GiB PUT failed"
[ "$(stat -c %s "$t/ws/big")" = $size ] || fail "the 1 GiB file has $(stat -c %s "$t/ws/big") bytes"
cmp -s -n $size "$t/ws/big" /dev/zero || fail "the 1 GiB file is not all zeros"
curl -sf "$B/files/big" | cmp -s -n $size - /dev/zero || fail "the 1 GiB GET differs"
hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
# (The sanitizers' shadow memory and quarantine: PMON_TEST_RSS_SCALE.)
bound=$((64 * 1024 * ${PMON_TEST_RSS_SCALE:-1}))
[ "$hwm" -lt "$bound" ] || fail "peak memory ${hwm} kB for a 1 GiB PUT and GET (bound: $bound kB)"
rm -f "$t/ws/big"

# SIGTERM with a PUT in flight: health 503, the PUT finishes, exit 0.
mkfifo "$t/fifo"
curl -s -o /dev/null -w '%{http_code}' -T - "$B/files/slow" < "$t/fifo" > "$t/slow-status" &
curl_pid=$!
exec 4> "$t/fifo"
printf 'first half, ' >&4
for i in $(seq 200); do [ -n "$(find "$t/ws" -name '.pmon-sandboxd-*')" ] && break; sleep 0.05; done
kill -TERM "$pid"
for i in $(seq 200); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$B/health")" = 503 ] && break
  sleep 0.05
done
reply_is -m "health after SIGTERM" "$(curl -s "$B/health")" code=UNAVAILABLE
expect 503 UNAVAILABLE GET /files/
kill -0 "$pid" || fail "the daemon exited with a PUT in flight"
printf 'second half' >&4
exec 4>&-
wait "$curl_pid"
[ "$(cat "$t/slow-status")" = 204 ] || fail "the PUT in flight at SIGTERM: status $(cat "$t/slow-status")"
[ "$(cat "$t/ws/slow")" = "first half, second half" ] || fail "the PUT in flight wrote: $(cat "$t/ws/slow")"
rc=0
wait "$pid" || rc=$?
[ $rc = 0 ] || fail "exit status $rc after SIGTERM: $(cat "$t/err")"

# --shutdown-timeout bounds a request that does not finish; its temporary file goes.
# (An empty --metadata-env-prefix is the default one, as in the reference.)
start_daemon --shutdown-timeout 500ms --metadata-env-prefix ""
reply_is -m "metadata, empty prefix" "$(curl -s "$B/metadata")" 'env={"SANDBOX_ID": "sb-1"}'
rm -f "$t/fifo"; mkfifo "$t/fifo"
curl -s -o /dev/null -T - "$B/files/stuck" < "$t/fifo" &
curl_pid=$!
exec 4> "$t/fifo"
printf 'never ends' >&4
for i in $(seq 200); do [ -n "$(find "$t/ws" -name '.pmon-sandboxd-*')" ] && break; sleep 0.05; done
kill -TERM "$pid"
rc=0
timeout 20 tail --pid="$pid" -f /dev/null || fail "the daemon is still running 20 s after SIGTERM with --shutdown-timeout 500ms"
wait "$pid" || rc=$?
exec 4>&-
wait "$curl_pid" || true
[ $rc = 0 ] || fail "exit status $rc after the shutdown timeout: $(cat "$t/err")"
[ ! -e "$t/ws/stuck" ] && [ -z "$(find "$t/ws" -name '.pmon-sandboxd-*')" ] || fail "the cut-off PUT left $(ls -a "$t/ws")"
pass "every endpoint, 403 for every escape, 1 GiB PUT at ${hwm} kB peak, $reads GETs during PUTs"
