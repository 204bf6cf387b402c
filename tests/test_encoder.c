/* Audio encoder: every format, through a seekable and a non-seekable memory
 * sink, decoded back with libsndfile and compared to the input signal. */
#include <math.h>
#include <sndfile.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audio/encoder.h"
#include "harness.h"

typedef struct {
    uint8_t *data;
    size_t len, cap, pos;
    int seeks, out_of_order; /* a non-seekable sink must only ever append */
    int fail_after;          /* >0: fail the write that would pass this many bytes */
} membuf;

static int mem_write(void *u, const void *bytes, size_t n) {
    membuf *m = u;
    if (m->fail_after > 0 && m->pos + n > (size_t)m->fail_after) return -1;
    if (m->pos != m->len) m->out_of_order++;
    if (m->pos + n > m->cap) {
        size_t nc = (m->pos + n) * 2 + 1024;
        uint8_t *d = realloc(m->data, nc);
        if (!d) return -1;
        m->data = d, m->cap = nc;
    }
    memcpy(m->data + m->pos, bytes, n);
    m->pos += n;
    if (m->pos > m->len) m->len = m->pos;
    return 0;
}

static int mem_seek(void *u, uint64_t off) {
    membuf *m = u;
    if (off > m->len) return -1;
    m->pos = (size_t)off;
    m->seeks++;
    return 0;
}

/* libsndfile reading from memory */
typedef struct {
    const uint8_t *d;
    sf_count_t len, pos;
} rdbuf;
static sf_count_t r_len(void *u) { return ((rdbuf *)u)->len; }
static sf_count_t r_seek(sf_count_t off, int wh, void *u) {
    rdbuf *r = u;
    sf_count_t np = wh == SEEK_SET ? off : wh == SEEK_CUR ? r->pos + off : r->len + off;
    if (np < 0 || np > r->len) return -1;
    return r->pos = np;
}
static sf_count_t r_read(void *p, sf_count_t n, void *u) {
    rdbuf *r = u;
    if (n > r->len - r->pos) n = r->len - r->pos;
    memcpy(p, r->d + r->pos, (size_t)n);
    r->pos += n;
    return n;
}
static sf_count_t r_write(const void *p, sf_count_t n, void *u) { (void)p, (void)n, (void)u; return 0; }
static sf_count_t r_tell(void *u) { return ((rdbuf *)u)->pos; }

/* Decodes; returns frame count or -1. *out (float) and optionally *out16. */
static long decode(const membuf *m, int raw_format, int rate, float **out, short **out16, SF_INFO *info) {
    rdbuf r = {m->data, (sf_count_t)m->len, 0};
    SF_VIRTUAL_IO vio = {r_len, r_seek, r_read, r_write, r_tell};
    memset(info, 0, sizeof *info);
    if (raw_format) info->format = SF_FORMAT_RAW | raw_format, info->channels = 1, info->samplerate = rate;
    SNDFILE *sf = sf_open_virtual(&vio, SFM_READ, info, &r);
    if (!sf) {
        fprintf(stderr, "decode: %s\n", sf_strerror(NULL));
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    float *buf = malloc(cap * sizeof *buf);
    for (;;) {
        if (n + 4096 > cap) cap *= 2, buf = realloc(buf, cap * sizeof *buf);
        sf_count_t got = sf_readf_float(sf, buf + n, 4096);
        if (got <= 0) break;
        n += (size_t)got;
    }
    if (out16) {
        sf_seek(sf, 0, SEEK_SET);
        *out16 = malloc((n + 1) * sizeof **out16);
        sf_count_t got = sf_readf_short(sf, *out16, (sf_count_t)n);
        if (got != (sf_count_t)n) n = 0;
    }
    sf_close(sf);
    *out = buf;
    return (long)n;
}

#define RATE 24000
#define N 24000

static void make_signal(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double t = (double)i / RATE;
        /* a tone plus a 200 -> 2000 Hz chirp: no period, so alignment is unique */
        x[i] = (float)(0.3 * sin(2 * M_PI * 440 * t) + 0.3 * sin(2 * M_PI * (200 * t + 900 * t * t)) +
                       0.05 * sin(2 * M_PI * 97 * t));
    }
}

