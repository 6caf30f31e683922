# SPDX-License-Identifier: Apache-2.0
# Bad input: each case gives exactly one line on stderr, starting "pmon: " and
# naming the problem, the documented exit code, nothing on stdout, nothing
# left running and no cgroup leaf of that pmon left behind.
. "$(dirname "$0")/common.inc"

CG=$(awk '$9=="cgroup2"{print $5; exit}' /proc/self/mountinfo)

# A command that proves whether it ran: it records itself, then would stay.
RAN=$t/ran
MARK=(sh -c 'echo $$ $(cut -d" " -f22 /proc/$$/stat) > '"$RAN"'; exec sleep 1000')

# What CLI11 says when its errors are passed on untranslated.
RAW_PARSER_TEXT='At Most|At least|required but received|Could not convert|not expected|TEXT missing|Should be true/false|excludes|requires'

# expect CODE REGEX [--ran-ok] -- PMON-ARGS...
expect() {
  local code=$1 regex=$2 ran_ok=0
  shift 2
  if [ "${1:-}" = --ran-ok ]; then ran_ok=1; shift; fi
  [ "${1:-}" = -- ] && shift
  local what="pmon $*"
  rm -f "$RAN" "$t/out" "$t/err"
  local rc=0 pid
  "$PMON" "$@" > "$t/out" 2> "$t/err" < /dev/null &
  pid=$!
  wait "$pid" || rc=$?
  if [ -f "$RAN" ]; then
    local rp rst
    read -r rp rst < "$RAN"
    echo "$rp $rst" >> "$t/pids"; echo "$rp $rst" >> "$STATE/pids"
    [ "$ran_ok" = 1 ] || fail "[$what]: the command was started"
    ! alive "$rp" "$rst" || fail "[$what]: the command $rp is still running"
  fi
  [ "$rc" = "$code" ] || fail "[$what]: exit $rc, expected $code; stderr: $(cat "$t/err")"
  [ ! -s "$t/out" ] || fail "[$what]: wrote to stdout: $(head -c 200 "$t/out")"
  [ "$(wc -l < "$t/err")" = 1 ] || fail "[$what]: expected one line on stderr, got: $(cat "$t/err")"
  grep -Eq "^pmon: .*($regex)" "$t/err" || fail "[$what]: stderr does not match /$regex/: $(cat "$t/err")"
  # pmon's own words, never the parser library's.
  ! grep -Eq "$RAW_PARSER_TEXT" "$t/err" || fail "[$what]: the parser library's text: $(cat "$t/err")"
  if [ -n "$CG" ]; then
    local left
    left=$(find "$CG" -mindepth 1 -type d -name "pmon-$pid-*" 2>/dev/null)
    [ -z "$left" ] || fail "[$what]: cgroup left behind: $left"
  fi
  echo "ok: [$what] -> $code: $(cat "$t/err")"
}

# No command, no subcommand, unknown subcommand.
expect 125 'subcommand'
expect 125 'unknown subcommand.*frobnicate' -- frobnicate "${MARK[@]}"
expect 125 'no command' -- run
expect 125 'no command' -- run --
expect 125 'no command' -- run --timeout 5s --

# Unknown option (before the --, and in place of it).
expect 125 'unknown option.*--frobnicate|--frobnicate' -- run --frobnicate -- "${MARK[@]}"
expect 125 'unknown option.*--frobnicate|--frobnicate' -- run --frobnicate "${MARK[@]}"
expect 125 '-Z' -- run -Z -- "${MARK[@]}"

# Every subcommand words an unknown option, a missing value and a repeated
# option the same way.
for sub in run init supervise doctor ps gc; do
  expect 125 "$sub: unknown option '--bogus'; see 'pmon $sub --help'\$" -- $sub --bogus -- "${MARK[@]}"
done
for sub in doctor ps gc; do
  expect 125 "$sub: unexpected argument 'extra'" -- $sub extra
  expect 125 "$sub: unexpected argument 'extra'" -- $sub -- extra
done
expect 125 "run: --timeout needs a value" -- run --timeout
expect 125 "run: --timeout was given 2 times; give it once" -- run --timeout 1s --timeout 2s -- "${MARK[@]}"
expect 125 "run: --timeout was given 2 times" -- run --timeout=1 --timeout 2 -- "${MARK[@]}"
expect 125 "init: --grace was given 2 times" -- init --grace 1 --grace 2 -- "${MARK[@]}"
expect 125 "supervise: --max-restarts was given 2 times" -- supervise --max-restarts 1 --max-restarts 2 -- "${MARK[@]}"
expect 125 "supervise: --timeout-ms: '1s' is not a whole number of milliseconds" -- supervise --timeout-ms 1s -- "${MARK[@]}"
expect 125 "supervise: --max-restarts: 'x' is not a whole number" -- supervise --max-restarts x -- "${MARK[@]}"
expect 125 "supervise: --restart-delay-ms: '0.5' is not a whole number" -- supervise --restart-delay-ms 0.5 -- "${MARK[@]}"

