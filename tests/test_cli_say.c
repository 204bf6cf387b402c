/* `qtts say` as a user runs it: golden waveforms through the binary (f32 WAV
 * read back with libsndfile), pre-extracted voices (.spk/.rvq), usage errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "support/test_util.h"
#include "audio/encoder.h"
#include "io/rvq.h"
#include "io/spk.h"
#include "support/npy.h"

static int run(const char *cmd) {
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void compare(const char *wav, const char *fixture, const char *what) {
    npy_array want;
    size_t n = 0;
    float *got = read_wav(wav, &n);
    TEST_CHECK(got != NULL, "%s: could not read %s", what, wav);
    if (!got || npy_load_fixture(fixture, &want)) {
        free(got);
        TEST_CHECK(0, "%s: fixture %s", what, fixture);
        return;
    }
    TEST_CHECK((int64_t)n == want.numel, "%s: %lld samples, want %lld", what, (long long)n, (long long)want.numel);
    if ((int64_t)n == want.numel) TEST_NEAR(got, want.f, n, 1e-4, what);
    free(got);
    npy_free(&want);
}

/* Every golden talker case through the binary (greedy); Base cases from the
 * stored x-vector (.spk) and reference codes (.rvq). */
typedef struct {
    const char *model, *fixture, *text, *speaker, *language, *instruct, *layout;
    int max_frames;
    const char *spk, *ref_codes, *ref_text;
} cli_case;

#define BASE "Qwen3-TTS-12Hz-0.6B-Base-tiny"
#define CV "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"
#define VD "Qwen3-TTS-12Hz-1.7B-VoiceDesign-tiny"
static const cli_case cases[] = {
    {BASE, "tk_xvec_en_wav", "Hello world, this is a test.", NULL, "English", NULL, "streaming", 12,
     "tk_xvec_en_spk_embedding", NULL, NULL},
    {BASE, "tk_xvec_auto_nonstream_wav", "Hello world, this is a test.", NULL, "Auto", NULL, "non-streaming", 6,
     "tk_xvec_auto_nonstream_spk_embedding", NULL, NULL},
    {BASE, "tk_icl_en_short_ref_wav", "Hello world, this is a test.", NULL, "English", NULL, "streaming", 12,
     "tk_icl_en_short_ref_spk_embedding", "tk_icl_en_short_ref_ref_codes", "The quick brown fox."},
    {BASE, "tk_icl_en_long_ref_wav", "Hello world, this is a test.", NULL, "English", NULL, "streaming", 6,
     "tk_icl_en_long_ref_spk_embedding", "tk_icl_en_long_ref_ref_codes", "The quick brown fox."},
    {CV, "cv/tk_cv_en_wav", "She said she would be here by noon.", "Ryan", "English", NULL, "non-streaming", 7, NULL, NULL, NULL},
    {CV, "cv/tk_cv_zh_dialect_wav", "今天天气真不错，我们一起去吃火锅吧！", "Eric", "Chinese", NULL, "non-streaming", 7, NULL, NULL, NULL},
    {CV, "cv/tk_cv_instruct_auto_wav", "I can't believe we actually won the game!", "Vivian", "Auto",
     "Speak in a cheerful, excited tone.", "non-streaming", 7, NULL, NULL, NULL},
    {CV, "cv/tk_cv_stream_dialect_auto_wav", "我们一起去吃烤鸭吧。", "Dylan", "Auto", NULL, "streaming", 10, NULL, NULL, NULL},
    {CV, "cv/tk_cv_eos_wav", "Good night, and sweet dreams.", "Aiden", "English", NULL, "non-streaming", 19, NULL, NULL, NULL},
    {VD, "vd/tk_vd_en_instruct_wav", "Good morning! How are you doing today?", NULL, "English",
     "A calm, deep male voice speaking slowly and clearly.", "non-streaming", 7, NULL, NULL, NULL},
    {VD, "vd/tk_vd_ja_instruct_stream_wav", "こんにちは、今日はいい天気ですね。", NULL, "Japanese",
     "明るく元気な若い女性の声で話してください。", "streaming", 12, NULL, NULL, NULL},
};