/* Feeds the signal in irregular pieces, as the engine does. */
static int encode(qtts_audio_format fmt, qtts_sample_format sfmt, int seekable, const float *x, membuf *m,
                  qtts_err *err) {
    qtts_audio_sink sink = {mem_write, seekable ? mem_seek : NULL, m};
    qtts_encoder *e = qtts_encoder_open(fmt, sfmt, RATE, 1, &sink, err);
    if (!e) return -1;
    static const size_t pieces[] = {1, 7, 1920, 333, 4096, 1919, 2, 5000};
    size_t off = 0, k = 0;
    while (off < N) {
        size_t c = pieces[k++ % 8];
        if (c > N - off) c = N - off;
        if (qtts_encoder_write(e, x + off, c, err)) {
            qtts_encoder_abort(e);
            return -1;
        }
        off += c;
    }
    if (qtts_encoder_frames(e) != N) return qtts_fail(err, "frame count %llu", (unsigned long long)qtts_encoder_frames(e));
    return qtts_encoder_close(e, err);
}

/* Best alignment (decoders may add delay/padding), then SNR in dB. */
static double aligned_snr(const float *ref, size_t nref, const float *got, size_t ngot, int *lag_out) {
    int best_lag = 0;
    double best = -1e300;
    size_t w0 = 2400, wn = 4800;
    for (int lag = -3000; lag <= 3000; lag++) {
        double c = 0;
        for (size_t i = w0; i < w0 + wn; i++) {
            long j = (long)i + lag;
            if (j < 0 || (size_t)j >= ngot) continue;
            c += (double)ref[i] * got[j];
        }
        if (c > best) best = c, best_lag = lag;
    }
    double sig = 0, noise = 0;
    for (size_t i = 2400; i + 2400 < nref; i++) {
        long j = (long)i + best_lag;
        double g = (j >= 0 && (size_t)j < ngot) ? got[j] : 0.0;
        sig += (double)ref[i] * ref[i];
        noise += (g - ref[i]) * (g - ref[i]);
    }
    *lag_out = best_lag;
    return 10 * log10(sig / (noise + 1e-30));
}

