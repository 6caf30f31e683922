# SPDX-License-Identifier: Apache-2.0
# --cgroup-root: every bad value fails closed (125, one line naming what is
# wrong, the command never runs, no leaf is left), with --confine cgroup and
# under auto alike (an explicit root asks for cgroup; falling back would hide
# a typo). A root-made directory containing pmon's own cgroup works.
. "$(dirname "$0")/common.inc"
. "$(dirname "$0")/unpriv.inc"

acquire_user

# expect_refused NAME PATTERN [runner...] -- pmon args: 125, one stderr line
# matching PATTERN, the command not run.
expect_refused() {
  local name=$1 pattern=$2 rc
  shift 2
  for confine in cgroup auto; do
    rm -f "$u/ran"
    rc=0
    "$@" --confine "$confine" -- sh -c "echo ran > $u/ran" 2> "$u/err" || rc=$?
    [ "$rc" = 125 ] || fail "$name ($confine): exit $rc, want 125: $(cat "$u/err")"
    [ ! -e "$u/ran" ] || fail "$name ($confine): the command ran"
    [ "$(wc -l < "$u/err")" = 1 ] || fail "$name ($confine): want one stderr line, got: $(cat "$u/err")"
    grep -q -- "$pattern" "$u/err" || fail "$name ($confine): '$pattern' not in: $(cat "$u/err")"
  done
  echo "ok: $name: 125: $(cat "$u/err")"
}

# 1. Outside the cgroup2 mount.
expect_refused "outside the mount" "the cgroup root $t (--cgroup-root) is not below the cgroup2 mount $CG" \
  "$PMON" run --cgroup-root "$t"
# A sibling whose name merely starts with the mount's is outside too.
expect_refused "prefix of the mount" "is not below the cgroup2 mount" \
  "$PMON" run --cgroup-root "${CG}x"

# 2. A directory that does not exist.
expect_refused "nonexistent" "cannot open cgroup $CG/pmon-test-nonexistent-$$: No such file" \
  "$PMON" run --cgroup-root "$CG/pmon-test-nonexistent-$$"

# 3. Directories pmon cannot move processes into.
# a) threaded: the kernel refuses processes in a child, even for root.
TH=$CG/pmon-test-threaded-$$
make_cgroup "$TH"
echo threaded > "$TH/cgroup.type" || fail "cannot make $TH threaded"
expect_refused "threaded" "threaded" "$PMON" run --cgroup-root "$TH"
[ -z "$(find "$TH" -mindepth 1 -type d)" ] || fail "threaded: a leaf was left in $TH"
# b) unprivileged, the root is root's: no write access to cgroup.procs.
R=$CG/pmon-test-root-$$
make_cgroup "$R"
make_cgroup "$R/inner"
expect_refused "not delegated" "$R/cgroup.procs is not writable (Permission denied)" \
  as_user_in "$R/inner" "$PMON" run --cgroup-root "$R"
# c) unprivileged, the root is delegated but pmon's own cgroup is outside it:
# the migration needs write access to the common ancestor (here the mount).
DG=$CG/pmon-test-delegonly-$$
make_cgroup "$DG"
delegate_cgroup "$DG"
expect_refused "own cgroup outside a delegated root" "$CG/cgroup.procs is not writable" \
  as_user_in "$R/inner" "$PMON" run --cgroup-root "$DG"
[ -z "$(find "$DG" -mindepth 1 -type d)" ] || fail "a leaf was left in $DG"

# 4. Success: a root-made directory that contains pmon's own cgroup (given
# with and without a trailing slash).
for root in "$R" "$R/"; do
  rm -f "$u/daemon"
  rc=0
  sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$R/inner" \
    "$PMON" run -q --cgroup-root "$root" --report "$t/r.json" -- sh -c "$(daemon_script "$u/daemon")" ||
    rc=$?
  record_daemon "$u/daemon"
  [ "$rc" = 0 ] || fail "success ($root): pmon exit $rc"
  [ "$(field "$t/r.json" confinement)" = cgroup ] || fail "success ($root): not cgroup"
  leaf=$(field "$t/r.json" cgroup)
  case $leaf in
    "$R"/pmon-*) ;;
    *) fail "success ($root): leaf $leaf is not directly under $R" ;;
  esac
  ! alive "$dpid" "$dst" || fail "success ($root): daemon $dpid survived"
  [ "$(field "$t/r.json" cleanup_verified)" = true ] || fail "success ($root): cleanup not verified"
  [ ! -d "$leaf" ] || fail "success ($root): leaf $leaf left behind"
  echo "ok: --cgroup-root $root: leaf $leaf, E1 daemon stopped"
done
[ -z "$(find "$R" -mindepth 1 -type d -name 'pmon-*')" ] || fail "a leaf was left in $R"
pass
