# SPDX-License-Identifier: Apache-2.0
# The test command's last line is its verdict (tests/verdict.py): every
# suite counted (passed, failed, skipped), the failures named on that line
# and, above it, each with its reason; a suite that did not run, or a skip
# strict mode does not allow, fails it. Fed JUnit files as ctest, pytest
# and node --test write them.
. "$(dirname "$0")/common.inc"
VERDICT=$(cd "$(dirname "$0")/.." && pwd)/verdict.py

mkdir "$t/pass" "$t/fail"
cat > "$t/pass/ctest.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="(empty)" tests="2" failures="0" disabled="0" skipped="1">
  <testcase name="e2e.ok" classname="e2e.ok" time="0.1" status="run"><system-out></system-out></testcase>
  <testcase name="e2e.sk" classname="e2e.sk" time="0.1" status="notrun">
    <skipped message="SKIP_RETURN_CODE=77"/><system-out>SKIP: sk: no runc here
</system-out></testcase>
</testsuite>
XML
cat > "$t/pass/pytest.xml" <<'XML'
<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="0" skipped="0" tests="2"><testcase classname="python.tests.test_a" name="test_one" time="0.0" /><testcase classname="python.tests.test_a" name="test_two[x]" time="0.0" /></testsuite></testsuites>
XML
cat > "$t/pass/node.xml" <<'XML'
<?xml version="1.0" encoding="utf-8"?>
<testsuites>
  <testsuite name="run" tests="1" failures="0" skipped="0"><testcase name="works" classname="test"/></testsuite>
  <testcase name="parent" classname="test"><testcase name="child" classname="test"/></testcase>
</testsuites>
XML
: > "$t/allowed"
echo 'e2e.sk the scenario needs runc' > "$t/allowed.sk"

rc=0; python3 "$VERDICT" "$t/pass" "$t/allowed.sk" 1 > "$t/out" || rc=$?
[ $rc = 0 ] || fail "all passed: exit $rc: $(cat "$t/out")"
[ "$(tail -1 "$t/out")" = "pmon tests: PASSED: 5 passed, 0 failed, 1 skipped" ] || fail "all passed: $(cat "$t/out")"
grep -q "^  SKIPPED e2e.sk: sk: no runc here$" "$t/out" || fail "the skip and its reason: $(cat "$t/out")"
echo "ok: $(tail -1 "$t/out")"

# Not strict, the same skip is listed and allowed; strict without it in
# the allowed list, it fails the verdict.
rc=0; python3 "$VERDICT" "$t/pass" "$t/allowed" 0 > "$t/out" || rc=$?
[ $rc = 0 ] && [ "$(tail -1 "$t/out")" = "pmon tests: PASSED: 5 passed, 0 failed, 1 skipped" ] || fail "not strict: $(cat "$t/out")"
rc=0; python3 "$VERDICT" "$t/pass" "$t/allowed" 1 > "$t/out" || rc=$?
[ $rc = 1 ] || fail "a skip strict mode refuses: exit $rc"
tail -1 "$t/out" | grep -q '^pmon tests: FAILED: 5 passed, 0 failed, 1 skipped; failed: skips not allowed' ||
  fail "a skip strict mode refuses: $(cat "$t/out")"

# Failures in every suite, each named on the last line, with its reason above.
cat > "$t/fail/ctest.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="(empty)" tests="3" failures="2" disabled="0" skipped="0">
  <testcase name="e2e.ok" classname="e2e.ok" time="0.1" status="run"><system-out></system-out></testcase>
  <testcase name="e2e.e8_stopped" classname="e2e.e8_stopped" time="9" status="fail"><failure message=""/>
    <system-out>ok: cgroup/exit
FAIL: e8_stopped: pidns/cancel: stopped so reported with action '', want SIGTERM
</system-out></testcase>
  <testcase name="e2e.slow" classname="e2e.slow" time="300" status="fail"><failure message=""/><system-out></system-out></testcase>
</testsuite>
XML
cat > "$t/fail/pytest.xml" <<'XML'
<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1" failures="0" skipped="0" tests="2"><testcase classname="python.tests.test_a" name="test_one" time="0.0" /><testcase classname="python.tests.test_a" name="test_err" time="0.0"><error message="failed on setup with &quot;RuntimeError: x&quot;">trace</error></testcase></testsuite></testsuites>
XML
cat > "$t/fail/node.xml" <<'XML'
<?xml version="1.0" encoding="utf-8"?>
<testsuites>
  <testsuite name="run" tests="2" failures="1" skipped="0">
    <testcase name="works" classname="test"/>
    <testcase name="rejects" classname="test" failure="1 == 2"><failure type="testCodeFailure" message="1 == 2">
Error [ERR_TEST_FAILURE]: 1 == 2</failure></testcase>
  </testsuite>
</testsuites>
XML
rc=0; python3 "$VERDICT" "$t/fail" "$t/allowed" 1 > "$t/out" || rc=$?
[ $rc = 1 ] || fail "failures: exit $rc: $(cat "$t/out")"
want="pmon tests: FAILED: 3 passed, 4 failed, 0 skipped; failed: e2e.e8_stopped, e2e.slow, python.tests.test_a::test_err, node::run > rejects"
[ "$(tail -1 "$t/out")" = "$want" ] || fail "failures: $(tail -1 "$t/out")"
grep -q "^    FAILED e2e.e8_stopped: e8_stopped: pidns/cancel: stopped so reported with action '', want SIGTERM$" "$t/out" ||
  fail "the scenario's FAIL line: $(cat "$t/out")"
grep -q '^    FAILED python.tests.test_a::test_err: failed on setup with "RuntimeError: x"$' "$t/out" || fail "pytest's error: $(cat "$t/out")"
grep -q '^  ctest: 1 passed, 2 failed, 0 skipped$' "$t/out" || fail "ctest's count: $(cat "$t/out")"
echo "ok: $(tail -1 "$t/out")"

# A suite that did not run fails the verdict, and is named.
rm "$t/pass/node.xml"
rc=0; python3 "$VERDICT" "$t/pass" "$t/allowed.sk" 1 --not-run "node=npm ci failed (see above)" > "$t/out" || rc=$?
[ $rc = 1 ] && [ "$(tail -1 "$t/out")" = "pmon tests: FAILED: 3 passed, 0 failed, 1 skipped; failed: node (did not run)" ] ||
  fail "a suite that did not run: exit $rc: $(cat "$t/out")"
grep -q '^  node: did not run: npm ci failed (see above)$' "$t/out" || fail "why node did not run: $(cat "$t/out")"
pass
