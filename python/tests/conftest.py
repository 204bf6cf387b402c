"""Shared fixtures: the golden fixtures' tiny models (../shared/golden, or $QTTS_GOLDEN_DIR), one engine per
model for the whole session, and a C program that answers the same requests through the C API.

The library under test is whatever ``import qtts`` loads: $QTTS_LIBRARY (scripts/test.sh points it at the
release build), else the package's own copy.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

import c_api
import qtts
from c_api import REPO, build_c_synth

GOLDEN = Path(os.environ.get("QTTS_GOLDEN_DIR") or REPO.parent / "shared" / "golden")
BASE = "Qwen3-TTS-12Hz-0.6B-Base-tiny"
CV = "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"
VD = "Qwen3-TTS-12Hz-1.7B-VoiceDesign-tiny"
REF_TEXT = "The quick brown fox."


def model_path(name: str) -> str:
    path = GOLDEN / name
    if not path.is_dir():
        pytest.fail(f"golden model {path} is missing (set QTTS_GOLDEN_DIR)")
    return str(path)


def fixture(name: str) -> np.ndarray:
    path = GOLDEN / "fixtures" / f"{name}.npy"
    if not path.is_file():
        pytest.fail(f"golden fixture {path} is missing")
    return np.load(path)


def _engine(name: str) -> Iterator[qtts.Engine]:
    e = qtts.Engine(model_path(name), threads=2)
    yield e
    e.close()


@pytest.fixture(scope="session")
def cv_engine() -> Iterator[qtts.Engine]:
    yield from _engine(CV)


@pytest.fixture(scope="session")
def base_engine() -> Iterator[qtts.Engine]:
    yield from _engine(BASE)


@pytest.fixture(scope="session")
def vd_engine() -> Iterator[qtts.Engine]:
    yield from _engine(VD)


@pytest.fixture(scope="session")
def ref_wav() -> np.ndarray:
    """A 24 kHz reference recording of the fixtures (1.5 s)."""
    return fixture("tk_icl_en_short_ref_ref_wav").astype(np.float32)


@pytest.fixture(scope="session")
def base_voice(base_engine: qtts.Engine, ref_wav: np.ndarray) -> qtts.Voice:
    return base_engine.voice_from_samples(ref_wav, 24000, ref_text=REF_TEXT)


@pytest.fixture(scope="session")
def c_synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/c_synth.c built against the library under test."""
    try:
        return build_c_synth(tmp_path_factory.mktemp("c_synth"))
    except RuntimeError as e:
        pytest.fail(str(e))


def run_c(exe: Path, model: str, text: str, **kw: object) -> np.ndarray:
    """The C API's samples for a request on a golden model (options as c_synth's flags)."""
    return c_api.run_c(exe, model_path(model), text, **kw)
