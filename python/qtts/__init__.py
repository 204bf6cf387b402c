"""qtts: Qwen3-TTS text to speech over libqtts, the C engine (no torch, no server).

    import qtts
    with qtts.Engine("0.6b-custom-voice") as engine:
        engine.synthesize("Hello from qtts.", speaker="ryan").save("hello.wav")

:class:`Engine` loads a model; ``synthesize`` returns :class:`Audio` (numpy float32 samples at 24 kHz),
``stream`` yields chunks while they are decoded, ``text_stream`` speaks text that is still being written, and
``asynthesize``/``astream``/``atext_stream`` are their asyncio twins. Errors are :class:`QttsError` subclasses
carrying the library's status. See docs/python.md.
"""

from ._lib import library_path, library_version
from .audio import SAMPLE_RATE, Audio, Encoder, Result, read_audio
from .engine import Engine, EngineInfo, Stats
from .errors import (BusyError, CancelledError, ExistsError, InternalError, InvalidError, ModelError, NoMemoryError,
                     NotFoundError, QttsError, Status)
from .streams import AsyncSpeechStream, AsyncTextStream, SpeechStream, TextStream
from .voices import Voice, VoiceDirectory, VoiceInfo

try:
    from ._version import __version__  # written by the build (setup.py)
except ImportError:  # the source tree: the library's version is the package's
    __version__ = library_version

__all__ = [
    "SAMPLE_RATE", "Audio", "AsyncSpeechStream", "AsyncTextStream", "BusyError", "CancelledError", "Encoder",
    "Engine", "EngineInfo", "ExistsError", "InternalError", "InvalidError", "ModelError", "NoMemoryError",
    "NotFoundError", "QttsError", "Result", "SpeechStream", "Stats", "Status", "TextStream", "Voice",
    "VoiceDirectory", "VoiceInfo", "library_path", "library_version", "read_audio",
]
