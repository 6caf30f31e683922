# SPDX-License-Identifier: Apache-2.0
# The release tarballs as a user gets them (label artifact: PMON_DIST is the
# directory scripts/release.sh filled): SHA256SUMS checks them; the x86_64
# one, unpacked with the README's line into a prefix, gives a stripped
# static pmon that prints the release's version, finds its helper, stops a
# setsid daemon, and whose man pages man can show; pmon sandboxd's tarball
# unpacked over it serves with the libraries it brings; the aarch64 one holds
# the same files, for aarch64.
. "$(dirname "$0")/common.inc"

dist=${PMON_DIST:-}
[ -n "$dist" ] || skip "PMON_DIST is not set (run scripts/release.sh, then PMON_DIST=dist)"
(cd "$dist" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not match the artifacts"
echo "ok: SHA256SUMS matches $(wc -l < "$dist/SHA256SUMS") artifacts"

x86=$(ls "$dist"/pmon-*-x86_64-linux.tar.gz)
arm=$(ls "$dist"/pmon-*-aarch64-linux.tar.gz)
version=$(basename "$x86" | sed -E 's/^pmon-(.*)-x86_64-linux\.tar\.gz$/\1/')
list() { tar -tzf "$1" | sed 's#^[^/]*/##' | sort; }
[ "$(list "$x86")" = "$(list "$arm")" ] || fail "the two tarballs hold different files: $(diff <(list "$x86") <(list "$arm"))"

# The README's line, into a scratch prefix in place of /usr/local.
prefix=$t/prefix
mkdir -p "$prefix"
tar -C "$prefix" --strip-components=1 -xzf "$x86"
p=$prefix/bin/pmon
file -b "$p" | grep -q 'x86-64.*statically linked.*stripped' || fail "bin/pmon is not a stripped static x86-64 program: $(file -b "$p")"
[ "$("$p" --version)" = "pmon $version" ] || fail "bin/pmon --version: $("$p" --version), the tarball's $version"
"$p" doctor > "$t/doctor" 2>&1 || fail "pmon doctor failed: $(cat "$t/doctor")"
! grep -q 'pmon-systemd.*is neither in' "$t/doctor" || fail "pmon does not find libexec/pmon/pmon-systemd: $(grep systemd "$t/doctor")"
export rec=$t/daemon   # where RECORD_SH, in the daemon, writes its pid and start time
rc=0; timeout 60 "$p" run -q -- sh -c "setsid sh -c '$RECORD_SH; exec sleep 1000' & while [ ! -s $rec ]; do sleep 0.01; done; exit 4" || rc=$?
record_file "$rec"
[ "$rc" = 4 ] || fail "pmon run from the tarball exited $rc, want 4"
[ -z "$(alive_in "$rec")" ] || fail "the setsid daemon survived pmon run from the tarball"
echo "ok: pmon $version from the tarball runs, finds its helper, stops a setsid daemon"
for page in pmon pmon-run pmon-logs pmon-stop pmon-wait; do
  [ -s "$prefix/share/man/man1/$page.1.gz" ] || fail "no $page.1.gz in the tarball"
done
MANWIDTH=80 man -M "$prefix/share/man" pmon 2> /dev/null | grep -q 'EXIT STATUS' || fail "man -M <prefix>/share/man pmon does not show pmon(1)"
cmp -s "$prefix/LICENSE" "$(dirname "$0")/../../LICENSE" || fail "the tarball's LICENSE is not the project's"
echo "ok: man pages and LICENSE"

# pmon sandboxd's tarball, unpacked over the same prefix: pmon finds the
# program, the program its libraries (all but the C library's), and it
# serves.
sbx=$(ls "$dist"/pmon-*-x86_64-linux-sandboxd.tar.gz)
tar -C "$prefix" --strip-components=1 -xzf "$sbx"
! ldd "$prefix/libexec/pmon/pmon-sandboxd" | grep -v -E '/libexec/pmon/lib/|lib(c|m)\.so|ld-linux|linux-vdso' | grep '=>' ||
  fail "pmon-sandboxd loads a library from outside its tarball and the C library"
[ "$(ls "$prefix"/share/doc/pmon-sandboxd/*.copyright | wc -l)" -ge 10 ] ||
  fail "too few copyright files for its libraries: $(ls "$prefix"/share/doc/pmon-sandboxd)"
mkdir -p "$t/ws"
"$p" sandboxd -q --listen-host 127.0.0.1 --grpc-port 0 --rest-port 0 --root-dir "$t/ws" 2> "$t/sbx.err" &
sbx_pid=$!
record_pid "$sbx_pid"
for _ in $(seq 200); do grep -q 'REST API' "$t/sbx.err" 2> /dev/null && break; kill -0 "$sbx_pid" 2> /dev/null || break; sleep 0.05; done
kill -0 "$sbx_pid" 2> /dev/null || fail "pmon sandboxd from the tarballs did not start: $(cat "$t/sbx.err")"
kill -TERM "$sbx_pid"
wait "$sbx_pid" || fail "pmon sandboxd from the tarballs exited $? on SIGTERM: $(cat "$t/sbx.err")"
echo "ok: pmon sandboxd from its tarball, over pmon's: its libraries beside it, it serves and stops"

mkdir -p "$t/arm"
tar -C "$t/arm" --strip-components=1 -xzf "$arm"
file -b "$t/arm/bin/pmon" | grep -q 'ARM aarch64.*statically linked.*stripped' || fail "the aarch64 bin/pmon: $(file -b "$t/arm/bin/pmon")"
file -b "$t/arm/libexec/pmon/pmon-systemd" | grep -q 'ARM aarch64' || fail "the aarch64 pmon-systemd: $(file -b "$t/arm/libexec/pmon/pmon-systemd")"
if command -v qemu-aarch64-static > /dev/null; then
  [ "$(qemu-aarch64-static "$t/arm/bin/pmon" --version)" = "pmon $version" ] || fail "the aarch64 pmon says $(qemu-aarch64-static "$t/arm/bin/pmon" --version)"
fi
echo "ok: the aarch64 tarball: a stripped static aarch64 pmon $version and its helper"
pass
