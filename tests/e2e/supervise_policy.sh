# SPDX-License-Identifier: Apache-2.0
# The restart policy and exit codes of pmon supervise: a clean exit 0 ends
# supervision (exit 0); exits and signal deaths burn restarts; the deadline
# interrupts a backoff (124); a command that cannot run ends it (127/126);
# bad options are 125; no pmon fd reaches the child; --help documents codes.
. "$(dirname "$0")/common.inc"

mask() { sed -E 's/child=[0-9]+/child=N/; s/pidfd=[0-9]+/pidfd=N/' "$1"; }

for engine in pidfd sigchld; do
  if [ "$engine" = pidfd ]; then first='pmon: engine=pidfd child=N pidfd=N'; else first='pmon: engine=sigchld child=N'; fi

  # Clean exit at once.
  rc=0; "$PMON" supervise --engine "$engine" -- true 2> "$t/err" || rc=$?
  [ "$rc" = 0 ] || fail "$engine true: exit $rc"
  printf '%s\n' "$first" 'pmon: child=N exited status=0' > "$t/want"
  mask "$t/err" | diff -u "$t/want" - || fail "$engine true: wrong lines"

  # Fails twice, then succeeds: exit 0 after two restarts.
  rm -f "$t/count"
  rc=0
  "$PMON" supervise --engine "$engine" --max-restarts 5 -- sh -c '
    n=$(cat '"$t"'/count 2>/dev/null || echo 0); n=$((n + 1)); echo $n > '"$t"'/count; [ $n -ge 3 ]' 2> "$t/err" || rc=$?
  [ "$rc" = 0 ] || fail "$engine flaky: exit $rc; $(cat "$t/err")"
  printf '%s\n' "$first" 'pmon: child=N exited status=1' 'pmon: restart 1/5' \
                "$first" 'pmon: child=N exited status=1' 'pmon: restart 2/5' \
                "$first" 'pmon: child=N exited status=0' > "$t/want"
  mask "$t/err" | diff -u "$t/want" - || fail "$engine flaky: wrong lines"

  # Death by a signal burns a restart too.
  rc=0; "$PMON" supervise --engine "$engine" --max-restarts 1 -- sh -c 'kill -USR1 $$' 2> "$t/err" || rc=$?
  [ "$rc" = 1 ] || fail "$engine signal death: exit $rc"
  printf '%s\n' "$first" 'pmon: child=N killed signal=10' 'pmon: restart 1/1' \
                "$first" 'pmon: child=N killed signal=10' 'pmon: giving up after 1 restarts' > "$t/want"
  mask "$t/err" | diff -u "$t/want" - || fail "$engine signal death: wrong lines"

  # The deadline interrupts the backoff.
  rc=0
  "$PMON" supervise --engine "$engine" --timeout-ms 300 --restart-delay-ms 60000 --max-restarts 3 -- sh -c 'exit 2' 2> "$t/err" || rc=$?
  [ "$rc" = 124 ] || fail "$engine backoff: exit $rc; $(cat "$t/err")"
  printf '%s\n' "$first" 'pmon: child=N exited status=2' 'pmon: restart 1/3' 'pmon: exiting (timeout)' > "$t/want"
  mask "$t/err" | diff -u "$t/want" - || fail "$engine backoff: wrong lines"

  # No fd of pmon's (signalfd, pidfd, cgroup dirs) reaches the child: it
  # has exactly the fds the same command has without pmon.
  base=$(sh -c 'ls /proc/$$/fd')
  rc=0; fds=$("$PMON" supervise --engine "$engine" -- sh -c 'ls /proc/$$/fd' 2> /dev/null) || rc=$?
  [ "$rc" = 0 ] || fail "$engine fds: exit $rc"
  [ "$(echo $fds)" = "$(echo $base)" ] || fail "$engine: the child has fds $(echo $fds), without pmon $(echo $base)"
  echo "ok: $engine"
done

# A command that cannot run ends supervision with timeout(1)'s codes.
rc=0; "$PMON" supervise -- /nonexistent/pmon-cmd 2> "$t/err" || rc=$?
[ "$rc" = 127 ] || fail "not found: exit $rc"
grep -q "^pmon: cannot run '/nonexistent/pmon-cmd'" "$t/err" || fail "not found: $(cat "$t/err")"
! grep -q '^pmon: engine=' "$t/err" || fail "not found: announced a child: $(cat "$t/err")"
rc=0; "$PMON" supervise -- "$t" 2> "$t/err" || rc=$?
[ "$rc" = 126 ] || fail "not executable: exit $rc; $(cat "$t/err")"

# Bad options: 125 and one line.
for bad in "--engine bogus" "--max-restarts -1" "--timeout-ms x" "--grace forever" "--confine nope" "--bogus"; do
  rc=0; "$PMON" supervise $bad -- true 2> "$t/err" || rc=$?
  [ "$rc" = 125 ] || fail "'$bad': exit $rc"
  [ "$(wc -l < "$t/err")" = 1 ] && grep -q '^pmon: supervise: ' "$t/err" || fail "'$bad': $(cat "$t/err")"
done
rc=0; "$PMON" supervise 2> "$t/err" || rc=$?
[ "$rc" = 125 ] || fail "no command: exit $rc"

# --help documents the exit codes.
help=$("$PMON" supervise --help)
for code in '0 ' '1 ' '124' '128+N' '125' '126' '127'; do
  echo "$help" | grep -q "^  $code" || fail "--help does not document exit code $code"
done
"$PMON" --help | grep -q 'pmon supervise' || fail "pmon --help does not list supervise"
pass