# -v and -q together: refused, not one of them silently winning.
expect 125 "run: -v \(--verbose\) and -q \(--quiet\) cannot be used together" -- run -v -q -- "${MARK[@]}"
expect 125 "init: -v \(--verbose\) and -q \(--quiet\) cannot be used together" -- init --quiet --verbose -- "${MARK[@]}"

# Durations: not one at all, below zero, too long.
expect 125 'timeout.*5x' -- run --timeout 5x -- "${MARK[@]}"
expect 125 "grace: '-1' must not be negative" -- run --grace -1 -- "${MARK[@]}"
expect 125 "timeout: '-1s' must not be negative" -- run --timeout -1s -- "${MARK[@]}"
expect 125 "timeout: '-0.5m' must not be negative" -- run --timeout=-0.5m -- "${MARK[@]}"
expect 125 "init: --grace: '-2s' must not be negative" -- init --grace -2s -- "${MARK[@]}"
expect 125 "supervise: --grace: '-2s' must not be negative" -- supervise --grace -2s -- "${MARK[@]}"
expect 125 "supervise: --timeout-ms: '-5' must not be negative" -- supervise --timeout-ms -5 -- "${MARK[@]}"
expect 125 "supervise: --max-restarts: '-1' must not be negative" -- supervise --max-restarts -1 -- "${MARK[@]}"
expect 125 "timeout: '99999999999' is too long" -- run --timeout 99999999999 -- "${MARK[@]}"
expect 125 "grace: '300000h' is too long" -- run --grace 300000h -- "${MARK[@]}"
expect 125 "supervise: --timeout-ms: '99999999999999999999' is too long" \
  -- supervise --timeout-ms 99999999999999999999 -- "${MARK[@]}"
expect 125 'timeout' -- run --timeout '' -- "${MARK[@]}"
expect 125 'grace' -- run --grace '' -- "${MARK[@]}"
expect 125 'timeout.*1\.2\.3s' -- run --timeout 1.2.3s -- "${MARK[@]}"
expect 125 'timeout' -- run --timeout -- "${MARK[@]}"

# Signals: unknown, out of range, and ones that cannot start a polite stop.
expect 125 'signal.*FOO' -- run --signal FOO -- "${MARK[@]}"
expect 125 'signal.*999' -- run --signal 999 -- "${MARK[@]}"
expect 125 'signal.*KILL' -- run --signal KILL -- "${MARK[@]}"
expect 125 'signal.*STOP' -- run --signal SIGSTOP -- "${MARK[@]}"
expect 125 'signal' -- run --signal '' -- "${MARK[@]}"

# Backends: unknown, and known but not available here (never a downgrade).
expect 125 'nosuch' -- run --confine nosuch -- "${MARK[@]}"
for b in cgroup pidns subreaper pgroup; do
  have_backend "$b" && continue
  expect 125 "$b" -- run --confine "$b" -- "${MARK[@]}"
done

# An empty command name: 127, as a shell, env(1) and timeout(1) say.
expect 127 "cannot run '': the command name is empty" -- run -- ''
expect 127 "cannot run '': the command name is empty" -- init -- '' arg
expect 127 "cannot run '': the command name is empty" -- supervise --max-restarts 0 -- ''

# The command itself: 126 found but not executable, 127 not found.
mkdir "$t/adir"
printf '#!/bin/sh\necho should not run\n' > "$t/noexec"; chmod 644 "$t/noexec"
expect 126 'adir' -- run -- "$t/adir"
expect 126 'noexec' -- run -- "$t/noexec"
expect 127 'pmon-no-such-command' -- run -- pmon-no-such-command-4711
expect 127 'no/such/binary' -- run -- "$t/no/such/binary"
expect 127 'missing-binary' -- run -- "$t/missing-binary"
for b in $(backends); do
  expect 126 'noexec' -- run --confine "$b" -- "$t/noexec" arg
  expect 127 'pmon-no-such-command' -- run --confine "$b" -- pmon-no-such-command-4711 arg
  expect 127 "cannot run '': the command name is empty" -- run --confine "$b" -- '' arg
done

# The report cannot be written: a bad option like any other, found before
# the command runs (not after its side effects, with 125 at the end).
expect 125 'report.*no-such-dir' -- run --report "$t/no-such-dir/r.json" -- "${MARK[@]}"
expect 125 'report.*adir' -- run --report "$t/adir" -- "${MARK[@]}"

# --timeout 0 is no timeout (as timeout(1)): the command runs to its end and
# its own status comes back, not 124.
for args in "--timeout 0" "--timeout 0s" "--timeout=0ms"; do
  rc=0
  "$PMON" run $args -- sh -c 'sleep 0.2; exit 7' 2> "$t/err" || rc=$?
  [ "$rc" = 7 ] || fail "[run $args]: exit $rc, expected the command's 7: $(cat "$t/err")"
  [ ! -s "$t/err" ] || fail "[run $args]: said: $(cat "$t/err")"
  echo "ok: [run $args -- sh -c 'sleep 0.2; exit 7'] -> 7"
done
pass
