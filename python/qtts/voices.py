"""Voices to clone (Base models) and the registered-voices directory.

A :class:`Voice` holds a speaker x-vector and, for in-context cloning, the reference recording's codes and
transcript. Make one with ``engine.voice_from_file`` / ``voice_from_samples`` / ``voice_from_bytes`` (extraction
runs on the engine thread), ``engine.load_voice`` (.spk/.rvq files) or ``engine.voice_from_parts``.

A :class:`VoiceDirectory` is the folder ``qtts serve --voices-dir``, ``qtts voices`` and ``qtts say --voice`` share:
voices registered here are usable there by name, and the other way round.
"""

from __future__ import annotations

import os
from ctypes import POINTER, byref, c_size_t
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, List, Optional, Union

import numpy as np

from ._lib import Error, VoiceEntry, check, encode_str, fs_path, lib, raise_error
from .errors import InvalidError

if TYPE_CHECKING:
    from .engine import Engine

PathLike = Union[str, "os.PathLike[str]"]


class Voice:
    """A voice to clone. Reference counted in the library: a request holds its own reference, so a voice may be
    dropped while requests that use it still run."""

    def __init__(self, engine: "Engine", ptr: int) -> None:
        self._engine = engine
        self._ptr: Optional[int] = ptr

    def _handle(self) -> int:
        if self._ptr is None:
            raise InvalidError("the voice was released")
        return self._ptr

    @property
    def xvector(self) -> np.ndarray:
        """The speaker x-vector (a copy)."""
        n = c_size_t(0)
        p = lib.qtts_voice_xvector(self._handle(), byref(n))
        return np.ctypeslib.as_array(p, shape=(n.value,)).copy()

    @property
    def codes(self) -> Optional[np.ndarray]:
        """The reference codes, int32 (frames, 16) (a copy), or None for an x-vector-only voice."""
        n = c_size_t(0)
        p = lib.qtts_voice_codes(self._handle(), byref(n))
        if not p or not n.value:
            return None
        cb = self._engine.info.n_codebooks
        return np.ctypeslib.as_array(p, shape=(n.value, cb)).copy()

    @property
    def ref_text(self) -> Optional[str]:
        """The reference recording's transcript, or None."""
        t = lib.qtts_voice_ref_text(self._handle())
        return t.decode("utf-8", "replace") if t else None

    @property
    def in_context(self) -> bool:
        """Clones in context (codes and a transcript), else from the x-vector alone."""
        return self.codes is not None and self.ref_text is not None

    def save(self, spk: PathLike, rvq: Optional[PathLike] = None) -> None:
        """Writes the x-vector to ``spk`` (.spk) and, if given, the reference codes to ``rvq`` (.rvq). The transcript
        is not in these files: keep it beside them (or register the voice, which keeps all three)."""
        err = Error()
        check(lib.qtts_voice_save(self._handle(), fs_path(spk), None if rvq is None else fs_path(rvq), err), err)

    def close(self) -> None:
        """Drops this reference now (requests in flight keep theirs)."""
        if self._ptr is not None:
            lib.qtts_voice_release(self._ptr)
            self._ptr = None

    def __del__(self) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._ptr is None:
            return "Voice(released)"
        codes = self.codes
        how = f"in context, {len(codes)} reference frames" if self.in_context and codes is not None else "x-vector"
        return f"Voice({how})"


@dataclass(frozen=True)
class VoiceInfo:
    """A registered voice as its files describe it (read without a model)."""

    name: str
    xvector_size: int
    has_codes: bool
    n_frames: int
    ref_text: Optional[str]
    in_context: bool
    error: Optional[str]
    """None, or why the voice's files are corrupt."""


class VoiceDirectory:
    """The registered voices of a folder. Listing and removing need no model; loading and adding need the engine
    (a Base model), given here or by ``engine.voices``."""

    def __init__(self, path: PathLike, engine: Optional["Engine"] = None) -> None:
        self.path = os.fspath(path)
        self._engine = engine

    def list(self) -> List[VoiceInfo]:
        """Every voice, sorted by name (corrupt ones too, with ``error`` set)."""
        out = POINTER(VoiceEntry)()
        n = c_size_t(0)
        err = Error()
        check(lib.qtts_voices_list(fs_path(self.path), byref(out), byref(n), err), err)
        try:
            return [VoiceInfo(name=e.name.decode(), xvector_size=e.xvec_len, has_codes=bool(e.has_codes),
                              n_frames=e.n_frames, ref_text=e.ref_text.decode("utf-8", "replace") if e.ref_text else None,
                              in_context=bool(e.in_context), error=e.error.decode("utf-8", "replace") if e.error else None)
                    for e in (out[i] for i in range(n.value))]
        finally:
            lib.qtts_voices_list_free(out, n.value)

    def names(self) -> List[str]:
        return [v.name for v in self.list()]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.list())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()

    def _engine_ptr(self) -> "Engine":
        if self._engine is None:
            raise InvalidError("loading and adding voices need an engine: VoiceDirectory(path, engine) or engine.voices")
        return self._engine

    def load(self, name: str) -> Voice:
        """The voice ``name`` (:class:`NotFoundError` if there is none, :class:`InvalidError` if its files do not
        load for this model)."""
        engine = self._engine_ptr()
        ptr = engine._enter()
        try:
            err = Error()
            v = lib.qtts_voices_load(ptr, fs_path(self.path), encode_str(name, "voice name"), err)
            if not v:
                raise_error(err)
            return Voice(engine, v)
        finally:
            engine._leave()

    __getitem__ = load

    def add(self, name: str, voice: Voice) -> None:
        """Registers ``voice`` as ``name`` (:class:`ExistsError` if the name is taken)."""
        engine = self._engine_ptr()
        ptr = engine._enter()
        try:
            err = Error()
            check(lib.qtts_voices_add(ptr, fs_path(self.path), encode_str(name, "voice name"), voice._handle(), err),
                  err)
        finally:
            engine._leave()

    __setitem__ = add

    def remove(self, name: str) -> None:
        """Removes ``name`` (:class:`NotFoundError` if there is none)."""
        err = Error()
        check(lib.qtts_voices_remove(fs_path(self.path), encode_str(name, "voice name"), err), err)

    __delitem__ = remove

    def __repr__(self) -> str:
        return f"VoiceDirectory({self.path!r})"
