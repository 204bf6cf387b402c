"""libqtts through ctypes: finding the library, the public structs of include/qtts.h and the prototypes.

ctypes releases the GIL for the length of every foreign call, so a thread waiting in libqtts (a voice
extraction, a model load) never holds up other Python threads. No Python callback is ever handed to the
library: readers wait on a file descriptor the engine thread writes (qtts_stream_set_notify_fd).

The struct mirrors below must match include/qtts.h field for field (tests/test_layout.py compiles a C program
that prints the header's offsets and compares). A library may have grown a struct at its end since: objects are
allocated with the library's own size (qtts_struct_size), and a field this package does not know stays zero,
which is its default.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from ctypes import (POINTER, Structure, c_char, c_char_p, c_double, c_float, c_int, c_int32, c_long, c_size_t,
                    c_uint64, c_void_p)
from pathlib import Path
from typing import Any, Optional, Type, TypeVar

from .errors import QttsError, error_for

_LIB_NAMES = {"darwin": "libqtts.dylib"}
LIB_FILE = _LIB_NAMES.get(sys.platform, "libqtts.so")

STREAM_TIMEOUT = -2
STREAM_ERROR = -1


class Error(Structure):
    _fields_ = [("status", c_int), ("message", c_char * 512)]


class EngineParams(Structure):
    _fields_ = [
        ("model_path", c_char_p),
        ("n_threads", c_int),
        ("weight_type", c_char_p),
        ("max_batch", c_int),
        ("max_queue", c_int),
        ("verbose", c_int),
        ("decoder_precision", c_char_p),
        ("kv_cache", c_char_p),
        ("overlap", c_int),
        ("lora", POINTER(c_char_p)),
        ("n_lora", c_int),
        ("device", c_char_p),
        ("load_progress", c_void_p),
        ("load_progress_user", c_void_p),
    ]


class ModelInfo(Structure):
    _fields_ = [
        ("variant", c_char_p),
        ("size", c_char_p),
        ("hidden_size", c_int),
        ("n_speakers", c_int),
        ("speakers", POINTER(c_char_p)),
        ("n_languages", c_int),
        ("languages", POINTER(c_char_p)),
        ("sample_rate", c_int),
        ("frame_samples", c_int),
        ("n_codebooks", c_int),
        ("codebook_size", c_int),
        ("n_threads", c_int),
        ("max_batch", c_int),
        ("weight_type", c_char_p),
        ("decoder_precision", c_char_p),
        ("kv_cache", c_char_p),
        ("load_report", c_char_p),
        ("kernels_measured", c_int),
        ("device", c_char_p),
        ("max_frames", c_int),
    ]


class Request(Structure):
    _fields_ = [
        ("text", c_char_p),
        ("language", c_char_p),
        ("speaker", c_char_p),
        ("instruct", c_char_p),
        ("voice", c_void_p),
        ("x_vector_only", c_int),
        ("layout", c_int),
        ("greedy", c_int),
        ("has_seed", c_int),
        ("seed", c_uint64),
        ("temperature", c_float),
        ("top_p", c_float),
        ("repetition_penalty", c_float),
        ("top_k", c_int),
        ("cp_temperature", c_float),
        ("cp_top_p", c_float),
        ("cp_top_k", c_int),
        ("max_frames", c_int),
        ("keep_codes", c_int),
        ("guard_frames_per_token", c_float),
        ("no_repetition_guard", c_int),
        ("text_incomplete", c_int),
        ("normalize", c_int),
        ("lexicon", c_void_p),
        ("code_blocks", c_int),
    ]


class Result(Structure):
    _fields_ = [
        ("seed", c_uint64),
        ("n_frames", c_int),
        ("input_tokens", c_int),
        ("audio_seconds", c_double),
        ("queue_ms", c_double),
        ("prefill_ms", c_double),
        ("first_audio_ms", c_double),
        ("total_ms", c_double),
        ("talker_ms", c_double),
        ("code_predictor_ms", c_double),
        ("decoder_ms", c_double),
        ("finished_by_eos", c_int),
        ("finished_by", c_int),
        ("guard", c_int),
        ("decoder_steps", c_int),
        ("overlapped_decoder_steps", c_int),
    ]


class EngineStats(Structure):
    _fields_ = [
        ("active_slots", c_int),
        ("queued", c_int),
        ("requests_done", c_uint64),
        ("requests_failed", c_uint64),
        ("requests_cancelled", c_uint64),
        ("audio_seconds_total", c_double),
        ("frames_total", c_uint64),
        ("finished_eos", c_uint64),
        ("finished_max_frames", c_uint64),
        ("finished_guard_length", c_uint64),
        ("finished_guard_repetition", c_uint64),
        ("requests_on_device", c_uint64),
        ("device_memory_peak", c_uint64),
        ("frames_decoded_from_device_codes", c_uint64),
        ("decoder_steps_in_frame_submissions", c_uint64),
    ]


class AudioData(Structure):
    _fields_ = [
        ("samples", POINTER(c_float)),
        ("n", c_size_t),
        ("sample_rate", c_int),
        ("source_rate", c_int),
        ("source_channels", c_int),
    ]


class VoiceEntry(Structure):
    _fields_ = [
        ("name", c_char * 72),
        ("xvec_len", c_size_t),
        ("has_codes", c_int),
        ("n_frames", c_size_t),
        ("ref_text", c_char_p),
        ("in_context", c_int),
        ("error", c_char_p),
    ]


# the C names of the mirrors, for qtts_struct_size and the layout test
STRUCTS = {
    "qtts_error": Error,
    "qtts_engine_params": EngineParams,
    "qtts_model_info": ModelInfo,
    "qtts_request": Request,
    "qtts_result": Result,
    "qtts_engine_stats": EngineStats,
    "qtts_audio_data": AudioData,
    "qtts_voice_entry": VoiceEntry,
}

_P = c_void_p  # opaque handles: qtts_engine *, qtts_stream *, qtts_voice *, qtts_audio_encoder *
_E = POINTER(Error)

# name: (restype, argtypes)
_PROTOTYPES = {
    "qtts_version": (c_char_p, []),
    "qtts_status_name": (c_char_p, [c_int]),
    "qtts_struct_size": (c_size_t, [c_char_p]),
    "qtts_model_resolve": (c_char_p, [c_char_p, c_char_p, c_size_t]),
    "qtts_engine_params_default": (None, [POINTER(EngineParams)]),
    "qtts_engine_create": (_P, [POINTER(EngineParams), _E]),
    "qtts_engine_free": (None, [_P]),
    "qtts_engine_info": (POINTER(ModelInfo), [_P]),
    "qtts_engine_get_stats": (None, [_P, POINTER(EngineStats)]),
    "qtts_engine_thread_ids": (c_int, [_P, POINTER(c_int), c_int]),
    "qtts_voice_from_samples": (_P, [_P, POINTER(c_float), c_size_t, c_int, c_char_p, _E]),
    "qtts_voice_from_audio_bytes": (_P, [_P, c_char_p, c_size_t, c_char_p, _E]),
    "qtts_voice_from_parts": (_P, [_P, POINTER(c_float), c_size_t, POINTER(c_int32), c_size_t, c_char_p, _E]),
    "qtts_voice_from_files": (_P, [_P, c_char_p, c_char_p, c_char_p, _E]),
    "qtts_voice_save": (c_int, [_P, c_char_p, c_char_p, _E]),
    "qtts_voice_retain": (_P, [_P]),
    "qtts_voice_release": (None, [_P]),
    "qtts_voice_xvector": (POINTER(c_float), [_P, POINTER(c_size_t)]),
    "qtts_voice_codes": (POINTER(c_int32), [_P, POINTER(c_size_t)]),
    "qtts_voice_ref_text": (c_char_p, [_P]),
    "qtts_request_default": (None, [POINTER(Request)]),
    "qtts_finish_reason_name": (c_char_p, [c_int]),
    "qtts_guard_reason_name": (c_char_p, [c_int]),
    "qtts_submit": (_P, [_P, POINTER(Request), _E]),
    "qtts_stream_read": (c_long, [_P, POINTER(c_float), c_size_t, c_int]),
    "qtts_stream_error": (c_char_p, [_P]),
    "qtts_stream_status": (c_int, [_P]),
    "qtts_stream_result": (None, [_P, POINTER(Result)]),
    "qtts_stream_codes": (POINTER(c_int32), [_P, POINTER(c_size_t), POINTER(c_int)]),
    "qtts_stream_cancel": (None, [_P]),
    "qtts_stream_append_text": (c_int, [_P, c_char_p, c_size_t, c_int, _E]),
    "qtts_stream_free": (None, [_P]),
    "qtts_stream_set_notify_fd": (None, [_P, c_int]),
    "qtts_audio_encoder_new": (_P, [c_char_p, c_char_p, c_int, c_int, c_int, _E]),
    "qtts_audio_encoder_write": (c_int, [_P, POINTER(c_float), c_size_t, _E]),
    "qtts_audio_encoder_finish": (c_int, [_P, _E]),
    "qtts_audio_encoder_take": (c_void_p, [_P, POINTER(c_size_t)]),
    "qtts_audio_encoder_free": (None, [_P]),
    "qtts_audio_save": (c_int, [c_char_p, c_char_p, c_char_p, POINTER(c_float), c_size_t, c_int, c_int, _E]),
    "qtts_audio_read": (c_int, [c_char_p, c_int, c_double, POINTER(AudioData), _E]),
    "qtts_audio_decode": (c_int, [c_char_p, c_size_t, c_int, c_double, POINTER(AudioData), _E]),
    "qtts_audio_data_free": (None, [POINTER(AudioData)]),
    "qtts_voices_list": (c_int, [c_char_p, POINTER(POINTER(VoiceEntry)), POINTER(c_size_t), _E]),
    "qtts_voices_list_free": (None, [POINTER(VoiceEntry), c_size_t]),
    "qtts_voices_load": (_P, [_P, c_char_p, c_char_p, _E]),
    "qtts_voices_add": (c_int, [_P, c_char_p, c_char_p, _P, _E]),
    "qtts_voices_remove": (c_int, [c_char_p, c_char_p, _E]),
}


def _candidates() -> list:
    """Where libqtts may be, in order: $QTTS_LIBRARY, the copy inside this package, the system's."""
    env = os.environ.get("QTTS_LIBRARY")
    if env:
        return [env]
    found = [str(Path(__file__).resolve().parent / "lib" / LIB_FILE)]
    system = ctypes.util.find_library("qtts")
    if system:
        found.append(system)
    return found


