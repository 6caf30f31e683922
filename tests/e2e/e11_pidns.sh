# SPDX-License-Identifier: Apache-2.0
# E11 on pidns: the supervisor itself is SIGKILLed (a harness crash). The
# namespace init is armed with PR_SET_PDEATHSIG(SIGKILL), so the kernel kills
# it, and with it the whole namespace: a setsid daemon, a TERM-ignorer, a
# plain child and the command are all gone within 1 s, by host pid + start
# time. pmon's own init is gone too (nothing left for `pmon gc`).
. "$(dirname "$0")/common.inc"

have_backend pidns || skip "the pidns backend is not available here"
[ -n "$PMON_TEST_HOSTPROC" ] || { missing_backend pidns "no bind mount of the host's /proc"; skip "needs root for the host /proc bind mount"; }

# Sourced by each process of the tree: records itself by host pid.
cat > "$t/rec.sh" <<REC
read -r hp _ < \$PMON_TEST_HOSTPROC/self/stat
echo "\$hp \$(cut -d' ' -f22 /proc/\$\$/stat) \$n" >> $t/tree.tmp
REC
"$PMON" run -q --confine pidns --grace 30s -- sh -c '
  setsid sh -c "n=daemon; . '"$t"'/rec.sh; exec sleep 1001" &
  sh -c "trap \"\" TERM; n=ignorer; . '"$t"'/rec.sh; exec sleep 1002" &
  sh -c "n=child; . '"$t"'/rec.sh; exec sleep 1003" &
  while [ "$(wc -l < '"$t"'/tree.tmp 2>/dev/null || echo 0)" -lt 3 ]; do sleep 0.01; done
  n=main; . '"$t"'/rec.sh; mv '"$t"'/tree.tmp '"$t"'/tree
  wait' &
pp=$!
record_pid "$pp"
for _ in $(seq 1000); do [ -f "$t/tree" ] && break; sleep 0.01; done
[ -f "$t/tree" ] || fail "the tree did not start"
while read -r pid st _; do echo "$pid $st" >> "$t/pids"; echo "$pid $st" >> "$STATE/pids"; done < "$t/tree"
[ "$(wc -l < "$t/tree")" = 4 ] || fail "want 4 recorded processes: $(cat "$t/tree")"
# pmon's namespace init, by host pid: the child of pmon running __nsinit.
init_pid=""
for c in $(cat /proc/$pp/task/*/children); do
  [ "$(tr '\0' ' ' < /proc/$c/cmdline 2>/dev/null | cut -d' ' -f2)" = __nsinit ] && init_pid=$c
done
[ -n "$init_pid" ] || fail "no pmon __nsinit child of pmon $pp"
init_st=$(start_time_of "$init_pid")
echo "$init_pid $init_st" >> "$t/pids"; echo "$init_pid $init_st" >> "$STATE/pids"

kill -9 "$pp"
wait "$pp" 2>/dev/null || true
t0=$(date +%s%N)
for i in $(seq 100); do
  left=""
  while read -r pid st name; do alive "$pid" "$st" && left="$left $name($pid)"; done < "$t/tree"
  alive "$init_pid" "$init_st" && left="$left init($init_pid)"
  [ -z "$left" ] && break
  sleep 0.01
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ -z "$left" ] || fail "still alive 1 s after pmon was SIGKILLed:$left"
echo "ok: pidns: all 4 + the init gone ${ms} ms after SIGKILL of pmon (bound 1 s)"
pass
