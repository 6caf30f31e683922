# SPDX-License-Identifier: Apache-2.0
# pmon run on aarch64: a call whose main process exits leaving a setsid
# daemon ends with the main process's status, the daemon stopped; a call
# past its --timeout exits 124, its whole tree gone (pid and start time)
# and the report says the cleanup was verified. On each backend the guest
# offers.
. "$(dirname "$0")/common.inc"

for b in cgroup pidns subreaper; do
  rm -f "$t/tree"
  rc=0; "$PMON" run -q --confine "$b" -- sh -c "$(tree_line "$t/tree"); exit 7" || rc=$?
  [ $rc = 7 ] || fail "$b: the call that left a daemon: pmon exit $rc, want 7"
  tree_gone "$t/tree" "$b: after the main process exited"
  ok "$b: main exited 7, its setsid daemon and child stopped"

  rm -f "$t/tree"
  rc=0; "$PMON" run -q --confine "$b" --timeout 5s --report "$t/r.json" -- sh -c "$(tree_line "$t/tree"); sleep 1000" || rc=$?
  [ $rc = 124 ] || fail "$b: --timeout: pmon exit $rc, want 124"
  [ -f "$t/tree" ] || fail "$b: the call had not started its tree within the 5 s timeout"
  tree_gone "$t/tree" "$b: after --timeout"
  grep -q '"outcome": "timeout"' "$t/r.json" || fail "$b: report's outcome: $(cat "$t/r.json")"
  grep -q '"cleanup_verified": true' "$t/r.json" || fail "$b: report's cleanup not verified: $(cat "$t/r.json")"
  ok "$b: --timeout exited 124, the tree gone, cleanup verified"
done
