/* Reference-audio reader: formats, memory buffers, resampling, downmix, and
 * bad inputs (truncated, empty, NaN/Inf, too short, too long, garbage), plus
 * the x-vector similarity of the same reference stored as 48 kHz stereo FLAC
 * and 16 kHz MP3 against the 24 kHz original. Test files are written with
 * libsndfile into a temporary folder. */
#include <fcntl.h>
#include <math.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audio/audio_read.h"
#include "harness.h"
#include "support/test_util.h"
#include "io/store.h"
#include "model/config.h"
#include "model/speaker_encoder.h"
#include "support/npy.h"

static char g_dir[64];

static const char *tmp(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", g_dir, name);
    return buf;
}

/* Writes interleaved float frames with libsndfile; returns 0 on success. */
static int write_audio(const char *path, int format, int rate, int channels, const float *x, int64_t frames) {
    SF_INFO info = {.samplerate = rate, .channels = channels, .format = format};
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    if (!sf) {
        fprintf(stderr, "  (cannot write %s: %s)\n", path, sf_strerror(NULL));
        return -1;
    }
    sf_count_t w = sf_writef_float(sf, x, frames);
    sf_close(sf);
    return w == frames ? 0 : -1;
}

static int write_bytes(const char *path, const void *b, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(b, 1, n, f);
    fclose(f);
    return w == n ? 0 : -1;
}

static double cosine(const float *a, const float *b, int64_t n) {
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < n; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    return ab / sqrt(aa * bb);
}

