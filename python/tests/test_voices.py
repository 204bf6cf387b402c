"""Voices: from a recording (samples, bytes, file), from .spk/.rvq files and back, from parts, and the
registered-voices directory shared with the server and the CLI. A voice read back speaks exactly as the original."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

import qtts

from conftest import REF_TEXT, REPO

TEXT = "Hello world, this is a test."


def _speak(engine: qtts.Engine, voice: qtts.Voice) -> np.ndarray:
    return engine.synthesize(TEXT, voice=voice, greedy=True, max_frames=8).samples


def test_voice_sources_agree(base_engine: qtts.Engine, base_voice: qtts.Voice, ref_wav: np.ndarray,
                             tmp_path: Path) -> None:
    assert base_voice.in_context and base_voice.ref_text == REF_TEXT
    x, codes = base_voice.xvector, base_voice.codes
    assert x.dtype == np.float32 and x.shape == (base_engine.info.hidden_size,)
    assert codes is not None and codes.dtype == np.int32 and codes.shape[1] == 16
    want = _speak(base_engine, base_voice)
    # the same recording as a WAV file and as bytes
    wav = tmp_path / "ref.wav"
    qtts.Audio(ref_wav).save(wav, sample_format="f32")
    from_file = base_engine.voice_from_file(wav, ref_text=REF_TEXT)
    from_bytes = base_engine.voice_from_bytes(wav.read_bytes(), ref_text=REF_TEXT)
    from_parts = base_engine.voice_from_parts(x, codes, REF_TEXT)
    for v in (from_file, from_bytes, from_parts):
        np.testing.assert_array_equal(v.xvector, x)
        np.testing.assert_array_equal(v.codes, codes)
        np.testing.assert_array_equal(_speak(base_engine, v), want)
    # stereo is downmixed (the channels' mean), like a file
    stereo = np.stack([ref_wav, ref_wav], axis=1)
    assert base_engine.voice_from_samples(stereo, 24000).xvector.shape == x.shape


def test_spk_rvq_round_trip(base_engine: qtts.Engine, base_voice: qtts.Voice, tmp_path: Path) -> None:
    spk, rvq = tmp_path / "v.spk", tmp_path / "v.rvq"
    base_voice.save(spk, rvq)
    assert spk.stat().st_size == 4 * base_engine.info.hidden_size
    assert rvq.stat().st_size == 22 * len(base_voice.codes)
    back = base_engine.load_voice(spk, rvq, ref_text=REF_TEXT)
    np.testing.assert_array_equal(back.codes, base_voice.codes)
    np.testing.assert_array_equal(_speak(base_engine, back), _speak(base_engine, base_voice))
    xonly = base_engine.load_voice(spk)
    assert xonly.codes is None and not xonly.in_context
    with pytest.raises(qtts.InvalidError, match="no reference codes"):
        xonly.save(tmp_path / "x.spk", tmp_path / "x.rvq")
    (tmp_path / "bad.spk").write_bytes(b"abc")
    with pytest.raises(qtts.InvalidError):
        base_engine.load_voice(tmp_path / "bad.spk")


def test_voice_outlives_its_python_object(base_engine: qtts.Engine, ref_wav: np.ndarray) -> None:
    v = base_engine.voice_from_samples(ref_wav, 24000)
    s = base_engine.stream(TEXT, voice=v, greedy=True, max_frames=6)
    v.close()  # the request holds its own reference
    assert len(np.concatenate(list(s))) > 0
    with pytest.raises(qtts.InvalidError, match="released"):
        v.xvector


def test_registered_voices(base_engine: qtts.Engine, base_voice: qtts.Voice, tmp_path: Path) -> None:
    d = qtts.VoiceDirectory(tmp_path, base_engine)
    assert d.list() == [] and "alice" not in d
    d.add("alice", base_voice)
    with pytest.raises(qtts.ExistsError):
        d.add("alice", base_voice)
    with pytest.raises(qtts.InvalidError, match="invalid voice name"):
        d.add("../evil", base_voice)
    (info,) = d.list()
    assert info.name == "alice" and info.in_context and info.ref_text == REF_TEXT and info.error is None
    assert info.n_frames == len(base_voice.codes) and info.xvector_size == base_engine.info.hidden_size
    assert d.names() == ["alice"] and "alice" in d and len(d) == 1
    alice = d["alice"]
    np.testing.assert_array_equal(_speak(base_engine, alice), _speak(base_engine, base_voice))
    # by name through the engine's voices_dir, as `qtts say --voice alice` does
    with qtts.Engine(base_engine.model, threads=2, voices_dir=tmp_path) as e2:
        np.testing.assert_array_equal(_speak(e2, "alice"), _speak(base_engine, base_voice))  # type: ignore[arg-type]
        with pytest.raises(qtts.NotFoundError, match="unknown voice 'bob'"):
            e2.synthesize(TEXT, voice="bob")
    with pytest.raises(qtts.NotFoundError):
        d["bob"]
    (tmp_path / "carol.spk").write_bytes(b"xyz")
    assert [v.error is not None for v in d.list()] == [False, True]
    with pytest.raises(qtts.InvalidError, match="carol"):
        d.load("carol")
    del d["alice"]
    with pytest.raises(qtts.NotFoundError):
        d.remove("alice")
    with pytest.raises(qtts.NotFoundError):
        qtts.VoiceDirectory(tmp_path / "missing").list()
    with pytest.raises(qtts.InvalidError, match="need an engine"):
        qtts.VoiceDirectory(tmp_path).load("carol")


def test_the_cli_sees_registered_voices(base_engine: qtts.Engine, base_voice: qtts.Voice, tmp_path: Path) -> None:
    qtts_bin = REPO / "build" / "qtts"
    if not qtts_bin.exists():
        pytest.skip("no build/qtts binary to compare with")
    qtts.VoiceDirectory(tmp_path, base_engine).add("dora", base_voice)
    out = subprocess.run([str(qtts_bin), "voices", "list", "--voices-dir", str(tmp_path)], capture_output=True,
                         text=True, check=True).stdout
    assert "dora" in out
