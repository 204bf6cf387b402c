/* The audio functions of include/qtts.h: encoders into memory (streaming and
 * whole-file) and to files, readers from files and memory, and the status
 * each kind of bad argument or bad audio gets. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "qtts.h"
#include "support/test_util.h"

enum { RATE = 24000, N = 12000 };

static void tone(float *x, size_t n, int channels) {
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < channels; c++)
            x[i * channels + c] = 0.5f * sinf(2.0f * 3.14159265f * (220.0f + 110.0f * c) * (float)i / RATE);
}

typedef struct {
    unsigned char *d;
    size_t n;
} bytes;

static void append(bytes *b, const void *p, size_t n) {
    if (!n) return;
    unsigned char *d = realloc(b->d, b->n + n + 1);
    if (!d) return;
    memcpy(d + b->n, p, n);
    b->d = d;
    b->n += n;
}

/* Encodes x in chunks of 1000 frames; streaming encoders are drained after every write. */
static int encode(const char *fmt, const char *sfmt, int streaming, const float *x, size_t n, bytes *out) {
    qtts_error err = {0};
    memset(out, 0, sizeof *out);
    qtts_audio_encoder *enc = qtts_audio_encoder_new(fmt, sfmt, RATE, 1, streaming, &err);
    TEST_CHECK(enc != NULL, "%s encoder: %s", fmt, err.message);
    if (!enc) return -1;
    int took_early = 0;
    for (size_t i = 0; i < n; i += 1000) {
        size_t k = n - i < 1000 ? n - i : 1000;
        TEST_CHECK(qtts_audio_encoder_write(enc, x + i, k, &err) == QTTS_OK, "%s write: %s", fmt, err.message);
        size_t got = 0;
        const void *p = qtts_audio_encoder_take(enc, &got);
        if (got) took_early = 1, append(out, p, got);
        TEST_CHECK(!(p == NULL) == (got > 0), "%s: take returns a pointer exactly when it has bytes", fmt);
    }
    if (!streaming) TEST_CHECK(!took_early, "%s: a whole-file encoder gave bytes before finish", fmt);
    TEST_CHECK(qtts_audio_encoder_finish(enc, &err) == QTTS_OK, "%s finish: %s", fmt, err.message);
    size_t got = 0;
    const void *p = qtts_audio_encoder_take(enc, &got);
    append(out, p, got);
    p = qtts_audio_encoder_take(enc, &got);
    TEST_CHECK(p == NULL && got == 0, "%s: a second take after finish gives nothing", fmt);
    TEST_CHECK(qtts_audio_encoder_write(enc, x, 1, &err) == QTTS_ERR_INVALID, "%s: write after finish", fmt);
    qtts_audio_encoder_free(enc);
    TEST_CHECK(out->n > 0, "%s: no bytes", fmt);
    return 0;
}

static unsigned le32(const unsigned char *p) { return p[0] | p[1] << 8 | p[2] << 16 | (unsigned)p[3] << 24; }

static void check_wav_exact(const float *x) {
    bytes whole, streamed;
    encode("wav", "f32", 0, x, N, &whole);
    encode("wav", "f32", 1, x, N, &streamed);
    TEST_CHECK(whole.n == streamed.n && whole.n > 44, "wav sizes %zu vs %zu", whole.n, streamed.n);
    if (whole.n > 44) {
        TEST_CHECK(le32(whole.d + 4) == whole.n - 8, "whole-file WAV: RIFF size %u, want %zu", le32(whole.d + 4),
                   whole.n - 8);
        TEST_CHECK(le32(streamed.d + 4) == 0xFFFFFFFFu, "streamed WAV: RIFF size 'unknown', got %u",
                   le32(streamed.d + 4));
    }
    for (int k = 0; k < 2; k++) {
        const bytes *b = k ? &streamed : &whole;
        qtts_audio_data a;
        qtts_error err = {0};
        qtts_status st = qtts_audio_decode(b->d, b->n, 0, 0, &a, &err);
        TEST_CHECK(st == QTTS_OK, "decode wav: %s", err.message);
        if (st) continue;
        TEST_CHECK(a.n == N && a.sample_rate == RATE && a.source_rate == RATE && a.source_channels == 1,
                   "wav read back: %zu samples at %d Hz", a.n, a.sample_rate);
        if (a.n == N) TEST_NEAR(a.samples, x, N, 0.0, k ? "streamed f32 wav == input" : "f32 wav == input");
        qtts_audio_data_free(&a);
    }
    free(whole.d);
    free(streamed.d);
}