/* Expects a failure whose message contains `want`. */
static void expect_fail(int rc, const qtts_err *err, const char *want, const char *what) {
    TEST_CHECK(rc != 0, "%s: expected an error", what);
    if (rc) {
        TEST_CHECK(strstr(err->msg, want) != NULL, "%s: error '%s' does not mention '%s'", what, err->msg, want);
        printf("  ok   %-40s -> \"%s\"\n", what, err->msg);
    }
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/qtts_audio_XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    qtts_err err = {0};
    char p[256], q[256];
    npy_array wav;
    if (npy_load_fixture("input_wave_1p5s", &wav)) return 1;
    int64_t n = wav.numel;
    qtts_audio_opts o;
    qtts_audio_opts_default(&o);
    qtts_audio a = {0};

    /* 24 kHz float WAV: bit-exact round trip, from a file and from memory */
    printf("formats:\n");
    TEST_CHECK(!write_audio(tmp(p, sizeof p, "ref24.wav"), SF_FORMAT_WAV | SF_FORMAT_FLOAT, 24000, 1, wav.f, n), "w");
    int rc = qtts_audio_read_file(p, &o, &a, &err);
    TEST_CHECK(rc == 0 && a.n == n, "float wav read: %s", err.msg);
    if (!rc && a.n == n) TEST_NEAR(a.samples, wav.f, (size_t)n, 0.0, "24k float WAV round trip");
    qtts_audio_free(&a);
    unsigned char *bytes = NULL;
    size_t nbytes = 0;
    TEST_CHECK(!read_bytes(p, &bytes, &nbytes), "read bytes");
    rc = qtts_audio_read_memory(bytes, nbytes, "upload", &o, &a, &err);
    TEST_CHECK(rc == 0 && a.n == n, "memory read: %s", err.msg);
    if (!rc && a.n == n) TEST_NEAR(a.samples, wav.f, (size_t)n, 0.0, "24k float WAV from memory");
    qtts_audio_free(&a);

    /* PCM16 / PCM24 / PCM32 WAV: quantisation error only */
    const struct {
        int fmt;
        const char *name;
        double tol;
    } pcm[] = {{SF_FORMAT_PCM_16, "PCM16 WAV", 2.0 / 32768},
               {SF_FORMAT_PCM_24, "PCM24 WAV", 1.0 / 8388608 + 1e-7},
               {SF_FORMAT_PCM_32, "PCM32 WAV", 1e-7}};
    for (int i = 0; i < 3; i++) {
        TEST_CHECK(!write_audio(tmp(p, sizeof p, "pcm.wav"), SF_FORMAT_WAV | pcm[i].fmt, 24000, 1, wav.f, n), "w");
        rc = qtts_audio_read_file(p, &o, &a, &err);
        TEST_CHECK(rc == 0 && a.n == n, "%s: %s", pcm[i].name, err.msg);
        if (!rc && a.n == n) TEST_NEAR(a.samples, wav.f, (size_t)n, pcm[i].tol, pcm[i].name);
        qtts_audio_free(&a);
    }

    /* 48 kHz stereo FLAC and 16 kHz MP3 of the same reference */
    float *up = NULL, *down = NULL;
    int64_t n_up = 0, n_down = 0;
    TEST_CHECK(!qtts_audio_resample(wav.f, n, 24000, 48000, &up, &n_up, &err), "resample up: %s", err.msg);
    TEST_CHECK(!qtts_audio_resample(wav.f, n, 24000, 16000, &down, &n_down, &err), "resample down: %s", err.msg);
    TEST_CHECK(n_up == 2 * n && n_down == n * 2 / 3, "resampled lengths %lld %lld", (long long)n_up,
               (long long)n_down);
    float *stereo = malloc((size_t)n_up * 2 * sizeof(float));
    for (int64_t i = 0; i < n_up; i++) {
        /* different channels: the mean is the signal */
        stereo[2 * i] = up[i] * 1.25f;
        stereo[2 * i + 1] = up[i] * 0.75f;
    }
    qtts_audio flac = {0}, mp3 = {0};
    TEST_CHECK(!write_audio(tmp(p, sizeof p, "ref48.flac"), SF_FORMAT_FLAC | SF_FORMAT_PCM_24, 48000, 2, stereo, n_up),
               "write flac");
    rc = qtts_audio_read_file(p, &o, &flac, &err);
    TEST_CHECK(rc == 0 && flac.n == n && flac.source_rate == 48000 && flac.source_channels == 2,
               "48k stereo flac read: %s (n %lld)", err.msg, (long long)flac.n);
    if (!rc) {
        /* 24k -> 48k -> 24k through soxr HQ stays close to the original */
        double worst = 0;
        for (int64_t i = 100; i < n - 100 && i < flac.n; i++) worst = fmax(worst, fabs(flac.samples[i] - wav.f[i]));
        /* the test signal has a chirp up to Nyquist, which the HQ filters attenuate */
        printf("  48k stereo FLAC -> 24k mono: max|diff| vs original %.3g (interior)\n", worst);
        TEST_CHECK(worst < 0.1, "flac round trip diff %.3g", worst);
    }
    int have_mp3 = !write_audio(tmp(q, sizeof q, "ref16.mp3"), SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 16000, 1,
                                down, n_down);
    if (have_mp3) {
        rc = qtts_audio_read_file(q, &o, &mp3, &err);
        TEST_CHECK(rc == 0 && mp3.source_rate == 16000, "16k mp3 read: %s", err.msg);
        printf("  16k MP3 -> 24k: %lld samples (original %lld)\n", (long long)mp3.n,
               (long long)n);
        /* the same MP3 from memory (HTTP uploads) */
        unsigned char *mb = NULL;
        size_t mn = 0;
        qtts_audio m2 = {0};
        TEST_CHECK(!read_bytes(q, &mb, &mn), "read mp3 bytes");
        rc = qtts_audio_read_memory(mb, mn, "mp3 upload", &o, &m2, &err);
        TEST_CHECK(rc == 0 && m2.n == mp3.n, "mp3 from memory: %s", err.msg);
        if (!rc && m2.n == mp3.n) TEST_NEAR(m2.samples, mp3.samples, (size_t)m2.n, 0.0, "MP3 file == MP3 memory");
        qtts_audio_free(&m2);
        free(mb);
    } else {
        printf("  NOTE: this libsndfile cannot write MP3; MP3 check skipped\n");
    }
    /* OGG Opus (48 kHz) and OGG Vorbis decode too */
    {
        qtts_audio og = {0};
        if (!write_audio(tmp(p, sizeof p, "ref48.opus"), SF_FORMAT_OGG | SF_FORMAT_OPUS, 48000, 2, stereo, n_up)) {
            rc = qtts_audio_read_file(p, &o, &og, &err);
            TEST_CHECK(rc == 0 && og.n > n / 2, "opus read: %s", err.msg);
            printf("  ok   OGG Opus 48 kHz stereo -> %lld samples at 24 kHz\n", (long long)og.n);
            qtts_audio_free(&og);
        } else {
            printf("  NOTE: this libsndfile cannot write OGG Opus; skipped\n");
        }
        if (!write_audio(tmp(p, sizeof p, "ref24.ogg"), SF_FORMAT_OGG | SF_FORMAT_VORBIS, 24000, 1, wav.f, n)) {
            rc = qtts_audio_read_file(p, &o, &og, &err);
            TEST_CHECK(rc == 0 && og.n == n, "vorbis read: %s (n %lld)", err.msg, (long long)og.n);
            printf("  ok   OGG Vorbis 24 kHz -> %lld samples\n", (long long)og.n);
            qtts_audio_free(&og);
        }
    }

    /* x-vector similarity to the 24 kHz original (tiny random-weight model) */
    {
        char base[512];
        golden_path(base, sizeof base, "Qwen3-TTS-12Hz-0.6B-Base-tiny");
        qtts_model_config cfg;
        qtts_store *st = NULL;
        qtts_spk_encoder *spk = NULL;
        qtts_pool *pool = NULL;
        if (!qtts_model_config_load(&cfg, base, &err) && (st = qtts_store_open(base, &err)) &&
            (pool = qtts_pool_create(2, &err)) && (spk = qtts_spk_encoder_load(st, &cfg, &err))) {
            int64_t D = qtts_spk_encoder_dim(spk);
            float *x0 = malloc((size_t)D * 4), *x1 = malloc((size_t)D * 4), *x2 = malloc((size_t)D * 4);
            TEST_CHECK(!qtts_spk_encoder_embed(spk, pool, wav.f, n, x0, NULL, NULL, &err), "embed: %s", err.msg);
            if (flac.samples) {
                TEST_CHECK(!qtts_spk_encoder_embed(spk, pool, flac.samples, flac.n, x1, NULL, NULL, &err), "e");
                double c = cosine(x0, x1, D);
                printf("  x-vector cosine similarity, 48 kHz stereo FLAC vs 24 kHz: %.6f\n", c);
                TEST_CHECK(c > 0.99, "flac cosine %.4f", c);
            }
            if (mp3.samples) {
                TEST_CHECK(!qtts_spk_encoder_embed(spk, pool, mp3.samples, mp3.n, x2, NULL, NULL, &err), "e");
                double c = cosine(x0, x2, D);
                printf("  x-vector cosine similarity, 16 kHz MP3 vs 24 kHz: %.6f\n", c);
                /* the tiny random-weight encoder is not trained to be codec-robust, and
                 * 16 kHz removes everything above 8 kHz: compare with a lossless 16 kHz WAV */
                qtts_audio w16 = {0};
                TEST_CHECK(!write_audio(tmp(p, sizeof p, "ref16.wav"), SF_FORMAT_WAV | SF_FORMAT_FLOAT, 16000, 1,
                                        down, n_down),
                           "w");
                if (!qtts_audio_read_file(p, &o, &w16, &err) &&
                    !qtts_spk_encoder_embed(spk, pool, w16.samples, w16.n, x1, NULL, NULL, &err)) {
                    double c16 = cosine(x0, x1, D);
                    printf("  x-vector cosine similarity, 16 kHz lossless WAV vs 24 kHz: %.6f\n", c16);
                    TEST_CHECK(c16 > 0.8, "16k wav cosine %.4f", c16);
                }
                qtts_audio_free(&w16);
                TEST_CHECK(c > 0.75, "mp3 cosine %.4f", c);
            }
            /* silence is valid audio: it gives a finite x-vector */
            float *zeros = calloc((size_t)n, sizeof(float));
            TEST_CHECK(!write_audio(tmp(p, sizeof p, "silence.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 24000, 1,
                                    zeros, n),
                       "w");
            rc = qtts_audio_read_file(p, &o, &a, &err);
            TEST_CHECK(rc == 0, "silence read: %s", err.msg);
            if (!rc) {
                rc = qtts_spk_encoder_embed(spk, pool, a.samples, a.n, x1, NULL, NULL, &err);
                int finite = 1;
                for (int64_t i = 0; i < D; i++) finite &= isfinite(x1[i]) != 0;
                TEST_CHECK(rc == 0 && finite, "silence gives a finite x-vector: %s", err.msg);
                printf("  ok   silence accepted (finite x-vector)\n");
            }
            qtts_audio_free(&a);
            free(zeros);
            free(x0);
            free(x1);
            free(x2);
        } else {
            TEST_CHECK(0, "load speaker encoder: %s", err.msg);
        }
        qtts_spk_encoder_free(spk);
        qtts_pool_free(pool);
        qtts_store_free(st);
    }
    qtts_audio_free(&flac);
    qtts_audio_free(&mp3);
    free(stereo);

    /* resampler: a 1 kHz sine survives 24k -> 48k -> 24k almost exactly; lengths follow librosa */
    {
        int64_t ns = 24000;
        float *sine = malloc((size_t)ns * sizeof(float)), *u = NULL, *d = NULL;
        int64_t nu = 0, nd = 0;
        for (int64_t i = 0; i < ns; i++) sine[i] = 0.5f * sinf(2.0f * (float)M_PI * 1000.0f * (float)i / 24000.0f);
        TEST_CHECK(!qtts_audio_resample(sine, ns, 24000, 48000, &u, &nu, &err), "up");
        TEST_CHECK(!qtts_audio_resample(u, nu, 48000, 24000, &d, &nd, &err), "down");
        if (d && nd == ns) TEST_NEAR(d + 1000, sine + 1000, (size_t)(ns - 2000), 1e-4, "1 kHz sine 24k->48k->24k");
        free(sine);
        free(u);
        free(d);
    }
    {
        float *y = NULL;
        int64_t ny = 0;
        float *z = calloc(44101, sizeof(float));
        TEST_CHECK(!qtts_audio_resample(z, 44101, 44100, 24000, &y, &ny, &err), "44.1k: %s", err.msg);
        free(z);
        TEST_CHECK(ny == (int64_t)ceil(44101.0 * (24000.0 / 44100.0)), "44.1k length %lld", (long long)ny);
        free(y);
        TEST_CHECK(!qtts_audio_resample(wav.f, 7, 8000, 24000, &y, &ny, &err), "tiny: %s", err.msg);
        TEST_CHECK(ny == 21, "8k->24k of 7 samples gives %lld", (long long)ny);
        free(y);
    }

    /* bad inputs */
    printf("bad inputs:\n");
    TEST_CHECK(!write_audio(tmp(p, sizeof p, "good.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 24000, 1, wav.f, n), "w");
    free(bytes);
    TEST_CHECK(!read_bytes(p, &bytes, &nbytes), "read");
    /* truncated inside the header */
    write_bytes(tmp(q, sizeof q, "trunc_hdr.wav"), bytes, 20);
    expect_fail(qtts_audio_read_file(q, &o, &a, &err), &err, "cannot read audio", "WAV truncated to 20 bytes");
    expect_fail(qtts_audio_read_memory(bytes, 20, "upload", &o, &a, &err), &err, "upload", "20-byte upload");
    /* truncated inside the data: libsndfile reports the real length; the rest decodes */
    write_bytes(tmp(q, sizeof q, "trunc_data.wav"), bytes, 44 + 2 * 10000);
    rc = qtts_audio_read_file(q, &o, &a, &err);
    TEST_CHECK(rc == 0 && a.n == 10000, "data-truncated WAV decodes its %lld samples: %s", (long long)a.n, err.msg);
    printf("  ok   WAV truncated in the data reads the %lld samples present\n", (long long)a.n);
    qtts_audio_free(&a);
    /* truncated FLAC */
    {
        unsigned char *fb = NULL;
        size_t fn = 0;
        tmp(p, sizeof p, "ref48.flac");
        if (!read_bytes(p, &fb, &fn)) {
            write_bytes(tmp(q, sizeof q, "trunc.flac"), fb, 30);
            expect_fail(qtts_audio_read_file(q, &o, &a, &err), &err, "trunc.flac", "FLAC truncated to 30 bytes");
            qtts_audio_free(&a);
            write_bytes(q, fb, fn / 2);
            rc = qtts_audio_read_file(q, &o, &a, &err);
            printf("  ok   FLAC cut in half: %s\n", rc ? err.msg : "decodes the frames present");
            TEST_CHECK(rc != 0 || (a.n > 0 && a.n < n), "half FLAC: rc %d n %lld", rc, (long long)a.n);
            qtts_audio_free(&a);
        }
        free(fb);
    }
    /* zero-length file and zero-length upload */
    write_bytes(tmp(q, sizeof q, "empty.wav"), bytes, 0);
    expect_fail(qtts_audio_read_file(q, &o, &a, &err), &err, "cannot read audio", "zero-length file");
    expect_fail(qtts_audio_read_memory(bytes, 0, "upload", &o, &a, &err), &err, "empty", "zero-length upload");
    /* a valid WAV with no frames */
    TEST_CHECK(!write_audio(tmp(q, sizeof q, "noframes.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 24000, 1, wav.f, 0),
               "w");
    expect_fail(qtts_audio_read_file(q, &o, &a, &err), &err, "no audio samples", "WAV with 0 frames");
    /* garbage */
    unsigned char junk[4096];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)(i * 2654435761u >> 13);
    expect_fail(qtts_audio_read_memory(junk, sizeof junk, "upload", &o, &a, &err), &err, "upload", "random bytes");
    expect_fail(qtts_audio_read_file("/nonexistent/x.wav", &o, &a, &err), &err, "x.wav", "missing file");
    /* NaN and Inf in a float WAV */
    {
        float *bad = malloc((size_t)n * sizeof(float));
        memcpy(bad, wav.f, (size_t)n * sizeof(float));
        bad[12345] = NAN;
        TEST_CHECK(!write_audio(tmp(q, sizeof q, "nan.wav"), SF_FORMAT_WAV | SF_FORMAT_FLOAT, 24000, 1, bad, n), "w");
        expect_fail(qtts_audio_read_file(q, &o, &a, &err), &err, "NaN", "float WAV with a NaN");
        bad[12345] = INFINITY;
        TEST_CHECK(!write_audio(q, SF_FORMAT_WAV | SF_FORMAT_FLOAT, 24000, 1, bad, n), "w");
        expect_fail(qtts_audio_read_file(q, &o, &a, &err), &err, "infinite", "float WAV with +Inf");
        expect_fail(qtts_audio_from_samples(bad, n, 1, 24000, "samples", &o, &a, &err), &err, "infinite",
                    "raw samples with +Inf");
        free(bad);
    }
    /* too short for ICL (one 1920-sample frame) */
    {
        qtts_audio_opts so = o;
        so.min_samples = 1920;
        TEST_CHECK(!write_audio(tmp(q, sizeof q, "short.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 24000, 1, wav.f, 1000),
                   "w");
        expect_fail(qtts_audio_read_file(q, &so, &a, &err), &err, "too short", "1000-sample WAV, min 1920");
        /* 1000 samples at 8 kHz = 3000 at 24 kHz: long enough after resampling */
        TEST_CHECK(!write_audio(q, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 8000, 1, wav.f, 1000), "w");
        rc = qtts_audio_read_file(q, &so, &a, &err);
        TEST_CHECK(rc == 0 && a.n == 3000, "8k short clip resampled to %lld: %s", (long long)a.n, err.msg);
        qtts_audio_free(&a);
    }
    /* too long: a real 61 s file, and a 10-hour header */
    {
        qtts_audio_opts lo = o;
        lo.max_seconds = 60.0;
        int64_t n61 = 61 * 8000;
        float *z = calloc((size_t)n61, sizeof(float));
        TEST_CHECK(!write_audio(tmp(q, sizeof q, "long.wav"), SF_FORMAT_WAV | SF_FORMAT_PCM_16, 8000, 1, z, n61), "w");
        expect_fail(qtts_audio_read_file(q, &lo, &a, &err), &err, "too long", "61 s WAV, limit 60 s");
        /* same audio as OGG Vorbis (length known only by decoding): stops at the limit */
        if (!write_audio(tmp(q, sizeof q, "long.ogg"), SF_FORMAT_OGG | SF_FORMAT_VORBIS, 8000, 1, z, n61))
            expect_fail(qtts_audio_read_file(q, &lo, &a, &err), &err, "too long", "61 s OGG Vorbis, limit 60 s");
        free(z);
        /* 10-hour header: patch the RIFF and data sizes of a small PCM16 WAV,
         * then extend the file sparsely so the header is consistent */
        unsigned char hdr[44];
        memcpy(hdr, bytes, 44);
        uint32_t data_bytes = 10u * 3600u * 24000u * 2u, riff = data_bytes + 36;
        int ok = !memcmp(hdr + 36, "data", 4);
        TEST_CHECK(ok, "libsndfile wrote a canonical 44-byte header");
        if (ok) {
            for (int i = 0; i < 4; i++) {
                hdr[4 + i] = (unsigned char)(riff >> (8 * i));
                hdr[40 + i] = (unsigned char)(data_bytes >> (8 * i));
            }
            tmp(q, sizeof q, "tenhours.wav");
            write_bytes(q, hdr, 44);
            /* header alone (file holds no data): libsndfile clamps to the file -> no samples */
            expect_fail(qtts_audio_read_file(q, &o, &a, &err), &err, "no audio samples", "10 h header, no data");
            int fd = open(q, O_WRONLY);
            TEST_CHECK(fd >= 0 && ftruncate(fd, 44 + (off_t)data_bytes) == 0, "sparse extend");
            if (fd >= 0) close(fd);
            expect_fail(qtts_audio_read_file(q, &o, &a, &err), &err, "too long", "10 h WAV (sparse), limit 60 s");
            unlink(q);
        }
    }
    /* raw-sample API: bad arguments */
    expect_fail(qtts_audio_from_samples(wav.f, n, 0, 24000, "samples", &o, &a, &err), &err, "channel",
                "0 channels");
    expect_fail(qtts_audio_from_samples(wav.f, n, 1, 0, "samples", &o, &a, &err), &err, "rate", "rate 0");
    rc = qtts_audio_from_samples(wav.f, n / 2, 2, 24000, "samples", &o, &a, &err);
    TEST_CHECK(rc == 0 && a.n == n / 2, "stereo samples downmixed: %s", err.msg);
    if (!rc) TEST_CHECK(fabsf(a.samples[7] - 0.5f * (wav.f[14] + wav.f[15])) < 1e-7f, "downmix = channel mean");
    qtts_audio_free(&a);

    free(bytes);
    free(up);
    free(down);
    npy_free(&wav);
    /* clean up the temp folder */
    const char *names[] = {"ref24.wav", "pcm.wav", "ref48.flac", "ref16.mp3", "ref16.wav", "ref48.opus", "ref24.ogg", "silence.wav", "good.wav",
                           "trunc_hdr.wav", "trunc_data.wav", "trunc.flac", "empty.wav", "noframes.wav",
                           "nan.wav", "short.wav", "long.wav", "long.ogg", "tenhours.wav"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) unlink(tmp(p, sizeof p, names[i]));
    rmdir(g_dir);
    return test_finish("test_audio_read");
}
