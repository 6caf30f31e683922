# SPDX-License-Identifier: Apache-2.0
# The pmon Python package (distribution pmon-runtime, module pmon), built as
# python/install.sh builds it, in the same directory (build-python-<X.Y> at
# the top of the repository): CMake configures the whole repository for this
# interpreter (PMON_PYTHON) and builds the pmon_python and pmon targets; the
# extension (_pmon*.so) and the pmon executable (pmon/libexec/pmon: the
# pidns backend's namespace init, and the `pmon` command) go into the
# package, stripped. PMON_CMAKE_ARGS adds arguments to the configure step
# (e.g. -DCMAKE_CXX_COMPILER_LAUNCHER=ccache).
#
# A wheel (python3 -m build --wheel --no-isolation python) is tagged for the
# oldest glibc its extension runs on: manylinux_2_N for the newest GLIBC_2.N
# symbol version the module needs (pmon itself is static; the module links
# the C++ runtime statically, so glibc is all it needs of the system).
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # no wheel package: pip install ./python still works
    bdist_wheel = None

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def project_version():
    # The version pmon --version prints: git describe, through the same
    # script the CMake build stamps it with.
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(pmon VERSION ([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("no project(pmon VERSION ...) in CMakeLists.txt")
    out = subprocess.check_output(
        ["cmake", "-DSOURCE_DIR=" + ROOT, "-DFALLBACK=" + m.group(1), "-DPRINT=ON",
         "-P", os.path.join(ROOT, "cmake", "pmon_version.cmake")], text=True)
    return out.strip()


def strip(path, *options):
    strip_prog = shutil.which("strip")
    if strip_prog:
        subprocess.check_call([strip_prog, *options, path])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.path.join(ROOT, "build-python-%d.%d" % sys.version_info[:2])
        # A virtualenv's interpreter is its base interpreter: build for that,
        # so that every virtualenv made from it shares one configuration.
        python = getattr(sys, "_base_executable", None) or sys.executable
        args = ["-S", ROOT, "-B", build_dir, "-DPMON_PYTHON=" + python, "-DBUILD_TESTING=OFF"]
        args += shlex.split(os.environ.get("PMON_CMAKE_ARGS", ""))
        subprocess.check_call(["cmake"] + args)
        jobs = str(os.cpu_count() or 1)
        subprocess.check_call(["cmake", "--build", build_dir, "-j" + jobs, "--target", "pmon_python", "pmon"])
        built = os.path.join(build_dir, "python", "pmon")
        module = [f for f in os.listdir(built) if f.startswith("_pmon") and f.endswith(".so")]
        if len(module) != 1:
            raise RuntimeError("want one _pmon*.so in %s, found %s" % (built, module))
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(os.path.join(built, module[0]), dest)
        strip(dest, "--strip-unneeded")
        libexec = os.path.join(os.path.dirname(dest), "libexec")
        os.makedirs(libexec, exist_ok=True)
        shutil.copy2(os.path.join(built, "libexec", "pmon"), os.path.join(libexec, "pmon"))
        strip(os.path.join(libexec, "pmon"), "--strip-all")


def glibc_needed(path):
    # The newest GLIBC_2.N symbol version the shared object asks for.
    out = subprocess.check_output(["objdump", "-T", path], text=True)
    if "GLIBCXX_" in out or "CXXABI_" in out:
        raise RuntimeError("%s needs the system's libstdc++: the wheel would not run everywhere its tag says" % path)
    versions = [int(m) for m in re.findall(r"GLIBC_2\.([0-9]+)", out)]
    return max(versions) if versions else 17


cmdclass = {"build_ext": CMakeBuild}
if bdist_wheel is not None:
    class Wheel(bdist_wheel):
        def get_tag(self):
            python, abi, plat = super().get_tag()
            if plat.startswith("linux_") and not self.plat_name_supplied:
                arch = plat[len("linux_"):]
                modules = []
                for d, _, files in os.walk(self.bdist_dir):
                    modules += [os.path.join(d, f) for f in files if f.startswith("_pmon") and f.endswith(".so")]
                if len(modules) != 1:
                    raise RuntimeError("want one _pmon*.so in the wheel, found %s" % modules)
                plat = "manylinux_2_%d_%s" % (glibc_needed(modules[0]), arch)
            return python, abi, plat

    cmdclass["bdist_wheel"] = Wheel


setup(
    version=project_version(),
    packages=["pmon"],
    ext_modules=[Extension("pmon._pmon", sources=[])],
    cmdclass=cmdclass,
    zip_safe=False,
)
