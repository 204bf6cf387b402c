#include "support/golden_cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/npy.h"

#define BASE "Qwen3-TTS-12Hz-0.6B-Base-tiny"
#define CV "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"
#define VD "Qwen3-TTS-12Hz-1.7B-VoiceDesign-tiny"

const golden_case golden_cases[] = {
    {BASE, "tk_xvec_en_wav", "Hello world, this is a test.", NULL, "English", NULL, 0, 13, "tk_xvec_en_ref_wav", NULL},
    {BASE, "tk_xvec_auto_nonstream_wav", "Hello world, this is a test.", NULL, "Auto", NULL, 1, 7,
     "tk_xvec_auto_nonstream_ref_wav", NULL},
    {BASE, "tk_icl_en_short_ref_wav", "Hello world, this is a test.", NULL, "English", NULL, 0, 13,
     "tk_icl_en_short_ref_ref_wav", "The quick brown fox."},
    {BASE, "tk_icl_en_long_ref_wav", "Hello world, this is a test.", NULL, "English", NULL, 0, 7,
     "tk_icl_en_long_ref_ref_wav", "The quick brown fox."},
    {CV, "cv/tk_cv_en_wav", "She said she would be here by noon.", "Ryan", "English", NULL, 1, 8, NULL, NULL},
    {CV, "cv/tk_cv_zh_dialect_wav", "今天天气真不错，我们一起去吃火锅吧！", "Eric", "Chinese", NULL, 1, 8, NULL, NULL},
    {CV, "cv/tk_cv_instruct_auto_wav", "I can't believe we actually won the game!", "Vivian", "Auto",
     "Speak in a cheerful, excited tone.", 1, 8, NULL, NULL},
    {CV, "cv/tk_cv_stream_dialect_auto_wav", "我们一起去吃烤鸭吧。", "Dylan", "Auto", NULL, 0, 11, NULL, NULL},
    {CV, "cv/tk_cv_eos_wav", "Good night, and sweet dreams.", "Aiden", "English", NULL, 1, 20, NULL, NULL},
    {VD, "vd/tk_vd_en_instruct_wav", "Good morning! How are you doing today?", NULL, "English",
     "A calm, deep male voice speaking slowly and clearly.", 1, 8, NULL, NULL},
    {VD, "vd/tk_vd_ja_instruct_stream_wav", "こんにちは、今日はいい天気ですね。", NULL, "Japanese",
     "明るく元気な若い女性の声で話してください。", 0, 13, NULL, NULL},
};
const size_t golden_case_count = sizeof golden_cases / sizeof golden_cases[0];

qtts_engine *golden_engine(const char *path, char *err, size_t err_size) {
    qtts_engine_params p;
    qtts_engine_params_default(&p);
    p.model_path = path;
    const char *threads = getenv("QTTS_TEST_THREADS"); /* a ctest variant runs 3 (tests/CMakeLists.txt) */
    p.n_threads = threads && atoi(threads) > 0 ? atoi(threads) : 2;
    const char *ov = getenv("QTTS_TEST_OVERLAP"); /* a ctest variant overlaps wherever possible */
    if (ov && !strcmp(ov, "1")) p.overlap = QTTS_OVERLAP_ALWAYS;
    qtts_error e = {0};
    qtts_engine *eng = qtts_engine_create(&p, &e);
    if (!eng) snprintf(err, err_size, "%s", e.message);
    return eng;
}

/* seed 0: greedy; otherwise the model's sampling settings with that seed */
static int run_case(qtts_engine *e, const golden_case *c, uint64_t seed, pcm_buf *out, char *err, size_t err_size) {
    npy_array ref = {0};
    qtts_voice *voice = NULL;
    if (c->ref_wav) {
        if (npy_load_fixture(c->ref_wav, &ref)) {
            snprintf(err, err_size, "missing fixture %s", c->ref_wav);
            return -1;
        }
        qtts_error ve = {0};
        voice = qtts_voice_from_samples(e, ref.f, (size_t)ref.numel, 24000, c->ref_text, &ve);
        npy_free(&ref);
        if (!voice) {
            snprintf(err, err_size, "%s", ve.message);
            return -1;
        }
    }
    qtts_request r;
    qtts_request_default(&r);
    r.text = c->text;
    r.speaker = c->speaker;
    r.language = c->language;
    r.instruct = c->instruct;
    r.voice = voice;
    r.x_vector_only = c->ref_wav && !c->ref_text;
    r.layout = c->non_streaming ? QTTS_LAYOUT_NON_STREAMING : QTTS_LAYOUT_STREAMING;
    r.greedy = seed == 0;
    r.has_seed = seed != 0;
    r.seed = seed;
    r.max_frames = c->max_new_tokens - 1; /* K talker steps give at most K-1 frames */
    qtts_result res;
    qtts_error se = {0};
    qtts_status rc = qtts_synthesize(e, &r, pcm_collect, out, &res, &se);
    if (rc) snprintf(err, err_size, "%s", se.message);
    qtts_voice_release(voice);
    return rc ? -1 : 0;
}

int golden_case_run(qtts_engine *e, const golden_case *c, pcm_buf *out, char *err, size_t err_size) {
    return run_case(e, c, 0, out, err, err_size);
}

int golden_case_run_sampled(qtts_engine *e, const golden_case *c, uint64_t seed, pcm_buf *out, char *err,
                            size_t err_size) {
    return run_case(e, c, seed, out, err, err_size);
}
