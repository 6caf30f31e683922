# SPDX-License-Identifier: Apache-2.0
# Session envelopes, as far as a host shows them without the memory, pids
# and cpu controllers for pmon's leaves (the limits that do hold are tested
# in a pure cgroup v2 guest):
#  (a) an envelope asked for (a flag, a variable; pmon run, pmon-shell,
#      pmon serve, pmon mcp) that cannot be set fails closed: 125, one line
#      naming the envelope and where it was set, the command not run, the
#      report not_started, no session cgroup left;
#  (b) the config file's default that cannot be set is skipped with one note
#      (none with -q, none from pmon-shell), and the named session is still
#      one cgroup; a bad config file is one line naming it, 125, not run;
#  (c) two calls of pmon run --session S share pmon-session-n-S, each in a
#      leaf and a cgroup namespace of its own; the session goes with its last
#      call;
#  (d) pmon-shell: PMON_SESSION names its session; with an envelope (one that
#      sets no limit: pids_max 0) its calls share their harness's session,
#      which goes when the harness is gone;
#  (e) a crash: pmon SIGKILLed (its guard stops the call's daemon), pmon and
#      its guard SIGKILLed (the daemon stays): the dead session is removed
#      by the next call of its name (and pmon gc removes what is inside).
# Where a controller is enabled for the leaves, (a) checks the envelope is
# set instead.
. "$(dirname "$0")/common.inc"
[ "$(id -u)" = 0 ] || skip "needs root (session cgroups beside every pmon's leaves, a cgroup namespace per call)"
have_backend cgroup || skip "the cgroup backend is not available here"
CG=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
leaves=$("$PMON" run -v --confine cgroup -- true 2>&1 | sed -n 's/.*leaves under \([^,]*\),.*/\1/p')
[ -n "$leaves" ] || fail "pmon run -v does not say where the leaves go"
# The controllers handed to the leaves, read by a call (a systemd scope of
# its own, where pmon gets one, is gone once pmon has exited).
for_leaves=$("$PMON" run -q --confine cgroup -- \
  sh -c 'cg=$(sed -n "s/^0:://p" /proc/self/cgroup); cat "$0${cg%/*}/cgroup.subtree_control"' "$CG") ||
  fail "a call could not read its leaf parent's cgroup.subtree_control"
