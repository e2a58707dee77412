"""Builds the extension module with the project's CMake (the C++ library is compiled into it).

Everything else is in pyproject.toml. Environment: JOULEPROF_CMAKE_ARGS adds CMake arguments,
CMAKE_BUILD_PARALLEL_LEVEL sets the build's parallelism, JOULEPROF_BUILD_DIR keeps the CMake build
folder (default: pip's temporary build folder) so that a second install is incremental.
"""
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
        build = Path(os.environ.get("JOULEPROF_BUILD_DIR") or Path(self.build_temp) / "cmake").resolve()
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
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
        subprocess.run(["cmake", "--build", str(build), "--target", "jouleprof_python", "-j", jobs], check=True)
        built = next((build / "python" / "jouleprof").glob("_jouleprof*.so"))
        dest = Path(self.get_ext_fullpath(ext.name))
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, dest)


setup(ext_modules=[CMakeExtension("jouleprof._jouleprof")], cmdclass={"build_ext": CMakeBuild})
