"""What the Python package costs on top of the C API, for the same request on the same machine.

    QTTS_LIBRARY=build/libqtts.so PYTHONPATH=python python3 python/bench/overhead.py [--model DIR] [--runs N]

The C side is python/tests/c_synth.c (qtts_synthesize, a callback per read of up to 8192 samples); the Python side
is Engine.stream (a chunk per wake-up of the eventfd) and Engine.synthesize. Both load their own engine (2
threads) and run the request --runs times per round, the rounds alternating. Reported per request: wall time,
the calling thread's CPU time, chunks and time to the first chunk (medians). The caller's CPU time is what the
binding adds (the model runs on the engine's threads either way); a short and a long request (--frames) separate
what it costs per request from what it costs per chunk (a straight line through the two).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import c_api  # noqa: E402
import qtts  # noqa: E402

TEXT = "She said she would be here by noon, and then we would all go out together, laughing in the warm rain."


def c_runs(exe: Path, model: str, frames: int, runs: int) -> List[Tuple[float, float, int, float]]:
    with tempfile.TemporaryDirectory() as d:
        args = c_api.c_args(exe, model, TEXT, Path(d) / "out.f32", speaker="ryan", greedy=True, max_frames=frames,
                            repeat=runs)
        out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        wall, cpu, chunks, _, first = line.split()
        rows.append((float(wall), float(cpu), int(chunks), float(first)))
    return rows


def py_runs(engine: qtts.Engine, frames: int, runs: int, buffered: bool) -> List[Tuple[float, float, int, float]]:
    rows = []
    for _ in range(runs):
        t0, c0 = time.monotonic(), time.thread_time()
        first, chunks = 0.0, 0
        if buffered:
            engine.synthesize(TEXT, speaker="ryan", greedy=True, max_frames=frames)
            chunks = 1
        else:
            for _chunk in engine.stream(TEXT, speaker="ryan", greedy=True, max_frames=frames):
                if not chunks:
                    first = time.monotonic() - t0
                chunks += 1
        rows.append(((time.monotonic() - t0) * 1e3, (time.thread_time() - c0) * 1e3, chunks, first * 1e3))
    return rows


def median(rows: List[Tuple[float, float, int, float]], i: int) -> float:
    return statistics.median(r[i] for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=str(c_api.REPO.parent / "shared" / "golden" /
                                           "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--frames", type=int, nargs=2, default=[8, 64], help="max_frames of the short and long request")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        exe = c_api.build_c_synth(Path(d))
        engine = qtts.Engine(a.model, threads=2)
        res: Dict[Tuple[str, int], List[Tuple[float, float, int, float]]] = {}
        for _ in range(a.rounds):
            for frames in a.frames:
                res.setdefault(("C qtts_synthesize", frames), []).extend(c_runs(exe, a.model, frames, a.runs))
                res.setdefault(("Python stream", frames), []).extend(py_runs(engine, frames, a.runs, False))
                res.setdefault(("Python synthesize", frames), []).extend(py_runs(engine, frames, a.runs, True))
        engine.close()
    print(f"libqtts {qtts.library_version} ({qtts.library_path}), {a.model}, {a.rounds} x {a.runs} runs each")
    print(f"{'':20} {'frames':>6} {'wall ms':>8} {'caller CPU ms':>14} {'chunks':>6} {'first chunk ms':>15}")
    for (name, frames), rows in sorted(res.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        print(f"{name:20} {frames:6d} {median(rows, 0):8.2f} {median(rows, 1):14.3f} {median(rows, 2):6.0f} "
              f"{median(rows, 3) if 'synthesize' not in name or name.startswith('C') else float('nan'):15.2f}")
    extra = []
    for frames in a.frames:
        c, p = res[("C qtts_synthesize", frames)], res[("Python stream", frames)]
        extra.append((median(p, 1) - median(c, 1), median(p, 2)))
        print(f"{frames} frames: Python adds {extra[-1][0]:.3f} ms of the caller's CPU per request "
              f"({extra[-1][1]:.0f} chunks); wall {median(p, 0) - median(c, 0):+.2f} ms, "
              f"first chunk {median(p, 3) - median(c, 3):+.2f} ms")
    (e0, n0), (e1, n1) = extra
    if n1 != n0:
        per_chunk = (e1 - e0) / (n1 - n0)
        print(f"so about {e0 - per_chunk * n0:.3f} ms per request + {per_chunk:.3f} ms per chunk (noisy: compare runs)")

if __name__ == "__main__":
    main()
