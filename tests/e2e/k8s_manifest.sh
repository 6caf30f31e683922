# SPDX-License-Identifier: Apache-2.0
# The example manifests in deploy/kubernetes/ and deploy/agent-sandbox/ are
# valid against the Kubernetes API schemas of the npm package
# kubernetes-models (types, required fields, enums; unknown fields are not
# caught) and, for agent-sandbox's Sandbox and SandboxTemplate, against
# their fields as validate/agent-sandbox.mjs has them (their pod template
# as a PodSpec); a manifest with a wrong type, a wrong enum or a missing
# field is not (the controls). The packages come from the npm registry
# once (npm ci, pinned by package-lock.json); the check is offline.
. "$(dirname "$0")/common.inc"

src=$(cd "$(dirname "$0")/../.." && pwd)
command -v node > /dev/null && command -v npm > /dev/null || skip "node and npm are not installed"
cp -r "$src/deploy/kubernetes/validate" "$t/validate"
rm -rf "$t/validate/node_modules"
(cd "$t/validate" && npm ci --no-audit --no-fund --prefer-offline) > "$t/npm.log" 2>&1 ||
  skip "cannot install kubernetes-models with npm: $(tail -1 "$t/npm.log")"
for f in "$src"/deploy/kubernetes/*.yaml "$src"/deploy/agent-sandbox/*.yaml; do
  node "$t/validate/validate.mjs" "$f" || fail "$(basename "$f") is not valid"
done
sed 's/^  terminationGracePeriodSeconds: .*/  terminationGracePeriodSeconds: thirty/' \
  "$src/deploy/kubernetes/agent-sandbox.yaml" > "$t/bad.yaml"
! node "$t/validate/validate.mjs" "$t/bad.yaml" > "$t/bad.out" || fail "a string for terminationGracePeriodSeconds passed"
grep -q 'terminationGracePeriodSeconds must be integer' "$t/bad.out" || fail "the control failed for another reason: $(cat "$t/bad.out")"
control() { # $1: the sed that breaks it, $2: the file, $3: what the error must say
  sed "$1" "$src/deploy/agent-sandbox/$2" > "$t/bad.yaml"
  ! node "$t/validate/validate.mjs" "$t/bad.yaml" > "$t/bad.out" || fail "$2 broken by '$1' passed"
  grep -qF "$3" "$t/bad.out" || fail "$2 broken by '$1' failed for another reason: $(cat "$t/bad.out")"
}
control 's/operatingMode: Running/operatingMode: Paused/' sandbox.yaml 'spec.operatingMode must be one of Running, Suspended'
control 's/^  podTemplate:/  podTemplat:/' sandbox-template.yaml 'spec.podTemplate is required; spec.podTemplat is not a field'
control 's/terminationGracePeriodSeconds: 30/terminationGracePeriodSeconds: thirty/' sandbox-template.yaml \
  'spec.podTemplate.spec: data/spec/terminationGracePeriodSeconds must be integer'
control 's/containerPort: 8080/containerPort: rest/' sandbox.yaml 'containerPort must be integer'
echo "ok: the manifests validate; the controls do not"
pass
