/* Voice-cloning front end against the official reference (golden fixtures):
 * mel, every speaker-encoder stage, the x-vector, the Mimi encoder stages and
 * codes, the talker cases' reference waveforms, and the `codec encode` CLI. */
#include <math.h>
#include <sndfile.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "support/test_util.h"
#include "io/spk.h"
#include "io/store.h"
#include "model/codec_encoder.h"
#include "model/config.h"
#include "model/mel.h"
#include "model/speaker_encoder.h"
#include "model/voice.h"
#include "support/npy.h"

/* The CLI front end is not part of the library; compile it in here with the
 * two helpers it takes from main.c. */
#include "cli/cli.h"
void cli_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("qtts: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
const char *cli_model_path(const char *given) {
    if (given && *given) return given;
    const char *env = getenv("QTTS_MODEL");
    return env && *env ? env : NULL;
}
const char *cli_resolve_model(const char *given, char *buf, size_t size) {
    (void)buf, (void)size;
    return cli_model_path(given);
}
#include "../src/cli/cmd_codec_encode.c"
#include "../src/cli/model_files.c"

/* Tolerances. Speaker encoder: 1e-4 absolute (spec'd). Codec encoder
 * hidden states: 1e-4 relative to the tensor's largest magnitude. */
#define SPK_TOL 1e-4

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
    const char *prefix; /* fixture name prefix ("" for the base ones) */
    int checked;
} tap_ctx;

static void compare_tap(void *p, const char *name, const float *data, int64_t d0, int64_t d1) {
    tap_ctx *c = p;
    char fx[160];
    snprintf(fx, sizeof fx, "%s%s", c->prefix, name);
    npy_array a;
    if (npy_load_fixture(fx, &a)) {
        TEST_CHECK(0, "missing fixture %s", fx);
        return;
    }
    TEST_CHECK(a.numel == d0 * d1, "%s: %lld values, fixture has %lld", fx, (long long)(d0 * d1), (long long)a.numel);
    if (a.numel == d0 * d1) {
        double tol = SPK_TOL;
        if (!strncmp(name, "enc_", 4)) {
            double mx = 0;
            for (int64_t i = 0; i < a.numel; i++) mx = fmax(mx, fabs(a.f[i]));
            tol = 1e-4 * fmax(1.0, mx);
        }
        TEST_NEAR(data, a.f, (size_t)a.numel, tol, fx);
        c->checked++;
    }
    npy_free(&a);
}


static void check_codes(const int32_t *got, int64_t frames, int64_t n_q, const char *fixture) {
    npy_array c;
    if (npy_load_fixture(fixture, &c)) {
        TEST_CHECK(0, "missing fixture %s", fixture);
        return;
    }
    TEST_CHECK(c.ndim == 2 && c.shape[0] == frames && c.shape[1] == n_q, "%s: shape [%lld,%lld], got [%lld,%lld]",
               fixture, (long long)c.shape[0], (long long)c.shape[1], (long long)frames, (long long)n_q);
    if (c.numel == frames * n_q) TEST_EQUAL_I32(got, c.i, (size_t)c.numel, fixture);
    npy_free(&c);
}

/* Unpacks the local .rvq layout ([n_q][T], 11-bit LSB-first). */
static void unpack_rvq(const unsigned char *b, int64_t frames, int64_t n_q, int32_t *codes_ft) {
    size_t bit = 0;
    for (int64_t q = 0; q < n_q; q++)
        for (int64_t t = 0; t < frames; t++) {
            int32_t c = 0;
            for (int k = 0; k < 11; k++, bit++) c |= ((b[bit >> 3] >> (bit & 7)) & 1) << k;
            codes_ft[t * n_q + q] = c;
        }
}

