"""The engine: one model, one engine thread and its worker pool, any number of requests from any threads.

Every model computation (loading, synthesis, voice extraction) runs on the engine's own threads; Python threads
only submit requests, sleep until audio is ready and copy it out. So eight Python threads synthesizing at once
add no threads and use next to no CPU, and their requests share the engine's batch.
"""

from __future__ import annotations

import ctypes
import os
import threading
import weakref
from ctypes import POINTER, c_float, c_int, c_int32
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Optional, Sequence, Tuple, Union

import numpy as np

from ._handle import StreamHandle
from ._lib import EngineParams, EngineStats as _CStats, Error, ModelInfo, Request, encode_str, fs_path, lib, new_struct, raise_error
from .audio import Audio, PathLike
from .errors import InvalidError, NotFoundError
from .streams import AsyncSpeechStream, AsyncTextStream, SpeechStream, TextPieces, TextStream
from .voices import Voice, VoiceDirectory

_LAYOUTS = {None: 0, "default": 0, "streaming": 1, "non-streaming": 2}

# The request options, named as the command line's (`qtts say --top-k` is top_k=): option -> (field, kind).
_OPTIONS: Dict[str, Tuple[str, str]] = {
    "greedy": ("greedy", "bool"),
    "temperature": ("temperature", "float"),
    "top_k": ("top_k", "int"),
    "top_p": ("top_p", "float"),
    "repetition_penalty": ("repetition_penalty", "float"),
    "cp_temperature": ("cp_temperature", "float"),
    "cp_top_k": ("cp_top_k", "int"),
    "cp_top_p": ("cp_top_p", "float"),
    "max_frames": ("max_frames", "int"),
    "x_vector_only": ("x_vector_only", "bool"),
    "guard_frames_per_token": ("guard_frames_per_token", "float"),
    "no_repetition_guard": ("no_repetition_guard", "bool"),
    "keep_codes": ("keep_codes", "bool"),
    "text_layout": ("layout", "layout"),
}


@dataclass(frozen=True)
class EngineInfo:
    """What the loaded model is and how the engine runs it (``qtts_model_info``)."""

    variant: str
    """``"base"`` (voice cloning), ``"custom_voice"`` (built-in speakers) or ``"voice_design"``."""
    size: str
    hidden_size: int
    speakers: Tuple[str, ...]
    languages: Tuple[str, ...]
    sample_rate: int
    frame_samples: int
    n_codebooks: int
    codebook_size: int
    threads: int
    max_batch: int
    weights: str
    decoder_precision: str
    kv_cache: str
    device: str = "cpu"  # or "vulkan: NAME (DRIVER)": where the requests' talker runs


@dataclass(frozen=True)
class Stats:
    """The engine's requests now and since it started (``qtts_engine_stats``)."""

    active_slots: int
    queued: int
    requests_done: int
    requests_failed: int
    requests_cancelled: int
    audio_seconds_total: float
    frames_total: int
    requests_on_device: int = 0  # completed requests whose talker ran on the device


def _text(p: Optional[bytes]) -> str:
    return p.decode("utf-8", "replace") if p else ""


