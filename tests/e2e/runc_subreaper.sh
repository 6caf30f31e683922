# SPDX-License-Identifier: Apache-2.0
# A locked-down runc container: runc's own spec, which on this kind of host
# mounts no cgroup2 and gives no CAP_SYS_ADMIN (no writable cgroup, no PID
# namespaces). pmon run --confine subreaper still stops a call's setsid
# daemon, auto falls back to subreaper, and pmon init as PID 1 on the
# subreaper backend still forwards runc kill's TERM to a setsid daemon.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/init_lib.inc"
. "$(dirname "$0")/runc.inc"

make_bundle
for confine in "--confine subreaper" ""; do
  id=$(runc_id "subreaper${confine:+-explicit}")
  write_call_script "-q $confine"
  RUNC_JQ= run_call "$id"
  finish_call "${confine:-auto}"
  grep -q '^auto  *yes  subreaper' "$t/shared/doctor" || fail "doctor's auto is not subreaper: $(cat "$t/shared/doctor")"
  grep -q '^container cgroup2  *no  .*fix: ' "$t/shared/doctor" || fail "doctor names no cgroup2 fix: $(cat "$t/shared/doctor")"
  end_container
  echo "ok: pmon run ${confine:-(auto)} stopped the daemon"
done

# pmon init as PID 1 on the subreaper backend (PMON_INIT_CONFINE).
id=$(runc_id subreaper-init)
rm -f "$t/shared/"{d,ready,got}
cat > "$t/shared/init.sh" <<'SCRIPT'
trap "exit 42" TERM
setsid sh -c 'trap "touch /shared/got; exit 0" TERM; echo $$ > /shared/d; while :; do sleep 0.05; done' &
while [ ! -s /shared/d ]; do sleep 0.01; done
touch /shared/ready
while :; do sleep 0.05; done
SCRIPT
RUNC_JQ='.process.env += ["PMON_INIT_CONFINE=subreaper", "PMON_INIT_VERBOSITY=2"]' \
  runc_start "$id" /bin/pmon -- sh /shared/init.sh
init=$(runc_init_pid "$id") || fail "init: the container never ran: $(cat "$t/$id.err")"
record_pid "$init"
wait_file "$t/shared/ready" || fail "init: the daemon never started: $(cat "$t/$id.err")"
runc_record_all "$id"
runc_ kill "$id" TERM
rc=0; wait "$runc_pid" || rc=$?
[ "$rc" = 42 ] || fail "init: runc run exit $rc, want 42: $(cat "$t/$id.err")"
grep -q '^pmon: confinement subreaper' "$t/$id.err" || fail "init did not use subreaper: $(cat "$t/$id.err")"
[ -e "$t/shared/got" ] || fail "init on subreaper: the setsid daemon never got the TERM"
echo "ok: pmon init as PID 1 on subreaper forwarded TERM to the daemon"
pass
