# E1: a double fork + setsid() daemon is stopped with the call, on every
# backend that claims to contain escapes; pgroup's documented limit is that
# it misses it, and the report must say so (escaped, confinement_weak).
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
  if [ "$b" = pgroup ]; then
    alive "$pid" "$st" || fail "pgroup: expected the daemon to escape (documented limit)"
    grep -q '"confinement_weak": true' "$t/r.json" || fail "pgroup: report does not flag weakness"
    grep -q "\"pid\": $pid" "$t/r.json" || fail "pgroup: report does not list the escapee"
    kill -9 "$pid"
  else
    ! alive "$pid" "$st" || fail "$b: daemon $pid survived"
    grep -q '"cleanup_verified": true' "$t/r.json" || fail "$b: cleanup not verified"
  fi
  echo "ok: $b"
done
pass
