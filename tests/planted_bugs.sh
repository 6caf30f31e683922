#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/planted_bugs.sh [NAME...]: the bugs of tests/planted_bugs.md that a
# sed on one source line plants, planted one at a time in a scratch copy of
# this tree (uncommitted changes included), pmon built there, the test named
# for each run: it must FAIL. Prints a table (planted, caught or not) and
# keeps each test's output. Run by hand (a build per bug), not in CI. The
# tree it is run from is never changed. --check only checks that each plant
# still applies to one line.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)

# NAME|FILE|SED EXPRESSION (changes exactly one line)|TEST
# TEST: e2e:NAME (a ctest scenario), unit:FILTER (GoogleTest), node:FILE
BUGS=(
  'hook-lets-through|src/cli/shell_cmd.cpp|/hook_refusal(hook_harness(input))/{n;s/return 2;/return 0;/}|e2e:die_with_parent'
  'hook-answers-harness|src/cli/shell_cmd.cpp|s/std::fprintf(stderr, "%s\\n", hook_refusal/std::fprintf(stdout, "%s\\n", hook_refusal/|e2e:die_with_parent'
  'dead-service-by-pid|src/jobs/spool.cpp|s/  return !process_alive(o.pid, \*o.start);/  return ::kill(o.pid, 0) != 0 \&\& errno == ESRCH;/|e2e:serve_predecessor'
  'start-timeout-0|src/serve/mcp.cpp|s/if (auto s = a.seconds("timeout_s"); s \&\& \*s > 0) c.timeout_ms = s;/if (auto s = a.seconds("timeout_s"); s) c.timeout_ms = s;/|e2e:serve_job_status'
  'grep-cap-in-lines|src/jobs/output_view.cpp|s/r_.more = r_.text.size() + no.size() + shown.size() + 1 > s.max;/r_.more = r_.shown + 1 > s.max;/|e2e:serve_spool'
  'grep-cap-in-lines-unit|src/jobs/output_view.cpp|s/r_.more = r_.text.size() + no.size() + shown.size() + 1 > s.max;/r_.more = r_.shown + 1 > s.max;/|unit:RenderView.GrepAnswersAtMostMaxBytes'
  'cancel-answered-early|src/serve/mcp_adapter.cpp|s/^  if (\*stopped) return reply(cancelled(j, rev.modern));/  return reply(cancelled(j, rev.modern));/|node:test/mcp_tasks.test.mjs'
  'end-words-swap|src/core/end_words.cpp|/E::release,/s/"release",/"replaced",/|unit:EndWords.*'
  'time-up-cause-dropped|src/jobs/stops.cpp|s/  if (end != Call::End::main_exited \&\& !j.ended_by) j.ended_by = end;/  (void)end;/|e2e:serve_idle_timeout'
  'flag-value-words|src/cli/command_line.cpp|s/(is_flag(o) ? " takes no value" : " needs a value")/(is_flag(o) ? " needs a value" : " takes no value")/|e2e:bad_input'
  'guard-none|src/confine/cgroup.cpp|s/CrashGuard\* guard() noexcept override { return this; }/CrashGuard* guard() noexcept override { return nullptr; }/|e2e:serve_guard_killed'
  'supervise-keeps-jobs|src/cli/supervise_cmd.cpp|s/    return CallHost::stop_recorded_jobs(jobs_left, verbose > 0);/    return jobs_left.empty();/|e2e:supervise_init_owner_jobs'
  'storm-group-kill-dropped|src/core/stopper.cpp|s/  if (ctx_.group_pidfd >= 0) (void)sys::pidfd_signal_group(ctx_.group_pidfd, SIGKILL);/  (void)0;/|e2e:e9_fork_storm'
  'look-ahead-not-refreshed|src/core/stopper.cpp|s/^  ahead_ = true;/  ahead_ = false;/|unit:Stopper.ASnapshotTakenAheadIsRefreshedByTheStopsOwn'
  'ready-answer-shape-dropped|src/jobs/answers.cpp|s/        a.shape = w.shape;/        a.shape = {};/|node:test/mcp_v2.test.mjs'
  'stop-priority-not-taken|src/core/call.cpp|/^  res.stop.reason = why;$/{n;s/^  raise_priority();/  (void)0;/}|e2e:stop_priority'
  'child-starts-raised|src/confine/launch.cpp|s/  plan.nice = sys::unraised_nice();/  plan.nice = sys::kKeepNice;/|unit:SpawnStart.AChildStartedDuringAStopTakesTheUnraisedPriority'
  'deadline-not-raised|src/core/call.cpp|s/^  if (s.opts.realtime_stop .* s.raise_priority();/  (void)0;/|e2e:stop_priority'
  'run-stop-not-realtime|src/core/call_machine.h|s/priority.take(opts.realtime_stop [^ ]* /priority.take(/|e2e:stop_priority'
  'pidns-init-not-raised|src/confine/pidns.cpp|s/^  if (!init_lent_ .*/  (void)init_lent_;/|e2e:stop_priority'
  'names-waited-for|src/core/stopper.cpp|s/^      if (now >= deadline) break;/      (void)now;/|unit:Stopper.ASnapshotDoesNotWaitForACommandLineThatDoesNotCome'
  'due-index-not-told|src/jobs/job_table.cpp|s/^  touch(\*it->second);/  (void)0;/|e2e:serve_term_ignored'
)

