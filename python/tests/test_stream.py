"""Streaming: the chunks of a request concatenate to the buffered result, closing a stream early cancels the
request and frees its slot, and text fed piece by piece speaks as the whole text does."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import qtts

from conftest import CV, model_path

TEXT = "She said she would be here by noon, and then we would all go out together."


def test_chunks_concatenate_to_the_buffered_audio(cv_engine: qtts.Engine) -> None:
    whole = cv_engine.synthesize(TEXT, speaker="ryan", seed=7, max_frames=24)
    with cv_engine.stream(TEXT, speaker="ryan", seed=7, max_frames=24) as s:
        chunks = list(s)
        result = s.result
    assert len(chunks) > 1, "a 24-frame utterance comes in several chunks"
    assert all(c.dtype == np.float32 and c.ndim == 1 and len(c) > 0 for c in chunks)
    np.testing.assert_array_equal(np.concatenate(chunks), whole.samples)
    assert result is not None and result.seed == 7 and result.n_frames == whole.result.n_frames
    assert result.finish_reason in ("eos", "max_frames")
    assert result.total_ms > 0 and result.first_audio_ms > 0


def test_result_and_codes(cv_engine: qtts.Engine) -> None:
    audio = cv_engine.synthesize(TEXT, speaker="ryan", seed=3, max_frames=6, keep_codes=True)
    n = audio.result.n_frames
    assert 0 < n <= 6 and audio.finish_reason == ("max_frames" if n == 6 else "eos")
    assert audio.codes is not None and audio.codes.shape == (n, 16) and audio.codes.dtype == np.int32
    assert np.all((audio.codes >= 0) & (audio.codes < 2048))
    assert len(audio.samples) == n * 1920
    assert set(audio.timings) >= {"prefill_ms", "talker_ms", "code_predictor_ms", "decoder_ms", "total_ms"}
    again = cv_engine.synthesize(TEXT, speaker="ryan", seed=audio.seed, max_frames=6)
    np.testing.assert_array_equal(again.samples, audio.samples)


def _wait_idle(engine: qtts.Engine) -> qtts.Stats:
    deadline = time.monotonic() + 20
    while True:
        st = engine.stats()
        if st.active_slots == 0 and st.queued == 0 or time.monotonic() > deadline:
            return st
        time.sleep(0.01)


def test_closing_early_cancels_and_frees_the_slot() -> None:
    with qtts.Engine(model_path(CV), threads=2, max_batch=1, max_queue=1) as engine:
        s = engine.stream(TEXT * 4, speaker="ryan", seed=1, max_frames=400)
        first = next(s)
        assert len(first) > 0
        s.close()
        with pytest.raises(qtts.CancelledError):
            next(s)
        st = _wait_idle(engine)
        assert st.active_slots == 0 and st.queued == 0 and st.requests_cancelled == 1
        # the one slot serves the next request
        audio = engine.synthesize("Short.", speaker="ryan", max_frames=3)
        assert len(audio) > 0
        # dropping an unfinished stream cancels it too
        s = engine.stream(TEXT * 4, speaker="ryan", max_frames=400)
        next(s)
        del s
        st = _wait_idle(engine)
        assert st.active_slots == 0 and st.requests_cancelled == 2


def test_read_available_does_not_wait(cv_engine: qtts.Engine) -> None:
    with cv_engine.stream(TEXT, speaker="ryan", seed=5, max_frames=12) as s:
        got = []
        t0 = time.monotonic()
        part = s.read_available()
        assert part is not None and time.monotonic() - t0 < 0.5
        while part is not None:
            got.append(part)
            if not len(part):
                time.sleep(0.005)
            part = s.read_available()
    whole = cv_engine.synthesize(TEXT, speaker="ryan", seed=5, max_frames=12)
    np.testing.assert_array_equal(np.concatenate(got), whole.samples)


PIECES = ["She said ", "she wou", "ld be here ", "by noon, and ", "th", "en we would all ",
          "go out togeth", "er."]


def test_text_stream_from_pieces_speaks_as_the_whole_text(cv_engine: qtts.Engine) -> None:
    assert "".join(PIECES) == TEXT
    whole = cv_engine.synthesize(TEXT, speaker="ryan", seed=11, max_frames=30, text_layout="streaming")
    with cv_engine.text_stream(iter(PIECES), speaker="ryan", seed=11, max_frames=30) as ts:
        got = np.concatenate(list(ts))
    np.testing.assert_array_equal(got, whole.samples)


def test_text_stream_fed_from_another_thread_in_bytes_split_inside_characters(cv_engine: qtts.Engine) -> None:
    text = "Ça coûte très cher, naïve idée."
    data = text.encode()
    whole = cv_engine.synthesize(text, speaker="ryan", seed=2, max_frames=20, text_layout="streaming")
    ts = cv_engine.text_stream(speaker="ryan", seed=2, max_frames=20)

    def feed() -> None:
        for i in range(0, len(data), 3):  # cuts inside the two-byte characters
            ts.feed(data[i:i + 3])
            time.sleep(0.01)
        ts.end()

    t = threading.Thread(target=feed)
    t.start()
    got = np.concatenate(list(ts))
    t.join()
    ts.close()
    np.testing.assert_array_equal(got, whole.samples)


def test_text_stream_bad_utf8_fails(cv_engine: qtts.Engine) -> None:
    ts = cv_engine.text_stream(speaker="ryan", max_frames=5)
    # the engine thread fails the stream once it reads the byte: end() raises it when that came first, else the read
    with pytest.raises(qtts.InvalidError, match="UTF-8"):
        ts.feed(b"Hello \xff there")
        ts.end()
        list(ts)
    ts.close()


def test_no_descriptor_or_stream_leaks(cv_engine: qtts.Engine) -> None:
    import gc
    import os

    def fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    cv_engine.synthesize("Warm up.", speaker="ryan", max_frames=2)
    before = fds()
    for i in range(10):
        cv_engine.synthesize("Hello.", speaker="ryan", max_frames=3)
        s = cv_engine.stream("Hello there.", speaker="ryan", max_frames=20)
        next(s)
        if i % 2:
            s.close()
        del s  # the other half freed by the collector
        ts = cv_engine.text_stream(speaker="ryan")
        ts.feed("Unfinished")
        del ts
    gc.collect()
    assert fds() <= before  # one the warm-up left may close meanwhile; none may stay open
    assert not cv_engine._streams, "every stream is forgotten once closed"