# enabled CTL...: every one of them is enabled for the leaves.
enabled() {
  local c
  for c in "$@"; do case " $for_leaves " in *" $c "*) ;; *) return 1 ;; esac; done
  return 0
}
PIDNS=$(readlink /proc/self/ns/pid); PIDNS=${PIDNS#pid:[}; PIDNS=${PIDNS%]}

# No config file of this machine or user is read: each case names its own.
: > "$t/empty.toml"
export PMON_CONFIG=$t/empty.toml
unset PMON_SESSION PMON_SESSION_PROFILE PMON_SESSION_MEMORY_MAX PMON_SESSION_MEMORY_HIGH PMON_SESSION_PIDS_MAX \
  PMON_SESSION_CPU_MAX
SHELL_LINK=$t/bin/pmon-shell
mkdir -p "$t/bin"
ln -s "$PMON" "$SHELL_LINK"
N=e2e-$$  # the names of this run's sessions start so
: > "$t/ours"

# Whatever a failed check left: the session cgroups this run made (named
# ones by their names, the others recorded in $t/ours), their calls killed.
sessions_cleanup() {
  local d l
  # shellcheck disable=SC2046 # (one path a line, no spaces)
  for d in "$leaves"/pmon-session-n-"$N"-* $(cat "$t/ours"); do
    [ -d "$d" ] || continue
    for l in "$d"/pmon-*/; do
      [ -d "$l" ] || continue
      echo 1 > "$l/cgroup.kill" 2>/dev/null
      for _ in $(seq 100); do rmdir "$l" 2>/dev/null && break; sleep 0.05; done
    done
    rmdir "$d" 2>/dev/null || echo "note: could not remove $d" >&2
  done
  return 0
}
trap 'sessions_cleanup; _cleanup' EXIT

# Up to $2 tenths of a second for "$1" (a command) to succeed.
wait_for() {
  local i
  for i in $(seq "$2"); do
    eval "$1" && return 0
    sleep 0.1
  done
  return 1
}

# The session cgroups of process sessions owned by pid $1.
sessions_of() { ls -d "$leaves"/pmon-session-[ph]"$1"-* 2>/dev/null || true; }

# The cgroup of PID, as a path under the mount ("" when it is gone).
cgroup_of() { sed -n "s|^0::|$CG|p" "/proc/$1/cgroup" 2>/dev/null || true; }

RAN=(sh -c "echo ran > $t/ran")

# (a) An asked-for envelope that cannot be set.
# asked WHAT FROM CTLS REPORTKEY WANT CMD...: pmon (CMD, run by a shell that
# says its pid first) fails closed naming FROM and one of CTLS, or sets the
# envelope where they are all enabled for the leaves (the report's envelope
# REPORTKEY = WANT).
asked() {
  local what=$1 from=$2 ctl=$3 key=$4 want=$5 rc=0 pm
  shift 5
  rm -f "$t/ran" "$t/r.json" "$t/pm"
  sh -c 'echo $$ > "$0"; exec "$@"' "$t/pm" "$@" --report "$t/r.json" -- "${RAN[@]}" > "$t/out" 2> "$t/err" || rc=$?
  pm=$(cat "$t/pm")
  [ -z "$(sessions_of "$pm")" ] || fail "$what: a session cgroup is left: $(sessions_of "$pm")"
  if enabled $ctl; then
    [ "$rc" = 0 ] && [ -e "$t/ran" ] || fail "$what: exit $rc although $ctl is enabled: $(cat "$t/err")"
    report_is -m "$what: the report's envelope" "$t/r.json" "session.envelope.$key=$want"
    echo "ok: $what: set ($ctl is enabled for the leaves)"
    return 0
  fi
  [ "$rc" = 125 ] || fail "$what: exit $rc, want 125: $(cat "$t/err")"
  [ ! -e "$t/ran" ] || fail "$what: the command ran"
  [ "$(wc -l < "$t/err")" = 1 ] || fail "$what: want one stderr line, got: $(cat "$t/err")"
  grep -q "^pmon: confinement unavailable: the session's envelope (.*, set by $from): cannot set the session's \(${ctl// /\\|}\) limit" \
    "$t/err" || fail "$what: the line does not name the envelope, $from and $ctl: $(cat "$t/err")"
  report_is -m "$what: report" "$t/r.json" outcome=not_started exit_status=125 pid=null "error~set by $from" 'session=(absent)'
  echo "ok: $what: $(cat "$t/err")"
}
asked "--session-memory-max" --session-memory-max memory memory_max 1073741824 "$PMON" run --session-memory-max 1G
asked "PMON_SESSION_MEMORY_MAX" PMON_SESSION_MEMORY_MAX memory memory_max 1073741824 \
  env PMON_SESSION_MEMORY_MAX=1G "$PMON" run
asked "--session-pids-max" --session-pids-max pids pids_max 64 "$PMON" run --session-pids-max 64
asked "PMON_SESSION_PIDS_MAX" PMON_SESSION_PIDS_MAX pids pids_max 64 env PMON_SESSION_PIDS_MAX=64 "$PMON" run
asked "--session-cpu-max" --session-cpu-max cpu cpu_max 0.5 "$PMON" run --session-cpu-max 0.5
asked "PMON_SESSION_CPU_MAX" PMON_SESSION_CPU_MAX cpu cpu_max 0.5 env PMON_SESSION_CPU_MAX=0.5 "$PMON" run
asked "-q --session-profile small" --session-profile "memory pids cpu" memory_max 2147483648 \
  "$PMON" run -q --session-profile small
# A named session with an envelope asked for: its cgroup is not left either.
asked "--session with PMON_SESSION_PROFILE" PMON_SESSION_PROFILE "memory pids cpu" memory_max 2147483648 \
  env PMON_SESSION_PROFILE=small "$PMON" run --session "$N-a"
[ ! -d "$leaves/pmon-session-n-$N-a" ] || fail "the named session's cgroup is left"
# pmon-shell: the same line, the line not run, no session of its harness.
if ! enabled memory; then
  rc=0
  PMON_SESSION_MEMORY_MAX=1G "$SHELL_LINK" "echo ran > $t/ran" > "$t/out" 2> "$t/err" || rc=$?
  [ "$rc" = 125 ] && [ ! -e "$t/ran" ] && [ "$(wc -l < "$t/err")" = 1 ] ||
    fail "pmon-shell with PMON_SESSION_MEMORY_MAX: exit $rc, ran: $([ -e "$t/ran" ] && echo yes), stderr: $(cat "$t/err")"
  grep -q "set by PMON_SESSION_MEMORY_MAX): cannot set the session's memory limit" "$t/err" ||
    fail "pmon-shell with PMON_SESSION_MEMORY_MAX: $(cat "$t/err")"
  [ -z "$(sessions_of $$)" ] || fail "pmon-shell left its harness's session: $(sessions_of $$)"
  echo "ok: pmon-shell with PMON_SESSION_MEMORY_MAX: $(cat "$t/err")"
fi

# The services: one session each, refused at their start.
for svc in "mcp --session-memory-max 1G:memory:--session-memory-max" "serve --stdio --session-pids-max 64:pids:--session-pids-max"; do
  IFS=: read -r args ctl from <<< "$svc"
  enabled "$ctl" && continue
  rc=0; sh -c 'echo $$ > "$0"; exec "$@"' "$t/pm" "$PMON" $args < /dev/null > "$t/out" 2> "$t/err" || rc=$?
  [ "$rc" = 125 ] && [ "$(wc -l < "$t/err")" = 1 ] &&
    grep -q "set by $from): cannot set the session's $ctl limit" "$t/err" || fail "pmon $args: exit $rc: $(cat "$t/err")"
  [ -z "$(sessions_of "$(cat "$t/pm")")" ] || fail "pmon $args left its session: $(sessions_of "$(cat "$t/pm")")"
  echo "ok: pmon $args: refused at its start"
done

# (b) The config file's default envelope.
if enabled memory pids; then
  echo "note: memory and pids are enabled for the leaves: a configured default is set, not skipped (not tested here)"
else
  printf '[profiles.ci]\nmemory_max = "1G"\npids_max = 64\n\n[session]\nprofile = "ci"\n' > "$t/default.toml"
  # A named session: the note, the call runs, still in the session's cgroup.
  rm -f "$t/ran"
  rc=0
  PMON_CONFIG=$t/default.toml "$PMON" run --session "$N-b" --report "$t/r.json" -- "${RAN[@]}" 2> "$t/err" || rc=$?
  [ "$rc" = 0 ] && [ -e "$t/ran" ] || fail "config default: exit $rc, the command did not run: $(cat "$t/err")"
  [ "$(wc -l < "$t/err")" = 1 ] &&
    grep -q "^pmon: note: the configured session envelope is not set: the session's envelope (.*, set by $t/default.toml): cannot set the session's \(memory\|pids\) limit" "$t/err" ||
    fail "config default: want one note naming the file: $(cat "$t/err")"
  report_is -m "config default: the call's session" "$t/r.json" "session.cgroup=$leaves/pmon-session-n-$N-b"
  [ ! -d "$leaves/pmon-session-n-$N-b" ] || fail "config default: the named session's cgroup is left"
  echo "ok: config default: $(cat "$t/err")"
  # -q: no note.
  rm -f "$t/ran"
  rc=0; PMON_CONFIG=$t/default.toml "$PMON" run -q --session "$N-b" -- "${RAN[@]}" 2> "$t/err" || rc=$?
  [ "$rc" = 0 ] && [ -e "$t/ran" ] && [ ! -s "$t/err" ] || fail "config default -q: exit $rc, stderr: $(cat "$t/err")"
  # pmon run alone is no session: no note, no session in its report.
  rm -f "$t/ran"
  rc=0; PMON_CONFIG=$t/default.toml "$PMON" run --report "$t/r.json" -- "${RAN[@]}" 2> "$t/err" || rc=$?
  [ "$rc" = 0 ] && [ -e "$t/ran" ] && [ ! -s "$t/err" ] || fail "config default, no session: exit $rc: $(cat "$t/err")"
  report_is -m "config default, no session" "$t/r.json" 'session=(absent)'
  # pmon-shell says nothing of its own, and its harness gets no session.
  rm -f "$t/ran"
  rc=0; PMON_CONFIG=$t/default.toml "$SHELL_LINK" "echo ran > $t/ran" 2> "$t/err" || rc=$?
  [ "$rc" = 0 ] && [ -e "$t/ran" ] && [ ! -s "$t/err" ] || fail "config default, pmon-shell: exit $rc: $(cat "$t/err")"
  [ -z "$(sessions_of $$)" ] || fail "config default, pmon-shell: a session is left: $(sessions_of $$)"
  echo "ok: config default: no note with -q, from pmon-shell, or for pmon run alone"
fi
# A bad config file: one line naming it (and what is wrong), 125, not run,
# for a call in a session, and from the user's config directory too; pmon
# run in no session does not read the file (the default is not its), and
# runs.
# bad_config WHAT TEXT PATTERN [ENV...]
bad_config() {
  local what=$1 text=$2 pattern=$3 rc
  shift 3
  printf '%b' "$text" > "$t/bad.toml"
  if [ $# = 0 ]; then
    rm -f "$t/ran"
    rc=0; env PMON_CONFIG="$t/bad.toml" "$PMON" run -- "${RAN[@]}" > "$t/out" 2> "$t/err" || rc=$?
    [ "$rc" = 0 ] && [ -e "$t/ran" ] && [ ! -s "$t/err" ] ||
      fail "bad config ($what), pmon run in no session: exit $rc, ran: $([ -e "$t/ran" ] && echo yes), stderr: $(cat "$t/err")"
  fi
  rm -f "$t/ran"
  rc=0; env PMON_CONFIG="$t/bad.toml" "$@" "$PMON" run --session "$N-bad" -- "${RAN[@]}" > "$t/out" 2> "$t/err" || rc=$?
  [ "$rc" = 125 ] && [ ! -e "$t/ran" ] && [ "$(wc -l < "$t/err")" = 1 ] ||
    fail "bad config ($what, --session): exit $rc, ran: $([ -e "$t/ran" ] && echo yes), stderr: $(cat "$t/err")"
  grep -qF -- "$pattern" "$t/err" || fail "bad config ($what): '$pattern' not in: $(cat "$t/err")"
  [ ! -d "$leaves/pmon-session-n-$N-bad" ] || fail "bad config ($what): a session cgroup was made"
  echo "ok: bad config ($what): $(cat "$t/err")"
}
bad_config "not TOML" '[session\nmemory_max = 1\n' "pmon: run: $t/bad.toml:1: "
bad_config "unknown profile" '[session]\nprofile = "huge"\n' \
  "pmon: run: $t/bad.toml: unknown profile 'huge' (profiles: small, standard, large)"
bad_config "unknown key" '[session]\nmemory_maximum = "1G"\n' "pmon: run: $t/bad.toml: session.memory_maximum: unknown key"
bad_config "unknown table" '[sessions]\n' "pmon: run: $t/bad.toml: sessions: unknown table"
bad_config "bad value" '[session]\npids_max = "many"\n' "pmon: run: $t/bad.toml: pids_max: 'many' is not a whole number"
bad_config "memory_high over memory_max" '[session]\nmemory_max = "1G"\nmemory_high = "2G"\n' \
  "pmon: run: $t/bad.toml: memory_high must be below memory_max"
bad_config "a newline in a key" '[session]\n"a\\nb" = 1\n' "pmon: run: $t/bad.toml: session.a\\nb: unknown key"
# Asked for as well: the file is still read, and refused.
bad_config "beside a flag's envelope" '[session]\nswap = 1\n' "session.swap: unknown key" PMON_SESSION_PIDS_MAX=10
mkdir -p "$t/xdg/pmon"
printf '[session]\nmemory = "1G"\n' > "$t/xdg/pmon/config.toml"
rm -f "$t/ran"
rc=0; env -u PMON_CONFIG XDG_CONFIG_HOME="$t/xdg" "$PMON" run --session "$N-xdg" -- "${RAN[@]}" 2> "$t/err" || rc=$?
[ "$rc" = 125 ] && [ ! -e "$t/ran" ] && [ "$(wc -l < "$t/err")" = 1 ] &&
  grep -qF "pmon: run: $t/xdg/pmon/config.toml: session.memory: unknown key" "$t/err" ||
  fail "bad config in \$XDG_CONFIG_HOME: exit $rc: $(cat "$t/err")"
rc=0; PMON_CONFIG=$t/missing.toml "$PMON" run --session "$N-missing" -- "${RAN[@]}" 2> "$t/err" || rc=$?
[ "$rc" = 125 ] && [ ! -e "$t/ran" ] && [ "$(cat "$t/err")" = "pmon: run: PMON_CONFIG: cannot read $t/missing.toml" ] ||
  fail "PMON_CONFIG of a missing file: exit $rc: $(cat "$t/err")"
echo "ok: bad config in \$XDG_CONFIG_HOME, and PMON_CONFIG of a missing file"

# (c), (d) Calls that wait in their session. member LABEL CMD...: starts
# CMD... with a call that records its pid ($t/LABEL.pid), what it sees of
# its own cgroup ($t/LABEL.in), then waits for a line on $t/LABEL.fifo; sets
# $pm (CMD's pid, recorded) and $call (the call's, recorded) once it waits.
member() {
  local label=$1
  shift
  mkfifo "$t/$label.fifo"
  "$@" sh -c 'grep "^0::" /proc/self/cgroup > "$0.in"; echo $$ > "$0.pid.tmp"; mv "$0.pid.tmp" "$0.pid"; read x < "$0.fifo"' \
    "$t/$label" > "$t/$label.out" 2> "$t/$label.err" &
  pm=$!
  record_pid "$pm"
  wait_for '[ -f "$t/$label.pid" ]' $((100 * TIME_SCALE)) || fail "$label: the call never got going: $(cat "$t/$label.err")"
  call=$(cat "$t/$label.pid")
  record_pid "$call"
}
# release LABEL PID: the call ends; PID (its pmon) exits 0.
release() {
  local rc=0
  echo go > "$t/$1.fifo"
  wait "$2" || rc=$?
  [ "$rc" = 0 ] || fail "$1: pmon exit $rc: $(cat "$t/$1.err")"
}

# (c) Two calls of one named session.
S=$N-c
SD=$leaves/pmon-session-n-$S
member c1 "$PMON" run --session "$S" --report "$t/c1.json" --
pm1=$pm call1=$call
member c2 "$PMON" run --session "$S" --report "$t/c2.json" --
pm2=$pm call2=$call
leaf1=$(cgroup_of "$call1") leaf2=$(cgroup_of "$call2")
[ "${leaf1%/*}" = "$SD" ] && [ "${leaf2%/*}" = "$SD" ] ||
  fail "named session: the calls are in $leaf1 and $leaf2, not both in $SD"
[ "$leaf1" != "$leaf2" ] || fail "named session: both calls in one leaf $leaf1"
[ "$(cat "$t/c1.in")" = "0::/" ] && [ "$(cat "$t/c2.in")" = "0::/" ] ||
  fail "named session: a call sees its cgroup as '$(cat "$t/c1.in")' and '$(cat "$t/c2.in")', not its own namespace's root"
release c1 "$pm1"
[ -d "$SD" ] || fail "named session: gone while its second call runs"
[ ! -d "$leaf1" ] || fail "named session: the first call's leaf is left"
[ "$(cgroup_of "$call2")" = "$leaf2" ] || fail "named session: the second call moved: $(cgroup_of "$call2")"
release c2 "$pm2"
[ ! -d "$SD" ] || fail "named session: $SD is left after its last call"
for i in 1 2; do
  report_is -m "named session: report $i" "$t/c$i.json" "session.cgroup=$SD" "session.name=name $S" \
    'session.envelope={"memory_max": null, "memory_high": null, "pids_max": null, "cpu_max": null}'
done
report_field "$t/c2.json" session.envelope_set_by "the session pmon-session-n-$S (made by an earlier call)"
echo "ok: named session: two calls in $SD, each in its own leaf and cgroup namespace; the session went with the last"

# --isolate: the call's PID namespace, its leaf in the session all the same.
if "$PMON" run -q --isolate -- true 2>/dev/null; then
  rc=0
  "$PMON" run --isolate --session "$S" --report "$t/iso.json" -- sh -c 'grep "^0::" /proc/self/cgroup > "$0"' "$t/iso.in" ||
    rc=$?
  [ "$rc" = 0 ] && [ "$(cat "$t/iso.in")" = "0::/" ] || fail "--isolate --session: exit $rc, the call sees '$(cat "$t/iso.in")'"
  report_is -m "--isolate --session" "$t/iso.json" confinement=pidns "session.cgroup=$SD"
  c=$(jget "$t/iso.json" cgroup)
  [ "${c%/*}" = "$SD" ] || fail "--isolate --session: the call's cgroup $c is not a leaf of $SD"
  [ ! -d "$SD" ] || fail "--isolate --session: $SD is left"
  echo "ok: --isolate --session: the call's leaf in $SD"
else
  echo "note: --isolate does not work here: not tested with a session"
fi

# A name that is not one: one line, not run.
rm -f "$t/ran"
rc=0; PMON_SESSION="a/b" "$PMON" run -- "${RAN[@]}" 2> "$t/err" || rc=$?
[ "$rc" = 125 ] && [ ! -e "$t/ran" ] && [ "$(wc -l < "$t/err")" = 1 ] &&
  grep -q "^pmon: run: PMON_SESSION: 'a/b' is not a session name" "$t/err" || fail "PMON_SESSION=a/b: exit $rc: $(cat "$t/err")"
rc=0; "$PMON" run --session .. -- "${RAN[@]}" 2> "$t/err" || rc=$?
[ "$rc" = 125 ] && [ ! -e "$t/ran" ] && grep -q "^pmon: run: --session: '..' is not a session name" "$t/err" ||
  fail "--session ..: exit $rc: $(cat "$t/err")"
echo "ok: bad session names refused"

# A named session where the backend has no cgroup to hold it: the call
# runs outside it, and a note says so (none with -q).
if have_backend pgroup; then
  rm -f "$t/ran"
  rc=0; "$PMON" run --session "$N-pg" --confine pgroup -- "${RAN[@]}" 2> "$t/err" || rc=$?
  [ "$rc" = 0 ] && [ -e "$t/ran" ] && [ "$(cat "$t/err")" = "pmon: note: the call runs outside its session: the session $N-pg needs a cgroup of its own: use --confine cgroup or --isolate, not the pgroup backend" ] ||
    fail "--session with --confine pgroup: exit $rc: $(cat "$t/err")"
  rc=0; "$PMON" run -q --session "$N-pg" --confine pgroup -- true 2> "$t/err" || rc=$?
  [ "$rc" = 0 ] && [ ! -s "$t/err" ] || fail "-q --session with --confine pgroup: exit $rc: $(cat "$t/err")"
  [ ! -d "$leaves/pmon-session-n-$N-pg" ] || fail "--session with --confine pgroup made the session's cgroup"
  echo "ok: --session with --confine pgroup: the call runs outside its session, with a note"
fi

# (d) pmon-shell. PMON_SESSION names its session, as pmon run's.
S=$N-d
SD=$leaves/pmon-session-n-$S
PMON_SESSION=$S member d1 "$SHELL_LINK" --
pm1=$pm call1=$call
PMON_SESSION=$S member d2 "$SHELL_LINK" --
pm2=$pm call2=$call
leaf1=$(cgroup_of "$call1") leaf2=$(cgroup_of "$call2")
[ "${leaf1%/*}" = "$SD" ] && [ "${leaf2%/*}" = "$SD" ] || fail "pmon-shell, PMON_SESSION: in $leaf1 and $leaf2, not $SD"
[ "$(cat "$t/d1.in")" = "0::/" ] || fail "pmon-shell, PMON_SESSION: the call sees '$(cat "$t/d1.in")'"
release d1 "$pm1"
[ -d "$SD" ] || fail "pmon-shell, PMON_SESSION: gone while its second call runs"
release d2 "$pm2"
[ ! -d "$SD" ] || fail "pmon-shell, PMON_SESSION: $SD is left after its last call"
[ ! -s "$t/d1.err" ] && [ ! -s "$t/d2.err" ] || fail "pmon-shell said: $(cat "$t/d1.err" "$t/d2.err")"
echo "ok: pmon-shell: PMON_SESSION puts its calls in $SD"

# Without a name its calls share their harness's session when an envelope
# is set. Here that is one that sets no limit (pids_max 0: none), which
# needs no controller. The harness: a shell that starts two pmon-shell
# lines, each waiting on its fifo, then waits for them.
mkfifo "$t/h1.fifo" "$t/h2.fifo"
line='grep "^0::" /proc/self/cgroup > "$T.in"; echo $$ > "$T.pid.tmp"; mv "$T.pid.tmp" "$T.pid"; read x < "$T.fifo"'
PMON_SESSION_PIDS_MAX=0 bash -c '
  T=$2/h1 "$1" "$3" & T=$2/h2 "$1" "$3" & wait' harness "$SHELL_LINK" "$t" "$line" > "$t/h.out" 2> "$t/h.err" &
harness=$!
record_pid "$harness"
hst=$(start_time_of "$harness")
HD=$leaves/pmon-session-h$harness-$hst-$PIDNS
echo "$HD" >> "$t/ours"
wait_for '[ -f "$t/h1.pid" ] && [ -f "$t/h2.pid" ]' $((100 * TIME_SCALE)) ||
  fail "harness: its calls never got going: $(cat "$t/h.err")"
call1=$(cat "$t/h1.pid") call2=$(cat "$t/h2.pid")
record_pid "$call1"; record_pid "$call2"
leaf1=$(cgroup_of "$call1") leaf2=$(cgroup_of "$call2")
[ "${leaf1%/*}" = "$HD" ] && [ "${leaf2%/*}" = "$HD" ] && [ "$leaf1" != "$leaf2" ] ||
  fail "harness session: the calls are in $leaf1 and $leaf2, not each in a leaf of $HD"
[ "$(cat "$t/h1.in")" = "0::/" ] && [ "$(cat "$t/h2.in")" = "0::/" ] || fail "harness session: a call sees its cgroup"
echo go > "$t/h1.fifo"
wait_for '[ ! -d "$leaf1" ]' $((100 * TIME_SCALE)) || fail "harness session: the first call's leaf is left"
[ -d "$HD" ] || fail "harness session: gone while its second call runs"
echo go > "$t/h2.fifo"
rc=0; wait "$harness" || rc=$?
[ "$rc" = 0 ] && [ ! -s "$t/h.err" ] || fail "harness: exit $rc: $(cat "$t/h.err")"
# The harness is gone: the next session opened beside it removes its session
# (here: a pmon run with an envelope of its own, which it removes too).
rc=0; sh -c 'echo $$ > "$0"; exec "$@"' "$t/pm" "$PMON" run --session-pids-max 0 --report "$t/r.json" -- true || rc=$?
[ "$rc" = 0 ] || fail "pmon run --session-pids-max 0: exit $rc"
case $(jget "$t/r.json" session.cgroup) in
  "$leaves/pmon-session-p$(cat "$t/pm")-"*) ;;
  *) fail "pmon run --session-pids-max 0: not in a session of its own: $(jget "$t/r.json" session.cgroup)" ;;
