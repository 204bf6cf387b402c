"""Audio: synthesized samples with how they were made, and the library's own encoders and readers.

Encoding and decoding are byte work on the calling thread (libsndfile, libav), never model compute.
Formats: ``wav``, ``flac``, ``mp3``, ``opus``, ``vorbis`` (``ogg``), ``aac`` (ADTS), ``m4a`` and ``pcm``
(headerless little-endian samples); ``sample_format`` ``"s16"`` (default) or ``"f32"`` for wav and pcm (flac: 16 or
24 bits).
"""

from __future__ import annotations

import ctypes
import os
from ctypes import POINTER, c_float, c_size_t
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np

from ._lib import AudioData, Error, check, encode_str, fs_path, lib, new_struct, raise_error

SAMPLE_RATE = 24000
PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Result:
    """How an utterance was made (``qtts_result``)."""

    seed: int
    """The sampling seed: the one given, or the one drawn (pass it again to repeat the audio)."""
    n_frames: int
    input_tokens: int
    audio_seconds: float
    finish_reason: str
    """``"eos"`` (the model ended it), ``"max_frames"`` (the frame limit) or ``"guard"`` (the runaway guard)."""
    guard: Optional[str]
    """Which guard ended it: ``"length"`` or ``"repetition"``; None otherwise."""
    queue_ms: float
    prefill_ms: float
    first_audio_ms: float
    total_ms: float
    talker_ms: float
    code_predictor_ms: float
    decoder_ms: float

    @property
    def timings(self) -> dict:
        """The stage timings in milliseconds."""
        return {k: getattr(self, k) for k in ("queue_ms", "prefill_ms", "first_audio_ms", "total_ms", "talker_ms",
                                              "code_predictor_ms", "decoder_ms")}

    @classmethod
    def _from_c(cls, r: Any) -> "Result":
        reason = lib.qtts_finish_reason_name(r.finished_by).decode()
        return cls(seed=int(r.seed), n_frames=int(r.n_frames), input_tokens=int(r.input_tokens),
                   audio_seconds=float(r.audio_seconds), finish_reason=reason,
                   guard=lib.qtts_guard_reason_name(r.guard).decode() if reason == "guard" else None,
                   queue_ms=r.queue_ms, prefill_ms=r.prefill_ms, first_audio_ms=r.first_audio_ms,
                   total_ms=r.total_ms, talker_ms=r.talker_ms, code_predictor_ms=r.code_predictor_ms,
                   decoder_ms=r.decoder_ms)


def _float_ptr(a: np.ndarray) -> Any:
    return a.ctypes.data_as(POINTER(c_float))


def _as_samples(samples: Any, channels: int = 1) -> np.ndarray:
    """float32, C-contiguous; (frames,) or (frames, channels)."""
    a = np.ascontiguousarray(samples, dtype=np.float32)
    if a.ndim == 1 and channels == 1:
        return a
    if a.ndim == 2 and a.shape[1] == channels:
        return a
    raise ValueError(f"samples must be shaped (frames,) for mono or (frames, {channels}), not {a.shape}")


