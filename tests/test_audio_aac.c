/* AAC output (aac = ADTS, m4a = MP4): through seekable and non-seekable
 * memory sinks, for a 1.3 s signal, an empty stream and one shorter than a
 * frame. Checks the container bytes (every ADTS header; the MP4 box layout),
 * then decodes in-process with libavformat/libavcodec and checks rate,
 * duration, the priming delay and the waveform. Also: libav prints nothing,
 * failing sinks, names and extensions, files, and the server's aac path. */
#include <errno.h>
#include <fcntl.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavutil/mem.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audio/encoder.h"
#include "harness.h"
#include "server/audio_out.h"
#include "server/buf.h"

#define RATE 24000
#define N 31200 /* 1.3 s */
#define AAC_FRAME 1024
#define PRIMING 1024 /* the native encoder's initial_padding */

/* ---- memory sink (as in test_encoder.c) ---- */

typedef struct {
    uint8_t *data;
    size_t len, cap, pos;
    int seeks, out_of_order; /* a non-seekable sink must only ever append */
    size_t fail_after; /* >0: fail the write that would pass this many bytes */
} membuf;

static int mem_write(void *u, const void *bytes, size_t n) {
    membuf *m = u;
    if (m->fail_after && m->pos + n > m->fail_after) return -1;
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

/* ---- in-process decoder ---- */

typedef struct {
    const uint8_t *d;
    size_t n, pos;
} rdbuf;

static int rd_read(void *u, uint8_t *buf, int size) {
    rdbuf *r = u;
    if (r->pos >= r->n) return AVERROR_EOF;
    size_t k = r->n - r->pos < (size_t)size ? r->n - r->pos : (size_t)size;
    memcpy(buf, r->d + r->pos, k);
    r->pos += k;
    return (int)k;
}

static int64_t rd_seek(void *u, int64_t off, int whence) {
    rdbuf *r = u;
    whence &= ~AVSEEK_FORCE;
    if (whence == AVSEEK_SIZE) return (int64_t)r->n;
    int64_t base = whence == SEEK_CUR ? (int64_t)r->pos : whence == SEEK_END ? (int64_t)r->n : 0;
    if (base + off < 0 || base + off > (int64_t)r->n) return AVERROR(EINVAL);
    r->pos = (size_t)(base + off);
    return (int64_t)r->pos;
}

typedef struct {
    float *x; /* first channel */
    long n;
    long start; /* the first frame's timestamp, in samples (< 0: priming the container marks) */
    int rate, channels, is_aac;
    char container[32];
} decoded;

/* Probes the container (no format forced) and decodes the first audio
 * stream. Returns 0, -1 (with a line on stderr), or NO_STREAM. */
#define NO_STREAM (-2)
static int decode_mem(const uint8_t *data, size_t len, decoded *out) {
    memset(out, 0, sizeof *out);
    rdbuf r = {data, len, 0};
    AVFormatContext *ic = avformat_alloc_context();
    uint8_t *iob = av_malloc(4096);
    AVIOContext *pb = ic && iob ? avio_alloc_context(iob, 4096, 0, &r, rd_read, NULL, rd_seek) : NULL;
    AVCodecContext *dc = NULL;
    AVPacket *pkt = av_packet_alloc();
    AVFrame *fr = av_frame_alloc();
    int rc = -1, idx = -1;
    size_t cap = 0;
    if (!pb || !pkt || !fr) {
        if (!pb) av_free(iob);
        avformat_free_context(ic);
        ic = NULL;
        fprintf(stderr, "decode: out of memory\n");
        goto done;
    }
    ic->pb = pb;
    ic->flags |= AVFMT_FLAG_CUSTOM_IO;
    if (avformat_open_input(&ic, NULL, NULL, NULL) < 0) { /* frees ic on failure */
        fprintf(stderr, "decode: libavformat does not recognise the %zu bytes\n", len);
        goto done;
    }
    snprintf(out->container, sizeof out->container, "%s", ic->iformat->name);
    if (avformat_find_stream_info(ic, NULL) < 0) {
        fprintf(stderr, "decode: no stream information\n");
        goto done;
    }
    const AVCodec *dec = NULL;
    idx = av_find_best_stream(ic, AVMEDIA_TYPE_AUDIO, -1, -1, &dec, 0);
    if (idx < 0 || !dec) {
        rc = NO_STREAM;
        goto done;
    }
    const AVCodecParameters *par = ic->streams[idx]->codecpar;
    out->is_aac = par->codec_id == AV_CODEC_ID_AAC;
    out->rate = par->sample_rate; /* the decoded frames' values win below */
    out->channels = par->ch_layout.nb_channels;
    dc = avcodec_alloc_context3(dec);
    if (!dc || avcodec_parameters_to_context(dc, ic->streams[idx]->codecpar) < 0 || avcodec_open2(dc, dec, NULL) < 0) {
        fprintf(stderr, "decode: cannot open the decoder\n");
        goto done;
    }
    int eof = 0;
    while (!eof) {
        int k = av_read_frame(ic, pkt);
        if (k < 0) {
            eof = 1;
            if (avcodec_send_packet(dc, NULL) < 0) goto done;
        } else {
            int s = pkt->stream_index == idx ? avcodec_send_packet(dc, pkt) : 0;
            av_packet_unref(pkt);
            if (s < 0) goto done;
        }
        while (avcodec_receive_frame(dc, fr) >= 0) {
            if (fr->format != AV_SAMPLE_FMT_FLTP) {
                fprintf(stderr, "decode: unexpected sample format %d\n", fr->format);
                goto done;
            }
            if (out->n == 0 && fr->pts != AV_NOPTS_VALUE)
                out->start = (long)av_rescale_q(fr->pts, ic->streams[idx]->time_base, (AVRational){1, fr->sample_rate});
            out->rate = fr->sample_rate;
            out->channels = fr->ch_layout.nb_channels;
            if ((size_t)out->n + (size_t)fr->nb_samples > cap) {
                cap = ((size_t)out->n + (size_t)fr->nb_samples) * 2;
                float *nx = realloc(out->x, cap * sizeof *nx);
                if (!nx) goto done;
                out->x = nx;
            }
            memcpy(out->x + out->n, fr->extended_data[0], (size_t)fr->nb_samples * sizeof(float));
            out->n += fr->nb_samples;
            av_frame_unref(fr);
        }
    }
    rc = 0;
done:
    av_frame_free(&fr);
    av_packet_free(&pkt);
    avcodec_free_context(&dc);
    avformat_close_input(&ic); /* custom IO: pb stays ours */
    if (pb) {
        av_freep(&pb->buffer);
        avio_context_free(&pb);
    }
    if (rc) {
        free(out->x);
        out->x = NULL;
    }
    return rc;
}

/* ---- the signal and its comparison ---- */

/* A 440 Hz tone plus a quieter 150 -> 1500 Hz chirp: a pure sine would match
 * at any multiple of its period, the chirp makes the alignment unique. */
static void make_signal(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double t = (double)i / RATE;
        x[i] = (float)(0.5 * sin(2 * M_PI * 440 * t) + 0.15 * sin(2 * M_PI * (150 * t + 520 * t * t)));
    }
}

