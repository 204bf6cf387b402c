/* `qtts say` as a user runs it: golden waveforms through the binary (f32 WAV
 * read back with libsndfile), pre-extracted voices (.spk/.rvq), usage errors. */
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "audio/encoder.h"
#include "io/rvq.h"
#include "io/spk.h"
#include "support/npy.h"

static int run(const char *cmd) {
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static float *read_wav(const char *path, sf_count_t *n) {
    SF_INFO info = {0};
    SNDFILE *f = sf_open(path, SFM_READ, &info);
    if (!f) return NULL;
    float *buf = malloc((size_t)info.frames * sizeof *buf + 4);
    *n = buf ? sf_readf_float(f, buf, info.frames) : 0;
    sf_close(f);
    return buf;
}

static void compare(const char *wav, const char *fixture, const char *what) {
    npy_array want;
    sf_count_t n = 0;
    float *got = read_wav(wav, &n);
    TEST_CHECK(got != NULL, "%s: could not read %s", what, wav);
    if (!got || npy_load_fixture(fixture, &want)) {
        free(got);
        TEST_CHECK(0, "%s: fixture %s", what, fixture);
        return;
    }
    TEST_CHECK(n == want.numel, "%s: %lld samples, want %lld", what, (long long)n, (long long)want.numel);
    if (n == want.numel) TEST_NEAR(got, want.f, (size_t)n, 1e-4, what);
    free(got);
    npy_free(&want);
}

int main(void) {
    char dir[] = "/tmp/qtts_say_XXXXXX", cmd[4096], model[1024], out[600];
    if (!mkdtemp(dir)) return 1;
    golden_path(model, sizeof model, "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny");
    snprintf(out, sizeof out, "%s/cv.wav", dir);
    snprintf(cmd, sizeof cmd,
             "%s say -q --threads 2 -m %s --speaker Ryan --lang English --text-layout non-streaming --greedy "
             "--max-frames 7 --sample-format f32 -o %s 'She said she would be here by noon.'",
             QTTS_BINARY, model, out);
    TEST_CHECK(run(cmd) == 0, "say (CustomVoice) failed: %s", cmd);
    compare(out, "cv/tk_cv_en_wav", "say CustomVoice cv_en");

    /* Base ICL from the stored x-vector and reference codes (.spk + .rvq) */
    npy_array spk, codes;
    char spk_path[700], rvq_path[700];
    snprintf(spk_path, sizeof spk_path, "%s/ref.spk", dir);
    snprintf(rvq_path, sizeof rvq_path, "%s/ref.rvq", dir);
    qtts_err err = {{0}};
    if (npy_load_fixture("tk_icl_en_short_ref_spk_embedding", &spk) == 0 &&
        npy_load_fixture("tk_icl_en_short_ref_ref_codes", &codes) == 0) {
        TEST_CHECK(qtts_spk_write(spk_path, spk.f, spk.numel, &err) == 0, "spk write: %s", err.msg);
        TEST_CHECK(codes.ndim == 2 && codes.shape[1] == 16, "ref codes shape");
        TEST_CHECK(qtts_rvq_write(rvq_path, codes.i, 16, codes.shape[0], &err) == 0, "rvq write: %s", err.msg);
        golden_path(model, sizeof model, "Qwen3-TTS-12Hz-0.6B-Base-tiny");
        snprintf(out, sizeof out, "%s/icl.wav", dir);
        snprintf(cmd, sizeof cmd,
                 "%s say -q --threads 2 -m %s --ref-spk %s --ref-rvq %s --ref-text 'The quick brown fox.' --lang "
                 "English --greedy --max-frames 12 --sample-format f32 -o %s 'Hello world, this is a test.'",
                 QTTS_BINARY, model, spk_path, rvq_path, out);
        TEST_CHECK(run(cmd) == 0, "say (ICL from .spk/.rvq) failed: %s", cmd);
        compare(out, "tk_icl_en_short_ref_wav", "say Base ICL from .spk/.rvq");
        npy_free(&spk);
        npy_free(&codes);
    } else {
        TEST_CHECK(0, "missing ICL fixtures");
    }

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
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s say -q -m %s -o %s/x.wav %s 2>/dev/null", QTTS_BINARY, model, dir, bad[i].args);
        int rc = run(cmd);
        TEST_CHECK(rc == bad[i].want, "'%s' exited %d, want %d", bad[i].args, rc, bad[i].want);
    }
    snprintf(cmd, sizeof cmd, "cd %s && env -u QTTS_MODEL %s say -q hi 2>/dev/null", dir, QTTS_BINARY);
    TEST_CHECK(run(cmd) == 2, "no model must be a usage error");

    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    TEST_CHECK(run(cmd) == 0, "cleanup");
    return test_finish("test_cli_say");
}
