#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the pmon Python package offline into PYTHON's site-packages
# (default: Debian's /usr/bin/python3; pass a virtualenv's bin/python to
# install into that virtualenv).
#   python/install.sh                     system python3 (as root: dist-packages)
#   python/install.sh ~/venv/bin/python   a virtualenv made from it
# The extension must be built for exactly that interpreter's ABI. A build
# that already has it (build/ from scripts/test.sh, or PMON_BUILD_DIR) is
# brought up to date and reused; otherwise only the module and the pmon
# executable it needs are built, in build-python-<version>/.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${1:-/usr/bin/python3}
ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
suffix=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')

# A plain (not sanitized) build whose module has this interpreter's suffix.
usable() {
  [ -f "$1/CMakeCache.txt" ] && [ -f "$1/python/pmon/_pmon$suffix" ] &&
    ! grep -q '^PMON_SANITIZE:BOOL=ON$' "$1/CMakeCache.txt"
}
dir=""
for cand in ${PMON_BUILD_DIR:-} build "build-python-$ver"; do
  if usable "$cand"; then dir=$cand; break; fi
done
if [ -z "$dir" ]; then
  dir=build-python-$ver
  launcher=()
  if command -v ccache >/dev/null; then
    export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S . -B "$dir" -DPMON_PYTHON="$(command -v "$py")" -DBUILD_TESTING=OFF "${launcher[@]}" >/dev/null
fi
echo "building the module in $dir/"
cmake --build "$dir" -j"$(nproc)" --target pmon_python
dest=$("$py" -c 'import sys, sysconfig
# Debian patches the system python to install into dist-packages.
if sys.prefix == sys.base_prefix and sys.prefix == "/usr":
    print("/usr/local/lib/python%d.%d/dist-packages" % sys.version_info[:2])
else:
    print(sysconfig.get_path("platlib"))')
mkdir -p "$dest/pmon"
mkdir -p "$dest/pmon/libexec"
cp "$dir"/python/pmon/*.py "$dir/python/pmon/_pmon$suffix" "$dest/pmon/"
cp "$dir"/python/pmon/libexec/pmon "$dest/pmon/libexec/pmon"
# The build's copies carry their debug info (tens of MB); the installed ones need none.
strip --strip-unneeded "$dest/pmon/_pmon$suffix" 2>/dev/null || true
strip --strip-all "$dest/pmon/libexec/pmon" 2>/dev/null || true
"$py" -c 'import pmon, sys; r = pmon.run(["true"]); print("pmon installed for", sys.executable, "in", pmon.__path__[0], "- confinement", r.confinement)'
