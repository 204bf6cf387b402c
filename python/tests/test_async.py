"""The asyncio twins: the same audio as the blocking calls, an event loop that keeps running while requests are
generated (a ticker task is never starved), text fed from an async token stream, and cancellation by closing."""

from __future__ import annotations

import asyncio
import time
from typing import AsyncIterator, List

import numpy as np
import pytest

import qtts

TEXT = "Good morning! How are you doing today? I hope the weather is kind to you."


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


async def _ticker(stop: asyncio.Event, gaps: List[float]) -> None:
    last = time.monotonic()
    while not stop.is_set():
        await asyncio.sleep(0.005)
        now = time.monotonic()
        gaps.append(now - last)
        last = now


def test_astream_and_asynthesize_equal_the_blocking_calls(cv_engine: qtts.Engine) -> None:
    want = cv_engine.synthesize(TEXT, speaker="vivian", seed=21, max_frames=24)

    async def main() -> None:
        stop, gaps = asyncio.Event(), []  # type: ignore[var-annotated]
        ticker = asyncio.create_task(_ticker(stop, gaps))
        started = time.monotonic()
        chunks = []
        async with cv_engine.astream(TEXT, speaker="vivian", seed=21, max_frames=24) as s:
            async for c in s:
                chunks.append(c)
            assert s.result is not None and s.result.seed == 21
        audio = await cv_engine.asynthesize(TEXT, speaker="vivian", seed=21, max_frames=24)
        elapsed = time.monotonic() - started
        stop.set()
        await ticker
        np.testing.assert_array_equal(np.concatenate(chunks), want.samples)
        np.testing.assert_array_equal(audio.samples, want.samples)
        assert audio.result.n_frames == want.result.n_frames
        # the loop ran all along: a blocked loop shows one gap as long as the requests took. On a fast machine
        # the requests take ~10 ms, two ticks of 5 ms, too short to tell a stall from a tick; the bound is then
        # 50 ms, which still fails a loop blocked for a whole slow request.
        bound = max(0.05, 0.5 * elapsed)
        assert gaps and max(gaps) < bound, \
            f"the event loop stalled for {max(gaps, default=0):.3f} s of {elapsed:.3f} s of requests"

    run(main())


def test_concurrent_requests_on_one_loop(cv_engine: qtts.Engine) -> None:
    speakers = ["ryan", "vivian", "aiden", "serena"]
    want = [cv_engine.synthesize(TEXT, speaker=sp, seed=i, max_frames=10) for i, sp in enumerate(speakers)]

    async def main() -> List[qtts.Audio]:
        return await asyncio.gather(*(cv_engine.asynthesize(TEXT, speaker=sp, seed=i, max_frames=10)
                                      for i, sp in enumerate(speakers)))

    for got, w in zip(run(main()), want):
        np.testing.assert_array_equal(got.samples, w.samples)


def test_atext_stream_from_an_async_token_stream(cv_engine: qtts.Engine) -> None:
    want = cv_engine.synthesize(TEXT, speaker="ryan", seed=5, max_frames=30, text_layout="streaming")

    async def tokens() -> AsyncIterator[str]:  # an LLM's stream: words arriving over time
        for i, word in enumerate(TEXT.split(" ")):
            await asyncio.sleep(0.002)
            yield word if i == 0 else " " + word

    async def main() -> np.ndarray:
        async with cv_engine.atext_stream(tokens(), speaker="ryan", seed=5, max_frames=30) as s:
            return np.concatenate([c async for c in s])

    np.testing.assert_array_equal(run(main()), want.samples)


def test_atext_stream_fed_by_hand(cv_engine: qtts.Engine) -> None:
    want = cv_engine.synthesize(TEXT, speaker="ryan", seed=6, max_frames=30, text_layout="streaming")

    async def main() -> np.ndarray:
        s = cv_engine.atext_stream(speaker="ryan", seed=6, max_frames=30)
        half = len(TEXT) // 2
        s.feed(TEXT[:half])
        first = await s.__anext__()
        s.end(TEXT[half:])
        rest = [c async for c in s]
        await s.aclose()
        return np.concatenate([first] + rest)

    np.testing.assert_array_equal(run(main()), want.samples)


def test_a_failing_token_stream_fails_the_request(cv_engine: qtts.Engine) -> None:
    async def tokens() -> AsyncIterator[str]:
        yield "Hello there "
        await asyncio.sleep(0.01)
        raise RuntimeError("the LLM went away")

    async def main() -> None:
        async with cv_engine.atext_stream(tokens(), speaker="ryan", max_frames=50) as s:
            async for _ in s:
                pass

    with pytest.raises(RuntimeError, match="went away"):
        run(main())


def _idle(engine: qtts.Engine) -> qtts.Stats:
    deadline = time.monotonic() + 20
    while (engine.stats().active_slots or engine.stats().queued) and time.monotonic() < deadline:
        time.sleep(0.01)
    return engine.stats()


def test_aclose_cancels(cv_engine: qtts.Engine) -> None:
    before = _idle(cv_engine).requests_cancelled  # earlier tests' cancellations are counted once retired

    async def main() -> None:
        s = cv_engine.astream(TEXT * 4, speaker="ryan", max_frames=400)
        await s.__anext__()
        await s.aclose()
        with pytest.raises(qtts.CancelledError):
            await s.__anext__()

    run(main())
    st = _idle(cv_engine)
    assert st.active_slots == 0 and st.requests_cancelled == before + 1