esac
[ ! -d "$HD" ] || fail "harness session: $HD is left after the harness is gone and another session was opened"
[ -z "$(sessions_of "$(cat "$t/pm")")" ] || fail "pmon run --session-pids-max 0 left its own session"
echo "ok: harness session: two pmon-shell calls of one harness in $HD; removed once the harness was gone"

# The harness SIGKILLed while its call runs: pmon-shell stops the call (it
# dies with its parent) and, the harness gone, removes the session.
rm -f "$t/k.pid"
PMON_SESSION_PIDS_MAX=0 bash -c '"$1" "$2"; echo harness-went-on' harness "$SHELL_LINK" \
  "echo \$\$ > $t/k.pid.tmp; mv $t/k.pid.tmp $t/k.pid; exec sleep 1000" > /dev/null 2> "$t/k.err" &
harness=$!
record_pid "$harness"
hst=$(start_time_of "$harness")
HD=$leaves/pmon-session-h$harness-$hst-$PIDNS
echo "$HD" >> "$t/ours"
wait_for '[ -f "$t/k.pid" ]' $((100 * TIME_SCALE)) || fail "killed harness: its call never got going: $(cat "$t/k.err")"
call=$(cat "$t/k.pid")
record_pid "$call"
cst=$(start_time_of "$call")
pm=$(cat "/proc/$harness/task/$harness/children"); pm=${pm%% *}
record_pid "$pm"
pst=$(start_time_of "$pm")
[ "$(dirname "$(cgroup_of "$call")")" = "$HD" ] || fail "killed harness: the call is in $(cgroup_of "$call"), not $HD"
kill -KILL "$harness"
wait "$harness" 2>/dev/null || true
wait_for '! alive "$call" "$cst" && ! alive "$pm" "$pst"' $((100 * TIME_SCALE)) ||
  fail "killed harness: the call or pmon-shell outlived the harness by 10 s"
