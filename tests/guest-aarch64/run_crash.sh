# SPDX-License-Identifier: Apache-2.0
# pmon run on aarch64, SIGKILLed mid-call (a harness crash): on the cgroup
# backend its crash guard writes the leaf's cgroup.kill, on pidns the
# namespace's init dies with it; either way the whole tree is gone within
# seconds, and the cgroup leaf is removed.
. "$(dirname "$0")/common.inc"

for b in cgroup pidns; do
  rm -f "$t/tree"
  "$PMON" run -v --confine "$b" -- sh -c "$(tree_line "$t/tree"); sleep 1000" 2> "$t/err" &
  pp=$!
  wait_until 60 [ -f "$t/tree" ] || fail "$b: the call's tree did not start: $(cat "$t/err")"
  wait_until 30 grep -q '^pmon: started pid' "$t/err" || fail "$b: pmon did not say where the call runs: $(cat "$t/err")"
  leaf=$(sed -n 's/^pmon: started pid [0-9]* under cgroup in \(.*\)$/\1/p' "$t/err")
  if [ $b = cgroup ]; then
    grep -q 'crash guard pid [0-9]' "$t/err" || fail "cgroup: no crash guard: $(cat "$t/err")"
    [ -d "$leaf" ] || fail "cgroup: no leaf in: $(cat "$t/err")"
  fi
  kill -KILL "$pp"
  wait "$pp" 2> /dev/null
  gone() { ! (while read -r pid st; do alive "$pid" "$st" && exit 0; done < "$t/tree"; exit 1); }
  wait_until 10 gone || tree_gone "$t/tree" "$b: 10 s after SIGKILL of pmon"
  [ -z "$leaf" ] || wait_until 10 [ ! -d "$leaf" ] || fail "$b: the leaf $leaf is still there"
  ok "$b: SIGKILL of pmon: the tree gone${leaf:+, the leaf $leaf removed}"
done
