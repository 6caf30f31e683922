#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds pmon's release artifacts into dist/ (or --out DIR):
#   pmon-VERSION-x86_64-linux.tar.gz, pmon-VERSION-aarch64-linux.tar.gz
#       bin/pmon (static, stripped), bin/pmon-shell (a link to it), libexec/pmon/pmon-systemd (the helper,
#       stripped), share/man/man1/*.1.gz, LICENSE, README.md
#   pmon-VERSION-x86_64-linux-sandboxd.tar.gz, pmon-VERSION-aarch64-linux-sandboxd.tar.gz
#       what 'pmon sandboxd' runs, to unpack over the same directory as the
#       tarball of the same architecture: libexec/pmon/pmon-sandboxd
#       (stripped), libexec/pmon/lib/ (the shared libraries it needs, all but
#       the C library's own) and share/doc/pmon-sandboxd/ (their copyright
#       files)
#   pmon_VERSION_amd64.deb           the Debian package (cpack)
#   pmon-runtime-VERSION.tgz, pmon-runtime-linux-x64-VERSION.tgz,
#   pmon-runtime-linux-arm64-VERSION.tgz   the npm packages (npm pack)
#   pmon_runtime-VERSION-cp3XX-cp3XX-manylinux_2_NN_x86_64.whl   the wheel
#   SHA256SUMS                       of all of them
# VERSION comes from git describe (cmake/pmon_version.cmake); every file's
# time is the commit's (SOURCE_DATE_EPOCH), so the tarballs of one commit are
# the same bytes wherever they are built.
#
#   scripts/release.sh [--out DIR] [--build DIR] [--check-reproducible]
#
# --build DIR   the x86_64 build to take pmon from (default build-release/,
#               configured here); CI passes the build its tests ran on
#               (scripts/test.sh compiles it the way this script does).
# --check-reproducible   builds pmon and its helper once more, in another
#               directory with every object compiled afresh, and checks
#               that the x86_64 tarball made from it is byte for byte the
#               same.
# The aarch64 pmon and pmon-sandboxd are cross-built (g++-aarch64-linux-gnu,
# Debian's arm64 development packages, in build-aarch64/) and pmon is checked
# under qemu-aarch64-static: its unit tests and a pmon run that leaves a
# setsid daemon; what the emulator cannot run is listed.
# Each part prints its time; the artifacts' sizes are printed at the end.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

out=dist
build=""
check_repro=0
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --check-reproducible) check_repro=1; shift ;;
    -h|--help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "release.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