/* The delay (0 .. max_lag) at which got best matches ref. */
static int best_lag(const float *ref, size_t nref, const float *got, size_t ngot, int max_lag) {
    int lag = 0;
    double best = -1e300;
    for (int l = 0; l <= max_lag; l++) {
        double c = 0;
        for (size_t i = 0; i < nref && i + (size_t)l < ngot; i++) c += (double)ref[i] * got[i + (size_t)l];
        if (c > best) best = c, lag = l;
    }
    return lag;
}

/* Pearson correlation of ref[i] and got[i + lag] where both exist. */
static double correlation(const float *ref, size_t nref, const float *got, size_t ngot, int lag) {
    double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
    size_t k = 0;
    for (size_t i = 0; i < nref && i + (size_t)lag < ngot; i++, k++) {
        double a = ref[i], b = got[i + (size_t)lag];
        sx += a, sy += b, sxx += a * a, syy += b * b, sxy += a * b;
    }
    if (k < 2) return 0;
    double vx = sxx - sx * sx / (double)k, vy = syy - sy * sy / (double)k;
    return vx > 0 && vy > 0 ? (sxy - sx * sy / (double)k) / sqrt(vx * vy) : 0;
}

/* ---- container checks ---- */

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Every ADTS frame: sync 0xFFF, MPEG-4, layer 0, AAC LC, 24 kHz (sampling
 * index 6), mono; the frames tile the stream exactly. Returns the frame
 * count, or -1. */
