# SPDX-License-Identifier: Apache-2.0
# The Python wheel as a user gets it (label artifact: CI runs it on the
# wheel of scripts/release.sh, PMON_DIST=dist; without PMON_DIST it is built
# here with python3 -m build): at most 5 MB, tagged manylinux for the glibc
# its module needs, the module and pmon stripped; pip installs it offline
# into a fresh virtualenv, whose `pmon` command runs, and the Python suite
# passes against the installed package.
. "$(dirname "$0")/common.inc"

src=$(cd "$(dirname "$0")/../.." && pwd)
py=/usr/bin/python3
[ -x "$py" ] || skip "no Debian python3"
"$py" -c 'import build, wheel, pytest' 2> /dev/null || skip "python3-build, python3-wheel or python3-pytest is not installed"

dist=${PMON_DIST:-}
if [ -z "$dist" ]; then
  dist=$t/dist
  args=""
  command -v ccache > /dev/null && args="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache"
  PMON_CMAKE_ARGS=$args "$py" -m build --wheel --no-isolation --outdir "$dist" "$src/python" > "$t/build.log" 2>&1 ||
    fail "python3 -m build --wheel failed: $(tail -20 "$t/build.log")"
  rm -rf "$src/python/build" "$src"/python/*.egg-info
fi
whl=$(ls "$dist"/pmon_runtime-*.whl)
size=$(stat -c %s "$whl")
echo "wheel: $(basename "$whl"), $size bytes"
[ "$size" -le $((5 * 1024 * 1024)) ] || fail "the wheel is $size bytes, over 5 MB"
pyver=$("$py" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
case $(basename "$whl") in
  *-"$pyver-$pyver"-manylinux_2_[0-9]*_"$(uname -m)".whl) ;;
  *) fail "the wheel's tags are not $pyver-$pyver-manylinux_2_N_$(uname -m): $(basename "$whl")" ;;
esac
# The tag's glibc is the newest one the module asks for, and the module
# needs no libstdc++ of the system.
mkdir "$t/unzip"
(cd "$t/unzip" && "$py" -m zipfile -e "$whl" .)
so=$(ls "$t"/unzip/pmon/_pmon*.so)
need=$(objdump -T "$so" | grep -o 'GLIBC_2\.[0-9]*' | sort -t. -k2 -n | tail -1)
tag=$(basename "$whl" | sed -E 's/.*manylinux_2_([0-9]+)_.*/\1/')
[ "$need" = "GLIBC_2.$tag" ] || fail "the tag says glibc 2.$tag, the module needs $need"
! objdump -p "$so" | grep -q 'NEEDED.*libstdc++' || fail "the module links the system's libstdc++"
for f in "$so" "$t/unzip/pmon/libexec/pmon"; do
  ! readelf -S "$f" | grep -q '\.debug_info' || fail "$(basename "$f") in the wheel is not stripped"
done
echo "ok: tagged manylinux_2_$tag (the module needs $need and no libstdc++); stripped"

"$py" -m venv --system-site-packages "$t/venv" || skip "python3 -m venv failed (python3-venv is not installed)"
"$t/venv/bin/pip" install --no-index "$whl" > "$t/pip.log" 2>&1 || fail "pip install of the wheel failed: $(tail -20 "$t/pip.log")"
cd "$t"
unset PYTHONPATH PMON_BINARY
pkg=$("$t/venv/bin/python" -c 'import os, pmon; print(os.path.dirname(pmon.__file__))')
case $pkg in "$t/venv/"*) ;; *) fail "pmon imports from $pkg, not from the virtualenv" ;; esac
want=$("$t/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("pmon-runtime"))')
[ "$("$t/venv/bin/pmon" --version)" = "pmon $want" ] || fail "venv/bin/pmon --version: $("$t/venv/bin/pmon" --version), want pmon $want"
rc=0; out=$("$t/venv/bin/pmon" run -q -- sh -c 'echo from-the-wheel; exit 3') || rc=$?
[ "$rc" = 3 ] && [ "$out" = from-the-wheel ] || fail "venv/bin/pmon run: exit $rc, output '$out'"
echo "ok: pip installed pmon-runtime $want; its pmon command runs"

# PYTHONPATH: the installed package for the programs the suite runs with
# Debian's /usr/bin/python3 by their #! line (examples/agent_shell.py).
site=$("$t/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
PYTHONPATH=$site "$t/venv/bin/python" -m pytest -q -p no:cacheprovider "$src/python/tests" > "$t/pytest.log" 2>&1 ||
  fail "the Python suite failed against the installed wheel: $(tail -30 "$t/pytest.log")"
echo "ok: the Python suite passed against the installed wheel: $(tail -1 "$t/pytest.log")"
pass
