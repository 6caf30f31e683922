# SPDX-License-Identifier: Apache-2.0
# Seed 004's first canonical run, on both engines:
#   pmon supervise --max-restarts 2 -- sh -c 'exit 1'
# three spawns, the exact line sequence, exit 1; the two engines print the
# same sequence apart from the engine line; the pidfd number is the same on
# every spawn (the previous one was closed: no fd leaks across restarts).
. "$(dirname "$0")/common.inc"

mask() { sed -E 's/child=[0-9]+/child=N/; s/pidfd=[0-9]+/pidfd=N/' "$1"; }

for engine in pidfd sigchld; do
  rc=0
  "$PMON" supervise --engine "$engine" --max-restarts 2 -- sh -c 'exit 1' 2> "$t/$engine.err" || rc=$?
  [ "$rc" = 1 ] || fail "$engine: exit $rc, expected 1; stderr: $(cat "$t/$engine.err")"
  if [ "$engine" = pidfd ]; then first='pmon: engine=pidfd child=N pidfd=N'; else first='pmon: engine=sigchld child=N'; fi
  printf '%s\n' "$first" 'pmon: child=N exited status=1' 'pmon: restart 1/2' \
                "$first" 'pmon: child=N exited status=1' 'pmon: restart 2/2' \
                "$first" 'pmon: child=N exited status=1' 'pmon: giving up after 2 restarts' > "$t/want"
  mask "$t/$engine.err" > "$t/$engine.masked"
  diff -u "$t/want" "$t/$engine.masked" || fail "$engine: the lines differ from seed 004's"
  # Each child is reported under the pid it was announced with; three children.
  started=$(sed -nE 's/^pmon: engine=[a-z]+ child=([0-9]+).*/\1/p' "$t/$engine.err")
  ended=$(sed -nE 's/^pmon: child=([0-9]+) exited .*/\1/p' "$t/$engine.err")
  [ "$started" = "$ended" ] || fail "$engine: announced '$started' but reported '$ended'"
  [ "$(echo "$started" | sort -u | wc -l)" = 3 ] || fail "$engine: expected three distinct children: $started"
  echo "ok: $engine"
done

[ "$(sed -nE 's/.*pidfd=([0-9]+)$/\1/p' "$t/pidfd.err" | sort -u | wc -l)" = 1 ] ||
  fail "the pidfd number changes across restarts (an fd leaks): $(cat "$t/pidfd.err")"
diff -u <(grep -v '^pmon: engine=' "$t/pidfd.masked") <(grep -v '^pmon: engine=' "$t/sigchld.masked") ||
  fail "the engines' sequences differ"

# No budget at all: one spawn, then giving up.
for engine in pidfd sigchld; do
  rc=0
  "$PMON" supervise --engine "$engine" --max-restarts 0 -- sh -c 'exit 7' 2> "$t/zero.err" || rc=$?
  [ "$rc" = 1 ] || fail "$engine --max-restarts 0: exit $rc"
  [ "$(mask "$t/zero.err" | tail -n 2)" = "$(printf '%s\n' 'pmon: child=N exited status=7' 'pmon: giving up after 0 restarts')" ] ||
    fail "$engine --max-restarts 0: $(cat "$t/zero.err")"
  [ "$(wc -l < "$t/zero.err")" = 3 ] || fail "$engine --max-restarts 0: $(cat "$t/zero.err")"
done
pass