# --check: only that each sed still changes exactly one line of its file
# (no build, no test): the test suite runs this, so that a change to the
# code does not leave an entry that plants nothing.
if [ "${1:-}" = --check ]; then
  bad=0
  for entry in "${BUGS[@]}"; do
    IFS='|' read -r name file expr test <<< "$entry"
    changed=$(sed -e "$expr" "$src/$file" | diff "$src/$file" - | grep -c '^[<>]')
    if [ "$changed" != 2 ]; then
      echo "$name: the sed on $file changes $((changed / 2)) lines, not one: update it and tests/planted_bugs.md"
      bad=1
    fi
  done
  [ $bad = 0 ] && echo "all ${#BUGS[@]} plants apply to one line each"
  exit $bad
fi

work=$(mktemp -d /tmp/pmon-planted.XXXXXX)
logs=$work/logs
tree=$work/tree
mkdir -p "$logs" "$tree"
trap 'rm -rf --one-file-system "$tree"; echo "logs: $logs"' EXIT
(cd "$src" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$tree"
[ -d "$src/node/node_modules" ] && ln -s "$src/node/node_modules" "$tree/node/node_modules"
build=$tree/build
launcher=()
if command -v ccache > /dev/null; then
  export CCACHE_BASEDIR=$tree CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
echo "building the unplanted tree in $tree ..."
if ! cmake -S "$tree" -B "$build" -DBUILD_TESTING=ON -DPMON_BENCH=OFF -DPMON_PYTHON_BINDING=OFF "${launcher[@]}" > "$logs/cmake.log" 2>&1 ||
  ! cmake --build "$build" -j2 >> "$logs/cmake.log" 2>&1; then
  echo "the unplanted tree does not build: $logs/cmake.log"
  exit 1
fi

# run_test TEST LOG: 0 when the test passed.
run_test() {
  local kind=${1%%:*} what=${1#*:}
  case $kind in
    e2e)
      ctest --test-dir "$build" -R "^e2e\.$what\$" --output-on-failure --timeout 600 > "$2" 2>&1
      ! grep -q "e2e\.$what .*\*\*\*\(Failed\|Timeout\)" "$2" && grep -q "e2e\.$what .* Passed" "$2" ;;
    unit) "$build/tests/pmon_unit_tests" --gtest_filter="$what" > "$2" 2>&1 ;;
    node)
      [ -d "$tree/node/node_modules" ] || { echo "no node/node_modules: run npm ci in node/ first" > "$2"; return 2; }
      (cd "$tree/node" && PMON=$build/pmon PMON_HELPERS=$build/tests/helpers \
        timeout 900 node --test --test-timeout=300000 "$what") > "$2" 2>&1 ;;
  esac
}

rows=()
for entry in "${BUGS[@]}"; do
  IFS='|' read -r name file expr test <<< "$entry"
  [ $# = 0 ] || [[ " $* " == *" $name "* ]] || continue
  cp "$tree/$file" "$work/orig"
  sed -i -e "$expr" "$tree/$file"
  changed=$(diff "$work/orig" "$tree/$file" | grep -c '^[<>]')
  if [ "$changed" != 2 ]; then
    rows+=("$name|$file|not planted (the line is not there as written)|$test|-")
  elif ! cmake --build "$build" -j2 > "$logs/$name.build.log" 2>&1; then
    rows+=("$name|$file|planted, did not build|$test|-")
  else
    echo "planted $name; running $test ..."
    rc=0; run_test "$test" "$logs/$name.log" || rc=$?
    case $rc in
      0) verdict="NOT caught (the test passed)" ;;
      2) verdict="not run ($(head -1 "$logs/$name.log"))" ;;
      *) verdict=caught ;;
    esac
    rows+=("$name|$file|planted|$test|$verdict")
  fi
  cp "$work/orig" "$tree/$file"
done

printf '\n%-24s %-28s %-10s %-44s %s\n' bug file planted test result
for r in "${rows[@]}"; do
  IFS='|' read -r name file planted test verdict <<< "$r"
  printf '%-24s %-28s %-10s %-44s %s\n' "$name" "$file" "${planted%%,*}" "$test" "$verdict"
done
for r in "${rows[@]}"; do [[ $r == *"|caught" ]] || exit 1; done
