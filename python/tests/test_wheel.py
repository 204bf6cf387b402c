"""Packaging: `pip wheel` builds a wheel (offline, with the system's setuptools), and the wheel installs into a
fresh `python3 -m venv --system-site-packages` and runs there from its own copy of libqtts, giving the same audio.

The wheel's library comes through the CMake path of setup.py, pointed at the build tree whose libqtts these tests
load (a no-op rebuild), or through QTTS_LIBRARY where that library has no build tree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import qtts

from conftest import CV, REPO, model_path

SCRIPT = """
import sys, numpy as np, qtts
assert qtts.library_path.startswith(sys.prefix), qtts.library_path
with qtts.Engine(sys.argv[1], threads=2) as e:
    a = e.synthesize("Hello from a wheel.", speaker="ryan", seed=5, max_frames=6)
np.save(sys.argv[2], a.samples)
print(qtts.__version__, qtts.library_path)
"""


def test_wheel_builds_installs_and_runs(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("QTTS_LIBRARY", "PYTHONPATH", "QTTS_CMAKE_BUILD_DIR")}
    build = Path(qtts.library_path).resolve().parent
    if (build / "CMakeCache.txt").exists():
        env["QTTS_CMAKE_BUILD_DIR"] = str(build)
    else:
        env["QTTS_LIBRARY"] = qtts.library_path
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index", "-q",
                    "-w", str(wheels), str(REPO / "python")], env=env, check=True)
    (wheel,) = wheels.glob("qtts-*.whl")
    assert wheel.name == f"qtts-{qtts.library_version}-py3-none-{wheel.name.rsplit('-', 1)[1]}"
    assert "none-any" not in wheel.name, "the wheel carries a shared library: it is a platform wheel"
    venv = tmp_path / "venv"
    # without its own pip (seeding one takes most of a minute): the system's pip, visible through the system
    # site-packages, installs into the venv it runs in
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "--no-index", "--no-deps", "-q", str(wheel)], env=env, check=True)
    run_env = {k: v for k, v in env.items() if k not in ("QTTS_LIBRARY", "QTTS_CMAKE_BUILD_DIR")}
    out = tmp_path / "a.npy"
    done = subprocess.run([str(py), "-c", SCRIPT, model_path(CV), str(out)], env=run_env, cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(qtts.library_version)
    with qtts.Engine(model_path(CV), threads=2) as e:
        want = e.synthesize("Hello from a wheel.", speaker="ryan", seed=5, max_frames=6).samples
    np.testing.assert_array_equal(np.load(out), want)
