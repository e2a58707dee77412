"""The jouleprof package's own PEP 517 build backend: no setuptools, no wheel, nothing to download.

`pip install ./python` works with whatever Python runs it (a pyenv one included), offline, with or
without build isolation: the backend needs only the standard library. It builds the extension with
the project's CMake (the C++ library is compiled into it; pybind11 from Debian's pybind11-dev, else
from an importable `pybind11`) and writes the wheel itself.

Environment: JOULEPROF_CMAKE_ARGS adds CMake arguments, CMAKE_BUILD_PARALLEL_LEVEL sets the build's
parallelism, JOULEPROF_BUILD_DIR keeps the CMake build folder (default: python/build/cmake-<python>)
so that a second install is incremental; one that is already a configured build tree (it has a
CMakeCache.txt, e.g. build/ci) is built as it is configured, and its module must be for this Python.
Progress ("[57/158] ...") goes to the terminal (/dev/tty) while pip hides the build's output.
"""
import base64
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NAME, VERSION = "jouleprof", "0.1.0"
SUMMARY = "Energy of AI inference on GPUs, measured in process (binding of the jouleprof C++ library)"


class BuildError(SystemExit):
    """One line on stderr, `jouleprof: error: ...`, and a failed build."""

    def __init__(self, message):
        sys.stderr.write(f"jouleprof: error: {message}\n")
        super().__init__(1)


def _tty():
    try:
        return open("/dev/tty", "w", buffering=1)  # noqa: SIM115 (kept for the build's length)
    except OSError:
        return None


def _run(cmd, what, tty):
    """Runs a build step, its output to stderr (pip -v shows it); ninja's [n/N] also to the terminal."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    tail = []
    step = re.compile(r"^\[(\d+)/(\d+)\]")
    for line in proc.stdout:
        sys.stderr.write(line)
        tail = (tail + [line.rstrip()])[-20:]
        m = step.match(line)
        if tty and m:
            tty.write(f"\rjouleprof: {what} [{m.group(1)}/{m.group(2)}]   ")
    if proc.wait() != 0:
        if tty:
            tty.write("\n")
        detail = next((t for t in reversed(tail) if "error" in t.lower()), tail[-1] if tail else "")
        raise BuildError(f"{what} failed ({' '.join(cmd[:2])} ...): {detail.strip()[:300]}")
    if tty:
        tty.write("\n")


def _pybind11_args():
    """Debian's pybind11-dev is found by CMake itself; else an importable pybind11's CMake folder."""
    for d in ("/usr/lib/cmake/pybind11", "/usr/share/cmake/pybind11", "/usr/local/lib/cmake/pybind11"):
        if (Path(d) / "pybind11Config.cmake").exists():
            return []
    try:
        import pybind11  # noqa: PLC0415
    except ImportError:
        raise BuildError("the build needs pybind11: apt-get install pybind11-dev (scripts/install-deps.sh), "
                         f"or {sys.executable} -m pip install pybind11") from None
    return [f"-Dpybind11_DIR={pybind11.get_cmake_dir()}"]


def _build_module():
    if not (ROOT / "CMakeLists.txt").exists() or not (ROOT / "include" / "jouleprof").is_dir():
        raise BuildError("the Python package is built from the jouleprof source tree: pip install ./python "
                         "from the repository root")
    if shutil.which("cmake") is None:
        raise BuildError("cmake is needed to build the package (apt-get install cmake; scripts/install-deps.sh)")
    if not Path(sysconfig.get_paths()["include"], "Python.h").exists():
        raise BuildError(f"this Python ({sys.executable}) has no C headers (Python.h): install its -dev package "
                         "(Debian: python3-dev)")
    tty = _tty()
    given = os.environ.get("JOULEPROF_BUILD_DIR")
    tag = f"{sys.implementation.cache_tag}-{hashlib.sha1(sys.executable.encode()).hexdigest()[:8]}"  # stable across runs
    build = Path(given).resolve() if given else HERE / "build" / f"cmake-{tag}"
    if not (given and (build / "CMakeCache.txt").exists()):
        build.mkdir(parents=True, exist_ok=True)
        args = ["-DCMAKE_BUILD_TYPE=Release", f"-DPython3_EXECUTABLE={sys.executable}",
                "-DJOULEPROF_BUILD_TESTS=OFF", "-DJOULEPROF_BUILD_BENCH=OFF", "-DJOULEPROF_WITH_CUDA=OFF",
                "-DJOULEPROF_INSTALL=OFF", *_pybind11_args()]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        args += shlex.split(os.environ.get("JOULEPROF_CMAKE_ARGS", ""))
        if tty:
            tty.write(f"jouleprof: configuring the C++ build for {sys.executable} in {build}\n")
        _run(["cmake", "-S", str(ROOT), "-B", str(build), *args], "configuring", tty)
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    if tty:
        tty.write("jouleprof: building the C++ library and the Python module (a few minutes the first time)\n")
    _run(["cmake", "--build", str(build), "--target", "jouleprof_python", "-j", jobs], "building", tty)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    built = build / "python" / "jouleprof" / f"_jouleprof{suffix}"
    if not built.exists():
        have = ", ".join(p.name for p in (build / "python" / "jouleprof").glob("_jouleprof*")) or "none"
        raise BuildError(f"{build} holds no module for this Python ({sys.executable}: _jouleprof{suffix}; there: {have}); "
                         "use a build folder of its own (unset JOULEPROF_BUILD_DIR)")
    return built


def _tag():
    impl = sys.implementation.name
    py = {"cpython": "cp"}.get(impl, impl[:2]) + f"{sys.version_info.major}{sys.version_info.minor}"
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{py}-{py}-{plat}"


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _metadata():
    readme = (HERE / "README.md").read_text(encoding="utf-8")
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\nSummary: {SUMMARY}\n"
            "Requires-Python: >=3.9\nProvides-Extra: pandas\nRequires-Dist: pandas; extra == \"pandas\"\n"
            f"Description-Content-Type: text/markdown\n\n{readme}")


def _dist_info(directory):
    info = Path(directory) / f"{NAME}-{VERSION}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(_metadata(), encoding="utf-8")
    return info.name


# --- PEP 517 hooks ----------------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _dist_info(metadata_directory)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    module = _build_module()
    tag = _tag()
    wheel = Path(wheel_directory) / f"{NAME}-{VERSION}-{tag}.whl"
    info = f"{NAME}-{VERSION}.dist-info"
    files = [(f"jouleprof/{p.name}", p.read_bytes()) for p in sorted((HERE / "jouleprof").glob("*.py"))]
    files.append((f"jouleprof/{module.name}", module.read_bytes()))
    files.append((f"{info}/METADATA", _metadata().encode()))
    files.append((f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: jouleprof_build\nRoot-Is-Purelib: false\nTag: {tag}\n".encode()))
    record = [_record_line(a, d) for a, d in files] + [f"{info}/RECORD,,"]
    files.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for arcname, data in files:
            zi = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = (0o755 if arcname.endswith(".so") else 0o644) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return wheel.name


def build_sdist(sdist_directory, config_settings=None):
    raise BuildError("no source distribution: the package is built from the jouleprof repository (pip install ./python)")
