# SPDX-License-Identifier: Apache-2.0
# The npm packages as a user gets them (label artifact: CI runs it on the
# artifacts of scripts/release.sh, PMON_DIST=dist): pmon-runtime and the
# platform package install offline from their tarballs into a fresh
# project; the package finds the pmon of its platform package (no PMON, not
# on PATH); the Node suite runs against the installed package; and the MCP
# SDK's client starts `npx pmon-runtime mcp` and runs a call through it.
# Without PMON_DIST the tarballs are packed here from the build's pmon.
. "$(dirname "$0")/common.inc"

src=$(cd "$(dirname "$0")/../.." && pwd)
command -v npm > /dev/null || skip "npm is not installed"
[ -d "$src/node/node_modules/@modelcontextprotocol/sdk" ] ||
  skip "the SDKs the Node tests use are not installed (cd node && npm ci)"
case $(uname -m) in x86_64) plat=linux-x64 ;; aarch64) plat=linux-arm64 ;; *) skip "no npm platform package for $(uname -m)" ;; esac

dist=${PMON_DIST:-}
if [ -z "$dist" ]; then
  dist=$t/dist
  mkdir -p "$t/bin"
  strip -o "$t/bin/pmon" "$PMON"
  "$src/scripts/npm-pack.sh" "$("$PMON" --version | cut -d' ' -f2)" "$dist" "$t/bin" - > /dev/null
fi
main=$(ls "$dist"/pmon-runtime-[0-9]*.tgz)   # the README's globs
platpkg=$(ls "$dist"/pmon-runtime-$plat-*.tgz)
echo "packages: $(basename "$main") ($(stat -c %s "$main") bytes), $(basename "$platpkg") ($(stat -c %s "$platpkg") bytes)"

# A fresh project, the two tarballs installed into it offline.
app=$t/app
mkdir -p "$app"
echo '{ "name": "pmon-npm-test", "version": "1.0.0", "private": true, "type": "module" }' > "$app/package.json"
(cd "$app" && npm install --offline --no-audit --no-fund --loglevel=error "$main" "$platpkg") > "$t/npm.log" 2>&1 ||
  fail "npm install of the tarballs failed: $(tail -20 "$t/npm.log")"
deps=$(jq -c '.dependencies' "$app/package.json")
echo "ok: npm install of the tarballs: $deps"
# The SDKs the tests drive pmon with (not dependencies of the package): the
# ones node/ installed with npm ci, linked in.
for d in @modelcontextprotocol @agentclientprotocol zod; do
  [ -e "$app/node_modules/$d" ] || ln -s "$src/node/node_modules/$d" "$app/node_modules/$d"
done
[ -x "$app/node_modules/@pmon-runtime/$plat/bin/pmon" ] || fail "no bin/pmon in @pmon-runtime/$plat"
[ -L "$app/node_modules/.bin/pmon" ] || fail "npm made no pmon command (node_modules/.bin/pmon)"

unset PMON
found=$(cd "$app" && PATH=/usr/bin:/bin node --input-type=module -e "import { findPmon } from 'pmon-runtime'; console.log(findPmon())")
[ "$found" = "$app/node_modules/@pmon-runtime/$plat/bin/pmon" ] || fail "findPmon() is $found, not the platform package's"
v=$(cd "$app" && PATH=/usr/bin:/bin npx --offline --no-install pmon --version)
echo "ok: the installed package finds $found ($v)"

# The Node suite against the installed package: node/test, node/fixtures and
# the ACP example, in the same layout, importing the package by its name;
# the README's and docs' snippets run against the installed package too.
mkdir -p "$app/src/node" "$app/src/examples"
cp -r "$src/node/test" "$src/node/fixtures" "$app/src/node/"
cp -r "$src/README.md" "$src/docs" "$app/src/"
cp "$src/examples/acp_client.mjs" "$app/src/examples/"
sed -i -e "s#'\.\./index\.mjs'#'pmon-runtime'#" -e "s#'\.\./node/acp\.mjs'#'pmon-runtime/acp'#" \
  "$app"/src/node/test/*.mjs "$app"/src/node/fixtures/*.mjs "$app"/src/examples/acp_client.mjs
! grep -n "index\.mjs\|node/acp\.mjs" "$app"/src/node/test/*.mjs "$app"/src/node/fixtures/*.mjs "$app"/src/examples/*.mjs ||
  fail "a test still imports the source tree"
(cd "$app/src/node" && PMON_NODE_PACKAGE=$app/node_modules/pmon-runtime node --test --test-reporter=spec test/*.test.mjs) > "$t/node.log" 2>&1 ||
  fail "the Node suite failed against the installed package: $(grep -E -A8 '^\s*(✖|not ok)' "$t/node.log" | head -60)"
echo "ok: the Node suite passed against the installed package: $(grep -E '^ℹ (tests|pass|fail)' "$t/node.log" | tr '\n' ' ')"

cp "$src/tests/e2e/npm_mcp_client.mjs" "$app/"
(cd "$app" && PATH=/usr/bin:/bin node npm_mcp_client.mjs "$t") ||
  fail "npx pmon-runtime mcp did not serve the MCP client"
pass
