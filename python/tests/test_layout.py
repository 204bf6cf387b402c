"""The ctypes mirrors of include/qtts.h's structs: every field at the header's offset, and no field of the
header missing from a mirror (its size would differ). A field added to a struct in qtts.h fails here until
qtts/_lib.py has it too. Also: the library reports the sizes the header gives."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import qtts
from qtts import _lib

from conftest import REPO


def test_mirrors_match_the_header(tmp_path: Path) -> None:
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        pytest.fail("no C compiler: the layout check needs one (build-essential)")
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "qtts.h"', "int main(void) {"]
    want = {}
    for cname, cls in _lib.STRUCTS.items():
        lines.append(f'    printf("{cname} sizeof %zu\\n", sizeof({cname}));')
        want[f"{cname} sizeof"] = ctypes.sizeof(cls)
        for field, *_ in cls._fields_:
            lines.append(f'    printf("{cname} {field} %zu\\n", offsetof({cname}, {field}));')
            want[f"{cname} {field}"] = getattr(cls, field).offset
    lines += ["    return 0;", "}"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    subprocess.run([cc, str(src), "-o", str(exe), f"-I{REPO / 'include'}"], check=True)
    got = {}
    for line in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines():
        key, value = line.rsplit(" ", 1)
        got[key] = int(value)
    wrong = {k: (want[k], got[k]) for k in want if want[k] != got[k]}
    assert not wrong, f"mirror != qtts.h (python, C): {wrong}"


def test_library_sizes() -> None:
    for cname, cls in _lib.STRUCTS.items():
        assert _lib.lib.qtts_struct_size(cname.encode()) == ctypes.sizeof(cls), cname
    assert qtts.__version__ == qtts.library_version
