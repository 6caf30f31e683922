#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Puts the SPDX license line at the top of every tracked source file that
# lacks it (after a #! line): `// SPDX-License-Identifier: Apache-2.0` in
# C++, JavaScript and TypeScript, `# ...` in Python and shell. Prints the
# files it changed. tests/e2e/spdx_headers.sh fails while any file lacks it.
#   scripts/spdx.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/.."
line_for() { # $1: path
  case $1 in
    *.cpp|*.h|*.mjs|*.js|*.d.ts) echo '// SPDX-License-Identifier: Apache-2.0' ;;
    *.py|*.sh|*.inc) echo '# SPDX-License-Identifier: Apache-2.0' ;;
  esac
}
check=0; [ "${1:-}" = --check ] && check=1
missing=0
while IFS= read -r -d '' f; do
  want=$(line_for "$f")
  [ -n "$want" ] || continue
  if head -n 1 "$f" | grep -q '^#!'; then at=2; else at=1; fi
  [ "$(sed -n "${at}p" "$f")" = "$want" ] && continue
  missing=$((missing + 1))
  if [ $check = 1 ]; then echo "$f: no '$want' on line $at"; continue; fi
  if [ $at = 2 ]; then sed -i "1a $want" "$f"; else sed -i "1i $want" "$f"; fi
  echo "$f"
done < <(git ls-files -z -- '*.cpp' '*.h' '*.mjs' '*.js' '*.d.ts' '*.py' '*.sh' '*.inc')
[ $check = 0 ] || [ $missing = 0 ]
