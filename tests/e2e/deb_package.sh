# SPDX-License-Identifier: Apache-2.0
# cpack -G DEB builds pmon_<version>_<arch>.deb (or, with PMON_DIST, the
# one scripts/release.sh made is taken); installed into a scratch root with
# dpkg --root, its pmon runs (doctor, run), finds its helper in
# libexec/pmon, prints the package's version, has pmon(1) (the written
# page, not one made from --help) and a page for every subcommand, and the
# copyright file; lintian finds no error in it; purging it leaves nothing.
. "$(dirname "$0")/common.inc"

BUILD=${PMON_BUILD_DIR:?PMON_BUILD_DIR must point at the build directory}
if [ -n "${PMON_DIST:-}" ]; then
  mkdir -p "$t/deb"
  cp "$PMON_DIST"/pmon_*.deb "$t/deb/"
else
  command -v cpack > /dev/null || skip "cpack is not installed"
  command -v dpkg-shlibdeps > /dev/null || skip "dpkg-dev is not installed (scripts/deps.sh installs it)"
  [ -d "$BUILD/man" ] || skip "no man pages were built (help2man is not installed; scripts/deps.sh installs it)"
  (cd "$BUILD" && cpack -G DEB -B "$t/deb") > "$t/cpack.log" 2>&1 || fail "cpack failed: $(tail -5 "$t/cpack.log")"
fi
deb=$(ls "$t"/deb/pmon_*.deb)
version=$(dpkg-deb -f "$deb" Version)
arch=$(dpkg-deb -f "$deb" Architecture)
[ "$(basename "$deb")" = "pmon_${version}_${arch}.deb" ] || fail "package file $(basename "$deb"), want pmon_${version}_${arch}.deb"
[ "$arch" = "$(dpkg --print-architecture)" ] || fail "architecture $arch"

root=$t/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
: > "$root/var/lib/dpkg/status"
# The scratch root has no libc6 in its database: the host's libraries serve.
dpkg --root="$root" --force-depends -i "$deb" > "$t/dpkg.log" 2>&1 || fail "dpkg -i failed: $(cat "$t/dpkg.log")"

p=$root/usr/bin/pmon
[ -x "$p" ] || fail "no usr/bin/pmon in the package"
[ "$("$p" --version)" = "pmon $version" ] || fail "pmon --version says '$("$p" --version)', the package $version"
[ "$(readlink "$root/usr/bin/pmon-shell")" = pmon ] || fail "no usr/bin/pmon-shell linked to pmon in the package"
[ -x "$root/usr/libexec/pmon/pmon-systemd" ] || fail "no usr/libexec/pmon/pmon-systemd"
"$p" doctor > "$t/doctor" || fail "pmon doctor from the package failed: $(cat "$t/doctor")"
! grep -q 'pmon-systemd.*is neither in' "$t/doctor" || fail "the packaged pmon does not find its helper: $(grep systemd "$t/doctor")"
out=$("$p" run -q -- sh -c 'echo from-the-package; exit 3') && rc=0 || rc=$?
[ "$rc" = 3 ] && [ "$out" = from-the-package ] || fail "pmon run from the package: exit $rc, output '$out'"
echo "ok: installed pmon $version runs (doctor, run)"
# pmon sandboxd's daemon is not in the package yet (it links gRPC and
# cpp-httplib, which every user of the package would then have to install):
# the packaged pmon says so in one line.
rc=0; "$p" sandboxd --root-dir "$t/sandbox" 2> "$t/sandboxd" || rc=$?
[ $rc = 125 ] && grep -q "the program that serves it, is neither in" "$t/sandboxd" ||
  fail "the packaged pmon sandboxd: exit $rc: $(cat "$t/sandboxd")"
[ ! -e "$root/usr/libexec/pmon/pmon-sandboxd" ] || fail "the package carries pmon-sandboxd"

