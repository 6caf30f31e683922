# SPDX-License-Identifier: Apache-2.0
# Help and messages in users' words: no internal labels (escape numbers,
# seed names) in --help, -v or doctor output; every usage line shows the
# command a subcommand runs; 'pmon --help' names every option of the
# subcommands it spells out; counts are singular or plural, never "(es)";
# values named and explained, no jargon, in every subcommand's help.
. "$(dirname "$0")/common.inc"

LABELS='\<E[0-9]{1,2}\>|[Ss]eed [0-9]|issue [0-9]|\(es\)'

"$PMON" --help > "$t/top" || fail "pmon --help exit $?"
! grep -Eq "$LABELS" "$t/top" || fail "pmon --help: $(grep -E "$LABELS" "$t/top")"
for sub in run init supervise doctor ps gc; do
  "$PMON" $sub --help > "$t/$sub" || fail "pmon $sub --help exit $?"
  ! grep -Eq "$LABELS" "$t/$sub" || fail "pmon $sub --help: $(grep -E "$LABELS" "$t/$sub")"
done

# Usage lines: the command after "--" wherever there is one.
for sub in run init supervise; do
  grep -q "^Usage: pmon $sub \[OPTIONS\] -- CMD \[ARG\.\.\.\]$" "$t/$sub" ||
    fail "pmon $sub --help: usage line: $(grep '^Usage' "$t/$sub")"
  grep -q "^  pmon $sub \[options\] -- CMD \[ARG\.\.\.\] " "$t/top" || fail "pmon --help lacks 'pmon $sub [options] -- CMD [ARG...]'"
done

# The subcommands pmon --help spells out: every option of theirs is there.
for sub in doctor ps gc; do
  line=$(grep "^  pmon $sub " "$t/top") || fail "pmon --help does not list $sub"
  for opt in $(sed -n 's/^  \(-[a-z]\),--[a-z-]*.*/\1/p; s/^  \(--[a-z-]*\) .*/\1/p' "$t/$sub" | grep -vx -- '-h'); do
    long=$(sed -n "s/^  $opt,\(--[a-z-]*\).*/\1/p" "$t/$sub")
    case " $line " in
      *"[$opt]"* | *"[$long]"* | *" $opt "* ) ;;
      *) fail "pmon --help: '$line' lacks $sub's option $opt${long:+ ($long)}" ;;
    esac
  done
done

# --isolate names all four namespaces, as the README does.
iso=$(grep -- '--isolate' "$t/run")
for ns in PID cgroup mount user; do
  case $iso in *"$ns"*) ;; *) fail "run --help: --isolate does not name the $ns namespace: $iso" ;; esac
done

# Every subcommand's help: each value named so that the help says what it
# accepts (DURATION, SIZE, N, ..., never the parser's TEXT or UINT, nor a
# bare letter left undefined), and no word of pmon's insides (leaf,
# boundary, pooled, shim, a "kept" job, "release") where a plain one does.
JARGON='\<(leaf|(the|cgroup) leaves|boundary|pooled|shim|kept job|released?)\>'
subs=$(sed -n 's/^  pmon \([a-z][a-z-]*\) .*/\1/p' "$t/top" | sort -u)
for sub in $subs; do
  "$PMON" $sub --help > "$t/h.$sub" || fail "pmon $sub --help exit $?"
  raw='^ +(-[^ ]+|[A-Z]+) +(TEXT|UINT|INT|FLOAT|NUMBER)\>'
  ! grep -Eq "$raw" "$t/h.$sub" || fail "pmon $sub --help: $(grep -E "$raw" "$t/h.$sub")"
  # An option's value: one of the names the Values section explains.
  for v in $(sed -n 's/^  -[-a-z,]* \([A-Z][A-Z|-]*\) .*/\1/p' "$t/h.$sub" | sort -u); do
    case $v in DURATION | SIZE | N | CORES | SIGNAL | BACKEND | REGEX | HOST | PREFIX) grep -q "^  $v " "$t/h.$sub" ||
      fail "pmon $sub --help: $v is not explained" ;;
    PATH | DIR | FILE\|- | NAME | MODE | ENGINE | PORT) ;;
    *) fail "pmon $sub --help: value name $v says nothing of what it accepts" ;;
    esac
  done
  ! grep -Eiq "$JARGON" "$t/h.$sub" || fail "pmon $sub --help: $(grep -Ei "$JARGON" "$t/h.$sub")"
