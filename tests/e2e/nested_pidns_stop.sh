# SPDX-License-Identifier: Apache-2.0
# A call that nests its own PID namespace (unshare --pid --fork) whose
# processes ignore SIGTERM — the namespace's init and a busy child of it —
# is stopped at --timeout and on a cancel (SIGTERM to pmon) in grace + the
# kill step, on every backend and under --isolate: exit 124 / 143, cleanup
# verified, every recorded process gone.
. "$(dirname "$0")/common.inc"
command -v unshare >/dev/null || skip "unshare is not installed"
[ "$(id -u)" = 0 ] || skip "needs root (unshare --pid)"
[ -n "$PMON_TEST_HOSTPROC" ] || skip "needs the host's /proc bind mount (to name processes by host pid)"

modes=$(backends)
"$PMON" run -q --isolate -- true 2>/dev/null && modes="$modes isolate"
opt_of() { if [ "$1" = isolate ]; then echo --isolate; else echo --confine "$1"; fi; }

# Inside the nested namespace: its init (a shell) and a busy child, both
# ignoring TERM, each appending "host-pid start-time" to $1.
REC=$HOSTPID_SH'; echo "$hp $(cut -d" " -f22 /proc/$$/stat)" >> "$0"'
PAYLOAD='trap "" TERM; sh -c '"'"'trap "" TERM; '"$REC"'; while :; do :; done'"'"' "$0" &
  '"$REC"'; while :; do sleep 0.05; done'

for b in $modes; do
  for mode in timeout cancel; do
    rm -f "$t/tree"
    if [ $mode = timeout ]; then
      rc=0
      "$PMON" run -q $(opt_of "$b") --timeout 1s --grace 300ms --report "$t/r.json" -- \
        unshare --pid --fork --mount-proc sh -c "$PAYLOAD" "$t/tree" || rc=$?
      want=124
    else
      "$PMON" run -q $(opt_of "$b") --grace 300ms --report "$t/r.json" -- \
        unshare --pid --fork --mount-proc sh -c "$PAYLOAD" "$t/tree" &
      pp=$!; record_pid "$pp"
      for _ in $(seq 1000); do [ -f "$t/tree" ] && [ "$(wc -l < "$t/tree")" -ge 2 ] && break; sleep 0.01; done
      kill -TERM "$pp"
      rc=0; wait "$pp" || rc=$?
      want=143
    fi
    [ -f "$t/tree" ] && [ "$(wc -l < "$t/tree")" -ge 2 ] || fail "$b/$mode: the nested namespace never got going"
    while read -r pid st; do echo "$pid $st" >> "$t/pids"; echo "$pid $st" >> "$STATE/pids"; done < "$t/tree"
    [ $rc = $want ] || fail "$b/$mode: pmon exit $rc, want $want"
    report_is -m "$b/$mode: cleanup verified, SIGKILL sent (TERM is ignored)" "$t/r.json" cleanup_verified=true \
      'stop.kill_sent_ms>=0'
    while read -r pid st; do
      ! alive "$pid" "$st" || fail "$b/$mode: $pid ($(tr '\0' ' ' < /proc/$pid/cmdline)) survived"
    done < "$t/tree"
    echo "ok: $b/$mode"
  done
done
pass
