# SPDX-License-Identifier: Apache-2.0
# Every tracked source file (C++, JavaScript, TypeScript declarations,
# Python, shell) starts with its SPDX license line, after a #! line if it has
# one: scripts/spdx.sh --check lists those that do not (scripts/spdx.sh adds
# the line).
. "$(dirname "$0")/common.inc"
src=$(cd "$(dirname "$0")/../.." && pwd)
command -v git > /dev/null || skip "git is not installed"
git -C "$src" rev-parse --git-dir > /dev/null 2>&1 || skip "not a git checkout"
out=$("$src/scripts/spdx.sh" --check) || fail "files without the SPDX line (add it with scripts/spdx.sh):
$out"
pass "$(git -C "$src" ls-files -- '*.cpp' '*.h' '*.mjs' '*.js' '*.d.ts' '*.py' '*.sh' '*.inc' | wc -l) files"
