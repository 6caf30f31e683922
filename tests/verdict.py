#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The last word of scripts/test.sh: what every suite's JUnit file in
RESULTS_DIR says (ctest.xml, pytest.xml, node.xml, harness.xml), every skip with its
reason (tests/list_skips.py), and one verdict line at the very end, so that
the last screen of a run says whether it passed:

    pmon tests: PASSED: 420 passed, 0 failed, 2 skipped
    pmon tests: FAILED: 418 passed, 2 failed, 2 skipped; failed: e2e.e8_stopped, node::run > rejects

    verdict.py RESULTS_DIR ALLOWED_FILE STRICT [--not-run SUITE=WHY]...

--not-run names a suite, or a step, that did not run at all (the build
failed, npm ci failed): it fails the verdict and is named in it. STRICT=1:
a skip not allowed by ALLOWED_FILE fails it too. Exit 0 when the verdict is
PASSED, else 1."""
import pathlib
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import list_skips  # noqa: E402

SUITES = (("ctest", "ctest.xml"), ("pytest", "pytest.xml"), ("node", "node.xml"), ("harness", "harness.xml"))
NAMED = 10  # failures named on the verdict line; the rest are counted


def first_line(text):
    for line in (text or "").splitlines():
        line = line.strip()
        if line:
            return line[:200]
    return ""


def why_failed(case, failure):
    """One line: an e2e scenario's "FAIL: ..." line, else the failure's message."""
    out = (case.findtext("system-out") or "") + "\n" + (case.findtext("system-err") or "")
    for line in out.splitlines():
        if line.startswith("FAIL: "):
            return line[len("FAIL: "):][:200]
    return first_line(failure.get("message")) or first_line(failure.text) or "failed (its output is above)"


def leaf_cases(elem, path):
    """(name, case) of each test case that holds no other (node --test nests a
    test's subtests in it; the parent fails with its child: counted once)."""
    for child in elem:
        if child.tag == "testsuite":
            yield from leaf_cases(child, path + [child.get("name")])
        elif child.tag == "testcase":
            inner = list(leaf_cases(child, path + [child.get("name")]))
            if inner:
                yield from inner
            else:
                yield path + [child.get("name")], child


def case_name(suite, path, case):
    if suite == "ctest":
        return case.get("name")
    if suite == "pytest":
        return f"{case.get('classname')}::{case.get('name')}"
    return f"{suite}::" + " > ".join(p for p in path if p)


def tally(suite, path):
    """passed, failed [(name, why)], skipped of one suite's JUnit file."""
    passed, failed, skipped = 0, [], 0
    root = ET.parse(path).getroot()
    if suite in ("node", "harness"):
        cases = list(leaf_cases(root, []))
    else:  # ctest's and pytest's cases are flat
        cases = [([], c) for c in root.iter("testcase")]
    for p, case in cases:
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        if bad is not None or case.get("status") == "fail":
            failed.append((case_name(suite, p, case), why_failed(case, bad if bad is not None else case)))
        elif case.find("skipped") is not None or case.get("status") == "notrun":
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def main():
    args = sys.argv[1:]
    not_run = []
    while "--not-run" in args:
        i = args.index("--not-run")
        not_run.append(args[i + 1])
        del args[i:i + 2]
    results, allowed_file, strict = pathlib.Path(args[0]), args[1], args[2] == "1"

    # Every skip, with its reason; in strict mode the ones not allowed fail.
    skip_rc = 0
    saved, sys.argv = sys.argv, ["list_skips.py", str(results), allowed_file, "1" if strict else "0"]
    try:
        skip_rc = list_skips.main()
    finally:
        sys.argv = saved

    total_passed, total_skipped, failures = 0, 0, []
    print("pmon tests, suite by suite:")
    for suite, file in SUITES:
        path = results / file
        if not path.exists():
            continue
        try:
            passed, failed, skipped = tally(suite, path)
        except ET.ParseError as e:
            not_run.append(f"{suite}=its results ({path}) cannot be read: {e}")
            continue
        total_passed += passed
        total_skipped += skipped
        failures += failed
        print(f"  {suite}: {passed} passed, {len(failed)} failed, {skipped} skipped")
        for name, why in failed:
            print(f"    FAILED {name}: {why}")
    for what in not_run:
        suite, _, why = what.partition("=")
        print(f"  {suite}: did not run: {why}")

    names = [n for n, _ in failures] + [s.partition("=")[0] + " (did not run)" for s in not_run]
    if skip_rc != 0:
        names.append("skips not allowed in this run (listed above)")
    counts = f"{total_passed} passed, {len(failures)} failed, {total_skipped} skipped"
    if not names:
        print(f"pmon tests: PASSED: {counts}")
        return 0
    shown = ", ".join(names[:NAMED]) + (f" and {len(names) - NAMED} more" if len(names) > NAMED else "")
    print(f"pmon tests: FAILED: {counts}; failed: {shown}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