[ ! -d "$HD" ] || fail "killed harness: $HD is left"
echo "ok: harness SIGKILLed: its call stopped, its session removed"

# (e) Crashes. crash_call LABEL: pmon run --session $S whose call leaves a
# setsid daemon; sets pm, guard, main (the call's), daemon (each recorded,
# with *_st).
crash_call() {
  local label=$1
  "$PMON" run -v --session "$S" -- sh -c '
    echo $$ > $0.m
    setsid sh -c "echo \$\$ > $0.d.tmp; mv $0.d.tmp $0.d; exec sleep 1000" &
    exec sleep 1000' "$t/$label" 2> "$t/$label.err" &
  pm=$!
  record_pid "$pm"
  wait_for '[ -f "$t/$label.d" ]' $((100 * TIME_SCALE)) || fail "$label: the call never got going: $(cat "$t/$label.err")"
  daemon=$(cat "$t/$label.d") main=$(cat "$t/$label.m")
  record_pid "$daemon"; record_pid "$main"
  guard=$(sed -n 's/.*crash guard pid \([0-9]*\).*/\1/p' "$t/$label.err")
  [ -n "$guard" ] || fail "$label: no crash guard: $(cat "$t/$label.err")"
  record_pid "$guard"
  pm_st=$(start_time_of "$pm") guard_st=$(start_time_of "$guard") daemon_st=$(start_time_of "$daemon")
  main_st=$(start_time_of "$main")
  [ "$(dirname "$(cgroup_of "$daemon")")" = "$SD" ] || fail "$label: the daemon is in $(cgroup_of "$daemon"), not in $SD"
}
S=$N-e
SD=$leaves/pmon-session-n-$S
# pmon SIGKILLed: its guard stops the call, daemon and all.
crash_call e1
kill -KILL "$pm"
wait "$pm" 2>/dev/null || true
wait_for '! alive "$daemon" "$daemon_st" && ! alive "$main" "$main_st" && ! alive "$guard" "$guard_st"' \
  $((100 * TIME_SCALE)) || fail "pmon SIGKILLed: the call, its daemon or the guard outlived it by 10 s"