static uint32_t le32(const uint8_t *p) { return p[0] | p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

static void test_lossless(const float *x) {
    short want16[N];
    for (size_t i = 0; i < N; i++) want16[i] = (short)lrintf(x[i] * 32768.0f); /* |x| < 1 here */
    const struct {
        qtts_audio_format fmt;
        qtts_sample_format sfmt;
        int raw;
        const char *label;
    } cases[] = {
        {QTTS_AUDIO_WAV, QTTS_SAMPLE_S16, 0, "wav s16"}, {QTTS_AUDIO_WAV, QTTS_SAMPLE_F32, 0, "wav f32"},
        {QTTS_AUDIO_PCM, QTTS_SAMPLE_S16, SF_FORMAT_PCM_16, "pcm s16le"},
        {QTTS_AUDIO_PCM, QTTS_SAMPLE_F32, SF_FORMAT_FLOAT, "pcm f32le"},
        {QTTS_AUDIO_FLAC, QTTS_SAMPLE_S16, 0, "flac 16-bit"}, {QTTS_AUDIO_FLAC, QTTS_SAMPLE_F32, 0, "flac 24-bit"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        membuf bytes[2] = {{0}, {0}};
        for (int seekable = 1; seekable >= 0; seekable--) {
            membuf *m = &bytes[seekable];
            qtts_err err = {0};
            char what[96];
            snprintf(what, sizeof what, "%s %s", cases[c].label, seekable ? "seekable" : "streaming");
            int rc = encode(cases[c].fmt, cases[c].sfmt, seekable, x, m, &err);
            TEST_CHECK(rc == 0, "%s: encode failed: %s", what, err.msg);
            if (rc) continue;
            if (!seekable) TEST_CHECK(m->seeks == 0 && m->out_of_order == 0, "%s: sink saw seeks", what);
            float *got = NULL;
            short *got16 = NULL;
            SF_INFO info;
            long n = decode(m, cases[c].raw, RATE, &got, cases[c].sfmt == QTTS_SAMPLE_S16 ? &got16 : NULL, &info);
            TEST_CHECK(n == N, "%s: decoded %ld frames, want %d", what, n, N);
            TEST_CHECK(info.samplerate == RATE && info.channels == 1, "%s: rate %d channels %d", what,
                       info.samplerate, info.channels);
            if (n == N) {
                if (cases[c].sfmt == QTTS_SAMPLE_S16) {
                    int bad = 0;
                    for (size_t i = 0; i < N; i++) bad += got16[i] != want16[i];
                    TEST_CHECK(bad == 0, "%s: %d of %d s16 samples differ from round(x*32768)", what, bad, N);
                    TEST_NEAR(got, x, N, 0.5 / 32768 + 1e-7, what);
                } else {
                    TEST_NEAR(got, x, N, cases[c].fmt == QTTS_AUDIO_FLAC ? 2.0 / 8388607 : 0.0, what);
                }
            }
            free(got);
            free(got16);
        }
        if (cases[c].fmt == QTTS_AUDIO_WAV && bytes[0].len == bytes[1].len && bytes[0].len > 44) {
            /* identical apart from the size fields, which are exact only when seekable */
            membuf *s = &bytes[1], *st = &bytes[0];
            size_t hdr = cases[c].sfmt == QTTS_SAMPLE_F32 ? 58 : 44, bps = cases[c].sfmt == QTTS_SAMPLE_F32 ? 4 : 2;
            TEST_CHECK(s->len == hdr + N * bps, "%s: %zu bytes, want %zu", cases[c].label, s->len, hdr + N * bps);
            TEST_CHECK(le32(s->data + 4) == s->len - 8 && le32(s->data + hdr - 4) == N * bps,
                       "%s seekable: RIFF/data sizes not patched", cases[c].label);
            TEST_CHECK(le32(st->data + 4) == 0xFFFFFFFFu && le32(st->data + hdr - 4) == 0xFFFFFFFFu,
                       "%s streaming: sizes should be 0xFFFFFFFF", cases[c].label);
            TEST_CHECK(!memcmp(s->data + hdr, st->data + hdr, N * bps), "%s: sample bytes differ", cases[c].label);
        } else if (cases[c].fmt == QTTS_AUDIO_PCM) {
            TEST_CHECK(bytes[1].len == bytes[0].len && bytes[1].len == N * (cases[c].sfmt ? 4u : 2u) &&
                           !memcmp(bytes[0].data, bytes[1].data, bytes[0].len),
                       "%s: raw bytes differ or wrong length", cases[c].label);
        }
        free(bytes[0].data);
        free(bytes[1].data);
    }
}

static void test_lossy(const float *x) {
    const struct {
        qtts_audio_format fmt;
        double min_snr;
        const char *label;
    } cases[] = {
        {QTTS_AUDIO_OPUS, 12.0, "opus"},
        {QTTS_AUDIO_VORBIS, 12.0, "vorbis"},
        {QTTS_AUDIO_MP3, 12.0, "mp3"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int seekable = 1; seekable >= 0; seekable--) {
            membuf m = {0};
            qtts_err err = {0};
            char what[96];
            snprintf(what, sizeof what, "%s %s", cases[c].label, seekable ? "seekable" : "streaming");
            int rc = encode(cases[c].fmt, QTTS_SAMPLE_S16, seekable, x, &m, &err);
            TEST_CHECK(rc == 0, "%s: encode failed: %s", what, err.msg);
            if (!seekable) TEST_CHECK(m.seeks == 0 && m.out_of_order == 0, "%s: sink saw seeks", what);
            float *got = NULL;
            SF_INFO info;
            long n = rc ? -1 : decode(&m, 0, RATE, &got, NULL, &info);
            TEST_CHECK(n > N - 600 && n < N + 3000, "%s: decoded %ld frames for %d", what, n, N);
            if (n > 0) {
                int lag = 0;
                double snr = aligned_snr(x, N, got, (size_t)n, &lag);
                TEST_CHECK(snr >= cases[c].min_snr, "%s: SNR %.1f dB < %.1f", what, snr, cases[c].min_snr);
                printf("  ok?  %-30s %zu bytes, %ld frames, lag %d, SNR %.1f dB (min %.0f)\n", what, m.len, n, lag,
                       snr, cases[c].min_snr);
            }
            free(got);
            free(m.data);
        }
}

static void test_errors(const float *x) {
    qtts_err err = {0};
    qtts_audio_format f;
    TEST_CHECK(!qtts_audio_format_from_path("a/b.c/out.MP3", &f, &err) && f == QTTS_AUDIO_MP3, "ext .MP3");
    TEST_CHECK(!qtts_audio_format_from_path("x.ogg", &f, &err) && f == QTTS_AUDIO_VORBIS, "ext .ogg");
    TEST_CHECK(!qtts_audio_format_from_path("x.opus", &f, &err) && f == QTTS_AUDIO_OPUS, "ext .opus");
    TEST_CHECK(!qtts_audio_format_from_path("x.aac", &f, &err) && f == QTTS_AUDIO_AAC, "ext .aac");
    TEST_CHECK(qtts_audio_format_from_path("x.wma", &f, &err) == -1 && strstr(err.msg, "x.wma"), "ext .wma: %s",
               err.msg);
    TEST_CHECK(qtts_audio_format_from_path("dir.wav/noext", &f, &err) == -1, "no extension");
    TEST_CHECK(qtts_audio_format_parse("wma", &f, &err) == -1 && strstr(err.msg, "wma"), "parse wma");
    qtts_sample_format sf;
    TEST_CHECK(!qtts_sample_format_parse("f32", &sf) && sf == QTTS_SAMPLE_F32, "f32");
    TEST_CHECK(qtts_sample_format_parse("s24", &sf) == -1, "s24 rejected");

    membuf m = {0};
    qtts_audio_sink sink = {mem_write, NULL, &m};
    TEST_CHECK(!qtts_encoder_open(QTTS_AUDIO_OPUS, QTTS_SAMPLE_S16, 44100, 1, &sink, &err) && err.msg[0],
               "opus at 44.1 kHz must fail cleanly");
    TEST_CHECK(!qtts_encoder_open(QTTS_AUDIO_WAV, QTTS_SAMPLE_S16, 0, 1, &sink, &err), "rate 0 rejected");
    free(m.data);

    /* A sink that fails midway (client disconnected): errors, no crash. */
    for (int fmt = 0; fmt < QTTS_AUDIO_N_FORMATS; fmt++) {
        membuf fm = {0};
        fm.fail_after = 3000;
        qtts_audio_sink fs = {mem_write, NULL, &fm};
        qtts_encoder *e = qtts_encoder_open((qtts_audio_format)fmt, QTTS_SAMPLE_S16, RATE, 1, &fs, &err);
        int failed = !e;
        for (int i = 0; e && i < 10 && !failed; i++) failed = qtts_encoder_write(e, x, 2400, &err) != 0;
        if (e && !failed) failed = qtts_encoder_close(e, &err) != 0;
        else if (e) TEST_CHECK(qtts_encoder_close(e, &err) == -1, "%s: close after failure must fail",
                               qtts_audio_format_name((qtts_audio_format)fmt));
        TEST_CHECK(failed, "%s: a failing sink must surface an error", qtts_audio_format_name((qtts_audio_format)fmt));
        free(fm.data);
    }

    /* Clipping and NaN for integer output. */
    float odd[4] = {2.0f, -3.0f, NAN, 0.5f};
    membuf cm = {0};
    qtts_audio_sink cs = {mem_write, NULL, &cm};
    qtts_encoder *e = qtts_encoder_open(QTTS_AUDIO_PCM, QTTS_SAMPLE_S16, RATE, 1, &cs, &err);
    TEST_CHECK(e && !qtts_encoder_write(e, odd, 4, &err) && !qtts_encoder_close(e, &err), "pcm clip encode");
    if (cm.len == 8) {
        int16_t v[4];
        memcpy(v, cm.data, 8);
        TEST_CHECK(v[0] == 32767 && v[1] == -32768 && v[2] == 0 && v[3] == 16384, "clip: %d %d %d %d", v[0], v[1],
                   v[2], v[3]);
    } else {
        TEST_CHECK(0, "pcm clip: %zu bytes", cm.len);
    }
    free(cm.data);
}

static void test_files(const float *x) {
    char dir[] = "/tmp/qtts_enc_XXXXXX";
    if (!mkdtemp(dir)) {
        TEST_CHECK(0, "mkdtemp");
        return;
    }
    const char *names[] = {"a.wav", "b.flac", "c.mp3", "d.opus", "e.ogg"};
    for (size_t i = 0; i < 5; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        qtts_err err = {0};
        int rc = qtts_audio_write_file(path, NULL, QTTS_SAMPLE_S16, x, N, RATE, 1, &err);
        TEST_CHECK(rc == 0, "%s: %s", names[i], err.msg);
        SF_INFO info = {0};
        SNDFILE *sf = sf_open(path, SFM_READ, &info);
        TEST_CHECK(sf && info.samplerate == RATE && info.frames > N - 600 && info.frames < N + 3000,
                   "%s: read back %lld frames", names[i], sf ? (long long)info.frames : -1LL);
        if (sf) sf_close(sf);
        remove(path);
    }
    char path[256];
    snprintf(path, sizeof path, "%s/f.wav", dir);
    qtts_err err = {0};
    TEST_CHECK(qtts_audio_write_file(path, "flac", QTTS_SAMPLE_S16, x, N, RATE, 1, &err) == 0, "explicit format");
    SF_INFO info = {0};
    SNDFILE *sf = sf_open(path, SFM_READ, &info);
    TEST_CHECK(sf && (info.format & SF_FORMAT_TYPEMASK) == SF_FORMAT_FLAC, "explicit --format wins over extension");
    if (sf) sf_close(sf);
    remove(path);
    snprintf(path, sizeof path, "%s/nodir/x.wav", dir);
    TEST_CHECK(qtts_audio_write_file(path, NULL, QTTS_SAMPLE_S16, x, N, RATE, 1, &err) == -1 && strstr(err.msg, path),
               "unwritable path: %s", err.msg);
    rmdir(dir);
}

int main(void) {
    static float x[N];
    make_signal(x, N);
    test_lossless(x);
    test_lossy(x);
    test_errors(x);
    test_files(x);
    return test_finish("test_encoder");
}