static long check_adts(const membuf *m, const char *what) {
    long frames = 0;
    size_t p = 0;
    while (p < m->len) {
        const uint8_t *h = m->data + p;
        if (m->len - p < 7) {
            TEST_CHECK(0, "%s: %zu stray bytes at %zu", what, m->len - p, p);
            return -1;
        }
        int sync = (h[0] << 4 | h[1] >> 4) == 0xFFF, id_layer = (h[1] >> 1) & 7; /* ID 0 (MPEG-4), layer 0 */
        int profile = h[2] >> 6, sri = (h[2] >> 2) & 15, chans = (h[2] & 1) << 2 | h[3] >> 6;
        size_t flen = (size_t)(h[3] & 3) << 11 | (size_t)h[4] << 3 | h[5] >> 5;
        if (!sync || id_layer != 0 || profile != 1 || sri != 6 || chans != 1 || flen < 7 || p + flen > m->len) {
            TEST_CHECK(0,
                       "%s: bad ADTS header at byte %zu (frame %ld): sync %d id/layer %d profile %d index %d "
                       "channels %d length %zu",
                       what, p, frames, sync, id_layer, profile, sri, chans, flen);
            return -1;
        }
        p += flen;
        frames++;
    }
    return frames;
}

/* Walks the top-level MP4 boxes: they must tile the file, ftyp first with
 * brand "M4A ". Counts moov/moof/mdat and whether moov precedes any moof. */
typedef struct {
    int moov, moof, mdat, moov_first;
} mp4_boxes;

static int check_mp4(const membuf *m, mp4_boxes *b, const char *what) {
    memset(b, 0, sizeof *b);
    if (m->len < 16 || memcmp(m->data + 4, "ftyp", 4) || memcmp(m->data + 8, "M4A ", 4)) {
        TEST_CHECK(0, "%s: no ftyp box with brand M4A at the start (%zu bytes)", what, m->len);
        return -1;
    }
    size_t p = 0;
    while (p < m->len) {
        if (m->len - p < 8) break;
        uint64_t sz = be32(m->data + p);
        const uint8_t *type = m->data + p + 4;
        if (sz == 1 && m->len - p >= 16) sz = (uint64_t)be32(m->data + p + 8) << 32 | be32(m->data + p + 12);
        if (sz < 8 || sz > m->len - p) break;
        if (!memcmp(type, "moov", 4)) b->moov++, b->moov_first = b->moof == 0;
        if (!memcmp(type, "moof", 4)) b->moof++;
        if (!memcmp(type, "mdat", 4)) b->mdat++;
        p += (size_t)sz;
    }
    TEST_CHECK(p == m->len, "%s: MP4 boxes do not tile the file (stopped at %zu of %zu)", what, p, m->len);
    return p == m->len ? 0 : -1;
}

/* ---- stderr capture: libav must print nothing ---- */

typedef struct {
    int saved, fd;
    char path[64];
} capture;