echo "ok: pmon SIGKILLed: its crash guard stopped the call's setsid daemon"
[ -d "$SD" ] || echo "note: the dead session's cgroup went with the guard"
# pmon gc: today it removes the leaves of dead pmon processes, not sessions.
"$PMON" gc > "$t/gc" || fail "pmon gc: exit $?: $(cat "$t/gc")"
if [ -d "$SD" ]; then
  echo "note: pmon gc left the dead session $SD"
  # The next call of the name joins it, and as its last removes it.
  rc=0; "$PMON" run --session "$S" -- true || rc=$?
  [ "$rc" = 0 ] || fail "the next call of a dead session: exit $rc"
fi
[ ! -d "$SD" ] || fail "the dead session $SD is left after the next call of its name"
echo "ok: the dead session removed (by pmon gc or the next call of its name)"

# pmon and its guard SIGKILLed: the daemon stays, in the session. The next
# call of the name joins the session and, its last, kills what is left.
crash_call e2
kill -KILL "$guard"
wait_for '! alive "$guard" "$guard_st"' $((100 * TIME_SCALE)) || fail "the guard outlived SIGKILL"
kill -KILL "$pm"
wait "$pm" 2>/dev/null || true
wait_for '! alive "$pm" "$pm_st"' $((100 * TIME_SCALE)) || fail "pmon outlived SIGKILL"
alive "$daemon" "$daemon_st" && alive "$main" "$main_st" || fail "the call died without a guard (the test is void)"
rc=0; "$PMON" run --session "$S" --report "$t/r.json" -- true || rc=$?
[ "$rc" = 0 ] || fail "the next call of a crashed session: exit $rc"
report_field "$t/r.json" session.cgroup "$SD"
wait_for '! alive "$daemon" "$daemon_st" && ! alive "$main" "$main_st"' $((100 * TIME_SCALE)) ||
  fail "the crashed call or its daemon outlived its session"
[ ! -d "$SD" ] || fail "the crashed session $SD is left after the next call of its name"
echo "ok: pmon and guard SIGKILLed: the next call of the session's name killed the daemon and removed the session"

# (f) Nothing of this run is left.
left=$(ls -d "$leaves"/pmon-session-n-"$N"-* 2>/dev/null || true)
while read -r d; do [ ! -d "$d" ] || left="$left $d"; done < "$t/ours"
[ -z "$left" ] || fail "session cgroups left: $left"
pass
