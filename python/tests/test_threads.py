"""The thread invariant from Python (tests/test_engine_threads.c's, through the package): eight Python threads
and an asyncio loop synthesizing at once add no thread to the process, and the model compute runs on the engine's
threads: the Python threads only sleep and copy audio, using a small fraction of the engine's CPU time."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import List

import numpy as np

import qtts

THREADS = 8
REQUESTS = 3
TEXT = "She said she would be here by noon, and then we would all go out together."


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _cpu_of(tid: int) -> float:
    """CPU seconds of one thread of this process (utime + stime)."""
    with open(f"/proc/self/task/{tid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_python_threads_do_not_compute(cv_engine: qtts.Engine) -> None:
    engine_tids = cv_engine.thread_ids()
    assert len(engine_tids) == cv_engine.info.threads
    cpu: List[float] = []
    samples: List[int] = []
    failures: List[BaseException] = []
    start = threading.Barrier(THREADS + 2)
    lock = threading.Lock()

    def worker(i: int) -> None:
        try:
            start.wait()
            t0 = time.thread_time()
            for k in range(REQUESTS):
                if k % 2:
                    a = cv_engine.synthesize(TEXT, speaker="ryan", seed=i * 10 + k, max_frames=16)
                    n = len(a)
                else:
                    n = sum(len(c) for c in cv_engine.stream(TEXT, speaker="aiden", seed=i, max_frames=16))
                with lock:
                    samples.append(n)
            with lock:
                cpu.append(time.thread_time() - t0)
        except BaseException as e:  # reported by the main thread
            failures.append(e)

    def loop_thread() -> None:
        async def one(k: int) -> int:
            total = 0
            async for c in cv_engine.astream(TEXT, speaker="vivian", seed=k, max_frames=16):
                total += len(c)
            return total

        async def main() -> None:
            start.wait()
            t0 = time.thread_time()
            got = await asyncio.gather(*(one(k) for k in range(REQUESTS)))
            got.append(len(await cv_engine.asynthesize(TEXT, speaker="serena", seed=1, max_frames=16)))
            with lock:
                samples.extend(got)
                cpu.append(time.thread_time() - t0)

        try:
            asyncio.run(main())
        except BaseException as e:
            failures.append(e)

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    workers.append(threading.Thread(target=loop_thread))
    before = _threads()
    for t in workers:
        t.start()
    expected = before + len(workers)
    engine_cpu0 = sum(_cpu_of(t) for t in engine_tids)
    t0 = time.monotonic()
    start.wait()
    seen = set()
    while any(t.is_alive() for t in workers):
        seen.add(_threads())
        time.sleep(0.01)
    for t in workers:
        t.join()
    wall = time.monotonic() - t0
    engine_cpu = sum(_cpu_of(t) for t in engine_tids) - engine_cpu0
    assert not failures, failures
    assert len(samples) == THREADS * REQUESTS + REQUESTS + 1 and all(n > 0 for n in samples)
    # finished workers leave; nothing else may come
    assert max(seen) == expected, f"thread count went to {max(seen)}, expected at most {expected}"
    # join() returns once a Python thread has finished its work, a moment before its OS thread is gone from /proc
    settle = time.monotonic() + 2.0
    while _threads() != before and time.monotonic() < settle:
        time.sleep(0.01)
    assert _threads() == before
    python_cpu = sum(cpu)
    print(f"\n  {THREADS} threads + an asyncio loop, {len(samples)} requests: wall {wall:.2f} s, engine threads "
          f"{engine_cpu:.2f} CPU s, Python threads {python_cpu:.3f} CPU s in total")
    assert engine_cpu > 0
    assert python_cpu < 0.1 * engine_cpu + 0.05, \
        f"Python threads used {python_cpu:.3f} CPU s against the engine's {engine_cpu:.3f}: compute leaked"


def test_streams_of_many_threads_match(cv_engine: qtts.Engine) -> None:
    """Requests batched together give the audio each gives alone."""
    want = [cv_engine.synthesize(TEXT, speaker="ryan", seed=s, max_frames=12).samples for s in range(4)]
    got: List[np.ndarray] = [np.zeros(0)] * 4

    def run(i: int) -> None:
        got[i] = cv_engine.synthesize(TEXT, speaker="ryan", seed=i, max_frames=12).samples

    ts = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