/* Every format encodes both ways; those libsndfile reads decode to the tone. */
static void check_formats(const float *x) {
    const struct {
        const char *name;
        int readable;
        double tol; /* max abs error after decoding; 0: only the length is checked (lossy codecs' delay) */
    } formats[] = {{"wav", 1, 1.0 / 32768}, {"flac", 1, 1.0 / 32768},
                   {"pcm", 0, 0},           {"opus", 1, 0},
                   {"vorbis", 1, 0},        {"mp3", 1, 0},
                   {"aac", 0, 0},           {"m4a", 0, 0}};
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
        for (int streaming = 0; streaming < 2; streaming++) {
            bytes b;
            if (encode(formats[f].name, NULL, streaming, x, N, &b)) continue;
            if (!strcmp(formats[f].name, "pcm")) TEST_CHECK(b.n == 2 * N, "pcm s16: %zu bytes, want %d", b.n, 2 * N);
            if (formats[f].readable) {
                qtts_audio_data a;
                qtts_error err = {0};
                qtts_status st = qtts_audio_decode(b.d, b.n, 0, 0, &a, &err);
                TEST_CHECK(st == QTTS_OK, "%s (streaming %d) does not decode: %s", formats[f].name, streaming,
                           err.message);
                if (st == QTTS_OK) {
                    /* lossy codecs pad to whole frames and add their delay */
                    TEST_CHECK(a.n >= N * 9 / 10 && a.n <= N + 4096, "%s: %zu samples, want about %d", formats[f].name,
                               a.n, N);
                    if (formats[f].tol > 0 && a.n == N) TEST_NEAR(a.samples, x, N, formats[f].tol, formats[f].name);
                    qtts_audio_data_free(&a);
                }
            }
            free(b.d);
        }
    }
}

static void check_encoder_errors(void) {
    qtts_error err = {0};
    struct {
        const char *fmt, *sfmt;
        int rate, channels;
    } bad[] = {{"xyz", NULL, RATE, 1},   {NULL, NULL, RATE, 1}, {"mp3", "s16", RATE, 1}, {"wav", "s24", RATE, 1},
               {"opus", NULL, 22050, 1}, {"wav", NULL, 0, 1},   {"wav", NULL, RATE, 0},  {"flac", NULL, -5, 1}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&err, 0, sizeof err);
        qtts_audio_encoder *e = qtts_audio_encoder_new(bad[i].fmt, bad[i].sfmt, bad[i].rate, bad[i].channels, 0, &err);
        TEST_CHECK(e == NULL && err.status == QTTS_ERR_INVALID && err.message[0],
                   "encoder %s/%s at %d Hz x %d: want QTTS_ERR_INVALID, got %s (%s)", bad[i].fmt ? bad[i].fmt : "NULL",
                   bad[i].sfmt ? bad[i].sfmt : "NULL", bad[i].rate, bad[i].channels, qtts_status_name(err.status),
                   err.message);
        qtts_audio_encoder_free(e);
    }
    size_t n = 1;
    TEST_CHECK(qtts_audio_encoder_take(NULL, &n) == NULL && n == 0, "take(NULL)");
    qtts_audio_encoder_free(NULL);
}

