# SPDX-License-Identifier: Apache-2.0
# Guest only (scripts/guest.sh): an unprivileged user with a lingering user
# manager (loginctl enable-linger; user@UID.service is delegated to it) gets
# a delegated scope from that manager, with memory accounting:
# - pmon started by the user manager (systemd-run --user: a transient
#   service of the manager, writable by the user but the manager's) asks it
#   for a scope;
# - pmon started as the user from outside the user's tree (runuser, in the
#   root-owned runner service: not writable) asks it too, over the user's
#   session bus.
# Either way the report's cgroup is a leaf in a pmon-*.scope below
# user@UID.service, and a call that touches 200 MiB reports a
# memory_peak_bytes of at least 200 MiB.
. "$(dirname "$0")/../e2e/common.inc"

[ "$(id -u)" = 0 ] || skip "needs root to create the user"
[ -d /run/systemd/system ] || skip "systemd is not PID 1 here (this scenario runs in the guest: scripts/guest.sh)"
for tool in jq useradd userdel loginctl systemd-run runuser; do
  command -v "$tool" >/dev/null || skip "$tool is not installed"
done
CG=/sys/fs/cgroup
[ "$(stat -f -c %T "$CG")" = cgroup2fs ] || fail "$CG is not a cgroup2 mount (want a pure cgroup2 host)"

USER_NAME=pmon-linger
id -u "$USER_NAME" >/dev/null 2>&1 && fail "user $USER_NAME exists already (left by an earlier run?)"
useradd --create-home --shell /bin/sh "$USER_NAME" || fail "useradd failed"
uid=$(id -u "$USER_NAME")
user_cleanup() {
  loginctl disable-linger "$USER_NAME" 2>/dev/null || true
  systemctl stop "user@$uid.service" 2>/dev/null || true
  for _ in $(seq 100); do
    [ -d "$CG/user.slice/user-$uid.slice" ] || break
    sleep 0.1
  done
  userdel --remove "$USER_NAME" 2>/dev/null || echo "warning: userdel $USER_NAME failed" >&2
}
trap 'user_cleanup; _cleanup' EXIT

loginctl enable-linger "$USER_NAME" || fail "loginctl enable-linger failed"
for _ in $(seq 600); do  # a slow (emulated) guest: up to 60 s
  [ "$(systemctl is-active "user@$uid.service")" = active ] && [ -S "/run/user/$uid/bus" ] && break
  sleep 0.1
done
[ "$(systemctl is-active "user@$uid.service")" = active ] || fail "user@$uid.service did not start: $(systemctl status "user@$uid.service" 2>&1 | tail -n 20)"
[ -S "/run/user/$uid/bus" ] || fail "no session bus at /run/user/$uid/bus (dbus-user-session?)"
ucg=/user.slice/user-$uid.slice/user@$uid.service
deleg=$(systemctl show -p Delegate --value "user@$uid.service")
[ "$deleg" = yes ] || fail "user@$uid.service has Delegate=$deleg"
echo "user@$uid.service: Delegate=yes, DelegateControllers=$(systemctl show -p DelegateControllers --value "user@$uid.service"), controllers of its cgroup: $(cat "$CG$ucg/cgroup.controllers")"
grep -qw memory "$CG$ucg/cgroup.controllers" || fail "user@$uid.service has no memory controller: $(cat "$CG$ucg/cgroup.controllers")"

# The user runs its own copy of pmon and the helper, and writes reports to
# a directory of its own.
d=$t/u
mkdir "$d" && cp "$PMON" "$PMON_BUILD_DIR/pmon-systemd" "$d/" && chmod 755 "$d" "$d/pmon" "$d/pmon-systemd"
chown "$uid" "$d"
call='cg=$(sed -n "s/^0:://p" /proc/self/cgroup); echo "$cg" > '"$d"'/cg.$0
      cat /sys/fs/cgroup$cg/cgroup.controllers > '"$d"'/controllers.$0
      python3 -c "import os,sys