int main(void) {
    char base[512], tok[600];
    golden_path(base, sizeof base, "Qwen3-TTS-12Hz-0.6B-Base-tiny");
    snprintf(tok, sizeof tok, "%s/speech_tokenizer", base);
    qtts_err err = {0};
    qtts_model_config mcfg;
    qtts_codec_config ccfg;
    if (qtts_model_config_load(&mcfg, base, &err) || qtts_codec_config_load(&ccfg, tok, &err)) {
        fprintf(stderr, "FAIL config: %s\n", err.msg);
        return 1;
    }
    qtts_store *mst = qtts_store_open(base, &err);
    qtts_store *tst = mst ? qtts_store_open(tok, &err) : NULL;
    qtts_pool *pool = tst ? qtts_pool_create(2, &err) : NULL;
    qtts_spk_encoder *spk = pool ? qtts_spk_encoder_load(mst, &mcfg, &err) : NULL;
    qtts_codec_encoder *enc = spk ? qtts_codec_encoder_load(tst, &ccfg, &err) : NULL;
    if (!enc) {
        fprintf(stderr, "FAIL load: %s\n", err.msg);
        return 1;
    }
    npy_array wav;
    if (npy_load_fixture("input_wave_1p5s", &wav)) return 1;

    /* speaker encoder, stage by stage */
    printf("speaker encoder (input_wave_1p5s, %lld samples):\n", (long long)wav.numel);
    tap_ctx tc = {"", 0};
    int64_t D = qtts_spk_encoder_dim(spk);
    float *xv = malloc((size_t)D * sizeof(float));
    double t0 = now_s();
    int rc = qtts_spk_encoder_embed(spk, pool, wav.f, wav.numel, xv, compare_tap, &tc, &err);
    printf("  (speaker encoder %.1f ms)\n", (now_s() - t0) * 1e3);
    TEST_CHECK(rc == 0, "spk embed: %s", err.msg);
    TEST_CHECK(tc.checked == 8, "expected 8 speaker-encoder stages, compared %d", tc.checked);

    /* codec encoder, 32 and 16 quantizers */
    printf("speech tokenizer encoder:\n");
    int64_t F = qtts_codec_encoder_frames(enc, wav.numel);
    int64_t QA = qtts_codec_encoder_max_quantizers(enc), QV = qtts_codec_encoder_valid_quantizers(enc);
    TEST_CHECK(QA == 32 && QV == 16, "quantizers %lld/%lld", (long long)QA, (long long)QV);
    int32_t *codes = malloc((size_t)(F * QA) * sizeof(int32_t));
    tc.checked = 0;
    t0 = now_s();
    rc = qtts_codec_encoder_encode(enc, pool, wav.f, wav.numel, QA, codes, compare_tap, &tc, &err);
    printf("  (codec encoder %.1f ms)\n", (now_s() - t0) * 1e3);
    TEST_CHECK(rc == 0, "encode: %s", err.msg);
    TEST_CHECK(tc.checked == 3, "expected 3 encoder stages, compared %d", tc.checked);
    if (!rc) check_codes(codes, F, QA, "enc_codes_all32");
    rc = qtts_codec_encoder_encode(enc, pool, wav.f, wav.numel, QV, codes, NULL, NULL, &err);
    TEST_CHECK(rc == 0, "encode16: %s", err.msg);
    if (!rc) check_codes(codes, F, QV, "enc_codes");

    /* very short inputs still give ceil(n / 1920) frames (no crash) */
    {
        const int64_t ns[] = {1, 100, 1919, 1921};
        for (int i = 0; i < 4; i++) {
            int64_t f = qtts_codec_encoder_frames(enc, ns[i]);
            rc = qtts_codec_encoder_encode(enc, pool, wav.f, ns[i], QV, codes, NULL, NULL, &err);
            TEST_CHECK(rc == 0 && f == (ns[i] + 1919) / 1920, "encode %lld samples: rc %d, %lld frames: %s",
                       (long long)ns[i], rc, (long long)f, err.msg);
        }
        rc = qtts_codec_encoder_encode(enc, pool, wav.f, 0, QV, codes, NULL, NULL, &err);
        TEST_CHECK(rc != 0 && strstr(err.msg, "empty"), "0 samples rejected: %s", err.msg);
        rc = qtts_codec_encoder_encode(enc, pool, wav.f, 4000, QA + 1, codes, NULL, NULL, &err);
        TEST_CHECK(rc != 0 && strstr(err.msg, "quantizers"), "too many quantizers rejected: %s", err.msg);
    }

    /* the talker cases' stored reference waveforms */
    const char *cases[] = {"tk_xvec_en", "tk_xvec_auto_nonstream", "tk_icl_en_short_ref", "tk_icl_en_long_ref"};
    for (int c = 0; c < 4; c++) {
        char name[160];
        npy_array rw, want;
        printf("%s:\n", cases[c]);
        snprintf(name, sizeof name, "%s_ref_wav", cases[c]);
        if (npy_load_fixture(name, &rw)) {
            TEST_CHECK(0, "missing %s", name);
            continue;
        }
        qtts_voice_data v;
        int icl = strstr(cases[c], "icl") != NULL;
        rc = qtts_voice_extract(&v, pool, spk, icl ? enc : NULL, rw.f, rw.numel, icl ? "ref text" : NULL, 0, &err);
        TEST_CHECK(rc == 0, "%s: voice: %s", cases[c], err.msg);
        if (!rc) {
            snprintf(name, sizeof name, "%s_spk_embedding", cases[c]);
            if (!npy_load_fixture(name, &want)) {
                TEST_CHECK(want.numel == v.dim, "%s dim", name);
                if (want.numel == v.dim) TEST_NEAR(v.xvec, want.f, (size_t)v.dim, SPK_TOL, name);
                npy_free(&want);
            }
            if (icl) {
                snprintf(name, sizeof name, "%s_ref_codes", cases[c]);
                check_codes(v.codes, v.n_frames, v.n_q, name);
                TEST_CHECK(v.ref_text && !strcmp(v.ref_text, "ref text"), "ref text kept");
            } else {
                TEST_CHECK(v.codes == NULL && v.n_frames == 0, "x-vector-only voice has no codes");
            }
            qtts_voice_free(&v);
        }
        npy_free(&rw);
    }

    /* too-short input is a clear error, not a crash */
    rc = qtts_voice_extract(&(qtts_voice_data){0}, pool, spk, enc, wav.f, 1000, NULL, 0, &err);
    TEST_CHECK(rc != 0 && strstr(err.msg, "too short"), "short reference rejected: %s", err.msg);

    /* CLI: codec encode on a WAV of the test signal -> .rvq + .spk */
    {
        char dir[] = "/tmp/qtts_clone_cli_XXXXXX";
        TEST_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
        char wavp[600], rvq[600], spkp[600];
        snprintf(wavp, sizeof wavp, "%s/ref.wav", dir);
        snprintf(rvq, sizeof rvq, "%s/ref.rvq", dir);
        snprintf(spkp, sizeof spkp, "%s/ref.spk", dir);
        SF_INFO info = {.samplerate = 24000, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_FLOAT};
        SNDFILE *sf = sf_open(wavp, SFM_WRITE, &info);
        TEST_CHECK(sf != NULL, "write wav");
        if (sf) {
            sf_writef_float(sf, wav.f, wav.numel);
            sf_close(sf);
        }
        char *argv[] = {"encode", wavp, "-o", rvq, "--spk", spkp, "--threads", "2", "-m", base, NULL};
        rc = cmd_codec_encode(10, argv);
        TEST_CHECK(rc == 0, "codec encode exit %d", rc);
        unsigned char *b = NULL;
        size_t nb = 0;
        if (!rc && !read_bytes(rvq, &b, &nb)) {
            TEST_CHECK(nb == (size_t)(F * 22), ".rvq is %zu bytes, want %lld", nb, (long long)(F * 22));
            if (nb == (size_t)(F * 22)) {
                unpack_rvq(b, F, 16, codes);
                check_codes(codes, F, 16, "enc_codes");
            }
        }
        free(b);
        int64_t d = 0;
        float *x = rc ? NULL : qtts_spk_read(spkp, D, &d, &err);
        TEST_CHECK(x != NULL, ".spk read: %s", err.msg);
        if (x) {
            npy_array e;
            if (!npy_load_fixture("spk_embedding", &e)) {
                TEST_NEAR(x, e.f, (size_t)D, SPK_TOL, ".spk == spk_embedding");
                npy_free(&e);
            }
            free(x);
        }
        /* wrong-length .spk is refused */
        x = qtts_spk_read(spkp, D + 1, NULL, &err);
        TEST_CHECK(x == NULL && strstr(err.msg, "hidden size"), "wrong .spk length rejected: %s", err.msg);
        free(x);
        /* usage errors */
        char *bad1[] = {"encode", wavp, NULL};
        TEST_CHECK(cmd_codec_encode(2, bad1) == CLI_USAGE, "missing -o is a usage error");
        char *bad2[] = {"encode", "/nonexistent.wav", "-o", rvq, "-m", base, NULL};
        TEST_CHECK(cmd_codec_encode(6, bad2) == CLI_FAIL, "unreadable input fails");
        char *bad3[] = {"encode", wavp, "-o", rvq, "--spk", spkp, "-m", tok, NULL};
        TEST_CHECK(cmd_codec_encode(8, bad3) == CLI_FAIL, "--spk with a tokenizer folder fails");
        unlink(wavp);
        unlink(rvq);
        unlink(spkp);
        rmdir(dir);
    }

    free(codes);
    free(xv);
    npy_free(&wav);
    qtts_codec_encoder_free(enc);
    qtts_spk_encoder_free(spk);
    qtts_pool_free(pool);
    qtts_store_free(tst);
    qtts_store_free(mst);
    return test_finish("test_cloning_golden");
}
