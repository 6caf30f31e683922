#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Lists every skipped test of a run, with its reason, from the JUnit files
ctest (--output-junit), pytest (--junitxml) and node --test (its junit
reporter, node.xml) wrote into RESULTS_DIR.

    list_skips.py RESULTS_DIR ALLOWED_FILE STRICT

STRICT=1: exits 1 when a skipped test is not in ALLOWED_FILE (lines of
"<test name or fnmatch pattern> <reason>"; # starts a comment), or when a
line there has no reason. A skip in GoogleTest (GTEST_SKIP) reaches ctest
as a skip too: gtest_discover_tests marks "[  SKIPPED ]" output so. A Node
test's todo counts as a skip: it did not run as a test that can fail."""
import fnmatch
import pathlib
import sys
import xml.etree.ElementTree as ET


def skip_reason(case, skipped):
    out = (case.findtext("system-out") or "") + "\n" + (case.findtext("system-err") or "")
    lines = out.splitlines()
    for line in lines:  # the e2e scenarios' skip(): "SKIP: name: why"
        if line.startswith("SKIP: "):
            return line[len("SKIP: "):]
    for i, line in enumerate(lines):  # GTEST_SKIP() << why: "file:line: Skipped" then why
        if line.endswith(": Skipped") and i + 1 < len(lines) and lines[i + 1].strip():
            return lines[i + 1].strip()
    return skipped.get("message") or (skipped.text or "").strip() or "no reason given"


def skips(results):
    out = []
    ctest = results / "ctest.xml"
    if ctest.exists():
        for case in ET.parse(ctest).getroot().iter("testcase"):
            s = case.find("skipped")
            if s is not None:
                out.append((case.get("name"), skip_reason(case, s)))
    py = results / "pytest.xml"
    if py.exists():
        for case in ET.parse(py).getroot().iter("testcase"):
            s = case.find("skipped")
            if s is not None:
                # "python.tests.test_x::test_y[param]"
                out.append((f"{case.get('classname')}::{case.get('name')}",
                            s.get("message") or "no reason given"))
    for suite in ("node", "harness"):
        xml = results / f"{suite}.xml"
        if xml.exists():
            out.extend(node_skips(ET.parse(xml).getroot(), [], suite))
    return out


def node_skips(elem, suites, suite="node"):
    """node --test's junit: <testsuite name=describe> around <testcase>s; a
    skip or todo is <skipped type="skipped"|"todo" message=reason> ("true"
    when none was given). Named "node::<describe> > <test>" (the harness
    tests': "harness::...")."""
    out = []
    for child in elem:
        if child.tag == "testsuite":
            out.extend(node_skips(child, suites + [child.get("name")], suite))
        elif child.tag == "testcase":
            s = child.find("skipped")
            if s is not None:
                why = s.get("message") or ""
                if why in ("", "true"):
                    why = "no reason given"
                if s.get("type") == "todo":
                    why = "todo: " + why
                out.append((f"{suite}::" + " > ".join(suites + [child.get("name")]), why))
            out.extend(node_skips(child, suites + [child.get("name")], suite))
    return out


def allowed(path):
    rules, bad = [], []
    for n, line in enumerate(pathlib.Path(path).read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        if len(parts) < 2:
            bad.append(f"{path}:{n}: {parts[0]} has no reason")
        rules.append(parts[0])
    return rules, bad


def main():
    results, allowed_file, strict = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
    found = skips(results)
    rules, bad = allowed(allowed_file)
    print(f"pmon tests: {len(found)} skipped")
    refused = []
    for name, why in found:
        ok = any(fnmatch.fnmatchcase(name, r) for r in rules)
        print(f"  SKIPPED {name}: {why}" + ("" if ok else "  (not in " + allowed_file + ")"))
        if not ok:
            refused.append(name)
    if not strict:
        return 0
    for b in bad:
        print("pmon tests: " + b)
    if refused:
        print(f"pmon tests: {len(refused)} skip(s) not allowed here: {' '.join(refused)}")
    return 1 if refused or bad else 0


if __name__ == "__main__":
    sys.exit(main())
