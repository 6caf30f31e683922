# SPDX-License-Identifier: Apache-2.0
# Guest only (scripts/guest.sh): the Python package's pytest suite on a pure
# cgroup2 host with systemd as PID 1, as root in a system service (so the
# package's cgroup backend gets its leaves from a scope the system manager
# delegates). The package is the one built in the build directory
# ($PMON_BUILD_DIR/python); the tests are python/tests.
# guest: alone (its 200-calls-at-once cases run with nothing else, as on the host)
. "$(dirname "$0")/../e2e/common.inc"

src=$(cd "$(dirname "$0")/../.." && pwd)
pkg=$PMON_BUILD_DIR/python
[ -d "$pkg/pmon" ] || skip "the Python package was not built in $PMON_BUILD_DIR"
[ -d "$src/python/tests" ] || fail "no python/tests next to this scenario"
python3 -c 'import pytest' 2>/dev/null || skip "python3-pytest is not installed"
cd "$src" || fail "cannot enter $src"
# 200 calls at once hold more descriptors than a service's default soft
# limit of 1024 open files (the host suite runs with more).
ulimit -n 20000 || fail "cannot raise the open files limit"
rc=0
# (Not test_readme.py: it runs the snippets of README.md and docs/, which
# need a checkout with its build/ and the Node package; the host suite runs
# it, and what the snippets do is not the guest's business.)
PYTHONPATH=$pkg PMON_HELPERS=$HELPERS python3 -m pytest -q -rs -p no:cacheprovider \
  --ignore=python/tests/test_readme.py python/tests \
  > "$t/pytest.out" 2>&1 || rc=$?
cat "$t/pytest.out"
[ $rc = 0 ] || fail "pytest failed (exit $rc)"
# Everything the tests need is here: a skipped test is a failure too.
! grep -qE '^[0-9]+ passed.*[0-9]+ skipped|[0-9]+ skipped' "$t/pytest.out" || fail "pytest skipped tests (see above)"
pass "$(tail -n 1 "$t/pytest.out")"
