/* End to end through the public API (include/qtts.h): text in, audio out, for
 * every talker case of the golden fixtures (greedy), including cloning from
 * the stored reference waveform. Waveform tolerance 1e-4 max abs. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "support/npy.h"
#include "support/test_util.h"
#include "qtts.h"

typedef struct {
    const char *model, *fixture; /* fixture path below fixtures/ without .npy */
    const char *text, *speaker, *language, *instruct;
    int non_streaming, max_new_tokens;
    const char *ref_wav, *ref_text; /* Base: fixture of the reference audio, transcript (NULL: x-vector only) */
} golden_case;

#define BASE "Qwen3-TTS-12Hz-0.6B-Base-tiny"
#define CV "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"
#define VD "Qwen3-TTS-12Hz-1.7B-VoiceDesign-tiny"

static const golden_case cases[] = {
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

int main(void) {
    char path[1024], err[512];
    const char *loaded = NULL;
    qtts_engine *e = NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const golden_case *c = &cases[i];
        if (!loaded || strcmp(loaded, c->model)) {
            qtts_engine_free(e);
            qtts_engine_params p;
            qtts_engine_params_default(&p);
            p.model_path = golden_path(path, sizeof path, c->model);
            p.n_threads = 2;
            e = qtts_engine_create(&p, err, sizeof err);
            TEST_CHECK(e != NULL, "engine for %s: %s", c->model, err);
            if (!e) return test_finish("test_engine_golden");
            loaded = c->model;
        }
        npy_array want = {0}, ref = {0};
        if (npy_load_fixture(c->fixture, &want)) {
            TEST_CHECK(0, "missing fixture %s", c->fixture);
            continue;
        }
        qtts_voice *voice = NULL;
        if (c->ref_wav) {
            if (npy_load_fixture(c->ref_wav, &ref) == 0) {
                voice = qtts_voice_from_samples(e, ref.f, (size_t)ref.numel, 24000, c->ref_text, err, sizeof err);
                TEST_CHECK(voice != NULL, "%s: voice: %s", c->fixture, err);
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
        r.greedy = 1;
        r.max_frames = c->max_new_tokens - 1; /* K talker steps give at most K-1 frames */
        pcm_buf got = {0};
        qtts_result res;
        int rc = qtts_synthesize(e, &r, pcm_collect, &got, &res, err, sizeof err);
        TEST_CHECK(rc == 0, "%s: synthesize: %s", c->fixture, err);
        if (rc == 0) {
            TEST_CHECK(got.n == (size_t)want.numel, "%s: %zu samples, want %lld", c->fixture, got.n,
                       (long long)want.numel);
            if (got.n == (size_t)want.numel) TEST_NEAR(got.d, want.f, got.n, 1e-4, c->fixture);
        }
        free(got.d);
        qtts_voice_release(voice);
        npy_free(&want);
        npy_free(&ref);
    }
    qtts_engine_free(e);
    return test_finish("test_engine_golden");
}