try: print(os.getxattr(sys.argv[1], \"user.delegate\").decode())
except OSError as e: print(\"none (\" + e.strerror + \")\")" "/sys/fs/cgroup${cg%/*}" > '"$d"'/xattr.$0 2>&1
      exec python3 -c "b = bytes([1]) * (200 << 20); print(len(b))"'

# check LABEL: the report $d/LABEL.json and what the call noted.
check() {
  local label=$1 r=$d/$1.json rcg peak
  [ -f "$r" ] || fail "$label: no report; pmon said: $(cat "$d/$label.err" 2>/dev/null)"
  [ "$(jq -r .confinement "$r")" = cgroup ] || fail "$label: not the cgroup backend: $(cat "$r")"
  rcg=$(jq -r .cgroup "$r"); rcg=${rcg#"$CG"}
  case $rcg in
    "$ucg"/*pmon-*.scope/pmon-*) ;;
    *) fail "$label: the report's cgroup $rcg is not a leaf of a pmon-*.scope below $ucg (pmon -v: $(cat "$d/$label.err"))" ;;
  esac
  [ "$(cat "$d/cg.$label")" = "$rcg" ] || fail "$label: the call ran in $(cat "$d/cg.$label"), the report says $rcg"
  echo "$label: user.delegate of the scope: $(cat "$d/xattr.$label")"
  grep -qw memory "$d/controllers.$label" || fail "$label: the leaf has no memory controller: $(cat "$d/controllers.$label")"
  peak=$(jq -r .memory_peak_bytes "$r")
  [ "$peak" != null ] || fail "$label: memory_peak_bytes is null: $(cat "$r")"
  [ "$peak" -ge $((200 << 20)) ] || fail "$label: memory_peak_bytes $peak is below 200 MiB for a call that touched 200 MiB"
  grep -q 'systemd gave no delegated scope' "$d/$label.err" && fail "$label: -v notes a fallback: $(cat "$d/$label.err")"
  echo "$label: cgroup $rcg, leaf controllers $(cat "$d/controllers.$label"), memory_peak_bytes $peak"
}

# 1. Started by the user manager: a transient service of its own.
rc=0
systemd-run --machine="$USER_NAME@" --user --wait --pipe --quiet -- \
  "$d/pmon" run -v --report "$d/service.json" -- sh -c "$call" service \
  > "$d/service.out" 2> "$d/service.err" < /dev/null || rc=$?
[ $rc = 0 ] || fail "service: systemd-run/pmon exit $rc: $(cat "$d/service.err")"
grep -qx 209715200 "$d/service.out" || fail "service: the call did not run to its end: $(cat "$d/service.out" "$d/service.err")"
check service

# as_user CMD...: CMD as the user from outside the user's tree, with its
# session bus.
as_user() {
  runuser -u "$USER_NAME" -- env XDG_RUNTIME_DIR="/run/user/$uid" \
    DBUS_SESSION_BUS_ADDRESS="unix:path=/run/user/$uid/bus" "$@"
}

# 2. Started as the user from outside the user's tree, over its session bus.
rc=0
as_user "$d/pmon" run -v --report "$d/runuser.json" -- sh -c "$call" runuser \
  > "$d/runuser.out" 2> "$d/runuser.err" < /dev/null || rc=$?
[ $rc = 0 ] || fail "runuser: pmon exit $rc: $(cat "$d/runuser.err")"
grep -qx 209715200 "$d/runuser.out" || fail "runuser: the call did not run to its end: $(cat "$d/runuser.out" "$d/runuser.err")"
check runuser

# 3. A memory limit in the user's scope: the user manager delegates the
# memory controller, so the call is held to it and killed whole past it.
rc=0
as_user "$d/pmon" run --memory-max 100M --report "$d/limited.json" -- python3 -c "b = bytes([1]) * (300 << 20)" \
  > /dev/null 2> "$d/limited.err" < /dev/null || rc=$?
[ $rc = 137 ] || fail "limited: pmon exit $rc, want 137: $(cat "$d/limited.err")"
case $(jq -r .cgroup "$d/limited.json") in
  "$CG$ucg"/*pmon-*.scope/pmon-*) ;;
  *) fail "limited: the leaf $(jq -r .cgroup "$d/limited.json") is not in a pmon-*.scope below $ucg" ;;
esac
[ "$(jq -r .oom_killed "$d/limited.json")" = true ] || fail "limited: oom_killed is not true: $(cat "$d/limited.json")"
[ "$(jq -r .limits.memory_max "$d/limited.json")" = 104857600 ] || fail "limited: limits $(jq -c .limits "$d/limited.json")"
echo "limited: exit 137, oom_killed true as uid $uid"

# The empty scopes go away (collected by the user manager).
for label in service runuser limited; do
  s=$CG$(jq -r .cgroup "$d/$label.json" | sed "s|^$CG||; s|/[^/]*\$||")
  for _ in $(seq 100); do [ -d "$s" ] || break; sleep 0.1; done
  [ ! -d "$s" ] || fail "$label: the scope $s is still there 10 s after pmon ended"
done
pass "scopes from the user manager of uid $uid, with memory accounting"