class Audio:
    """Mono float32 audio: ``samples`` at ``sample_rate``, and for synthesized audio its :class:`Result`."""

    def __init__(self, samples: Any, sample_rate: int = SAMPLE_RATE, result: Optional[Result] = None,
                 codes: Optional[np.ndarray] = None) -> None:
        self.samples: np.ndarray = np.ascontiguousarray(samples, dtype=np.float32)
        self.sample_rate: int = int(sample_rate)
        self.result: Optional[Result] = result
        self.codes: Optional[np.ndarray] = codes
        """The generated codes, int32 (frames, 16), when the request asked for ``keep_codes``."""

    @property
    def duration(self) -> float:
        """Seconds of audio."""
        return len(self.samples) / self.sample_rate

    @property
    def finish_reason(self) -> Optional[str]:
        return self.result.finish_reason if self.result else None

    @property
    def seed(self) -> Optional[int]:
        return self.result.seed if self.result else None

    @property
    def timings(self) -> dict:
        return self.result.timings if self.result else {}

    def __len__(self) -> int:
        return len(self.samples)

    def __array__(self, dtype: Any = None) -> np.ndarray:
        return self.samples if dtype is None else self.samples.astype(dtype)

    def __repr__(self) -> str:
        how = f", finish_reason={self.finish_reason!r}, seed={self.seed}" if self.result else ""
        return f"Audio({self.duration:.2f} s at {self.sample_rate} Hz{how})"

    def save(self, path: PathLike, format: Optional[str] = None, sample_format: Optional[str] = None) -> None:
        """Writes a file, in the format of its extension (.wav .flac .mp3 .opus .ogg .aac .m4a .pcm) or ``format``."""
        err = Error()
        check(lib.qtts_audio_save(fs_path(path), encode_str(format, "format"), encode_str(sample_format, "sample format"),
                                  _float_ptr(self.samples), len(self.samples), self.sample_rate, 1, err), err)

    def to_bytes(self, format: str = "wav", sample_format: Optional[str] = None) -> bytes:
        """The whole file in ``format`` as bytes, every header complete."""
        with Encoder(format, self.sample_rate, sample_format=sample_format, streaming=False) as enc:
            enc.write(self.samples)
            return enc.finish()

    @classmethod
    def read(cls, path: PathLike, sample_rate: Optional[int] = None, max_seconds: Optional[float] = None) -> "Audio":
        """Reads an audio file (wav, flac, ogg, mp3, ...) as mono, resampled to ``sample_rate`` if given."""
        data = new_struct(AudioData)
        err = Error()
        check(lib.qtts_audio_read(fs_path(path), int(sample_rate or 0), float(max_seconds or 0), data, err), err)
        return cls._take(data)

    @classmethod
    def from_bytes(cls, data: bytes, sample_rate: Optional[int] = None,
                   max_seconds: Optional[float] = None) -> "Audio":
        """Decodes an encoded audio file held in memory."""
        buf = bytes(data)
        out = new_struct(AudioData)
        err = Error()
        check(lib.qtts_audio_decode(buf, len(buf), int(sample_rate or 0), float(max_seconds or 0), out, err), err)
        return cls._take(out)

    @classmethod
    def _take(cls, data: AudioData) -> "Audio":
        try:
            samples = np.ctypeslib.as_array(data.samples, shape=(data.n,)).copy() if data.n else np.zeros(0, np.float32)
            return cls(samples, data.sample_rate)
        finally:
            lib.qtts_audio_data_free(data)


def read_audio(path: PathLike, sample_rate: Optional[int] = None, max_seconds: Optional[float] = None) -> Audio:
    """:meth:`Audio.read`."""
    return Audio.read(path, sample_rate, max_seconds)


class Encoder:
    """An encoder into memory, for sending audio while it is made::

        with qtts.Encoder("mp3") as enc:
            for chunk in engine.stream(text, speaker="ryan"):
                send(enc.write(chunk))
            send(enc.finish())

    ``streaming=True``: :meth:`write` returns the bytes ready so far (a WAV header then says "length unknown", MP3
    has no Xing tag, m4a is fragmented); ``False``: only :meth:`finish` returns bytes, the whole file with complete
    headers.
    """

    def __init__(self, format: str, sample_rate: int = SAMPLE_RATE, *, channels: int = 1,
                 sample_format: Optional[str] = None, streaming: bool = True) -> None:
        self.format = format
        self.sample_rate = int(sample_rate)
        self.channels = int(channels)
        err = Error()
        self._enc = lib.qtts_audio_encoder_new(encode_str(format, "format"), encode_str(sample_format, "sample format"),
                                               self.sample_rate, self.channels, int(bool(streaming)), err)
        if not self._enc:
            raise_error(err)

    def _take(self) -> bytes:
        size = c_size_t(0)
        p = lib.qtts_audio_encoder_take(self._enc, ctypes.byref(size))
        return ctypes.string_at(p, size.value) if p and size.value else b""

    def _handle(self) -> Any:
        if not self._enc:
            raise ValueError("the encoder is closed")
        return self._enc

    def write(self, samples: Any) -> bytes:
        """Encodes samples (float, mono (frames,) or (frames, channels)); returns the bytes ready now."""
        enc = self._handle()
        a = _as_samples(samples, self.channels)
        err = Error()
        frames = a.shape[0]
        check(lib.qtts_audio_encoder_write(enc, _float_ptr(a), frames, err), err)
        return self._take()

    def finish(self) -> bytes:
        """Completes the stream; returns the remaining bytes (all of them when not streaming)."""
        enc = self._handle()
        err = Error()
        check(lib.qtts_audio_encoder_finish(enc, err), err)
        return self._take()

    def close(self) -> None:
        if self._enc:
            lib.qtts_audio_encoder_free(self._enc)
            self._enc = None

    def __enter__(self) -> "Encoder":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()
