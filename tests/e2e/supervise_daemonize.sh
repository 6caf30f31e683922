# SPDX-License-Identifier: Apache-2.0
# A child that daemonizes a grandchild (setsid, reparented away) on every
# start and then fails: no grandchild may survive any restart. Each start
# checks that the previous start's daemon is gone (by pid + start time)
# before it makes a new one, on every engine and every backend that claims
# to contain escapes.
. "$(dirname "$0")/common.inc"

# The daemons record themselves by host pid (through the host /proc bind
# mount under pidns, where $$ is a namespace pid), so both the next start and
# this script can look them up. A dead daemon that is still a zombie of the
# call's parent (pmon supervise, or its pidns init) at the next start was
# not reaped.
cat > "$t/child.sh" <<'EOF'
d=$1 P=${PMON_TEST_HOSTPROC:-/proc}
read -r l < "$P/self/stat"; l=${l##*) }; set -- $l; parent=$2
n=$(cat "$d/n" 2>/dev/null || echo 0)
if [ "$n" -gt 0 ]; then
  read -r pid st < "$d/daemon.$n"
  if s=$(cat "$P/$pid/stat" 2>/dev/null); then
    s=${s##*) }; set -- $s
    if [ "${20}" = "$st" ] && [ "$1" != Z ]; then echo "$pid $st" >> "$d/survivors"; fi
    if [ "${20}" = "$st" ] && [ "$1" = Z ] && [ "$2" = "$parent" ]; then echo "$pid $st" >> "$d/unreaped"; fi
  fi
fi
n=$((n + 1)); echo "$n" > "$d/n"
setsid sh -c 'read -r l < "$2/self/stat"; s=${l##*) }; set -- "$1" "$2" $s; echo "${l%% *} ${22}" > "$1.tmp"; mv "$1.tmp" "$1"; exec sleep 1000' sh "$d/daemon.$n" "$P" &
while [ ! -f "$d/daemon.$n" ]; do sleep 0.01; done
exit 1
EOF

ran=0
for b in $(backends); do
  [ "$b" = pgroup ] && continue  # setsid escapes it: its documented limit
  for engine in pidfd sigchld; do
    d="$t/$b.$engine"; mkdir "$d"
    rc=0
    "$PMON" supervise --engine "$engine" --confine "$b" --max-restarts 2 -- sh "$t/child.sh" "$d" 2> "$d/err" || rc=$?
    for f in "$d"/daemon.*; do
      [ -f "$f" ] && { cat "$f" >> "$t/pids"; cat "$f" >> "$STATE/pids"; }
    done
    [ "$rc" = 1 ] || fail "$b/$engine: exit $rc; $(cat "$d/err")"
    [ "$(cat "$d/n")" = 3 ] || fail "$b/$engine: $(cat "$d/n") starts, expected 3"
    [ ! -s "$d/survivors" ] || fail "$b/$engine: daemons survived a restart: $(cat "$d/survivors")"
    # Reaped too: no stopped daemon was left a zombie of the call's parent.
    [ ! -s "$d/unreaped" ] || fail "$b/$engine: stopped daemons were not reaped before the restart: $(cat "$d/unreaped")"
    for i in 1 2 3; do
      read -r pid st < "$d/daemon.$i"
      ! alive "$pid" "$st" || fail "$b/$engine: daemon $i (pid $pid) is still running"
    done
    [ "$(grep -c '^pmon: restart ' "$d/err")" = 2 ] || fail "$b/$engine: $(cat "$d/err")"
    [ "$(tail -n 1 "$d/err")" = 'pmon: giving up after 2 restarts' ] || fail "$b/$engine: $(cat "$d/err")"
    # Nothing extra on stderr: the seed's nine lines only.
    [ "$(wc -l < "$d/err")" = 9 ] || fail "$b/$engine: extra lines: $(cat "$d/err")"
    echo "ok: $b/$engine"
    ran=1
  done
done
[ $ran = 1 ] || skip "no backend that contains escapes"
pass
