# SPDX-License-Identifier: Apache-2.0
# The shell verbs talk only to a service no other user can stand in for.
# Without XDG_RUNTIME_DIR the default socket is /tmp/pmon-UID/serve.sock,
# and anyone can make that directory first. A fake service of another uid
# waits there (and in the other places below), and `pmon start`, which
# would send it the whole environment, must refuse with one line before it
# sends a single byte: the fake counts what it was sent. Then the same
# user's own service on the default socket is served as ever.
#
# The two users are bare uids (setpriv needs no account): unique to this
# run, so /tmp/pmon-UID is this run's alone, whatever else runs here.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

[ "$(id -u)" = 0 ] || skip "needs root to act as two other users"
command -v setpriv >/dev/null || skip "setpriv is not installed"
VICTIM=$((3000000000 + 2 * $$))
OTHER=$((VICTIM + 1))
VDIR=/tmp/pmon-$VICTIM
[ ! -e "$VDIR" ] || fail "$VDIR exists already"
_trust_cleanup() {
  _cleanup
  rm -rf --one-file-system "$VDIR"
}
trap _trust_cleanup EXIT

as() { local uid=$1; shift; setpriv --reuid="$uid" --regid="$uid" --clear-groups "$@"; }
# The build may be below a directory the users cannot enter.
if ! as "$VICTIM" test -x "$PMON"; then
  mkdir "$t/bin" && cp "$PMON" "$t/bin/pmon" && chmod 755 "$t/bin" "$t/bin/pmon"
  PMON=$t/bin/pmon
fi

# The fake service: binds PATH (as whoever runs it), listens as UID, and
# counts the bytes each connection sends until a newline or its end. A
# connection that sends "probe" is the test's own: the fake prints the
# count and exits.
cat > "$t/fake.py" <<'EOF'
import os, socket, sys
path, uid = sys.argv[1], int(sys.argv[2])
os.umask(0)
if len(sys.argv) > 3 and sys.argv[3] != "-":
    os.mkdir(os.path.dirname(path), int(sys.argv[3], 8))
s = socket.socket(socket.AF_UNIX)
s.bind(path)
if os.getuid() != uid:
    if len(sys.argv) > 4:
        os.chown(path, uid, uid)
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
s.listen(16)
print("ready", flush=True)
total = 0
while True:
    c, _ = s.accept()
    c.settimeout(5)
    got = b""
    try:
        while not got.endswith(b"\n"):
            d = c.recv(65536)
            if not d:
                break
            got += d
    except OSError:
        pass
    c.close()
    if got == b"probe\n":
        print("received %d" % total, flush=True)
        sys.exit(0)
    total += len(got)
EOF

# fake_start NAME HOW PATH UID [DIRMODE|- [chown]]: runs the fake, HOW
# "as" UID from the start, or "root" to bind (and chown the socket to
# UID), then listen as UID; waits until it listens.
fake_start() {
  local name=$1 how=$2 i
  shift 2
  : > "$t/$name.out"
  if [ "$how" = root ]; then
    /usr/bin/python3 "$t/fake.py" "$@" > "$t/$name.out" 2>&1 &
  else
    as "$2" /usr/bin/python3 "$t/fake.py" "$@" > "$t/$name.out" 2>&1 &
  fi
  eval "${name}_pid=$!"
  record_pid "$!"
  for i in $(seq 200); do
    grep -q '^ready$' "$t/$name.out" && return 0
    sleep 0.05
  done
  fail "the fake service $name did not start: $(cat "$t/$name.out")"
}

# fake_received NAME PATH: what the fake was sent, in bytes (it exits).
fake_received() {
  local i pid
  eval "pid=\${${1}_pid}"
  python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"probe\n"); s.recv(1)' "$2"
  for i in $(seq 200); do
    grep -q '^received ' "$t/$1.out" && break
    sleep 0.05
  done
  wait "$pid" 2>/dev/null || true
  sed -n 's/^received //p' "$t/$1.out"
}

# refused WHAT EXPECTED CMD...: CMD (a verb run as the victim, with no
# XDG_RUNTIME_DIR, a secret in its environment) exits 125 with one line
# that contains EXPECTED and says why.
refused() {
  local what=$1 expected=$2 rc=0
  shift 2
  (cd "$t" && as "$VICTIM" env -u XDG_RUNTIME_DIR -u PMON_SOCKET PMON_TEST_SECRET=hunter2 "$PMON" "$@") \
    > "$t/verb.out" 2> "$t/verb.err" || rc=$?
  [ $rc = 125 ] || fail "$what: pmon $1 exited $rc, not 125: $(cat "$t/verb.err")"
  [ "$(wc -l < "$t/verb.err")" = 1 ] || fail "$what: not one line: $(cat "$t/verb.err")"
  grep -qF -- "$expected" "$t/verb.err" || fail "$what: '$(cat "$t/verb.err")' does not say '$expected'"
  grep -q "another user may be impersonating the service" "$t/verb.err" || fail "$what: $(cat "$t/verb.err")"
  [ ! -s "$t/verb.out" ] || fail "$what: printed $(cat "$t/verb.out")"
}

