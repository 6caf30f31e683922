# SPDX-License-Identifier: Apache-2.0
# pip install ./python works offline with Debian's setuptools: into a
# virtualenv with the system site packages, no index, no build isolation.
# It builds the same module python/install.sh builds (the same CMake build
# directory, build-python-<X.Y>), stripped, and the installed package runs
# a call, as does its pmon command.
. "$(dirname "$0")/common.inc"

src=$(cd "$(dirname "$0")/../.." && pwd)
py=/usr/bin/python3
[ -x "$py" ] || skip "no Debian python3"
"$py" -c 'import setuptools, wheel' 2> /dev/null || skip "python3-setuptools / python3-wheel are not installed"
"$py" -m venv --system-site-packages "$t/venv" || skip "python3 -m venv failed (python3-venv is not installed)"
# pip compiles libpmon, the module and pmon again in a build directory of
# its own: through ccache, keyed by what is compiled and not by where, the
# objects scripts/test.sh compiled in build/ serve (without ccache it is a
# whole build, some minutes).
args=""
if command -v ccache > /dev/null; then
  args="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache"
  export CCACHE_BASEDIR=$src CCACHE_NOHASHDIR=1
fi
PMON_CMAKE_ARGS=$args "$t/venv/bin/pip" install --no-build-isolation --no-index "$src/python" > "$t/pip.log" 2>&1 ||
  fail "pip install failed: $(tail -20 "$t/pip.log")"
ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
pkg=$("$t/venv/bin/python" -c 'import os, pmon; print(os.path.dirname(pmon.__file__))')
case $pkg in "$t/venv/"*) ;; *) fail "pmon imports from $pkg, not from the virtualenv" ;; esac
so=$(ls "$pkg"/_pmon*.so)
built=$(ls "$src/build-python-$ver"/python/pmon/_pmon*.so)
# The package holds the build's module, stripped of its debug info.
strip --strip-unneeded -o "$t/built.so" "$built"
cmp -s "$so" "$t/built.so" || fail "the installed $so is not the module built in build-python-$ver (stripped)"
[ -x "$pkg/libexec/pmon" ] || fail "no pmon/libexec/pmon in the package"
out=$("$t/venv/bin/python" -c 'import pmon; r = pmon.run(["sh", "-c", "exit 3"]); print(r.returncode, r.confinement)') ||
  fail "pmon.run from the installed package failed"
[ "${out%% *}" = 3 ] || fail "pmon.run returned '$out', want exit 3"
[ "$("$t/venv/bin/pmon" --version)" = "pmon $("$t/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("pmon-runtime"))')" ] ||
  fail "the pmon command of the package says '$("$t/venv/bin/pmon" --version)'"
echo "ok: pip installed pmon $("$t/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("pmon-runtime"))') ($out)"
pass
