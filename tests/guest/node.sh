# SPDX-License-Identifier: Apache-2.0
# Guest only (scripts/guest.sh): the Node package's node --test suite
# (node/test/*.test.mjs: run, start, limits, lifetime, the ACP and MCP SDK
# clients) on a pure cgroup2 host with systemd as PID 1, as root in a
# system service: its jobs get leaves in a scope the system manager
# delegates, with the memory, pids and cpu controllers, so the limits are
# set there, not refused. The guest has no network: scripts/guest.sh copies
# the host's node and installs the package's npm dependencies from its
# lockfile (npm ci) before it boots.
. "$(dirname "$0")/../e2e/common.inc"

src=$(cd "$(dirname "$0")/../.." && pwd)
pkg=$src/node
[ -d "$pkg/test" ] || fail "no node/test next to this scenario"
command -v node >/dev/null || fail "node is not installed in the guest (scripts/guest.sh copies the host's)"
node --version > "$t/version" 2>&1 || fail "node does not start here: $(cat "$t/version"); $(ldd "$(command -v node)" 2>&1 | grep 'not found')"
[ -d "$pkg/node_modules/@modelcontextprotocol/sdk" ] && [ -d "$pkg/node_modules/@agentclientprotocol/sdk" ] ||
  fail "the package's npm dependencies are not installed in $pkg/node_modules (scripts/guest.sh runs npm ci)"
cd "$pkg" || fail "cannot enter $pkg"
rc=0
# PMON_NODE_TESTS: the test files to run (tests/guest/node_jobs.sh names a
# part). By default all but readme.test.mjs, which runs the snippets of
# README.md and docs/: the host suite runs it; the guest has no docs/.
if [ -n "${PMON_NODE_TESTS:-}" ]; then
  read -r -a tests <<< "$PMON_NODE_TESTS"
else
  tests=()
  for f in test/*.test.mjs; do [ "$f" = test/readme.test.mjs ] || tests+=("$f"); done
fi
PMON=$PMON PMON_HELPERS=$HELPERS node --test --test-reporter=tap "${tests[@]}" > "$t/node.out" 2>&1 || rc=$?
cat "$t/node.out"
[ $rc = 0 ] || fail "node --test failed (exit $rc)"
# Everything the tests need is here: a skipped test is a failure too.
grep -qx '# fail 0' "$t/node.out" || fail "node --test reports failures (see above)"
grep -qx '# cancelled 0' "$t/node.out" || fail "node --test cancelled tests (see above)"
grep -qx '# skipped 0' "$t/node.out" || fail "node --test skipped tests (see above)"
grep -qx '# todo 0' "$t/node.out" || fail "node --test has tests marked todo (see above)"
pass "node $(cat "$t/version"): $(sed -n 's/^# pass //p' "$t/node.out") tests passed"
