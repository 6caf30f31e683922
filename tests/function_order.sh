#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The pmon of this build was linked with its function order (registered
# only where CMake applied it): its .comment names lld, and the functions
# src/pmon.order lists lie in a few 64 KiB windows of its code (about 10),
# where the compiler's own order spreads them over about 40.
#   tests/function_order.sh PMON ORDER_FILE
set -euo pipefail
pmon=$1 order=$2
fail() { echo "FAIL: function_order: $*" >&2; exit 1; }
readelf -p .comment "$pmon" | grep -q 'Linker: .*LLD' || fail "$pmon was not linked by lld: $(readelf -p .comment "$pmon" | tr -s ' \n' ' ')"
read -r listed windows < <(nm --defined-only "$pmon" |
  awk 'NR == FNR { if ($0 !~ /^#/ && NF) want[$1] = 1; next }
       ($3 in want) { n++; w[substr($1, 1, length($1) - 4)] = 1 }
       END { print n + 0, length(w) }' "$order" -)
[ "$listed" -ge 300 ] || fail "only $listed of the functions $order lists are in $pmon"
[ "$windows" -le 16 ] || fail "the $listed functions $order lists lie in $windows windows of 64 KiB: the order was not applied"
echo "ok: $listed listed functions in $windows windows of 64 KiB, linked by lld"
