# SPDX-License-Identifier: Apache-2.0
# E9: a fork storm that goes on while it is being stopped converges to empty
# on every backend (cgroup.kill; the kill of the main's process group; the
# subreaper's re-scan/kill loop for a storm that leaves the group). The storm
# (tests/helpers/fork_storm) only counts SIGTERM, so it forks right through
# the grace period, and is bounded (CAP live processes, a fork budget, a rate,
# a deadline, and at most 6000 tasks more on the machine, zombies included) so
# the machine stays safe even if pmon fails. Its counters live in a shared
# file that survives SIGKILL: they prove it was still forking after the first
# SIGTERM reached it.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/escapes.inc"
STORM=$HELPERS/fork_storm
[ -x "$STORM" ] || fail "helper $STORM missing"

CAP=300

# storm_call LABEL BACKEND TIMEOUT GRACE CAP BUDGET RATE SECONDS [MODE]: one
# stopped storm and the checks every one must pass; leaves the storm's
# counters in $forks $peak $last $term (1 + the forks made when the first
# SIGTERM came).
storm_call() {
  local label=$1 b=$2 left
  rm -f "$t/storm"
  # With BURN=N, N processes of the scenario's own (not the call's) keep
  # the CPUs busy meanwhile, as a build running beside pmon would.
  local burners=() i
  for ((i = 0; i < ${BURN:-0}; i++)); do
    "$HELPERS/burn_cpu" 20000 & burners+=($!)
    record_pid $!
  done
  run_probed run -q --confine "$b" --timeout "$3" --grace "$4" --report "$t/r.json" -- \
    "$STORM" "$t/storm" "$5" "$6" "$7" "$8" ${9:+"$9"}
  if [ ${#burners[@]} -gt 0 ]; then
    kill "${burners[@]}"
    wait "${burners[@]}" 2>/dev/null || true
  fi
  left=$(alive_naming "$t/storm")
  [ -f "$t/probe" ] && record_file "$t/probe"
  if [ -n "$left" ]; then
    echo "$left" >> "$t/pids"; echo "$left" >> "$STATE/pids"
    fail "$label: storm processes survived: $(echo "$left" | wc -l)"
  fi
  [ $rc = 124 ] || fail "$label: pmon exit $rc, want 124"
  report_is -m "$label: cleanup not verified" "$t/r.json" cleanup_verified=true
  report_is -m "$label: emptiness not confirmed" "$t/r.json" "stop.empty_confirmed_ms>=0"
  report_is -m "$label: pmon confirmed empty, yet reports live escapees" "$t/r.json" "escaped.#=0"
  assert_nothing_left "$label"
  # live, forks, peak, last fork (CLOCK_REALTIME ns), 1 + forks at SIGTERM
  read -r _ forks peak last term < <(od -An -v -t d8 -w40 "$t/storm")
  [ "$forks" -gt 0 ] && [ "$peak" -le "$5" ] || fail "$label: storm counters: forks $forks peak $peak"
  # A storm that used up its budget ended by itself: pmon's stop did not.
  [ "$forks" -lt "$6" ] || fail "$label: the storm made all of its $6 forks: it ended by itself, not by pmon's stop"
}

# A storm still forking when the stop begins: $1 the label, then the
# backend and the storm's mode. A storm that made no fork after SIGTERM
# reached it tested nothing: its brakes (the machine's task count, its cap
# of live processes) can hold it back while other work beside it fills the
# machine. Such a run (which passed every other check) is made again, up to
# three times.
storm_through_stop() {
  local attempt stop_ns
  for attempt in 1 2 3; do
    storm_call "$1" "$2" 1500ms 500ms $CAP 16000 2000 30 ${3:-}
    stop_ns=$(( $(date -d "$(rj "$t/r.json" .started_at)" +%s%N) +
                $(rj "$t/r.json" '.stop.signal_sent_ms * 1000000 | floor') ))
    [ "$term" -gt 0 ] || fail "$1: no SIGTERM reached the storm"
    [ "$forks" -ge "$term" ] && break
    echo "note: $1: no fork after SIGTERM reached the storm ($forks forks, the last" \
         "$(( (stop_ns - last) / 1000000 )) ms before the stop's signal by the clock; stop:" \
         "$(rj "$t/r.json" -c .stop)): again"
    [ $attempt -lt 3 ] || fail "$1: the storm made no fork after SIGTERM reached it, three times (not a test of E9)"
  done
  echo "ok: $1 ($forks forks, $(( forks - term + 1 )) after SIGTERM; peak $peak live," \
       "the last $(( (last - stop_ns) / 1000000 )) ms into the stop)"
}

for b in $(backends); do
  storm_through_stop "$b" "$b"
done

# Every member in a session of its own: no group to kill, so the backend has
# to find each one (pgroup cannot, by design). On the subreaper backend,
# whose stop walks /proc for them, three busy processes run beside pmon
# meanwhile: its stop competes for the CPU with them and some 300 runnable
# processes of the storm (it raises its priority while it stops: without
# that the stop began seconds late here).
for b in $(backends); do
  case $b in
    pgroup) ;;
    subreaper) BURN=3 storm_through_stop "$b, each member in its own session, beside three busy processes" "$b" setsid ;;
    *) storm_through_stop "$b, each member in its own session" "$b" setsid ;;
  esac
done

# Flat out and no grace: every storm process lives about one fork long, so a
# /proc walk can miss all of the live ones twice in a row. pmon must still
# find the tree gone only once it is (subreaper: once it has no child left)
# and reap every zombie before it exits.
for b in $(backends); do
  storm_call "$b, flat out" "$b" 300ms 0 32 100000 1000000 10
  echo "ok: $b, flat out ($forks forks, peak $peak live)"
done
pass
