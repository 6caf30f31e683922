# cpack -G DEB builds pmon_<version>_<arch>.deb; installed into a scratch
# root with dpkg --root, its pmon runs (doctor, run), finds its helper in
# libexec/pmon, prints the package's version, has a man page per
# subcommand and the copyright file; purging it leaves nothing.
. "$(dirname "$0")/common.inc"

BUILD=${PMON_BUILD_DIR:?PMON_BUILD_DIR must point at the build directory}
command -v cpack > /dev/null || skip "cpack is not installed"
command -v dpkg-shlibdeps > /dev/null || skip "dpkg-dev is not installed (scripts/deps.sh installs it)"
[ -d "$BUILD/man" ] || skip "no man pages were built (help2man is not installed; scripts/deps.sh installs it)"

(cd "$BUILD" && cpack -G DEB -B "$t/deb") > "$t/cpack.log" 2>&1 || fail "cpack failed: $(tail -5 "$t/cpack.log")"
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
[ -x "$root/usr/libexec/pmon/pmon-systemd" ] || fail "no usr/libexec/pmon/pmon-systemd"
"$p" doctor > "$t/doctor" || fail "pmon doctor from the package failed: $(cat "$t/doctor")"
! grep -q 'pmon-systemd.*is neither in' "$t/doctor" || fail "the packaged pmon does not find its helper: $(grep systemd "$t/doctor")"
out=$("$p" run -q -- sh -c 'echo from-the-package; exit 3') && rc=0 || rc=$?
[ "$rc" = 3 ] && [ "$out" = from-the-package ] || fail "pmon run from the package: exit $rc, output '$out'"
echo "ok: installed pmon $version runs (doctor, run)"

grep -q "^License: Apache-2.0$" "$root/usr/share/doc/pmon/copyright" || fail "the copyright file does not name Apache-2.0"
for sub in "" $("$p" --help | sed -n 's/^  pmon \([a-z][a-z-]*\) .*/\1/p' | sort -u); do
  page=$root/usr/share/man/man1/pmon${sub:+-$sub}.1.gz
  [ -s "$page" ] || fail "no man page for pmon $sub"
done
echo "ok: a man page for pmon and each subcommand"

dpkg --root="$root" --purge pmon > "$t/purge.log" 2>&1 || fail "dpkg --purge failed: $(cat "$t/purge.log")"
left=$(cd "$root" && find . -mindepth 1 -path ./var -prune -o -print)
[ -z "$left" ] || fail "purging left: $left"
echo "ok: purged, nothing left"
pass
