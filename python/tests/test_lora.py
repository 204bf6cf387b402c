"""Engine(lora=...): a PEFT adapter written here (one q_proj of the golden CustomVoice talker) reaches the engine
through the struct's lora / n_lora fields. At scale 0 the audio is exactly the plain engine's, at scale 2 it is not;
an adapter folder that does not exist raises ModelError naming it. (tests/test_lora_engine.c checks the merged
weights against W + s B A.)"""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

import qtts

from conftest import CV, model_path


def _write_adapter(folder) -> None:  # type: ignore[no-untyped-def]
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"r": 2, "lora_alpha": 2}))
    rng = np.random.default_rng(46)
    mod = "base_model.model.model.layers.0.self_attn.q_proj"
    tensors = {f"{mod}.lora_A.weight": rng.standard_normal((2, 32)).astype(np.float32),
               f"{mod}.lora_B.weight": rng.standard_normal((64, 2)).astype(np.float32)}
    header, off = {}, 0
    for name, t in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + t.nbytes]}
        off += t.nbytes
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    (folder / "adapter_model.safetensors").write_bytes(
        struct.pack("<Q", len(h)) + h + b"".join(t.tobytes() for t in tensors.values()))


def _speak(engine: qtts.Engine) -> np.ndarray:
    return engine.synthesize("She said she would be here by noon.", speaker="Ryan", greedy=True,
                             max_frames=8).samples


def test_lora_scale_zero_and_scaled(cv_engine: qtts.Engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    adapter = tmp_path / "adapter"
    _write_adapter(adapter)
    plain = _speak(cv_engine)
    with qtts.Engine(model_path(CV), threads=2, lora=[f"{adapter}:0"]) as e:
        assert np.array_equal(_speak(e), plain)
    with qtts.Engine(model_path(CV), threads=2, lora=f"{adapter}:2") as e:
        adapted = _speak(e)
    assert adapted.shape != plain.shape or float(np.max(np.abs(adapted - plain))) > 1e-3


def test_lora_missing_folder(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(qtts.ModelError) as e:
        qtts.Engine(model_path(CV), threads=2, lora=[tmp_path / "nowhere"])
    assert "nowhere" in str(e.value)
