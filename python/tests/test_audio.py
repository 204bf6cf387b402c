"""Audio files and bytes through the library's own encoders and readers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import qtts


def _tone(n: int = 12000) -> np.ndarray:
    t = np.arange(n, dtype=np.float32) / 24000
    return (0.5 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


def test_wav_f32_is_exact(tmp_path: Path) -> None:
    a = qtts.Audio(_tone())
    back = qtts.Audio.from_bytes(a.to_bytes("wav", sample_format="f32"))
    np.testing.assert_array_equal(back.samples, a.samples)
    a.save(tmp_path / "x.wav", sample_format="f32")
    np.testing.assert_array_equal(qtts.read_audio(tmp_path / "x.wav").samples, a.samples)


@pytest.mark.parametrize("fmt", ["wav", "flac", "mp3", "opus", "vorbis", "aac", "m4a", "pcm"])
def test_every_format_encodes(fmt: str, tmp_path: Path) -> None:
    a = qtts.Audio(_tone())
    data = a.to_bytes(fmt)
    assert len(data) > 100
    if fmt == "pcm":
        assert len(data) == 2 * len(a)
    if fmt in ("wav", "flac", "mp3", "opus", "vorbis"):  # what libsndfile reads back
        back = qtts.Audio.from_bytes(data)
        assert back.sample_rate == 24000 and 0.9 * len(a) <= len(back) <= len(a) + 4096
        if fmt in ("wav", "flac"):  # 16-bit
            assert np.max(np.abs(back.samples - a.samples)) <= 1 / 32768
    ext = {"vorbis": "ogg"}.get(fmt, fmt)
    a.save(tmp_path / f"x.{ext}")
    assert (tmp_path / f"x.{ext}").stat().st_size > 100


def test_streaming_encoder_gives_bytes_as_it_goes() -> None:
    x = _tone(24000)
    with qtts.Encoder("wav", sample_format="f32") as enc:
        parts = [enc.write(x[i:i + 4000]) for i in range(0, len(x), 4000)]
        parts.append(enc.finish())
    assert all(len(p) for p in parts[:-1])
    np.testing.assert_array_equal(qtts.Audio.from_bytes(b"".join(parts)).samples, x)
    with qtts.Encoder("mp3", streaming=False) as enc:
        assert enc.write(x) == b""
        assert len(enc.finish()) > 1000
    enc.close()
    with pytest.raises(ValueError, match="closed"):
        enc.write(x)


def test_reading_resamples_and_refuses_junk(tmp_path: Path) -> None:
    a = qtts.Audio(_tone())
    a.save(tmp_path / "x.flac")
    r = qtts.read_audio(tmp_path / "x.flac", sample_rate=16000)
    assert r.sample_rate == 16000 and len(r) == len(a) * 2 // 3
    with pytest.raises(qtts.InvalidError, match="too long"):
        qtts.read_audio(tmp_path / "x.flac", max_seconds=0.1)
    (tmp_path / "junk.wav").write_bytes(b"RIFF nonsense")
    with pytest.raises(qtts.InvalidError):
        qtts.read_audio(tmp_path / "junk.wav")


def test_bad_encoder_arguments() -> None:
    for fmt, kw in [("xyz", {}), ("mp3", {"sample_format": "f32"}), ("wav", {"sample_format": "s24"}),
                    ("opus", {"sample_rate": 22050}), ("wav", {"sample_rate": 0})]:
        with pytest.raises(qtts.InvalidError):
            qtts.Encoder(fmt, **kw)
    with pytest.raises(qtts.InvalidError, match="format"):
        qtts.Audio(_tone()).save("/tmp/x.unknown")


def test_synthesized_audio(cv_engine: qtts.Engine, tmp_path: Path) -> None:
    a = cv_engine.synthesize("Hello there.", speaker="ryan", seed=1, max_frames=5)
    assert repr(a).startswith("Audio(") and a.duration == len(a) / 24000
    assert np.asarray(a).dtype == np.float32
    a.save(tmp_path / "hello.opus")
    assert (tmp_path / "hello.opus").read_bytes()[:4] == b"OggS"
