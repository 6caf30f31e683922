# SPDX-License-Identifier: Apache-2.0
# E12 under --isolate: hostile calls, as root (user namespace mapped 0 -> 0).
#  - one writes its pid into every cgroup.procs it can reach (the view, the
#    host's behind it after detaching the view, a fresh cgroup2 mount): the
#    host sees it in its leaf until pmon stops it (--timeout), never elsewhere;
#  - one SIGKILLs its parent chain, every pid in /proc, and kill(-1): pmon and
#    this script survive, and pmon reports the tree gone;
#  - one makes itself a subreaper / nests its own PID namespace (unshare -p
#    -f) with a daemon: still stopped.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/unpriv.inc"  # for $CG (the cgroup2 mount)

HOSTILE=$HELPERS/hostile_escape
[ -x "$HOSTILE" ] || fail "helper $HOSTILE missing"
"$PMON" run -q --isolate -- true 2>/dev/null || skip "--isolate is not available here"

# 1. cgroup migration. The host watches the hostile's cgroup while it runs.
rm -f "$t/cg"
"$PMON" run -q --isolate --timeout 3s --report "$t/r1.json" -- env HOSTILE_CGROUP2="$CG" HOSTILE_HOST_MNTNS="$(readlink /proc/self/ns/mnt)" sh -c '
  '"$HOSTPID_SH"'; echo "$hp $(cut -d" " -f22 /proc/$$/stat)" > '"$t"'/hpid
  exec "$0" cgroup '"$t"'/cg' "$HOSTILE" &
pp=$!; record_pid "$pp"
for _ in $(seq 300); do grep -q '^done' "$t/cg" 2>/dev/null && break; sleep 0.01; done
grep -q '^done' "$t/cg" || fail "cgroup: the hostile call did not finish its attempts: $(cat "$t/cg" 2>/dev/null)"
read -r hpid hst < "$t/hpid"; echo "$hpid $hst" >> "$t/pids"; echo "$hpid $hst" >> "$STATE/pids"
leaf=$(jget "$t/r1.json" cgroup 2>/dev/null || true)
where=$(sed -n 's/^0:://p' /proc/$hpid/cgroup)
case $where in /pmon-*) ;; *) fail "cgroup: the hostile call moved to '$where': $(cat "$t/cg")" ;; esac
rc=0; wait "$pp" || rc=$?
[ $rc = 124 ] || fail "cgroup: pmon exit $rc, want 124"
! alive "$hpid" "$hst" || fail "cgroup: the hostile call survived"
report_is -m "cgroup: it sat in the call's leaf" "$t/r1.json" "cgroup=$CG$where"
# Every attempt was made (a write to its own root is a harmless no-op).
for a in "write $CG/cgroup.procs" "umount $CG" "mount cgroup2"; do
  grep -q "^$a" "$t/cg" || fail "cgroup: the hostile call never tried '$a': $(cat "$t/cg")"
done
! grep -q 'skipped' "$t/cg" || fail "cgroup: the hostile call skipped attempts: $(cat "$t/cg")"
echo "ok: cgroup: stayed in $where (attempts: $(grep -c . "$t/cg")), killed at the timeout"

# 2. Killing its way up: pmon and we survive; pmon reports the tree gone.
# pmon outlives every SIGKILL the call sends and stops it at the timeout
# (124); 137 would be pmon itself killed.
rc=0
"$PMON" run -q --isolate --timeout 3s --report "$t/r2.json" -- \
  env HOSTILE_HOST_PIDNS="$(readlink /proc/self/ns/pid)" "$HOSTILE" parents "$t/par" || rc=$?
[ $rc = 124 ] || fail "parents: pmon exit $rc, want 124: $(cat "$t/par")"
grep -q '^done' "$t/par" || fail "parents: the hostile call did not finish: $(cat "$t/par")"
! grep -q 'skipped' "$t/par" || fail "parents: the hostile call was not in a pid namespace of its own: $(cat "$t/par")"
grep -q '^kill parent ' "$t/par" || fail "parents: no parent was tried: $(cat "$t/par")"
grep -q '^kill -1 ' "$t/par" || fail "parents: kill(-1) was not tried: $(cat "$t/par")"
report_is -m "parents" "$t/r2.json" outcome=timeout cleanup_verified=true
echo "ok: parents: $(grep -c '^kill' "$t/par") kill attempts, pmon survived (exit $rc)"

# 3. Subreaper + nested PID namespace with a daemon inside.
if command -v unshare >/dev/null; then
  rm -f "$t/nested"
  rc=0
  "$PMON" run -q --isolate --timeout 2s --report "$t/r3.json" -- unshare -p -f --mount-proc sh -c '
    setsid sh -c "'"$HOSTPID_SH"'; echo \$hp \$(cut -d\" \" -f22 /proc/\$\$/stat) > '"$t"'/nested.tmp; mv '"$t"'/nested.tmp '"$t"'/nested; exec sleep 1000" &
    sleep 1000' || rc=$?
  [ -f "$t/nested" ] || fail "nested: the daemon never started"
  read -r npid nst < "$t/nested"; echo "$npid $nst" >> "$t/pids"; echo "$npid $nst" >> "$STATE/pids"
  [ $rc = 124 ] || fail "nested: pmon exit $rc, want 124"
  ! alive "$npid" "$nst" || fail "nested: the daemon in the nested PID namespace survived"
  echo "ok: nested pidns daemon stopped"
fi
rm -f "$t/sub"
rc=0
"$PMON" run -q --isolate --timeout 2s -- python3 -c '
import ctypes, os, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
if os.fork() == 0:
    if os.fork() == 0:
        os.setsid()
        hp = open(os.environ["PMON_TEST_HOSTPROC"] + "/self/stat").read().split()[0]
        st = open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]
        open(sys.argv[1] + ".tmp", "w").write(hp + " " + st + "\n"); os.rename(sys.argv[1] + ".tmp", sys.argv[1])
        os.execvp("sleep", ["sleep", "1000"])
    os._exit(0)
import time; time.sleep(1000)' "$t/sub" || rc=$?
[ -f "$t/sub" ] || fail "subreaper: the daemon never started"
read -r spid sst < "$t/sub"; echo "$spid $sst" >> "$t/pids"; echo "$spid $sst" >> "$STATE/pids"
[ $rc = 124 ] || fail "subreaper: pmon exit $rc, want 124"
! alive "$spid" "$sst" || fail "subreaper: the orphan of a subreaper call survived"
echo "ok: subreaper call stopped"
pass
