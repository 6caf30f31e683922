# SPDX-License-Identifier: Apache-2.0
# What a process chose to be called cannot act on the terminal of whoever
# lists it: a call whose command line (exec -a) and a job whose name and
# command hold escape sequences and newlines are shown by pmon ps and pmon
# jobs with those escaped (\xNN, \n), each on its one line.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"
have_backend cgroup || skip "the cgroup backend is not available here"
evil=$(printf 'evil\033]0;PWNED\007\033[2J\nfake line\302\233')
shown='evil\x1B]0;PWNED\x07\x1B[2J\nfake line\xC2\x9B'

"$PMON" run -v --confine cgroup -- bash -c 'touch "$0"; exec -a "$1" sleep 1000' "$t/ready" "$evil" 2> "$t/err" &
for _ in $(seq 500); do [ -f "$t/ready" ] && grep -q "^pmon: started" "$t/err" && break; sleep 0.02; done
leaf=$(sed -n 's/^pmon: started pid [0-9]* under cgroup in \(.*\)$/\1/p' "$t/err")
main=$(sed -n 's/^pmon: started pid \([0-9]*\) under.*/\1/p' "$t/err")
pmon=${leaf##*/pmon-}; pmon=${pmon%%-*}
[ -n "$main" ] || fail "the call never got going: $(cat "$t/err")"
record_pid "$pmon"; record_pid "$main"
for _ in $(seq 500); do grep -q PWNED "/proc/$main/cmdline" && break; sleep 0.02; done

"$PMON" ps > "$t/ps" || fail "pmon ps exit $?"
! LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]\|\xc2\x9b' "$t/ps" || fail "pmon ps printed control characters: $(cat -v "$t/ps")"
! grep -q '^fake line' "$t/ps" || fail "pmon ps printed a line of the process's making: $(cat -v "$t/ps")"
grep -qF " $shown" "$t/ps" || fail "pmon ps does not show the escaped command line: $(cat -v "$t/ps")"
echo "ok: pmon ps"

serve_start
PMON_SOCKET=$SOCK "$PMON" start --name "$evil" -- sh -c 'sleep 1000' "$evil" > "$t/id" || fail "pmon start"
PMON_SOCKET=$SOCK "$PMON" jobs > "$t/jobs" || fail "pmon jobs exit $?"
! LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]\|\xc2\x9b' "$t/jobs" || fail "pmon jobs printed control characters: $(cat -v "$t/jobs")"
[ "$(wc -l < "$t/jobs")" = 2 ] || fail "pmon jobs printed more than a header and one row: $(cat -v "$t/jobs")"
[ "$(grep -cF "$shown" "$t/jobs")" = 1 ] && grep -qF "'$shown'" "$t/jobs" ||
  fail "pmon jobs does not show the escaped name and command: $(cat -v "$t/jobs")"
echo "ok: pmon jobs"

kill -TERM "$pmon" "$SERVE_PID"; wait 2>/dev/null || true
pass