static void run_case(const cli_case *c, const char *dir) {
    char cmd[4096], model[1024], out[700], voice[2048] = "", spk_path[700], rvq_path[700];
    qtts_err err = {0};
    golden_path(model, sizeof model, c->model);
    snprintf(out, sizeof out, "%s/case.wav", dir);
    if (c->spk) {
        npy_array spk, codes;
        snprintf(spk_path, sizeof spk_path, "%s/case.spk", dir);
        if (npy_load_fixture(c->spk, &spk)) {
            TEST_CHECK(0, "fixture %s", c->spk);
            return;
        }
        TEST_CHECK(qtts_spk_write(spk_path, spk.f, spk.numel, &err) == 0, "spk: %s", err.msg);
        npy_free(&spk);
        if (c->ref_codes) {
            snprintf(rvq_path, sizeof rvq_path, "%s/case.rvq", dir);
            if (npy_load_fixture(c->ref_codes, &codes)) {
                TEST_CHECK(0, "fixture %s", c->ref_codes);
                return;
            }
            TEST_CHECK(qtts_rvq_write(rvq_path, codes.i, 16, codes.shape[0], &err) == 0, "rvq: %s", err.msg);
            npy_free(&codes);
            snprintf(voice, sizeof voice, "--ref-spk %s --ref-rvq %s --ref-text '%s'", spk_path, rvq_path, c->ref_text);
        } else {
            snprintf(voice, sizeof voice, "--ref-spk %s --x-vector-only", spk_path);
        }
    } else if (c->speaker) {
        snprintf(voice, sizeof voice, "--speaker %s", c->speaker);
    }
    char instruct[1024] = "", text_path[700];
    if (c->instruct) snprintf(instruct, sizeof instruct, "--instruct '%s'", c->instruct);
    snprintf(text_path, sizeof text_path, "%s/case.txt", dir); /* texts hold quotes: pass them as a file */
    FILE *tf = fopen(text_path, "w");
    if (tf) {
        fputs(c->text, tf);
        fclose(tf);
    }
    unlink(out);
    snprintf(cmd, sizeof cmd,
             "%s say -q --threads 2 -m %s %s %s --lang %s --text-layout %s --greedy --max-frames %d "
             "--sample-format f32 -o %s --file %s",
             QTTS_BINARY, model, voice, instruct, c->language, c->layout, c->max_frames, out, text_path);
    TEST_CHECK(run(cmd) == 0, "failed: %s", cmd);
    char what[256];
    snprintf(what, sizeof what, "qtts say --greedy %s", c->fixture);
    compare(out, c->fixture, what);
}

