# SPDX-License-Identifier: Apache-2.0
# systemd, for real: an unprivileged pmon whose own cgroup is not writable
# asks a real systemd user manager for a Delegate=yes scope (over the session
# bus, and over the manager's private socket), runs the call in a leaf inside
# that scope, stops the daemon the call left, and leaves nothing behind: the
# empty scope is collected by systemd (CollectMode=inactive-or-failed).
#
# How a user manager runs on a host that was not booted with systemd,
# without disturbing the host:
# - `systemd --user` refuses to start unless /run/systemd/system exists
#   (sd_booted()). It gets a mount namespace of its own (unshare -m, private
#   propagation) in which a tmpfs over /run/systemd holds that directory. The
#   host's /run is not touched, and the namespace with its mounts goes away
#   with the manager's last process.
# - In a hybrid layout the manager would also mirror its tree into the
#   host's name=systemd v1 hierarchy. In its namespace the cgroup2 mount is
#   bound over /sys/fs/cgroup, so it sees a pure cgroup2 host and writes only
#   to the subtree below.
# - A user manager manages the cgroup it is started in: $D/mgr, chowned to
#   the test user. pmon starts as that user in $D/caller, which root owns, so
#   it cannot make its leaves there and has to ask systemd. To put pmon into
#   the scope, the manager needs write access to cgroup.procs in $D, the common
#   ancestor of the two cgroups. On a real login the system manager makes
#   that move for it (AttachProcessesToUnit); there is no system manager here.
# - The manager logs to /dev/console, which the user may not open; in its
#   namespace a file of the test's is bound over /dev/kmsg and it logs there
#   (shown when a check fails).
# - XDG_RUNTIME_DIR is a private directory. It holds the manager's private
#   socket and, when dbus-user-session is installed, the session bus socket
#   (dbus.socket), which starts a dbus-daemon when pmon first connects.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/unpriv.inc"

SYSTEMD=""
for s in /lib/systemd/systemd /usr/lib/systemd/systemd; do
  [ -x "$s" ] && { SYSTEMD=$s; break; }
done
[ -n "$SYSTEMD" ] || skip "systemd is not installed"
for tool in unshare systemctl; do
  command -v "$tool" >/dev/null || skip "$tool is not installed"
done
"$PMON" doctor 2>&1 | grep -q 'built without libsystemd' && skip "this pmon was built without libsystemd"
unshare -m --propagation private true 2>/dev/null || skip "cannot make a mount namespace for the manager"

acquire_user
xdg=$t/run
mkdir -m 700 "$xdg" && chown "$TEST_UID:$TEST_GID" "$xdg"
D=$CG/pmon-test-systemd-$$
make_cgroup "$D"
chown "$TEST_UID:$TEST_GID" "$D/cgroup.procs"  # the manager moves pmon from caller to its scope
make_cgroup "$D/mgr"
delegate_cgroup "$D/mgr"
make_cgroup "$D/caller"  # root's: not writable by the user

mgr_pid=""
# Stops the manager by the pid this script started it as, and anything
# left in $D (its services, pmon if a check failed half-way).
stop_manager() {
  [ -n "$mgr_pid" ] || return 0
  local p
  for p in $(find "$D" -name cgroup.procs -exec cat {} + 2>/dev/null); do record_pid "$p"; done
  # A user manager exits on SIGTERM, after stopping its units (exit.target).
  kill -TERM "$mgr_pid" 2>/dev/null || true
  for _ in $(seq 100); do
    grep -q '^populated 0' "$D/cgroup.events" && break
    sleep 0.1
  done
  if ! grep -q '^populated 0' "$D/cgroup.events"; then
    echo "warning: the manager or its units did not stop in 10s; killing what is in $D" >&2
    echo 1 > "$D/cgroup.kill"
    for _ in $(seq 50); do
      grep -q '^populated 0' "$D/cgroup.events" && break
      sleep 0.1
    done
  fi
  wait "$mgr_pid" 2>/dev/null || true
  mgr_pid=""
}
trap 'stop_manager; _unpriv_cleanup' EXIT

touch "$t/manager.kmsg" && chown "$TEST_UID:$TEST_GID" "$t/manager.kmsg"
manager_log() { cat "$t/manager.log" 2>/dev/null; tail -n 20 "$t/manager.kmsg"; }

