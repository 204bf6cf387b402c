"""Each kind of failure raises its exception class, carrying the library's status and its one-line message."""

from __future__ import annotations

import numpy as np
import pytest

import qtts

from conftest import GOLDEN


def test_bad_model_path() -> None:
    with pytest.raises(qtts.ModelError) as e:
        qtts.Engine("/nonexistent/qtts-model")
    assert e.value.status == qtts.Status.MODEL and "/nonexistent/qtts-model" in str(e.value)
    assert isinstance(e.value, qtts.QttsError)


def test_not_a_model(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(qtts.ModelError):
        qtts.Engine(tmp_path)


def test_unknown_speaker(cv_engine: qtts.Engine) -> None:
    with pytest.raises(qtts.InvalidError, match='unknown speaker "nobody"') as e:
        cv_engine.synthesize("Hello.", speaker="nobody")
    assert e.value.status == qtts.Status.INVALID
    assert isinstance(e.value, ValueError)
    with pytest.raises(qtts.InvalidError, match="unknown language"):
        cv_engine.stream("Hello.", speaker="ryan", language="klingon")
    with pytest.raises(qtts.InvalidError, match="needs a speaker"):
        cv_engine.synthesize("Hello.")


def test_invalid_utf8(cv_engine: qtts.Engine) -> None:
    with pytest.raises(qtts.InvalidError, match="UTF-8"):
        cv_engine.synthesize(b"caf\xc3 au lait", speaker="ryan")
    with pytest.raises(qtts.InvalidError, match="UTF-8"):
        cv_engine.synthesize("lone \ud800 surrogate", speaker="ryan")
    with pytest.raises(qtts.InvalidError, match="UTF-8"):
        cv_engine.synthesize("fine", speaker=b"ry\xffan")  # type: ignore[arg-type]


def test_bad_audio_bytes(base_engine: qtts.Engine) -> None:
    with pytest.raises(qtts.InvalidError) as e:
        base_engine.voice_from_bytes(b"RIFF\x10\x00\x00\x00WAVEfmt this is not audio")
    assert e.value.status == qtts.Status.INVALID and e.value.message
    with pytest.raises(qtts.InvalidError):
        base_engine.voice_from_bytes(b"")
    with pytest.raises(qtts.InvalidError):
        qtts.Audio.from_bytes(b"\x00" * 100)
    with pytest.raises(qtts.InvalidError, match="too short"):
        base_engine.voice_from_samples(np.zeros(10, np.float32), 24000, ref_text="Hi.")
    with pytest.raises(qtts.InvalidError, match="finite"):
        base_engine.voice_from_samples(np.full(24000, np.nan, np.float32), 24000)


def test_bad_options(cv_engine: qtts.Engine) -> None:
    with pytest.raises(TypeError, match="unknown option 'topk'"):
        cv_engine.synthesize("Hello.", speaker="ryan", topk=5)
    with pytest.raises(qtts.InvalidError, match="out of range"):
        cv_engine.synthesize("Hello.", speaker="ryan", top_p=2.0)
    with pytest.raises(qtts.InvalidError, match="out of range"):
        cv_engine.synthesize("Hello.", speaker="ryan", max_frames=2**40)
    with pytest.raises(qtts.InvalidError):
        cv_engine.synthesize("Hello.", speaker="ryan", seed=-1)
    with pytest.raises(qtts.InvalidError, match="text_layout"):
        cv_engine.synthesize("Hello.", speaker="ryan", text_layout="sideways")
    with pytest.raises(qtts.InvalidError, match="empty"):
        cv_engine.synthesize("", speaker="ryan")
    with pytest.raises(qtts.InvalidError, match="unknown device"):
        qtts.Engine(GOLDEN / "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny", device="gpu0")


def test_mode_mismatches(cv_engine: qtts.Engine, base_engine: qtts.Engine, base_voice: qtts.Voice) -> None:
    with pytest.raises(qtts.InvalidError, match="Base model"):
        cv_engine.synthesize("Hello.", voice=base_voice)
    with pytest.raises(qtts.InvalidError, match="reference audio"):
        base_engine.synthesize("Hello.")
    with pytest.raises(qtts.InvalidError, match="cannot clone"):
        cv_engine.voice_from_samples(np.zeros(24000, np.float32), 24000)


def test_missing_files(base_engine: qtts.Engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(qtts.NotFoundError):
        base_engine.voice_from_file(tmp_path / "nope.wav")
    with pytest.raises(qtts.NotFoundError):
        base_engine.load_voice(tmp_path / "nope.spk")
    with pytest.raises(qtts.NotFoundError) as e:
        qtts.read_audio(tmp_path / "nope.wav")
    assert isinstance(e.value, LookupError) and e.value.status == qtts.Status.NOT_FOUND


def test_closed_engine() -> None:
    e = qtts.Engine(GOLDEN / "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny", threads=1)
    s = e.stream("Hello there, how are you?", speaker="ryan", max_frames=50)
    e.close()
    e.close()  # idempotent
    with pytest.raises(qtts.CancelledError):
        list(s)
    with pytest.raises(qtts.InvalidError, match="closed"):
        e.synthesize("Hello.", speaker="ryan")


def test_model_names_resolve_through_the_download_cache(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("QTTS_HOME", str(tmp_path))
    (tmp_path / "Qwen3-TTS-12Hz-1.7B-CustomVoice").symlink_to(GOLDEN / "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny")
    with qtts.Engine("1.7b-custom-voice", threads=1) as e:
        assert e.model == str(tmp_path / "Qwen3-TTS-12Hz-1.7B-CustomVoice") and e.info.variant == "custom_voice"
    with pytest.raises(qtts.ModelError):
        qtts.Engine("0.6b-base")  # not downloaded
