/* WAV writing: one-shot and streamed (open / append chunks / close) agree,
 * both sample formats, clipping, and errors. */
#include <math.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audio/audio_write.h"
#include "harness.h"

/* Reads a mono WAV as floats; PCM16 as short/32768 (the writer's scale, qtts_f32_to_s16). */
static float *read_back(const char *path, int64_t *n, int *sr, int *sub) {
    SF_INFO info;
    memset(&info, 0, sizeof info);
    SNDFILE *sf = sf_open(path, SFM_READ, &info);
    if (!sf) return NULL;
    float *b = malloc(sizeof(float) * (size_t)(info.frames + 1));
    if ((info.format & SF_FORMAT_SUBMASK) == SF_FORMAT_PCM_16) {
        short *s = malloc(sizeof(short) * (size_t)(info.frames + 1));
        *n = sf_readf_short(sf, s, info.frames);
        for (int64_t i = 0; i < *n; i++) b[i] = s[i] / 32768.0f;
        free(s);
    } else {
        *n = sf_readf_float(sf, b, info.frames);
    }
    *sr = info.samplerate;
    *sub = info.format & SF_FORMAT_SUBMASK;
    TEST_CHECK(info.channels == 1 && (info.format & SF_FORMAT_TYPEMASK) == SF_FORMAT_WAV, "not a mono WAV");
    sf_close(sf);
    return b;
}

/* The one s16 rule: x 32768, round to nearest, clip, NaN -> 0. */
static void check_s16_rule(void) {
    TEST_CHECK(qtts_f32_to_s16(0.5f) == 16384 && qtts_f32_to_s16(-1.0f) == -32768 && qtts_f32_to_s16(1.0f) == 32767 &&
                   qtts_f32_to_s16(2.0f) == 32767 && qtts_f32_to_s16(-3.0f) == -32768 &&
                   qtts_f32_to_s16(0.0f / 0.0f) == 0 && qtts_f32_to_s16(1.6f / 32768.0f) == 2,
               "qtts_f32_to_s16 follows x*32768, round, clip");
}

int main(void) {
    check_s16_rule();
    qtts_err err = {0};
    char a[128], b[128];
    snprintf(a, sizeof a, "/tmp/qtts_aw_a_%d.wav", (int)getpid());
    snprintf(b, sizeof b, "/tmp/qtts_aw_b_%d.wav", (int)getpid());
    int64_t n = 5000;
    float *x = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = 0.8f * sinf((float)i * 0.05f);
    x[10] = 1.7f; /* clipped in s16, kept in f32 */
    x[11] = -3.0f;
    for (int f = 0; f < 2; f++) {
        qtts_sample_format fmt = f ? QTTS_SAMPLE_F32 : QTTS_SAMPLE_S16;
        TEST_CHECK(qtts_wav_write(a, x, n, 24000, fmt, &err) == 0, "write: %s", err.msg);
        qtts_wav_writer *w = qtts_wav_open(b, 24000, fmt, &err);
        TEST_CHECK(w != NULL, "open: %s", err.msg);
        for (int64_t off = 0, c = 1; w && off < n; off += c, c = c * 3 + 1) {
            int64_t m = off + c > n ? n - off : c;
            TEST_CHECK(qtts_wav_append(w, x + off, m, &err) == 0, "append: %s", err.msg);
        }
        TEST_CHECK(w && qtts_wav_frames_written(w) == n, "frames written");
        TEST_CHECK(qtts_wav_close(w, &err) == 0, "close: %s", err.msg);
        int64_t na = 0, nb = 0;
        int sra = 0, srb = 0, suba = 0, subb = 0;
        float *ra = read_back(a, &na, &sra, &suba), *rb = read_back(b, &nb, &srb, &subb);
        TEST_CHECK(ra && rb && na == n && nb == n && sra == 24000 && srb == 24000, "read back");
        TEST_CHECK(suba == (f ? SF_FORMAT_FLOAT : SF_FORMAT_PCM_16) && subb == suba, "format %x %x", suba, subb);
        if (ra && rb && na == n && nb == n) {
            TEST_NEAR(rb, ra, (size_t)n, 0.0, "streamed == one-shot");
            if (f) {
                TEST_NEAR(ra, x, (size_t)n, 0.0, "f32 exact");
            } else {
                TEST_CHECK(ra[10] > 0.999f && ra[11] < -0.999f, "s16 clips (%g %g)", ra[10], ra[11]);
                ra[10] = x[10];
                ra[11] = x[11];
                TEST_NEAR(ra, x, (size_t)n, 0.5 / 32768 + 1e-7, "s16 rounds to nearest");
            }
        }
        free(ra);
        free(rb);
    }
    qtts_sample_format fmt;
    TEST_CHECK(qtts_sample_format_parse("f32", &fmt) == 0 && fmt == QTTS_SAMPLE_F32, "parse f32");
    TEST_CHECK(qtts_sample_format_parse("s16", &fmt) == 0 && fmt == QTTS_SAMPLE_S16, "parse s16");
    TEST_CHECK(qtts_sample_format_parse("u8", &fmt) == -1, "parse u8 rejected");
    TEST_CHECK(qtts_wav_open("/nonexistent/dir/x.wav", 24000, QTTS_SAMPLE_S16, &err) == NULL &&
                   strstr(err.msg, "/nonexistent/dir/x.wav"),
               "bad path: '%s'", err.msg);
    TEST_CHECK(qtts_wav_open(a, 0, QTTS_SAMPLE_S16, &err) == NULL && strstr(err.msg, "sample rate"), "rate 0: '%s'",
               err.msg);
    unlink(a);
    unlink(b);
    free(x);
    return test_finish("test_audio_write");
}