grep -q "^License: Apache-2.0$" "$root/usr/share/doc/pmon/copyright" || fail "the copyright file does not name Apache-2.0"
subs=$("$p" --help | grep -oE '^  pmon [a-z][a-z-]*|/ [a-z][a-z-]* [A-Z]' | sed -E 's/^(  pmon |\/ )//; s/ [A-Z]$//' | sort -u)
for sub in "" $subs; do
  page=$root/usr/share/man/man1/pmon${sub:+-$sub}.1.gz
  [ -s "$page" ] || fail "no man page for pmon $sub"
done
for sub in logs stop wait start jobs; do
  echo "$subs" | grep -qx "$sub" || fail "pmon --help names no '$sub' (its page is not checked)"
done
# pmon(1) is the written page: what pmon guarantees, backends, exit status,
# the report, examples, files.
man1=$(zcat "$root/usr/share/man/man1/pmon.1.gz")
for section in 'NAME' 'SYNOPSIS' 'DESCRIPTION' 'EXIT STATUS' 'THE REPORT' 'EXAMPLES' 'FILES' 'SEE ALSO'; do
  echo "$man1" | grep -q "^\.SH \"\{0,1\}$section\"\{0,1\}$" || fail "pmon(1) has no $section section"
done
echo "$man1" | grep -q '^\.TH PMON 1 .*"pmon '"$version"'"' || fail "pmon(1) does not carry the version $version"
warn=$(zcat "$root/usr/share/man/man1/pmon.1.gz" | LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l - 2>&1 >/dev/null || true)
[ -z "$warn" ] || fail "man warns about pmon(1): $warn"
echo "ok: pmon(1) and a page for each subcommand ($(echo $subs))"
if command -v lintian > /dev/null; then
  # (its temporary files in the scenario's directory, not in /tmp)
  TMPDIR="$t" lintian --tag-display-limit 0 "$deb" > "$t/lintian.log" 2>&1 || true
  if grep -q '^E: ' "$t/lintian.log"; then fail "lintian finds errors: $(grep '^E: ' "$t/lintian.log")"; fi
  echo "ok: lintian finds no error ($(grep -c '^W: ' "$t/lintian.log") warnings)"
  sed 's/^/  /' "$t/lintian.log"
elif [ "${CI:-}" = true ]; then
  fail "lintian is not installed (scripts/deps.sh installs it)"
fi

# CI, on the release's package: the README's line itself, apt install of
# the file, on this machine (where no pmon package is installed), then purge.
if [ "${CI:-}" = true ] && [ -n "${PMON_DIST:-}" ] && ! dpkg -s pmon > /dev/null 2>&1 && [ ! -e /usr/bin/pmon ]; then
  (cd "$t/deb" && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "./$(basename "$deb")") > "$t/apt.log" 2>&1 ||
    fail "apt install ./$(basename "$deb") failed: $(tail -5 "$t/apt.log")"
  v=$(/usr/bin/pmon --version) || true
  page=$(man -w pmon 2> /dev/null) || true
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -q pmon > "$t/apt-purge.log" 2>&1 || fail "apt purge pmon failed: $(tail -5 "$t/apt-purge.log")"
  [ "$v" = "pmon $version" ] || fail "after apt install, /usr/bin/pmon --version says '$v'"
  [ "$page" = /usr/share/man/man1/pmon.1.gz ] || fail "after apt install, man -w pmon is '$page'"
  [ ! -e /usr/bin/pmon ] && [ ! -e /usr/libexec/pmon ] || fail "apt purge pmon left /usr/bin/pmon or /usr/libexec/pmon"
  echo "ok: apt install ./$(basename "$deb"): pmon $version, man pmon; apt purge removed it"
fi

dpkg --root="$root" --purge pmon > "$t/purge.log" 2>&1 || fail "dpkg --purge failed: $(cat "$t/purge.log")"
left=$(cd "$root" && find . -mindepth 1 -path ./var -prune -o -print)
[ -z "$left" ] || fail "purging left: $left"
echo "ok: purged, nothing left"
pass
