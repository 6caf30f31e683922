# E9: a fork storm that goes on while it is being stopped converges to empty
# on every backend (cgroup.kill; the subreaper's and pgroup's re-scan/kill
# loop). The storm (tests/helpers/fork_storm) ignores SIGTERM, so it forks
# right through the grace period, and is bounded (CAP live processes, a fork
# budget, a rate, a deadline) so the machine stays safe even if pmon fails. Its
# counters live in a shared file that survives SIGKILL: they prove it was
# still forking after the stop began.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/escapes.inc"
STORM=$HELPERS/fork_storm
[ -x "$STORM" ] || fail "helper $STORM missing"

CAP=300
# Every live process whose argv names this run's counter file (unique path).
storm_survivors() {
  local f pid
  for f in /proc/[0-9]*/cmdline; do
    grep -qaF "$t/storm" "$f" 2>/dev/null || continue
    pid=${f#/proc/}; pid=${pid%/cmdline}
    [ "$(state_of "$pid")" = Z ] || [ -z "$(state_of "$pid")" ] || echo "$pid $(start_time_of "$pid")"
  done
}

for b in $(backends); do
  rm -f "$t/storm"
  run_probed run -q --confine "$b" --timeout 1500ms --grace 500ms --report "$t/r.json" -- \
    "$STORM" "$t/storm" $CAP 16000 2000 30
  left=$(storm_survivors)
  [ -f "$t/probe" ] && record_file "$t/probe"
  if [ -n "$left" ]; then
    echo "$left" >> "$t/pids"; echo "$left" >> "$STATE/pids"
    fail "$b: storm processes survived: $(echo "$left" | wc -l)"
  fi
  [ $rc = 124 ] || fail "$b: pmon exit $rc, want 124"
  [ "$(rj "$t/r.json" .cleanup_verified)" = true ] || fail "$b: cleanup not verified"
  [ "$(rj "$t/r.json" .stop.empty_confirmed_ms)" != null ] || fail "$b: emptiness not confirmed"
  [ "$(rj "$t/r.json" '.escaped | length')" = 0 ] ||
    fail "$b: pmon confirmed empty, yet reports live escapees: $(rj "$t/r.json" -c '[.escaped[].pid]')"
  assert_nothing_left "$b"
  # live, forks, peak, last fork (CLOCK_REALTIME ns)
  read -r _ forks peak last < <(od -An -v -t d8 -w32 "$t/storm")
  stop_ns=$(( $(date -d "$(rj "$t/r.json" .started_at)" +%s%N) +
              $(rj "$t/r.json" '.stop.signal_sent_ms * 1000000 | floor') ))
  [ "$forks" -gt 0 ] && [ "$peak" -le $CAP ] || fail "$b: storm counters: forks $forks peak $peak"
  [ "$last" -gt "$stop_ns" ] || fail "$b: the storm had stopped forking before the stop began (not a test of E9)"
  echo "ok: $b ($forks forks, peak $peak live, forking $(( (last - stop_ns) / 1000000 )) ms into the stop)"
done
pass