done
! grep -Eiq "$JARGON" "$t/top" || fail "pmon --help: $(grep -Ei "$JARGON" "$t/top")"

# A missing job id is named as it is in the usage line (not "iD").
rc=0; "$PMON" logs 2> "$t/noid" || rc=$?
[ $rc = 125 ] && [ "$(cat "$t/noid")" = "pmon: logs: no ID given; see 'pmon logs --help'" ] || fail "pmon logs: $rc $(cat "$t/noid")"

# Options before "--" with no subcommand are init's, as "pmon -- CMD" is init.
rc=0; "$PMON" -v -- sh -c 'exit 7' 2> "$t/initv" || rc=$?
[ $rc = 7 ] && grep -q '^pmon: init: reaped' "$t/initv" || fail "pmon -v -- CMD: exit $rc: $(cat "$t/initv")"
rc=0; "$PMON" -x 2> "$t/dashx" || rc=$?
[ $rc = 125 ] && grep -q "^pmon: unknown option '-x'; a subcommand comes first" "$t/dashx" || fail "pmon -x: $rc $(cat "$t/dashx")"

# pmon mcp tells its clients the version pmon --version prints.
ver=$("$PMON" --version)
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' |
  "$PMON" mcp > "$t/mcp" || fail "pmon mcp exit $?"
[ "pmon $(jget "$(head -n 1 "$t/mcp")" result.serverInfo.version)" = "$ver" ] ||
  fail "pmon mcp's version differs from '$ver': $(cat "$t/mcp")"

# What -v and doctor print: no labels either.
"$PMON" run -v -- sh -c 'sleep 100 & exit 0' 2> "$t/v" || fail "pmon run -v exit $?"
! grep -Eq "$LABELS" "$t/v" || fail "pmon run -v: $(grep -E "$LABELS" "$t/v")"
grep -q '^pmon: 1 process still running after the main process exited' "$t/v" || fail "pmon run -v: $(cat "$t/v")"
"$PMON" init -v -- sh -c 'sleep 100 & exit 0' 2> "$t/iv" || fail "pmon init -v exit $?"
! grep -Eq "$LABELS" "$t/iv" || fail "pmon init -v: $(grep -E "$LABELS" "$t/iv")"
"$PMON" doctor > "$t/doc" 2>&1 || true
! grep -Eq "$LABELS" "$t/doc" || fail "pmon doctor: $(grep -E "$LABELS" "$t/doc")"
"$PMON" doctor --json > "$t/doc.json" 2>&1 || true
! grep -Eq "$LABELS" "$t/doc.json" || fail "pmon doctor --json: $(grep -E "$LABELS" "$t/doc.json")"
if grep -q 'backend cgroup *yes' "$t/doc"; then
  grep -q 'crash guard pid [0-9]' "$t/doc" || fail "pmon doctor does not name the crash guard: $(grep 'backend cgroup' "$t/doc")"
fi

# Singular and plural.
for b in $(backends); do
  "$PMON" run --confine "$b" --report "$t/r1.json" -- sh -c 'sleep 100 & exit 0' 2> "$t/one" ||
    fail "$b: one leftover: exit $?: $(cat "$t/one")"
  [ "$(cat "$t/one")" = "pmon: the command exited and left 1 process running; stopped it" ] ||
    fail "$b: one leftover: $(cat "$t/one")"
  "$PMON" run --confine "$b" -- sh -c 'sleep 100 & sleep 100 & exit 0' 2> "$t/two" ||
    fail "$b: two leftovers: exit $?: $(cat "$t/two")"
  [ "$(cat "$t/two")" = "pmon: the command exited and left 2 processes running; stopped them" ] ||
    fail "$b: two leftovers: $(cat "$t/two")"
  rc=0
  "$PMON" run --confine "$b" --timeout 0.2 -- sleep 100 2> "$t/none" || rc=$?
  [ "$rc" = 124 ] || fail "$b: timeout: exit $rc"
  [ "$(cat "$t/none")" = "pmon: timed out after 0.2; stopped the command" ] || fail "$b: timeout alone: $(cat "$t/none")"
  echo "ok: $b: $(cat "$t/one") / $(cat "$t/two") / $(cat "$t/none")"
done
pass