static void capture_begin(capture *c) {
    fflush(stderr);
    snprintf(c->path, sizeof c->path, "/tmp/qtts_aac_err_%d", (int)getpid());
    c->fd = open(c->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    c->saved = dup(2);
    if (c->fd >= 0 && c->saved >= 0) dup2(c->fd, 2);
}

static void capture_end(capture *c, const char *what) {
    fflush(stderr);
    if (c->saved >= 0) dup2(c->saved, 2), close(c->saved);
    struct stat st;
    long sz = c->fd >= 0 && !fstat(c->fd, &st) ? (long)st.st_size : -1;
    if (sz > 0) {
        char buf[512] = {0};
        ssize_t k = pread(c->fd, buf, sizeof buf - 1, 0);
        (void)k;
        fprintf(stderr, "--- captured stderr (%s) ---\n%s\n---\n", what, buf);
    }
    TEST_CHECK(sz == 0, "%s: libav printed %ld bytes to stderr", what, sz);
    if (c->fd >= 0) close(c->fd);
    unlink(c->path);
}

/* ---- encode + check one case ---- */

static int encode(qtts_audio_format fmt, int seekable, const float *x, size_t n, membuf *m, qtts_err *err) {
    qtts_audio_sink sink = {mem_write, seekable ? mem_seek : NULL, m};
    qtts_encoder *e = qtts_encoder_open(fmt, QTTS_SAMPLE_S16, RATE, 1, &sink, err);
    if (!e) return -1;
    static const size_t pieces[] = {1, 7, 1920, 333, 4096, 1023, 2, 5000}; /* as the engine: uneven */
    for (size_t off = 0, k = 0; off < n; k++) {
        size_t c = pieces[k % 8] < n - off ? pieces[k % 8] : n - off;
        if (qtts_encoder_write(e, x + off, c, err)) {
            qtts_encoder_abort(e);
            return -1;
        }
        off += c;
    }
    if (qtts_encoder_frames(e) != n) {
        qtts_encoder_abort(e);
        return qtts_fail(err, "frame count %llu, want %zu", (unsigned long long)qtts_encoder_frames(e), n);
    }
    return qtts_encoder_close(e, err);
}

/* Decodes bytes and checks: AAC, 24 kHz mono, the expected priming delay,
 * duration within one frame, and (for a real signal) the waveform. */
static void check_decoded(const uint8_t *d, size_t len, const float *x, size_t n, int want_lag, const char *what) {
    decoded dec;
    int rc = decode_mem(d, len, &dec);
    if (rc == NO_STREAM && n == 0) {
        /* The MP4 muxer leaves out a track without samples: a valid file
         * with no audio in it. */
        printf("  %-30s %6zu bytes %-4.4s no audio track\n", what, len, dec.container);
        TEST_CHECK(dec.container[0], "%s: libavformat recognises the file", what);
        return;
    }
    if (rc) {
        TEST_CHECK(0, "%s: does not decode (%zu bytes)%s", what, len, rc == NO_STREAM ? ": no audio stream" : "");
        return;
    }
    TEST_CHECK(dec.is_aac && dec.rate == RATE && dec.channels == 1, "%s: decoded as %s, aac %d, %d Hz, %d channel(s)",
               what, dec.container, dec.is_aac, dec.rate, dec.channels);
    /* Fragmented MP4: libavformat 59 does not apply the edit list there but
     * turns it into timestamps that start below 0; a player drops what comes
     * before time 0, and so does this check. */
    long drop = dec.start < 0 && -dec.start <= dec.n ? -dec.start : 0;
    if (drop) memmove(dec.x, dec.x + drop, (size_t)(dec.n - drop) * sizeof *dec.x), dec.n -= drop;
    int lag = want_lag;
    if (n >= 4 * AAC_FRAME) {
        lag = best_lag(x, n, dec.x, (size_t)dec.n, 2 * PRIMING + 64);
        TEST_CHECK(abs(lag - want_lag) <= 2, "%s: decoded signal starts %d samples late, want %d", what, lag, want_lag);
        double r = correlation(x, n, dec.x, (size_t)dec.n, lag);
        TEST_CHECK(r > 0.95, "%s: correlation with the input %.4f (want > 0.95)", what, r);
        printf("  %-30s %6zu bytes %-4.4s %6ld samples for %5zu (%ld before time 0), delay %4d, correlation %.4f\n",
               what, len, dec.container, dec.n, n, drop, lag, r);
    } else {
        printf("  %-30s %6zu bytes %-4.4s %6ld samples for %5zu (%ld before time 0)\n", what, len, dec.container, dec.n,
               n, drop);
    }
    /* The output: the input after `lag` samples of priming, padded up to whole frames at most. */
    long extra = dec.n - (long)n - lag;
    TEST_CHECK(extra >= 0 && extra < AAC_FRAME, "%s: %ld samples decoded for %zu (+ %d priming): off by %ld", what,
               dec.n, n, lag, extra);
    free(dec.x);
}

static void test_streams(const float *x) {
    static const struct {
        qtts_audio_format fmt;
        int seekable;
        int lag; /* priming samples the decoder outputs */
        const char *label;
    } cases[] = {
        {QTTS_AUDIO_AAC, 1, PRIMING, "aac seekable"}, /* ADTS cannot signal the priming */
        {QTTS_AUDIO_AAC, 0, PRIMING, "aac streaming"},
        {QTTS_AUDIO_M4A, 1, 0, "m4a seekable"}, /* the edit list skips it */
        {QTTS_AUDIO_M4A, 0, 0, "m4a streaming"},
    };
    static const size_t lens[] = {N, 0, 100};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        membuf kept[3] = {{0}, {0}, {0}};
        for (size_t l = 0; l < 3; l++) {
            membuf *m = &kept[l];
            qtts_err err = {0};
            char what[64];
            snprintf(what, sizeof what, "%s, %zu samples", cases[c].label, lens[l]);
            capture cap;
            capture_begin(&cap);
            int rc = encode(cases[c].fmt, cases[c].seekable, x, lens[l], m, &err);
            capture_end(&cap, what);
            TEST_CHECK(rc == 0, "%s: encode failed: %s", what, err.msg);
            if (rc) continue;
            if (!cases[c].seekable) TEST_CHECK(m->seeks == 0 && m->out_of_order == 0, "%s: the sink saw seeks", what);
            if (cases[c].fmt == QTTS_AUDIO_AAC) {
                long frames = check_adts(m, what);
                /* the priming frame, the input, the encoder's tail */
                long want = lens[l] ? (long)((lens[l] + PRIMING + AAC_FRAME - 1) / AAC_FRAME) : 0;
                TEST_CHECK(frames >= want && frames <= want + 1, "%s: %ld ADTS frames, want %ld or %ld", what, frames,
                           want, want + 1);
                if (lens[l] == 0) {
                    TEST_CHECK(m->len == 0, "%s: an empty ADTS stream has no bytes (%zu)", what, m->len);
                    continue;
                }
            } else {
                mp4_boxes b;
                if (!check_mp4(m, &b, what)) {
                    if (cases[c].seekable)
                        TEST_CHECK(b.moov == 1 && b.mdat == 1 && b.moof == 0, "%s: moov %d mdat %d moof %d", what,
                                   b.moov, b.mdat, b.moof);
                    else /* a moov without samples first, then a fragment about every 0.5 s */
                        TEST_CHECK(b.moov == 1 && b.moov_first && b.moof == (lens[l] == N ? 3 : lens[l] > 0) &&
                                       b.mdat == b.moof,
                                   "%s: fragmented: moov %d (first %d) moof %d mdat %d", what, b.moov, b.moov_first,
                                   b.moof, b.mdat);
                }
            }
            check_decoded(m->data, m->len, x, lens[l], cases[c].lag, what);
        }
        /* The encoder is deterministic: ADTS does not depend on the sink. */
        if (cases[c].fmt == QTTS_AUDIO_AAC && cases[c].seekable) {
            membuf other = {0};
            qtts_err err = {0};
            TEST_CHECK(encode(QTTS_AUDIO_AAC, 0, x, N, &other, &err) == 0 && other.len == kept[0].len &&
                           !memcmp(other.data, kept[0].data, other.len),
                       "aac: seekable and streaming bytes differ");
            free(other.data);
        }
        for (size_t l = 0; l < 3; l++) free(kept[l].data);
    }
}

