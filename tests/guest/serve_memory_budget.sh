# SPDX-License-Identifier: Apache-2.0
# Guest only (scripts/guest.sh): the service's memory budget where the
# kernel enforces memory. pmon serve runs in a cgroup of its own with
# memory.max 384 MiB (the default budget, 256 MiB, and room for the
# binary and the heap; its jobs' leaves elsewhere, under --cgroup-root).
# Ten connections each ask one terminal/output (maxBytes 16 MiB) of a job
# that wrote 16 MiB of control bytes on stdout and 16 MiB on stderr (six
# bytes each in JSON) and never read their answers. The service must live (no OOM kill in its cgroup, it still
# answers) and another client's job must run on; the cgroup's peak is
# printed from memory.peak.
. "$(dirname "$0")/../e2e/common.inc"
. "$(dirname "$0")/limits.inc"
. "$(dirname "$0")/../e2e/serve.inc"

SVC=$LHOLD/svc
mkdir "$SVC" || fail "cannot create $SVC"
echo $((384 << 20)) > "$SVC/memory.max"
# The service and its cgroup go before the scenario's own cleanup.
_svc_cleanup() {
  [ -z "${SERVE_PID:-}" ] || { kill -KILL "$SERVE_PID" 2> /dev/null; wait "$SERVE_PID" 2> /dev/null; }
  local i
  for i in $(seq 50); do rmdir "$SVC" 2> /dev/null && return 0; sleep 0.1; done
  echo "FAIL: $SCENARIO: could not remove $SVC: $(cat "$SVC/cgroup.procs" 2> /dev/null)" >&2
  return 1
}
trap 'rc_=$?; _svc_cleanup || rc_=1; _limits_cleanup || [ "$rc_" != 0 ] || rc_=1; (exit $rc_); _cleanup' EXIT

# The service moves into SVC before it is pmon serve (a shell that writes
# itself into cgroup.procs, then execs).
sh -c 'echo $$ > "$0/cgroup.procs" && exec "$1" serve -q --listen "$2" --cgroup-root "$3"' \
  "$SVC" "$PMON" "$SOCK" "$LROOT" 2> "$t/serve.err" &
SERVE_PID=$!
record_pid "$SERVE_PID"
for _i in $(seq 200); do [ -S "$SOCK" ] && break; sleep 0.05; done
[ -S "$SOCK" ] || fail "pmon serve did not listen: $(cat "$t/serve.err")"
grep -qx "$SERVE_PID" "$SVC/cgroup.procs" || fail "the service is not in $SVC"

PYTHONPATH="$(dirname "$0")/../e2e" python3 "$(dirname "$0")/../e2e/reply_flood.py" "$SOCK" 2 ||
  fail "the budget did not hold (see above)"
kill -0 "$SERVE_PID" 2> /dev/null || fail "the service died: $(cat "$t/serve.err")"
oom=$(awk '$1 == "oom_kill" { print $2 }' "$SVC/memory.events")
peak=$(cat "$SVC/memory.peak" 2> /dev/null || echo "?")
echo "the service's cgroup: memory.peak $peak bytes (memory.max $((384 << 20))), oom_kill $oom"
[ "$oom" = 0 ] || fail "the kernel OOM-killed $oom process(es) in the service's cgroup"
stop_serve
pass