def _load() -> "tuple[ctypes.CDLL, str]":
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(f"{path} (absent)")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
            continue
        missing = [name for name in _PROTOTYPES if not hasattr(lib, name)]
        if missing:
            tried.append(f"{path} (too old: lacks {', '.join(missing[:3])})")
            continue
        for name, (restype, argtypes) in _PROTOTYPES.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        return lib, path
    raise ImportError("qtts: libqtts not found or not usable: " + "; ".join(tried) +
                      ". Install the package with `pip install ./python` (it builds libqtts), or set QTTS_LIBRARY "
                      "to a libqtts.so of the same version.")


lib, library_path = _load()
library_version: str = lib.qtts_version().decode()

S = TypeVar("S", bound=Structure)


def new_struct(cls: Type[S]) -> S:
    """A zeroed struct of the library's size for cls (at least the mirror's)."""
    name = next(k for k, v in STRUCTS.items() if v is cls)
    size = max(ctypes.sizeof(cls), lib.qtts_struct_size(name.encode()))
    buf = ctypes.create_string_buffer(size)
    return cls.from_buffer(buf)


def has_field(cls: Type[Structure], name: str) -> bool:
    return any(f[0] == name for f in cls._fields_)


def raise_error(err: Error, fallback: str = "libqtts call failed") -> None:
    message = err.message.decode("utf-8", "replace") or fallback
    raise error_for(err.status, message)


def check(status: int, err: Error) -> None:
    """Raises the error of a failed call (status != 0)."""
    if status:
        if not err.status:
            err.status = status
        raise_error(err)


def encode_str(value: Optional[Any], what: str) -> Optional[bytes]:
    """A str argument as UTF-8 bytes (bytes pass through); lone surrogates are an InvalidError."""
    from .errors import InvalidError

    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    if isinstance(value, os.PathLike):
        return os.fsencode(value)
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidError(f"the {what} is not valid UTF-8: {e}") from None


def fs_path(value: Any) -> bytes:
    """A file system path argument as bytes."""
    return os.fsencode(value)


__all__ = ["lib", "library_path", "library_version", "QttsError"]
