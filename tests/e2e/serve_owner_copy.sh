# SPDX-License-Identifier: Apache-2.0
# The service knows a pmon call by what it is, not by its executable's
# inode: a kept job started from inside a pgroup call (whose boundary does
# not hold it) is stopped with the call, and listed in the call's report,
# when the call's pmon is (1) a copy of the binary at another path, or
# (2) the service's own binary path, replaced in place (an upgrade) while
# the service runs. Processes are checked by pid and start time.
. "$(dirname "$0")/common.inc"
mkdir "$t/bin" "$t/other"
cp "$PMON" "$t/bin/pmon"; cp "$PMON" "$t/other/pmon-copy"
PMON=$t/bin/pmon
. "$(dirname "$0")/serve.inc"
export PMON_SOCKET=$SOCK XDG_RUNTIME_DIR=$t/xdg
mkdir -m 700 "$XDG_RUNTIME_DIR"
serve_start

# The call's command: starts a kept sleeper that records "pid start", then waits.
cat > "$t/outer.sh" <<'EOF2'
"$1" start -- sh -c 'echo "$$ $(cut -d" " -f22 /proc/$$/stat)" > "$0.tmp"; mv "$0.tmp" "$0"; exec sleep 1000' "$2" > /dev/null || exit 9
while [ ! -f "$2" ]; do sleep 0.05; done
exec sleep 1000
EOF2

# owned_by_call LABEL PMON: the job ends with the call PMON runs.
owned_by_call() {
  local rc=0 spid sst
  "$2" run -q --confine pgroup --timeout 2s --report "$t/$1.json" -- sh "$t/outer.sh" "$2" "$t/$1.rec" || rc=$?
  [ -f "$t/$1.rec" ] || fail "$1: the kept job never ran (run exit $rc)"
  read -r spid sst < "$t/$1.rec"; record_pid "$spid"
  [ "$rc" = 124 ] || fail "$1: pmon run exited $rc, not 124"
  ! alive "$spid" "$sst" || fail "$1: the kept job $spid outlived the pmon call that asked for it"
  grep -q "\"pid\": $spid" "$t/$1.json" || fail "$1: the call's report does not list the job: $(cat "$t/$1.json")"
  echo "ok: $1"
}
owned_by_call "a copy of pmon at another path" "$t/other/pmon-copy"
cp "$t/other/pmon-copy" "$t/bin/pmon.new" && mv "$t/bin/pmon.new" "$t/bin/pmon"
owned_by_call "pmon replaced in place under the running service" "$t/bin/pmon"
pass
