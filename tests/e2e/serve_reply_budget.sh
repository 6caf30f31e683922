# SPDX-License-Identifier: Apache-2.0
# The memory budget bounds the replies being built, not only the bytes
# read: ten connections each ask one terminal/output (maxBytes 16 MiB) of a
# job that wrote 16 MiB of control bytes (six bytes each in JSON) and never
# read their answers. The service's peak RSS (VmHWM) stays within the
# default budget (256 MiB) and 32 MiB of slack (its binary, heap
# fragmentation, one reply being built); it lives, and another client's job
# runs on.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/serve.inc"

serve_start
PYTHONPATH="$(dirname "$0")" python3 "$(dirname "$0")/reply_flood.py" "$SOCK" 1 || fail "the load did not run through (see above)"
kill -0 "$SERVE_PID" || fail "the service died"
# (The sanitizers' shadow memory and quarantine: PMON_TEST_RSS_SCALE.)
hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$SERVE_PID/status")
echo "peak RSS $((hwm / 1024)) MiB"
[ "$hwm" -le $((288 * 1024 * ${PMON_TEST_RSS_SCALE:-1})) ] ||
  fail "peak RSS $((hwm / 1024)) MiB is over the budget (256 MiB) and its slack (32 MiB)"
pass
