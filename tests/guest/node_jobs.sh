# SPDX-License-Identifier: Apache-2.0
# Guest only (scripts/guest.sh): the part of the Node package's suite that
# depends on the host's cgroups, which `all` runs (the whole suite takes
# longer than CI can give it on an emulated CPU: run tests/guest/node.sh by
# name): jobs that die with the Node process (lifetime), limits set in a
# delegated scope with the memory, pids and cpu controllers (limits), and
# the MCP SDK's client against `pmon mcp` (mcp).
PMON_NODE_TESTS="test/lifetime.test.mjs test/limits.test.mjs test/mcp.test.mjs" \
  exec bash "$(dirname "$0")/node.sh"
