"""One submitted request: its C stream, the file descriptor the engine thread writes when the stream has audio,
ended or failed (qtts_stream_set_notify_fd), and reading without blocking.

Readers never poll: a blocking reader sleeps in select() on the descriptor (the GIL released, Ctrl-C still
interrupts it), an asyncio reader registers it with loop.add_reader. Reads themselves never wait
(qtts_stream_read with a zero timeout). Closing frees the C stream, which cancels the request at its next frame;
a reader asleep in another thread is woken and finds the stream closed.
"""

from __future__ import annotations

import asyncio
import os
import select
import threading
from ctypes import POINTER, byref, c_float, c_int, c_size_t
from typing import Any, Optional, Union

import numpy as np

from ._lib import STREAM_TIMEOUT, Result as CResult, lib, new_struct
from .audio import Result
from .errors import CancelledError, Status, error_for

# Samples per read: two seconds, more than one decoder step gives at once.
READ_SAMPLES = 48000
END = object()  # read_nowait: the audio is complete
_ONE = (1).to_bytes(8, "little")


def _notify_fds() -> "tuple[int, int]":
    """(read end, write end): one eventfd, or a non-blocking pipe where there is none."""
    if hasattr(os, "eventfd"):
        fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)  # type: ignore[attr-defined]  # Linux, 3.10+
        return fd, fd
    r, w = os.pipe()
    for fd in (r, w):
        os.set_blocking(fd, False)
        os.set_inheritable(fd, False)
    return r, w


class StreamHandle:
    def __init__(self, engine: Any, ptr: int, keep_codes: bool) -> None:
        self.engine = engine  # the engine outlives its streams
        self._ptr: Optional[int] = ptr
        self._keep_codes = keep_codes
        self._lock = threading.Lock()
        self._rfd, self._wfd = _notify_fds()
        self._fds_open = True
        self._sleepers = 0  # threads in wait()
        self._closed = False
        self._buf = np.empty(READ_SAMPLES, np.float32)
        self._bufp = self._buf.ctypes.data_as(POINTER(c_float))
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._waiter: Optional["asyncio.Future[None]"] = None
        self.result: Optional[Result] = None
        self.codes: Optional[np.ndarray] = None
        lib.qtts_stream_set_notify_fd(ptr, self._wfd)

    @property
    def closed(self) -> bool:
        return self._closed

    # ---- reading ----

    def read_nowait(self) -> Union[np.ndarray, object, None]:
        """A chunk of samples, END, or None when nothing is ready yet. Raises the request's error."""
        with self._lock:
            ptr = self._ptr
            if ptr is None:
                raise CancelledError("the stream was closed")
            n = lib.qtts_stream_read(ptr, self._bufp, READ_SAMPLES, 0)
            if n > 0:
                return self._buf[:n].copy()
            if n == STREAM_TIMEOUT:
                return None
            if n == 0:
                if self.result is None:
                    self._collect(ptr)
                return END
            status = lib.qtts_stream_status(ptr)
            message = (lib.qtts_stream_error(ptr) or b"the request failed").decode("utf-8", "replace")
        raise error_for(status or Status.INTERNAL, message)

    def _collect(self, ptr: int) -> None:
        r = new_struct(CResult)
        lib.qtts_stream_result(ptr, r)
        self.result = Result._from_c(r)
        if self._keep_codes:
            n_frames, n_cb = c_size_t(0), c_int(0)
            codes = lib.qtts_stream_codes(ptr, byref(n_frames), byref(n_cb))
            if codes and n_frames.value:
                shape = (n_frames.value, n_cb.value)
                self.codes = np.ctypeslib.as_array(codes, shape=shape).copy()

    def _drain_fd(self) -> None:
        try:
            while os.read(self._rfd, 4096) and self._rfd != self._wfd:
                pass  # a pipe may hold several wake-ups; an eventfd read takes them all
        except (BlockingIOError, OSError):
            pass

    def wait(self, timeout: Optional[float] = None) -> None:
        """Sleeps until the engine thread says the stream changed (or the stream is closed)."""
        with self._lock:
            if self._closed:
                return
            self._sleepers += 1
        try:
            select.select([self._rfd], [], [], timeout)
            self._drain_fd()
        finally:
            with self._lock:
                self._sleepers -= 1
                if self._closed and not self._sleepers and self._loop is None:
                    self._close_fds()

    async def wait_async(self) -> None:
        """The same without blocking the event loop: the descriptor is one of the loop's readers."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._closed:
                return
            if self._loop is None:
                self._loop = loop
                loop.add_reader(self._rfd, self._on_readable)
        if self._loop is not loop:
            raise RuntimeError("a qtts stream can be read from one event loop only")
        waiter = loop.create_future()
        self._waiter = waiter
        try:
            await waiter
        finally:
            self._waiter = None

    def _on_readable(self) -> None:
        self._drain_fd()
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # ---- incremental text ----

    def append_text(self, data: bytes, is_last: bool) -> None:
        from ._lib import Error, check

        err = Error()
        with self._lock:
            if self._ptr is None:
                raise CancelledError("the stream was closed")
            status = lib.qtts_stream_append_text(self._ptr, data, len(data), int(is_last), err)
        check(status, err)

    # ---- closing ----

    def close(self) -> None:
        """Frees the stream (cancelling the request if it still runs) and wakes its readers."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            ptr, self._ptr = self._ptr, None
            if ptr is not None:
                lib.qtts_stream_set_notify_fd(ptr, -1)  # from here on the engine never writes the descriptor
                lib.qtts_stream_free(ptr)
            if self._sleepers:
                os.write(self._wfd, _ONE)  # the last sleeper to leave closes the descriptors
            elif self._loop is None:
                self._close_fds()
            loop = self._loop
        self.engine._untrack(self)
        if loop is not None:
            self._leave_loop(loop)

    def _leave_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            running: Optional[asyncio.AbstractEventLoop] = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop or not loop.is_running():
            self._remove_reader(loop)
        else:  # closed from another thread while the loop runs: its own thread unregisters
            try:
                loop.call_soon_threadsafe(self._remove_reader, loop)
            except RuntimeError:  # the loop closed meanwhile
                self._remove_reader(loop)

    def _remove_reader(self, loop: asyncio.AbstractEventLoop) -> None:
        if not loop.is_closed():
            loop.remove_reader(self._rfd)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        with self._lock:
            self._loop = None
            if not self._sleepers:
                self._close_fds()

    def _close_fds(self) -> None:
        if self._fds_open:
            self._fds_open = False
            os.close(self._rfd)
            if self._wfd != self._rfd:
                os.close(self._wfd)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
