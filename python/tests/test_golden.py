"""The golden fixtures through Python: greedy audio within 1e-4 of the official PyTorch output (the C test's
tolerance), and sampled audio for a given seed identical, sample for sample, to the C API's for the same request."""

from __future__ import annotations

from typing import Dict, Optional

import numpy as np
import pytest

import qtts

from conftest import BASE, CV, REF_TEXT, VD, fixture, run_c

# (model, fixture, text, speaker, language, instruct, non_streaming, max_new_tokens, ref fixture, ref_text):
# the talker cases of ../shared/golden/manifest.json, as tests/support/golden_cases.c runs them in C.
CASES = [
    (BASE, "tk_xvec_en_wav", "Hello world, this is a test.", None, "English", None, 0, 13, "tk_xvec_en_ref_wav", None),
    (BASE, "tk_xvec_auto_nonstream_wav", "Hello world, this is a test.", None, "Auto", None, 1, 7,
     "tk_xvec_auto_nonstream_ref_wav", None),
    (BASE, "tk_icl_en_short_ref_wav", "Hello world, this is a test.", None, "English", None, 0, 13,
     "tk_icl_en_short_ref_ref_wav", REF_TEXT),
    (BASE, "tk_icl_en_long_ref_wav", "Hello world, this is a test.", None, "English", None, 0, 7,
     "tk_icl_en_long_ref_ref_wav", REF_TEXT),
    (CV, "cv/tk_cv_en_wav", "She said she would be here by noon.", "Ryan", "English", None, 1, 8, None, None),
    (CV, "cv/tk_cv_zh_dialect_wav", "今天天气真不错，我们一起去吃火锅吧！", "Eric", "Chinese", None, 1, 8, None, None),
    (CV, "cv/tk_cv_instruct_auto_wav", "I can't believe we actually won the game!", "Vivian", "Auto",
     "Speak in a cheerful, excited tone.", 1, 8, None, None),
    (CV, "cv/tk_cv_stream_dialect_auto_wav", "我们一起去吃烤鸭吧。", "Dylan", "Auto", None, 0, 11, None, None),
    (CV, "cv/tk_cv_eos_wav", "Good night, and sweet dreams.", "Aiden", "English", None, 1, 20, None, None),
    (VD, "vd/tk_vd_en_instruct_wav", "Good morning! How are you doing today?", None, "English",
     "A calm, deep male voice speaking slowly and clearly.", 1, 8, None, None),
    (VD, "vd/tk_vd_ja_instruct_stream_wav", "こんにちは、今日はいい天気ですね。", None, "Japanese",
     "明るく元気な若い女性の声で話してください。", 0, 13, None, None),
]
IDS = [c[1] for c in CASES]


@pytest.fixture(scope="module")
def engines(cv_engine: qtts.Engine, base_engine: qtts.Engine, vd_engine: qtts.Engine) -> Dict[str, qtts.Engine]:
    return {CV: cv_engine, BASE: base_engine, VD: vd_engine}


def _speak(engine: qtts.Engine, case: tuple, seed: Optional[int]) -> qtts.Audio:
    model, _, text, speaker, language, instruct, non_streaming, max_new, ref, ref_text = case
    voice = engine.voice_from_samples(fixture(ref), 24000, ref_text) if ref else None
    return engine.synthesize(text, speaker=speaker, language=language, instruct=instruct, voice=voice,
                             seed=seed, greedy=seed is None, x_vector_only=ref is not None and ref_text is None,
                             text_layout="non-streaming" if non_streaming else "streaming", max_frames=max_new - 1)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_greedy_matches_the_reference(engines: Dict[str, qtts.Engine], case: tuple) -> None:
    audio = _speak(engines[case[0]], case, None)
    want = fixture(case[1]).astype(np.float32)
    assert audio.sample_rate == 24000
    assert audio.samples.dtype == np.float32 and audio.samples.shape == want.shape
    err = float(np.max(np.abs(audio.samples - want)))
    assert err <= 1e-4, f"{case[1]}: max abs error {err:.3g} > 1e-4"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_sampled_equals_the_c_api(engines: Dict[str, qtts.Engine], c_synth: object, case: tuple) -> None:
    model, _, text, speaker, language, instruct, non_streaming, max_new, ref, ref_text = case
    seed = 1234567 + len(text)
    audio = _speak(engines[model], case, seed)
    assert audio.seed == seed
    want = run_c(c_synth, model, text, speaker=speaker, language=language, instruct=instruct,
                 ref=fixture(ref) if ref else None, ref_text=ref_text,
                 x_vector_only=ref is not None and ref_text is None, seed=seed,
                 layout=2 if non_streaming else 1, max_frames=max_new - 1)
    assert len(want) > 0
    np.testing.assert_array_equal(audio.samples, want)
