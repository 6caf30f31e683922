# SPDX-License-Identifier: Apache-2.0
# Zombie storm: parents that never wait() leave thousands of zombies, which
# are reparented to pmon init when those parents exit. pmon init must reap
# every one while the command still runs (tini #236: adopted orphans), as a
# subreaper and as PID 1 of a pidns.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/init_lib.inc"

WAVES=4 PER=500

# Zombies whose parent is PID, as the host sees them.
zombies_of() {
  cat /proc/[0-9]*/stat 2>/dev/null | sed 's/.*) //' | awk -v p="$1" '$1 == "Z" && $2 == p' | wc -l
}

run_case() { # $1: label, $2: prefix (unshare ...) or empty
  rm -f "$t/n" "$t/stormed" "$t/go" "$t/adopters"
  $2 "$PMON" init -q -- sh -c "
    $HELPERS/init_zombie_storm $WAVES $PER $t/adopters > $t/n.tmp; mv $t/n.tmp $t/n
    while [ ! -f $t/go ]; do sleep 0.01; done" &
  local root=$! init; record_pid "$root"
  wait_file "$t/n" || fail "$1: the storm never finished"
  if [ -n "$2" ]; then init=$(host_pid_of "$root" 1); else init=$root; fi
  [ -n "$init" ] || fail "$1: cannot find pmon init below $root"
  record_pid "$init"
  local n; n=$(cat "$t/n")
  [ "$n" -ge $((WAVES * PER / 2)) ] || fail "$1: only $n children were forked (pid space exhausted?)"
  # Each wave's witness names who adopted the wave's orphans: pmon init (1
  # as PID 1, its host pid as a subreaper), not the host's init.
  local want=$init; [ -n "$2" ] && want=1
  local i=0
  while [ "$(grep -c . "$t/adopters" 2>/dev/null)" -lt $WAVES ]; do
    i=$((i + 1)); [ $i -lt 300 ] || fail "$1: only $(grep -c . "$t/adopters" 2>/dev/null) of $WAVES waves' witnesses reported"
    sleep 0.1
  done
  [ "$(sort -u "$t/adopters")" = "$want" ] ||
    fail "$1: the orphans were adopted by $(sort -u "$t/adopters" | tr '\n' ' ')not by pmon init ($want)"
  # Every zombie was reparented before its wave's parent was reaped, so all
  # are ours by now; reaping them is pmon init's job (up to 30 s).
  local z; i=0
  while z=$(zombies_of "$init"); [ "$z" -gt 0 ]; do
    i=$((i + 1)); [ $i -lt 300 ] || fail "$1: $z zombies still unreaped under pmon init after 30 s"
    sleep 0.1
  done
  touch "$t/go"
  local rc=0; wait "$root" || rc=$?
  [ "$rc" = 0 ] || fail "$1: pmon init exit $rc"
  echo "ok: $1: $n zombies reaped"
}

run_case "subreaper/auto" ""
unshare --pid --fork true 2>/dev/null || skip "no PID namespaces here"
run_case "PID 1" "unshare --pid --fork --kill-child"
pass
