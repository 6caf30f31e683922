# SPDX-License-Identifier: Apache-2.0
# --report PATH in a directory others can write: whatever symlinks someone
# planted beside PATH (at the temporary names pmon could use, and at PATH
# itself), the file they point at is never opened for writing, and the report
# lands at PATH as a regular file. The directory is world-writable but not
# sticky, so the kernel's protected_symlinks does not come into play, and the
# links belong to another user, as a stranger's would.
. "$(dirname "$0")/common.inc"

[ "$(id -u)" = 0 ] || skip "needs root (to plant links owned by another user)"
id nobody >/dev/null 2>&1 || skip "no user 'nobody' to own the planted links"

shared=$t/shared
mkdir "$shared"
chmod 0777 "$shared"
victim=$t/victim
echo precious > "$victim"
chmod 0644 "$victim"

# plant NAME: a symlink at $shared/NAME to the victim, owned by nobody.
plant() {
  ln -s "$victim" "$shared/$1"
  chown -h nobody "$shared/$1"
}

# check WHAT: the victim is untouched and $shared/r.json is the report of
# `sh -c 'exit 3'`, a regular file with mode 0644 (umask 022).
check() {
  [ "$(cat "$victim")" = precious ] || fail "$1: the victim was overwritten: $(head -c 200 "$victim")"
  [ -f "$shared/r.json" ] && [ ! -L "$shared/r.json" ] || fail "$1: r.json is not a regular file: $(ls -l "$shared")"
  [ "$(stat -c %a "$shared/r.json")" = 644 ] || fail "$1: r.json has mode $(stat -c %a "$shared/r.json")"
  report_is -m "$1: the report" "$shared/r.json" 'command=["sh", "-c", "exit 3"]' exit_status=3
}

# 1. Every name of the form r.json.tmp.<pid> for the pid pmon will have
# (the shell execs pmon, so $$ is pmon's pid) and its neighbours.
rc=0
umask 022
sh -c '
  for p in $(seq $(($$ - 20)) $(($$ + 20))); do
    ln -s "$1" "$2/r.json.tmp.$p" && chown -h nobody "$2/r.json.tmp.$p"
  done
  exec "$3" run -q --report "$2/r.json" -- sh -c "exit 3"' sh "$victim" "$shared" "$PMON" || rc=$?
[ $rc = 3 ] || fail "pid names: pmon exit $rc"
check "links at r.json.tmp.<pid>"
# The planted links are still links to the victim; pmon left nothing else.
n=$(find "$shared" -name 'r.json.tmp.*' -type l | wc -l)
[ "$n" = 41 ] || fail "pid names: $n of the 41 planted links are left"
[ "$(find "$shared" -mindepth 1 ! -type l | wc -l)" = 1 ] || fail "pid names: left beside the report: $(ls -A "$shared")"
rm -f "$shared"/*

# 2. A link at the target itself: it is replaced by the report, never followed.
plant r.json
rc=0; "$PMON" run -q --report "$shared/r.json" -- sh -c 'exit 3' || rc=$?
[ $rc = 3 ] || fail "link at the target: pmon exit $rc"
check "a link at the target"
rm -f "$shared"/*

# 3. The same through a relative path (the directory part is ".").
(cd "$shared" && plant r.json && "$PMON" run -q --report r.json -- sh -c 'exit 3') || [ $? = 3 ] ||
  fail "relative path: pmon failed"
check "a relative path"

pass