# 1. The default directory made by another user, its listener in it.
fake_start a as "$VDIR/serve.sock" "$OTHER" 755
refused "another user's default directory" "pmon: $VDIR belongs to uid $OTHER, not to you: " start -- true
grep -q "remove it or set XDG_RUNTIME_DIR" "$t/verb.err" || fail "no way out named: $(cat "$t/verb.err")"
refused "another user's default directory (jobs)" "$VDIR belongs to uid $OTHER" jobs
[ "$(fake_received a "$VDIR/serve.sock")" = 0 ] || fail "pmon sent the other user's service $(sed -n 's/^received //p' "$t/a.out") bytes"
rm -rf "$VDIR"

# 2. The victim's own 0700 directory, a socket bound there by root, but
# listened on by another uid: only SO_PEERCRED can tell.
mkdir -m 700 "$VDIR" && chown "$VICTIM:$VICTIM" "$VDIR"
fake_start b root "$VDIR/serve.sock" "$OTHER"
refused "a listener of another uid" "pmon: $VDIR/serve.sock is served by uid $OTHER, not by you or root: " start -- true
[ "$(fake_received b "$VDIR/serve.sock")" = 0 ] || fail "pmon sent the other uid's listener $(sed -n 's/^received //p' "$t/b.out") bytes"
rm -rf "$VDIR"

# 3. The default directory is the victim's but open to others.
mkdir -m 777 "$VDIR" && chown "$VICTIM:$VICTIM" "$VDIR" && chmod 777 "$VDIR"
fake_start c as "$VDIR/serve.sock" "$OTHER"
refused "an open default directory" "pmon: $VDIR is open to other users (mode 0777): " start -- true
[ "$(fake_received c "$VDIR/serve.sock")" = 0 ] || fail "pmon sent the service in an open directory bytes"
rm -rf "$VDIR"

# 4. --socket: a directory anyone may write (not sticky), and a socket of
# another user in a directory of the victim's.
mkdir -m 777 "$t/open" && chmod 777 "$t/open"
fake_start d as "$t/open/s.sock" "$OTHER"
refused "--socket in a directory anyone may write" "pmon: $t/open can be written by other users (mode 0777): " \
  start --socket "$t/open/s.sock" -- true
grep -q "give --socket (or PMON_SOCKET) a path in a directory only you can write" "$t/verb.err" ||
  fail "no way out named for --socket: $(cat "$t/verb.err")"
[ "$(fake_received d "$t/open/s.sock")" = 0 ] || fail "pmon sent the service in an open directory bytes"
mkdir -m 755 "$t/v" && chown "$VICTIM:$VICTIM" "$t/v"
fake_start e root "$t/v/s.sock" "$OTHER" - chown
refused "--socket of another user" "pmon: $t/v/s.sock belongs to uid $OTHER, not to you or root: " \
  stop --socket "$t/v/s.sock" t0123456789abcdef
[ "$(fake_received e "$t/v/s.sock")" = 0 ] || fail "pmon sent another user's socket bytes"

# 5. The victim's own service on the default socket is served.
(cd "$t" && exec setpriv --reuid="$VICTIM" --regid="$VICTIM" --clear-groups env -u XDG_RUNTIME_DIR \
  "$PMON" serve -q --confine pgroup) 2> "$t/own.err" &
own=$!
record_pid "$own"
for i in $(seq 200); do [ -S "$VDIR/serve.sock" ] && break; sleep 0.05; done
[ -S "$VDIR/serve.sock" ] || fail "the victim's own service did not listen: $(cat "$t/own.err")"
id=$(cd "$t" && as "$VICTIM" env -u XDG_RUNTIME_DIR "$PMON" start -- sleep 1000) || fail "pmon start on the own service"
[[ "$id" =~ ^t[0-9a-f]{16}$ ]] || fail "pmon start printed '$id', not a terminal id"
(cd "$t" && as "$VICTIM" env -u XDG_RUNTIME_DIR "$PMON" stop "$id") || fail "pmon stop on the own service"
kill -TERM "$own"
wait "$own" || fail "the victim's service exited $?"
pass
