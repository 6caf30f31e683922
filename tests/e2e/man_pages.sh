# SPDX-License-Identifier: Apache-2.0
# The man pages are generated from the --help texts, so they say what
# --help says: for pmon and every subcommand 'pmon --help' lists, the page
# exists and names every option its --help names.
. "$(dirname "$0")/common.inc"

BUILD=${PMON_BUILD_DIR:?PMON_BUILD_DIR must point at the build directory}
[ -d "$BUILD/man" ] || skip "no man pages were built (help2man is not installed; scripts/deps.sh installs it)"
command -v man > /dev/null || skip "man is not installed"

subs=$("$PMON" --help | sed -n 's/^  pmon \([a-z][a-z-]*\) .*/\1/p' | sort -u)
[ -n "$subs" ] || fail "pmon --help lists no subcommand"
for sub in "" $subs; do
  page=$BUILD/man/pmon${sub:+-$sub}.1.gz
  [ -s "$page" ] || fail "no man page for 'pmon $sub'"
  MANWIDTH=200 man -l "$page" 2> /dev/null > "$t/page"
  # shellcheck disable=SC2086
  for opt in $("$PMON" $sub --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    grep -q -- "$opt" "$t/page" || fail "the man page of 'pmon $sub' does not name $opt"
  done
done
echo "ok: $(echo $subs | wc -w) subcommands, each page names its options"
pass
