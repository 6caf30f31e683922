# SPDX-License-Identifier: Apache-2.0
# E3: orphans reparented away from the call — `sh -c 'x &'` and `nohup x &`,
# whose shell exits at once — are killed with the call AND reaped: the probe
# pmon runs under (a subreaper) must inherit no live process and no zombie
# when pmon exits, and every recorded pid must be gone for good.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/escapes.inc"

# The shell waits until the background job has recorded all N processes,
# then exits with 5 (or execs a sleeper, for the --timeout case).
wait_lines() { echo "until [ -f $t/procs ] && [ \$(wc -l < $t/procs) -ge $1 ]; do sleep 0.01; done"; }

for b in $(backends); do
  for form in amp nohup timeout; do
    rm -f "$t/procs"
    case $form in
      amp)
        cmd="$ESCAPER $t/procs -x sleep name=a,kids=2 name=b,orphan & $(wait_lines 5); exit 5"
        args=(); want=5 ;;
      nohup)
        cmd="nohup $ESCAPER $t/procs -x sleep name=a,kids=1 > /dev/null 2>&1 & $(wait_lines 3); exit 5"
        args=(); want=5 ;;
      timeout)
        cmd="$ESCAPER $t/procs -x wait name=a,kids=2 name=b,orphan & $(wait_lines 5); exec sleep 600"
        args=(--timeout 1s); want=124 ;;
    esac
    run_probed run -q --confine "$b" "${args[@]}" --report "$t/r.json" -- sh -c "$cmd"
    record_file "$t/procs"
    [ $rc = $want ] || fail "$b/$form: pmon exit $rc, want $want"
    [ -s "$t/procs" ] || fail "$b/$form: nothing recorded"
    assert_all_gone "$b/$form" "$t/procs"
    assert_nothing_left "$b/$form"
    report_is -m "$b/$form: cleanup not verified" "$t/r.json" cleanup_verified=true
    report_is -m "$b/$form: report claims escapees" "$t/r.json" "escaped.#=0"
    # Every recorded process was a leftover of the call, and is reported.
    while read -r pid st name; do
      a=$(action_of "$t/r.json" "$pid")
      [ "$a" = SIGTERM ] || fail "$b/$form: $name (pid $pid) reported with action '$a', want SIGTERM"
    done < "$t/procs"
    echo "ok: $b/$form"
  done
done
pass
