"""Builds the extension module with the project's CMake (the C++ library is compiled into it).

Everything else is in pyproject.toml. Environment: JOULEPROF_CMAKE_ARGS adds CMake arguments,
CMAKE_BUILD_PARALLEL_LEVEL sets the build's parallelism, JOULEPROF_BUILD_DIR keeps the CMake build
folder (default: a folder under python/build/) so that a second install is incremental; one that
is already a configured build tree (it has a CMakeCache.txt, e.g. build/ci) is built as it is
configured, not reconfigured, and its module must then be for this Python.
"""
import sysconfig
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        if not (ROOT / "CMakeLists.txt").exists() or not (ROOT / "include" / "jouleprof").is_dir():
            sys.exit("jouleprof: the Python package is built from the jouleprof source tree: "
                     "pip install --no-build-isolation ./python from the repository root")
        if shutil.which("cmake") is None:
            sys.exit("jouleprof: cmake is needed (apt-get install cmake)")
        given = os.environ.get("JOULEPROF_BUILD_DIR")
        build = Path(given or Path(self.build_temp) / "cmake").resolve()
        if not (given and (build / "CMakeCache.txt").exists()):
            self.configure(build)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
        subprocess.run(["cmake", "--build", str(build), "--target", "jouleprof_python", "-j", jobs], check=True)
        # The module for this interpreter (a reused build tree may hold one for another Python).
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = build / "python" / "jouleprof" / f"_jouleprof{suffix}"
        if not built.exists():
            have = ", ".join(p.name for p in (build / "python" / "jouleprof").glob("_jouleprof*")) or "none"
            sys.exit(f"jouleprof: {build} holds no module for this Python ({sys.executable}: _jouleprof{suffix}; "
                     f"there: {have}); use a build folder of its own (JOULEPROF_BUILD_DIR)")
        dest = Path(self.get_ext_fullpath(ext.name))
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, dest)

    @staticmethod
    def configure(build):
        build.mkdir(parents=True, exist_ok=True)
        args = [
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython3_EXECUTABLE={sys.executable}",
            "-DJOULEPROF_BUILD_TESTS=OFF", "-DJOULEPROF_BUILD_BENCH=OFF", "-DJOULEPROF_WITH_CUDA=OFF",
            "-DJOULEPROF_INSTALL=OFF",
        ]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        args += shlex.split(os.environ.get("JOULEPROF_CMAKE_ARGS", ""))
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), *args], check=True)


setup(ext_modules=[CMakeExtension("jouleprof._jouleprof")], cmdclass={"build_ext": CMakeBuild})