# The manager: root sets up its mount namespace, moves into $D/mgr and execs
# systemd --user as the test user (the pid of this job stays the manager's).
# env -i: only what the manager needs, and no bus address of the caller's.
unshare -m --propagation private sh -c '
  set -e
  if [ -d /run/systemd ]; then mount -t tmpfs -o mode=755 pmon-test /run/systemd
  else mount -t tmpfs -o mode=755 pmon-test /run; fi
  mkdir -p /run/systemd/system
  if [ -e /dev/kmsg ]; then mount --bind "$7" /dev/kmsg; fi
  echo $$ > "$2/cgroup.procs"
  [ "$1" = /sys/fs/cgroup ] || mount --bind "$1" /sys/fs/cgroup
  echo "set up; exec systemd --user" >&2
  exec setpriv --reuid="$3" --regid="$4" --clear-groups --inh-caps=-all -- \
    env -i PATH=/usr/bin:/bin HOME=/nonexistent XDG_RUNTIME_DIR="$5" \
    "$6" --user --log-target=kmsg --log-level=info' \
  sh "$CG" "$D/mgr" "$TEST_UID" "$TEST_GID" "$xdg" "$SYSTEMD" "$t/manager.kmsg" > "$t/manager.log" 2>&1 &
mgr_pid=$!
mgr_st=$(start_time_of "$mgr_pid")
record_pid "$mgr_pid"

# Ready when its private socket is there and its start-up job is over.
for _ in $(seq 100); do
  [ -S "$xdg/systemd/private" ] && break
  if ! alive "$mgr_pid" "$mgr_st"; then
    grep -q '^set up; exec systemd --user$' "$t/manager.log" ||
      fail "cannot set up the manager's namespace: $(manager_log)"
    skip "systemd --user does not run here: $(manager_log | tr '\n' ' ')"
  fi
  sleep 0.1
done
[ -S "$xdg/systemd/private" ] || fail "systemd --user made no $xdg/systemd/private in 10s: $(manager_log)"
as_user() { as_user_in "$D/caller" env -u DBUS_SESSION_BUS_ADDRESS XDG_RUNTIME_DIR="$xdg" "$@"; }
# (is-system-running would say "offline": it checks sd_booted() out here.)
state=""
for _ in $(seq 100); do
  state=$(as_user systemctl --user show -p SystemState --value 2>&1) || true
  case $state in running | degraded) break ;; esac
  sleep 0.1
done
case $state in
  running | degraded) ;;
  *) fail "systemd --user did not finish starting in 10s: '$state': $(manager_log)" ;;
esac
echo "ok: systemd --user is up ($state), pid $mgr_pid, in $D/mgr"

# One call through the manager: prints its cgroup and systemd's view of the
# scope around it, leaves a setsid + double-fork daemon behind. $1 names
# its files, $2 is an environment assignment (or ""), the rest are options.
run_call() {
  local n=$1 bus=$2; shift 2
  rc=0
  as_user env $bus "$PMON" run --report "$u/$n.json" "$@" -- sh -c '
    cg=$(sed -n "s/^0:://p" /proc/self/cgroup); echo "$cg" > '"$u/$n"'.cg
    sed -n "s/^0:://p" /proc/$PPID/cgroup > '"$u/$n"'.pmon-cg
    scope=${cg%/*}; scope=${scope##*/}
    systemctl --user show -p Id,Delegate,CollectMode,ActiveState,ControlGroup "$scope" > '"$u/$n"'.show
    '"$(daemon_script "$u/$n.daemon")" 2> "$u/$n.err" || rc=$?
  record_daemon "$u/$n.daemon"
  [ "$rc" = 0 ] || fail "$n: pmon exit $rc: $(cat "$u/$n.err"); the manager says: $(manager_log)"
  [ "$(field "$u/$n.json" confinement)" = cgroup ] ||
    fail "$n: confinement $(field "$u/$n.json" confinement), not cgroup: $(cat "$u/$n.err"); the manager says: $(manager_log)"
  [ -z "$(array_items "$u/$n.json" confinement_passed_over)" ] || fail "$n: something was passed over"
  # Nothing on stderr but the daemon's stop: no fallback, no systemd trouble.
  ! grep -qv '^pmon: the command exited and left 1 process running; stopped it$' "$u/$n.err" ||
    fail "$n: pmon said: $(cat "$u/$n.err")"

  # The leaf is pmon's, inside a pmon-*.scope the manager made in its tree.
  leaf=$(field "$u/$n.json" cgroup)
  scope_dir=${leaf%/*}
  unit=${scope_dir##*/}
  case $leaf in
    "$D"/mgr/*/pmon-[0-9]*.scope/pmon-[0-9]*) ;;
    *) fail "$n: leaf $leaf is not in a pmon-*.scope below the manager's $D/mgr" ;;
  esac
  [ "$(cat "$u/$n.cg")" = "${leaf#"$CG"}" ] || fail "$n: the command ran in $(cat "$u/$n.cg"), not in $leaf"
  # pmon itself (the command's parent) moved out of the scope into a leaf of
  # its own, so the scope has no processes of its own next to its children.
  [ "$(cat "$u/$n.pmon-cg")" = "${scope_dir#"$CG"}/supervisor" ] ||
    fail "$n: pmon is in $CG$(cat "$u/$n.pmon-cg"), not in $scope_dir/supervisor"
  for want in "Id=$unit" Delegate=yes CollectMode=inactive-or-failed ActiveState=active \
    "ControlGroup=${scope_dir#"$CG"}"; do
    grep -qx "$want" "$u/$n.show" || fail "$n: systemd does not say $want of the scope: $(cat "$u/$n.show")"
  done

  # The daemon is stopped, and reported.
  ! alive "$dpid" "$dst" || fail "$n: daemon $dpid survived"
  [ "$(field "$u/$n.json" cleanup_verified)" = true ] || fail "$n: cleanup not verified"
  grep -q "\"pid\": $dpid," "$u/$n.json" || fail "$n: the daemon is not in the report's leftovers"

  # pmon is gone, so the scope is empty: systemd stops and forgets it and
  # removes its cgroup (pmon's supervisor cgroup included).
  local load=""
  for _ in $(seq 50); do
    load=$(as_user systemctl --user show -p LoadState --value "$unit" 2>&1) || true
    [ "$load" = not-found ] && [ ! -d "$scope_dir" ] && break
    sleep 0.1
  done
  [ "$load" = not-found ] || fail "$n: systemd still has $unit (LoadState=$load)"
  [ ! -d "$scope_dir" ] || fail "$n: $scope_dir is left: $(find "$scope_dir" -type d)"
  echo "ok: $n: ran in $leaf, daemon stopped, $unit collected"
}

# 1. auto, through sd_bus_open_user: the session bus where the manager
# listens on one, else its private socket.
how=$(as_user "$PMON" doctor 2>&1 | sed -n 's/^systemd  *yes  *//p')
[ -S "$xdg/bus" ] && want="via the session bus" || want="via $xdg/systemd/private"
case $how in
  *"user manager of uid $TEST_UID, $want)"*) ;;
  *) fail "doctor does not find the manager $want: $(as_user "$PMON" doctor 2>&1 | grep systemd)" ;;
