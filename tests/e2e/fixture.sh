# SPDX-License-Identifier: Apache-2.0
# Suite fixture: "setup" starts an empty record; "check" fails when any
# process a scenario recorded is still alive, or a pmon cgroup this run
# made is left.
#
# Others may run pmon on the same machine at the same time, so "check" looks
# only at what this run made: pmon cgroups that were already there at setup
# are not looked at (setup lists them in $STATE/cgroups.before), and of the
# ones made since, a leaf (pmon-<owner pid>-<owner start time>-<n>, or
# the same with .scope for a systemd scope) whose
# owner still runs outside this run (its environment has another
# PMON_TEST_STATE, or none) belongs to someone else. A leaf whose owner is
# gone counts as this run's when the owner started after setup; one left by
# another run's crashed pmon in that time would count too, and "check" says
# so when it fails.
set -u
STATE=${PMON_TEST_STATE:?}
cgroup2_root() { awk '$9=="cgroup2"{print $5; exit}' /proc/self/mountinfo; }
pmon_cgroups() {
  local cg; cg=$(cgroup2_root)
  [ -n "$cg" ] && find "$cg" -mindepth 1 -type d -name 'pmon-*' 2>/dev/null | sort
  return 0
}
# Start time (field 22 of /proc/PID/stat) of PID, or empty.
start_of() {
  local s
  { read -r s < "/proc/$1/stat"; } 2>/dev/null || return 0
  s=${s##*) }; set -- $s
  echo "${20}"
}
# Whether PID's environment names this run's state directory.
ours_by_env() {
  tr '\0' '\n' < "/proc/$1/environ" 2>/dev/null | grep -qxF "PMON_TEST_STATE=$STATE"
}
# Whether cgroup DIR (and all below it) holds no process.
cgroup_empty() { grep -qx 'populated 0' "$1/cgroup.events" 2>/dev/null; }
# What a cgroup left behind holds, for the failure's reader: its state, each
# process in it or below, the cgroups below it, and for a systemd scope
# what systemd says of the unit.
describe_cgroup() {
  local dir=$1 f p
  echo "  $(tr '\n' ' ' < "$dir/cgroup.events" 2>/dev/null)"
  for f in $(find "$dir" -name cgroup.procs 2>/dev/null); do
    for p in $(cat "$f" 2>/dev/null); do
      echo "  process $p (start $(start_of "$p"), in ${f%/cgroup.procs}): $(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null)" \
        "$(ours_by_env "$p" && echo '[this run]')"
    done
  done
  find "$dir" -mindepth 1 -type d 2>/dev/null | sed 's/^/  below it: /'
  if [[ $dir == *.scope ]] && command -v systemctl > /dev/null; then
    echo "  systemd: $(systemctl show -p ActiveState,SubState,Result,Delegate "${dir##*/}" 2>&1 | tr '\n' ' ')"
    command -v journalctl > /dev/null &&
      journalctl -q -o short-monotonic -u "${dir##*/}" 2>/dev/null | tail -20 | sed 's/^/  journal: /'
  fi
}
case ${1:-} in
  setup)
    rm -rf "$STATE"; mkdir -p "$STATE"
    echo "e2e state at $STATE"
    # What was there before this run: never this run's to answer for.
    pmon_cgroups > "$STATE/cgroups.before"
    start_of $$ > "$STATE/setup.start"
    echo "pmon cgroups already there: $(wc -l < "$STATE/cgroups.before")"
    # What this machine was declared to offer (PMON_EXPECT_BACKENDS): each
    # one must work, or the suite fails here, before any scenario shrinks.
    bad=0
    for b in ${PMON_EXPECT_BACKENDS:-}; do
      case $b in
        cgroup|pidns|subreaper|pgroup) ;;
        *) echo "FAIL: PMON_EXPECT_BACKENDS names an unknown backend: $b"; bad=1; continue ;;
      esac
      if ! err=$("${PMON:?}" run -q --confine "$b" -- true 2>&1 >/dev/null); then
        echo "FAIL: the $b backend is expected here but missing: ${err:-pmon run --confine $b failed}"; bad=1
        continue
      fi
      if [ "$b" = pidns ]; then  # the scenarios name pidns processes through a host /proc bind mount
        d=$(mktemp -d) && mount --bind /proc "$d" 2>/dev/null && umount "$d" ||
          { echo "FAIL: pidns is expected, but a bind mount of /proc fails (the scenarios need it)"; bad=1; }
        rmdir "$d"
      fi
      echo "expected backend available: $b"
    done
    exit $bad
    ;;
  check)
    bad=0
    if [ -f "$STATE/pids" ]; then
      while read -r pid st; do
        # A zombie reparented to init is init's to reap: give it a moment.
        # (Builtins only: a fork per recorded pid is slow where there are
        # thousands, on an emulated machine above all.)
        for ((i = 0; i < 50; i++)); do
          { read -r s < "/proc/$pid/stat"; } 2>/dev/null || break
          s=${s##*) }; set -- $s
          [ "${20}" = "$st" ] || break
          [ "$1" = Z ] && [ "$2" = 1 ] || break
          sleep 0.05
        done
        { read -r s < "/proc/$pid/stat"; } 2>/dev/null || continue
        s=${s##*) }; set -- $s
        if [ "${20}" = "$st" ]; then
          echo "LEFT BEHIND: pid $pid (start $st) state $1 ppid $2: $(tr '\0' ' ' < /proc/$pid/cmdline)"
          bad=1
        fi
      done < "$STATE/pids"
    fi
    since=$(cat "$STATE/setup.start" 2>/dev/null || echo 0)
    [ -f "$STATE/cgroups.before" ] || : > "$STATE/cgroups.before"
    # Recorded "pid start" pairs, to know a recorded owner or member.
    declare -A rec=()
    if [ -f "$STATE/pids" ]; then
      while read -r pid st; do rec["$pid $st"]=1; done < "$STATE/pids"
    fi
    others=0
    for dir in $(pmon_cgroups | comm -23 - "$STATE/cgroups.before"); do
      [ -d "$dir" ] || continue  # gone while we looked: removed by its owner
      why=""
      # A process in it (or below) that this run started or that has this
      # run's environment makes it this run's.
      for p in $(find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null); do
        pst=$(start_of "$p")
        if [ -n "${rec["$p $pst"]:-}" ] || ours_by_env "$p"; then why="holds process $p of this run"; break; fi
      done
      name=${dir##*/}
      if [ -z "$why" ] && [[ $name =~ ^pmon-([0-9]+)-([0-9]+)(-[0-9]+|\.scope)$ ]]; then
        opid=${BASH_REMATCH[1]} ost=${BASH_REMATCH[2]}
        if [ -n "${rec["$opid $ost"]:-}" ]; then
          why="its owner pmon $opid was started by this run"
        elif [ "$(start_of "$opid")" = "$ost" ]; then
          if ours_by_env "$opid"; then why="its owner pmon $opid of this run still runs"
          else others=$((others + 1)); continue; fi  # someone else's, in use
        elif [ "$ost" -ge "$since" ]; then
          why="its owner pmon $opid started during this run and is gone (another run's crashed pmon would look the same)"
        else
          others=$((others + 1)); continue  # older than this run
        fi
      elif [ -z "$why" ]; then
        # Not a name pmon gives (pmon-<pid>-<start>-<n> or its .scope):
        # nobody to tell it by.
        others=$((others + 1)); continue
      fi
      # An empty systemd scope is systemd's to remove once its last
      # process is gone, which it does after the fact: give it a moment.
      if [[ $dir == *.scope ]] && cgroup_empty "$dir"; then
        for ((i = 0; i < 50; i++)); do [ -d "$dir" ] || break; sleep 0.1; done
        [ -d "$dir" ] || continue
      fi
      echo "LEFT BEHIND: cgroup $dir: $why"
      describe_cgroup "$dir"
      bad=1
    done
    [ $others = 0 ] || echo "not this run's, not looked at: $others pmon cgroup(s) of other pmon processes on this machine"
    [ $bad = 0 ] && echo "nothing left behind"
    exit $bad
    ;;
  *) echo "usage: fixture.sh setup|check" >&2; exit 2 ;;
esac
