"""Builds the qtts package with a libqtts inside it (qtts/lib/libqtts.so), taken from, first match:

1. ``$QTTS_LIBRARY``: a built libqtts.so, copied as it is;
2. ``pkg-config qtts`` of this package's version: an installed libqtts (``cmake --install``);
3. CMake: libqtts built from the repository this folder belongs to, in ``$QTTS_CMAKE_BUILD_DIR`` (default
   ``python/build/cmake``; ccache is used when present). Needs the C build's dependencies (scripts/deps.sh).

The package calls the library through ctypes, so the wheel holds no Python extension: it is tagged
``py3-none-<platform>`` and works with any Python 3.8+. Offline (Debian's setuptools and wheel):
``pip install --no-build-isolation ./python`` or ``pip wheel --no-build-isolation ./python``.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py as _build_py

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
LIB_FILE = "libqtts.dylib" if sys.platform == "darwin" else "libqtts.so"


def log(msg: str) -> None:
    print(f"qtts: {msg}", file=sys.stderr, flush=True)


def package_version() -> str:
    """include/qtts.h's QTTS_VERSION (the one version number), or an sdist's PKG-INFO."""
    header = ROOT / "include" / "qtts.h"
    if header.exists():
        m = re.search(r'^#define QTTS_VERSION "([0-9.]+)"', header.read_text(), re.M)
        if m:
            return m.group(1)
    info = HERE / "PKG-INFO"
    if info.exists():
        m = re.search(r"^Version: (\S+)", info.read_text(), re.M)
        if m:
            return m.group(1)
    raise SystemExit("qtts: no include/qtts.h above python/ and no PKG-INFO: cannot tell the version")


def from_env() -> "Path | None":
    path = os.environ.get("QTTS_LIBRARY")
    if not path:
        return None
    p = Path(path)
    if not p.is_file():
        raise SystemExit(f"qtts: QTTS_LIBRARY={path} is not a file")
    log(f"using QTTS_LIBRARY={path}")
    return p


def from_pkg_config(version: str) -> "Path | None":
    def pkg(*args: str) -> "str | None":
        try:
            out = subprocess.run(["pkg-config", *args, "qtts"], capture_output=True, text=True)
        except OSError:
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    found = pkg("--modversion")
    if found is None:
        return None
    if found != version:
        log(f"pkg-config finds libqtts {found}, not {version}: building this tree's instead")
        return None
    libdir = pkg("--variable=libdir")
    p = Path(libdir or "") / LIB_FILE
    if not p.is_file():
        return None
    log(f"using the installed libqtts {found} ({p})")
    return p


def from_cmake() -> Path:
    if not (ROOT / "CMakeLists.txt").is_file():
        raise SystemExit("qtts: no libqtts: set QTTS_LIBRARY to a libqtts.so, install libqtts (pkg-config qtts), or "
                         "build from the qtts repository (python/ beside CMakeLists.txt)")
    build = Path(os.environ.get("QTTS_CMAKE_BUILD_DIR") or HERE / "build" / "cmake").resolve()
    configure = ["cmake", "-S", str(ROOT), "-B", str(build)]
    if not (build / "CMakeCache.txt").exists():  # a tree configured before keeps its settings
        configure.append("-DCMAKE_BUILD_TYPE=Release")
        if shutil.which("ccache"):
            configure.append("-DCMAKE_C_COMPILER_LAUNCHER=ccache")
    log(f"building libqtts with CMake in {build}")
    try:
        subprocess.run(configure, check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", str(build), "--target", "qtts_shared", "-j", str(os.cpu_count() or 2)],
                       check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"qtts: building libqtts failed ({e}); its dependencies: scripts/deps.sh") from None
    return build / LIB_FILE


class build_py(_build_py):
    """The Python files, then libqtts and the version into the package."""

    def run(self) -> None:
        super().run()
        version = package_version()
        lib = from_env() or from_pkg_config(version) or from_cmake()
        dest = Path(self.build_lib) / "qtts" / "lib"
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(lib.resolve(), dest / LIB_FILE)
        (Path(self.build_lib) / "qtts" / "_version.py").write_text(f'__version__ = "{version}"\n')


class BinaryDistribution(Distribution):
    """Installed as platform code (it carries a shared library), into platlib."""

    def has_ext_modules(self) -> bool:
        return True


cmdclass = {"build_py": build_py}
try:
    from wheel.bdist_wheel import bdist_wheel as _bdist_wheel

    class bdist_wheel(_bdist_wheel):
        """A platform wheel (it carries libqtts) for any Python 3: py3-none-<platform>."""

        def get_tag(self) -> "tuple[str, str, str]":
            return ("py3", "none", super().get_tag()[2])

    cmdclass["bdist_wheel"] = bdist_wheel
except ImportError:  # no wheel package: installing from source still works
    pass

setup(version=package_version(), cmdclass=cmdclass, distclass=BinaryDistribution)
