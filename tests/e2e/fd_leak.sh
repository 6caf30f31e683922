# SPDX-License-Identifier: Apache-2.0
# No fd of pmon's own (signalfd, pidfd, cgroup dir, cgroup.events, the exec
# report pipe, the report file) reaches the command: it sees exactly the fds
# its caller passed, including a deliberately inherited fd 7. And the child
# starts with an empty signal mask and no ignored signals, even when pmon's
# caller blocked everything and ignored SIGPIPE/SIGINT/SIGQUIT.
. "$(dirname "$0")/common.inc"

LIST=$HELPERS/list_fds
[ -x "$LIST" ] || fail "helper $LIST missing"
echo "inherited on purpose" > "$t/seven"

# Everything the child inherited, without pmon in between: the reference.
"$LIST" "$t/direct" 7< "$t/seven" < /dev/null > /dev/null 2> /dev/null
grep -q "^7 $t/seven\$" "$t/direct" || fail "reference listing lacks fd 7: $(cat "$t/direct")"
grep -v '^Sig' "$t/direct" > "$t/expected"

for b in $(backends); do
  for flags in "-q" "-v --report $t/r.json" "--timeout 30s --grace 5s --report -"; do
    rm -f "$t/child"
    # shellcheck disable=SC2086
    "$PMON" run $flags --confine "$b" -- "$LIST" "$t/child" \
      7< "$t/seven" < /dev/null > /dev/null 2> /dev/null || fail "$b [$flags]: pmon exit $?"
    [ -s "$t/child" ] || fail "$b [$flags]: the child wrote no listing"
    grep -v '^Sig' "$t/child" > "$t/got"
    diff -u "$t/expected" "$t/got" >&2 || fail "$b [$flags]: the child's fds differ from what the caller passed"
    grep -q '^SigBlk:[[:space:]]*0*$' "$t/child" || fail "$b [$flags]: child's signal mask not empty: $(grep SigBlk "$t/child")"
    grep -q '^SigIgn:[[:space:]]*0*$' "$t/child" || fail "$b [$flags]: child ignores signals: $(grep SigIgn "$t/child")"
  done

  # A careless caller: every signal blocked, PIPE/INT/QUIT ignored. The
  # reference proves the wrapper really does that; the child must not see it.
  "$LIST" --hostile -- "$LIST" "$t/hostile" < /dev/null > /dev/null 2> /dev/null
  grep -q '^SigBlk:[[:space:]]*0*$' "$t/hostile" && fail "hostile wrapper did not block signals"
  grep -q '^SigIgn:[[:space:]]*0*$' "$t/hostile" && fail "hostile wrapper did not ignore signals"
  rm -f "$t/child"
  "$LIST" --hostile -- "$PMON" run -q --confine "$b" -- "$LIST" "$t/child" \
    7< "$t/seven" < /dev/null > /dev/null 2> /dev/null || fail "$b hostile: pmon exit $?"
  grep -v '^Sig' "$t/child" > "$t/got"
  diff -u "$t/expected" "$t/got" >&2 || fail "$b hostile: the child's fds differ from what the caller passed"
  grep -q '^SigBlk:[[:space:]]*0*$' "$t/child" || fail "$b hostile: child's signal mask not reset: $(grep SigBlk "$t/child")"
  grep -q '^SigIgn:[[:space:]]*0*$' "$t/child" || fail "$b hostile: child's dispositions not reset: $(grep SigIgn "$t/child")"
  echo "ok: $b"
done
pass