/* Bytes reach the sink as the audio comes, not only at close. */
static void test_latency(const float *x) {
    for (int f = 0; f < 2; f++) {
        membuf m = {0};
        qtts_err err = {0};
        qtts_audio_sink sink = {mem_write, NULL, &m};
        qtts_encoder *e = qtts_encoder_open(f ? QTTS_AUDIO_M4A : QTTS_AUDIO_AAC, QTTS_SAMPLE_S16, RATE, 1, &sink, &err);
        TEST_CHECK(e != NULL, "open: %s", err.msg);
        if (!e) continue;
        size_t header = m.len;
        TEST_CHECK(qtts_encoder_write(e, x, RATE, &err) == 0, "write 1 s: %s", err.msg); /* 1 s > one fragment */
        size_t after = m.len;
        TEST_CHECK(qtts_encoder_close(e, &err) == 0, "close: %s", err.msg);
        TEST_CHECK(after > header + 2000 && after < m.len, "%s streaming: %zu bytes at open, %zu after 1 s, %zu at end",
                   f ? "m4a" : "aac", header, after, m.len);
        free(m.data);
    }
}

static void test_failures(const float *x) {
    qtts_err err = {0};
    for (int f = 0; f < 4; f++) {
        membuf m = {0};
        m.fail_after = 1500;
        qtts_audio_sink sink = {mem_write, f & 1 ? mem_seek : NULL, &m};
        const char *what = f == 0 ? "aac" : f == 1 ? "aac seekable" : f == 2 ? "m4a" : "m4a seekable";
        qtts_encoder *e =
            qtts_encoder_open(f < 2 ? QTTS_AUDIO_AAC : QTTS_AUDIO_M4A, QTTS_SAMPLE_S16, RATE, 1, &sink, &err);
        int failed = !e;
        for (int i = 0; e && i < 10 && !failed; i++) failed = qtts_encoder_write(e, x, 2400, &err) != 0;
        if (e && !failed) {
            failed = qtts_encoder_close(e, &err) != 0;
        } else if (e) {
            TEST_CHECK(qtts_encoder_write(e, x, 10, &err) == -1, "%s: writes after a failure fail", what);
            TEST_CHECK(qtts_encoder_close(e, &err) == -1, "%s: close after a failure fails", what);
        }
        TEST_CHECK(failed && strstr(err.msg, "output"), "%s: a failing sink surfaces an error: '%s'", what, err.msg);
        free(m.data);
    }
    /* abort mid-stream frees everything (ASan/LSan check this) */
    membuf m = {0};
    qtts_audio_sink sink = {mem_write, mem_seek, &m};
    qtts_encoder *e = qtts_encoder_open(QTTS_AUDIO_M4A, QTTS_SAMPLE_S16, RATE, 1, &sink, &err);
    TEST_CHECK(e && qtts_encoder_write(e, x, 3000, &err) == 0, "m4a before abort: %s", err.msg);
    qtts_encoder_abort(e);
    free(m.data);
    /* a rate AAC has no index for: a clean error, nothing printed */
    membuf m2 = {0};
    qtts_audio_sink s2 = {mem_write, NULL, &m2};
    capture cap;
    capture_begin(&cap);
    e = qtts_encoder_open(QTTS_AUDIO_AAC, QTTS_SAMPLE_S16, 12345, 1, &s2, &err);
    capture_end(&cap, "aac at 12345 Hz");
    TEST_CHECK(!e && strstr(err.msg, "12345"), "aac at 12345 Hz fails cleanly: '%s'", err.msg);
    qtts_encoder_abort(e);
    free(m2.data);
    /* NaN and out-of-range input are sanitized, not refused */
    float odd[3000];
    for (int i = 0; i < 3000; i++) odd[i] = i % 3 == 0 ? NAN : i % 3 == 1 ? 5.0f : -INFINITY;
    membuf m3 = {0};
    qtts_audio_sink s3 = {mem_write, NULL, &m3};
    e = qtts_encoder_open(QTTS_AUDIO_AAC, QTTS_SAMPLE_S16, RATE, 1, &s3, &err);
    TEST_CHECK(e && !qtts_encoder_write(e, odd, 3000, &err) && !qtts_encoder_close(e, &err) &&
                   check_adts(&m3, "odd") > 0,
               "NaN/inf/clipped input encodes: %s", err.msg);
    free(m3.data);
}

