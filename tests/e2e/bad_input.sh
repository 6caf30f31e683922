# Bad input: each case gives exactly one line on stderr, starting "pmon: " and
# naming the problem, the documented exit code, nothing on stdout, nothing
# left running and no cgroup leaf of that pmon left behind.
. "$(dirname "$0")/common.inc"

CG=$(awk '$9=="cgroup2"{print $5; exit}' /proc/self/mountinfo)

# A command that proves whether it ran: it records itself, then would stay.
RAN=$t/ran
MARK=(sh -c 'echo $$ $(cut -d" " -f22 /proc/$$/stat) > '"$RAN"'; exec sleep 1000')

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

# Durations.
expect 125 'timeout.*5x' -- run --timeout 5x -- "${MARK[@]}"
expect 125 'grace.*-1' -- run --grace -1 -- "${MARK[@]}"
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
done

# The report cannot be written: a bad option like any other, found before
# the command runs (not after its side effects, with 125 at the end).
expect 125 'report.*no-such-dir' -- run --report "$t/no-such-dir/r.json" -- "${MARK[@]}"
expect 125 'report.*adir' -- run --report "$t/adir" -- "${MARK[@]}"
pass