case $out in /*) ;; *) out=$repo/$out ;; esac

die() { echo "release.sh: $*" >&2; exit 1; }
for tool in cmake aarch64-linux-gnu-g++ qemu-aarch64-static help2man npm; do
  command -v "$tool" >/dev/null || die "$tool is missing (scripts/deps.sh installs it)"
done
/usr/bin/python3 -c 'import build, wheel' 2>/dev/null || die "python3-build / python3-wheel are missing (scripts/deps.sh installs them)"

# Times of the parts, printed as they end.
t0=$(date +%s)
stamp() { # $1: what ended, $2: its start (epoch seconds)
  echo "release: $1 took $(( $(date +%s) - $2 )) s"
}

version=$(cmake -DSOURCE_DIR="$repo" -DFALLBACK="$(sed -n 's/^project(pmon VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)" \
  -DPRINT=ON -P cmake/pmon_version.cmake)
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
echo "release: pmon $version (SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH)"

# ccache, when installed, keyed by what is compiled and not by where (as
# scripts/test.sh builds build/): ccache hands the compiler paths relative to
# the build directory, so that the programs do not depend on where it is. The
# reproducibility check builds the same way, in another directory, with every
# object compiled afresh (CCACHE_RECACHE), or without ccache when there is none.
launcher=()
if command -v ccache >/dev/null && [ "${CCACHE_DISABLE:-}" != 1 ]; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$repo CCACHE_NOHASHDIR=1
fi
release_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DPMON_BENCH=OFF -DPMON_PYTHON_BINDING=OFF)

rm -rf "$out"
mkdir -p "$out"
work=$out/.work
mkdir -p "$work"

# The aarch64 build runs beside the x86_64 work: pmon, its helper,
# pmon-sandboxd and the unit tests only; then the checks under the emulator.
aarch64() {
  local s; s=$(date +%s)
  local b=$repo/build-aarch64
  # Without -g: the program is stripped anyway, and the cross build is the
  # longest part of the release.
  cmake -S . -B "$b" -DCMAKE_TOOLCHAIN_FILE="$repo/cmake/toolchains/aarch64-linux-gnu.cmake" \
    "${release_flags[@]}" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" "${launcher[@]}" >/dev/null
  nice cmake --build "$b" -j"$(nproc)" --target pmon pmon-systemd pmon-sandboxd pmon_unit_tests >/dev/null ||
    die "cannot cross-build pmon, its helper, pmon-sandboxd and the unit tests in $b (pmon-sandboxd needs the arm64 development files of gRPC, protobuf and cpp-httplib: scripts/deps.sh)"
  stamp "aarch64 cross build" "$s"
  s=$(date +%s)
  scripts/qemu-aarch64-check.sh "$b"
  stamp "aarch64 checks under qemu-aarch64-static" "$s"
}
# In a process group of its own (set -m), so that leaving early (a failure)
# ends the aarch64 build and whatever it runs, by that group.
set -m
aarch64 > "$work/aarch64.log" 2>&1 &
aarch64_pid=$!
set +m
trap '[ -z "${aarch64_pid:-}" ] || kill -- -"$aarch64_pid" 2>/dev/null || true' EXIT

# The x86_64 build.
s=$(date +%s)
if [ -z "$build" ]; then
  build=$repo/build-release
  cmake -S . -B "$build" "${release_flags[@]}" -DBUILD_TESTING=OFF "${launcher[@]}" >/dev/null
fi
case $build in /*) ;; *) build=$repo/$build ;; esac
nice cmake --build "$build" -j"$(nproc)" --target pmon pmon-systemd pmon-sandboxd >/dev/null ||
  die "cannot build pmon, its helper and pmon-sandboxd in $build (pmon-sandboxd needs gRPC's, protobuf's and cpp-httplib's development files: scripts/deps.sh)"
stamp "x86_64 build" "$s"
[ "$("$build/pmon" --version)" = "pmon $version" ] ||
  die "$build/pmon says '$("$build/pmon" --version)', want 'pmon $version' (a stale build? build it again)"

# Man pages, made once (from the x86_64 pmon: they are the same for every
# architecture), dated SOURCE_DATE_EPOCH.
man=$work/man
cmake -DPMON="$build/pmon" -DHELP2MAN="$(command -v help2man)" -DGZIP="$(command -v gzip)" \
  -DVERSION_FILE="$build/pmon_version.txt" -DOUT_DIR="$man" -DPAGE_DIR="$repo/man" \
  -P cmake/pmon_man.cmake
rm -f "$man/stamp"

# A tarball, the same bytes for the same inputs: sorted names, the commit's
# time, owner root, no atime/ctime, gzip without name and time.
tarball() { # $1: arch, $2: pmon, $3: pmon-systemd, $4: tarball path
  local name=pmon-$version-$1-linux d=$work/stage-$1
  rm -rf "$d"; mkdir -p "$d/$name/bin" "$d/$name/libexec/pmon" "$d/$name/share/man/man1"
  cp "$2" "$d/$name/bin/pmon"
  ln -s pmon "$d/$name/bin/pmon-shell"  # pmon-shell LINE: 'pmon shell LINE'
  cp "$3" "$d/$name/libexec/pmon/pmon-systemd"
  cp "$man"/*.1.gz "$d/$name/share/man/man1/"
  cp LICENSE "$d/$name/LICENSE"
  cp packaging/README.tarball.md "$d/$name/README.md"
  chmod 755 "$d/$name/bin/pmon" "$d/$name/libexec/pmon/pmon-systemd"
  chmod 644 "$d/$name/LICENSE" "$d/$name/README.md" "$d/$name"/share/man/man1/*
  pack "$d" "$name" "$4"
}

# pack STAGE NAME OUT: STAGE/NAME as a tarball, the same bytes for the same
# files.
pack() {
  find "$1" -type d -exec chmod 755 {} +
  find "$1" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  tar -C "$1" --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime --format=posix \
    -cf - "$2" | gzip -9n > "$3"
}

# The C library's own shared libraries (libc, libm, the loader...): any
# system with a C library as new as the build machine's has them, so they
# are not shipped.
libc_own() { # $1: soname
  case $1 in
    ld-linux*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|libutil.so.*|libanl.so.*) return 0 ;;
  esac
  return 1
}

# Lists of the shared libraries a program loads, one "soname path" a line.
# libs_ldd PROGRAM: a program of this machine, as its loader finds them.
libs_ldd() {
  ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
}
# libs_needed PROGRAM DIR...: a program of another architecture, which cannot
# be run here: its DT_NEEDED entries and theirs in turn, each the first file
# of that name in DIRs (the target's library directories, searched as its
# loader would search them); the C library's own are listed without being
# followed (they need only each other).
libs_needed() {
  local prog=$1 soname dir f path; shift
  local -a todo=("$prog") dirs=("$@")
  local -A seen=()
  while [ ${#todo[@]} -gt 0 ]; do
    f=${todo[0]}; todo=("${todo[@]:1}")
    for soname in $(LC_ALL=C readelf -d "$f" | sed -n 's/^.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
      [ -z "${seen[$soname]:-}" ] || continue
      seen[$soname]=1
      path=""
      for dir in "${dirs[@]}"; do
        [ -e "$dir/$soname" ] && { path=$dir/$soname; break; }
      done
      [ -n "$path" ] || die "$soname, which $f needs, is in none of ${dirs[*]}"
      echo "$soname $path"
      libc_own "$soname" || todo+=("$path")
    done
  done
}

# pmon-sandboxd's tarball: the program, and beside it in lib/ every shared
# library it loads except the C library's own, as the lister given after the
# tarball's path lists them (libs_ldd, or libs_needed and its directories:
# called with the program's path first). Named by their
# sonames, so its search path (lib/ next to it, then the system's) finds
# them. Their packages' copyright files go with them.
sandboxd_tarball() { # $1: arch, $2: pmon-sandboxd, $3: tarball path, $4: the lister, $5...: its arguments
  local name=pmon-$version-$1-linux d=$work/stage-sandboxd-$1 soname path pkg n=0
  rm -rf "$d"; mkdir -p "$d/$name/libexec/pmon/lib" "$d/$name/share/doc/pmon-sandboxd"
  cp "$2" "$d/$name/libexec/pmon/pmon-sandboxd"
  chmod 755 "$d/$name/libexec/pmon/pmon-sandboxd"
  while read -r soname path; do
    ! libc_own "$soname" || continue
    cp -L "$path" "$d/$name/libexec/pmon/lib/$soname"
    chmod 644 "$d/$name/libexec/pmon/lib/$soname"
    # (the package names the file as it was packaged: /lib or /usr/lib, the
    # soname's link or the file; for another architecture, its package of
    # that architecture)
    pkg=$(for p in "$path" "/usr$path" "$(readlink -f "$path")" "/usr$(readlink -f "$path")"; do
            dpkg -S "$p" 2> /dev/null || true; done | head -1 | cut -d: -f1)
    [ -n "$pkg" ] || die "no Debian package owns $path (its copyright cannot go with it)"
    [ -f "/usr/share/doc/$pkg/copyright" ] || die "no copyright file for $path ($pkg)"
    cp "/usr/share/doc/$pkg/copyright" "$d/$name/share/doc/pmon-sandboxd/$pkg.copyright"
    n=$((n + 1))
  done < <("$4" "$2" "${@:5}")
  [ $n -gt 0 ] || die "no library of $2 was listed"
  cp LICENSE "$d/$name/share/doc/pmon-sandboxd/LICENSE"
  chmod 644 "$d/$name"/share/doc/pmon-sandboxd/*
  pack "$d" "$name" "$3"
}

strip_to() { # $1: strip program, $2: input, $3: output
  "$1" --strip-all -o "$3" "$2"
}

s=$(date +%s)
mkdir -p "$work/x86_64" "$work/aarch64"
strip_to strip "$build/pmon" "$work/x86_64/pmon"
strip_to strip "$build/pmon-systemd" "$work/x86_64/pmon-systemd"
strip_to strip "$build/pmon-sandboxd" "$work/x86_64/pmon-sandboxd"
tarball x86_64 "$work/x86_64/pmon" "$work/x86_64/pmon-systemd" "$out/pmon-$version-x86_64-linux.tar.gz"
sandboxd_tarball x86_64 "$work/x86_64/pmon-sandboxd" "$out/pmon-$version-x86_64-linux-sandboxd.tar.gz" libs_ldd
stamp "x86_64 tarball" "$s"

# The Debian package, from the x86_64 build (cpack strips it).
s=$(date +%s)
(cd "$build" && cpack -G DEB -B "$work/deb") > "$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; die "cpack failed"; }
cp "$work"/deb/pmon_*.deb "$out/"
stamp "Debian package" "$s"

# The wheel: the Python package built by setup.py (its own CMake build,
# build-python-X.Y, which the test suite's pip_install scenario shares).
s=$(date +%s)
PMON_CMAKE_ARGS="${launcher[*]}" /usr/bin/python3 -m build --wheel --no-isolation --outdir "$out" python \
  > "$work/wheel.log" 2>&1 || { tail -30 "$work/wheel.log"; die "the wheel failed to build"; }
rm -rf python/build python/*.egg-info
stamp "wheel" "$s"

# The reproducibility check: pmon and its helper built again elsewhere,
# without ccache, must make the same tarball.
if [ $check_repro = 1 ]; then
  s=$(date +%s)
  rb=$repo/build-repro
  rm -rf "$rb"
  cmake -S . -B "$rb" "${release_flags[@]}" -DBUILD_TESTING=OFF "${launcher[@]}" >/dev/null
  CCACHE_RECACHE=1 nice cmake --build "$rb" -j"$(nproc)" --target pmon pmon-systemd pmon-sandboxd >/dev/null
  strip_to strip "$rb/pmon" "$work/pmon-x86_64-again"
  strip_to strip "$rb/pmon-systemd" "$work/pmon-systemd-x86_64-again"
  strip_to strip "$rb/pmon-sandboxd" "$work/pmon-sandboxd-x86_64-again"
  tarball x86_64 "$work/pmon-x86_64-again" "$work/pmon-systemd-x86_64-again" "$work/again.tar.gz"
  sandboxd_tarball x86_64 "$work/pmon-sandboxd-x86_64-again" "$work/again-sandboxd.tar.gz" libs_ldd
  if cmp "$out/pmon-$version-x86_64-linux.tar.gz" "$work/again.tar.gz" &&
     cmp "$out/pmon-$version-x86_64-linux-sandboxd.tar.gz" "$work/again-sandboxd.tar.gz"; then
    echo "release: reproducible: a second build of pmon (build-repro/, every object compiled afresh) made the same tarballs, sha256 $(cat "$work/again.tar.gz" "$work/again-sandboxd.tar.gz" | sha256sum | cut -c1-16)..."
  else
    cmp -l "$work/x86_64/pmon" "$work/pmon-x86_64-again" | head -5 || true
    cmp -l "$work/x86_64/pmon-sandboxd" "$work/pmon-sandboxd-x86_64-again" | head -5 || true
    die "not reproducible: the second build's x86_64 tarballs differ"
  fi
  rm -rf "$rb"
  stamp "reproducibility check" "$s"
fi

# The aarch64 pmon, once its build and checks are done.
rc=0; wait "$aarch64_pid" || rc=$?
aarch64_pid=""
sed 's/^/  aarch64: /' "$work/aarch64.log"
[ $rc = 0 ] || die "the aarch64 build or its checks failed"
strip_to aarch64-linux-gnu-strip "$repo/build-aarch64/pmon" "$work/aarch64/pmon"
strip_to aarch64-linux-gnu-strip "$repo/build-aarch64/pmon-systemd" "$work/aarch64/pmon-systemd"
strip_to aarch64-linux-gnu-strip "$repo/build-aarch64/pmon-sandboxd" "$work/aarch64/pmon-sandboxd"
tarball aarch64 "$work/aarch64/pmon" "$work/aarch64/pmon-systemd" "$out/pmon-$version-aarch64-linux.tar.gz"
# (its libraries: Debian's arm64 packages, where the arm64 loader looks)
sandboxd_tarball aarch64 "$work/aarch64/pmon-sandboxd" "$out/pmon-$version-aarch64-linux-sandboxd.tar.gz" \
  libs_needed /lib/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu

# The npm packages: the main one and one per platform (scripts/npm-pack.sh).
s=$(date +%s)
scripts/npm-pack.sh "$version" "$out" "$work/x86_64" "$work/aarch64"
stamp "npm packages" "$s"

rm -rf "$work"
(cd "$out" && sha256sum -- * > SHA256SUMS)
echo "release: artifacts in ${out#"$repo"/}/ (sizes in bytes):"
(cd "$out" && for f in *; do printf '  %10d  %s\n' "$(stat -c %s "$f")" "$f"; done)
for a in x86_64 aarch64; do
  printf '  stripped static pmon for %s: %d bytes\n' "$a" \
    "$(tar -xzOf "$out/pmon-$version-$a-linux.tar.gz" "pmon-$version-$a-linux/bin/pmon" | wc -c)"
done
stamp "release" "$t0"
