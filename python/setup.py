# The pmon Python package, built as python/install.sh builds it, in the same
# directory (build-python-<X.Y> at the top of the repository): CMake
# configures the whole repository for this interpreter (PMON_PYTHON) and
# builds the pmon_python and pmon targets; the extension (_pmon*.so) and the
# pmon executable (pmon/libexec/pmon, the pidns backend's namespace init)
# go into the package. PMON_CMAKE_ARGS adds arguments to the configure step
# (e.g. -DCMAKE_CXX_COMPILER_LAUNCHER=ccache).
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(pmon VERSION ([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("no project(pmon VERSION ...) in CMakeLists.txt")
    return m.group(1)


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
        libexec = os.path.join(os.path.dirname(dest), "libexec")
        os.makedirs(libexec, exist_ok=True)
        shutil.copy2(os.path.join(built, "libexec", "pmon"), os.path.join(libexec, "pmon"))


setup(
    version=project_version(),
    packages=["pmon"],
    ext_modules=[Extension("pmon._pmon", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
