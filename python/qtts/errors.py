"""Errors: every failure of libqtts is a :class:`QttsError` carrying its ``qtts_status``.

Each status has its own subclass, so callers can catch the kind they can act on::

    try:
        audio = engine.synthesize(text, speaker=name)
    except qtts.InvalidError as e:      # also a ValueError
        print("bad request:", e)
    except qtts.BusyError:              # queue full: retry later
        ...
"""

from __future__ import annotations

import enum
from typing import Dict, Optional, Type


class Status(enum.IntEnum):
    """``qtts_status`` of include/qtts.h."""

    OK = 0
    INVALID = 1
    BUSY = 2
    NO_MEMORY = 3
    MODEL = 4
    CANCELLED = 5
    INTERNAL = 6
    NOT_FOUND = 7
    EXISTS = 8


class QttsError(Exception):
    """A libqtts failure: ``status`` (a :class:`Status`) and one line ``message``."""

    status: Status = Status.INTERNAL

    def __init__(self, message: str, status: Optional[Status] = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = Status(status)


class InvalidError(QttsError, ValueError):
    """The request or argument is wrong: bad text, unknown speaker, bad audio, bad option."""

    status = Status.INVALID


class BusyError(QttsError):
    """The queue is full or the engine is shutting down: retry later."""

    status = Status.BUSY


class NoMemoryError(QttsError, MemoryError):
    """Out of memory."""

    status = Status.NO_MEMORY


class ModelError(QttsError):
    """The model files are missing, corrupt or unsupported."""

    status = Status.MODEL


class CancelledError(QttsError):
    """The request was cancelled (its stream was closed, or the engine closed)."""

    status = Status.CANCELLED


class InternalError(QttsError):
    """Anything else: a bug or an I/O failure."""

    status = Status.INTERNAL


class NotFoundError(QttsError, LookupError):
    """A named voice, file or directory does not exist."""

    status = Status.NOT_FOUND


class ExistsError(QttsError):
    """A voice of that name is already registered."""

    status = Status.EXISTS


_BY_STATUS: Dict[int, Type[QttsError]] = {
    cls.status: cls
    for cls in (InvalidError, BusyError, NoMemoryError, ModelError, CancelledError, InternalError, NotFoundError,
                ExistsError)
}


def error_for(status: int, message: str) -> QttsError:
    """The exception of a status (an unknown status from a newer library is a plain QttsError)."""
    cls = _BY_STATUS.get(int(status))
    if cls is not None:
        return cls(message)
    err = QttsError(message)
    err.status = status  # type: ignore[assignment]  # a status this package does not know yet
    return err
