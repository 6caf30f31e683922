# SPDX-License-Identifier: Apache-2.0
# The runtime directory /tmp/pmon-UID is anyone's to plant: another user's
# symlink there, to a directory of the victim's own, is not followed by
# pmon gc, by a starting pmon serve's sweep, nor by pmon run's look for its
# call's records; each says what is wrong (gc, serve) and the victim's files
# under <link target>/spool/ and <link target>/calls/ are all still there.
# Two throwaway uids (no account needed: setpriv).
. "$(dirname "$0")/common.inc"
[ "$(id -u)" = 0 ] || skip "needs root to act as two other users"
command -v setpriv >/dev/null || skip "setpriv is not installed"
A=$((3000000 + $$ % 1000000)) B=$((A + 1000000))
link=/tmp/pmon-$A
[ ! -e "$link" ] && [ ! -L "$link" ] || fail "$link is there already"
as() { local u=$1; shift; env -u XDG_RUNTIME_DIR setpriv --reuid="$u" --regid="$u" --clear-groups -- "$@"; }
trap 'rm -f "$link"; _cleanup' EXIT

# The victim's own directory, laid out as a runtime dir with a dead
# service's spool and a call's record.
v=$t/victim
sh -c 'exit 0' & dead=$!; wait "$dead"
ns=$(stat -L -c %i /proc/self/ns/pid)  # (a dead service of our PID namespace)
mkdir -p "$v/spool/$dead.0.0000dead.$ns" "$v/calls"
echo mine > "$v/spool/$dead.0.0000dead.$ns/t1.out"
chown -R "$A:$A" "$v"; chmod -R go-rwx "$v"
as "$B" ln -s "$v" "$link"
[ "$(stat -c %u "$link")" = "$B" ] || fail "control: the link is not the other user's"
cp "$PMON" "$t/pmon"; chmod 755 "$t/pmon"

as "$A" "$t/pmon" gc > "$t/gc" 2>&1 || fail "pmon gc exit $?: $(cat "$t/gc")"
[ -f "$v/spool/$dead.0.0000dead.$ns/t1.out" ] || fail "pmon gc removed the victim's file through $link"
grep -qF "$link is a symlink" "$t/gc" || fail "pmon gc did not say the runtime dir is a symlink: $(cat "$t/gc")"
echo "ok: pmon gc"

mkdir -m 700 "$t/a"; chown "$A:$A" "$t/a"
env -u XDG_RUNTIME_DIR setpriv --reuid="$A" --regid="$A" --clear-groups -- \
  "$t/pmon" serve --confine pgroup --listen "$t/a/s.sock" > /dev/null 2> "$t/serve.err" & sp=$!
record_pid "$sp"
for _ in $(seq 500); do [ -S "$t/a/s.sock" ] && break; sleep 0.02; done
[ -S "$t/a/s.sock" ] || fail "pmon serve did not start: $(cat "$t/serve.err")"
kill -TERM "$sp"; wait "$sp" || true
[ -f "$v/spool/$dead.0.0000dead.$ns/t1.out" ] || fail "pmon serve's sweep removed the victim's file through $link"
grep -qF "$link is a symlink" "$t/serve.err" || fail "pmon serve did not say the runtime dir is a symlink: $(cat "$t/serve.err")"
echo "ok: pmon serve"

# The call's pmon is its command's parent: its records would be looked
# for in <runtime>/calls/<that pid>.
as "$A" "$t/pmon" run --confine pgroup -- sh -c 'mkdir -m 700 "$0/calls/$PPID" && echo mine > "$0/calls/$PPID/t1" && echo $PPID > "$0/pid"' "$v" ||
  fail "pmon run exit $?"
[ -f "$v/calls/$(cat "$v/pid")/t1" ] || fail "pmon run removed the victim's file through $link"
echo "ok: pmon run"
pass