static void check_files(const char *dir, const float *x) {
    char path[512];
    qtts_error err = {0};
    /* stereo f32 wav: read back as the channels' mean */
    float *st = malloc(sizeof(float) * 2 * N), *mean = malloc(sizeof(float) * N);
    tone(st, N, 2);
    for (size_t i = 0; i < N; i++) mean[i] = (st[2 * i] + st[2 * i + 1]) / 2;
    snprintf(path, sizeof path, "%s/stereo.wav", dir);
    TEST_CHECK(qtts_audio_save(path, NULL, "f32", st, N, RATE, 2, &err) == QTTS_OK, "save stereo: %s", err.message);
    qtts_audio_data a;
    TEST_CHECK(qtts_audio_read(path, 0, 0, &a, &err) == QTTS_OK, "read stereo: %s", err.message);
    TEST_CHECK(a.n == N && a.source_channels == 2, "stereo read: %zu samples, %d channels", a.n, a.source_channels);
    if (a.n == N) TEST_NEAR(a.samples, mean, N, 1e-7, "stereo wav read as the channels' mean");
    qtts_audio_data_free(&a);
    /* resampled on reading: librosa's length ceil(n * out / in) */
    TEST_CHECK(qtts_audio_read(path, 16000, 0, &a, &err) == QTTS_OK, "read at 16 kHz: %s", err.message);
    TEST_CHECK(a.n == N * 2 / 3 && a.sample_rate == 16000 && a.source_rate == RATE, "16 kHz read: %zu at %d", a.n,
               a.sample_rate);
    qtts_audio_data_free(&a);
    /* a limit below the file's length */
    TEST_CHECK(qtts_audio_read(path, 0, 0.25, &a, &err) == QTTS_ERR_INVALID && strstr(err.message, "too long"),
               "0.5 s file with max_seconds 0.25: %s", err.message);
    TEST_CHECK(a.samples == NULL && a.n == 0, "a failed read leaves the output empty");
    /* the format from the extension, or given */
    snprintf(path, sizeof path, "%s/tone.flac", dir);
    TEST_CHECK(qtts_audio_save(path, NULL, NULL, x, N, RATE, 1, &err) == QTTS_OK, "save flac: %s", err.message);
    TEST_CHECK(qtts_audio_read(path, 0, 0, &a, &err) == QTTS_OK && a.n == N, "read flac: %s", err.message);
    qtts_audio_data_free(&a);
    snprintf(path, sizeof path, "%s/tone.audio", dir);
    TEST_CHECK(qtts_audio_save(path, NULL, NULL, x, N, RATE, 1, &err) == QTTS_ERR_INVALID, "unknown extension: %s",
               err.message);
    TEST_CHECK(qtts_audio_save(path, "wav", NULL, x, N, RATE, 1, &err) == QTTS_OK, "format given: %s", err.message);
    TEST_CHECK(qtts_audio_read(path, 0, 0, &a, &err) == QTTS_OK && a.n == N, "read: %s", err.message);
    qtts_audio_data_free(&a);
    snprintf(path, sizeof path, "%s/no/such/dir/x.wav", dir);
    qtts_status s = qtts_audio_save(path, NULL, NULL, x, N, RATE, 1, &err);
    TEST_CHECK(s != QTTS_OK && s != QTTS_ERR_INVALID && strstr(err.message, "no/such"),
               "save into a missing folder: %s (%s)", qtts_status_name(s), err.message);
    /* missing, not audio, empty */
    TEST_CHECK(qtts_audio_read(path, 0, 0, &a, &err) == QTTS_ERR_NOT_FOUND, "missing file: %s",
               qtts_status_name(err.status));
    snprintf(path, sizeof path, "%s/notes.txt", dir);
    write_text_file(path, "these are not audio samples, just text");
    TEST_CHECK(qtts_audio_read(path, 0, 0, &a, &err) == QTTS_ERR_INVALID && err.message[0], "text file as audio: %s",
               err.message);
    const char junk[] = "RIFF\x10\0\0\0WAVEfmt garbage";
    TEST_CHECK(qtts_audio_decode(junk, sizeof junk, 0, 0, &a, &err) == QTTS_ERR_INVALID, "corrupt WAV bytes: %s",
               err.message);
    TEST_CHECK(qtts_audio_decode(junk, 0, 0, 0, &a, &err) == QTTS_ERR_INVALID, "empty bytes: %s", err.message);
    TEST_CHECK(qtts_audio_decode(junk, sizeof junk, -1, 0, &a, &err) == QTTS_ERR_INVALID, "negative rate");
    free(st);
    free(mean);
}

int main(void) {
    float *x = malloc(sizeof(float) * N);
    tone(x, N, 1);
    check_wav_exact(x);
    check_formats(x);
    check_encoder_errors();
    char dir[] = "/tmp/qtts_audio_api.XXXXXX";
    TEST_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    check_files(dir, x);
    rm_rf(dir);
    free(x);
    return test_finish("test_audio_api");
}