static void test_names(void) {
    qtts_err err = {0};
    qtts_audio_format f = QTTS_AUDIO_WAV;
    TEST_CHECK(!qtts_audio_format_parse("aac", &f, &err) && f == QTTS_AUDIO_AAC, "parse aac");
    TEST_CHECK(!qtts_audio_format_parse("M4A", &f, &err) && f == QTTS_AUDIO_M4A, "parse M4A");
    TEST_CHECK(!qtts_audio_format_parse("mp4", &f, &err) && f == QTTS_AUDIO_M4A, "parse mp4");
    TEST_CHECK(!strcmp(qtts_audio_format_name(QTTS_AUDIO_AAC), "aac") &&
                   !strcmp(qtts_audio_format_name(QTTS_AUDIO_M4A), "m4a"),
               "format names");
    TEST_CHECK(qtts_audio_format_parse("aacplus", &f, &err) == -1 && strstr(err.msg, "'aacplus'") &&
                   strstr(err.msg, "aac, m4a"),
               "bad name: '%s'", err.msg);
    TEST_CHECK(!qtts_audio_format_from_path("out/a.b/x.m4a", &f, &err) && f == QTTS_AUDIO_M4A, "ext .m4a");
    TEST_CHECK(!qtts_audio_format_from_path("x.MP4", &f, &err) && f == QTTS_AUDIO_M4A, "ext .MP4");
    TEST_CHECK(!qtts_audio_format_from_path("x.aac", &f, &err) && f == QTTS_AUDIO_AAC, "ext .aac");
    TEST_CHECK(!qtts_audio_format_from_path("book.M4B", &f, &err) && f == QTTS_AUDIO_M4A, "ext .m4b (audiobooks)");
    TEST_CHECK(qtts_audio_format_from_path("x.m4v", &f, &err) == -1 && strstr(err.msg, "x.m4v") &&
                   strstr(err.msg, ".m4a"),
               "ext .m4v: '%s'", err.msg);
    TEST_CHECK(qtts_audio_format_from_path("dir.m4a/noext", &f, &err) == -1, "no extension");
}