esac
run_call auto ""

# 2. --confine cgroup with a session bus address that leads nowhere: the
# private socket, with no dbus-daemon in between.
nobus="DBUS_SESSION_BUS_ADDRESS=unix:path=$u/no-bus"
how=$(as_user env "$nobus" "$PMON" doctor 2>&1 | sed -n 's/^systemd  *yes  *//p')
case $how in
  *"via $xdg/systemd/private)"*) ;;
  *) fail "doctor does not reach the manager by its private socket: $how" ;;
esac
run_call private "$nobus" --confine cgroup

# 3. A scope systemd cannot make: with $D's cgroup.procs back to root, the
# manager may not move pmon out of $D/caller (as on a login without a system
# manager to do it), so the job fails.
chown 0:0 "$D/cgroup.procs"
rc=0
as_user "$PMON" run --confine cgroup -- true 2> "$u/fail.err" || rc=$?
chown "$TEST_UID:$TEST_GID" "$D/cgroup.procs"
[ "$rc" = 125 ] || fail "failed scope: --confine cgroup: exit $rc, want 125: $(cat "$u/fail.err")"
[ "$(wc -l < "$u/fail.err")" = 1 ] || fail "failed scope: want one line: $(cat "$u/fail.err")"
grep -q "asked systemd for a delegated scope: systemd could not start pmon-[0-9]*-[0-9]*\.scope (job result 'failed'" "$u/fail.err" ||
  fail "failed scope: the line does not say systemd failed to make the scope: $(cat "$u/fail.err")"
unit=$(grep -o 'pmon-[0-9]*-[0-9]*\.scope' "$u/fail.err" | head -n 1)
# The failed scope is not kept as a failed unit either.
load=""
for _ in $(seq 50); do
  load=$(as_user systemctl --user show -p LoadState --value "$unit" 2>&1) || true
  [ "$load" = not-found ] && break
  sleep 0.1
done
[ "$load" = not-found ] || fail "failed scope: systemd still has $unit (LoadState=$load)"
echo "ok: a scope systemd cannot make: 125, one line, $unit not kept"

# Nothing of pmon's is left in the manager's tree (doctor's scopes
# included: it tries the cgroup backend, so it asks for one too).
for _ in $(seq 50); do
  left=$(find "$D" -mindepth 1 -type d \( -name 'pmon-*' -o -name supervisor \))
  [ -z "$left" ] && break
  sleep 0.1
done
[ -z "$left" ] || fail "left in the manager's tree: $left"

# The manager, its services and its mount namespace are gone.
stop_manager
grep -q '^populated 0' "$D/cgroup.events" || fail "processes left in $D: $(find "$D" -name cgroup.procs -exec cat {} +)"
pass
