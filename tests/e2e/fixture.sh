# Suite fixture: "setup" starts an empty record; "check" fails when any
# process a scenario recorded is still alive, or a pmon cgroup is left.
set -u
STATE=${PMON_TEST_STATE:?}
case ${1:-} in
  setup)
    rm -rf "$STATE"; mkdir -p "$STATE"
    echo "e2e state at $STATE"
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
    cg=$(awk '$9=="cgroup2"{print $5; exit}' /proc/self/mountinfo)
    if [ -n "$cg" ]; then
      left=$(find "$cg" -mindepth 1 -type d -name 'pmon-*' 2>/dev/null)
      if [ -n "$left" ]; then echo "LEFT BEHIND: cgroups:"; echo "$left"; bad=1; fi
    fi
    [ $bad = 0 ] && echo "nothing left behind"
    exit $bad
    ;;
  *) echo "usage: fixture.sh setup|check" >&2; exit 2 ;;
esac