/* The file convenience: regular files are seekable (moov at the end). */
static void test_files(const float *x) {
    char dir[] = "/tmp/qtts_aac_XXXXXX";
    if (!mkdtemp(dir)) {
        TEST_CHECK(0, "mkdtemp");
        return;
    }
    const char *names[] = {"a.aac", "b.m4a", "c.mp4"};
    for (size_t i = 0; i < 3; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        qtts_err err = {0};
        TEST_CHECK(qtts_audio_write_file(path, NULL, QTTS_SAMPLE_S16, x, N, RATE, 1, &err) == 0, "%s: %s", names[i],
                   err.msg);
        FILE *f = fopen(path, "rb");
        membuf m = {0};
        uint8_t buf[8192];
        size_t k;
        while (f && (k = fread(buf, 1, sizeof buf, f)) > 0) mem_write(&m, buf, k);
        if (f) fclose(f);
        if (i) {
            mp4_boxes b;
            TEST_CHECK(!check_mp4(&m, &b, names[i]) && b.moov == 1 && b.moof == 0, "%s: a plain MP4", names[i]);
        } else {
            TEST_CHECK(check_adts(&m, names[i]) > 0, "%s: ADTS", names[i]);
        }
        check_decoded(m.data, m.len, x, N, i ? 0 : PRIMING, names[i]);
        free(m.data);
        remove(path);
    }
    rmdir(dir);
}

/* Chapter marks in an .m4b, read back by libavformat (as ffprobe
 * -show_chapters does): titles, starts and ends; the audio is unchanged. */
static void test_chapters(const float *x) {
    char dir[] = "/tmp/qtts_aac_XXXXXX";
    if (!mkdtemp(dir)) {
        TEST_CHECK(0, "mkdtemp");
        return;
    }
    char path[256];
    snprintf(path, sizeof path, "%s/book.m4b", dir);
    const qtts_audio_chapter ch[3] = {{"Opening", 0, 10000}, {"Chapter Two: \xc3\xa9t\xc3\xa9", 10000, 24000},
                                      {"The End", 24000, N}};
    qtts_err err = {0};
    qtts_encoder *e = qtts_encoder_open_file_chapters(path, NULL, QTTS_SAMPLE_S16, RATE, 1, ch, 3, &err);
    TEST_CHECK(e && !qtts_encoder_write(e, x, N, &err) && !qtts_encoder_close(e, &err), "m4b with chapters: %s",
               err.msg);
    AVFormatContext *fc = NULL;
    int rc = avformat_open_input(&fc, path, NULL, NULL);
    if (rc >= 0) rc = avformat_find_stream_info(fc, NULL);
    TEST_CHECK(rc >= 0 && fc && fc->nb_chapters == 3, "m4b read back: %u chapters, want 3",
               rc >= 0 && fc ? fc->nb_chapters : 0);
    for (unsigned i = 0; rc >= 0 && fc && i < fc->nb_chapters && i < 3; i++) {
        const AVChapter *c = fc->chapters[i];
        const AVDictionaryEntry *t = av_dict_get(c->metadata, "title", NULL, 0);
        double start = (double)c->start * c->time_base.num / c->time_base.den;
        double end = (double)c->end * c->time_base.num / c->time_base.den;
        double ws = (double)ch[i].start / RATE, we = (double)ch[i].end / RATE;
        TEST_CHECK(t && !strcmp(t->value, ch[i].title), "chapter %u title '%s', want '%s'", i + 1,
                   t ? t->value : "(none)", ch[i].title);
        /* the mov chapter track keeps millisecond times */
        TEST_CHECK(fabs(start - ws) < 0.002 && fabs(end - we) < 0.05, "chapter %u at %.3f-%.3f s, want %.3f-%.3f",
                   i + 1, start, end, ws, we);
    }
    int audio = 0;
    for (unsigned i = 0; fc && i < fc->nb_streams; i++) audio += fc->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO;
    TEST_CHECK(audio == 1, "one audio stream (%d)", audio);
    avformat_close_input(&fc);
    FILE *f = fopen(path, "rb");
    membuf m = {0};
    uint8_t buf[8192];
    size_t k;
    while (f && (k = fread(buf, 1, sizeof buf, f)) > 0) mem_write(&m, buf, k);
    if (f) fclose(f);
    check_decoded(m.data, m.len, x, N, 0, "m4b with chapters");
    free(m.data);
    remove(path);
    e = qtts_encoder_open_file_chapters(path, "mp3", QTTS_SAMPLE_S16, RATE, 1, ch, 3, &err);
    TEST_CHECK(!e && strstr(err.msg, "m4a"), "chapter marks on mp3 are refused: %s", err.msg);
    qtts_encoder_abort(e);
    const qtts_audio_chapter bad[2] = {{"A", 0, 5000}, {"B", 4000, 9000}};
    e = qtts_encoder_open_file_chapters(path, NULL, QTTS_SAMPLE_S16, RATE, 1, bad, 2, &err);
    TEST_CHECK(!e && strstr(err.msg, "out of order"), "overlapping marks are refused: %s", e ? "opened" : err.msg);
    qtts_encoder_abort(e);
    remove(path);
    rmdir(dir);
}

