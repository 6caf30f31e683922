# SPDX-License-Identifier: Apache-2.0
# E1: a double fork + setsid() daemon is stopped with the call, on every
# backend. pgroup's boundary misses it, but pmon is its subreaper: it is
# found below pmon and stopped too, and the report says so (escaped, with
# what ended it; confinement_weak).
. "$(dirname "$0")/common.inc"

for b in $(backends); do
  rm -f "$t/daemon"
  # The daemon writes "pid start_time" of itself before it sleeps.
  "$PMON" run -q --confine "$b" --report "$t/r.json" -- sh -c '
    setsid sh -c "'"$HOSTPID_SH"'; echo \$hp \$(cut -d\" \" -f22 /proc/\$\$/stat) > '"$t"'/daemon.tmp;
                  mv '"$t"'/daemon.tmp '"$t"'/daemon; exec sleep 1000" &
    while [ ! -f '"$t"'/daemon ]; do sleep 0.01; done' || fail "$b: pmon exit $?"
  read -r pid st < "$t/daemon"
  echo "$pid $st" >> "$t/pids"; echo "$pid $st" >> "$STATE/pids"
  ! alive "$pid" "$st" || fail "$b: daemon $pid survived"
  report_is -m "$b" "$t/r.json" cleanup_verified=true
  if [ "$b" = pgroup ]; then
    # Outside the group, but below pmon (its subreaper): found and stopped.
    report_is -m "pgroup: weakness flagged" "$t/r.json" confinement_weak=true
    report_is -m "pgroup: the escapee, stopped" "$t/r.json" "escaped[pid=$pid].action=SIGTERM" "leftovers{pid=$pid}.#=0"
  fi
  echo "ok: $b"
done
pass
