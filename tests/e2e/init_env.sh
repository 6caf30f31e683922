# SPDX-License-Identifier: Apache-2.0
# pmon as a drop-in container init: 'pmon -- CMD' is 'pmon init -- CMD'
# (what 'docker run --init' and 'podman run --init' start), and the
# PMON_INIT_* variables set what the options set, an option given winning.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/init_lib.inc"

# The bare form: the command's status, and a setsid daemon it left is stopped.
rm -f "$t/daemon"
"$PMON" -- sh -c "setsid sh -c 'echo \$\$ > $t/daemon.tmp; mv $t/daemon.tmp $t/daemon; exec sleep 1000' &
  while [ ! -f $t/go ]; do sleep 0.01; done; exit 9" &
root=$!; record_pid "$root"
wait_file "$t/daemon" || fail "pmon --: the daemon never started"
d=$(cat "$t/daemon"); dst=$(start_time_of "$d"); record_pid "$d"
touch "$t/go"
rc=0; wait "$root" || rc=$?
[ "$rc" = 9 ] || fail "pmon -- exit $rc, want 9"
! alive "$d" "$dst" || fail "pmon --: daemon $d survived"
echo "ok: pmon -- CMD is pmon init -- CMD"

# Bad values: one line naming the variable, exit 125, the command not run.
for bad in PMON_INIT_FORWARD=sideways PMON_INIT_GRACE=soon PMON_INIT_CONFINE=pidns \
           PMON_INIT_PDEATHSIG=SIGNOPE PMON_INIT_WAIT_ALL=yes PMON_INIT_VERBOSITY=3; do
  rc=0; env "$bad" "$PMON" -- touch "$t/ran" 2> "$t/err" || rc=$?
  [ "$rc" = 125 ] || fail "$bad: exit $rc, want 125"
  [ "$(wc -l < "$t/err")" = 1 ] || fail "$bad: want one line, got: $(cat "$t/err")"
  grep -q "^pmon: init: ${bad%%=*}: " "$t/err" || fail "$bad: the line does not name the variable: $(cat "$t/err")"
  [ ! -e "$t/ran" ] || fail "$bad: the command ran"
done
echo "ok: a bad variable is one line naming it, exit 125"

# The option given wins over its variable (the bad value is never looked at).
PMON_INIT_GRACE=soon "$PMON" -- true && fail "PMON_INIT_GRACE=soon was accepted"
PMON_INIT_GRACE=soon "$PMON" init --grace 1s -- true || fail "--grace did not win over PMON_INIT_GRACE"
echo "ok: an option wins over its variable"

# PMON_INIT_VERBOSITY=2 is -v; -q on the command line wins over it.
PMON_INIT_VERBOSITY=2 "$PMON" -- true 2> "$t/err"
grep -q "^pmon: started pid" "$t/err" || fail "PMON_INIT_VERBOSITY=2 said nothing: $(cat "$t/err")"
PMON_INIT_VERBOSITY=2 "$PMON" init -q -- true 2> "$t/err"
[ ! -s "$t/err" ] || fail "-q did not win over PMON_INIT_VERBOSITY=2: $(cat "$t/err")"
echo "ok: PMON_INIT_VERBOSITY"

# PMON_INIT_CONFINE picks the backend when not PID 1.
if have_backend subreaper; then
  PMON_INIT_CONFINE=subreaper PMON_INIT_VERBOSITY=2 "$PMON" -- true 2> "$t/err"
  grep -q "^pmon: confinement subreaper" "$t/err" || fail "PMON_INIT_CONFINE=subreaper: $(cat "$t/err")"
  echo "ok: PMON_INIT_CONFINE"
fi

