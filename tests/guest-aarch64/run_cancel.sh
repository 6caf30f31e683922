# SPDX-License-Identifier: Apache-2.0
# pmon run on aarch64, cancelled: SIGTERM or SIGINT to pmon stops the call's
# whole tree (a setsid daemon included) before pmon exits with 128+N.
. "$(dirname "$0")/common.inc"

for b in cgroup pidns; do
  for sig in TERM INT; do
    rm -f "$t/tree"
    "$PMON" run -q --confine "$b" -- sh -c "$(tree_line "$t/tree"); sleep 1000" &
    pp=$!
    wait_until 60 [ -f "$t/tree" ] || fail "$b: the call's tree did not start"
    kill -"$sig" "$pp"
    rc=0; wait "$pp" || rc=$?
    want=$((128 + $(kill -l "$sig")))
    [ $rc = $want ] || fail "$b: SIG$sig to pmon: exit $rc, want $want"
    tree_gone "$t/tree" "$b: after SIG$sig to pmon"
    ok "$b: SIG$sig to pmon: exit $rc, the tree gone"
  done
done