/* The server: aac is ADTS, buffered (seekable body) or streamed. */
static void test_server(const float *x) {
    srv_format f;
    const char *why = NULL;
    TEST_CHECK(srv_format_parse("aac", &f, &why) == 0 && f == SRV_FMT_AAC, "server accepts aac: %s", why ? why : "");
    TEST_CHECK(
        !strcmp(srv_format_mime(SRV_FMT_AAC), "audio/aac") && !strcmp(srv_format_mime(SRV_FMT_MP3), "audio/mpeg") &&
            !strcmp(srv_format_mime(SRV_FMT_OPUS), "audio/ogg") &&
            !strcmp(srv_format_mime(SRV_FMT_FLAC), "audio/flac") &&
            !strcmp(srv_format_mime(SRV_FMT_WAV), "audio/wav") && !strcmp(srv_format_mime(SRV_FMT_PCM), "audio/pcm"),
        "content types");
    TEST_CHECK(srv_format_parse("m4a", &f, &why) != 0 && strstr(why, "aac"), "unknown format lists aac: %s",
               why ? why : "");
    TEST_CHECK(srv_format_codec(SRV_FMT_AAC) == QTTS_AUDIO_AAC, "the server's aac is ADTS");
    {
        /* ADTS never seeks: buffered and streamed responses are the same bytes. */
        srv_buf b = {0};
        qtts_audio_sink sink = {srv_buf_sink, NULL, &b};
        qtts_err e = {0};
        qtts_encoder *o = qtts_encoder_open(srv_format_codec(SRV_FMT_AAC), QTTS_SAMPLE_S16, RATE, 1, &sink, &e);
        TEST_CHECK(o != NULL, "server aac encoder: %s", e.msg);
        int ok = o != NULL;
        for (size_t off = 0; off < N && ok; off += 2000)
            ok = !qtts_encoder_write(o, x + off, off + 2000 > N ? N - off : 2000, &e);
        int closed = o && qtts_encoder_close(o, &e) == 0;
        TEST_CHECK(ok && closed, "server aac encode");
        membuf m = {(uint8_t *)b.data, b.len, b.len, b.len, 0, 0, 0};
        const char *what = "server aac";
        TEST_CHECK(check_adts(&m, what) > 0, "%s: ADTS", what);
        check_decoded(m.data, m.len, x, N, PRIMING, what);
        srv_buf_free(&b);
    }
}

int main(void) {
    static float x[N];
    make_signal(x, N);
    test_names();
    test_streams(x);
    test_latency(x);
    test_failures(x);
    test_files(x);
    test_chapters(x);
    test_server(x);
    return test_finish("test_audio_aac");
}
