"""Streams of audio chunks: blocking iterators and their asyncio twins, with text fed incrementally or at once.

Each chunk is a new float32 numpy array of 24 kHz mono samples, yielded as soon as the engine has decoded it; the
chunks of a request concatenate to exactly the audio :meth:`Engine.synthesize` returns for the same request and
seed. Closing a stream early (``close()``, leaving a ``with`` block, or dropping the last reference) cancels the
request at its next frame and frees its slot.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterable, AsyncIterator, Iterable, Iterator, List, Optional, Union

import numpy as np

from ._handle import END, StreamHandle
from ._lib import encode_str
from .audio import Audio, Result

TextPieces = Union[Iterable[Union[str, bytes]], AsyncIterable[Union[str, bytes]]]


class _Stream:
    """What both kinds of stream share: the request's handle, its result and closing."""

    def __init__(self, handle: StreamHandle) -> None:
        self._h = handle

    @property
    def result(self) -> Optional[Result]:
        """How the utterance was made, once the last chunk has been read (None before)."""
        return self._h.result

    @property
    def codes(self) -> Optional[np.ndarray]:
        """The generated codes (``keep_codes=True``), once the last chunk has been read."""
        return self._h.codes

    def _audio(self, chunks: list) -> Audio:
        data = np.concatenate(chunks) if chunks else np.zeros(0, np.float32)
        return Audio(data, 24000, self._h.result, self._h.codes)

    def close(self) -> None:
        """Cancels the request if it still runs and frees it. Idempotent."""
        self._h.close()

    def __del__(self) -> None:
        h = getattr(self, "_h", None)
        if h is not None:
            h.close()


class SpeechStream(_Stream, Iterator[np.ndarray]):
    """Audio chunks of one request, read as they are decoded (``for chunk in stream``)."""

    def __iter__(self) -> "SpeechStream":
        return self

    def __next__(self) -> np.ndarray:
        while True:
            chunk = self._h.read_nowait()
            if chunk is END:
                raise StopIteration
            if chunk is not None:
                return chunk  # type: ignore[return-value]
            self._idle()

    def _idle(self) -> None:
        self._h.wait()

    def read_available(self) -> Optional[np.ndarray]:
        """All samples decoded so far and not yet read, without waiting (empty when none; None at the end)."""
        parts: List[np.ndarray] = []
        while True:
            chunk = self._h.read_nowait()
            if chunk is END:
                if not parts:
                    return None
                break
            if chunk is None:
                break
            parts.append(chunk)  # type: ignore[arg-type]
        return np.concatenate(parts) if parts else np.zeros(0, np.float32)

    def audio(self) -> Audio:
        """Reads the rest and returns the whole utterance as :class:`Audio` (the chunks read before are not in it)."""
        return self._audio(list(self))

    cancel = _Stream.close

    def __enter__(self) -> "SpeechStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _TextFeed:
    """Appending text to an incremental request (thread-safe: the library takes the stream's lock)."""

    _h: StreamHandle
    _ended: bool = False

    def feed(self, text: Union[str, bytes]) -> None:
        """Appends text (a bytes piece may end inside a UTF-8 character; the whole must be valid at the end)."""
        data = encode_str(text, "text")
        if data:
            self._h.append_text(data, False)

    def end(self, text: Union[str, bytes] = "") -> None:
        """Appends the last piece (may be empty): the text is complete."""
        if not self._ended:
            self._ended = True
            self._h.append_text(encode_str(text, "text") or b"", True)


class TextStream(_TextFeed, SpeechStream):
    """A request whose text arrives piece by piece (an LLM's tokens), spoken while it is written.

    Feed text with :meth:`feed` (from any thread) and end it with :meth:`end`; iterate for audio. Built with an
    iterable of pieces, iterating feeds them itself: it returns audio whenever some is ready and otherwise takes
    the next piece, so the engine speaks while the iterable (the LLM) produces the rest. The codes equal those of
    the whole text given at once in the streaming layout (``text_layout="streaming"``).
    """

    def __init__(self, handle: StreamHandle, pieces: Optional[Iterable[Union[str, bytes]]] = None) -> None:
        super().__init__(handle)
        self._pieces = iter(pieces) if pieces is not None else None

    def _idle(self) -> None:
        if self._pieces is None:
            self._h.wait()
            return
        try:
            piece = next(self._pieces)
        except StopIteration:
            self._pieces = None
            self.end()
            return
        self.feed(piece)


class AsyncSpeechStream(_Stream, AsyncIterator[np.ndarray]):
    """The asyncio twin of :class:`SpeechStream` (``async for chunk in stream``): waiting is one of the event loop's
    readers, never a thread."""

    def __aiter__(self) -> "AsyncSpeechStream":
        return self

    async def __anext__(self) -> np.ndarray:
        while True:
            chunk = self._h.read_nowait()
            if chunk is END:
                raise StopAsyncIteration
            if chunk is not None:
                return chunk  # type: ignore[return-value]
            await self._idle()

    async def _idle(self) -> None:
        await self._h.wait_async()

    async def audio(self) -> Audio:
        """Reads the rest and returns it as :class:`Audio`."""
        return self._audio([c async for c in self])

    async def aclose(self) -> None:
        """Cancels the request if it still runs and frees it."""
        self.close()

    async def __aenter__(self) -> "AsyncSpeechStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()


class AsyncTextStream(_TextFeed, AsyncSpeechStream):
    """The asyncio twin of :class:`TextStream`. Built with pieces (an async iterable, e.g. an LLM client's token
    stream, or a plain iterable), a task on the running loop feeds them while audio is read."""

    def __init__(self, handle: StreamHandle, pieces: Optional[TextPieces] = None) -> None:
        super().__init__(handle)
        self._pieces = pieces
        self._feeder: Optional["asyncio.Task[None]"] = None
        self._feed_error: Optional[BaseException] = None

    async def _feed_all(self) -> None:
        pieces = self._pieces
        try:
            if hasattr(pieces, "__aiter__"):
                async for piece in pieces:  # type: ignore[union-attr]
                    self.feed(piece)
            else:
                for piece in pieces:  # type: ignore[union-attr]
                    self.feed(piece)
                    await asyncio.sleep(0)
            self.end()
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # the source failed: so does the request
            self._feed_error = e
            self._h.close()

    async def __anext__(self) -> np.ndarray:
        if self._pieces is not None and self._feeder is None:
            self._feeder = asyncio.get_running_loop().create_task(self._feed_all())
        try:
            return await super().__anext__()
        except Exception:
            if self._feed_error is not None:
                raise self._feed_error from None
            raise

    def close(self) -> None:
        if self._feeder is not None and not self._feeder.done():
            self._feeder.cancel()
        super().close()
