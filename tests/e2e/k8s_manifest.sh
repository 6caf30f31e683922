# SPDX-License-Identifier: Apache-2.0
# The example manifests in deploy/kubernetes/ are valid against the
# Kubernetes API schemas of the npm package kubernetes-models (types,
# required fields, enums; unknown fields are not caught), and a manifest
# with a wrong type is not (the control). The packages come from the npm
# registry once (npm ci, pinned by package-lock.json); the check is offline.
. "$(dirname "$0")/common.inc"

src=$(cd "$(dirname "$0")/../.." && pwd)
command -v node > /dev/null && command -v npm > /dev/null || skip "node and npm are not installed"
cp -r "$src/deploy/kubernetes/validate" "$t/validate"
rm -rf "$t/validate/node_modules"
(cd "$t/validate" && npm ci --no-audit --no-fund --prefer-offline) > "$t/npm.log" 2>&1 ||
  skip "cannot install kubernetes-models with npm: $(tail -1 "$t/npm.log")"
for f in "$src"/deploy/kubernetes/*.yaml; do
  node "$t/validate/validate.mjs" "$f" || fail "$(basename "$f") is not valid"
done
sed 's/^  terminationGracePeriodSeconds: .*/  terminationGracePeriodSeconds: thirty/' \
  "$src/deploy/kubernetes/agent-sandbox.yaml" > "$t/bad.yaml"
! node "$t/validate/validate.mjs" "$t/bad.yaml" > "$t/bad.out" || fail "a string for terminationGracePeriodSeconds passed"
grep -q 'terminationGracePeriodSeconds must be integer' "$t/bad.out" || fail "the control failed for another reason: $(cat "$t/bad.out")"
echo "ok: the manifests validate; the control does not"
pass