def _int_option(name: str, value: Any, lo: int = -(2**31), hi: int = 2**31 - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    v = int(value)
    if not lo <= v <= hi:
        raise InvalidError(f"{name} {v} is out of range ({lo}..{hi})")
    return v


class Engine:
    """A loaded model with its engine thread::

        with qtts.Engine("0.6b-custom-voice") as engine:
            engine.synthesize("Hello!", speaker="ryan").save("hello.wav")

    ``model``: a model folder (with ``speech_tokenizer/``), a ``.gguf``, or the name of a model ``qtts download``
    fetched (``"0.6b-custom-voice"``, ``"Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice"``). ``threads``: 0 for all online CPUs.
    ``weights``: ``"auto"`` (as stored), ``"f32"``, ``"bf16"``, ``"q8_0"``, ``"q4_k"`` (the CLI's ``--quant``).
    ``lora``: PEFT LoRA adapters (folders, or ``"folder:scale"``) merged into the talker at load (``--lora``).
    ``device``: None or ``"cpu"``, ``"vulkan"``, ``"vulkan:N"`` or ``"auto"`` (the CLI's ``--device``: greedy
    requests' talker and code predictor on a Vulkan GPU; ``auto`` falls back to the CPU). ``voices_dir``: the registered voices (default
    ``$QTTS_VOICES_DIR``), for ``voice="name"`` and :attr:`voices`. The other parameters are ``qtts say``'s.
    Loading raises :class:`ModelError` for missing, corrupt or unsupported model files.
    """

    def __init__(self, model: PathLike, *, threads: int = 0, weights: Optional[str] = "auto",
                 device: Optional[str] = None, decoder_precision: Optional[str] = "auto",
                 kv_cache: Optional[str] = "auto", max_batch: int = 0, max_queue: int = 0,
                 voices_dir: Optional[PathLike] = None, verbose: bool = False,
                 lora: Sequence[Union[str, PathLike]] = ()) -> None:
        self._ptr: Optional[int] = None
        self._lock = threading.Condition()
        self._calls = 0
        self._streams: "weakref.WeakSet[StreamHandle]" = weakref.WeakSet()
        path = os.fspath(model)
        found = ctypes.create_string_buffer(4096)  # a downloaded model's name -> its folder, as `qtts -m` does
        if lib.qtts_model_resolve(fs_path(path), found, len(found)):
            path = os.fsdecode(found.value)
        p = new_struct(EngineParams)
        lib.qtts_engine_params_default(p)
        p.model_path = fs_path(path)
        p.n_threads = _int_option("threads", threads, 0, 4096)
        p.weight_type = encode_str(weights, "weights")
        p.max_batch = _int_option("max_batch", max_batch, 0, 4096)
        p.max_queue = _int_option("max_queue", max_queue, 0, 2**31 - 1)
        p.verbose = int(bool(verbose))
        p.decoder_precision = encode_str(decoder_precision, "decoder_precision")
        p.kv_cache = encode_str(kv_cache, "kv_cache")
        if isinstance(lora, (str, bytes, os.PathLike)):
            lora = [lora]
        specs = (ctypes.c_char_p * max(1, len(lora)))(*[fs_path(x) for x in lora])  # alive until create returns
        p.lora = ctypes.cast(specs, ctypes.POINTER(ctypes.c_char_p))
        p.n_lora = len(lora)
        p.device = encode_str(device, "device")
        err = Error()
        ptr = lib.qtts_engine_create(p, err)
        if not ptr:
            raise_error(err)
        self._ptr = ptr
        self.model = path
        env_dir = os.environ.get("QTTS_VOICES_DIR")
        self.voices_dir: Optional[str] = os.fspath(voices_dir) if voices_dir is not None else env_dir or None
        self.info = self._read_info()

    # ---- lifecycle ----

    def _read_info(self) -> EngineInfo:
        mi: ModelInfo = lib.qtts_engine_info(self._ptr).contents
        return EngineInfo(
            variant=_text(mi.variant), size=_text(mi.size), hidden_size=mi.hidden_size,
            speakers=tuple(_text(mi.speakers[i]) for i in range(mi.n_speakers)),
            languages=tuple(_text(mi.languages[i]) for i in range(mi.n_languages)),
            sample_rate=mi.sample_rate, frame_samples=mi.frame_samples, n_codebooks=mi.n_codebooks,
            codebook_size=mi.codebook_size, threads=mi.n_threads, max_batch=mi.max_batch,
            weights=_text(mi.weight_type), decoder_precision=_text(mi.decoder_precision), kv_cache=_text(mi.kv_cache),
            device=_text(mi.device) or "cpu")

    def _enter(self) -> int:
        """Marks a call that uses the engine; close() waits for it."""
        with self._lock:
            if self._ptr is None:
                raise InvalidError("the engine is closed")
            self._calls += 1
            return self._ptr

    def _leave(self) -> None:
        with self._lock:
            self._calls -= 1
            self._lock.notify_all()

    def _track(self, handle: StreamHandle) -> None:
        with self._lock:
            self._streams.add(handle)

    def _untrack(self, handle: StreamHandle) -> None:
        with self._lock:
            self._streams.discard(handle)

    def close(self) -> None:
        """Cancels open streams, waits for calls in flight, stops the engine thread and frees the model."""
        with self._lock:
            if self._ptr is None:
                return
            streams = list(self._streams)
        for h in streams:
            h.close()
        with self._lock:
            while self._calls:
                self._lock.wait()
            ptr, self._ptr = self._ptr, None
        if ptr is not None:
            lib.qtts_engine_free(ptr)

    @property
    def closed(self) -> bool:
        return self._ptr is None

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_ptr", None) is not None:
            self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.info.variant} {self.info.size}, {self.info.threads} threads"
        return f"Engine({self.model!r}, {state})"

    # ---- statistics ----

    def stats(self) -> Stats:
        """Active and queued requests, and totals since the engine started."""
        ptr = self._enter()
        try:
            s = new_struct(_CStats)
            lib.qtts_engine_get_stats(ptr, s)
        finally:
            self._leave()
        return Stats(s.active_slots, s.queued, s.requests_done, s.requests_failed, s.requests_cancelled,
                            s.audio_seconds_total, s.frames_total, s.requests_on_device)

    def thread_ids(self) -> Tuple[int, ...]:
        """Kernel thread ids of the engine thread and its pool workers (engine first)."""
        ptr = self._enter()
        try:
            out = (c_int * 512)()
            n = lib.qtts_engine_thread_ids(ptr, out, 512)
        finally:
            self._leave()
        return tuple(out[:n])

    # ---- requests ----

    def _request(self, text: Optional[Union[str, bytes]], speaker: Optional[str], language: Optional[str],
                 instruct: Optional[str], voice: Union[Voice, str, None], seed: Optional[int],
                 options: Dict[str, Any], incremental: bool) -> Tuple[Request, Optional[Voice]]:
        r = new_struct(Request)
        lib.qtts_request_default(r)
        r.text = encode_str(text, "text")
        r.language = encode_str(language, "language")
        r.instruct = encode_str(instruct, "instruct")
        held: Optional[Voice] = None
        if isinstance(voice, str):
            if self.info.variant == "custom_voice":  # a built-in speaker's name, as `qtts say --voice`
                if speaker is not None:
                    raise InvalidError("give voice or speaker, not both")
                speaker = voice
            else:
                held = self.voices.load(voice)
        elif voice is not None:
            if not isinstance(voice, Voice):
                raise TypeError(f"voice must be a qtts.Voice or a registered voice's name, not {type(voice).__name__}")
            held = voice
        r.speaker = encode_str(speaker, "speaker")
        if held is not None:
            r.voice = held._handle()
        if seed is not None:
            r.has_seed = 1
            r.seed = _int_option("seed", seed, 0, 2**64 - 1)
        for name, value in options.items():
            spec = _OPTIONS.get(name)
            if spec is None:
                raise TypeError(f"unknown option {name!r} (options: {', '.join(sorted(_OPTIONS))})")
            field, kind = spec
            if value is None:
                continue
            if kind == "bool":
                setattr(r, field, int(bool(value)))
            elif kind == "int":
                setattr(r, field, _int_option(name, value))
            elif kind == "float":
                setattr(r, field, float(value))
            elif value not in _LAYOUTS:
                raise InvalidError(f"text_layout {value!r}: expected 'streaming' or 'non-streaming'")
            else:
                setattr(r, field, _LAYOUTS[value])
        r.text_incomplete = int(incremental)
        return r, held

    def _submit(self, text: Optional[Union[str, bytes]], speaker: Optional[str], language: Optional[str],
                instruct: Optional[str], voice: Union[Voice, str, None], seed: Optional[int],
                options: Dict[str, Any], incremental: bool = False) -> StreamHandle:
        ptr = self._enter()
        try:
            r, held = self._request(text, speaker, language, instruct, voice, seed, options, incremental)
            err = Error()
            s = lib.qtts_submit(ptr, r, err)  # the request holds its own voice reference from here on
            del held
            if not s:
                raise_error(err)
            h = StreamHandle(self, s, bool(options.get("keep_codes")))
            self._track(h)
            return h
        finally:
            self._leave()

    def synthesize(self, text: Union[str, bytes], *, speaker: Optional[str] = None, language: Optional[str] = "auto",
                   instruct: Optional[str] = None, voice: Union[Voice, str, None] = None, seed: Optional[int] = None,
                   **options: Any) -> Audio:
        """Speaks ``text`` and returns the whole utterance.

        The voice: ``speaker`` (CustomVoice built-in, see ``info.speakers``), ``instruct`` (VoiceDesign's
        description, CustomVoice 1.7B's style), ``voice`` (Base: a :class:`Voice`, or a registered voice's name).
        ``seed``: repeat a sampled utterance (None draws one, reported in ``audio.seed``). ``options`` are
        ``qtts say``'s: ``greedy``, ``temperature``, ``top_k``, ``top_p``, ``repetition_penalty``,
        ``cp_temperature``, ``cp_top_k``, ``cp_top_p``, ``max_frames``, ``x_vector_only``, ``text_layout``
        (``"streaming"``/``"non-streaming"``), ``guard_frames_per_token``, ``no_repetition_guard``, ``keep_codes``.
        """
        with self.stream(text, speaker=speaker, language=language, instruct=instruct, voice=voice, seed=seed,
                         **options) as s:
            return s.audio()

    def stream(self, text: Union[str, bytes], *, speaker: Optional[str] = None, language: Optional[str] = "auto",
               instruct: Optional[str] = None, voice: Union[Voice, str, None] = None, seed: Optional[int] = None,
               **options: Any) -> SpeechStream:
        """As :meth:`synthesize`, as an iterator of audio chunks yielded while they are decoded. Validation errors
        raise here; closing the stream early cancels the request."""
        return SpeechStream(self._submit(text, speaker, language, instruct, voice, seed, options))

    def text_stream(self, pieces: Optional[Iterable[Union[str, bytes]]] = None, *, speaker: Optional[str] = None,
                    language: Optional[str] = "auto", instruct: Optional[str] = None,
                    voice: Union[Voice, str, None] = None, seed: Optional[int] = None, **options: Any) -> TextStream:
        """A request whose text arrives incrementally (see :class:`TextStream`): from ``pieces`` as it is iterated,
        or through ``feed()``/``end()``. Speech starts once the first word is complete."""
        options.setdefault("text_layout", "streaming")
        return TextStream(self._submit(None, speaker, language, instruct, voice, seed, options, True), pieces)

    async def asynthesize(self, text: Union[str, bytes], *, speaker: Optional[str] = None,
                          language: Optional[str] = "auto", instruct: Optional[str] = None,
                          voice: Union[Voice, str, None] = None, seed: Optional[int] = None, **options: Any) -> Audio:
        """:meth:`synthesize` without blocking the event loop."""
        async with self.astream(text, speaker=speaker, language=language, instruct=instruct, voice=voice, seed=seed,
                                **options) as s:
            return await s.audio()

    def astream(self, text: Union[str, bytes], *, speaker: Optional[str] = None, language: Optional[str] = "auto",
                instruct: Optional[str] = None, voice: Union[Voice, str, None] = None, seed: Optional[int] = None,
                **options: Any) -> AsyncSpeechStream:
        """:meth:`stream` for ``async for``: waiting is one of the event loop's readers, never a thread."""
        return AsyncSpeechStream(self._submit(text, speaker, language, instruct, voice, seed, options))

    def atext_stream(self, pieces: Optional[TextPieces] = None, *, speaker: Optional[str] = None,
                     language: Optional[str] = "auto", instruct: Optional[str] = None,
                     voice: Union[Voice, str, None] = None, seed: Optional[int] = None,
                     **options: Any) -> AsyncTextStream:
        """:meth:`text_stream` for asyncio: ``pieces`` may be an async iterable (an LLM's token stream), fed by a
        task on the running loop while audio is read."""
        options.setdefault("text_layout", "streaming")
        return AsyncTextStream(self._submit(None, speaker, language, instruct, voice, seed, options, True), pieces)

    # ---- voices (Base models) ----

    def _voice_call(self, fn: Any, *args: Any) -> Voice:
        ptr = self._enter()
        try:
            err = Error()
            v = fn(ptr, *args, err)  # extraction runs on the engine thread; this thread sleeps, the GIL released
            if not v:
                raise_error(err)
            return Voice(self, v)
        finally:
            self._leave()

    def voice_from_samples(self, samples: Any, sample_rate: int, ref_text: Optional[str] = None) -> Voice:
        """A voice to clone from a recording: float samples, mono (frames,) or (frames, channels) (averaged), any
        rate. With ``ref_text`` (its transcript) a Base model clones in context, else from the x-vector."""
        a = np.asarray(samples, dtype=np.float32)
        if a.ndim == 2:
            a = a.mean(axis=1, dtype=np.float32)
        if a.ndim != 1:
            raise ValueError(f"samples must be (frames,) or (frames, channels), not {a.shape}")
        a = np.ascontiguousarray(a)
        return self._voice_call(lib.qtts_voice_from_samples, a.ctypes.data_as(POINTER(c_float)), len(a),
                                _int_option("sample_rate", sample_rate, 0), encode_str(ref_text, "ref_text"))

    def voice_from_bytes(self, data: bytes, ref_text: Optional[str] = None) -> Voice:
        """A voice from an encoded recording in memory (wav, flac, ogg, mp3, ...): 0.08 to 60 s."""
        buf = bytes(data)
        return self._voice_call(lib.qtts_voice_from_audio_bytes, buf, len(buf), encode_str(ref_text, "ref_text"))

    def voice_from_file(self, path: PathLike, ref_text: Optional[str] = None) -> Voice:
        """A voice from a recording's file (decoded on the engine thread, like an upload to the server)."""
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise NotFoundError(f"{os.fspath(path)}: no such file") from None
        return self.voice_from_bytes(data, ref_text)

    def voice_from_parts(self, xvector: Any, codes: Any = None, ref_text: Optional[str] = None) -> Voice:
        """A voice from an x-vector (``info.hidden_size`` floats) and optionally reference codes (frames, 16)."""
        x = np.ascontiguousarray(xvector, dtype=np.float32).ravel()
        c = None if codes is None else np.ascontiguousarray(codes, dtype=np.int32)
        if c is not None and (c.ndim != 2 or c.shape[1] != self.info.n_codebooks):
            raise ValueError(f"codes must be (frames, {self.info.n_codebooks}), not {c.shape}")
        cp = c.ctypes.data_as(POINTER(c_int32)) if c is not None else None
        return self._voice_call(lib.qtts_voice_from_parts, x.ctypes.data_as(POINTER(c_float)), len(x), cp,
                                0 if c is None else c.shape[0], encode_str(ref_text, "ref_text"))

    def load_voice(self, spk: PathLike, rvq: Optional[PathLike] = None, ref_text: Optional[str] = None) -> Voice:
        """A voice from its files: ``spk`` the x-vector (.spk), ``rvq`` the reference codes (.rvq), as
        ``qtts codec encode`` writes them and :meth:`Voice.save` does."""
        return self._voice_call(lib.qtts_voice_from_files, fs_path(spk), None if rvq is None else fs_path(rvq),
                                encode_str(ref_text, "ref_text"))

    @property
    def voices(self) -> VoiceDirectory:
        """The registered voices of ``voices_dir`` (shared with ``qtts serve --voices-dir`` and ``qtts voices``)."""
        if not self.voices_dir:
            raise InvalidError("no voices directory: give Engine(voices_dir=...) or set QTTS_VOICES_DIR")
        return VoiceDirectory(self.voices_dir, self)
