# SPDX-License-Identifier: Apache-2.0
# pmon as PID 1 of a real OCI container (runc): a storm of orphans that die
# at once leaves no zombie behind, and runc run returns the main process's
# status. Settings come from the image's environment (PMON_INIT_*).
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/runc.inc"

id=$(runc_id zombies)
n=400
mkfifo "$t/shared/fifo" 2>/dev/null || { make_bundle; mkfifo "$t/shared/fifo"; }
# 20 subshells leave 20 orphans each, blocked opening a FIFO; they are
# PID 1's once their subshell is gone. One write releases them all at once.
RUNC_JQ='.process.env += ["PMON_INIT_VERBOSITY=2"]' runc_start "$id" /bin/pmon -- sh -c '
  i=0
  while [ $i -lt 20 ]; do
    (j=0; while [ $j -lt 20 ]; do cat /shared/fifo > /dev/null & j=$((j + 1)); done)
    i=$((i + 1))
  done
  while [ ! -f /shared/go ]; do sleep 0.01; done
  exit 3'
init=$(runc_init_pid "$id") || fail "the container never ran: $(cat "$t/$id.err")"
record_pid "$init"

# The container's cat processes (host pids), not yet exited.
cats() { tree_of "$init" | awk '$2 != "Z" && $3 == "cat" { print $1 }'; }
for _ in $(seq 2000); do [ "$(cats | wc -l)" = $n ] && break; sleep 0.01; done
[ "$(cats | wc -l)" = $n ] || fail "want $n orphans, have $(cats | wc -l)"
# (They are not recorded one by one: they die with the container's PID
# namespace whatever happens, and its init is recorded.)
# Release them: a writer appears (opening read-write does not block) and
# goes; one not yet in open() when it came needs another round.
for _ in $(seq 100); do
  [ -z "$(cats)" ] && break
  exec 3<> "$t/shared/fifo"; exec 3>&-
  sleep 0.01
done
[ -z "$(cats)" ] || fail "the orphans did not exit"

# Zombies of the container's init (host view): its own children that
# died and were not reaped. (The main shell's own children, its sleeps, are
# the shell's to reap: one can be caught a zombie for an instant, and is
# not counted.) It reaps on SIGCHLD: wait (up to 10 s) for the count to
# reach zero, and take the sample that did.
zombies() {
  cat /proc/[0-9]*/stat 2>/dev/null | awk -v r="$init" '{
      c = $0; sub(/^.*\) /, "", c); split(c, f, " ")
      if (f[2] == r && f[1] == "Z") n++ }
    END { print n + 0 }'
}
z=
for _ in $(seq 1000); do z=$(zombies); [ "$z" = 0 ] && break; sleep 0.01; done
[ "$z" = 0 ] || fail "$z zombie(s) of the container's init left: $(tree_of "$init" | awk '$2 == "Z"' | head -5 | tr '\n' ' ')"
runc_record_all "$id"

touch "$t/shared/go"
rc=0; wait "$runc_pid" || rc=$?
[ "$rc" = 3 ] || fail "runc run exit $rc, want the main process's 3: $(cat "$t/$id.err")"
reaped=$(sed -n 's/^pmon: init: reaped \([0-9]*\) process.*/\1/p' "$t/$id.err")
[ -n "$reaped" ] && [ "$reaped" -gt $n ] || fail "pmon reaped '$reaped', want more than $n: $(cat "$t/$id.err")"
echo "ok: $n orphans reaped, no zombie left; exit 3"
pass
