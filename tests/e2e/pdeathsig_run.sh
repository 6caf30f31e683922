# SPDX-License-Identifier: Apache-2.0
# pmon run --pdeathsig: the command is armed (as its exec'd image sees it),
# default none, bad values fail with 125; and when pmon itself is SIGKILLed
# (a harness crash) the armed command gets the signal.
. "$(dirname "$0")/common.inc"

probe=$HELPERS/pdeathsig_probe
[ "$("$PMON" run -q -- "$probe")" = "pdeathsig=0" ] || fail "default is not none"
[ "$("$PMON" run -q --pdeathsig TERM -- "$probe")" = "pdeathsig=15" ] || fail "--pdeathsig TERM not armed"
[ "$("$PMON" run -q --pdeathsig 9 -- "$probe")" = "pdeathsig=9" ] || fail "--pdeathsig 9 not armed"
[ "$("$PMON" run -q --pdeathsig none -- "$probe")" = "pdeathsig=0" ] || fail "--pdeathsig none armed something"
rc=0; "$PMON" run -q --pdeathsig BOGUS -- true 2>/dev/null || rc=$?
[ "$rc" = 125 ] || fail "--pdeathsig BOGUS gave $rc, want 125"
[ "$("$PMON" init -q --pdeathsig TERM -- "$probe")" = "pdeathsig=15" ] || fail "init --pdeathsig TERM not armed"
echo "ok: arming"

# pmon dies by SIGKILL; the probe (blocked on its stdin, a fifo we hold)
# must then die by SIGTERM. subreaper confinement: no cgroup is left behind.
mkfifo "$t/in" "$t/out"
exec 7<>"$t/in"
"$PMON" run -q --confine subreaper --pdeathsig TERM -- sh -c "
  echo \$\$ \$(cut -d' ' -f22 /proc/\$\$/stat) > $t/probe.tmp; mv $t/probe.tmp $t/probe
  exec $probe --wait" <&7 > "$t/out" &
pmon_pid=$!
record_pid "$pmon_pid"
exec 8<"$t/out"
read -r line <&8
[ "$line" = "pdeathsig=15" ] || fail "probe said '$line'"
read -r pid st < "$t/probe"
echo "$pid $st" >> "$t/pids"; echo "$pid $st" >> "$STATE/pids"
kill -9 "$pmon_pid"
wait "$pmon_pid" 2>/dev/null || true
i=0
while alive "$pid" "$st"; do
  i=$((i + 1)); [ $i -lt 500 ] || fail "the probe outlived its SIGKILLed pmon by 5 s"
  sleep 0.01
done
exec 7>&- 8<&-
echo "ok: pmon SIGKILLed -> the command got its pdeathsig"
pass