# PMON_INIT_WAIT_ALL=1: a daemon left running is waited for, not stopped.
rm -f "$t/daemon" "$t/go" "$t/finished"
PMON_INIT_WAIT_ALL=1 "$PMON" -- sh -c "setsid sh -c 'echo \$\$ > $t/daemon.tmp; mv $t/daemon.tmp $t/daemon;
    while [ ! -f $t/go ]; do sleep 0.01; done; sleep 0.3; touch $t/finished' &
  while [ ! -f $t/go ]; do sleep 0.01; done; exit 4" &
root=$!; record_pid "$root"
wait_file "$t/daemon" || fail "PMON_INIT_WAIT_ALL: the daemon never started"
d=$(cat "$t/daemon"); record_pid "$d"
touch "$t/go"
rc=0; wait "$root" || rc=$?
[ "$rc" = 4 ] || fail "PMON_INIT_WAIT_ALL: exit $rc, want 4"
[ -f "$t/finished" ] || fail "PMON_INIT_WAIT_ALL=1: the daemon was stopped instead of waited for"
echo "ok: PMON_INIT_WAIT_ALL"

# PMON_INIT_GRACE: a leftover that ignores TERM is still running well past
# the default 2 s grace when the variable says 1h; a second TERM to pmon
# then skips the grace period.
rm -f "$t/daemon" "$t/termed"
PMON_INIT_GRACE=1h "$PMON" -- sh -c "setsid sh -c 'trap \"touch $t/termed\" TERM;
    echo \$\$ > $t/daemon.tmp; mv $t/daemon.tmp $t/daemon; while :; do sleep 0.05; done' &
  while [ ! -f $t/daemon ]; do sleep 0.01; done; exit 6" &
root=$!; record_pid "$root"
wait_file "$t/daemon" || fail "PMON_INIT_GRACE: the daemon never started"
d=$(cat "$t/daemon"); dst=$(start_time_of "$d"); record_pid "$d"
wait_file "$t/termed" || fail "PMON_INIT_GRACE: the leftover never got TERM"
sleep 3
alive "$d" "$dst" || fail "PMON_INIT_GRACE=1h: the leftover was killed within 3 s"
kill -TERM "$root"
rc=0; wait "$root" || rc=$?
[ "$rc" = 6 ] || fail "PMON_INIT_GRACE: exit $rc, want 6"
! alive "$d" "$dst" || fail "PMON_INIT_GRACE: the leftover survived"
echo "ok: PMON_INIT_GRACE"

# PMON_INIT_FORWARD=child: a TERM to pmon reaches the command only, not a
# daemon in another session (the default, tree, reaches both).
cmd="trap 'touch $t/cmd_got' USR1; setsid $HELPERS/init_sigcatch $t/log $t/ready & echo \$! > $t/gc;
  while [ ! -f $t/go ]; do sleep 0.01; done"
for mode in tree child; do
  rm -f "$t/log" "$t/ready" "$t/gc" "$t/go" "$t/cmd_got"
  if [ $mode = child ]; then PMON_INIT_FORWARD=child "$PMON" -- sh -c "$cmd" &
  else "$PMON" -- sh -c "$cmd" &
  fi
  root=$!; record_pid "$root"
  wait_file "$t/ready" || fail "$mode: the daemon never got ready"
  record_pid "$(cat "$t/gc")"
  kill -USR1 "$root"
  wait_file "$t/cmd_got" || fail "$mode: USR1 did not reach the command"
  if [ $mode = tree ]; then
    for _ in $(seq 1000); do [ -s "$t/log" ] && break; sleep 0.01; done
    [ "$(cat "$t/log" 2>/dev/null)" = USR1 ] || fail "tree: USR1 did not reach the daemon"
  else
    sleep 0.3
    [ ! -s "$t/log" ] || fail "PMON_INIT_FORWARD=child: the daemon got $(cat "$t/log")"
  fi
  touch "$t/go"
  rc=0; wait "$root" || rc=$?
  [ "$rc" = 0 ] || fail "$mode: exit $rc, want 0"
done
echo "ok: PMON_INIT_FORWARD"
pass
