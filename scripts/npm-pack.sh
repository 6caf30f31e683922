#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Packs pmon's npm packages (npm pack), offline:
#   scripts/npm-pack.sh VERSION OUT_DIR X64_DIR ARM64_DIR
# pmon-runtime (node/: the Node API, pmon mcp's launcher bin/pmon.mjs) with
# one optionalDependency per platform, pinned to VERSION, and the platform
# packages @pmon-runtime/linux-x64 and @pmon-runtime/linux-arm64
# (node/npm/*/package.json), each carrying the stripped static pmon and its
# helper pmon-systemd from X64_DIR / ARM64_DIR ("-": leave that one out).
# npm installs only the platform package whose os and cpu match.
# Writes the .tgz files into OUT_DIR and prints their names.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
[ $# = 4 ] || { echo "usage: scripts/npm-pack.sh VERSION OUT_DIR X64_DIR ARM64_DIR" >&2; exit 2; }
version=$1 out=$2 x64=$3 arm64=$4
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(mktemp -d /tmp/pmon-npm.XXXXXX)
trap 'rm -rf "$stage"' EXIT

pack() { # $1: staged package dir
  (cd "$1" && npm pack --offline --silent --pack-destination "$out")
}

platforms=()
for p in "x64:$x64" "arm64:$arm64"; do
  name=${p%%:*} dir=${p#*:}
  [ "$dir" = - ] && continue
  s=$stage/linux-$name
  mkdir -p "$s/bin"
  cp "$dir/pmon" "$s/bin/pmon"
  [ -f "$dir/pmon-systemd" ] && cp "$dir/pmon-systemd" "$s/bin/pmon-systemd"
  chmod 755 "$s"/bin/*
  jq --arg v "$version" '.version = $v' "$repo/node/npm/linux-$name/package.json" > "$s/package.json"
  cp "$repo/LICENSE" "$s/LICENSE"
  printf '# @pmon-runtime/linux-%s\n\nThe pmon program for the [pmon-runtime](https://www.npmjs.com/package/pmon-runtime) package; install that one.\n' "$name" > "$s/README.md"
  pack "$s"
  platforms+=("@pmon-runtime/linux-$name")
done

s=$stage/main
mkdir -p "$s/bin"
cp "$repo"/node/{index.mjs,index.d.ts,acp.mjs,acp.d.ts} "$s/"
cp "$repo/node/bin/pmon.mjs" "$s/bin/pmon.mjs"
cp "$repo/LICENSE" "$s/LICENSE"
cp "$repo/node/README.md" "$s/README.md"
deps=$(printf '%s\n' "${platforms[@]}" | jq -R --arg v "$version" '{(.): $v}' | jq -s 'add // {}')
jq --arg v "$version" --argjson deps "$deps" \
  '.version = $v | .optionalDependencies = $deps | del(.devDependencies, .scripts)' \
  "$repo/node/package.json" > "$s/package.json"
pack "$s"