int main(void) {
    char dir[] = "/tmp/qtts_say_XXXXXX", cmd[4096], model[1024], out[600];
    if (!mkdtemp(dir)) return 1;
    qtts_err err = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i], dir);

    /* -o - streams a WAV to stdout; long text is split and joined */
    golden_path(model, sizeof model, CV);
    char piped[700], longtext[700];
    snprintf(piped, sizeof piped, "%s/piped.wav", dir);
    snprintf(cmd, sizeof cmd, "%s say -q -m %s --speaker Ryan --greedy --max-frames 7 --lang English "
             "--text-layout non-streaming --sample-format f32 -o - 'She said she would be here by noon.' > %s",
             QTTS_BINARY, model, piped);
    TEST_CHECK(run(cmd) == 0, "stdout streaming failed");
    compare(piped, "cv/tk_cv_en_wav", "say -o - (streamed WAV on stdout)");
    snprintf(longtext, sizeof longtext, "%s/long.txt", dir);
    FILE *lf = fopen(longtext, "w");
    if (lf) {
        for (int i = 0; i < 12; i++) fprintf(lf, "This is sentence number %d of a long text. ", i);
        fclose(lf);
    }
    snprintf(out, sizeof out, "%s/long.wav", dir);
    snprintf(cmd, sizeof cmd, "%s say -q -m %s --speaker Ryan --seed 7 --max-frames 5 --file %s -o %s", QTTS_BINARY,
             model, longtext, out);
    TEST_CHECK(run(cmd) == 0, "long text failed: %s", cmd);
    size_t n_long = 0;
    float *long_audio = read_wav(out, &n_long);
    /* 12 sentences of ~9 words split into chunks of <= 300 units: more than one
     * utterance, each at most 5 frames */
    TEST_CHECK(long_audio && n_long > 5 * 1920 && n_long % 1920 == 0, "long text audio: %lld samples", (long long)n_long);
    free(long_audio);

    /* qtts codec encode: the golden input wave as a float WAV -> .rvq == enc_codes */
    npy_array wave, enc;
    if (npy_load_fixture("input_wave_1p5s", &wave) == 0 && npy_load_fixture("enc_codes", &enc) == 0) {
        char wav_path[700], enc_path[700];
        snprintf(wav_path, sizeof wav_path, "%s/in.wav", dir);
        snprintf(enc_path, sizeof enc_path, "%s/in.rvq", dir);
        TEST_CHECK(qtts_audio_write_file(wav_path, "wav", QTTS_SAMPLE_F32, wave.f, (size_t)wave.numel, 24000, 1, &err) == 0,
                   "write wav: %s", err.msg);
        golden_path(model, sizeof model, "Qwen3-TTS-12Hz-0.6B-Base-tiny");
        snprintf(cmd, sizeof cmd, "%s codec encode %s -o %s -m %s 2>/dev/null", QTTS_BINARY, wav_path, enc_path, model);
        TEST_CHECK(run(cmd) == 0, "codec encode failed: %s", cmd);
        int32_t *codes = NULL;
        int64_t T = 0;
        TEST_CHECK(qtts_rvq_read(enc_path, 16, 2048, &codes, &T, &err) == 0, "read rvq: %s", err.msg);
        int64_t want_frames = enc.ndim == 2 ? (enc.shape[1] == 16 ? enc.shape[0] : enc.shape[1]) : 0;
        TEST_CHECK(T == want_frames, "encode: %lld frames, want %lld", (long long)T, (long long)want_frames);
        if (codes && T == want_frames) {
            /* the fixture may be [F][16] or [16][F]; compare frame-major */
            int32_t *fm = malloc((size_t)(T * 16) * sizeof *fm);
            for (int64_t t = 0; fm && t < T; t++)
                for (int q = 0; q < 16; q++)
                    fm[t * 16 + q] = enc.shape[1] == 16 ? enc.i[t * 16 + q] : enc.i[q * T + t];
            if (fm) TEST_EQUAL_I32(codes, fm, (size_t)(T * 16), "qtts codec encode == enc_codes");
            free(fm);
        }
        free(codes);
        npy_free(&wave);
        npy_free(&enc);
    } else {
        TEST_CHECK(0, "missing encoder fixtures");
    }

    /* usage errors exit 2, model errors exit 1, with one line */
    golden_path(model, sizeof model, "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny");
    struct {
        const char *args;
        int want;
    } bad[] = {
        {"--speaker ryan --bogus-flag 'hi'", 2},
        {"--speaker ryan --temperature abc 'hi'", 2},
        {"--speaker ryan --ref-text hello 'hi'", 2},
        {"--speaker nobody 'hi'", 1},
        {"--speaker ryan --lang klingon 'hi'", 1},
        {"--ref-spk /nonexistent.spk 'hi'", 1},
        {"--speaker ryan ''", 2},
        {"--speaker ryan --decoder-precision f64 'hi'", 2},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s say -q -m %s -o %s/x.wav %s 2>/dev/null", QTTS_BINARY, model, dir, bad[i].args);
        int rc = run(cmd);
        TEST_CHECK(rc == bad[i].want, "'%s' exited %d, want %d", bad[i].args, rc, bad[i].want);
    }
    snprintf(cmd, sizeof cmd, "cd %s && env -u QTTS_MODEL %s say -q hi 2>/dev/null", dir, QTTS_BINARY);
    TEST_CHECK(run(cmd) == 2, "no model must be a usage error");

    TEST_CHECK(rm_rf(dir) == 0, "cleanup");
    return test_finish("test_cli_say");
}
