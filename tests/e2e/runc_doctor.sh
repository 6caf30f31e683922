# SPDX-License-Identifier: Apache-2.0
# pmon doctor inside runc containers that withhold something pmon can use:
# each gap is one line naming the fix in the OCI config, and the fix (the
# full config) makes the line go.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/init_lib.inc"
. "$(dirname "$0")/runc.inc"

make_bundle
# Runs pmon doctor in a container made with the jq filter $2; its output in
# $t/$1.doctor.
doctor_in() { # $1: label, $2: jq filter
  local id; id=$(runc_id "doctor-$1")
  rm -f "$t/shared/doctor"
  RUNC_JQ=$2 runc_start "$id" /bin/pmon -- sh -c 'pmon doctor > /shared/doctor 2>&1; exit 0'
  local rc=0; wait "$runc_pid" || rc=$?
  [ "$rc" = 0 ] || fail "$1: runc run exit $rc: $(cat "$t/$id.err")"
  cp "$t/shared/doctor" "$t/$1.doctor"
}

# Exactly one line for gap NAME, with a fix that mentions WORDS.
one_gap() { # $1: label, $2: gap name, $3: words the fix names
  local n; n=$(grep -c "^$2 " "$t/$1.doctor" || true)
  [ "$n" = 1 ] || fail "$1: want one '$2' line, have $n: $(cat "$t/$1.doctor")"
  grep "^$2 " "$t/$1.doctor" | grep -q "  no  .*; fix: .*$3" || fail "$1: the '$2' line names no fix with '$3': $(grep "^$2 " "$t/$1.doctor")"
}
no_gap() { # $1: label, $2: gap name
  ! grep -q "^$2 " "$t/$1.doctor" || fail "$1: unexpected: $(grep "^$2 " "$t/$1.doctor")"
}

doctor_in none .
one_gap none "container cgroup2" '"type": "cgroup2"'
one_gap none "container pidns" CAP_SYS_ADMIN
no_gap none "container cgroupns"
echo "ok: no cgroup2 mounted"

doctor_in ro "$JQ_CGROUPNS | $(jq_cgroup2 ro)"
one_gap ro "container cgroup2" 'read-write'
grep -q '^container cgroup2 .*read-only' "$t/ro.doctor" || fail "ro: the line does not say read-only"
no_gap ro "container cgroupns"
echo "ok: cgroup2 read-only"

doctor_in shared-ns "$(jq_cgroup2 rw)"
one_gap shared-ns "container cgroupns" '"type": "cgroup"'
no_gap shared-ns "container cgroup2"
echo "ok: no cgroup namespace of its own"

# The fixes together: nothing left to say.
doctor_in fixed "$JQ_CGROUPNS | $(jq_cgroup2 rw) | .process.capabilities |= map_values(. + [\"CAP_SYS_ADMIN\"])"
grep -q '^container  *yes ' "$t/fixed.doctor" || fail "fixed: no container line: $(cat "$t/fixed.doctor")"
for g in "container cgroup2" "container cgroupns" "container pidns"; do no_gap fixed "$g"; done
grep -q '^pid namespaces  *yes' "$t/fixed.doctor" || fail "fixed: no PID namespaces with CAP_SYS_ADMIN"
echo "ok: with the fixes, no gap"

pass
