#!/usr/bin/env bash
# Installs the pmon Python package offline into PYTHON's site-packages
# (default: Debian's /usr/bin/python3; pass a virtualenv's bin/python to
# install into that virtualenv). Builds libpmon and the extension with CMake
# in build-python-<version>/ for exactly that interpreter first.
#   python/install.sh                     system python3 (as root: dist-packages)
#   python/install.sh ~/venv/bin/python   a virtualenv made from it
set -euo pipefail
cd "$(dirname "$0")/.."
py=${1:-/usr/bin/python3}
ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
dir=build-python-$ver
cmake -S . -B "$dir" -DPMON_PYTHON="$(command -v "$py")" -DBUILD_TESTING=OFF >/dev/null
cmake --build "$dir" -j"$(nproc)" --target pmon_python pmon
dest=$("$py" -c 'import sys, sysconfig
# Debian patches the system python to install into dist-packages.
if sys.prefix == sys.base_prefix and sys.prefix == "/usr":
    print("/usr/local/lib/python%d.%d/dist-packages" % sys.version_info[:2])
else:
    print(sysconfig.get_path("platlib"))')
mkdir -p "$dest/pmon"
mkdir -p "$dest/pmon/libexec"
cp "$dir"/python/pmon/*.py "$dir"/python/pmon/_pmon*.so "$dest/pmon/"
cp "$dir"/python/pmon/libexec/pmon "$dest/pmon/libexec/pmon"
"$py" -c 'import pmon, sys; r = pmon.run(["true"]); print("pmon installed for", sys.executable, "in", pmon.__path__[0], "- confinement", r.confinement)'
