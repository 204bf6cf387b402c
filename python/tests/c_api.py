"""The C API's side of the comparisons: tests/c_synth.c built against the library ``import qtts`` loaded (linked
through its soname, whatever the file is called), and run for one request. Used by the tests (conftest.py) and by
python/bench/overhead.py; no pytest here."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import List, Optional

import numpy as np

import qtts

REPO = Path(__file__).resolve().parents[2]


def _soname(lib: Path) -> Optional[str]:
    try:
        out = subprocess.run(["objdump", "-p", str(lib)], capture_output=True, text=True).stdout
    except OSError:
        return None
    for line in out.splitlines():
        if "SONAME" in line:
            return line.split()[-1]
    return None


def build_c_synth(out_dir: Path) -> Path:
    """Compiles c_synth.c into out_dir; raises RuntimeError without a C compiler."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        raise RuntimeError("no C compiler: the comparison with the C API needs one (build-essential)")
    lib = Path(qtts.library_path).resolve()
    soname = _soname(lib) or lib.name
    link = out_dir / soname
    if not link.exists():
        link.symlink_to(lib)
    exe = out_dir / "c_synth"
    subprocess.run([cc, "-O2", "-o", str(exe), str(Path(__file__).parent / "c_synth.c"), f"-I{REPO / 'include'}",
                    f"-L{out_dir}", f"-l:{soname}", f"-Wl,-rpath,{out_dir}"], check=True)
    return exe


def c_args(exe: Path, model: str, text: str, out: Path, **kw: object) -> List[str]:
    """c_synth's command line: options as its flags (ref: samples, written to a file beside out)."""
    args = [str(exe), model, text, str(out)]
    for k, v in kw.items():
        if v is None or v is False:
            continue
        if k == "ref":
            ref = out.with_name("ref.f32")
            np.asarray(v, dtype=np.float32).tofile(ref)
            v = str(ref)
        args.append("--" + k.replace("_", "-"))
        if v is not True:
            args.append(str(v))
    return args


def run_c(exe: Path, model: str, text: str, **kw: object) -> np.ndarray:
    """The C API's samples for a request."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "out.f32"
        subprocess.run(c_args(exe, model, text, out, **kw), check=True)
        return np.fromfile(out, dtype=np.float32)
